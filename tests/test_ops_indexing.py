"""Conformance of the gather/scatter encoders (tvtv/encode/ops/indexing.py).

Every case is checked against a numpy reference four ways:
  * the IEEE model on concrete inputs full of special values (`eval_op` + `arrays_match`),
    with the result type TVM 0.27 infers (`tvm_call`);
  * the abstract model (`AbstractModel(8)`), which must *force* the numpy result;
  * the same call run on the TVM VM (LLVM) must give the numpy result too;
  * a wrong expectation (the broken twin) must be rejected.
Plus: out-of-range and negative indices are UB (and in-range ones are not), what the VM
does with them (no wrapping: the finding behind the UB), unsupported calls, and refinement
checks of LegalizeOps through real TVM with broken TIR twins that must be refuted.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np
import pytest
import z3
from tvm import relax
from tvm.script import ir as I
from tvm.script import relax as R

import tvtv
import tvtv.encode.ops.indexing  # noqa: F401  (registers the encoders)
from tvtv.absfp.abstract import AbstractModel
from tvtv.absfp.ieee import IEEEModel
from tvtv.encode import registry
from tvtv.encode.context import EncodeContext
from tvtv.encode.evaluate import agrees, arrays_match, encode_op, eval_op
from tvtv.encode.tensor import Tensor
from tvtv.errors import Unsupported
from tvtv.ir import program as P
from tvtv.ir import tvm_bridge
from tests.test_ops_linalg import run_tvm, tvm_call
from tests.test_ops_manipulate import data

O = relax.op


def indices(shape: Sequence[int], n: int, dtype: str, seed: int = 1, negative: bool = False) -> np.ndarray:
    """Random indices in [0, n) (or [-n, n) with `negative`), every value present when room."""
    rng = np.random.default_rng(seed)
    lo = -n if negative else 0
    flat = rng.integers(lo, n, int(np.prod(shape, dtype=np.int64)))
    k = min(flat.size, n - lo)
    flat[:k] = np.arange(lo, lo + k)
    return rng.permutation(flat).astype(dtype).reshape(shape)


def gather_nd_ref(x: np.ndarray, ind: np.ndarray, b: int = 0) -> np.ndarray:
    """ONNX GatherND with batch_dims b."""
    lead, m = ind.shape[:-1], ind.shape[-1]
    out = np.empty(tuple(lead) + x.shape[b + m:], x.dtype)
    for p in np.ndindex(*lead):
        out[p] = x[tuple(p[:b]) + tuple(int(v) for v in ind[p])]
    return out



def unique_indices(shape: Sequence[int], n: int, axis: int, dtype: str, seed: int = 1,
                   negative: bool = False) -> np.ndarray:
    """Indices distinct along `axis` (no duplicate writes), some negative with `negative`."""
    rng = np.random.default_rng(seed)
    a = axis % len(shape)
    moved = [s for d, s in enumerate(shape) if d != a] + [shape[a]]
    out = np.empty(moved, np.int64)
    for p in np.ndindex(*moved[:-1]):
        out[p] = rng.permutation(n)[:shape[a]]
    if negative:
        out = np.where(rng.random(out.shape) < 0.5, out - n, out)
    return np.moveaxis(out, -1, a).astype(dtype)


SCATTER_UFUNC = {"add": np.add, "mul": np.multiply, "min": np.minimum, "max": np.maximum}


def scatter_elements_ref(x: np.ndarray, i: np.ndarray, u: np.ndarray, axis: int,
                         reduction: str = "update") -> np.ndarray:
    """ONNX ScatterElements (negative indices wrap), writes in index order."""
    out = x.copy()
    a, n = axis % x.ndim, x.shape[axis % x.ndim]
    for p in np.ndindex(*i.shape):
        v = int(i[p])
        t = tuple(v + n if v < 0 and d == a else (v if d == a else c) for d, c in enumerate(p))
        if reduction == "update":
            out[t] = u[p]
        else:
            SCATTER_UFUNC[reduction].at(out, t, u[p])
    return out



def scatter_nd_ref(x: np.ndarray, i: np.ndarray, u: np.ndarray, reduction: str = "update") -> np.ndarray:
    """ONNX ScatterND, writes in tuple order."""
    out = x.copy()
    for p in np.ndindex(*i.shape[:-1]):
        t = tuple(int(v) for v in i[p])
        if reduction == "update":
            out[t] = u[p]
        else:
            SCATTER_UFUNC[reduction].at(out, t, u[p])
    return out


# ------------------------------------------------------------------------------------------------
# cases
# ------------------------------------------------------------------------------------------------
@dataclass
class Case:
    id: str
    op: str
    tensors: list[np.ndarray]
    attrs: dict
    ref: Callable[..., np.ndarray]               # numpy reference
    tvm: Callable[..., Any]                      # relax vars -> relax call
    wrong: Callable[..., np.ndarray] | None = None   # a broken twin of `ref` (same shape)
    on_tvm: bool = True                          # TVM accepts the call (gather_nd: int64 only)

    def expected(self) -> np.ndarray:
        return np.asarray(self.ref(*self.tensors))

    def ty(self) -> P.TensorType:
        if self.on_tvm:
            ty, attrs = tvm_call(self.tvm, *[(t.shape, str(t.dtype)) for t in self.tensors])
            assert attrs == self.attrs, (attrs, self.attrs)
            return ty
        e = self.expected()
        return P.TensorType(tuple(e.shape), str(e.dtype))

    def dtypes(self) -> list[str]:
        return [str(t.dtype) for t in self.tensors]


def ge(x: np.ndarray, i: np.ndarray, axis: int) -> np.ndarray:
    """np.take_along_axis, with indices that may be smaller than the data off the axis."""
    a = axis % x.ndim
    part = x[tuple(slice(None) if d == a else slice(0, i.shape[d]) for d in range(x.ndim))]
    return np.take_along_axis(part, i.astype(np.int64), a)


X34 = data((3, 4))
X234 = data((2, 3, 4), seed=2)
I34 = data((3, 4), "int32", seed=3)
I8_234 = data((2, 3, 4), "int8", seed=4)

CASES = [
    # gather_elements
    Case("ge_axis1_i32", "relax.gather_elements", [X34, indices((3, 2), 4, "int32")], {"axis": 1},
         lambda x, i: ge(x, i, 1), lambda x, i: O.gather_elements(x, i, 1),
         lambda x, i: ge(x, i[::-1], 1)),
    Case("ge_axis0_int_data_i64", "relax.gather_elements", [I34, indices((5, 4), 3, "int64")],
         {"axis": 0}, lambda x, i: ge(x, i, 0), lambda x, i: O.gather_elements(x, i, 0),
         lambda x, i: ge(x, 2 - i, 0)),
    Case("ge_last_axis_3d", "relax.gather_elements", [X234, indices((2, 3, 6), 4, "int64", 5)],
         {"axis": -1}, lambda x, i: ge(x, i, -1), lambda x, i: O.gather_elements(x, i, -1),
         lambda x, i: ge(x, i, -1).transpose(1, 0, 2).reshape(2, 3, 6)),
    Case("ge_smaller_indices", "relax.gather_elements", [X234, indices((1, 2, 2), 3, "int32", 6)],
         {"axis": 1}, lambda x, i: ge(x, i, 1), lambda x, i: O.gather_elements(x, i, 1),
         lambda x, i: ge(x, (i + 1) % 3, 1)),
    Case("ge_int8_data_int8_idx", "relax.gather_elements", [I8_234, indices((2, 2, 4), 3, "int8", 7)],
         {"axis": 1}, lambda x, i: ge(x, i, 1), lambda x, i: O.gather_elements(x, i, 1),
         lambda x, i: ge(x, i, 1)[:, ::-1]),
    # gather_nd
    Case("gnd_full_coords", "relax.gather_nd", [X34, indices((5, 2), 3, "int64", 8).clip(0, 2)],
         {"batch_dims": 0}, gather_nd_ref, lambda x, i: O.gather_nd(x, i),
         lambda x, i: gather_nd_ref(x, i[:, ::-1] % 3)),
    Case("gnd_rows", "relax.gather_nd", [X34, indices((2, 1), 3, "int64", 9)], {"batch_dims": 0},
         gather_nd_ref, lambda x, i: O.gather_nd(x, i),
         lambda x, i: gather_nd_ref(x, 2 - i)),
    Case("gnd_scalar_out", "relax.gather_nd", [X34, np.array([2, 3], "int64")], {"batch_dims": 0},
         gather_nd_ref, lambda x, i: O.gather_nd(x, i),
         lambda x, i: np.asarray(x[3 - 1, 2])),
    Case("gnd_batch1_int_data", "relax.gather_nd", [data((3, 4, 5), "int32", 10),
                                                    indices((3, 2, 1), 4, "int64", 11)],
         {"batch_dims": 1}, lambda x, i: gather_nd_ref(x, i, 1),
         lambda x, i: O.gather_nd(x, i, batch_dims=1),
         lambda x, i: gather_nd_ref(x, i[::-1], 1)),
    Case("gnd_batch1_full", "relax.gather_nd", [X234, np.array([[[2, 3], [0, 1]], [[1, 0], [2, 2]]], "int64")],
         {"batch_dims": 1}, lambda x, i: gather_nd_ref(x, i, 1),
         lambda x, i: O.gather_nd(x, i, batch_dims=1),
         lambda x, i: gather_nd_ref(x[::-1], i, 1)),
    Case("gnd_batch2", "relax.gather_nd", [X234, indices((2, 3, 2, 1), 4, "int64", 12)],
         {"batch_dims": 2}, lambda x, i: gather_nd_ref(x, i, 2),
         lambda x, i: O.gather_nd(x, i, batch_dims=2),
         lambda x, i: gather_nd_ref(x, 3 - i, 2)),
    # int32 indices: TVM's inference refuses them; the encoder reads them exactly
    Case("gnd_int32_idx", "relax.gather_nd", [X234, indices((4, 2), 2, "int32", 13)],
         {"batch_dims": 0}, gather_nd_ref, lambda x, i: O.gather_nd(x, i),
         lambda x, i: gather_nd_ref(x, 1 - i), on_tvm=False),
    # scatter_elements ("update": indices distinct along the axis; negative ones wrap)
    Case("se_axis1_neg_i64", "relax.scatter_elements",
         [X34, unique_indices((3, 2), 4, 1, "int64", 20, negative=True), data((3, 2), seed=21)],
         {"axis": 1, "reduction": "update"}, lambda x, i, u: scatter_elements_ref(x, i, u, 1),
         lambda x, i, u: O.scatter_elements(x, i, u, 1),
         lambda x, i, u: scatter_elements_ref(x, i, u[::-1], 1)),
    Case("se_axis0_int_i32", "relax.scatter_elements",
         [I34, unique_indices((2, 4), 3, 0, "int32", 22, negative=True), data((2, 4), "int32", 23)],
         {"axis": 0, "reduction": "update"}, lambda x, i, u: scatter_elements_ref(x, i, u, 0),
         lambda x, i, u: O.scatter_elements(x, i, u, 0),
         lambda x, i, u: scatter_elements_ref(x, -1 - i, u, 0)),
    Case("se_3d_last_axis", "relax.scatter_elements",
         [X234, unique_indices((2, 3, 3), 4, 2, "int64", 24), data((2, 3, 3), seed=25)],
         {"axis": -1, "reduction": "update"}, lambda x, i, u: scatter_elements_ref(x, i, u, -1),
         lambda x, i, u: O.scatter_elements(x, i, u, -1),
         lambda x, i, u: scatter_elements_ref(x, i, u, -1).transpose(1, 0, 2).reshape(2, 3, 4)),
    Case("se_smaller_leading", "relax.scatter_elements",
         [data((3, 8), seed=26), unique_indices((2, 1), 8, 1, "int64", 27), data((2, 1), seed=28)],
         {"axis": 1, "reduction": "update"}, lambda x, i, u: scatter_elements_ref(x, i, u, 1),
         lambda x, i, u: O.scatter_elements(x, i, u, 1),
         lambda x, i, u: scatter_elements_ref(x[::-1], i, u, 1)[::-1]),
    # integer reductions, duplicates included (order-free)
] + [
    Case(f"se_{red}_dups", "relax.scatter_elements",
         [I34, np.array([[1, 1, -3], [2, 2, 2], [0, 3, -1]], "int64"), data((3, 3), "int32", 29)],
         {"axis": 1, "reduction": red}, lambda x, i, u, red=red: scatter_elements_ref(x, i, u, 1, red),
         lambda x, i, u, red=red: O.scatter_elements(x, i, u, 1, red),
         lambda x, i, u, red=red: scatter_elements_ref(x, i, u[:, ::-1], 1, red) if red in ("add", "mul")
         else scatter_elements_ref(x, i, u, 1, "update"))
    for red in ("add", "mul", "min", "max")
] + [
    Case("se_add_int8_axis0", "relax.scatter_elements",
         [data((2, 3, 4), "int8", 30), np.array([[[0, 1, 0, -1]], [[0, 0, 1, 1]]], "int32").reshape(2, 1, 4),
          data((2, 1, 4), "int8", 31)],
         {"axis": 0, "reduction": "add"}, lambda x, i, u: scatter_elements_ref(x, i, u, 0, "add"),
         lambda x, i, u: O.scatter_elements(x, i, u, 0, "add"),
         lambda x, i, u: scatter_elements_ref(x, i, u, 0, "update")),
    # scatter_nd ("update": distinct index tuples)
    Case("snd_rows", "relax.scatter_nd", [X34, np.array([[2], [0]], "int64"), data((2, 4), seed=40)],
         {"reduction": "update"}, scatter_nd_ref, lambda x, i, u: O.scatter_nd(x, i, u),
         lambda x, i, u: scatter_nd_ref(x, i, u[::-1])),
    Case("snd_elements_i32", "relax.scatter_nd",
         [X34, np.array([[1, 3], [0, 0], [2, 1]], "int32"), np.array([np.nan, -0.0, np.inf], "float32")],
         {"reduction": "update"}, scatter_nd_ref, lambda x, i, u: O.scatter_nd(x, i, u),
         lambda x, i, u: scatter_nd_ref(x, i[:, ::-1] % 3, u)),
    Case("snd_3d_batched", "relax.scatter_nd",
         [X234, np.array([[[1, 2], [0, 0]], [[0, 2], [1, 0]]], "int64"), data((2, 2, 4), seed=41)],
         {"reduction": "update"}, scatter_nd_ref, lambda x, i, u: O.scatter_nd(x, i, u),
         lambda x, i, u: scatter_nd_ref(x, i, u[:, :, ::-1])),
    Case("snd_int_data_u8_idx", "relax.scatter_nd",
         [I34, np.array([[2, 3], [1, 0]], "uint8"), data((2,), "int32", 42)],
         {"reduction": "update"}, scatter_nd_ref, lambda x, i, u: O.scatter_nd(x, i, u),
         lambda x, i, u: scatter_nd_ref(x, i[::-1], u)),
] + [
    Case(f"snd_{red}_dups", "relax.scatter_nd",
         [I34, np.array([[1, 1], [1, 1], [0, 2], [1, 1]], "int64"), np.array([7, -3, 5, 2], "int32")],
         {"reduction": red}, lambda x, i, u, red=red: scatter_nd_ref(x, i, u, red),
         lambda x, i, u, red=red: O.scatter_nd(x, i, u, red),
         lambda x, i, u, red=red: scatter_nd_ref(x, i, u, "update"))
    for red in ("add", "mul", "min", "max")
] + [
    Case("snd_add_rows_int8", "relax.scatter_nd",
         [data((3, 4), "int8", 43), np.array([[2], [2], [0]], "int64"), data((3, 4), "int8", 44)],
         {"reduction": "add"}, lambda x, i, u: scatter_nd_ref(x, i, u, "add"),
         lambda x, i, u: O.scatter_nd(x, i, u, "add"),
         lambda x, i, u: scatter_nd_ref(x, i, u, "update")),
]
IDS = [c.id for c in CASES]
assert len(set(IDS)) == len(IDS)


# ------------------------------------------------------------------------------------------------
# conformance
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_ieee_matches_numpy(case: Case) -> None:
    ty = case.ty()
    want = case.expected()
    assert ty.shape == want.shape and ty.dtype == str(want.dtype)   # TVM's type == numpy's
    (got,) = eval_op(case.op, case.tensors, ty, case.attrs, case.dtypes())
    assert arrays_match(got, want), f"{case.id}: got {got}, numpy {want}"
    assert agrees(case.op, case.tensors, ty, [want], case.attrs, IEEEModel(), True, case.dtypes())


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_abstract_model_forces_numpy(case: Case) -> None:
    assert agrees(case.op, case.tensors, case.ty(), [case.expected()], case.attrs,
                  AbstractModel(8), True, case.dtypes())


@pytest.mark.parametrize("case", [c for c in CASES if c.on_tvm], ids=[c.id for c in CASES if c.on_tvm])
def test_tvm_vm_matches_numpy(case: Case) -> None:
    got = run_tvm(case.tvm, *case.tensors)
    assert arrays_match(got, case.expected()), f"{case.id}: VM {got}, numpy {case.expected()}"


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_wrong_expectation_is_rejected(case: Case) -> None:
    wrong = np.asarray(case.wrong(*case.tensors))
    assert wrong.shape == case.expected().shape
    assert not arrays_match(wrong, case.expected())
    for model in (IEEEModel(), AbstractModel(8)):
        assert not agrees(case.op, case.tensors, case.ty(), [wrong], case.attrs, model, False,
                          case.dtypes())


# ------------------------------------------------------------------------------------------------
# out-of-range and negative indices: UB (TVM does not wrap them)
# ------------------------------------------------------------------------------------------------
def is_ub(ctx: EncodeContext) -> bool:
    s = z3.Solver()
    s.add(z3.Not(ctx.well_defined()))
    return s.check() == z3.sat


GE_UB = [([[0, 3], [1, 2], [3, 0]], False), ([[0, 4], [1, 2], [3, 0]], True),
         ([[0, 1], [-1, 2], [3, 0]], True), ([[0, 1], [2, 2], [-4, 0]], True)]


@pytest.mark.parametrize("ind,ub,dtype", [(i, u, d) for i, u in GE_UB for d in ("int32", "int64")]
                         + [([[0, 1], [2, 2], [2**31, 0]], True, "int64")])
def test_gather_elements_out_of_range_is_ub(ind: list, ub: bool, dtype: str) -> None:
    _, ctx = encode_op("relax.gather_elements", [X34, np.array(ind, dtype)],
                       P.TensorType((3, 2), "float32"), {"axis": 1})
    assert is_ub(ctx) == ub


@pytest.mark.parametrize("ind,ub", [([[0, 3], [2, 0]], False), ([[3, 0], [2, 0]], True),
                                    ([[0, 4], [2, 0]], True), ([[0, 3], [-1, 0]], True),
                                    ([[0, -1], [2, 0]], True)])
def test_gather_nd_out_of_range_is_ub(ind: list, ub: bool) -> None:
    _, ctx = encode_op("relax.gather_nd", [X34, np.array(ind, "int64")],
                       P.TensorType((2,), "float32"), {"batch_dims": 0})
    assert is_ub(ctx) == ub


@pytest.mark.parametrize("op,attrs,xshape,ishape,bounds", [
    ("relax.gather_elements", {"axis": 1}, (3, 4), (3, 2), None),
    ("relax.gather_nd", {"batch_dims": 0}, (3, 4), (2, 2), (3, 4)),
    ("relax.gather_nd", {"batch_dims": 1}, (2, 3, 4), (2, 5, 1), (3,)),
])
def test_symbolic_indices_are_pinned_in_range(op: str, attrs: dict, xshape: tuple, ishape: tuple,
                                              bounds: tuple | None) -> None:
    """With unknown indices, some choice is UB, and well-definedness pins every index into
    its axis's range (negative ones included)."""
    model = IEEEModel()
    ctx = EncodeContext(model)
    x = Tensor.variable("x", xshape, "float32", ctx.dom("float32"))
    ind = Tensor.variable("ind", ishape, "int64", ctx.dom("int64"))
    ty, _ = tvm_call(lambda a, i: (O.gather_elements(a, i, **attrs) if "axis" in attrs
                                   else O.gather_nd(a, i, **attrs)), (xshape, "float32"), (ishape, "int64"))
    registry.lookup(op)(ctx, P.OpCall(op, (P.VarRef("x"), P.VarRef("i")), attrs, ty), [x, ind])
    s = z3.Solver()
    s.add(z3.Not(ctx.well_defined()))
    assert s.check() == z3.sat
    for k in range(int(np.prod(ishape))):
        n = xshape[1] if bounds is None else bounds[k % len(bounds)]
        v = ind.at(k)
        s = z3.Solver()
        s.add(ctx.well_defined(), z3.Or(v < 0, v >= n))
        assert s.check() == z3.unsat, k


def test_gather_elements_ub_is_size_independent() -> None:
    """Many indices: the UB condition is one quantified formula, and still decides."""
    model = IEEEModel()
    ctx = EncodeContext(model)
    x = Tensor.variable("x", (300, 5), "float32", ctx.dom("float32"))
    ind = Tensor.variable("ind", (300, 2), "int32", ctx.dom("int32"))
    ty = P.TensorType((300, 2), "float32")
    call = P.OpCall("relax.gather_elements", (P.VarRef("x"), P.VarRef("i")), {"axis": 1}, ty)
    registry.lookup("relax.gather_elements")(ctx, call, [x, ind])
    s = z3.Solver()
    s.set("timeout", 120000)   # a budget against load (each query takes well under 1 s)
    s.add(z3.Not(ctx.well_defined()), ind.at(7) == 2)
    assert s.check() == z3.sat
    s = z3.Solver()
    s.set("timeout", 120000)
    s.add(ctx.well_defined(), ind.at(423) == -1)
    assert s.check() == z3.unsat


def test_gather_nd_ub_is_size_independent() -> None:
    model = IEEEModel()
    ctx = EncodeContext(model)
    x = Tensor.variable("x", (4, 5), "float32", ctx.dom("float32"))
    ind = Tensor.variable("ind", (200, 2), "int64", ctx.dom("int64"))
    call = P.OpCall("relax.gather_nd", (P.VarRef("x"), P.VarRef("i")), {"batch_dims": 0},
                    P.TensorType((200,), "float32"))
    registry.lookup("relax.gather_nd")(ctx, call, [x, ind])
    s = z3.Solver()
    s.set("timeout", 120000)
    s.add(ctx.well_defined(), ind.at(301) == 4)       # coordinate 1 of tuple 150: 4 < 5, fine
    assert s.check() == z3.sat
    s = z3.Solver()
    s.set("timeout", 120000)
    s.add(ctx.well_defined(), ind.at(300) == 4)       # coordinate 0 of tuple 150: 4 >= 4
    assert s.check() == z3.unsat


def test_vm_does_not_wrap_negative_indices() -> None:
    """The measurement behind the UB: TVM reads data[r, -1] as the flat element before row r
    (the last of row r-1), and data[r, n] as the first of row r+1: raw offsets, no wrapping
    (ONNX would read data[r, n-1] for -1)."""
    x = np.arange(12, dtype="float32").reshape(3, 4)
    got = run_tvm(lambda a, i: O.gather_elements(a, i, 1), x, np.array([[1], [4], [-1]], "int64"))
    assert got.reshape(-1)[1] == x[2, 0]
    assert got.reshape(-1)[2] == x[1, 3] != x[2, 3]
    got = run_tvm(lambda a, i: O.gather_nd(a, i), x, np.array([[1, -1], [1, 4]], "int64"))
    assert list(got) == [x[0, 3], x[2, 0]]


SE_TY = P.TensorType((3, 4), "float32")
SE_U = np.array([[1.5, -2.0], [0.0, -0.0], [np.inf, np.nan]], "float32")
SE_UI = np.array([[1, -2], [0, 7], [5, 9]], "int32")


@pytest.mark.parametrize("ind,reduction,ub", [
    ([[0, 3], [1, 2], [3, 0]], "update", False),
    ([[-4, -1], [1, -2], [3, 0]], "update", False),     # negative indices wrap: defined
    ([[0, 4], [1, 2], [3, 0]], "update", True),         # 4 >= n
    ([[0, 1], [1, 2], [-5, 0]], "update", True),        # -5 < -n
    ([[0, 0], [1, 2], [3, 0]], "update", True),         # duplicate in row 0
    ([[0, -4], [1, 2], [3, 0]], "update", True),        # duplicate after wrapping (-4 = 0)
    ([[0, 0], [1, 2], [3, 0]], "int-add", False),       # duplicates are fine with a reduction
    ([[0, 4], [1, 2], [3, 0]], "int-add", True),
])
@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_scatter_elements_ub(ind: list, reduction: str, ub: bool, dtype: str) -> None:
    if reduction == "int-add":
        args = [I34, np.array(ind, dtype), SE_UI]
        ty, attrs = P.TensorType((3, 4), "int32"), {"axis": 1, "reduction": "add"}
    else:
        args, ty, attrs = [X34, np.array(ind, dtype), SE_U], SE_TY, {"axis": 1, "reduction": "update"}
    _, ctx = encode_op("relax.scatter_elements", args, ty, attrs)
    assert is_ub(ctx) == ub


def test_scatter_elements_symbolic_indices_are_pinned() -> None:
    """Well-definedness pins every index into [-n, n) and (with "update") makes the indices
    of a row distinct after wrapping."""
    ctx = EncodeContext(IEEEModel())
    x = Tensor.variable("x", (3, 4), "float32", ctx.dom("float32"))
    ind = Tensor.variable("ind", (3, 2), "int64", ctx.dom("int64"))
    u = Tensor.variable("u", (3, 2), "float32", ctx.dom("float32"))
    call = P.OpCall("relax.scatter_elements", (P.VarRef("x"), P.VarRef("i"), P.VarRef("u")),
                    {"axis": 1, "reduction": "update"}, SE_TY)
    registry.lookup("relax.scatter_elements")(ctx, call, [x, ind, u])
    for k in range(6):
        s = z3.Solver()
        s.add(ctx.well_defined(), z3.Or(ind.at(k) < -4, ind.at(k) >= 4))
        assert s.check() == z3.unsat
    s = z3.Solver()
    s.add(ctx.well_defined(), ind.at(2) == 1, ind.at(3) == -3)     # row 1 writes column 1 twice
    assert s.check() == z3.unsat
    s = z3.Solver()
    s.add(ctx.well_defined(), ind.at(2) == 1, ind.at(3) == -2)
    assert s.check() == z3.sat


def test_scatter_elements_duplicate_ub_is_size_independent() -> None:
    """Many index pairs: the duplicate condition is one quantified formula, and decides."""
    ctx = EncodeContext(IEEEModel())
    x = Tensor.variable("x", (2, 40), "float32", ctx.dom("float32"))
    ind = Tensor.variable("ind", (2, 30), "int32", ctx.dom("int32"))
    u = Tensor.variable("u", (2, 30), "float32", ctx.dom("float32"))
    call = P.OpCall("relax.scatter_elements", (P.VarRef("x"), P.VarRef("i"), P.VarRef("u")),
                    {"axis": 1, "reduction": "update"}, P.TensorType((2, 40), "float32"))
    registry.lookup("relax.scatter_elements")(ctx, call, [x, ind, u])
    # concrete indices (every row a permutation of distinct columns): with only a few
    # indices fixed and the rest free, the quantified query was decided alone but came back
    # `unknown` once in the full suite (Z3's state differs there)
    rows = np.array([np.arange(30), (np.arange(30) + 7) % 40], np.int64)

    def decide(values: np.ndarray, defined: bool) -> z3.CheckSatResult:
        s = z3.Solver()
        s.set("timeout", 120000)   # a budget against load (each query takes well under 1 s)
        s.add(ctx.well_defined() if defined else z3.Not(ctx.well_defined()),
              *[ind.at(k) == int(v) for k, v in enumerate(values.reshape(-1))])
        return s.check()

    assert decide(rows, True) == z3.sat              # distinct per row: defined
    dup = rows.copy()
    dup[1, 28] = dup[1, 1] - 40                      # -32 wraps to 8, row 1 column 1: twice
    assert decide(dup, True) == z3.unsat
    assert decide(dup, False) == z3.sat
    across = rows.copy()
    across[1, 0] = across[0, 0]                      # the same column in different rows: fine
    assert decide(across, True) == z3.sat


def test_vm_scatter_elements_measurements() -> None:
    """What TVM 0.27's VM does where the specification is silent or refused here:
    duplicates with "update" keep the last write along the axis; "mean" is a running
    pairwise mean ((d + u1) / 2 + u2) / 2; float "add" sums serially."""
    x = np.arange(12, dtype="float32").reshape(3, 4)
    i = np.array([[1, 1], [2, 2], [0, 3]], "int64")
    u = np.array([[100, 200], [300, 400], [500, 600]], "float32")
    got = run_tvm(lambda a, b, c: O.scatter_elements(a, b, c, 1), x, i, u)
    assert got[0, 1] == 200 and got[1, 2] == 400
    got = run_tvm(lambda a, b, c: O.scatter_elements(a, b, c, 1, "mean"), x, i, u)
    assert got[0, 1] == ((1 + 100) / 2 + 200) / 2 and got[2, 0] == (8 + 500) / 2
    got = run_tvm(lambda a, b, c: O.scatter_elements(a, b, c, 1, "add"), x, i, u)
    assert got[0, 1] == 301


def test_vm_scatter_elements_smaller_trailing_indices_finding() -> None:
    """Finding: with indices smaller than data in a dimension after the axis, TVM's
    legalization (topi.scatter_elements) reuses the indices' flat trailing offset as data's
    and writes the wrong elements; the encoding follows ONNX (and numpy's reference)."""
    x = np.arange(24, dtype="float32").reshape(2, 3, 4)
    i = np.array([[[1, 0], [0, 1]]], "int64")
    u = np.array([[[100, 200], [300, 400]]], "float32")
    want = scatter_elements_ref(x, i, u, 0)
    assert want[0, 1, 0] == 300 and want[1, 1, 1] == 400
    (got,) = eval_op("relax.scatter_elements", [x, i, u], P.TensorType((2, 3, 4), "float32"),
                     {"axis": 0, "reduction": "update"})
    assert arrays_match(got, want)
    vm = run_tvm(lambda a, b, c: O.scatter_elements(a, b, c, 0), x, i, u)
    assert vm[0, 0, 2] == 300 and vm[1, 0, 3] == 400 and not arrays_match(vm, want)


@pytest.mark.parametrize("ind,reduction,ub", [
    ([[0, 3], [2, 0], [1, 1]], "update", False),
    ([[0, 4], [2, 0], [1, 1]], "update", True),         # 4 >= 4
    ([[3, 0], [2, 0], [1, 1]], "update", True),         # 3 >= 3
    ([[0, 3], [2, -1], [1, 1]], "update", True),        # negative: no wrapping
    ([[0, 3], [1, 1], [1, 1]], "update", True),         # duplicate tuple
    ([[0, 3], [1, 3], [0, 1]], "update", False),        # equal in one coordinate only
    ([[0, 3], [1, 1], [1, 1]], "int-add", False),       # duplicates are fine with a reduction
    ([[0, 3], [1, 1], [-1, 1]], "int-add", True),
])
def test_scatter_nd_ub(ind: list, reduction: str, ub: bool) -> None:
    if reduction == "int-add":
        args = [I34, np.array(ind, "int64"), np.array([1, 2, 3], "int32")]
        ty, attrs = P.TensorType((3, 4), "int32"), {"reduction": "add"}
    else:
        args, ty, attrs = [X34, np.array(ind, "int64"), np.array([1, 2, 3], "float32")], SE_TY, {"reduction": "update"}
    _, ctx = encode_op("relax.scatter_nd", args, ty, attrs)
    assert is_ub(ctx) == ub


def test_scatter_nd_symbolic_indices_are_pinned() -> None:
    """Well-definedness pins every coordinate into its range and makes the tuples distinct
    (24 tuples: 276 pairs, so the duplicate condition is quantified)."""
    ctx = EncodeContext(IEEEModel())
    x = Tensor.variable("x", (8, 8), "float32", ctx.dom("float32"))
    ind = Tensor.variable("ind", (24, 2), "int64", ctx.dom("int64"))
    u = Tensor.variable("u", (24,), "float32", ctx.dom("float32"))
    call = P.OpCall("relax.scatter_nd", (P.VarRef("x"), P.VarRef("i"), P.VarRef("u")),
                    {"reduction": "update"}, P.TensorType((8, 8), "float32"))
    registry.lookup("relax.scatter_nd")(ctx, call, [x, ind, u])
    for k, bad in [(6, 8), (7, 8), (6, -1)]:
        s = z3.Solver()
        s.set("timeout", 60000)   # a budget against load (each query takes well under 1 s)
        s.add(ctx.well_defined(), ind.at(k) == bad)
        assert s.check() == z3.unsat
    s = z3.Solver()
    s.set("timeout", 60000)
    s.add(ctx.well_defined(), ind.at(0) == ind.at(40), ind.at(1) == ind.at(41))   # tuples 0, 20
    assert s.check() == z3.unsat
    s = z3.Solver()
    s.set("timeout", 60000)
    s.add(z3.Not(ctx.well_defined()), *[ind.at(k) == v for k, v in enumerate([1, 2] * 2)])
    assert s.check() == z3.sat
    s = z3.Solver()
    s.set("timeout", 60000)
    s.add(ctx.well_defined(), *[ind.at(k) == (t // 3 if k % 2 == 0 else 7 - t % 3)
                                for t in range(24) for k in (2 * t, 2 * t + 1)])
    assert s.check() == z3.sat


def test_vm_scatter_nd_measurements() -> None:
    """TVM 0.27's VM: index (1, -1) writes the raw flat offset 4 - 1 = out[0, 3] (no
    wrapping); duplicate tuples with "update" keep the last, "add" sums them."""
    x = np.arange(12, dtype="float32").reshape(3, 4)
    got = run_tvm(lambda a, b, c: O.scatter_nd(a, b, c), x, np.array([[1, -1], [2, 0]], "int64"),
                  np.array([100, 200], "float32"))
    assert got[0, 3] == 100 and got[1, 3] == 7
    i = np.array([[1, 1], [1, 1], [0, 2]], "int64")
    u = np.array([100, 200, 300], "float32")
    assert run_tvm(lambda a, b, c: O.scatter_nd(a, b, c), x, i, u)[1, 1] == 200
    assert run_tvm(lambda a, b, c: O.scatter_nd(a, b, c, "add"), x, i, u)[1, 1] == 305


# ------------------------------------------------------------------------------------------------
# unsupported calls are refused
# ------------------------------------------------------------------------------------------------
def test_gather_elements_indices_larger_than_data_are_unsupported() -> None:
    """TVM infers (4, 4) for data (3, 4), indices (4, 4), axis 1 and its VM reads past the data."""
    ty, _ = tvm_call(lambda a, i: O.gather_elements(a, i, 1), ((3, 4), "float32"), ((4, 4), "int64"))
    assert ty.shape == (4, 4)
    with pytest.raises(Unsupported, match="gather_elements.*exceed"):
        encode_op("relax.gather_elements", [X34, np.zeros((4, 4), "int64")], ty, {"axis": 1})


@pytest.mark.parametrize("op,args,ty,attrs,match", [
    ("relax.gather_elements", [X34, np.zeros((3,), "int64")], P.TensorType((3,), "float32"),
     {"axis": 0}, "rank"),
    ("relax.gather_elements", [X34, np.zeros((3, 2), "float32")], P.TensorType((3, 2), "float32"),
     {"axis": 1}, "dtype float32"),
    ("relax.gather_elements", [X34, np.zeros((3, 2), "int64")], P.TensorType((3, 2), "float32"),
     {"axis": 2}, "axis 2"),
    ("relax.gather_nd", [X34, np.zeros((2, 3), "int64")], P.TensorType((2,), "float32"),
     {"batch_dims": 0}, "coordinates"),
    ("relax.gather_nd", [X234, np.zeros((3, 1), "int64")], P.TensorType((3, 4), "float32"),
     {"batch_dims": 1}, "batch dims"),
    ("relax.gather_nd", [X34, np.zeros((2, 2), "int64")], P.TensorType((2, 1), "float32"),
     {"batch_dims": 0}, "inferred"),
    ("relax.scatter_elements", [X34, np.zeros((3, 2), "int64"), SE_U], SE_TY,
     {"axis": 1, "reduction": "add"}, "reduction 'add' on float32"),
    ("relax.scatter_elements", [I34, np.zeros((3, 2), "int64"), SE_UI],
     P.TensorType((3, 4), "int32"), {"axis": 1, "reduction": "mean"}, "reduction 'mean'"),
    ("relax.scatter_elements", [X34, np.zeros((4, 2), "int64"), np.zeros((4, 2), "float32")], SE_TY,
     {"axis": 1, "reduction": "update"}, "exceed"),
    ("relax.scatter_elements", [X34, np.zeros((3, 2), "int64"), np.zeros((3, 1), "float32")], SE_TY,
     {"axis": 1, "reduction": "update"}, "updates"),
    ("relax.scatter_elements", [X34, np.zeros((3, 2), "float32"), SE_U], SE_TY,
     {"axis": 1, "reduction": "update"}, "dtype float32"),
    ("relax.scatter_nd", [X34, np.zeros((2, 1), "int64"), np.zeros((2, 4), "float32")], SE_TY,
     {"reduction": "add"}, "reduction 'add' on float32"),
    ("relax.scatter_nd", [I34, np.zeros((2, 1), "int64"), np.zeros((2, 4), "int32")],
     P.TensorType((3, 4), "int32"), {"reduction": "mean"}, "reduction 'mean'"),
    ("relax.scatter_nd", [X34, np.zeros((2, 0), "int64"), np.zeros((2, 3, 4), "float32")], SE_TY,
     {"reduction": "update"}, "indices of shape"),
    ("relax.scatter_nd", [X34, np.zeros((2, 1), "int64"), np.zeros((2, 3), "float32")], SE_TY,
     {"reduction": "update"}, "updates"),
])
def test_unsupported_calls_are_refused(op: str, args: list, ty: P.TensorType, attrs: dict, match: str) -> None:
    with pytest.raises(Unsupported, match=match):
        encode_op(op, args, ty, attrs)


# ------------------------------------------------------------------------------------------------
# refinement through real TVM: LegalizeOps is proved, broken TIR twins are refuted
# ------------------------------------------------------------------------------------------------
@I.ir_module
class GatherElements:
    @R.function
    def main(x: R.Tensor((3, 4), "float32"), i: R.Tensor((3, 2), "int64")) -> R.Tensor((3, 2), "float32"):
        z = R.gather_elements(x, i, axis=1)
        return z


@I.ir_module
class GatherElements0:
    @R.function
    def main(x: R.Tensor((3, 4), "int32"), i: R.Tensor((2, 4), "int32")) -> R.Tensor((2, 4), "int32"):
        z = R.gather_elements(x, i, axis=0)
        return z


@I.ir_module
class GatherND:
    @R.function
    def main(x: R.Tensor((3, 4), "float32"), i: R.Tensor((2, 2), "int64")) -> R.Tensor((2,), "float32"):
        z = R.gather_nd(x, i)
        return z


@I.ir_module
class GatherNDBatch:
    @R.function
    def main(x: R.Tensor((3, 4, 2), "float32"), i: R.Tensor((3, 2, 1), "int64")) -> R.Tensor((3, 2, 2), "float32"):
        z = R.gather_nd(x, i, batch_dims=1)
        return z


REFINES = {"gather_elements": GatherElements, "gather_elements_axis0_int": GatherElements0,
           "gather_nd": GatherND, "gather_nd_batch": GatherNDBatch}


@pytest.mark.parametrize("name", sorted(REFINES))
def test_legalize_is_proved(name: str) -> None:
    mod = REFINES[name]
    (r,) = tvtv.verify(mod, relax.transform.LegalizeOps()(mod), timeout=20).results
    assert r.verdict == "proved", r.to_dict()


MUTATIONS = {
    "gather_elements: index row changed": (
        GatherElements, "x[v_ax0, i[v_ax0, v_ax1]]", "x[v_ax0, i[v_ax1, v_ax1]]"),
    "gather_elements: column changed": (
        GatherElements0, "x[i[v_ax0, v_ax1], v_ax1]", "x[i[v_ax0, v_ax1], v_ax0]"),
    "gather_nd: coordinates swapped": (
        GatherND, "x[T_transpose[T.int64(0), v_ax0], T_transpose[T.int64(1), v_ax0]]",
        "x[T_transpose[T.int64(0), v_ax0], T_transpose[T.int64(0), v_ax0]]"),
    "gather_nd: batch index dropped": (
        GatherNDBatch, "x[v_ax0, T_transpose[T.int64(0), v_ax0, v_ax1], v_ax2]",
        "x[T.int64(0), T_transpose[T.int64(0), v_ax0, v_ax1], v_ax2]"),
}


@pytest.mark.parametrize("name", sorted(MUTATIONS))
def test_broken_legalization_is_refuted(name: str) -> None:
    mod, old, new = MUTATIONS[name]
    source = relax.transform.LegalizeOps()(mod)
    text = source.script()
    assert old in text, f"mutation {name!r} does not apply:\n{text}"
    broken = tvm_bridge.parse_script(text.replace(old, new))
    (r,) = tvtv.verify(mod, broken, timeout=20).results
    assert r.verdict == "counterexample", r.to_dict()


# LegalizeOps of the scatters (IR-builder TIR storing at data-dependent indices) is proved,
# and its broken twins refuted, in tests/test_tir_scatter.py.
