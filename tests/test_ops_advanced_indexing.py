"""Conformance of the PyTorch-style indexing encoders (tvtv/encode/ops/advanced_indexing.py):
index_tensor (x[I0, I1, ...]), index_put (Tensor.index_put_) and slice_scatter.

Every case is checked against a numpy reference (PyTorch's semantics: negative indices wrap
once, slices are Python slices):
  * the IEEE model on concrete inputs full of special values, with TVM 0.27's inferred type;
  * the abstract model (`AbstractModel(8)`), which must *force* the numpy result;
  * the same call run on the TVM VM (LLVM) gives the numpy result, or the difference is a
    pinned finding (index_tensor's negative indices, index_put's broadcast values,
    slice_scatter's negative bounds);
  * a wrong expectation (the broken twin) must be rejected.
Plus: UB (out-of-range indices, index_put's duplicate writes), unsupported calls, and
refinement checks of LegalizeOps through real TVM, with one-token broken TIR twins refuted.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np
import pytest
import z3
from tvm import relax

import tvtv
import tvtv.encode.ops.advanced_indexing  # noqa: F401  (registers the encoders)
from tvtv.absfp.abstract import AbstractModel
from tvtv.absfp.ieee import IEEEModel
from tvtv.absfp.interface import FloatModel
from tvtv.encode import registry
from tvtv.encode.context import EncodeContext
from tvtv.encode.evaluate import arg_value, arrays_match, tensor_values
from tvtv.encode.tensor import Tensor
from tvtv.encode.values import PrimScalar
from tvtv.errors import Unsupported
from tvtv.ir import program as P
from tvtv.ir import tvm_bridge
from tests.test_ops_linalg import run_tvm, tvm_call, typed_module
from tests.test_ops_manipulate import data

O = relax.op
F32 = "float32"


# ------------------------------------------------------------------------------------------------
# encoding helpers: arguments may be tuples of tensors (a list) or literal scalars ("prim", v)
# ------------------------------------------------------------------------------------------------
def _value(a: Any, ctx: EncodeContext) -> Any:
    if isinstance(a, list):
        return tuple(_value(x, ctx) for x in a)
    if isinstance(a, tuple) and a and a[0] == "prim":
        return PrimScalar(ctx.dom("int64").const(a[1]), "int64", a[1])
    return arg_value(a, str(np.asarray(a).dtype), ctx)


def encode(op: str, args: list, ty: P.Type, attrs: dict, model: FloatModel | None = None
           ) -> tuple[Tensor, EncodeContext]:
    model = model or IEEEModel()
    ctx = EncodeContext(model)
    model.on_ub = ctx.add_ub
    call = P.OpCall(op, tuple(P.VarRef(f"a{k}") for k in range(len(args))), dict(attrs), ty)
    return registry.lookup(op)(ctx, call, [_value(a, ctx) for a in args]), ctx


def evaluate(op: str, args: list, ty: P.Type, attrs: dict) -> np.ndarray:
    t, ctx = encode(op, args, ty, attrs)
    assert not is_ub(ctx)
    return np.array(tensor_values(t), dtype=t.dtype).reshape(t.shape)


def model_agrees(op: str, args: list, ty: P.Type, attrs: dict, want: np.ndarray,
                 model: FloatModel, exact: bool) -> bool:
    """Every element forced to `want` (exact) / `want` admitted, where defined."""
    t, ctx = encode(op, args, ty, attrs, model)
    if t.shape != want.shape:
        return False
    dom = model.domain(t.dtype)
    eqs = [dom.same(t.at(k), dom.const(w)) for k, w in enumerate(want.reshape(-1).tolist())]
    s = z3.Solver()
    s.set("timeout", 120000)   # a budget against load (each query takes well under 1 s)
    s.add(*model.preconditions(), ctx.well_defined())
    s.add(z3.Not(z3.And(*eqs)) if exact else z3.And(*eqs))
    return s.check() == (z3.unsat if exact else z3.sat)


def is_ub(ctx: EncodeContext) -> bool:
    s = z3.Solver()
    s.add(z3.Not(ctx.well_defined()))
    return s.check() == z3.sat


# ------------------------------------------------------------------------------------------------
# numpy references (PyTorch semantics)
# ------------------------------------------------------------------------------------------------
def index_tensor_ref(x: np.ndarray, ind: Sequence[np.ndarray]) -> np.ndarray:
    """x[I0, ..., Ik-1]: numpy's advanced indexing wraps negative indices once, as PyTorch."""
    return x[tuple(np.asarray(i, np.int64) for i in ind)]


def index_put_ref(x: np.ndarray, ind: Sequence[np.ndarray], v: np.ndarray,
                  accumulate: bool = False) -> np.ndarray:
    """Tensor.index_put_: values broadcast to the index shape, writes in index order."""
    out = x.copy()
    b = np.broadcast_arrays(*[np.asarray(i, np.int64) for i in ind])
    shape = b[0].shape
    vals = np.broadcast_to(v.reshape(v.shape[v.ndim - len(shape):]) if v.ndim > len(shape) else v, shape)
    for p in np.ndindex(*shape):
        t = tuple(int(i[p]) % n if int(i[p]) < 0 else int(i[p]) for i, n in zip(b, x.shape))
        if accumulate:
            np.add.at(out, t, vals[p])
        else:
            out[t] = vals[p]
    return out


def slice_scatter_ref(x: np.ndarray, src: np.ndarray, start: int, end: int, step: int,
                      axis: int) -> np.ndarray:
    out = x.copy()
    sl = [slice(None)] * x.ndim
    sl[axis] = slice(start, end, step)
    out[tuple(sl)] = src
    return out


# ------------------------------------------------------------------------------------------------
# cases
# ------------------------------------------------------------------------------------------------
@dataclass
class Case:
    """One call. `args` are the encoder's arguments (a list is a Relax tuple); `flat` the
    tensors in parameter order for TVM; `tvm` builds the call from the parameters."""
    id: str
    op: str
    args: list
    attrs: dict
    expected: np.ndarray
    tvm: Callable[..., Any]
    wrong: np.ndarray
    vm_agrees: bool = True            # False: a pinned finding (see the tests below)
    flat: list = field(default_factory=list)

    def __post_init__(self) -> None:
        self.flat = [t for a in self.args if not (isinstance(a, tuple))
                     for t in (a if isinstance(a, list) else [a])]

    def ty(self) -> P.TensorType:
        ty, attrs = tvm_call(self.tvm, *[(t.shape, str(t.dtype)) for t in self.flat])
        assert attrs == self.attrs, (attrs, self.attrs)
        return ty


def it_case(id: str, x: np.ndarray, ind: list[np.ndarray], wrong: Callable[..., np.ndarray],
            vm_agrees: bool = True) -> Case:
    return Case(id, "relax.index_tensor", [x, ind], {}, index_tensor_ref(x, ind),
                lambda d, *i: O.index_tensor(d, list(i)),
                np.asarray(wrong(x, ind)), vm_agrees)


def ip_case(id: str, x: np.ndarray, ind: list[np.ndarray], v: np.ndarray, accumulate: bool,
            wrong: Callable[..., np.ndarray], vm_agrees: bool = True) -> Case:
    return Case(id, "relax.index_put", [x, ind, v], {"accumulate": accumulate},
                index_put_ref(x, ind, v, accumulate),
                lambda d, *r: O.index_put(d, list(r[:-1]), r[-1], accumulate),
                np.asarray(wrong(x, ind, v)), vm_agrees)


def ss_case(id: str, x: np.ndarray, src: np.ndarray, start: int, end: int, step: int, axis: int,
            wrong: Callable[..., np.ndarray], vm_agrees: bool = True) -> Case:
    return Case(id, "relax.slice_scatter", [x, src, ("prim", start), ("prim", end), ("prim", step)],
                {"axis": axis}, slice_scatter_ref(x, src, start, end, step, axis),
                lambda d, s: O.slice_scatter(d, s, start, end, step, axis=axis),
                np.asarray(wrong(x, src)), vm_agrees)


X34 = data((3, 4))
X234 = data((2, 3, 4), seed=2)
I34 = data((3, 4), "int32", seed=3)
H23 = data((2, 3), "float16", seed=4)
Z33 = np.zeros((3, 3), F32)

CASES = [
    # index_tensor: in-range, non-negative indices (the VM agrees)
    it_case("it_rows_cols", X34, [np.array([2, 0, 1, 2]), np.array([3, 0, 1, 1])],
            lambda x, i: index_tensor_ref(x, [i[0], i[1][::-1]])),
    it_case("it_broadcast", X34, [np.array([[0], [2]]), np.array([1, 3, 0])],
            lambda x, i: index_tensor_ref(x, [i[0], i[1] % 2])),
    it_case("it_one_index_i32", X234, [np.array([[1, 0]], "int32")],
            lambda x, i: index_tensor_ref(x, [1 - i[0]])),
    it_case("it_int8_idx_int_data", I34, [np.array([1, 2], "int8"), np.array([[3], [0]], "int16")],
            lambda x, i: index_tensor_ref(x, [i[0], 3 - i[1]])),
    it_case("it_3d_two_indices_f16", data((2, 3, 2), "float16", 5),
            [np.array([1, 0, 1]), np.array([2, 2, 0])],
            lambda x, i: index_tensor_ref(x, [i[0], i[1] // 2])),
    it_case("it_scalar_index", X34, [np.array(2)], lambda x, i: x[1]),
    # negative indices wrap (PyTorch); TVM reads out of bounds (finding)
    it_case("it_negative", np.arange(12, dtype=F32).reshape(3, 4), [np.array([-1, 0, 2]),
            np.array([1, -1, -4])], lambda x, i: index_tensor_ref(x, [i[0], -1 - i[1]]),
            vm_agrees=False),
    # index_put
    ip_case("ip_doc_example", Z33, [np.array([0, 2]), np.array([1, 1])],
            np.array([1.0, 2.0], F32), False, lambda x, i, v: index_put_ref(x, i, v[::-1])),
    ip_case("ip_specials_negative", X34, [np.array([-1, 0, 1]), np.array([0, -1, -4])],
            np.array([np.nan, -0.0, np.inf], F32), False,
            lambda x, i, v: index_put_ref(x, [i[0], i[1] % 2], v)),
    ip_case("ip_broadcast_2d_idx", X34, [np.array([[0], [2]]), np.array([3, 1, 0])],
            data((2, 3), seed=6), False, lambda x, i, v: index_put_ref(x, i, v[::-1])),
    ip_case("ip_3d_int8", data((2, 3, 4), "int8", 7),
            [np.array([1, 0]), np.array([2, -3]), np.array([-1, 3])],
            np.array([5, -7], "int8"), False, lambda x, i, v: index_put_ref(x, i, v, True)),
    ip_case("ip_acc_int_dups", I34, [np.array([1, 1, 2, 1]), np.array([2, 2, 0, -2])],
            np.array([7, -3, 5, 100], "int32"), True,
            lambda x, i, v: index_put_ref(x, i, v, False)),
    ip_case("ip_acc_int64_idx32", data((4,), "int64", 8), [np.array([3, -1, 0], "int32")],
            np.array([1, 2, 3], "int64"), True, lambda x, i, v: index_put_ref(x, i, v, False)),
    ip_case("ip_f16", H23, [np.array([1, 0]), np.array([0, 2])], np.array([65504, -0.0], "float16"),
            False, lambda x, i, v: index_put_ref(x, [1 - i[0], i[1]], v)),
    # values broadcast to the index shape (PyTorch); TVM reads them out of bounds (finding)
    ip_case("ip_broadcast_values", Z33, [np.array([0, 1, 2]), np.array([0, 1, 2])],
            np.array([7.0], F32), False, lambda x, i, v: index_put_ref(x, i, v * 2),
            vm_agrees=False),
    # slice_scatter
    ss_case("ss_step2", data((2, 8), seed=9), data((2, 3), seed=10), 1, 6, 2, 1,
            lambda x, s: slice_scatter_ref(x, s[:, ::-1], 1, 6, 2, 1)),
    ss_case("ss_to_end_step3", data((2, 8), seed=11), data((2, 3), seed=12), 1, 8, 3, -1,
            lambda x, s: slice_scatter_ref(x, s, 0, 7, 3, 1)),
    ss_case("ss_axis0_3d", X234, data((1, 3, 4), seed=13), 1, 2, 1, 0,
            lambda x, s: slice_scatter_ref(x, s, 0, 1, 1, 0)),
    ss_case("ss_full_identity_int", I34, data((3, 4), "int32", 14), 0, 4, 1, 1,
            lambda x, s: x),
    ss_case("ss_empty", X34, np.zeros((3, 0), F32), 2, 2, 1, 1,
            lambda x, s: slice_scatter_ref(x, X34[:, :1], 2, 3, 1, 1)),
    ss_case("ss_end_past_axis", data((2, 8), seed=15), data((2, 1), seed=16), 7, 9, 2, 1,
            lambda x, s: slice_scatter_ref(x, s, 6, 7, 2, 1)),
    ss_case("ss_f16_middle", data((4, 3), "float16", 17), data((2, 3), "float16", 18), 1, 3, 1, 0,
            lambda x, s: slice_scatter_ref(x, s, 2, 4, 1, 0)),
    # both bounds negative: PyTorch writes 5 and 6; TVM writes nothing (finding)
    ss_case("ss_negative_bounds", data((2, 8), seed=19), data((2, 2), seed=20), -3, -1, 1, 1,
            lambda x, s: x, vm_agrees=False),
]
IDS = [c.id for c in CASES]
assert len(set(IDS)) == len(IDS)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_ieee_matches_numpy(case: Case) -> None:
    ty = case.ty()
    assert ty.shape == case.expected.shape and ty.dtype == str(case.expected.dtype)
    got = evaluate(case.op, case.args, ty, case.attrs)
    assert arrays_match(got, case.expected), f"{case.id}: got {got}, numpy {case.expected}"
    assert model_agrees(case.op, case.args, ty, case.attrs, case.expected, IEEEModel(), True)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_abstract_model_forces_numpy(case: Case) -> None:
    assert model_agrees(case.op, case.args, case.ty(), case.attrs, case.expected,
                        AbstractModel(8), True)


@pytest.mark.parametrize("case", [c for c in CASES if c.vm_agrees],
                         ids=[c.id for c in CASES if c.vm_agrees])
def test_tvm_vm_matches_numpy(case: Case) -> None:
    got = run_tvm(case.tvm, *case.flat)
    assert arrays_match(got, case.expected), f"{case.id}: VM {got}, numpy {case.expected}"


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_wrong_expectation_is_rejected(case: Case) -> None:
    assert case.wrong.shape == case.expected.shape
    assert not arrays_match(case.wrong, case.expected)
    for model in (IEEEModel(), AbstractModel(8)):
        assert not model_agrees(case.op, case.args, case.ty(), case.attrs, case.wrong, model, False)


# ------------------------------------------------------------------------------------------------
# measured TVM behaviour where it differs from PyTorch (findings)
# ------------------------------------------------------------------------------------------------
def test_vm_index_tensor_does_not_wrap_negative_indices() -> None:
    """PyTorch x[[-1, 0, 2], [1, -1, -4]] = [9, 3, 8]; TVM 0.27 reads the raw offsets
    (-1 * 4 + 1 = -3: before the buffer) and returns garbage there."""
    x = np.arange(12, dtype=F32).reshape(3, 4)
    i, j = np.array([-1, 0, 2]), np.array([1, -1, -4])
    want = index_tensor_ref(x, [i, j])
    assert list(want) == [9.0, 3.0, 8.0]
    got = run_tvm(lambda d, a, b: O.index_tensor(d, [a, b]), x, i, j)
    assert got[2] == x[1, 0] == 4.0   # x[2, -4] read as the flat element 2 * 4 - 4
    assert not arrays_match(got, want)


def test_vm_index_put_wraps_and_orders_duplicates() -> None:
    """What TVM does where PyTorch is silent or refused here: negative indices wrap once (as
    PyTorch); duplicates keep the last write, and accumulate adds them."""
    z = np.zeros((3, 3), F32)
    got = run_tvm(lambda d, a, b, v: O.index_put(d, [a, b], v), z, np.array([-1, 0]),
                  np.array([1, -3]), np.array([5, 6], F32))
    assert got[2, 1] == 5 and got[0, 0] == 6
    dup = (np.array([1, 1]), np.array([1, 1]), np.array([5, 6], F32))
    assert run_tvm(lambda d, a, b, v: O.index_put(d, [a, b], v), z, *dup)[1, 1] == 6
    assert run_tvm(lambda d, a, b, v: O.index_put(d, [a, b], v, True), z, *dup)[1, 1] == 11


def test_vm_index_put_broadcast_values_finding() -> None:
    """PyTorch broadcasts values of shape (1,) over 3 index tuples: diagonal [7, 7, 7].
    TVM's topi.index_put reads values[k] for tuple k: out of bounds for k > 0."""
    (case,) = [c for c in CASES if c.id == "ip_broadcast_values"]
    assert list(np.diag(case.expected)) == [7.0, 7.0, 7.0]
    got = run_tvm(case.tvm, *case.flat)
    assert got[0, 0] == 7.0 and not arrays_match(got, case.expected)


def test_vm_slice_scatter_negative_bounds_finding() -> None:
    """start -3, end -1 on an axis of 8: PyTorch writes positions 5 and 6; TVM's inference
    accepts src of 2 elements, but its mask compares -3 <= i < -1 and writes nothing."""
    (case,) = [c for c in CASES if c.id == "ss_negative_bounds"]
    x, src = case.flat
    assert arrays_match(case.expected[:, 5:7], src)
    got = run_tvm(case.tvm, x, src)
    assert arrays_match(got, x) and not arrays_match(got, case.expected)


# ------------------------------------------------------------------------------------------------
# UB: out-of-range indices, duplicate writes
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("rows,cols,ub", [
    ([0, 2], [3, 0], False), ([-3, -1], [-4, 3], False), ([3, 0], [0, 0], True),
    ([0, -4], [0, 0], True), ([0, 1], [4, 0], True), ([0, 1], [0, -5], True)])
@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_index_tensor_out_of_range_is_ub(rows: list, cols: list, ub: bool, dtype: str) -> None:
    _, ctx = encode("relax.index_tensor", [X34, [np.array(rows, dtype), np.array(cols, dtype)]],
                    P.TensorType((2,), F32), {})
    assert is_ub(ctx) == ub


@pytest.mark.parametrize("numel", [4, 300])
def test_index_tensor_symbolic_indices_are_pinned(numel: int) -> None:
    """Well-definedness pins every index into [-n, n) (300 elements: quantified)."""
    ctx = EncodeContext(IEEEModel())
    x = Tensor.variable("x", (5, 3), F32, ctx.dom(F32))
    r = Tensor.variable("r", (numel,), "int32", ctx.dom("int32"))
    call = P.OpCall("relax.index_tensor", (), {}, P.TensorType((numel, 3), F32))
    registry.lookup("relax.index_tensor")(ctx, call, [x, (r,)])

    def check(*conds: z3.BoolRef) -> z3.CheckSatResult:
        s = z3.Solver()
        s.set("timeout", 120000)   # a budget against load (each query takes well under 1 s)
        s.add(ctx.well_defined(), *conds)
        return s.check()
    assert check(r.at(numel - 1) == 5) == z3.unsat
    assert check(r.at(1) == -6) == z3.unsat
    assert check(r.at(1) == -5, r.at(numel - 1) == 4) == z3.sat


def test_index_tensor_empty_broadcast_reads_nothing() -> None:
    """A broadcast shape with a 0 reads no index: a bad index there is not UB."""
    _, ctx = encode("relax.index_tensor", [X34, [np.array([[7]]), np.zeros((0,), "int64")]],
                    P.TensorType((1, 0), F32), {})
    assert not is_ub(ctx)


@pytest.mark.parametrize("rows,cols,accumulate,ub", [
    ([0, 2], [1, 1], False, False),
    ([0, -1], [1, 1], False, False),      # -1 wraps to 2: distinct
    ([2, -1], [1, 1], False, True),       # 2 and -1 are one row: a duplicate write
    ([1, 1], [3, -1], False, True),       # column 3 twice
    ([1, 1], [3, -1], True, False),       # accumulate: duplicates are fine
    ([3, 0], [0, 0], True, True),         # 3 >= 3
    ([0, -4], [0, 1], False, True),       # -4 < -3
])
def test_index_put_ub(rows: list, cols: list, accumulate: bool, ub: bool) -> None:
    x, v = (I34, np.array([1, 2], "int32")) if accumulate else (X34, np.array([1, 2], F32))
    _, ctx = encode("relax.index_put", [x, [np.array(rows), np.array(cols)], v],
                    P.TensorType((3, 4), str(x.dtype)), {"accumulate": accumulate})
    assert is_ub(ctx) == ub


@pytest.mark.parametrize("tuples", [3, 30])
def test_index_put_symbolic_indices_are_pinned(tuples: int) -> None:
    """Well-definedness pins every index into [-n, n) and makes the written elements
    distinct (30 tuples: 435 pairs in the disjunction)."""
    ctx = EncodeContext(IEEEModel())
    x = Tensor.variable("x", (6, 8), F32, ctx.dom(F32))
    r = Tensor.variable("r", (tuples,), "int64", ctx.dom("int64"))
    c = Tensor.variable("c", (tuples,), "int64", ctx.dom("int64"))
    v = Tensor.variable("v", (tuples,), F32, ctx.dom(F32))
    call = P.OpCall("relax.index_put", (), {"accumulate": False}, P.TensorType((6, 8), F32))
    registry.lookup("relax.index_put")(ctx, call, [x, (r, c), v])

    def check(*conds: z3.BoolRef) -> z3.CheckSatResult:
        s = z3.Solver()
        s.set("timeout", 120000)   # a budget against load (each query takes well under 1 s)
        s.add(ctx.well_defined(), *conds)
        return s.check()
    assert check(r.at(1) == 6) == z3.unsat
    assert check(c.at(2) == -9) == z3.unsat
    assert check(r.at(0) == -6, c.at(0) == -8) == z3.sat
    assert check(r.at(0) == 1, c.at(0) == 2, r.at(2) == -5, c.at(2) == -6) == z3.unsat
    assert check(r.at(0) == 1, c.at(0) == 2, r.at(2) == -5, c.at(2) == -5) == z3.sat


def test_index_put_duplicate_ub_is_quantified_above_the_bound() -> None:
    """100 tuples (4,950 pairs): one quantified formula, decided with the indices known."""
    ctx = EncodeContext(IEEEModel())
    x = Tensor.variable("x", (10, 12), F32, ctx.dom(F32))
    r = Tensor.variable("r", (100,), "int32", ctx.dom("int32"))
    c = Tensor.variable("c", (100,), "int32", ctx.dom("int32"))
    v = Tensor.variable("v", (100,), F32, ctx.dom(F32))
    call = P.OpCall("relax.index_put", (), {"accumulate": False}, P.TensorType((10, 12), F32))
    registry.lookup("relax.index_put")(ctx, call, [x, (r, c), v])
    rows, cols = np.arange(100) // 10, np.arange(100) % 10

    def decide(rs: np.ndarray, cs: np.ndarray, defined: bool) -> z3.CheckSatResult:
        s = z3.Solver()
        s.set("timeout", 120000)   # a budget against load (each query takes well under 1 s)
        s.add(ctx.well_defined() if defined else z3.Not(ctx.well_defined()),
              *[r.at(k) == int(a) for k, a in enumerate(rs)], *[c.at(k) == int(b) for k, b in enumerate(cs)])
        return s.check()
    assert decide(rows, cols, True) == z3.sat
    dup = cols.copy()
    dup[57], dup[58] = 7 - 12, 7     # tuples 57 and 58 (row 5): -5 wraps to column 7, and 7
    assert decide(rows, dup, True) == z3.unsat
    assert decide(rows, dup, False) == z3.sat


# ------------------------------------------------------------------------------------------------
# unsupported calls are refused
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("op,args,ty,attrs,match", [
    ("relax.index_tensor", [X34, [np.zeros(2, F32)]], P.TensorType((2, 4), F32), {}, "dtype float32"),
    ("relax.index_tensor", [X34, [np.zeros(2, "int64")] * 3], P.TensorType((2,), F32), {}, "rank 2"),
    ("relax.index_tensor", [X34, [np.zeros(2, "int64"), np.zeros(3, "int64")]],
     P.TensorType((2,), F32), {}, "broadcast"),
    ("relax.index_tensor", [X34, [np.zeros(2, "int64")]], P.TensorType((2,), F32), {}, "inferred"),
    ("relax.index_put", [X34, [np.zeros(2, "int64")], np.zeros(2, F32)], P.TensorType((3, 4), F32),
     {"accumulate": False}, "1 index tensors"),
    ("relax.index_put", [X34, [np.zeros(2, "int64")] * 2, np.zeros(2, F32)],
     P.TensorType((3, 4), F32), {"accumulate": True}, "accumulate on float32"),
    ("relax.index_put", [X34, [np.zeros(2, "int64")] * 2, np.zeros(5, F32)],
     P.TensorType((3, 4), F32), {"accumulate": False}, "do not broadcast"),
    ("relax.index_put", [X34, [np.zeros(2, "int64")] * 2, np.zeros(2, "float16")],
     P.TensorType((3, 4), F32), {"accumulate": False}, "dtype float16"),
    ("relax.slice_scatter", [X34, np.zeros((3, 11), F32), ("prim", -3), ("prim", 8), ("prim", 1)],
     P.TensorType((3, 4), F32), {"axis": 1}, "PyTorch's slice"),
    ("relax.slice_scatter", [X34, np.zeros((3, 2), F32), ("prim", 0), ("prim", 4), ("prim", 0)],
     P.TensorType((3, 4), F32), {"axis": 1}, "step 0"),
    ("relax.slice_scatter", [X34, np.zeros((3, 2), F32), ("prim", 0), ("prim", 2), ("prim", 1)],
     P.TensorType((3, 4), F32), {"axis": 2}, "axis 2"),
    ("relax.slice_scatter", [X34, np.zeros((2, 2), F32), ("prim", 0), ("prim", 2), ("prim", 1)],
     P.TensorType((3, 4), F32), {"axis": 1}, "PyTorch's slice"),
])
def test_unsupported_calls_are_refused(op: str, args: list, ty: P.TensorType, attrs: dict,
                                       match: str) -> None:
    with pytest.raises(Unsupported, match=match):
        encode(op, args, ty, attrs)


def test_index_put_float_accumulate_is_refused() -> None:
    """TVM accepts float accumulate (a serial sum); its order is PyTorch's to choose."""
    ty, attrs = tvm_call(lambda d, a, b, v: O.index_put(d, [a, b], v, True), ((3, 4), F32),
                         ((2,), "int64"), ((2,), "int64"), ((2,), F32))
    assert attrs == {"accumulate": True}
    with pytest.raises(Unsupported, match="accumulate"):
        encode("relax.index_put", [X34, [np.zeros(2, "int64")] * 2, np.zeros(2, F32)], ty, attrs)


# ------------------------------------------------------------------------------------------------
# refinement through real TVM: LegalizeOps, its findings, and broken TIR twins
# ------------------------------------------------------------------------------------------------
def legalized(mod: Any) -> str:
    """LegalizeOps(mod) as TVMScript (index_put's IR-builder buffers print their
    `elem_offset` as a TypeVar, which tvm_bridge.parse_script reads back)."""
    return relax.transform.LegalizeOps()(mod).script()


def verdict(mod: Any, target_text: str) -> Any:
    (r,) = tvtv.verify(mod, tvm_bridge.parse_script(target_text), timeout=20).results
    return r


IT = typed_module(lambda x, a, b: O.index_tensor(x, [a, b]), ((3, 4), F32), ((2, 1), "int64"),
                  ((3,), "int64"))
IP = typed_module(lambda x, a, b, v: O.index_put(x, [a, b], v), ((3, 4), F32), ((2,), "int64"),
                  ((2,), "int64"), ((2,), F32))
IP_ACC = typed_module(lambda x, a, b, v: O.index_put(x, [a, b], v, True), ((3, 4), "int32"),
                      ((2,), "int32"), ((2,), "int64"), ((2,), "int32"))
IP_BCAST = typed_module(lambda x, a, b, v: O.index_put(x, [a, b], v), ((3, 3), F32),
                        ((3,), "int64"), ((3,), "int64"), ((1,), F32))
SS_END = typed_module(lambda x, s: O.slice_scatter(x, s, 1, 8, 3, axis=1), ((2, 8), F32),
                      ((2, 3), F32))
SS_TAIL = typed_module(lambda x, s: O.slice_scatter(x, s, 2, 4, 1, axis=0), ((4, 3), "int32"),
                       ((2, 3), "int32"))
SS_ID = typed_module(lambda x, s: O.slice_scatter(x, s, 0, 3, 1, axis=-1), ((2, 3), F32),
                     ((2, 3), F32))
SS_MID = typed_module(lambda x, s: O.slice_scatter(x, s, 1, 6, 2, axis=1), ((2, 8), F32),
                      ((2, 3), F32))
SS_NEG = typed_module(lambda x, s: O.slice_scatter(x, s, -3, -1, 1, axis=1), ((2, 8), F32),
                      ((2, 2), F32))

PROVED = {"index_put": IP, "index_put_accumulate_int": IP_ACC, "slice_scatter_to_end": SS_END,
          "slice_scatter_tail_axis0_int": SS_TAIL, "slice_scatter_identity": SS_ID}


@pytest.mark.parametrize("name", sorted(PROVED))
def test_legalize_is_proved(name: str) -> None:
    mod = PROVED[name]
    (r,) = tvtv.verify(mod, relax.transform.LegalizeOps()(mod), timeout=20).results
    assert r.verdict == "proved", r.to_dict()


@pytest.mark.parametrize("name,mod,where", [
    # negative indices: PyTorch wraps, the legalized TIR loads out of bounds
    ("index_tensor", IT, "load from p0 out of bounds"),
    # values (1,) broadcast in PyTorch; TIR reads values[1], values[2]
    ("index_put_broadcast_values", IP_BCAST, "out of bounds"),
    # a slice ending before the axis: TIR's take reads src past its axis for i > last
    ("slice_scatter_middle", SS_MID, "load from p1 out of bounds"),
    ("slice_scatter_negative_bounds", SS_NEG, "out of bounds"),
])
def test_legalize_findings_are_counterexamples(name: str, mod: Any, where: str) -> None:
    r = verdict(mod, legalized(mod))
    assert r.verdict == "counterexample", r.to_dict()
    assert where in r.reason, r.reason


_A, _B = "T_broadcast_to[v_ax0, v_ax1]", "T_broadcast_to_1[v_ax0, v_ax1]"
IT_LOAD = f"advanced_index[v_ax0, v_ax1] = p0[{_A}, {_B}]"
# index_tensor's TIR with PyTorch's wrapping added by hand (the fix the finding asks for)
IT_FIXED = (f'advanced_index[v_ax0, v_ax1] = p0[{_A} + T.Cast("int64", {_A} < T.int64(0)) * '
            f'T.int64(3), {_B} + T.Cast("int64", {_B} < T.int64(0)) * T.int64(4)]')


def fixed_index_tensor() -> str:
    text = legalized(IT)
    assert IT_LOAD in text, text
    return text.replace(IT_LOAD, IT_FIXED)


def test_index_tensor_with_wrapping_added_is_proved() -> None:
    """The finding is exactly the missing wrap: with it, the TIR refines the specification."""
    r = verdict(IT, fixed_index_tensor())
    assert r.verdict == "proved", r.to_dict()


MUTATIONS = {
    # index_tensor (the fixed TIR)
    "index_tensor: column extent 4 -> 3": (IT, None, "T.int64(4)]", "T.int64(3)]"),
    "index_tensor: row index read for the column": (IT, None, f"T.int64(3), {_B} +", f"T.int64(3), {_A} +"),
    # index_put
    # stores out of bounds for row -3: the VM run that tries to confirm it may crash, which
    # once left an unreadable output file (now written atomically and read defensively)
    "index_put: row wrap 3 -> 2": (IP, "legal", "< T.int64(0)) * T.int64(3)", "< T.int64(0)) * T.int64(2)"),
    "index_put: data copy reads the wrong column": (
        IP, "legal", "= p0[v // T.int64(4), v % T.int64(4)]", "= p0[v // T.int64(4), v // T.int64(4)]"),
    "index_put: values read reversed": (IP, "legal", "= p3[v]", "= p3[T.int64(1) - v]"),
    "index_put: accumulate adds -> subtracts": (IP_ACC, "legal", "] + p3[v]", "] - p3[v]"),
    # slice_scatter
    "slice_scatter: step 3 -> 2 in the mask": (SS_END, "legal", "% T.int64(3)", "% T.int64(2)"),
    "slice_scatter: select operands swapped": (SS_END, "legal", "]), T_take[v_ax0, v_ax1], p0[v_ax0, v_ax1])",
                                               "]), p0[v_ax0, v_ax1], T_take[v_ax0, v_ax1])"),
    "slice_scatter: start 2 -> 1": (SS_TAIL, "legal", "T.int64(2) <= T_arange", "T.int64(1) <= T_arange"),
}


@pytest.mark.parametrize("name", sorted(MUTATIONS))
def test_broken_legalization_is_refuted(name: str) -> None:
    mod, kind, old, new = MUTATIONS[name]
    text = legalized(mod) if kind == "legal" else fixed_index_tensor()
    assert old in text, f"mutation {name!r} does not apply:\n{text}"
    r = verdict(mod, text.replace(old, new, 1))
    assert r.verdict == "counterexample", r.to_dict()
