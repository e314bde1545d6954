import numpy as np
import pytest
from conftest import make_instance, random_instances, schedule_of
from hypothesis import given, settings

from npusched import asap_alap, list_schedule, verify
from npusched.heuristics import PRIORITIES, graham_bound


def test_list_schedule_of_diamond(diamond):
    s = list_schedule(diamond)
    rep = verify(diamond, s).raise_if_failed()
    # b-level: 0 first, then the two long μops in parallel, then 3, then 4 → 2 + 3 + 2 + 1
    assert rep.makespan == 8


@pytest.mark.parametrize("priority", [*PRIORITIES, lambda inst: -np.arange(inst.n)])
@settings(max_examples=40, deadline=None)
@given(inst=random_instances())
def test_every_priority_gives_a_valid_schedule_within_grahams_bound(priority, inst):
    s = list_schedule(inst, priority)
    rep = verify(inst, s).raise_if_failed()
    assert rep.makespan <= graham_bound(inst) + 1e-9
    assert rep.makespan >= inst.lower_bound()


def test_grahams_worst_case_is_reached():
    # m(m-1) unit μops + one μop of length m: the list order that starts the long μop last gives
    # 2m - 1 where the optimum is m, so (2 - 1/m)·OPT is tight.
    m = 3
    inst = make_instance([1] * (m * (m - 1)) + [m], [], m)
    s = list_schedule(inst, lambda i: -np.arange(i.n))  # index order: the long μop last
    assert verify(inst, s).raise_if_failed().makespan == 2 * m - 1
    assert list_schedule(inst, "blevel").makespan(inst) == m


def test_bad_priority_is_reported(diamond):
    with pytest.raises(ValueError, match="unknown priority"):
        list_schedule(diamond, "fifo")
    with pytest.raises(ValueError, match="one finite number"):
        list_schedule(diamond, lambda inst: np.zeros(2))


@settings(max_examples=40, deadline=None)
@given(inst=random_instances(per_core=True))
def test_list_schedule_with_per_core_latencies_is_valid(inst):
    verify(inst, list_schedule(inst)).raise_if_failed()


@settings(max_examples=40, deadline=None)
@given(inst=random_instances())
def test_windows_contain_the_schedule_that_defines_the_horizon(inst):
    s = list_schedule(inst)
    w = asap_alap(inst, s.makespan(inst))
    assert (w.earliest <= s.start).all()
    assert (s.start <= w.latest).all()


def test_windows_follow_eq_1_and_2(diamond):
    w = asap_alap(diamond, 10)
    assert w.earliest.tolist() == [0, 2, 2, 2, 5]
    assert w.latest.tolist() == [4, 6, 6, 7, 9]
    with pytest.raises(ValueError, match="shorter than the critical path"):
        asap_alap(diamond, 5)


def test_verify_reports_each_kind_of_violation(diamond):
    ok = schedule_of([0, 2, 2, 5, 7], [0, 0, 1, 0, 0])
    assert verify(diamond, ok).ok
    early = schedule_of([0, 1, 2, 5, 7], [0, 0, 1, 0, 0])
    assert any("precedence 0 -> 1" in v for v in verify(diamond, early).violations)
    clash = schedule_of([0, 2, 2, 4, 7], [0, 0, 1, 0, 0])
    assert any("overlap" in v for v in verify(diamond, clash).violations)
    assert not verify(diamond, schedule_of([0, 2, 2, 5, 7], [0, 0, 2, 0, 0])).ok
    assert not verify(diamond, schedule_of([0, 2], [0, 0])).ok
    claimed = verify(diamond, ok, claimed_makespan=7)
    assert any("claimed makespan" in v for v in claimed.violations)
