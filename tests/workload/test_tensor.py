"""Tensor programs (npusched.workload.tensor): shapes, exact counts checked against numpy and
hand counts, views, JSON round trip, bad programs."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from npusched.workload.tensor import Tensor, TensorOp, TensorProgram


def _attention(t: int, d: int, h: int, dh: int) -> TensorProgram:
    """One multi-head attention: projections, heads split by reshape and transpose, Q·Kᵀ as
    a matmul reading K transposed, softmax, P·V."""
    T = {
        "x": Tensor("x", ("tokens", "features"), (t, d), "input"),
        "wq": Tensor("wq", ("in", "out"), (d, h * dh), "weight"),
        "wk": Tensor("wk", ("in", "out"), (d, h * dh), "weight"),
        "q": Tensor("q", ("tokens", "features"), (t, h * dh)),
        "k": Tensor("k", ("tokens", "features"), (t, h * dh)),
        "q4": Tensor("q4", ("tokens", "heads", "features"), (t, h, dh)),
        "k4": Tensor("k4", ("tokens", "heads", "features"), (t, h, dh)),
        "qh": Tensor("qh", ("heads", "tokens", "features"), (h, t, dh)),
        "kh": Tensor("kh", ("heads", "tokens", "features"), (h, t, dh)),
        "s": Tensor("s", ("heads", "tokens", "keys"), (h, t, t)),
        "p": Tensor("p", ("heads", "tokens", "keys"), (h, t, t)),
        "y": Tensor("y", ("heads", "tokens", "features"), (h, t, dh)),
    }
    ops = (
        TensorOp("q_proj", "gemm", ("x", "wq"), "q"),
        TensorOp("k_proj", "gemm", ("x", "wk"), "k"),
        TensorOp("q_split", "reshape", ("q",), "q4", shape=(t, h, dh)),
        TensorOp("k_split", "reshape", ("k",), "k4", shape=(t, h, dh)),
        TensorOp("q_heads", "transpose", ("q4",), "qh", perm=(1, 0, 2)),
        TensorOp("k_heads", "transpose", ("k4",), "kh", perm=(1, 0, 2)),
        TensorOp("scores", "matmul", ("qh", "kh"), "s", trans_b=True),
        TensorOp("softmax", "softmax", ("s",), "p"),
        TensorOp("pv", "matmul", ("p", "kh"), "y"),
    )
    return TensorProgram("attn", T, ops)


def test_attention_counts_by_hand():
    t, d, h, dh = 16, 32, 4, 8
    prog = _attention(t, d, h, dh)
    by = {op.name: op for op in prog.ops}
    assert prog.macs(by["q_proj"]) == t * d * h * dh
    assert prog.macs(by["scores"]) == h * t * t * dh
    assert prog.macs(by["pv"]) == h * t * t * dh
    assert prog.macs() == 2 * t * d * h * dh + 2 * h * t * t * dh
    assert prog.params() == 2 * d * h * dh
    assert prog.operations(by["softmax"]) == 2 * h * t * t  # a reduction, then a pass
    assert prog.is_view(by["q_split"]) and prog.bytes(by["q_split"]) == 0
    assert not prog.is_view(by["q_heads"])  # heads moved before the tokens: data movement
    assert prog.bytes(by["q_heads"], bits=16) == 2 * 2 * t * h * dh
    assert prog.bytes(by["q_proj"]) == t * d + d * h * dh + t * h * dh


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(1, 5), min_size=0, max_size=2), st.integers(1, 6), st.integers(1, 6),
       st.integers(1, 6), st.booleans(), st.booleans())
def test_matmul_shapes_and_macs_agree_with_numpy(batch, m, k, n, trans, broadcast):
    a_shape = (*batch, m, k)
    b_lead = tuple(1 for _ in batch) if broadcast else tuple(batch)
    b_shape = (*b_lead, n, k) if trans else (*b_lead, k, n)
    a, b = np.ones(a_shape), np.ones(b_shape)
    expect = np.matmul(a, np.swapaxes(b, -1, -2) if trans else b)
    names = tuple(f"d{i}" for i in range(len(a_shape)))
    T = {"a": Tensor("a", names, a_shape, "input"), "b": Tensor("b", names, b_shape, "input"),
         "c": Tensor("c", names, expect.shape)}
    prog = TensorProgram("mm", T, (TensorOp("mm", "matmul", ("a", "b"), "c", trans_b=trans),))
    assert prog.tensors["c"].shape == expect.shape
    # every output element sums k products
    assert prog.macs() == int(expect.sum())


def test_decode_reads_a_cache_that_is_no_parameter():
    L, dh = 64, 8
    T = {"q": Tensor("q", ("tokens", "features"), (1, dh), "input"),
         "kc": Tensor("kc", ("keys", "features"), (L, dh), "cache"),
         "s": Tensor("s", ("tokens", "keys"), (1, L))}
    prog = TensorProgram("dec", T, (TensorOp("qk", "matmul", ("q", "kc"), "s", trans_b=True),))
    assert prog.macs() == L * dh and prog.params() == 0
    assert prog.bytes(prog.ops[0]) == dh + L * dh + L


def test_norms_eltwise_and_round_trip():
    t, f = 5, 12
    T = {"x": Tensor("x", ("tokens", "features"), (t, f), "input"),
         "g": Tensor("g", ("features",), (f,), "weight"),
         "b": Tensor("b", ("features",), (f,), "weight"),
         "n": Tensor("n", ("tokens", "features"), (t, f)),
         "r": Tensor("r", ("tokens", "features"), (t, f)),
         "y": Tensor("y", ("tokens", "features"), (t, f))}
    ops = (TensorOp("ln", "layernorm", ("x", "g", "b"), "n"),
           TensorOp("rms", "rmsnorm", ("n", "g"), "r"),
           TensorOp("res", "eltwise", ("r", "x"), "y", fn="add"))
    prog = TensorProgram("norms", T, ops)
    assert prog.params() == 2 * f and prog.params(ops[0]) == 2 * f and prog.params(ops[1]) == f
    assert prog.operations(ops[2]) == t * f
    again = TensorProgram.from_dict(prog.to_dict())
    assert again.to_dict() == prog.to_dict()


@pytest.mark.parametrize(
    ("op", "match"),
    [
        (TensorOp("g", "gemm", ("x", "x"), "y"), "second operand is a 2-d weight"),
        (TensorOp("e", "eltwise", ("x",), "y", fn="exp"), "output shape"),
        (TensorOp("r", "reshape", ("x",), "y", shape=(7,)), "changes the size"),
        (TensorOp("t", "transpose", ("x",), "y", perm=(0, 0)), "does not order"),
        (TensorOp("m", "eltwise", ("x", "nope"), "y", fn="mul"), "not an earlier tensor"),
    ],
)
def test_bad_programs_say_why(op, match):
    T = {"x": Tensor("x", ("a", "b"), (2, 3), "input"), "y": Tensor("y", ("a", "b"), (3, 2))}
    with pytest.raises(ValueError, match=match):
        TensorProgram("bad", T, (op,))


def test_bad_op_arity_and_kind():
    with pytest.raises(ValueError, match="takes 2 inputs"):
        TensorOp("m", "eltwise", ("x",), "y", fn="mul")
    with pytest.raises(ValueError, match="kind is one of"):
        TensorOp("c", "conv", ("x",), "y")
