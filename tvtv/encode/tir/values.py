"""The values a TIR PrimFunc's interpreter computes with: data scalars (`Sc`), index values
(`index.Ix`), loops, and buffer readers; shared by `interpreter` and `program`."""
from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any, Callable, Sequence, Union

import z3

from tvtv.absfp.dtypes import check_supported
from tvtv.encode.tensor import INDEX, Tensor
from tvtv.encode.tir import index as IX
from tvtv.ir import tir as T

_undef_counter = itertools.count()


def fresh_undef_name(side: str, what: str) -> str:
    """A new constant's name for an element no store has written (arbitrary contents)."""
    return f"tir_undef_{side}_{what}_{next(_undef_counter)}"


def undefined_tensor(ctx: Any, shape: Sequence[int], dtype: str, name: str,
                     what: str | None = None) -> Tensor:
    """A tensor of arbitrary elements, fresh per call: memory no store has written (a TIR
    buffer, a tensor just allocated, one a write clobbered). `name` goes into the array's
    name, `what` (default `name`) into the error for an unsupported dtype."""
    check_supported(dtype, what or name)
    sort = ctx.dom(dtype).sort
    return Tensor(tuple(shape), dtype, z3.Array(fresh_undef_name(ctx.side, name), INDEX, sort))


@dataclass(frozen=True)
class Sc:
    """A data scalar: an element of the float model's (or int/bool) domain of `dtype`."""

    term: z3.ExprRef
    dtype: str
    # a float known to be one of a few constants: (condition, value) pairs covering all
    # cases, so arithmetic on such values (adaptive pooling's divisors: Cast(int) * Cast(int))
    # is folded exactly instead of going through the float model's uninterpreted functions
    cases: tuple[tuple[z3.BoolRef, float], ...] | None = None


Val = Union[IX.Ix, Sc]
Reader = Callable[[list[IX.Ix]], z3.ExprRef]


@dataclass(frozen=True)
class Loop:
    """A loop `for var in [lo, lo + extent)`. A loop whose extent depends on enclosing
    loops (adaptive pooling's windows) has `dyn` = that extent expression and `extent` =
    its largest value; a reduction over it is split into one reduction per extent value."""

    var: str
    lo: int
    extent: int
    dyn: "T.Expr | None" = None
    values: tuple[int, ...] = ()      # the extents `dyn` takes (exactly), when dynamic
