"""The one entry point: names, parameters dataclasses, applicability and the Result it stamps."""

import ast
import dataclasses
from pathlib import Path

import numpy as np
import pytest
from conftest import make_instance

from npusched.methods import METHODS, solve
from npusched.methods.registry import Method, NoParams, default_method, register
from npusched.methods.scheduling import CpsatParams, TimeIndexedParams
from npusched.problem.placement import PlacementInstance
from npusched.problem.scheduling.noc import Mesh
from npusched.verify import check

PACKAGE = Path(__file__).resolve().parents[2] / "npusched"


@pytest.fixture
def chain():
    return make_instance([3, 2, 4, 1], [(0, 1), (1, 3), (0, 2)], 2)


def test_every_method_has_a_frozen_params_dataclass_and_a_description():
    for name, m in METHODS.items():
        assert m.name == name and m.description and m.backends
        assert dataclasses.is_dataclass(m.params), name
        assert m.params.__dataclass_params__.frozen, name  # type: ignore[attr-defined]


def test_options_become_params_and_unknown_ones_are_refused(chain):
    meth = METHODS["timeindexed"]
    assert meth.make_params(relaxed=True) == TimeIndexedParams(relaxed=True)
    with pytest.raises(ValueError, match="no option beta .*relaxed, precedence, priority"):
        meth.make_params(beta=2.0)
    with pytest.raises(ValueError, match="takes TimeIndexedParams, not CpsatParams"):
        meth.make_params(CpsatParams())
    with pytest.raises(ValueError, match="no option priority .*takes none"):
        METHODS["zigzag"].make_params(priority="asap")


def test_params_object_and_keyword_options_give_the_same_result(chain):
    a = solve(chain, "list", params=METHODS["list"].params(priority="alap"))
    b = solve(chain, "list", priority="alap")
    assert a.objective == b.objective and a.stats == b.stats == {"priority": "alap"}
    for r in (a, b):
        assert check(chain, r.solution, r.objective).ok


def test_solve_stamps_runtime_threads_seed_and_time_limit(chain):
    res = solve(chain, "cpsat", time_limit=5, threads=2, seed=3)
    assert (res.threads, res.seed, res.time_limit) == (2, 3, 5)
    assert 0 < res.runtime_s < 5 + 2
    assert res.trace and res.trace[-1].incumbent == res.objective
    assert check(chain, res.solution, res.objective).ok


def test_default_method_by_problem_type(chain):
    assert default_method(chain) == "cpsat"
    placement = PlacementInstance(np.array([[0, 1], [1, 0]]), Mesh(2, 2))
    assert default_method(placement) == "qap"
    with pytest.raises(ValueError, match="no method solves a str"):
        default_method("not a problem")


def test_a_method_of_another_decision_says_what_it_solves(chain):
    with pytest.raises(ValueError, match="it solves PlacementInstance, not SchedulingInstance"):
        solve(chain, "qap")


def test_register_refuses_a_second_method_of_the_same_name():
    with pytest.raises(ValueError, match="registered twice"):
        register(Method("list", object, ("none",), lambda *a: None, "again"))  # type: ignore


def test_noparams_takes_nothing():
    assert dataclasses.fields(NoParams) == ()


def _private(name: str) -> bool:
    """A leading underscore, except dunders such as ``__version__`` (public by convention)."""
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def test_no_private_name_is_imported_across_modules():
    """Layers talk through public names only (issue 13): no ``from npusched.x import _y``."""
    bad = []
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("npusched"):
                bad += [f"{path}: {a.name}" for a in node.names if _private(a.name)]
    assert not bad


def test_time_limit_without_incumbent_keeps_the_warm_start(monkeypatch):
    """When the solver stops with nothing, the warm start it was given is returned as a feasible
    solution (verified), with a note, instead of time_limit_no_solution."""
    import dataclasses

    from npusched.bench.generate import layered_dag
    from npusched.methods import METHODS, solve
    from npusched.solvers.result import Result, Status
    from npusched.verify import check

    inst = layered_dag(4, 3, (2, 2), hop_latency=1, link_bandwidth=8.0, seed=1)

    def nothing(instance, backend, params, ctx):
        return Result(Status.TIME_LIMIT_NO_SOLUTION, "joint", "cpsat")

    monkeypatch.setitem(METHODS, "joint", dataclasses.replace(METHODS["joint"], run=nothing))
    res = solve(inst, "joint", time_limit=1)
    assert res.status is Status.FEASIBLE and "warm start" in res.message
    rep = check(inst, res.solution)
    assert rep.ok and res.objective == rep.makespan
