"""Enclosures of the real model's transcendental functions at numbers (`--fp real`).

The real model (`tvtv.absfp.real`) leaves exp, tanh, erf, ... uninterpreted: `real_exp` is any
function of the reals (with the special values and signs of `special.py`). So "for every
interpretation, source and target differ" is rarely true of a real difference that passes
through such a function (exp(x) against a broken tanh(x)), while "for some interpretation"
is no evidence at all: exp(a + b) against exp(a) * exp(b) differs for most functions, not
for the real exp.

`enclosures` pins each application of such a function to a number c to an interval around
its double-precision value f(c) from the C library (numpy), widened by `REL_MARGIN` of
its magnitude. The C library's double functions are within a few ulps (2^-52 relative) of
the mathematical ones (glibc documents at most a few ulps for exp, log, tanh, erf, sin ...;
numpy's SIMD versions at most 4 ulps), so the margin of 2^-40 holds the true value with
room to spare. A question "can source and target be equal?" asked with these intervals
and answered "no" (unsat) is then answered "no" for the true functions too: the two differ
in exact real arithmetic. Applications to arguments that are not numbers (exp(exp(x))
with the inner one open) and numbers that a double does not hold exactly stay open, which
only makes the answer "no" rarer, never wrong.
"""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import z3

from tvtv import z3fast as zf
from tvtv.encode.evaluate import _LIBM, _outermost

# the real model's functions are named real_<name> (`tvtv.absfp.real.RealFloats._uf`)
_PREFIX = "real_"
# relative half-width of an enclosure (256 ulps of a double), and the least absolute one
REL_MARGIN = 2.0 ** -40
ABS_MARGIN = 2.0 ** -1000


def _fraction(t: z3.ExprRef) -> Fraction | None:
    """The exact value of a rational numeral, or None."""
    if not z3.is_rational_value(t):
        return None
    return Fraction(t.numerator_as_long(), t.denominator_as_long())


def _as_double(q: Fraction) -> float | None:
    """`q` as a double when the double holds it exactly (else None)."""
    try:
        d = float(q)
    except OverflowError:
        return None
    return d if math.isfinite(d) and Fraction(d) == q else None


def _interval(value: float) -> tuple[Fraction, Fraction] | None:
    """[low, high] around a double `value` of a function, with the module's margins."""
    if not math.isfinite(value):
        return None
    r = Fraction(abs(value)) * Fraction(REL_MARGIN) + Fraction(ABS_MARGIN)
    v = Fraction(value)
    return v - r, v + r


def _real(q: Fraction) -> z3.ArithRef:
    return z3.RealVal(f"{q.numerator}/{q.denominator}")


def enclosures(term: z3.ExprRef) -> list[z3.BoolRef]:
    """low <= f(c) <= high for each application in `term` of a real-model function f
    (exp, erf, ... and the binary ones: pow, atan2, ...) to numbers c held exactly by
    doubles, with [low, high] around the C library's double value (see the module doc).
    Applications to anything else are left out (they stay open)."""
    return [fact for _, fact in _outermost(term, _enclosure)]


def _enclosure(t: z3.ExprRef) -> z3.BoolRef | None:
    """The enclosure of one application `t` (see `enclosures`), or None."""
    name = t.decl().name()
    if t.decl().kind() != z3.Z3_OP_UNINTERPRETED or not name.startswith(_PREFIX):
        return None
    fn = _LIBM.get(name[len(_PREFIX):])
    args = [_fraction(a) for a in t.children()]
    doubles = [None if q is None else _as_double(q) for q in args]
    if fn is None or any(d is None for d in doubles):
        return None
    with np.errstate(all="ignore"):
        value = float(np.float64(fn(*[np.float64(d) for d in doubles])))
    bounds = _interval(value)
    if bounds is None:
        return None
    return zf.And(_real(bounds[0]) <= t, t <= _real(bounds[1]))
