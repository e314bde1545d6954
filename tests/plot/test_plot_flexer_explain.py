"""The stacked bars of where a Flexer layer's time goes: segments add up to the latency and a
real PNG is written."""

import numpy as np
import pytest

from npusched.heuristics.flexer.explain import CATEGORIES
from npusched.plot.flexer_explain import bar_segments, time_split_bars

PNG = b"\x89PNG\r\n\x1a\n"


def _split(**kw: int) -> dict[str, int]:
    return {**dict.fromkeys(CATEGORIES, 0), **kw}


def test_segments_stack_to_the_latency():
    """Two NPUs, latency 100: 200 NPU cycles stack to a bar of 100."""
    seg = bar_segments([_split(compute=120, load=50, tail=30)], 2)
    assert seg.shape == (1, len(CATEGORIES))
    assert seg.sum() == 100
    assert seg[0, CATEGORIES.index("load")] == 25


def test_bars_render(tmp_path):
    path = tmp_path / "sub" / "bars.png"
    ooo = [_split(compute=100, dram=20), _split(compute=80, spill=40)]
    static = [_split(compute=100, load=10), _split(compute=80, buffer=4)]
    fig = time_split_bars(["a", "b"], ooo, static, 2, path, losing=[True, False])
    assert path.read_bytes().startswith(PNG)
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["a", "b"]
    heights = sorted(round(p.get_y() + p.get_height(), 6) for p in ax.patches)
    assert np.isclose(max(heights), 60.0)  # the tallest bar: (100 + 20) / 2


def test_bars_check_lengths():
    with pytest.raises(ValueError, match="differ in length"):
        time_split_bars(["a"], [], [], 2)
