"""Values of the specifications' uninterpreted float functions where every reading of the
specification gives one value.

The IEEE model leaves functions such as `log_add_exp` uninterpreted: their value on numerals
depends on the C library that computes them, so a concrete evaluation has no value for them
and a counterexample through them cannot be confirmed by evaluating the specification. On
some arguments, though, the value is the same however the function is computed, as long as
it is computed faithfully (each library call within one ulp) or correctly rounded. Those
values are given here, keyed by the name in `ieee_<name>_<dtype>`
(`tvtv.absfp.ieee.IEEEModel`), and used by `tvtv.encode.evaluate.exact_value` and
`cpu_value`: sound for confirming a counterexample.

- `log_add_exp(a, b)` (numpy.logaddexp: `M + log1p(exp(-d))` with M = max(a, b) and
  d = |a - b|, in float32 for the narrower dtypes) is M when the correction cannot move M:
  the exact correction is below e^-d, and computed faithfully it is below 2 e^-d plus a
  subnormal ulp; when that bound is under half the distance from M to the next float above
  it (in the computing precision), round-to-nearest (IEEE 754 §4.3.1) gives M back, both in
  numpy's formula and in a correctly rounded log(e^a + e^b). A zero M stays open: a
  faithful exp may give the smallest subnormal for any positive exact value, and zero plus
  it is that subnormal, where the correctly rounded result is +0. This is where
  TVM's legalization `log(exp(a) + exp(b))` overflows: `log_add_exp(0, 100)` is 100, TVM
  computes inf (docs/findings.md). Equal, infinite and NaN operands are cases of the
  specification itself (`tvtv.encode.ops.elementwise.log_add_exp_float`).
"""
from __future__ import annotations

import math
from typing import Callable

import numpy as np

# a function's determined value on float arguments in a dtype, or None where it is open
Determined = Callable[[list[float], str], "float | None"]

DETERMINED: dict[str, Determined] = {}


def _computing_dtype(dtype: str) -> type:
    """The numpy type a function of `dtype` is computed in: float32 for float16, bfloat16
    and float32 (numpy computes the narrow floats' functions in float32), else float64."""
    return np.float64 if dtype == "float64" else np.float32


def _determined(name: str) -> Callable[[Determined], Determined]:
    def add(fn: Determined) -> Determined:
        DETERMINED[name] = fn
        return fn
    return add


@_determined("log_add_exp")
def log_add_exp(args: list[float], dtype: str) -> float | None:
    """max(a, b) when the operands are so far apart that the
    correction log1p(exp(-|a - b|)) rounds away (module docstring); None otherwise."""
    a, b = args
    if not (math.isfinite(a) and math.isfinite(b)) or a == b:
        return None
    kind = _computing_dtype(dtype)
    info = np.finfo(kind)
    top = max(a, b)
    # |a - b| in double (inf beyond its range, where e^-d is 0 all the same); it and a - b
    # computed in `kind` round by at most a relative 2^-24: d * (1 - 2^-20) covers both
    d = abs(a - b)
    d_low = d * (1.0 - 2.0 ** -20)
    # faithful exp and log1p: at most twice the exact e^-d, plus a subnormal ulp; the
    # smallest subnormal term also leaves a zero M open (above is then that subnormal)
    correction = 2.0 * math.exp(-d_low) + float(info.smallest_subnormal)
    # the distance from M to the next float above it, as if the exponent were unbounded
    # (M + c rounds to the largest finite M, not to inf, while c < half that: IEEE 754
    # §4.3.1); for a negative M, the gap below |M|, which is half as wide at a power of two
    mag = kind(abs(top))
    below = float(mag) - float(np.nextafter(mag, kind(0)))
    with np.errstate(over="ignore"):      # numpy's spacing of the largest float is inf
        above = float(np.spacing(mag)) if top > 0 else below
    if math.isinf(above):                 # the largest float: its binade's ulp
        above = below
    return top if correction < above / 2 else None
