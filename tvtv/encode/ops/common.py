"""Helpers shared by op encoders."""
from __future__ import annotations

from typing import Any

from tvtv.encode.tensor import Tensor
from tvtv.encode.values import PrimScalar, Value, as_tensor
from tvtv.errors import Unsupported
from tvtv.ir.program import OpCall, TensorType


def out_type(call: OpCall) -> TensorType:
    """The op's inferred (static) result type."""
    if not isinstance(call.ty, TensorType):
        raise Unsupported(f"{call.op} with result type {call.ty}")
    return call.ty


def tensor_arg(args: list[Value], k: int, call: OpCall) -> Tensor:
    return as_tensor(args[k], f"argument {k} of {call.op}")


def concrete(v: Value, what: str) -> Any:
    """A literal scalar argument's Python value (e.g. clip's bounds)."""
    if isinstance(v, PrimScalar) and v.concrete is not None:
        return v.concrete
    raise Unsupported(f"{what} must be a literal")


def norm_axis(axis: int, ndim: int) -> int:
    return axis + ndim if axis < 0 else axis
