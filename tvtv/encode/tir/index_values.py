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
The interpreter enumerates a loop's varying extent (adaptive pooling's windows) the same way
(`PrimFuncEncoder.extent_values`).
"""
from __future__ import annotations

import functools
import itertools
import math
from typing import Mapping

from tvtv.absfp.dtypes import INT_FORMATS, is_int
from tvtv.ir import tir as T
from tvtv.ir.nodes import walk

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


_COMPARE = {"eq": lambda a, b: a == b, "ne": lambda a, b: a != b, "lt": lambda a, b: a < b,
            "le": lambda a, b: a <= b, "gt": lambda a, b: a > b, "ge": lambda a, b: a >= b}


def evaluate(e: T.Expr, values: Mapping[str, int]) -> int | None:
    """`e`'s value with its variables at `values` (a condition's is 1 or 0); None where it is
    not integer arithmetic, comparison and choice over variables and constants, or divides by
    zero. (Adaptive pooling's window extents choose with `T.Select`.)"""
    if isinstance(e, T.IntImm):
        return int(e.value)
    if isinstance(e, T.Compare) and e.op in _COMPARE:
        a = evaluate(e.a, values)
        b = evaluate(e.b, values) if a is not None else None
        return None if b is None else int(_COMPARE[e.op](a, b))
    if isinstance(e, T.Logic) and e.op in ("and", "or", "not"):
        args = [evaluate(x, values) for x in e.args]
        if any(x is None for x in args):
            return None
        return int(not args[0]) if e.op == "not" else \
            int(all(args) if e.op == "and" else any(args))
    if isinstance(e, (T.Select, T.IfThenElse)):
        c = evaluate(e.cond, values)
        return None if c is None else evaluate(e.true_value if c else e.false_value, values)
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


def variables(e: T.Expr) -> set[str]:
    """The ids of the variables `e` mentions."""
    return {n.id for n in walk(e) if isinstance(n, T.Var)}


def values_over(e: T.Expr, ranges: Mapping[str, tuple[int, int]], limit: int) -> list[int] | None:
    """The distinct values (ascending) `e` takes when each variable it mentions ranges over
    its inclusive `ranges` entry: a superset of the values it takes where the ranges
    over-approximate the variables. None when a variable has no range, when there are more
    than `COMBINATIONS` combinations or more than `limit` values, or when `e` is not integer
    arithmetic that `evaluate` knows."""
    names = sorted(variables(e))
    if any(n not in ranges for n in names):
        return None
    values = _values(e, tuple((n, ranges[n]) for n in names), limit)
    return None if values is None else list(values)


# the interpreter asks this for every element an expression is built for (an unrolled
# store's, a concrete index's): each distinct question is answered once
@functools.lru_cache(maxsize=4096)
def _values(e: T.Expr, named: tuple[tuple[str, tuple[int, int]], ...], limit: int
            ) -> tuple[int, ...] | None:
    """`values_over` for the (name, range) pairs of `e`'s variables."""
    names = [n for n, _ in named]
    spans = [range(lo, hi + 1) for _, (lo, hi) in named]
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
    return tuple(sorted(seen))

