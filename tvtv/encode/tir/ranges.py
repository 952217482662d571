"""Value ranges of TIR float expressions, proved by interval arithmetic on IEEE floats.

TVM's fast-math PrimFuncs (FastMathTransform's `fast_erf`, `fast_tanh`) clamp their argument,
`T.max(T.min(x, 4), -4)`, and then evaluate a ratio of polynomials in it. Their results are
small finite numbers, but in the abstract float model `+`, `*` and `/` are uninterpreted
functions, so the model admits an infinite or NaN result and cannot prove, e.g., that
`isinf(erf(x))` is unchanged by the pass (GenCoG seed 23 graph 1: `unknown` after 50 s).
`expr_range` derives a `Range` of a stored expression from the TIR alone: a proof about the
*concrete* program, which the interpreter then states in the float model
(`ScalarDomain.bounded`: the abstract model clamps the value's magnitude to the bound, as it
does for tanh's measured [-1, 1]) at the abstraction ladder's last rung, reached when the
rungs before it leave a counterexample unconfirmed (`Abstraction.ranges`).

`Range(lo, hi, nan)` means: on every input, the value is a number in [lo, hi] (as reals, so
±0 are both in [0, 0]) or, only when `nan`, NaN; lo and hi are values of the dtype, ±inf
allowed. `TOP` is nothing known. How each is derived, and why it is sound:

- A literal c (rounded to its dtype as the program holds it) lies in [c, c].
- `T.min(a, b)` is `a < b ? a : b` and `T.max(a, b)` is `a > b ? a : b` on TVM's CPU code
  (measured, `intrinsics.py`): the result is one of the operands, a NaN `a` gives `b` and a
  NaN `b` is the result. FastMathTransform's clamps are `T.max(T.min(x, 4), -4)` in fast_erf
  (never NaN: [-4, 4]) and `T.max(-9, T.min(9, x))` in fast_tanh (NaN for a NaN x, else in
  [-9, 9]); see `tir_min`.
- `+ - * /` on finite ranges: the exact real result over the box of operands lies between the
  smallest and largest exact results at its corners (each operation is monotone in each
  operand on the box; a divisor's range must exclude 0). IEEE-754 round-to-nearest (§4.3) is
  monotone, so the computed value lies in [round-down(min), round-up(max)] in the dtype, with
  the corners computed exactly (`fractions.Fraction`). Rounding outward, not to nearest, also
  covers code that rounds differently: a float16 operation computed in float32 and narrowed,
  or `a * b + c` contracted into one fused multiply-add (each node's range holds its exact
  value as well as its rounded one). A bound beyond the dtype's largest finite value becomes
  ±inf (an overflow), which the next operation does not take (it needs finite ranges). A
  NaN operand gives NaN; no other NaN arises from finite operands.
- `e * e` of one expression `e` (TIR expressions are pure, so both operands are one value
  x) is x², in [0, max(lo², hi²)] when the range holds 0: the polynomials are in x·x, and
  two independent factors in [-4, 4] would give [-16, 16], a denominator range holding 0.
- A cast between float dtypes rounds monotonically too.
- `Select` and `if_then_else` give one of their branches: the union of both ranges.
- An intrinsic with a measured bound (`tvtv.absfp.special.UnaryRule.bound`: tanh, erf, sin,
  cos in [-1, 1], sigmoid in [0, 1]; run on every finite input in float16, bfloat16 and
  float32 on TVM's CPU code, never NaN there; float64 has none) lies in that bound, or is
  NaN where its operand may be (a NaN operand) or may be ±inf where the function is NaN
  (sin, cos; tanh, erf, sigmoid of ±inf are ±1, 0 or 1, in the bound).

- A reduction `acc = acc + e` over n steps (a sum, a mean's sum) lies within Higham's
  rounding bound of the exact sums of its start and at most n terms (`sum_range`); a max or
  min reduction is one of its start and its terms (`reduction_range`).

A buffer written whole by one store keeps its value's range for later loads
(`PrimFuncEncoder`), and a PrimFunc's output keeps it for the PrimFuncs on the same side
that read it (`interpreter._Produced`: a clip's range reaches the mean of its output).
Anything else (an input of the function checked, a tensor a Relax op computed, another
intrinsic) is `TOP`.
`tests/test_tir_ranges.py` checks every derived range against numpy and against the TVM VM
on every float16 input of FastMathTransform's functions.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Callable

import numpy as np

from tvtv.absfp import special
from tvtv.absfp.dtypes import FLOAT_FORMATS, is_float, numpy_dtype
from tvtv.ir import tir as T


@dataclass(frozen=True)
class Range:
    """The value is NaN (only when `nan`) or a number in [lo, hi] (module docstring)."""

    lo: float
    hi: float
    nan: bool = False

    @property
    def finite(self) -> bool:
        """Every value that is not NaN is finite."""
        return math.isfinite(self.lo) and math.isfinite(self.hi)

    @property
    def magnitude(self) -> float:
        """The largest |value| of the numbers in the range."""
        return max(abs(self.lo), abs(self.hi))


# nothing known: any number, ±inf or NaN
TOP = Range(-math.inf, math.inf, True)
# the encoding note of a stored value whose range the rung did not state (the abstraction
# ladder's last rung states it: `tvtv.encode.abstraction.Abstraction.ranges`)
RANGES_NOTE = "TIR value ranges: not stated"


def _round(q: Fraction, dtype: str, up: bool) -> float:
    """The dtype's value next to the exact `q` in the direction asked (up: the least value ≥
    q, or +inf beyond the largest finite one; down: the greatest value ≤ q, or -inf)."""
    nd = numpy_dtype(dtype)
    big = FLOAT_FORMATS[dtype].max_value
    if q > Fraction(big):
        return math.inf if up else big
    if q < -Fraction(big):
        return -big if up else -math.inf
    with np.errstate(all="ignore"):
        v = np.asarray(float(q)).astype(nd)   # within one step of q (double rounding)
        toward = np.asarray(np.inf if up else -np.inf, dtype=nd)
        while (Fraction(float(v)) < q) if up else (Fraction(float(v)) > q):
            v = np.nextafter(v, toward)
    return float(v)


def constant(value: float) -> Range:
    """The range of a literal that holds `value` (already rounded to its dtype)."""
    return Range(math.inf, -math.inf, True) if math.isnan(value) else Range(value, value)


def from_exact(lo: Fraction, hi: Fraction, dtype: str, nan: bool = False) -> Range:
    """The range of a dtype value that rounds some exact real in [lo, hi] (monotone rounding)."""
    return Range(_round(lo, dtype, up=False), _round(hi, dtype, up=True), nan)


def arith(op: str, a: Range, b: Range, dtype: str) -> Range:
    """The range of `a op b` (op: add, sub, mul, div) computed in `dtype`. A NaN operand
    gives NaN (IEEE §6.2); on finite numbers, with a divisor away from 0, nothing else does."""
    if not a.finite or not b.finite:
        return TOP
    xs = (Fraction(a.lo), Fraction(a.hi))
    ys = (Fraction(b.lo), Fraction(b.hi))
    if op == "div":
        if b.lo <= 0 <= b.hi:
            return TOP       # a divisor that may be ±0: ±inf or NaN
        corners = [x / y for x in xs for y in ys]
    elif op == "mul":
        corners = [x * y for x in xs for y in ys]
    elif op == "add":
        corners = [xs[0] + ys[0], xs[1] + ys[1]]
    elif op == "sub":
        corners = [xs[0] - ys[1], xs[1] - ys[0]]
    else:
        return TOP
    return from_exact(min(corners), max(corners), dtype, a.nan or b.nan)


def square(a: Range, dtype: str) -> Range:
    """The range of `x * x` for one value x in `a` (not two independent ones: never < 0)."""
    if not a.finite:
        return TOP
    ends = (Fraction(a.lo) ** 2, Fraction(a.hi) ** 2)
    low = Fraction(0) if a.lo <= 0 <= a.hi else min(ends)
    return from_exact(low, max(ends), dtype, a.nan)


def tir_min(a: Range, b: Range) -> Range:
    """The range of `T.min(a, b)` = `a < b ? a : b`. The result is `a` only when a < b
    (then a ≤ min(a.hi, b.hi)); otherwise `b`, with b ≤ a unless `a` is NaN, in which case
    `b` whatever it is. So a NaN `a` is dropped and a NaN `b` is the result."""
    return Range(min(a.lo, b.lo), b.hi if a.nan else min(a.hi, b.hi), b.nan)


def tir_max(a: Range, b: Range) -> Range:
    """The range of `T.max(a, b)` = `a > b ? a : b` (as `tir_min`, mirrored)."""
    return Range(b.lo if a.nan else max(a.lo, b.lo), max(a.hi, b.hi), b.nan)


def union(a: Range, b: Range) -> Range:
    """The range of a value that is one of two (a select)."""
    return Range(min(a.lo, b.lo), max(a.hi, b.hi), a.nan or b.nan)


def cast(r: Range, dtype: str) -> Range:
    """The range of a float value cast to the float `dtype` (round-to-nearest, monotone;
    NaN stays NaN)."""
    lo = _round(Fraction(r.lo), dtype, up=False) if math.isfinite(r.lo) else r.lo
    hi = _round(Fraction(r.hi), dtype, up=True) if math.isfinite(r.hi) else r.hi
    return Range(lo, hi, r.nan)


_ARITH = ("add", "sub", "mul", "div")


def expr_range(e: T.Expr, buffer_range: Callable[[str], Range]) -> Range:
    """The range of the float expression `e` as TVM's CPU code computes it (`TOP` when
    nothing is known); `buffer_range(buffer id)` is the range of every element of a buffer."""
    if not is_float(getattr(e, "dtype", "")):
        return TOP
    if isinstance(e, T.FloatImm):
        # the literal as the program holds it (the interpreter rounds it the same way)
        with np.errstate(all="ignore"):
            return constant(float(np.asarray(e.value).astype(numpy_dtype(e.dtype))))
    if isinstance(e, T.Load):
        return buffer_range(e.buffer)
    if isinstance(e, T.Binary):
        a, b = expr_range(e.a, buffer_range), expr_range(e.b, buffer_range)
        if e.op == "min":
            return tir_min(a, b)
        if e.op == "max":
            return tir_max(a, b)
        if e.op == "mul" and e.a == e.b:
            return square(a, e.dtype)
        if e.op in _ARITH:
            return arith(e.op, a, b, e.dtype)
        return TOP
    if isinstance(e, (T.Select, T.IfThenElse)):
        return union(expr_range(e.true_value, buffer_range), expr_range(e.false_value, buffer_range))
    if isinstance(e, T.Cast):
        return cast(expr_range(e.value, buffer_range), e.dtype)
    if isinstance(e, T.Call) and len(e.args) == 1:
        return intrinsic(e.name, expr_range(e.args[0], buffer_range), e.dtype)
    return TOP


def intrinsic(name: str, a: Range, dtype: str) -> Range:
    """The range of the unary intrinsic `name` on an operand in `a`, from the bound measured
    on TVM's CPU code (`special.bound`; `TOP` where there is none)."""
    rule = special.UNARY_RULES.get(name)
    b = special.bound(rule, dtype) if rule is not None else None
    if b is None:
        return TOP
    # NaN in, NaN out (every rule's "nan" special); ±inf in: the rule's value there
    at_inf = [rule.specials[k] for k in ("+inf", "-inf")]
    nan = a.nan or (not a.finite and any(isinstance(v, float) and math.isnan(v) for v in at_inf))
    return Range(0.0 if rule.nonneg else -b, b, nan)


# The bound below holds while n·u stays under this (Higham's γ_n = n·u / (1 - n·u)).
_GAMMA_LIMIT = Fraction(1, 2)


def sum_range(start: Range, term: Range, n: int, dtype: str) -> Range:
    """The range of `start` plus at most `n` terms, each in `term`, added one by one in
    `dtype` in any order (a TIR sum reduction: `acc = acc + e` over its reduction loops).

    The exact sum of k ≤ n terms lies in [s.lo + min(0, n·lo), s.hi + max(0, n·hi)] (k may be
    below n where a loop's extent varies or a predicate skips iterations). Rounding: by
    Higham's bound for recursive summation in any order (Accuracy and Stability of Numerical
    Algorithms, 2nd ed., §4.2), the computed sum of n + 1 numbers x_i differs from the exact
    one by at most γ_n·Σ|x_i|, γ_n = n·u / (1 - n·u), with u the unit roundoff. The bound
    takes every rounding as relative (|δ| ≤ u), which addition meets under gradual
    underflow too: a sum with a subnormal result is exact (IEEE 754 §7.5, Hauser 1996). The
    u used is twice the dtype's (2^(1-p)), covering a float16 sum computed in float32 and
    narrowed at each step (two roundings) as the interval rules above do. The bound assumes
    no partial sum overflows; by induction on the steps none does when the whole bound is
    finite (round-to-nearest of a value at most the largest finite one stays finite), and
    where it is not, the result is `TOP`. A NaN start or term gives NaN; finite ones add no
    NaN (inf - inf needs an infinity)."""
    if not start.finite or not term.finite or n < 0:
        return TOP
    p = FLOAT_FORMATS[dtype].sbits     # precision, the hidden bit included
    nu = n * Fraction(2) ** (1 - p)
    if nu >= _GAMMA_LIMIT:
        return TOP
    gamma = nu / (1 - nu)
    lo = Fraction(start.lo) + min(Fraction(0), n * Fraction(term.lo))
    hi = Fraction(start.hi) + max(Fraction(0), n * Fraction(term.hi))
    err = gamma * (Fraction(start.magnitude) + n * Fraction(term.magnitude))
    return from_exact(lo - err, hi + err, dtype, start.nan or term.nan)


def reduction_range(op: str, start: Range, term: Range, n: int, dtype: str,
                    acc_first: bool) -> Range:
    """The range of a TIR reduction `acc = op(acc, term)` (or `op(term, acc)` when not
    `acc_first`) from `start` over at most `n` steps: a sum (`sum_range`), or a max or min,
    whose value is always one of its operands (`tir_max`): the start, or after a step the
    step's range, which a further step keeps (the rules are idempotent). `TOP` for any
    other combiner."""
    if op == "add":
        return sum_range(start, term, n, dtype)
    if op not in ("max", "min"):
        return TOP
    rule = tir_max if op == "max" else tir_min
    acc = start
    for _ in range(4):
        nxt = union(acc, rule(acc, term) if acc_first else rule(term, acc))
        if nxt == acc:
            return acc
        acc = nxt
    return TOP


def computes(e: T.Expr) -> bool:
    """Whether `e` does float arithmetic (+ - * /), which the abstract model leaves
    uninterpreted: only then does stating its range tell the model something new."""
    if isinstance(e, T.Binary):
        return (e.op in _ARITH and is_float(e.dtype)) or computes(e.a) or computes(e.b)
    if isinstance(e, (T.Select, T.IfThenElse)):
        return computes(e.true_value) or computes(e.false_value)
    if isinstance(e, T.Cast):
        return computes(e.value)
    return False
