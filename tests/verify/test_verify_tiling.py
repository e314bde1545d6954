"""The TSO tiling verifier (npusched.verify.tiling) accepts the search's choices and catches a
choice broken in any one term."""

from __future__ import annotations

import dataclasses

import pytest

from npusched.arch import load_arch
from npusched.heuristics.tiling.search import conv_layers, search_tso
from npusched.problem.tiling import TsoLayer, evaluate_geom
from npusched.verify.scheduling.schedule import VerificationError
from npusched.verify.tiling import verify_tiling
from npusched.workload.zoo import load_network

ARCH = load_arch("tso-nmp-16")


@pytest.fixture(scope="module")
def c3():
    layer, shape = conv_layers(load_network("lenet"))[1]
    p = TsoLayer.from_layer(layer, shape, ARCH)
    return p, search_tso(p)


def _cycles(p, c):
    bd = evaluate_geom(p.geom, p.nmp, *c.choice, p.model)
    return bd.mac_cycles + bd.dram_cycles


def test_accepts_every_search_choice():
    for name in ("lenet", "mobilenetv2"):
        for layer, shape in conv_layers(load_network(name)):
            for model in ("burst", "noburst"):
                p = TsoLayer.from_layer(layer, shape, ARCH, model)
                c = search_tso(p)
                rep = verify_tiling(p, c, _cycles(p, c), tso_space=True)
                assert rep.ok, rep.violations
                assert rep.cycles == _cycles(p, c)
                assert rep.burst_cycles == c.time.mac_cycles + c.time.dram_cycles


def _broken(p, c, **changes):
    """``c`` with ``changes``, its breakdown kept consistent with the new tiles."""
    c2 = dataclasses.replace(c, **changes)
    if set(changes) & {"tle", "tlt", "T_R", "T_C", "T_N", "T_M"}:
        try:
            bd = evaluate_geom(p.geom, p.nmp, *c2.choice, "burst")
        except ValueError:
            return c2
        c2 = dataclasses.replace(c2, time=bd)
    return c2


def test_catches_each_broken_term(c3):
    p, c = c3
    cyc = _cycles(p, c)
    assert verify_tiling(p, c, cyc).ok
    cases = {
        "claimed cycles": (c, cyc + 1),
        "objective_us": (dataclasses.replace(c, objective_us=c.objective_us * 1.01), cyc),
        "breakdown time": (
            dataclasses.replace(c, time=dataclasses.replace(c.time, total_us=0.0)),
            None,
        ),
        "breakdown of another candidate": (
            dataclasses.replace(c, T_C=c.T_C - 1 if c.T_C > 1 else c.T_C + 1),
            None,
        ),
        "T_R out of range": (_broken(p, c, T_R=10**6), None),
        "unknown slicing": (dataclasses.replace(c, tle="ZZ"), None),
        "MB0 overflow (eq. 2)": (_broken(p, c, T_R=p.geom.R, T_C=p.geom.C, T_N=p.geom.Nf), None),
        "another layer": (dataclasses.replace(c, name="nope"), None),
    }
    for what, (bad, claimed) in cases.items():
        rep = verify_tiling(p, bad, claimed)
        assert not rep.ok, what
        with pytest.raises(VerificationError):
            rep.raise_if_failed()


def test_fixed_strategy_and_get_filters(c3):
    p, c = c3
    other = "OFM" if c.tle != "OFM" else "KS"
    fixed = dataclasses.replace(p, fix_tle=other)
    assert not verify_tiling(fixed, c).ok
    assert verify_tiling(fixed, dataclasses.replace(c, fallback=True)).ok
    if c.tlt != "IS" and c.T_M > 1:  # a smaller T_M than GetFilters' is not in Algorithm 3's space
        small = _broken(p, c, T_M=c.T_M - 1)
        small = dataclasses.replace(small, objective_us=p.nmp.us(_cycles(p, small)))
        assert verify_tiling(p, small).ok
        assert not verify_tiling(p, small, tso_space=True).ok


def test_is_needs_all_filters():
    layer, shape = conv_layers(load_network("lenet"))[2]  # C5: 120 filters, F > 1 per TLT
    p = TsoLayer.from_layer(layer, shape, ARCH)
    c = search_tso(p)
    assert c.tlt == "IS" and c.T_M > 1
    rep = verify_tiling(p, _broken(p, c, T_M=1))
    assert any("IS holds all" in v for v in rep.violations)
