"""Conformance of relax.bucketize (tvtv/encode/ops/bucketing.py): torch.bucketize.

The reference is numpy.searchsorted(boundaries, x, side="right" if right else "left"),
which is torch.bucketize on strictly increasing boundaries, NaN inputs included (both put
NaN after every number: len(boundaries)). Checked: the IEEE encoding on concrete inputs
(special values, ties, several dtypes and shapes), the abstract model forcing the
reference, the TVM VM (NaN is a pinned finding), wrong expectations rejected, UB for
boundaries that are not strictly increasing, unsupported calls.

LegalizeOps lowers bucketize to `topi.searchsorted`: a `while` binary search over local
buffers, which tvtv runs as a scalar program (tests/test_tir_while.py has its mutations).
Pinned below: float data is a confirmed counterexample on a NaN input (TVM's search gives 0,
the spec len(boundaries)) and proved under no-nan; int data is proved. The refinement checks
also run on a hand lowering (a counting reduction and a NaN select): it is proved; the same
lowering without the NaN select, which computes what TVM's search computes, is refuted on a
NaN input; and one-token mutations are refuted.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
import z3
from tvm import relax

import tvtv
from tvtv.absfp.abstract import AbstractModel
from tvtv.absfp.ieee import IEEEModel
from tvtv.encode.evaluate import agrees, arrays_match, encode_op, eval_op
from tvtv.errors import Unsupported
from tvtv.ir import program as P
from tvtv.ir import tvm_bridge
from tests.test_ops_linalg import run_vm, tvm_call, typed_module

O = relax.op
f16, f32 = np.float16, np.float32
INF, NAN = math.inf, math.nan
FMAX = float(np.finfo(f32).max)


def bucketize_ref(x: np.ndarray, b: np.ndarray, out_int32: bool, right: bool) -> np.ndarray:
    out = np.searchsorted(b, x, side="right" if right else "left")
    return np.asarray(out, dtype="int32" if out_int32 else "int64").reshape(x.shape)


@dataclass
class Case:
    id: str
    x: np.ndarray
    b: np.ndarray
    out_int32: bool = False
    right: bool = False

    def make(self) -> Any:
        return lambda a, bb: O.bucketize(a, bb, self.out_int32, self.right)

    def expected(self) -> np.ndarray:
        return bucketize_ref(self.x, self.b, self.out_int32, self.right)

    def ty(self) -> tuple[P.TensorType, dict]:
        return tvm_call(self.make(), (self.x.shape, str(self.x.dtype)), (self.b.shape, str(self.b.dtype)))

    def args(self) -> list[np.ndarray]:
        return [self.x, self.b]

    def dtypes(self) -> list[str]:
        return [str(self.x.dtype), str(self.b.dtype)]

    @property
    def has_nan(self) -> bool:
        return bool(np.issubdtype(self.x.dtype, np.floating) and np.isnan(self.x).any())


XS = np.array([NAN, -INF, -FMAX, -1.0, -0.0, 0.0, 0.5, 1.0, 2.0, 2.5, 3.0, FMAX, INF], f32)
BS = np.array([-1.0, 0.0, 1.0, 3.0], f32)
RNG = np.random.default_rng(0)
CASES = [
    Case(f"f32_specials_{'i32' if i32 else 'i64'}_{'right' if r else 'left'}", XS, BS, i32, r)
    for i32 in (False, True) for r in (False, True)
] + [
    Case("f32_2d_random", np.round(RNG.standard_normal((3, 4)) * 3, 1).astype(f32),
         np.array([-2.0, -0.5, 0.1, 1.0, 4.0], f32), right=True),
    Case("f32_neg_zero_boundary", np.array([0.0, -0.0, -1e-45, 1e-45], f32), np.array([-0.0, 2.0], f32)),
    Case("f32_one_boundary", np.array([[1.0, 2.0], [3.0, NAN]], f32), np.array([2.0], f32), True, False),
    Case("f32_inf_boundaries", np.array([-INF, 0.0, INF, NAN], f32), np.array([-INF, 0.0, INF], f32),
         right=True),
    Case("f16", np.array([0.5, 65504.0, -INF, 1.0, NAN], f16), np.array([0.5, 1.0, 60000.0], f16)),
    Case("int32", np.array([[-2**31, 5, 7], [2**31 - 1, 0, 6]], np.int32), np.array([0, 5, 6, 100], np.int32),
         right=True),
    Case("int32_left", np.array([-2**31, 5, 7, 2**31 - 1, 0, 6], np.int32), np.array([0, 5, 6, 100], np.int32),
         out_int32=True),
    Case("int8", np.array([-128, -3, 0, 3, 127], np.int8), np.array([-3, 3, 127], np.int8)),
]
IDS = [c.id for c in CASES]
assert len(set(IDS)) == len(IDS)


# ------------------------------------------------------------------------------------------------
# (a) encoder vs reference, (b) VM vs reference, (c) wrong expectations rejected
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_ieee_matches_reference(case: Case) -> None:
    ty, attrs = case.ty()
    assert attrs == {"out_int32": case.out_int32, "right": case.right}, attrs
    want = case.expected()
    assert ty.shape == want.shape and ty.dtype == str(want.dtype)
    (got,) = eval_op("relax.bucketize", case.args(), ty, attrs, case.dtypes())
    assert arrays_match(got, want), f"{case.id}: got {got}, reference {want}"


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_models_force_reference(case: Case) -> None:
    ty, attrs = case.ty()
    for model in (IEEEModel(), AbstractModel(8)):
        assert agrees("relax.bucketize", case.args(), ty, [case.expected()], attrs, model, True,
                      case.dtypes())


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_tvm_vm_matches_reference_off_nan(case: Case) -> None:
    """The VM agrees everywhere except at NaN inputs, where it gives 0 (the finding)."""
    mod = typed_module(case.make(), (case.x.shape, str(case.x.dtype)), (case.b.shape, str(case.b.dtype)))
    got = run_vm(mod, case.x, case.b).numpy()
    want = case.expected().copy()
    if case.has_nan:
        want[np.isnan(case.x)] = 0
    assert arrays_match(got, want), f"{case.id}: VM {got}, reference {want}"


def test_vm_nan_finding() -> None:
    """Finding: TVM's searchsorted moves right only while `b[mid] < x`, false for NaN, so
    bucketize(NaN) = 0 for both values of `right`; PyTorch (and numpy) give len(boundaries)."""
    x, b = np.array([NAN, 2.0], f32), np.array([1.0, 2.0, 3.0], f32)
    for right in (False, True):
        mod = typed_module(lambda a, bb: O.bucketize(a, bb, False, right), ((2,), "float32"), ((3,), "float32"))
        assert run_vm(mod, x, b).numpy().tolist() == [0, 2 if right else 1]
        assert bucketize_ref(x, b, False, right).tolist() == [3, 2 if right else 1]


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_wrong_expectation_is_rejected(case: Case) -> None:
    ty, attrs = case.ty()
    wrong = case.expected().copy()
    flat = wrong.reshape(-1)
    flat[-1] = flat[-1] + 1
    for model in (IEEEModel(), AbstractModel(8)):
        assert not agrees("relax.bucketize", case.args(), ty, [wrong], attrs, model, False, case.dtypes())


# ------------------------------------------------------------------------------------------------
# UB (boundaries not strictly increasing) and unsupported calls
# ------------------------------------------------------------------------------------------------
def is_ub(b: np.ndarray, x: np.ndarray | None = None) -> bool:
    x = np.array([0.0, 1.0], b.dtype) if x is None else x
    _, ctx = encode_op("relax.bucketize", [x, b], P.TensorType(x.shape, "int64"),
                       {"out_int32": False, "right": False})
    s = z3.Solver()
    s.add(z3.Not(ctx.well_defined()))
    return s.check() == z3.sat


@pytest.mark.parametrize("b,ub", [
    ([1.0, 2.0, 3.0], False), ([-INF, 0.0, INF], False), ([5.0], False),
    ([1.0, 1.0, 3.0], True), ([3.0, 2.0], True), ([1.0, NAN, 3.0], True), ([-0.0, 0.0], True),
    ([NAN], False),
])
def test_unsorted_boundaries_are_ub(b: list, ub: bool) -> None:
    assert is_ub(np.array(b, f32)) == ub


def test_unsorted_boundaries_quantified_beyond_expansion() -> None:
    b = np.arange(80, dtype=np.int32)
    assert not is_ub(b, np.array([3], np.int32))
    b[70] = 69
    assert is_ub(b, np.array([3], np.int32))


@pytest.mark.parametrize("x,b,attrs", [
    (np.ones(2, f32), np.ones((2, 2), f32), {}),
    (np.ones(2, f32), np.ones(2, np.int32), {}),
    (np.ones(2, np.bool_), np.ones(2, np.bool_), {}),
    (np.ones(2, f32), np.arange(300, dtype=f32), {}),
    (np.ones(2, f32), np.arange(3, dtype=f32), {"right": 1}),
])
def test_unsupported_calls(x: np.ndarray, b: np.ndarray, attrs: dict) -> None:
    with pytest.raises(Unsupported):
        encode_op("relax.bucketize", [x, b], P.TensorType(x.shape, "int64"),
                  {"out_int32": False, "right": False, **attrs})


# ------------------------------------------------------------------------------------------------
# (d) refinement: TVM's legalization (a while loop), a hand lowering; (e) mutations
# ------------------------------------------------------------------------------------------------
LEGALIZED = {
    # name: (x shape, dtype, out_int32, right)
    "f32 left int64": ((5,), "float32", False, False),
    "f32 right int32": ((5,), "float32", True, True),
    "int32 left int64": ((5,), "int32", False, False),
    "int32 right int32": ((2, 3), "int32", True, True),
}


@pytest.mark.parametrize("name", sorted(LEGALIZED))
def test_legalized_searchsorted_verdicts(name: str) -> None:
    """TVM's lowering, a `while` binary search over `T.alloc_local` buffers: float data differs
    from the spec on NaN only (a confirmed counterexample, proved under no-nan), int data is
    proved."""
    shape, dtype, out_int32, right = LEGALIZED[name]
    mod = typed_module(lambda a, b: O.bucketize(a, b, out_int32, right), (shape, dtype), ((3,), dtype))
    legalized = relax.transform.LegalizeOps()(mod)
    (r,) = tvtv.verify(mod, legalized, timeout=20).results
    if dtype == "int32":
        assert r.verdict == "proved", r.to_dict()
        return
    d = r.to_dict()
    assert r.verdict == "counterexample" and r.confirmed is True, d
    assert "nan" in str(d["inputs"]["p0"]), d
    (r,) = tvtv.verify(mod, legalized, timeout=20, assume=["no-nan"]).results
    assert r.verdict == "proved", r.to_dict()


def hand_lowering(n: int, k: int, dtype: str, out: str, right: bool, nan_select: bool = True) -> str:
    """TVMScript of a module computing bucketize(x: (n,), b: (k,)) as
    out[i] = isnan(x[i]) ? k : sum_j (b[j] < x[i]) (<= with `right`)."""
    cmp = "<=" if right else "<"
    last = f"T.Select(T.isnan(p0[v_i0]), T.{out}({k}), cnt[v_i0])" if nan_select else "cnt[v_i0]"
    return f'''
@I.ir_module
class Module:
    @T.prim_func(private=True, s_tir=True)
    def bucket(p1: T.Buffer((T.int64({k}),), "{dtype}"), p0: T.Buffer((T.int64({n}),), "{dtype}"), out: T.Buffer((T.int64({n}),), "{out}")):
        T.func_attr({{"tirx.noalias": True}})
        cnt = T.sblock_alloc_buffer((T.int64({n}),), "{out}")
        for i0, j in T.grid(T.int64({n}), T.int64({k})):
            with T.sblock("count"):
                v_i0, v_j = T.axis.remap("SR", [i0, j])
                T.reads(p1[v_j], p0[v_i0])
                T.writes(cnt[v_i0])
                with T.init():
                    cnt[v_i0] = T.{out}(0)
                cnt[v_i0] = cnt[v_i0] + T.Select(p1[v_j] {cmp} p0[v_i0], T.{out}(1), T.{out}(0))
        for i0 in range(T.int64({n})):
            with T.sblock("nan_last"):
                v_i0 = T.axis.spatial(T.int64({n}), i0)
                T.reads(p0[v_i0], cnt[v_i0])
                T.writes(out[v_i0])
                out[v_i0] = {last}

    @R.function
    def main(p0: R.Tensor(({n},), dtype="{dtype}"), p1: R.Tensor(({k},), dtype="{dtype}")) -> R.Tensor(({n},), dtype="{out}"):
        cls = Module
        with R.dataflow():
            lv = R.call_tir(cls.bucket, (p1, p0), out_ty=R.Tensor(({n},), dtype="{out}"))
            gv: R.Tensor(({n},), dtype="{out}") = lv
            R.output(gv)
        return gv
'''


LOWERINGS = {
    "f32 left int64": (5, 3, "float32", False, False),
    "f32 right int32": (4, 3, "float32", True, True),
    "f16 left int64": (3, 2, "float16", False, False),
    "int32 right int64": (4, 3, "int32", False, True),
}


def source_and_target(name: str, **kw: Any) -> tuple[Any, str]:
    n, k, dtype, out_int32, right = LOWERINGS[name]
    src = typed_module(lambda a, b: O.bucketize(a, b, out_int32, right), ((n,), dtype), ((k,), dtype))
    text = hand_lowering(n, k, dtype, "int32" if out_int32 else "int64", right,
                         nan_select=kw.get("nan_select", dtype != "int32"))
    return src, text


def test_hand_lowering_runs_like_the_reference() -> None:
    src, text = source_and_target("f32 left int64")
    x, b = np.array([NAN, -INF, 1.0, 2.0, INF], f32), np.array([1.0, 2.0, 3.0], f32)
    got = run_vm(tvm_bridge.parse_script(text), x, b).numpy()
    assert arrays_match(got, bucketize_ref(x, b, False, False))


@pytest.mark.parametrize("name", sorted(LOWERINGS))
def test_hand_lowering_refines_spec(name: str) -> None:
    src, text = source_and_target(name)
    (r,) = tvtv.verify(src, tvm_bridge.parse_script(text), timeout=20).results
    assert r.verdict == "proved", r.to_dict()


def test_tvm_like_lowering_is_refuted_on_nan() -> None:
    """Without the NaN select the lowering computes TVM's value (0 for NaN): refuted."""
    src, text = source_and_target("f32 left int64", nan_select=False)
    (r,) = tvtv.verify(src, tvm_bridge.parse_script(text), timeout=20, confirm_vm=False).results
    assert r.verdict == "counterexample", r.to_dict()
    assert "nan" in str(r.to_dict()["inputs"]["p0"]), r.to_dict()


MUTATIONS = {
    "< becomes <=": ("f32 left int64", "p1[v_j] < p0[v_i0]", "p1[v_j] <= p0[v_i0]"),
    "<= becomes <": ("f32 right int32", "p1[v_j] <= p0[v_i0]", "p1[v_j] < p0[v_i0]"),
    "NaN count off by one": ("f32 left int64", "T.int64(3), cnt", "T.int64(2), cnt"),
    "indicator swapped": ("int32 right int64", "T.int64(1), T.int64(0))", "T.int64(0), T.int64(1))"),
    "operands swapped": ("f16 left int64", "p1[v_j] < p0[v_i0]", "p0[v_i0] < p1[v_j]"),
}


@pytest.mark.parametrize("name", sorted(MUTATIONS))
def test_broken_lowering_is_refuted(name: str) -> None:
    case, old, new = MUTATIONS[name]
    src, text = source_and_target(case)
    assert text.count(old) == 1, f"mutation {name!r} does not apply:\n{text}"
    (r,) = tvtv.verify(src, tvm_bridge.parse_script(text.replace(old, new)), timeout=20,
                       confirm_vm=False).results
    assert r.verdict == "counterexample", r.to_dict()
