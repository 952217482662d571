"""Helpers shared by op encoders."""
from __future__ import annotations

from typing import Any, Callable

import z3

from tvtv import z3fast as zf
from tvtv.absfp.dtypes import INT_FORMATS
from tvtv.encode.context import EncodeContext
from tvtv.encode.tensor import Tensor, idx
from tvtv.encode.values import PrimScalar, Value, as_tensor
from tvtv.errors import Unsupported
from tvtv.ir.program import OpCall, TensorType


def out_type(call: OpCall) -> TensorType:
    """The op's inferred (static) result type."""
    if not isinstance(call.ty, TensorType):
        raise Unsupported(f"{call.op} with result type {call.ty}")
    return call.ty


def checked_result(call: OpCall, t: Tensor, ty: Any = None) -> Tensor:
    """`t`, after checking that it has TVM's inferred type `ty` (default: the call's)."""
    ty = ty if ty is not None else out_type(call)
    if not isinstance(ty, TensorType) or tuple(ty.shape) != t.shape or ty.dtype != t.dtype:
        raise Unsupported(f"{call.op}: encoded result {t.shape} {t.dtype} differs from TVM's "
                          f"inferred type {ty}")
    return t


def index_value(v: z3.ExprRef, dtype: str, op: str) -> z3.BitVecRef:
    """An element of `op`'s integer index tensor as a 65-bit signed bit-vector (exact for
    every integer dtype, so range checks cannot wrap)."""
    if dtype not in INT_FORMATS:
        raise Unsupported(f"{op} with indices of dtype {dtype}")
    bits, signed = INT_FORMATS[dtype]
    return z3.SignExt(65 - bits, v) if signed else z3.ZeroExt(65 - bits, v)


def tensor_arg(args: list[Value], k: int, call: OpCall) -> Tensor:
    return as_tensor(args[k], f"argument {k} of {call.op}")


def concrete(v: Value, what: str) -> Any:
    """A literal scalar argument's Python value (e.g. clip's bounds)."""
    if isinstance(v, PrimScalar) and v.concrete is not None:
        return v.concrete
    raise Unsupported(f"{what} must be a literal")


def norm_axis(axis: int, ndim: int) -> int:
    return axis + ndim if axis < 0 else axis


# Up to this many positions, "UB at some position" is a disjunction over them; above, an
# existential quantifier over a 32-bit position (size-independent).
UB_EXPAND = 256


def add_ub_for_some(ctx: EncodeContext, count: int, bad_at: Callable[[z3.BitVecRef], z3.BoolRef],
                    reason: str, name: str) -> None:
    """UB when `bad_at(k)` holds for some position k in [0, count) (`name` names the
    quantified k)."""
    if count <= 0:
        return
    if count <= UB_EXPAND:
        bad = zf.Or(*[bad_at(idx(k)) for k in range(count)])
    else:
        k = z3.BitVec(name, 32)
        bad = z3.Exists([k], zf.And(z3.ULT(k, idx(count)), bad_at(k)))
    ctx.add_ub(bad, reason)


def index_result_dtype(call: OpCall, dtype: Any, n: int) -> str:
    """`dtype` as the dtype of a result holding positions 0..n-1 (argsort's, topk's and
    multinomial's indices): Unsupported unless it is an integer type that holds n - 1."""
    if dtype not in INT_FORMATS:
        raise Unsupported(f"{call.op}: index result dtype {dtype!r} (integer dtypes only)")
    bits, signed = INT_FORMATS[dtype]
    if n - 1 >= 1 << (bits - 1 if signed else bits):
        raise Unsupported(f"{call.op}: {n} positions do not fit index result dtype {dtype}")
    return str(dtype)


def bool_attr(call: OpCall, name: str, default: bool = False) -> bool:
    """The bool attribute `name` of `call` (`default` when absent); Unsupported otherwise."""
    v = call.attrs.get(name, default)
    if not isinstance(v, bool):
        raise Unsupported(f"{call.op}: {name} {v!r}")
    return v
