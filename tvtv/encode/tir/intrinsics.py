"""What TIR's scalar operations mean: what TVM 0.27's LLVM (CPU) code generation computes.

Measured by compiling small PrimFuncs with `tvm.compile(..., target="llvm")` and running them
on NaN, ±inf, ±0, ±1, ±FLT_MAX and ordinary values; `tests/test_tir_conformance.py` keeps
those runs. Findings:

- `T.max(a, b)` is `a > b ? a : b` and `T.min(a, b)` is `a < b ? a : b` (an ordered compare
  and a select): a NaN *first* operand is dropped (max(NaN, 1) = 1), a NaN second operand
  wins (max(1, NaN) = NaN), and ties of ±0 give the second operand (max(+0, -0) = -0).
  numpy.maximum propagates NaN from either side: relu(NaN) = 0 and clip(NaN) = 6 on the VM.
- The intrinsics exp, log, sqrt, rsqrt, sigmoid, erf, sin, cos, ... give the special values
  of `tvtv/absfp/special.py` (IEEE / C99 Annex F), oddness and sign included, except
  `tanh(-0) = +0` and `atanh(-0) = +0` (the table and numpy say -0): LLVM's lowering of
  tanh loses the sign of zero. Those overrides are `SPECIAL_OVERRIDES`.
- On ordinary values an intrinsic is the same uninterpreted function as the Relax op's
  (TVM's tanh is *the* tanh of the abstraction), so a Relax op and its legalization agree
  there by construction and differ only where the measured special values differ.
"""
from __future__ import annotations

from typing import Callable, Sequence

import z3

from tvtv import z3fast as zf
from tvtv.absfp.dtypes import FLOAT_FORMATS, is_float
from tvtv.absfp.interface import ScalarDomain
from tvtv.absfp.special import UNARY_RULES
from tvtv.encode.ops.elementwise import atan2_float, fmod, plus_zero, pow_float   # the Relax ops' C99
from tvtv.errors import Unsupported

Term = z3.ExprRef


def _max_finite(dom: ScalarDomain) -> float | None:
    return FLOAT_FORMATS[dom.dtype].max_value if is_float(dom.dtype) else None


def _is_const(dom: ScalarDomain, t: Term, value: float) -> bool:
    # structurally: the TIR interpreter builds a literal with `dom.const`, and simplifying
    # every operand of every T.max would cost a pass over the accumulated term per step
    return z3.eq(t, dom.const(value))


def tir_max(dom: ScalarDomain, a: Term, b: Term) -> Term:
    """`T.max(a, b)` = `a > b ? a : b` (LLVM: fcmp ogt + select).

    With -FLT_MAX on one side (the init of TVM's max reductions, the padding of max_pool) the
    same value is stated by what IEEE allows below -FLT_MAX: only -inf is less, and a NaN
    compares false. `T.max(-FLT_MAX, x)` = `x == -inf ? -FLT_MAX : x`, and
    `T.max(x, -FLT_MAX)` = `x == -inf or x is NaN ? -FLT_MAX : x`. Under no-inf the solver then
    sees `x` at once instead of deciding an order (a 16-term max: 2 s -> <0.1 s)."""
    big = _max_finite(dom)
    if big is not None:
        low = dom.const(-big)
        if _is_const(dom, a, -big):
            return zf.If(dom.is_signed_inf(b, -1), low, b)
        if _is_const(dom, b, -big):
            return zf.If(zf.Or(dom.is_nan(a), dom.is_signed_inf(a, -1)), low, a)
    return zf.If(dom.gt(a, b), a, b)


def tir_min(dom: ScalarDomain, a: Term, b: Term) -> Term:
    """`T.min(a, b)` = `a < b ? a : b` (LLVM: fcmp olt + select); with +FLT_MAX on one side,
    as `tir_max` with -FLT_MAX."""
    big = _max_finite(dom)
    if big is not None:
        high = dom.const(big)
        if _is_const(dom, a, big):
            return zf.If(dom.is_signed_inf(b, 1), high, b)
        if _is_const(dom, b, big):
            return zf.If(zf.Or(dom.is_nan(a), dom.is_signed_inf(a, 1)), high, a)
    return zf.If(dom.lt(a, b), a, b)


# Special values where TVM's CPU code differs from `absfp/special.py` (input key -> output).
SPECIAL_OVERRIDES: dict[str, dict[str, float]] = {
    "tanh": {"-0": 0.0},
    "atanh": {"-0": 0.0},
}
_KEYS = {"nan": float("nan"), "+inf": float("inf"), "-inf": float("-inf"), "+0": 0.0, "-0": -0.0}


def _unary(fname: str) -> Callable[[ScalarDomain, Sequence[Term]], Term]:
    if SPECIAL_OVERRIDES.get(fname) == {"-0": 0.0} and UNARY_RULES[fname].specials.get("+0") == "x":
        # f(-0) = +0 where f(+0) = +0: f of the argument with its zero sign dropped, the very
        # term the specification builds under per-operation no-signed-zeros
        # (`tvtv.encode.ops.elementwise.ZERO_SIGN_DROPPED`)
        return lambda dom, args: dom.unary(fname, plus_zero(dom, args[0]))

    def apply(dom: ScalarDomain, args: Sequence[Term]) -> Term:
        (x,) = args
        result = dom.unary(fname, x)
        for key, out in SPECIAL_OVERRIDES.get(fname, {}).items():
            result = zf.If(x == dom.const(_KEYS[key]), dom.const(out), result)
        return result
    return apply


def _binary(fname: str) -> Callable[[ScalarDomain, Sequence[Term]], Term]:
    return lambda dom, args: dom.binary(fname, *args)


INTRINSICS: dict[str, Callable[[ScalarDomain, Sequence[Term]], Term]] = {
    **{n: _unary(n) for n in ("exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "erf", "sin",
                              "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh",
                              "acosh", "atanh", "floor", "ceil", "trunc", "round")},
    "nearbyint": _unary("round"),
    "fabs": lambda dom, args: dom.abs(args[0]),
    # CPU code calls libm (powf, atan2f, fmodf): C99 Annex F's special cases, the same
    # definitions as the Relax ops' (measured on the VM: atan2(-inf, -inf) = -3pi/4,
    # pow(-inf, -inf) = 0), so the legalized op and the Relax op are one term
    "pow": lambda dom, args: pow_float(dom, *args),
    "atan2": lambda dom, args: atan2_float(dom, *args),
    "fmod": lambda dom, args: fmod(dom, *args),
}
PREDICATES: dict[str, Callable[[ScalarDomain, Term], z3.BoolRef]] = {
    "isnan": lambda dom, x: dom.is_nan(x),
    "isinf": lambda dom, x: dom.is_inf(x),
    "isfinite": lambda dom, x: zf.Not(zf.Or(dom.is_nan(x), dom.is_inf(x))),
}


def call(dom: ScalarDomain, name: str, args: Sequence[Term]) -> Term:
    """The value of intrinsic `tirx.<name>` on float arguments of `dom`."""
    fn = INTRINSICS.get(name)
    if fn is None:
        raise Unsupported(f"TIR intrinsic {name}")
    return fn(dom, args)
