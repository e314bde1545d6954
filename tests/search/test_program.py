"""Klotski's orchestration on a tensor program (npusched.search.program): the design space of
tiles, BO over it, joint on the best; every schedule verified."""

from __future__ import annotations

from npusched.arch import load_arch
from npusched.partition.api import partition_network
from npusched.partition.tensor import cut_signature
from npusched.search.program import evaluate_tiles, orchestrate_program, program_space
from npusched.verify import check
from npusched.workload.transformers import encoder_layer


def test_space_has_one_point_per_distinct_cut_within_the_cap():
    prog = encoder_layer("enc", 16, 32, 4, 64)
    arch = load_arch("stream-hetero")
    space = program_space(prog, arch, max_uops=400)
    sigs = [cut_signature(prog, dict(zip("BMKN", s, strict=True))) for s in space.points]
    assert len({sig for sig, _ in sigs}) == len(space.points)
    assert all(n <= 400 for _, n in sigs) and list(space.uops) == [n for _, n in sigs]
    ev = evaluate_tiles(prog, arch, space.points[0])
    assert ev.feasible and ev.uops == space.uops[0] and ev.makespan > 0


def test_bo_then_joint_on_a_transformer_layer():
    prog = encoder_layer("enc", 16, 32, 4, 64)
    arch = load_arch("stream-hetero")
    out = orchestrate_program(prog, arch, 6, final_time_limit=5)
    best = out.search.best
    assert best.feasible and len(out.search.evaluations) == 6
    assert check(out.instance, out.final.solution).ok
    assert out.final.objective <= best.makespan
    again = partition_network(prog, arch, "klotski", s=best.s)
    assert again.n == out.instance.n
    assert min(e.makespan for e in out.search.feasible) == best.makespan



def test_orchestrate_command_on_a_tensor_program(tmp_path):
    from conftest import run_cli

    prog = encoder_layer("enc", 16, 32, 4, 64)
    path = tmp_path / "enc.json"
    from npusched.workload.zoo import write_network

    write_network(prog, path)
    out = run_cli("orchestrate", "--network", path, "--arch", "stream-hetero", "--budget", "4",
                  "--final-time-limit", "5", "--out-dir", tmp_path / "o")
    assert out.returncode == 0, out.stderr
    assert "best s = (B, M, K, N)" in out.stdout
    ver = run_cli("verify", tmp_path / "o" / "instance.json", tmp_path / "o" / "solution.json")
    assert ver.returncode == 0, ver.stdout + ver.stderr
