"""Stores at computed indices (`PrimFuncEncoder.write_unrolled`): the IR-builder TIR that
LegalizeOps emits for scatter_elements and scatter_nd, and a hand-written loop whose later
store to the same element wins. Each proof has a broken twin that must be refuted."""
from __future__ import annotations


import pytest
from tvm import relax
from tvm.relax import op as O
from tvm.script import ir as I
from tvm.script import relax as R
from tvm.script import tirx as T

import tvtv
from tests.test_ops_linalg import typed_module
from tvtv.ir import tvm_bridge


_module = typed_module


SCATTERS = {
    "elements update f32": (lambda x, i, u: O.scatter_elements(x, i, u, axis=1),
                            ((3, 4), "float32"), ((3, 2), "int64"), ((3, 2), "float32")),
    "elements add i32": (lambda x, i, u: O.scatter_elements(x, i, u, axis=0, reduction="add"),
                         ((3, 4), "int32"), ((2, 4), "int32"), ((2, 4), "int32")),
    "elements max i32": (lambda x, i, u: O.scatter_elements(x, i, u, axis=-1, reduction="max"),
                         ((2, 3), "int32"), ((2, 2), "int64"), ((2, 2), "int32")),
    "nd update f32": (lambda x, i, u: O.scatter_nd(x, i, u),
                      ((3, 4), "float32"), ((2, 1), "int64"), ((2, 4), "float32")),
    "nd add i32": (lambda x, i, u: O.scatter_nd(x, i, u, "add"),
                   ((3, 4), "int32"), ((2, 2), "int64"), ((2,), "int32")),
}


def _script(mod) -> str:
    """The module's TVMScript; the IR-builder PrimFunc's buffers print their `elem_offset` as
    `TypeVar("elem_offset")`, which tvm_bridge.parse_script reads back."""
    return mod.script()


@pytest.mark.parametrize("name", sorted(SCATTERS))
def test_legalized_scatter_is_proved(name):
    make, *types = SCATTERS[name]
    source = _module(make, *types)
    (r,) = tvtv.verify(source, relax.transform.LegalizeOps()(source), timeout=20).results
    assert r.verdict == "proved", r.to_dict()


# one-token mutations of the legalized TIR, each a different wrong scatter
MUTATIONS = {
    # negative indices wrap with `+ Cast(i < 0) * n`; `<=` wraps index 0 to n: out of bounds
    "wrap of index 0": ("elements update f32", "< T.int64(0))", "<= T.int64(0))"),
    "updates from the data": ("elements update f32", "] = p2[", "] = p0["),
    "add exchanged for multiply": ("nd add i32", "] + p2[", "] * p2["),
    "coordinates swapped": ("nd add i32", "+ T.int64(4) * T_transpose[v // ",
                            "+ T.int64(3) * T_transpose[v // "),
}


@pytest.mark.parametrize("mutation", sorted(MUTATIONS))
def test_broken_scatter_tir_is_refuted(mutation):
    name, old, new = MUTATIONS[mutation]
    make, *types = SCATTERS[name]
    source = _module(make, *types)
    text = _script(relax.transform.LegalizeOps()(source))
    assert old in text, f"mutation {mutation!r} does not apply:\n{text}"
    (ok,) = tvtv.verify(source, tvm_bridge.parse_script(text), timeout=20).results
    assert ok.verdict == "proved", ok.to_dict()   # the text itself parses back to a proof
    broken = tvm_bridge.parse_script(text.replace(old, new, 1))
    (r,) = tvtv.verify(source, broken, timeout=20).results
    assert r.verdict == "counterexample", r.to_dict()


@I.ir_module
class LastWins:
    @T.prim_func(private=True, s_tir=True)
    def last(x: T.Buffer((T.int64(3),), "float32"), out: T.Buffer((T.int64(1),), "float32")):
        for v in range(T.int64(3)):
            out[v // T.int64(3)] = x[v]      # every iteration stores element 0

    @R.function
    def main(x: R.Tensor((3,), "float32")) -> R.Tensor((1,), "float32"):
        cls = LastWins
        y = R.call_tir(cls.last, (x,), out_ty=R.Tensor((1,), "float32"))
        return y


def _slice(begin: int):
    return _module(lambda x: O.strided_slice(x, axes=[0], begin=[begin], end=[begin + 1]),
                   ((3,), "float32"))


def test_the_last_store_to_an_element_wins():
    (r,) = tvtv.verify(_slice(2), LastWins, timeout=20).results
    assert r.verdict == "proved", r.to_dict()
    (r,) = tvtv.verify(_slice(0), LastWins, timeout=20).results   # the first store does not
    assert r.verdict == "counterexample" and r.confirmed is True, r.to_dict()


def test_too_many_iterations_is_unsupported_not_a_verdict():
    from tvtv.encode.tir import interpreter
    make, *types = SCATTERS["elements update f32"]
    source = _module(make, *types)
    old = interpreter.UNROLLED_STORES
    interpreter.UNROLLED_STORES = 4
    try:
        (r,) = tvtv.verify(source, relax.transform.LegalizeOps()(source), timeout=20).results
    finally:
        interpreter.UNROLLED_STORES = old
    assert r.verdict == "unknown" and "at most 4 are unrolled" in r.reason, r.to_dict()
