"""Roofline and time-breakdown plots render real PNGs."""

from npusched.plot import roofline, time_breakdown


def test_roofline_and_breakdown_write_pngs(tmp_path):
    fig = roofline([0.5, 2, 40], [1e9, 4e9, 2.5e11], 2.56e11, 1.7e10, ["a", "b", "c"])
    roof = fig.axes[0].lines[0].get_ydata()
    assert roof.max() == 2.56e11  # the roof flattens at the peak
    roofline([0.5], [1e9], 2.56e11, 1.7e10, path=tmp_path / "roof.png")
    parts = {
        "burst": {"load": [1, 2], "store": [0.5, 0.2], "mac": [3, 1]},
        "noburst": {"load": [2, 3], "store": [0.5, 0.2], "mac": [3, 1]},
    }
    time_breakdown(["l1", "l2"], parts, tmp_path / "bd.png")
    for name in ("roof.png", "bd.png"):
        data = (tmp_path / name).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 1000
