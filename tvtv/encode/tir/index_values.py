"""The values an integer index expression takes over its variables' ranges, by evaluating it
on each combination of them.

Interval arithmetic (`tvtv.encode.tir.index`) loses the correlation between a variable's
occurrences: avg_pool2d's divisor, the number of window elements inside the unpadded input,

    max((min(h, 0) * 2 + min(2h + 1, 5) + 1 - 2h) * (min(w, 0) * 2 + min(2w + 1, 6) + 1 - 2w), 1)

over h in [0, 2] and w in [0, 3], gets the range [1, 42] though its values are 2 and 4. Cast
to float32, a range of 42 integers is an uninterpreted cast, while the Relax operator's
encoding (and a PrimFunc whose loops are fewer) has the constants 2.0 and 4.0: the zero
pipeline's check of a fused avg_pool2d found the two different and timed out refining.
Evaluated on the 12 combinations, the divisor is one of two constants, each cast exactly.
"""
from __future__ import annotations

import itertools
import math
from typing import Mapping

from tvtv.absfp.dtypes import INT_FORMATS, is_int
from tvtv.ir import tir as T

# at most this many combinations of the variables' values are evaluated
COMBINATIONS = 4096


def _trunc_div(a: int, b: int) -> int:
    """C's (and TIR's `Div` on integers) division, rounding toward zero."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _wrapped(v: int, dtype: str) -> int:
    """`v` converted to integer `dtype` (two's complement wrap, as LLVM's trunc/sext)."""
    bits, signed = INT_FORMATS[dtype]
    v &= (1 << bits) - 1
    return v - (1 << bits) if signed and v >> (bits - 1) else v


_BINARY = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "min": min,
    "max": max,
    # floor division and modulo round toward -inf (TIR's floordiv/floormod = Python's)
    "floordiv": lambda a, b: a // b if b else None,
    "floormod": lambda a, b: a % b if b else None,
    "div": lambda a, b: _trunc_div(a, b) if b else None,
    "mod": lambda a, b: a - b * _trunc_div(a, b) if b else None,
}


def evaluate(e: T.Expr, values: Mapping[str, int]) -> int | None:
    """`e`'s value with its variables at `values`; None where it is not integer arithmetic of
    variables and constants, or divides by zero."""
    if isinstance(e, T.IntImm):
        return e.value
    if isinstance(e, T.Var):
        return values.get(e.id)
    if isinstance(e, T.Binary) and e.op in _BINARY and is_int(e.dtype):
        a = evaluate(e.a, values)
        b = evaluate(e.b, values) if a is not None else None
        if b is None:
            return None
        v = _BINARY[e.op](a, b)
        return None if v is None else _wrapped(v, e.dtype)
    if isinstance(e, T.Cast) and is_int(e.dtype):
        v = evaluate(e.value, values)
        return None if v is None else _wrapped(v, e.dtype)
    return None


def values_over(e: T.Expr, ranges: Mapping[str, tuple[int, int]], limit: int) -> list[int] | None:
    """The distinct values (ascending) `e` takes when each variable it mentions ranges over
    its inclusive `ranges` entry: a superset of the values it takes where the ranges
    over-approximate the variables. None when a variable has no range, when there are more
    than `COMBINATIONS` combinations or more than `limit` values, or when `e` is not integer
    arithmetic that `evaluate` knows."""
    names = sorted(_variables(e))
    if any(n not in ranges for n in names):
        return None
    spans = [range(ranges[n][0], ranges[n][1] + 1) for n in names]
    if math.prod(len(s) for s in spans) > COMBINATIONS:
        return None
    seen: set[int] = set()
    for combo in itertools.product(*spans):
        v = evaluate(e, dict(zip(names, combo)))
        if v is None:
            return None
        seen.add(v)
        if len(seen) > limit:
            return None
    return sorted(seen)


def _variables(e: T.Expr) -> set[str]:
    """The ids of the variables in integer expression `e` (other nodes have none that
    `evaluate` reads)."""
    if isinstance(e, T.Var):
        return {e.id}
    if isinstance(e, T.Binary):
        return _variables(e.a) | _variables(e.b)
    if isinstance(e, T.Cast):
        return _variables(e.value)
    return set()
