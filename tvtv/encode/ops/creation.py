"""Tensor creation and masking: zeros, ones, full (and their *_like), eye, arange, tril, triu,
one_hot.

Creation ops read no tensor values (except full's fill value and one_hot's indices), so their
encodings are `Lambda i. c` or `Lambda i. If(cond(i), a, b)` over index bit-vectors. Literal
arguments (tril's `k`, eye's `n, m, k`, arange's `start, end, step`) arrive as `PrimScalar`s
(Relax PrimValues, int64 or float64 in TVM 0.27); shapes as `Shape`s; full's fill value as a
0-d tensor (a constant or a variable). Every encoder checks the result type TVM inferred
against what the arguments say and raises `Unsupported` on a disagreement.

Measured on apache-tvm 0.27 (VM, LLVM) where it departs from numpy (findings):
- `full`/`full_like` of a float fill into `bool`: TVM gives False for 0.5 (numpy, and astype:
  True); an int fill other than 0/1 into bool, or a fill outside the dtype's range, makes
  LegalizeOps fail; a NaN or infinite fill makes LegalizeOps fail ("argument of type
  'PrimType' is not iterable").
- `eye_like(x, k, dtype)`: LegalizeOps ignores `dtype` and builds x's dtype (the legalized
  module's result type changes).
- `tril`/`triu` with |k| >= 2^31 (k is an int64 PrimValue): LegalizeOps fails ("Literal
  value 1099511627776 exceeds range of int32").
- `arange` of integers with a negative step: the inferred length is wrong (5 for
  arange(5, -3, -2), whose VM result has numpy's 4 elements).
- `one_hot`: an index outside [0, depth) (negative ones too) selects nothing (TF's rule; ONNX
  would count negative indices from the end).
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np
import z3

from tvtv import z3fast as zf
from tvtv.absfp.dtypes import INT_FORMATS, is_bool, is_float, numpy_dtype
from tvtv.encode.context import EncodeContext
from tvtv.encode.ops.common import index_value, out_type, tensor_arg
from tvtv.encode.registry import register
from tvtv.encode.tensor import INDEX_BITS, Tensor
from tvtv.encode.values import PrimScalar, Shape, Value
from tvtv.errors import Unsupported
from tvtv.ir.program import OpCall, TensorType

Index = z3.BitVecRef
# index arithmetic with a literal offset (tril's k, eye's k, one_hot's comparison) is done in
# this many signed bits: indices are < 2^30 and |k| is clamped below 2^32, so nothing wraps
WIDE = 66


# ------------------------------------------------------------------------------------------------
# helpers
# ------------------------------------------------------------------------------------------------
def _result(call: OpCall, shape: Sequence[int], dtype: str | None = None) -> TensorType:
    """TVM's inferred result type, after checking its shape (and dtype, when given) are what
    the arguments say."""
    ty = out_type(call)
    if tuple(ty.shape) != tuple(shape) or (dtype is not None and ty.dtype != dtype):
        raise Unsupported(f"{call.op}: TVM inferred {ty} but the arguments give "
                          f"Tensor({tuple(shape)}, {dtype or ty.dtype})")
    want = call.attrs.get("dtype")
    if want is not None and str(want) not in ("", "void") and str(want) != ty.dtype:
        raise Unsupported(f"{call.op}: dtype attribute {want} but result type {ty}")
    return ty


def _static_shape(v: Value, call: OpCall) -> tuple[int, ...]:
    if isinstance(v, Shape):
        return tuple(int(d) for d in v.dims)
    raise Unsupported(f"{call.op}: the shape must be a static shape, got {type(v).__name__}")


def _literal(v: Value, call: OpCall, what: str, ints_only: bool = True) -> int | float:
    """A literal PrimValue argument's Python value."""
    if isinstance(v, PrimScalar) and isinstance(v.concrete, (int, float)) \
            and not isinstance(v.concrete, bool):
        if ints_only and not isinstance(v.concrete, int):
            raise Unsupported(f"{call.op}: {what} {v.concrete!r} is not an integer")
        return v.concrete
    raise Unsupported(f"{call.op}: {what} must be a literal number")


def _wide(i: Index) -> z3.BitVecRef:
    return z3.ZeroExt(WIDE - INDEX_BITS, i)


def _diag_offset(ix: Sequence[Index]) -> z3.BitVecRef:
    """col - row of the last two indices, as a WIDE signed bit-vector."""
    return _wide(ix[-1]) - _wide(ix[-2])


def _clamped(k: int, rows: int, cols: int) -> int:
    """k clamped to [-rows, cols]: the same diagonal test on a rows x cols matrix."""
    return max(-rows, min(cols, k))


def _constant_tensor(ty: TensorType, value: z3.ExprRef) -> Tensor:
    return Tensor.from_flat(ty.shape, ty.dtype, lambda i: value)


def _fill_value(ctx: EncodeContext, call: OpCall, v: Value, dtype: str) -> z3.ExprRef:
    """The 0-d fill value converted to `dtype` as astype converts (the float model's `cast`:
    float -> int truncates and is UB on NaN/inf/out of range; to bool is `!= 0`)."""
    fill = tensor_arg([v], 0, call)
    if fill.shape != ():
        raise Unsupported(f"{call.op}: fill value of shape {fill.shape} (must be a scalar)")
    return ctx.model.cast(fill.at(0), fill.dtype, dtype)


# ------------------------------------------------------------------------------------------------
# zeros, ones, full
# ------------------------------------------------------------------------------------------------
@register("relax.zeros", "relax.ones")
def encode_zeros_ones(ctx: EncodeContext, call: OpCall, args: list) -> Tensor:
    """zeros/ones(shape, dtype) are np.zeros/np.ones: every element 0 (+0.0 for floats, False for bool) or 1 (True); the shape must be static.

    Measured: the legalized PrimFunc stores `T.float32(0.0)` / `T.float32(1.0)` (or the int
    literal); a shape with a 0 gives an empty tensor."""
    shape = _static_shape(args[0], call)
    ty = _result(call, shape)
    dom = ctx.dom(ty.dtype)
    return _constant_tensor(ty, dom.zero() if call.op == "relax.zeros" else dom.one())


@register("relax.zeros_like", "relax.ones_like")
def encode_zeros_ones_like(ctx: EncodeContext, call: OpCall, args: list) -> Tensor:
    """zeros_like/ones_like(x, dtype) are np.zeros_like/np.ones_like: x's shape, dtype (default x's) filled with 0 (+0.0, False) or 1 (True); x's values are unused."""
    x = tensor_arg(args, 0, call)
    ty = _result(call, x.shape)
    dom = ctx.dom(ty.dtype)
    return _constant_tensor(ty, dom.zero() if call.op == "relax.zeros_like" else dom.one())


@register("relax.full")
def encode_full(ctx: EncodeContext, call: OpCall, args: list) -> Tensor:
    """full(shape, fill, dtype) is np.full: every element is the 0-d fill converted to dtype (default fill's) as astype does (float->int truncates, NaN/inf/out of range UB; ->bool is != 0); static shapes only.

    The fill value may be any 0-d tensor (a constant or a variable). Measured on the TVM VM:
    1.7 and -1.7 into int32 give 1 and -1 (truncation, as numpy); -0.0 stays -0.0. TVM
    differs from numpy on a float fill into bool (0.5 -> False; astype and numpy give True),
    and LegalizeOps fails on a NaN or infinite fill, on an int fill other than 0/1 into bool
    and on a literal outside the dtype's range (70000 into float16, 300 into int8)."""
    shape = _static_shape(args[0], call)
    ty = _result(call, shape)
    return _constant_tensor(ty, _fill_value(ctx, call, args[1], ty.dtype))


@register("relax.full_like")
def encode_full_like(ctx: EncodeContext, call: OpCall, args: list) -> Tensor:
    """full_like(x, fill, dtype) is np.full_like: x's shape, dtype (default x's, not fill's), every element the 0-d fill converted as astype does; x's values are unused.

    Measured: full_like(int32 x, 2.5) gives 2 (truncation), full_like(int8 x, -0.0,
    "float16") gives -0.0 in float16; the same TVM departures as `full` for bool fills and
    non-finite fills."""
    x = tensor_arg(args, 0, call)
    ty = _result(call, x.shape)
    return _constant_tensor(ty, _fill_value(ctx, call, args[1], ty.dtype))


# ------------------------------------------------------------------------------------------------
# tril, triu
# ------------------------------------------------------------------------------------------------
@register("relax.tril", "relax.triu")
def encode_tril_triu(ctx: EncodeContext, call: OpCall, args: list) -> Tensor:
    """tril/triu(x, k) are np.tril/np.triu on the last two axes (rank >= 2): tril keeps x[..., i, j] where j - i <= k, triu where j - i >= k, the rest is 0 (+0.0, False); k must be a literal.

    Every dtype (float, int, bool); kept elements pass through unchanged (NaN, -0.0, inf),
    zeroed ones become +0.0 whatever they held (a NaN too), as numpy's `where(mask, x, 0)`.
    k beyond the matrix (any |k|) keeps all or nothing. Measured on the VM: the same for
    k in {-5, -1, 0, 1, 5}; TVM's LegalizeOps builds `Select(j <= i + k, x, 0)` (tril).
    TVM's type inference rejects a rank-1 input (numpy would broadcast it to a square), and
    its LegalizeOps rejects |k| >= 2^31 (it makes k an int32 literal)."""
    x = tensor_arg(args, 0, call)
    if x.ndim < 2:
        raise Unsupported(f"{call.op} of a rank-{x.ndim} tensor (needs rank >= 2)")
    k = _literal(args[1], call, "k") if len(args) > 1 else 0
    ty = _result(call, x.shape, x.dtype)
    rows, cols = x.shape[-2], x.shape[-1]
    kk = z3.BitVecVal(_clamped(int(k), rows, cols), WIDE)
    zero = ctx.dom(x.dtype).zero()
    lower = call.op == "relax.tril"

    def elem(ix: list[Index]) -> z3.ExprRef:
        d = _diag_offset(ix)
        keep = d <= kk if lower else d >= kk          # signed comparisons
        return zf.If(keep, x.at_multi(ix), zero)
    return Tensor.from_fn(ty.shape, ty.dtype, elem)


# ------------------------------------------------------------------------------------------------
# eye, eye_like
# ------------------------------------------------------------------------------------------------
def _eye(ctx: EncodeContext, ty: TensorType, k: int) -> Tensor:
    n, m = ty.shape
    kk = z3.BitVecVal(_clamped(k, n + 1, m + 1), WIDE)
    dom = ctx.dom(ty.dtype)
    one, zero = dom.one(), dom.zero()
    return Tensor.from_fn(ty.shape, ty.dtype,
                          lambda ix: zf.If(_diag_offset(ix) == kk, one, zero))


@register("relax.eye")
def encode_eye(ctx: EncodeContext, call: OpCall, args: list) -> Tensor:
    """eye(n, m, k, dtype) is np.eye(n, m, k): an n x m matrix with 1 (True) where col - row == k, else 0 (+0.0, False); n, m, k must be literals (m defaults to n, k to 0).

    Measured on the VM: eye(3, 4, 1, int32), eye(3, 2, -1), eye(3, 2, 7) (all zero) agree
    with numpy; LegalizeOps builds `if_then_else(i == j - k, 1, 0)`."""
    n = _literal(args[0], call, "n")
    m = _literal(args[1], call, "m") if len(args) > 1 else n
    k = _literal(args[2], call, "k") if len(args) > 2 else 0
    if n < 0 or m < 0:
        raise Unsupported(f"relax.eye of negative size {n} x {m}")
    ty = _result(call, (n, m))
    return _eye(ctx, ty, int(k))


@register("relax.eye_like")
def encode_eye_like(ctx: EncodeContext, call: OpCall, args: list) -> Tensor:
    """eye_like(x, k, dtype) is np.eye(*x.shape, k) for a 2-D x, in dtype (default x's): 1 (True) where col - row == k, else 0; x's values are unused; k must be a literal.

    Finding (TVM 0.27): LegalizeOps ignores `dtype` and builds a tensor of x's dtype, so a
    legalized eye_like with a dtype changes the module's result type."""
    x = tensor_arg(args, 0, call)
    if x.ndim != 2:
        raise Unsupported(f"relax.eye_like of a rank-{x.ndim} tensor (needs rank 2)")
    k = _literal(args[1], call, "k") if len(args) > 1 else 0
    ty = _result(call, x.shape)
    return _eye(ctx, ty, int(k))


# ------------------------------------------------------------------------------------------------
# one_hot
# ------------------------------------------------------------------------------------------------
def _index_value(v: z3.ExprRef, dtype: str) -> z3.BitVecRef:
    """An integer element as a WIDE signed bit-vector (exact for every integer dtype)."""
    return z3.SignExt(WIDE - 65, index_value(v, dtype, "relax.one_hot"))


@register("relax.one_hot")
def encode_one_hot(ctx: EncodeContext, call: OpCall, args: list) -> Tensor:
    """one_hot(indices, on, off, depth, axis) inserts a new axis of size depth at `axis` (-1: last): out[..., d, ...] = on if indices[...] == d else off; an index outside [0, depth), negative too, gives off everywhere; integer indices; dtype = on's.

    on and off are scalars (PrimValues) of the result dtype, which TVM infers from on_value.
    Out-of-range indices follow TensorFlow's one_hot (all off; ONNX would count negative
    indices from the end, PyTorch rejects them); measured on the VM: -1, 3 and 5 with
    depth 3 give rows of off_value, as does LegalizeOps' `Select(i64(ind) == d, on, off)`."""
    ind = tensor_arg(args, 0, call)
    on, off = tensor_arg(args, 1, call), tensor_arg(args, 2, call)
    if on.shape != () or off.shape != ():
        raise Unsupported("relax.one_hot with non-scalar on/off values")
    depth = call.attrs.get("depth")
    axis = call.attrs.get("axis", -1)
    if not isinstance(depth, int) or isinstance(depth, bool) or depth < 0:
        raise Unsupported(f"relax.one_hot with depth {depth!r}")
    rank = ind.ndim + 1
    if not isinstance(axis, int) or not -rank <= axis < rank:
        raise Unsupported(f"relax.one_hot with axis {axis!r} for rank-{ind.ndim} indices")
    a = axis + rank if axis < 0 else axis
    shape = list(ind.shape)
    shape.insert(a, depth)
    ty = _result(call, shape)
    if on.dtype != ty.dtype or off.dtype != ty.dtype:
        raise Unsupported(f"relax.one_hot with on/off of dtypes {on.dtype}/{off.dtype} and "
                          f"result {ty.dtype}")
    on_v, off_v = on.at(0), off.at(0)

    def elem(ix: list[Index]) -> z3.ExprRef:
        raw = _index_value(ind.at_multi(ix[:a] + ix[a + 1:]), ind.dtype)
        return zf.If(raw == _wide(ix[a]), on_v, off_v)
    return Tensor.from_fn(ty.shape, ty.dtype, elem)


# ------------------------------------------------------------------------------------------------
# arange
# ------------------------------------------------------------------------------------------------
@register("relax.arange")
def encode_arange(ctx: EncodeContext, call: OpCall, args: list) -> Tensor:
    """arange(start, end, step, dtype) is np.arange(start, end, step, dtype=dtype) for literal arguments (length ceil((end - start) / step)); float elements as numpy computes them; bool, step 0 and symbolic arguments are unsupported.

    numpy's float arange is not start + i*step rounded once: it rounds start and start + step
    to the dtype and fills element i >= 2 with start + i * delta (delta = their difference)
    in the dtype; that is the specification encoded. Integer elements are exact. TVM's
    LegalizeOps folds an arange of literals into a constant computed by np.arange itself;
    its type inference gives the length, checked to be numpy's. Finding (TVM 0.27): for
    integer arguments with a negative step TVM infers (end - start + step - 1) // step
    elements (arange(5, -3, -2): 5, arange(0, -5, -1): 7) while numpy and the VM give
    ceil((end - start) / step) (4, 5): such a call is rejected as unsupported."""
    if len(args) != 3:
        raise Unsupported(f"relax.arange with {len(args)} arguments")
    start, end, step = (_literal(v, call, what, ints_only=False)
                        for v, what in zip(args, ("start", "end", "step")))
    ty = out_type(call)
    if is_bool(ty.dtype) or not (is_float(ty.dtype) or ty.dtype in INT_FORMATS):
        raise Unsupported(f"relax.arange of dtype {ty.dtype}")
    if step == 0 or not all(math.isfinite(v) for v in (start, end, step)):
        raise Unsupported(f"relax.arange({start}, {end}, {step})")
    with np.errstate(all="ignore"):
        values = np.arange(start, end, step, dtype=numpy_dtype(ty.dtype))
    ty = _result(call, values.shape)
    return Tensor.from_numpy(values, ty.dtype, ctx.dom(ty.dtype))
