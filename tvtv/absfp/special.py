"""Special-value rules of the float functions that both float models leave uninterpreted.

Each rule says what IEEE 754 / C99 Annex F (as numpy implements it, measured with numpy 2.4
on float32) gives on NaN, ±inf, ±0 and 1; on every other input the function is an
uninterpreted function, constrained only by `odd` (f(-x) = -f(x)), `nonneg` (result ≥ +0),
`bound` (|result| ≤ bound: tanh, sigmoid, erf, sin, cos, measured on TVM's code) and
`nan_free` (no NaN on ordinary inputs in the domain: exp, log, sqrt, ..., measured too).
The abstract and the IEEE model use the same table, so they agree on special values by
construction; `tests/test_ops_elementwise.py` checks the table itself against numpy.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

# Keys of `specials`: "nan", "+inf", "-inf", "+0", "-0", "+1", "-1".
# Values: a float (the exact result), or "x" for "the input itself".
NAN = math.nan
INF = math.inf


@dataclass(frozen=True)
class UnaryRule:
    specials: dict[str, float | str]
    odd: bool = False          # f(-x) = -f(x) on ordinary values
    nonneg: bool = False       # result is ≥ +0 (or NaN) on ordinary values
    nan_below_zero: bool = False  # negative ordinary inputs give NaN (log, sqrt, ...)
    # |f(x)| ≤ bound on ordinary values, never NaN or inf there (tanh, erf, sin, cos: 1;
    # sigmoid, also nonneg: [0, 1]); only in `BOUND_DTYPES`, where it was measured
    bound: float | None = None
    # [low, high] of the results on ordinary positive and negative inputs (exp: [1, inf] and
    # [0, 1]); like `bound`, only in `BOUND_DTYPES`, where it was measured, and never NaN;
    # the abstract model states them, the IEEE model leaves them out (they slow its queries)
    positive_range: tuple[float, float] | None = None
    negative_range: tuple[float, float] | None = None
    # ordinary inputs (positive ones where `nan_below_zero`) never give NaN: true of the
    # mathematical function, and measured on TVM's code in `BOUND_DTYPES` (every finite
    # float16/bfloat16 value, a float32 stride: tests/test_tir_conformance.py; all float32
    # values: bench/range_facts.py); stated by the abstract and the IEEE model there
    nan_free: bool = False
    # moreover never ±inf there (log, sqrt, rsqrt, atan, asinh; not exp, sinh, cosh, which
    # overflow, nor tan: TVM's float16 tan(177.5) is inf); measured as `nan_free` is
    finite: bool = False
    doc: str = ""
    extra: dict[str, object] = field(default_factory=dict)


_NAN_IN = {"nan": NAN}
PI_2 = math.pi / 2

UNARY_RULES: dict[str, UnaryRule] = {
    # exp(x) ≥ 1 for x > 0 and ≤ 1 for x < 0: e^x is on that side of 1, and 1 is a float, so
    # no faithful rounding crosses it (measured on TVM's code: tests/test_tir_conformance.py)
    "exp": UnaryRule({**_NAN_IN, "+inf": INF, "-inf": 0.0, "+0": 1.0, "-0": 1.0}, nonneg=True,
                     positive_range=(1.0, INF), negative_range=(0.0, 1.0), nan_free=True),
    "log": UnaryRule({**_NAN_IN, "+inf": INF, "-inf": NAN, "+0": -INF, "-0": -INF, "+1": 0.0,
                      "-1": NAN}, nan_below_zero=True, nan_free=True, finite=True),
    "sqrt": UnaryRule({**_NAN_IN, "+inf": INF, "-inf": NAN, "+0": "x", "-0": "x", "+1": 1.0,
                       "-1": NAN}, nonneg=True, nan_below_zero=True, nan_free=True,
                       finite=True),
    # rsqrt(x) = 1 / sqrt(x) (Relax's documentation), so rsqrt(-0) = 1 / -0 = -inf.
    "rsqrt": UnaryRule({**_NAN_IN, "+inf": 0.0, "-inf": NAN, "+0": INF, "-0": -INF, "+1": 1.0,
                        "-1": NAN}, nonneg=True, nan_below_zero=True, nan_free=True,
                       finite=True),
    "tanh": UnaryRule({**_NAN_IN, "+inf": 1.0, "-inf": -1.0, "+0": "x", "-0": "x"}, odd=True,
                      bound=1.0),
    # sigmoid(x) = 1 / (1 + exp(-x)): sigmoid(±0) = 0.5
    "sigmoid": UnaryRule({**_NAN_IN, "+inf": 1.0, "-inf": 0.0, "+0": 0.5, "-0": 0.5},
                         nonneg=True, bound=1.0),
    "erf": UnaryRule({**_NAN_IN, "+inf": 1.0, "-inf": -1.0, "+0": "x", "-0": "x"}, odd=True,
                     bound=1.0),
    "sin": UnaryRule({**_NAN_IN, "+inf": NAN, "-inf": NAN, "+0": "x", "-0": "x"}, odd=True,
                     bound=1.0),
    "cos": UnaryRule({**_NAN_IN, "+inf": NAN, "-inf": NAN, "+0": 1.0, "-0": 1.0}, bound=1.0),
    "tan": UnaryRule({**_NAN_IN, "+inf": NAN, "-inf": NAN, "+0": "x", "-0": "x"}, odd=True,
                     nan_free=True),
    "asin": UnaryRule({**_NAN_IN, "+inf": NAN, "-inf": NAN, "+0": "x", "-0": "x", "+1": PI_2,
                       "-1": -PI_2}, odd=True),
    "acos": UnaryRule({**_NAN_IN, "+inf": NAN, "-inf": NAN, "+0": PI_2, "-0": PI_2, "+1": 0.0,
                       "-1": math.pi}, nonneg=True),
    "atan": UnaryRule({**_NAN_IN, "+inf": PI_2, "-inf": -PI_2, "+0": "x", "-0": "x"}, odd=True,
                      nan_free=True, finite=True),
    "sinh": UnaryRule({**_NAN_IN, "+inf": INF, "-inf": -INF, "+0": "x", "-0": "x"}, odd=True,
                      nan_free=True),
    "cosh": UnaryRule({**_NAN_IN, "+inf": INF, "-inf": INF, "+0": 1.0, "-0": 1.0}, nonneg=True,
                      nan_free=True),
    "asinh": UnaryRule({**_NAN_IN, "+inf": INF, "-inf": -INF, "+0": "x", "-0": "x"}, odd=True,
                       nan_free=True, finite=True),
    "acosh": UnaryRule({**_NAN_IN, "+inf": INF, "-inf": NAN, "+0": NAN, "-0": NAN, "+1": 0.0,
                        "-1": NAN}, nonneg=True, nan_below_zero=True),
    "atanh": UnaryRule({**_NAN_IN, "+inf": NAN, "-inf": NAN, "+0": "x", "-0": "x", "+1": INF,
                        "-1": -INF}, odd=True),
    # Rounding functions: integral values (±0, ±1, ±inf) are fixed points.
    "floor": UnaryRule({**_NAN_IN, "+inf": "x", "-inf": "x", "+0": "x", "-0": "x", "+1": "x",
                        "-1": "x"}),
    "ceil": UnaryRule({**_NAN_IN, "+inf": "x", "-inf": "x", "+0": "x", "-0": "x", "+1": "x",
                       "-1": "x"}),
    "trunc": UnaryRule({**_NAN_IN, "+inf": "x", "-inf": "x", "+0": "x", "-0": "x", "+1": "x",
                        "-1": "x"}, odd=True),
    "round": UnaryRule({**_NAN_IN, "+inf": "x", "-inf": "x", "+0": "x", "-0": "x", "+1": "x",
                        "-1": "x"}, odd=True),
}

# The dtypes where `UnaryRule.bound` holds for both meanings of such a function: the
# specification's (the mathematical function, rounded: the bound is representable, so
# rounding keeps it) and TVM's CPU code (LegalizeOps' PrimFuncs on the VM), measured on every
# finite value: float16 and bfloat16 in `tests/test_tir_conformance.py`, float32 (all
# 4,278,190,080 finite bit patterns, 127 s) by `bench/range_facts.py`, the test keeping a
# stride of them. Within the bounds, never NaN. float64 cannot be run through, so there the
# results stay unbounded.
BOUND_DTYPES = frozenset({"float16", "bfloat16", "float32"})


# Functions whose meaning in a narrow float dtype is the wider dtype's function rounded back,
# because that is the only computation TVM 0.27 has for them: LLVM has no float16 erf
# (`T.erf` on float16 does not build, "unknown intrinsic"), so LegalizeOps' float16 `erf`
# casts to float32, calls `T.erf` and casts back, and so does every float16 `erf` TVM runs.
# Measured on all 63,488 finite float16 values (`tests/test_tir_conformance.py`): that is the
# correctly rounded erf except at ±0.001482 (float32 erf, then rounding to float16, lands one
# ulp up: 0.001673 for 0.0016722679; docs/findings.md). Stated as the specification, the
# Relax op and its legalization are one term, as TVM's other functions are
# (`tvtv/encode/tir/intrinsics.py`); before, float16 erf was a function of its own, which no
# check could relate to float32's (`erf` on float16 was unknown in docs/legalize.md).
COMPUTED_IN: dict[tuple[str, str], str] = {("erf", "float16"): "float32"}


def bound(rule: UnaryRule, dtype: str) -> float | None:
    """The range bound `rule` gives its function's results in `dtype`, or None where it
    gives none (no bound, or a dtype outside BOUND_DTYPES)."""
    return rule.bound if dtype in BOUND_DTYPES else None


def nan_free(rule: UnaryRule, dtype: str) -> bool:
    """Does `rule`'s function give no NaN on ordinary inputs (in its domain) in `dtype`?
    (`UnaryRule.nan_free`, stated only in BOUND_DTYPES, where it was measured; a bounded
    function is NaN-free there by its bound.)"""
    return rule.nan_free and dtype in BOUND_DTYPES


def finite(rule: UnaryRule, dtype: str) -> bool:
    """Does `rule`'s function give a finite number on ordinary inputs (in its domain) in
    `dtype`? (`UnaryRule.finite`, in BOUND_DTYPES only, as `nan_free`.)"""
    return rule.finite and dtype in BOUND_DTYPES


def sign_ranges(rule: UnaryRule, dtype: str) -> tuple[tuple[float, float] | None,
                                                      tuple[float, float] | None]:
    """(positive_range, negative_range) of `rule` in `dtype`: None outside BOUND_DTYPES."""
    if dtype not in BOUND_DTYPES:
        return None, None
    return rule.positive_range, rule.negative_range

# Binary functions left uninterpreted (besides the arithmetic that each model handles itself).
# pow follows C99 F.9.4.4: pow(x, ±0) = 1 for any x (even NaN); pow(+1, y) = 1 for any y.
BINARY_UF = ("pow", "atan2", "fmod", "log_add_exp")
