"""Runtime values of the encoder: tensors, tuples, scalars, shapes and closures."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Union

import z3

from tvtv.encode.tensor import Tensor
from tvtv.errors import Unsupported


@dataclass(frozen=True)
class PrimScalar:
    """A raw scalar argument (a TIR PrimExpr in Relax, e.g. clip's bounds).

    `concrete` is its Python value when it is a literal (attributes often must be)."""

    term: z3.ExprRef
    dtype: str
    concrete: Any = None


@dataclass(frozen=True)
class Shape:
    dims: tuple[int, ...]


@dataclass(frozen=True)
class Closure:
    function: Any   # tvtv.ir.program.Function
    env: dict


Value = Union[Tensor, tuple, PrimScalar, Shape, Closure]


def as_tensor(v: Value, what: str = "argument") -> Tensor:
    if isinstance(v, Tensor):
        return v
    if isinstance(v, PrimScalar):
        return Tensor.scalar(v.term, v.dtype)
    raise Unsupported(f"{what} is a {type(v).__name__}, expected a tensor")


def structure(v: Value) -> Any:
    """The nesting of a value with its tensors erased: "tensor" for a tensor or scalar, a
    tuple of structures for a tuple. Two outputs with equal `flatten` lists may still differ
    here (a 1-tuple of a tensor against the tensor)."""
    if isinstance(v, tuple):
        return tuple(structure(x) for x in v)
    return "tensor"


def describe_structure(s: Any) -> str:
    """`structure(v)` in words: "a tensor", "a tuple of (a tensor, a tuple of ())"."""
    if isinstance(s, tuple):
        return "a tuple of (" + ", ".join(describe_structure(x) for x in s) + ")"
    return "a tensor"


def flatten(v: Value) -> list[Tensor]:
    """The tensors of a (possibly nested) tuple value, left to right."""
    if isinstance(v, tuple):
        out: list[Tensor] = []
        for x in v:
            out += flatten(x)
        return out
    return [as_tensor(v, "output")]
