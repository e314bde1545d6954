"""The machine model from the command line: `partition --machine --cost`, the routed instance
it writes solved and verified, ZigZag's fallback and its rejections as one-line errors."""

from __future__ import annotations

import json

from conftest import ROOT, run_cli

LENET = ["--network", "lenet", "--arch", "klotski-3x3", "--scheme", "klotski", "--s", "7,7,24,28"]


def test_partition_writes_a_routed_instance_that_solves_and_verifies(tmp_path):
    """The routed partition's instance (links, DRAM, memories, outputs) is solved by the list,
    both Klotski baselines and lns (on the list's allocation), each verified."""
    out = tmp_path / "i.json"
    proc = run_cli("partition", *LENET, "-o", out)
    assert proc.returncode == 0, proc.stderr
    assert "routed machine, analytic costs" in proc.stdout
    data = json.loads(out.read_text())
    assert data["topology"]["dram_core"] == 9 and len(data["memory_capacity"]) == 9
    assert all("output" in u for u in data["uops"]) and data["dram_tensors"]
    for method in ("list", "zigzag", "atomic", "lns"):
        sol, extra = tmp_path / f"{method}.json", ["--time-limit", "4"] if method == "lns" else []
        r = run_cli("solve", out, "--method", method, *extra, "--out", sol)
        assert r.returncode == 0 and "verify=ok" in r.stdout, r.stdout + r.stderr
        assert run_cli("verify", out, sol).returncode == 0
    trace, trace_png = tmp_path / "t.json", tmp_path / "m.png"
    r = run_cli("solve", out, "--method", "list", "--trace", trace, "--memory-trace", trace_png)
    assert r.returncode == 0 and trace_png.stat().st_size > 0
    events = json.loads(trace.read_text())["traceEvents"]
    assert any("dram" in str(e.get("args", {})).lower() or "mc" in str(e.get("name", ""))
               for e in events)  # fmt: skip
    old = tmp_path / "old.json"
    proc = run_cli("partition", *LENET, "--machine", "compute-only", "-o", old)
    assert proc.returncode == 0 and "compute costs" in proc.stdout
    assert "topology" not in json.loads(old.read_text())


def test_zigzag_past_its_time_limit_falls_back_and_caches_nothing(tmp_path):
    cache = tmp_path / "cache"
    out = tmp_path / "z.json"
    proc = run_cli("partition", *LENET, "--cost", "zigzag", "--zigzag-time-limit", "0.001",
                   "-o", out, env={"NPUSCHED_CACHE": str(cache)})  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "took the analytic latency instead" in proc.stdout
    source = json.loads(out.read_text())["source"]
    assert source["cost"] == "zigzag" and source["cost_fallbacks"]
    assert "time limit" in source["cost_fallbacks"][0]
    assert not list(cache.rglob("*.json")) and not list(cache.rglob("*.tmp"))


def test_an_arch_zigzag_rejects_is_a_one_line_error_naming_the_field(tmp_path):
    data = json.loads((ROOT / "npusched/arch/data/klotski-3x3.json").read_text())
    for core in data["cores"]:
        core["registers"]["W"]["bandwidth_bytes_per_cycle"] = 0.05
    arch = tmp_path / "slow.json"
    arch.write_text(json.dumps(data))
    out = tmp_path / "x.json"
    args = ["--network", "lenet", "--arch", arch, "--scheme", "klotski", "--s", "7,7,24,28"]
    proc = run_cli("partition", *args, "--cost", "zigzag", "-o", out,
                   env={"NPUSCHED_CACHE": str(tmp_path / "cache")})  # fmt: skip
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "cores/0/registers/W/bandwidth_bytes_per_cycle" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and not out.exists()
