"""Conformance of the tensor-manipulation encoders (tvtv/encode/ops/manipulate.py) with numpy.

Every case is checked three ways:
  * IEEE model on concrete inputs full of special values (±0, ±inf, NaN, ±FLT_MAX, a denormal)
    against the numpy reference (`eval_op` + `arrays_match`; a local twin of them for ops whose
    arguments are Relax tuples, which `eval_op` cannot pass);
  * the abstract model (`AbstractModel(8)`), which must *force* the numpy result;
  * the same call built with TVM's BlockBuilder, read by `read_module` (attributes, argument
    tuples and the inferred `.ty` come from TVM 0.27) and encoded by the function encoder:
    the output must again equal numpy, which catches attribute misreadings.
Plus UB of `take` in mode "fast", unsupported attribute values, and broken expectations.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np
import pytest
import z3
from tvm import relax

import tvtv.encode.ops.manipulate  # noqa: F401  (registers the encoders)
from tvtv.absfp.abstract import AbstractModel
from tvtv.absfp.ieee import IEEEModel
from tvtv.absfp.interface import FloatModel
from tvtv.encode import registry
from tvtv.encode.context import EncodeContext
from tvtv.encode.evaluate import agrees, arg_value, arrays_match, encode_op, eval_op, tensor_values
from tvtv.encode.function import FunctionEncoder
from tvtv.encode.tensor import Tensor
from tvtv.encode.values import PrimScalar, flatten
from tvtv.errors import Unsupported
from tvtv.ir import program as P
from tvtv.ir.relax_reader import read_module
from tvtv.ir import tvm_bridge

O = relax.op
FLT_MAX = float(np.finfo(np.float32).max)
F32_SPECIALS = [0.0, -0.0, math.inf, -math.inf, math.nan, FLT_MAX, -FLT_MAX, 1e-45, 1.5, -2.25]


def data(shape: Sequence[int], dtype: str = "float32", seed: int = 0) -> np.ndarray:
    """A small array holding every special value of its dtype (when it is big enough)."""
    rng = np.random.default_rng(seed)
    n = math.prod(shape)
    if dtype == "bool":
        flat = rng.random(n) < 0.5
    elif dtype.startswith("int"):
        info = np.iinfo(dtype)
        flat = rng.integers(-50, 50, n).astype(dtype)
        flat[: min(n, 3)] = [info.min, info.max, 0][: min(n, 3)]
    else:
        specials = F32_SPECIALS if dtype == "float32" else \
            [0.0, -0.0, math.inf, -math.inf, math.nan, float(np.finfo(dtype).max), 6e-8]
        flat = np.round(rng.standard_normal(n) * 8, 2).astype(dtype)
        k = min(n, len(specials))
        flat[:k] = np.array(specials[:k], dtype=dtype)
    return rng.permutation(flat).reshape(shape)


# ------------------------------------------------------------------------------------------------
# cases: one op call with its numpy reference and the same call built with TVM
# ------------------------------------------------------------------------------------------------
@dataclass
class Case:
    id: str
    op: str
    tensors: list[np.ndarray]
    attrs: dict
    ref: Callable[..., Any]                      # numpy: tensors -> array or list of arrays
    tvm: Callable[..., Any]                      # relax vars -> relax call
    args: Callable[[list], list] = lambda ts: ts  # encoder argument layout (see `value`)
    summed: bool = False                         # float sums: the result is not fully determined
    abstract: bool = True                        # also check in the abstract model

    def expected(self) -> list[np.ndarray]:
        r = self.ref(*self.tensors)
        return [np.asarray(a) for a in r] if isinstance(r, (list, tuple)) else [np.asarray(r)]

    def out_ty(self) -> P.Type:
        dtype = dtype_of(self.tensors[0])
        tys = [P.TensorType(tuple(a.shape), dtype) for a in self.expected()]
        multi = isinstance(self.ref(*self.tensors), (list, tuple))
        return P.TupleType(tuple(tys)) if multi else tys[0]


def ints(*v: int) -> tuple:
    return ("ints", list(v))


def shape(*v: int) -> tuple:
    return ("shape", tuple(v))


def tup(*v: Any) -> tuple:
    return ("tuple", list(v))


def split_sections(x: np.ndarray, k: int, axis: int) -> list[np.ndarray]:
    """TVM's documented int split: chunks of ceil(n/k), the last ones smaller or empty."""
    n = x.shape[axis]
    size = -(-n // k)
    return np.split(x, [min(j * size, n) for j in range(1, k)], axis)


def pixel_shuffle_ref(x: np.ndarray, r: int) -> np.ndarray:
    n, c, h, w = x.shape
    return x.reshape(n, c // (r * r), r, r, h, w).transpose(0, 1, 4, 2, 5, 3).reshape(
        n, c // (r * r), h * r, w * r)


def collapse_ref(x: np.ndarray, target: Sequence[int]) -> np.ndarray:
    off = x.ndim - len(target)
    axes = tuple(k for k in range(x.ndim) if k < off or (target[k - off] == 1 and x.shape[k] != 1))
    if not axes:
        return x
    with np.errstate(invalid="ignore"):          # inf + -inf -> NaN is the point
        return np.sum(x, axis=axes, dtype=x.dtype).reshape(target)  # int32 wraps like TVM


X234 = data((2, 3, 4))
X23 = data((2, 3), seed=1)
I23 = data((2, 3), "int32", seed=2)
B23 = data((2, 3), "bool", seed=3)
X56 = data((5, 6), seed=4)

CASES = [
    # reshape and friends
    Case("reshape", "relax.reshape", [X234], {}, lambda x: x.reshape(6, 4),
         lambda x: O.reshape(x, (6, 4)), lambda ts: [ts[0], shape(6, 4)]),
    Case("reshape_infer", "relax.reshape", [X234], {}, lambda x: x.reshape(4, 6),
         lambda x: O.reshape(x, (4, -1)), lambda ts: [ts[0], shape(4, -1)]),
    Case("reshape_int", "relax.reshape", [I23], {}, lambda x: x.reshape(3, 2),
         lambda x: O.reshape(x, (3, 2)), lambda ts: [ts[0], shape(3, 2)]),
    Case("reshape_bool", "relax.reshape", [B23], {}, lambda x: x.reshape(6),
         lambda x: O.reshape(x, (6,)), lambda ts: [ts[0], shape(6)]),
    Case("flatten", "relax.flatten", [X234], {}, np.ravel, O.flatten),
    Case("batch_flatten", "relax.nn.batch_flatten", [X234], {}, lambda x: x.reshape(2, 12),
         O.nn.batch_flatten),
    Case("expand_dims", "relax.expand_dims", [X23], {"axis": [0, -1]},
         lambda x: np.expand_dims(x, (0, -1)), lambda x: O.expand_dims(x, [0, -1])),
    Case("expand_dims_unsorted", "relax.expand_dims", [I23], {"axis": [3, 0]},
         lambda x: np.expand_dims(x, (3, 0)), lambda x: O.expand_dims(x, [3, 0])),
    Case("squeeze_all", "relax.squeeze", [data((1, 3, 1, 2))], {"axis": None}, np.squeeze,
         O.squeeze),
    Case("squeeze_axes", "relax.squeeze", [data((1, 3, 1, 2), "bool")], {"axis": [0, -2]},
         lambda x: np.squeeze(x, (0, 2)), lambda x: O.squeeze(x, [0, -2])),
    Case("squeeze_none_listed", "relax.squeeze", [data((1, 3))], {"axis": []},
         lambda x: x, lambda x: O.squeeze(x, [])),
    # permutations
    Case("permute_reverse", "relax.permute_dims", [X234], {"axes": None}, np.transpose,
         O.permute_dims),
    Case("permute_102", "relax.permute_dims", [X234], {"axes": [1, 0, 2]},
         lambda x: np.transpose(x, (1, 0, 2)), lambda x: O.permute_dims(x, [1, 0, 2])),
    Case("permute_negative", "relax.permute_dims", [X234], {"axes": [-1, 0, 1]},
         lambda x: np.transpose(x, (2, 0, 1)), lambda x: O.permute_dims(x, [-1, 0, 1])),
    Case("permute_int", "relax.permute_dims", [I23], {"axes": None}, np.transpose, O.permute_dims),
    Case("flip_0", "relax.flip", [X234], {"axis": 0}, lambda x: np.flip(x, 0),
         lambda x: O.flip(x, 0)),
    Case("flip_last", "relax.flip", [X234], {"axis": -1}, lambda x: np.flip(x, -1),
         lambda x: O.flip(x, -1)),
    Case("flip_bool", "relax.flip", [B23], {"axis": 1}, lambda x: np.flip(x, 1),
         lambda x: O.flip(x, 1)),
    # joining
    Case("concat_1", "relax.concat", [X234, data((2, 1, 4), seed=5), data((2, 2, 4), seed=6)],
         {"axis": 1}, lambda *ts: np.concatenate(ts, 1), lambda *vs: O.concat(list(vs), 1),
         lambda ts: [tup(*ts)]),
    Case("concat_last_int", "relax.concat", [I23, data((2, 2), "int32", seed=7)], {"axis": -1},
         lambda *ts: np.concatenate(ts, -1), lambda *vs: O.concat(list(vs), -1),
         lambda ts: [tup(*ts)]),
    Case("concat_empty_piece", "relax.concat", [data((2, 0)), X23], {"axis": 1},
         lambda *ts: np.concatenate(ts, 1), lambda *vs: O.concat(list(vs), 1),
         lambda ts: [tup(*ts)]),
    Case("concat_none", "relax.concat", [data((4,)), data((3,), seed=8)], {"axis": None},
         lambda *ts: np.concatenate(ts, None), lambda *vs: O.concat(list(vs), None),
         lambda ts: [tup(*ts)]),
    Case("stack_0", "relax.stack", [X23, data((2, 3), seed=9)], {"axis": 0},
         lambda *ts: np.stack(ts, 0), lambda *vs: O.stack(list(vs), 0), lambda ts: [tup(*ts)]),
    Case("stack_mid3", "relax.stack", [X23, data((2, 3), seed=9), data((2, 3), seed=10)],
         {"axis": 1}, lambda *ts: np.stack(ts, 1), lambda *vs: O.stack(list(vs), 1),
         lambda ts: [tup(*ts)]),
    Case("stack_last_bool", "relax.stack", [B23, data((2, 3), "bool", seed=11)], {"axis": -1},
         lambda *ts: np.stack(ts, -1), lambda *vs: O.stack(list(vs), -1), lambda ts: [tup(*ts)]),
    # splitting
    Case("split_even", "relax.split", [data((4, 3))], {"indices_or_sections": 2, "axis": 0},
         lambda x: np.split(x, 2, 0), lambda x: O.split(x, 2, 0)),
    Case("split_uneven", "relax.split", [data((5, 2))], {"indices_or_sections": 3, "axis": 0},
         lambda x: split_sections(x, 3, 0), lambda x: O.split(x, 3, 0)),
    Case("split_uneven_empty", "relax.split", [data((6, 2))], {"indices_or_sections": 4, "axis": 0},
         lambda x: split_sections(x, 4, 0), lambda x: O.split(x, 4, 0)),
    Case("split_indices", "relax.split", [X234], {"indices_or_sections": [1, 3], "axis": 2},
         lambda x: np.split(x, [1, 3], 2), lambda x: O.split(x, [1, 3], 2)),
    Case("split_decreasing", "relax.split", [data((5, 2), "int32")],
         {"indices_or_sections": [3, 1], "axis": 0},
         lambda x: np.split(x, [3, 1], 0), lambda x: O.split(x, [3, 1], 0)),
    Case("split_past_end", "relax.split", [data((5, 2))], {"indices_or_sections": [2, 9], "axis": -2},
         lambda x: np.split(x, [2, 9], 0), lambda x: O.split(x, [2, 9], -2)),
    Case("split_one", "relax.split", [X23], {"indices_or_sections": 1, "axis": 1},
         lambda x: x, lambda x: O.split(x, 1, 1)),
    # strided_slice: axes/begin/end/strides are arguments in TVM 0.27
    Case("slice_neg_stride", "relax.strided_slice", [X56], {"assume_inbound": False},
         lambda x: x[1:4:2, -1:0:-1],
         lambda x: O.strided_slice(x, [0, 1], [1, -1], [4, 0], [2, -1]),
         lambda ts: [ts[0], ints(0, 1), ints(1, -1), ints(4, 0), ints(2, -1)]),
    Case("slice_clamped", "relax.strided_slice", [X56], {"assume_inbound": False},
         lambda x: x[:, -9:2**63 - 1:3],
         lambda x: O.strided_slice(x, [-1], [-9], [2**63 - 1], [3]),
         lambda ts: [ts[0], ints(-1), ints(-9), ints(2**63 - 1), ints(3)]),
    Case("slice_reverse_all", "relax.strided_slice", [X56], {"assume_inbound": False},
         lambda x: x[::-2],
         lambda x: O.strided_slice(x, [0], [-1], [-(2**63)], [-2]),
         lambda ts: [ts[0], ints(0), ints(-1), ints(-(2**63)), ints(-2)]),
    Case("slice_no_strides_int", "relax.strided_slice", [data((3, 4, 5), "int32")],
         {"assume_inbound": False}, lambda x: x[:, :, 1:3],
         lambda x: O.strided_slice(x, [2], [1], [3]),
         lambda ts: [ts[0], ints(2), ints(1), ints(3)]),
    Case("slice_inbound_ok", "relax.strided_slice", [X56], {"assume_inbound": True},
         lambda x: x[1:5, 1:6:2],
         lambda x: O.strided_slice(x, [0, 1], [1, 1], [5, 6], [1, 2], assume_inbound=True),
         lambda ts: [ts[0], ints(0, 1), ints(1, 1), ints(5, 6), ints(1, 2)]),
    # take
    Case("take_axis1", "relax.take", [X234, np.array([[2, 0], [1, 1]], "int32")],
         {"axis": 1, "mode": "fast"}, lambda x, i: np.take(x, i, 1),
         lambda x, i: O.take(x, i, 1)),
    Case("take_axis_none", "relax.take", [data((5,)), np.array([4, 0, 3], "int64")],
         {"axis": None, "mode": "fast"}, lambda x, i: np.take(x, i),
         lambda x, i: O.take(x, i)),
    Case("take_scalar_index", "relax.take", [X234, np.array(2, "int64")],
         {"axis": -1, "mode": "fast"}, lambda x, i: np.take(x, i, -1),
         lambda x, i: O.take(x, i, -1)),
    Case("take_u8_bool", "relax.take", [B23, np.array([2, 0, 1, 2], "uint8")],
         {"axis": 1, "mode": "fast"}, lambda x, i: np.take(x, i, 1),
         lambda x, i: O.take(x, i, 1)),
    Case("take_wrap", "relax.take", [X234, np.array([-1, 7, -8, 3], "int32")],
         {"axis": 2, "mode": "wrap"}, lambda x, i: np.take(x, i, 2, mode="wrap"),
         lambda x, i: O.take(x, i, 2, mode="wrap")),
    Case("take_wrap_odd_int64", "relax.take", [X23, np.array([-1, -4, 5, -7], "int64")],
         {"axis": 1, "mode": "wrap"}, lambda x, i: np.take(x, i, 1, mode="wrap"),
         lambda x, i: O.take(x, i, 1, mode="wrap")),
    Case("take_clip_int", "relax.take", [I23, np.array([-5, 9, 1], "int64")],
         {"axis": 1, "mode": "clip"}, lambda x, i: np.take(x, i, 1, mode="clip"),
         lambda x, i: O.take(x, i, 1, mode="clip")),
    Case("take_nan", "relax.take", [X23, np.array([-1, 3, 1], "int32")],
         {"axis": 1, "mode": "nan"},
         lambda x, i: np.where((i >= 0) & (i < 3), np.take(x, np.clip(i, 0, 2), 1), np.nan).astype("float32"),
         lambda x, i: O.take(x, i, 1, mode="nan")),
    # replication
    Case("broadcast_to", "relax.broadcast_to", [data((3, 1))], {},
         lambda x: np.broadcast_to(x, (2, 3, 4)), lambda x: O.broadcast_to(x, (2, 3, 4)),
         lambda ts: [ts[0], shape(2, 3, 4)]),
    Case("broadcast_scalar_int", "relax.broadcast_to", [np.array(-7, "int32")], {},
         lambda x: np.broadcast_to(x, (2, 3)), lambda x: O.broadcast_to(x, (2, 3)),
         lambda ts: [ts[0], shape(2, 3)]),
    Case("broadcast_same", "relax.broadcast_to", [X23], {},
         lambda x: x, lambda x: O.broadcast_to(x, (2, 3)), lambda ts: [ts[0], shape(2, 3)]),
    Case("tile_2d", "relax.tile", [X23], {"repeats": [2, 2]}, lambda x: np.tile(x, (2, 2)),
         lambda x: O.tile(x, [2, 2])),
    Case("tile_longer", "relax.tile", [X23], {"repeats": [2, 1, 3]},
         lambda x: np.tile(x, (2, 1, 3)), lambda x: O.tile(x, [2, 1, 3])),
    Case("tile_short_int", "relax.tile", [data((2, 1, 3), "int32")], {"repeats": [2]},
         lambda x: np.tile(x, 2), lambda x: O.tile(x, 2)),
    Case("repeat_flat", "relax.repeat", [X23], {"repeats": 2, "axis": None},
         lambda x: np.repeat(x, 2), lambda x: O.repeat(x, 2)),
    Case("repeat_last_bool", "relax.repeat", [B23], {"repeats": 3, "axis": -1},
         lambda x: np.repeat(x, 3, -1), lambda x: O.repeat(x, 3, -1)),
    Case("repeat_zero", "relax.repeat", [X23], {"repeats": 0, "axis": 0},
         lambda x: np.repeat(x, 0, 0), lambda x: O.repeat(x, 0, 0)),
    # padding
    Case("pad_constant", "relax.nn.pad", [X23],
         {"pad_width": [1, 0, 2, 1], "pad_mode": "constant", "pad_value": -1.5},
         lambda x: np.pad(x, [(1, 0), (2, 1)], constant_values=-1.5),
         lambda x: O.nn.pad(x, [1, 0, 2, 1], pad_value=-1.5)),
    Case("pad_constant_int", "relax.nn.pad", [I23],
         {"pad_width": [0, 2, 1, 1], "pad_mode": "constant", "pad_value": 7.0},
         lambda x: np.pad(x, [(0, 2), (1, 1)], constant_values=7),
         lambda x: O.nn.pad(x, [0, 2, 1, 1], pad_value=7.0)),
    Case("pad_constant_bool", "relax.nn.pad", [B23],
         {"pad_width": [1, 1, 0, 1], "pad_mode": "constant", "pad_value": 1.0},
         lambda x: np.pad(x, [(1, 1), (0, 1)], constant_values=True),
         lambda x: O.nn.pad(x, [1, 1, 0, 1], pad_value=1.0)),
    Case("pad_constant_f16_overflow", "relax.nn.pad", [data((2, 3), "float16")],
         {"pad_width": [0, 1, 1, 0], "pad_mode": "constant", "pad_value": 1e10},
         lambda x: np.pad(x, [(0, 1), (1, 0)], constant_values=np.float16(np.inf)),
         lambda x: O.nn.pad(x, [0, 1, 1, 0], pad_value=1e10)),
    Case("pad_reflect", "relax.nn.pad", [X234],
         {"pad_width": [0, 0, 2, 1, 3, 2], "pad_mode": "reflect", "pad_value": 0.0},
         lambda x: np.pad(x, [(0, 0), (2, 1), (3, 2)], "reflect"),
         lambda x: O.nn.pad(x, [0, 0, 2, 1, 3, 2], pad_mode="reflect")),
    Case("pad_reflect_wide", "relax.nn.pad", [data((3,))],
         {"pad_width": [4, 5], "pad_mode": "reflect", "pad_value": 0.0},
         lambda x: np.pad(x, [(4, 5)], "reflect"),
         lambda x: O.nn.pad(x, [4, 5], pad_mode="reflect")),
    Case("pad_replicate", "relax.nn.pad", [X23],
         {"pad_width": [2, 1, 1, 3], "pad_mode": "replicate", "pad_value": 0.0},
         lambda x: np.pad(x, [(2, 1), (1, 3)], "edge"),
         lambda x: O.nn.pad(x, [2, 1, 1, 3], pad_mode="replicate")),
    Case("pad_circular_int", "relax.nn.pad", [I23],
         {"pad_width": [1, 2, 4, 2], "pad_mode": "circular", "pad_value": 0.0},
         lambda x: np.pad(x, [(1, 2), (4, 2)], "wrap"),
         lambda x: O.nn.pad(x, [1, 2, 4, 2], pad_mode="circular")),
    Case("pixel_shuffle", "relax.nn.pixel_shuffle", [data((1, 8, 2, 3))], {"upscale_factor": 2},
         lambda x: pixel_shuffle_ref(x, 2), lambda x: O.nn.pixel_shuffle(x, 2)),
    # collapse_sum (float sums are uninterpreted beyond their special cases)
    Case("collapse_to", "relax.collapse_sum_to", [X234], {}, lambda x: collapse_ref(x, (3, 1)),
         lambda x: O.collapse_sum_to(x, (3, 1)), lambda ts: [ts[0], shape(3, 1)], summed=True),
    Case("collapse_to_int", "relax.collapse_sum_to", [data((2, 3, 4), "int32")], {},
         lambda x: collapse_ref(x, (1, 4)),
         lambda x: O.collapse_sum_to(x, (1, 4)), lambda ts: [ts[0], shape(1, 4)]),
    Case("collapse_to_same", "relax.collapse_sum_to", [data((1, 3))], {},
         lambda x: x, lambda x: O.collapse_sum_to(x, (1, 3)), lambda ts: [ts[0], shape(1, 3)]),
    Case("collapse_drop_one", "relax.collapse_sum_to", [data((1, 3))], {},
         lambda x: collapse_ref(x, (3,)), lambda x: O.collapse_sum_to(x, (3,)),
         lambda ts: [ts[0], shape(3)]),
    Case("collapse_like", "relax.collapse_sum_like", [X23, np.zeros(3, "int32")], {},
         lambda x, y: collapse_ref(x, (3,)), lambda x, y: O.collapse_sum_like(x, y), summed=True),
]
IDS = [c.id for c in CASES]
assert len(set(IDS)) == len(IDS)


# ------------------------------------------------------------------------------------------------
# harness
# ------------------------------------------------------------------------------------------------
def dtype_of(a: np.ndarray) -> str:
    return str(np.asarray(a).dtype)


def has_tuples(args: list) -> bool:
    return any(isinstance(a, tuple) and a and a[0] in ("tuple", "ints") for a in args)


def value(a: Any, ctx: EncodeContext) -> Any:
    """An encoder argument: arrays, ("shape", dims), ("tuple", [...]) or ("ints", [...])."""
    if isinstance(a, tuple) and a and a[0] == "tuple":
        return tuple(value(x, ctx) for x in a[1])
    if isinstance(a, tuple) and a and a[0] == "ints":
        return tuple(PrimScalar(ctx.dom("int64").const(v), "int64", v) for v in a[1])
    return arg_value(a, "int64" if isinstance(a, tuple) else dtype_of(a), ctx)


def encode_local(op: str, args: list, out_ty: P.Type, attrs: dict, model: FloatModel):
    """`encode_op` for arguments that are Relax tuples."""
    ctx = EncodeContext(model)
    model.on_ub = ctx.add_ub
    vals = [value(a, ctx) for a in args]
    call = P.OpCall(op, tuple(P.VarRef(f"a{k}") for k in range(len(args))), dict(attrs), out_ty)
    return registry.lookup(op)(ctx, call, vals), ctx


def solver_agrees(outs: list[Tensor], expected: list[np.ndarray], ctx: EncodeContext,
                  model: FloatModel, exact: bool) -> bool:
    """Like `evaluate.agrees` on already encoded outputs."""
    if len(outs) != len(expected):
        return False
    eqs = []
    for t, want in zip(outs, expected):
        if tuple(want.shape) != t.shape:
            return False
        dom = model.domain(t.dtype)
        eqs += [dom.same(t.at(k), dom.const(w)) for k, w in enumerate(want.reshape(-1).tolist())]
    s = z3.Solver()
    s.set("timeout", 120000)   # a budget against load, not the expected time (well under 1 s)
    s.add(*model.preconditions(), ctx.well_defined())
    if exact:
        s.add(z3.Not(z3.And(*eqs)))
        return s.check() == z3.unsat
    s.add(*eqs)
    return s.check() == z3.sat


def ieee_outputs(case: Case) -> list:
    args = case.args(case.tensors)
    if not has_tuples(args):
        dtypes = [("int64" if isinstance(a, tuple) else dtype_of(a)) for a in args]
        return eval_op(case.op, args, case.out_ty(), case.attrs, dtypes)
    v, _ = encode_local(case.op, args, case.out_ty(), case.attrs, IEEEModel())
    return [tensor_values(t) if any(x is None for x in tensor_values(t)) else
            np.array(tensor_values(t), dtype=t.dtype).reshape(t.shape) for t in flatten(v)]


def model_agrees(case: Case, expected: list[np.ndarray], model: FloatModel, exact: bool) -> bool:
    args = case.args(case.tensors)
    if not has_tuples(args):
        dtypes = [("int64" if isinstance(a, tuple) else dtype_of(a)) for a in args]
        return agrees(case.op, args, case.out_ty(), expected, case.attrs, model, exact, dtypes)
    v, ctx = encode_local(case.op, args, case.out_ty(), case.attrs, model)
    return solver_agrees(flatten(v), expected, ctx, model, exact)


def through_tvm(build: Callable[..., Any], tensors: list[np.ndarray], model: FloatModel):
    """Build the call with TVM, read it with tvtv's reader, encode it on constant inputs."""
    bb = relax.BlockBuilder()
    params = [relax.Var(f"a{k}", relax.TensorType(t.shape, dtype_of(t))) for k, t in enumerate(tensors)]
    with bb.function("main", params):
        out = bb.emit(build(*params))
        bb.emit_func_output(out)
    prog = read_module(bb.get())
    ctx = EncodeContext(model)
    model.on_ub = ctx.add_ub
    ins = [Tensor.from_numpy(t, dtype_of(t), ctx.dom(dtype_of(t))) for t in tensors]
    fn = prog.functions["main"]
    return flatten(FunctionEncoder(prog, ctx).call(fn, ins)), ctx, fn.body.bindings[0].value


# ------------------------------------------------------------------------------------------------
# conformance
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_ieee_matches_numpy(case: Case) -> None:
    expected = case.expected()
    if case.summed:
        # Float sums are uninterpreted beyond the special cases IEEE fixes (a NaN or ±inf
        # term): those outputs must be decided and equal numpy's; the others are None.
        # (Whether the rest is *admitted* is checked in the abstract model: Z3 cannot build
        # models of UFs over lambda arrays of FP values and times out on that in IEEE.)
        got = np.asarray(ieee_outputs(case)[0], dtype=object).reshape(-1)
        want = expected[0].reshape(-1)
        fixed = [(g, w) for g, w in zip(got, want) if g is not None]
        assert fixed, "the special-valued sums should be decided"
        assert all(arrays_match(np.float32(g), w) for g, w in fixed)
        for g, w in zip(got, want):
            if g is None:
                assert not np.isnan(w)   # every NaN-producing sum is decided
        return
    got = ieee_outputs(case)
    assert len(got) == len(expected)
    for g, w in zip(got, expected):
        assert arrays_match(g, w), f"{case.id}: got {g}, numpy {w}"


@pytest.mark.parametrize("case", [c for c in CASES if c.abstract], ids=[c.id for c in CASES if c.abstract])
def test_abstract_model_forces_numpy(case: Case) -> None:
    assert model_agrees(case, case.expected(), AbstractModel(8), exact=not case.summed)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_tvm_built_call_matches_numpy(case: Case) -> None:
    """Attributes, argument tuples and the result type as TVM 0.27 produces them."""
    # float sums: IEEE cannot decide "admitted" (see above), so those use the abstract model
    model = AbstractModel(8) if case.summed else IEEEModel()
    outs, ctx, call = through_tvm(case.tvm, case.tensors, model)
    assert isinstance(call, P.OpCall) and call.op == case.op
    expected = case.expected()
    assert [t.shape for t in outs] == [tuple(e.shape) for e in expected]  # TVM's .ty == numpy's
    assert solver_agrees(outs, expected, ctx, model, exact=not case.summed)


# ------------------------------------------------------------------------------------------------
# broken expectations must be rejected
# ------------------------------------------------------------------------------------------------
BROKEN = [
    ("permute_102", lambda x: np.transpose(x, (0, 2, 1)).reshape(3, 2, 4)),  # right shape, wrong order
    ("flip_last", lambda x: np.flip(x, 0)),
    ("concat_1", None),
    ("slice_neg_stride", lambda x: x[1:4:2, -1:0:-1][:, ::-1]),
    ("take_wrap", lambda x, i: np.take(x, i, 2, mode="clip")),
    ("pad_reflect", lambda x: np.pad(x, [(0, 0), (2, 1), (3, 2)], "symmetric")),
    ("tile_2d", lambda x: np.repeat(np.repeat(x, 2, 0), 2, 1)),
    ("pixel_shuffle", lambda x: x.reshape(1, 2, 4, 6)),
]


@pytest.mark.parametrize("cid,wrong", BROKEN, ids=[b[0] for b in BROKEN])
def test_wrong_expectation_is_rejected(cid: str, wrong: Any) -> None:
    case = next(c for c in CASES if c.id == cid)
    if wrong is None:   # concat in the wrong order
        expected = [np.concatenate(case.tensors[::-1], 1)]
    else:
        expected = [np.asarray(wrong(*case.tensors))]
    assert expected[0].shape == case.expected()[0].shape
    assert not arrays_match(expected[0], case.expected()[0])
    assert not arrays_match(ieee_outputs(case)[0], expected[0])
    assert not model_agrees(case, expected, AbstractModel(8), exact=False)


def test_signed_zero_and_nan_are_kept_apart() -> None:
    """A flip that swaps -0.0 and +0.0 is observable (refinement equality distinguishes them)."""
    x = np.array([-0.0, 0.0, np.nan], "float32")
    ty = P.TensorType((3,), "float32")
    got = eval_op("relax.flip", [x], ty, {"axis": 0})[0]
    assert arrays_match(got, np.array([np.nan, 0.0, -0.0], "float32"))
    assert not arrays_match(got, np.array([np.nan, -0.0, 0.0], "float32"))
    assert not agrees("relax.flip", [x], ty, [np.array([np.nan, -0.0, 0.0], "float32")],
                      {"axis": 0}, AbstractModel(8), exact=False)


# ------------------------------------------------------------------------------------------------
# take: undefined behaviour of mode "fast"
# ------------------------------------------------------------------------------------------------
TAKE_TY = P.TensorType((2, 2), "float32")


@pytest.mark.parametrize("indices,ub", [([0, 2], False), ([0, 3], True), ([-1, 1], True)])
def test_take_fast_out_of_range_is_ub(indices: list[int], ub: bool) -> None:
    x = data((2, 3))
    _, ctx = encode_op("relax.take", [x, np.array(indices, "int32")], TAKE_TY,
                       {"axis": 1, "mode": "fast"}, IEEEModel())
    s = z3.Solver()
    s.add(z3.Not(ctx.well_defined()))
    assert (s.check() == z3.sat) == ub
    # wrap and clip are defined on the same indices
    _, ctx = encode_op("relax.take", [x, np.array(indices, "int32")], TAKE_TY,
                       {"axis": 1, "mode": "clip"}, IEEEModel())
    s = z3.Solver()
    s.add(z3.Not(ctx.well_defined()))
    assert s.check() == z3.unsat


@pytest.mark.parametrize("dtype", ["int32", "int64", "uint8"])
def test_take_fast_symbolic_indices(dtype: str) -> None:
    """With unknown indices the solver finds an out-of-range one that makes the op UB, and
    well-definedness pins every index into [0, n)."""
    model = IEEEModel()
    ctx = EncodeContext(model)
    x = Tensor.from_numpy(data((2, 3)), "float32", ctx.dom("float32"))
    ind = Tensor.variable("ind", (2,), dtype, ctx.dom(dtype))
    call = P.OpCall("relax.take", (P.VarRef("x"), P.VarRef("i")), {"axis": 1, "mode": "fast"}, TAKE_TY)
    registry.lookup("relax.take")(ctx, call, [x, ind])
    s = z3.Solver()
    s.add(z3.Not(ctx.well_defined()))
    assert s.check() == z3.sat
    vals = [s.model().eval(ind.at(k), model_completion=True).as_signed_long() if dtype != "uint8"
            else s.model().eval(ind.at(k), model_completion=True).as_long() for k in range(2)]
    assert any(not 0 <= v < 3 for v in vals)
    for k in range(2):
        v = ind.at(k)
        out_of_range = z3.Or(v < 0, v >= 3) if dtype != "uint8" else z3.UGE(v, 3)
        s = z3.Solver()
        s.add(ctx.well_defined(), out_of_range)
        assert s.check() == z3.unsat


def test_take_ub_is_size_independent() -> None:
    """Many indices: the UB condition is one quantified formula, and still decides."""
    model = IEEEModel()
    ctx = EncodeContext(model)
    x = Tensor.variable("x", (8, 5), "float32", ctx.dom("float32"))
    ind = Tensor.variable("ind", (300,), "int32", ctx.dom("int32"))
    ty = P.TensorType((300, 5), "float32")
    call = P.OpCall("relax.take", (P.VarRef("x"), P.VarRef("i")), {"axis": 0, "mode": "fast"}, ty)
    registry.lookup("relax.take")(ctx, call, [x, ind])
    s = z3.Solver()
    s.set("timeout", 120000)   # a budget against load (each query takes under 1 s)
    s.add(z3.Not(ctx.well_defined()), ind.at(7) == 2)
    assert s.check() == z3.sat
    s = z3.Solver()
    s.set("timeout", 120000)   # a budget against load (each query takes under 1 s)
    s.add(ctx.well_defined(), ind.at(123) == 8)
    assert s.check() == z3.unsat


# ------------------------------------------------------------------------------------------------
# strided_slice with assume_inbound, and TVM's inference quirks
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("begin,end,stride,ty", [(1, 9, 1, (8,)), (-3, -1, 1, (2,)), (4, -1, -1, (5,))])
def test_slice_assume_inbound_violated_is_ub(begin: int, end: int, stride: int, ty: tuple) -> None:
    x = data((5,))
    v, ctx = encode_local("relax.strided_slice", [x, ints(0), ints(begin), ints(end), ints(stride)],
                          P.TensorType(ty, "float32"), {"assume_inbound": True}, IEEEModel())
    s = z3.Solver()
    s.add(ctx.well_defined())
    assert s.check() == z3.unsat


def test_slice_without_promise_is_clamped_and_defined() -> None:
    x = data((5,))
    v, ctx = encode_local("relax.strided_slice", [x, ints(0), ints(1), ints(9), ints(1)],
                          P.TensorType((4,), "float32"), {"assume_inbound": False}, IEEEModel())
    assert z3.is_true(z3.simplify(ctx.well_defined()))
    assert arrays_match(np.array(tensor_values(v), "float32"), x[1:9])


@pytest.mark.parametrize("begin,end,stride,inbound", [
    (-9, -5, -1, False),   # TVM 0.27 infers extent -1 for this empty slice (numpy: 0)
    (3, 1, 1, False),      # extent -2 (numpy: 0)
    (4, 0, -1, True),      # assume_inbound with a negative stride: TVM infers 5 (the whole
                           # axis) while its own VM returns 4 elements (numpy: 4)
])
def test_tvm_wrong_slice_shape_is_unsupported(begin: int, end: int, stride: int, inbound: bool) -> None:
    """Where TVM's inferred type disagrees with slicing, the encoder refuses rather than guess."""
    with pytest.raises(Unsupported, match="negative|inferred"):
        through_tvm(lambda x: O.strided_slice(x, [0], [begin], [end], [stride], assume_inbound=inbound),
                    [data((5,))], IEEEModel())


def test_tvm_negative_split_index_is_unsupported() -> None:
    """TVM 0.27 infers split(x5, [-2]) as sections of 0 and 5 elements; numpy's are 3 and 2."""
    with pytest.raises(Unsupported, match="split"):
        through_tvm(lambda x: O.split(x, [-2], 0), [data((5, 2))], IEEEModel())


def test_empty_tvm_slice_matches_numpy() -> None:
    outs, _, _ = through_tvm(lambda x: O.strided_slice(x, [0], [7], [9]), [data((5,))], IEEEModel())
    assert outs[0].shape == (0,)


@pytest.mark.parametrize("dtype,value,fill", [("int32", 1.5, 1), ("int32", -1.5, -1),
                                               ("int8", 2.7, 2), ("int32", -0.5, 0),
                                               ("bool", 0.5, False), ("bool", 1.5, True)])
def test_pad_value_is_truncated_into_an_integer_dtype_as_on_the_vm(dtype, value, fill) -> None:
    """TVM casts a non-integral pad_value into an int or bool tensor's dtype, truncating
    toward zero (measured here on the VM); the encoder pads with that, LegalizeOps is
    proved, and a twin padding with the next value is refuted."""
    import tvtv
    from tests.conftest import mutate
    from tests.test_ops_linalg import run_vm, typed_module
    x = np.array([3, 1, 0, 1]).astype(dtype)
    src = typed_module(lambda p: O.nn.pad(p, [1, 2], pad_value=value), ((4,), dtype))
    on_vm = run_vm(src, x).numpy()
    want = np.pad(x, [(1, 2)], constant_values=fill)
    assert on_vm.tolist() == want.tolist(), on_vm
    (got,) = eval_op("relax.nn.pad", [x], P.TensorType((7,), dtype),
                     {"pad_width": [1, 2], "pad_mode": "constant", "pad_value": value})
    assert np.asarray(got).tolist() == want.tolist()
    tgt = relax.transform.LegalizeOps()(src)
    (r,) = tvtv.verify(src, tgt, timeout=20).results
    assert r.verdict == "proved", r.to_dict()
    text = tvm_bridge.module_to_script(tgt)[0]
    def literal(v: Any) -> str:   # the fill as TVM prints it, closing the if_then_else
        if dtype == "bool":
            return f"T.bool({bool(v)}))"
        return f", {v})" if dtype == "int32" else f"T.{dtype}({v}))"
    old, new = literal(fill), literal((not fill) if dtype == "bool" else fill + 1)
    assert old in text, text
    (bad,) = tvtv.verify(src, mutate(tgt, old, new), timeout=20).results
    assert bad.verdict == "counterexample" and bad.confirmed, bad.to_dict()


# ------------------------------------------------------------------------------------------------
# unsupported attribute values are refused, never approximated
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("op,args,ty,attrs", [
    ("relax.nn.pad", [I23], P.TensorType((2, 5), "int32"),
     {"pad_width": [0, 0, 1, 1], "pad_mode": "constant", "pad_value": math.nan}),
    ("relax.nn.pad", [X23], P.TensorType((2, 3), "float32"),
     {"pad_width": [0, 0, -1, 1], "pad_mode": "constant", "pad_value": 0.0}),
    ("relax.nn.pad", [X23], P.TensorType((2, 5), "float32"),
     {"pad_width": [0, 0, 1, 1], "pad_mode": "symmetric", "pad_value": 0.0}),
    ("relax.take", [I23, np.array([0], "int32")], P.TensorType((2, 1), "int32"),
     {"axis": 1, "mode": "nan"}),
    ("relax.take", [X23, np.array([0], "int32")], P.TensorType((2, 1), "float32"),
     {"axis": 1, "mode": "raise"}),
    ("relax.permute_dims", [X23], P.TensorType((3, 3), "float32"), {"axes": [1, 0]}),  # wrong ty
])
def test_unsupported_is_raised(op: str, args: list, ty: P.Type, attrs: dict) -> None:
    with pytest.raises(Unsupported):
        encode_op(op, args, ty, attrs, IEEEModel(), [dtype_of(a) for a in args])


# ------------------------------------------------------------------------------------------------
# cost does not grow with the tensor size
# ------------------------------------------------------------------------------------------------
def test_index_maps_are_size_independent() -> None:
    model = IEEEModel()
    ctx = EncodeContext(model)
    big = Tensor.variable("big", (512, 1024), "float32", ctx.dom("float32"))
    ty = P.TensorType((1024, 512), "float32")
    start = time.perf_counter()
    out = registry.lookup("relax.permute_dims")(
        ctx, P.OpCall("relax.permute_dims", (P.VarRef("b"),), {"axes": None}, ty), [big])
    pad_ty = P.TensorType((1026, 515), "float32")
    padded = registry.lookup("relax.nn.pad")(
        ctx, P.OpCall("relax.nn.pad", (P.VarRef("o"),),
                      {"pad_width": [1, 1, 0, 3], "pad_mode": "reflect", "pad_value": 0.0}, pad_ty),
        [out])
    assert time.perf_counter() - start < 1.0
    assert len(padded.arr.sexpr()) < 3000
    # and it still means the transpose: element (3, 7) of the result is big[7, 3]
    s = z3.Solver()
    s.add(padded.at_multi([4, 7]) != big.at_multi([7, 3]))   # row 4 = row 3 of out (pad 1 before)
    assert s.check() == z3.unsat
