"""The IEEE-754 float model: SMT-LIB's FloatingPoint theory, round-to-nearest-even.

+, -, *, /, sqrt, comparisons, rounding to integral and casts are bit-exact. Transcendental
functions (exp, tanh, erf, ...) have no SMT counterpart: they are uninterpreted functions
with the special values of `special.py` fixed, exactly as in the abstract model.
"""
from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np
import z3

from tvtv.absfp import special
from tvtv.absfp.abstract import _int_resize, round_to
from tvtv.absfp.dtypes import FLOAT_FORMATS, INT_FORMATS, is_bool, is_int, numpy_dtype
from tvtv.absfp.integers import BoolDomain, IntDomain
from tvtv.absfp.interface import FloatModel, ScalarDomain, model_value
from tvtv.errors import Unsupported
from tvtv import numeral_cases, z3context
from tvtv import z3fast as zf

RNE = z3context.constant(__name__, "RNE", z3.RNE)
_ROUNDING = z3context.constant(__name__, "_ROUNDING", lambda: {
    "floor": z3.RTN(), "ceil": z3.RTP(), "trunc": z3.RTZ(), "round": z3.RNE()})


class IEEEFloats(ScalarDomain):
    def __init__(self, owner: "IEEEModel", dtype: str) -> None:
        fmt = FLOAT_FORMATS[dtype]
        self.owner = owner
        self.dtype = dtype
        self.sort = z3.FPSort(fmt.ebits, fmt.sbits)
        self._ufs: dict[str, z3.FuncDeclRef] = {}

    def const(self, value: Any) -> z3.ExprRef:
        v = round_to(float(value), self.dtype)
        if math.isnan(v):
            return z3.fpNaN(self.sort)
        if math.isinf(v):
            return z3.fpPlusInfinity(self.sort) if v > 0 else z3.fpMinusInfinity(self.sort)
        if v == 0.0:
            return z3.fpMinusZero(self.sort) if math.copysign(1.0, v) < 0 else z3.fpPlusZero(self.sort)
        return z3.FPVal(v, None, self.sort)

    def nan(self):
        return z3.fpNaN(self.sort)

    def is_nan(self, a):
        return zf.fpIsNaN(a)

    def is_inf(self, a):
        return zf.fpIsInf(a)

    def add(self, a, b):
        # x + (-x) is x - x (IEEE 754 §6.3: an exact zero sum is +0 in round-to-nearest),
        # which a specification's `x - max` over one element builds
        for x, y in ((a, b), (b, a)):
            if z3.is_app_of(y, z3.Z3_OP_FPA_NEG) and z3.eq(y.arg(0), x):
                return self.self_difference(x)
        return z3.fpAdd(RNE, a, b)

    def sub(self, a, b):
        if z3.eq(a, b):
            return self.self_difference(a)
        split = self.difference_from_guarded(a, b)
        if split is not None:
            return split
        return z3.fpSub(RNE, a, b)

    def mul(self, a, b):
        return z3.fpMul(RNE, a, b)

    def div(self, a, b):
        return z3.fpDiv(RNE, a, b)

    def neg(self, a):
        return z3.fpNeg(a)

    def abs(self, a):
        return z3.fpAbs(a)

    def lt(self, a, b):
        return zf.fpLT(a, b)

    def le(self, a, b):
        return zf.fpLEQ(a, b)

    def eq(self, a, b):
        return zf.fpEQ(a, b)

    def same(self, a, b):
        # SMT-LIB `=` on floats is identity: one NaN, and +0 ≠ -0.
        return zf.Or(zf.And(zf.fpIsNaN(a), zf.fpIsNaN(b)), a == b)

    def _uf(self, name: str, arity: int) -> z3.FuncDeclRef:
        if name not in self._ufs:
            self._ufs[name] = z3.Function(f"ieee_{name}_{self.dtype}", *([self.sort] * (arity + 1)))
        return self._ufs[name]

    def unary(self, fname: str, x):
        # on a few numerals (x - x, a one-element softmax's x - max): each case's special
        # value folds, where the function's cases over a symbolic argument would reach its
        # uninterpreted function (`tvtv.numeral_cases`)
        split = numeral_cases.lifted(lambda v: self.unary(fname, v), x)
        if split is not None:
            return split
        wider = self.owner.computed_wider(fname, x, self.dtype)
        if wider is not None:
            return wider
        if fname == "sqrt":
            return z3.fpSqrt(RNE, x)
        if fname in _ROUNDING:
            return z3.fpRoundToIntegral(_ROUNDING[fname], x)
        rule = special.UNARY_RULES.get(fname)
        if rule is None:
            raise Unsupported(f"float function {fname}")
        uf = self._uf(fname, 1)
        top = special.bound(rule, self.dtype)
        if special.nan_free(rule, self.dtype):
            # a NaN value (and ±inf, for `finite` functions) read as 1: exactly the
            # functions into the other values
            one = self.const(1.0)
            bad = (lambda v: zf.Or(zf.fpIsNaN(v), zf.fpIsInf(v))) \
                if special.finite(rule, self.dtype) else zf.fpIsNaN

            def f(arg):
                v = uf(arg)
                return zf.If(bad(v), one, v)
        else:
            f = uf
        if rule.odd:
            h = self._bounded(f(z3.fpAbs(x)), top)
            general = zf.If(zf.fpIsNegative(x), z3.fpNeg(h), h)
        elif rule.nonneg:
            general = self._bounded(z3.fpAbs(f(x)), top)
        else:
            general = self._bounded(f(x), top)
        if rule.nan_below_zero:
            general = zf.If(zf.fpIsNegative(x), self.nan(), general)
        cases = {
            "nan": zf.fpIsNaN(x),
            "+inf": x == z3.fpPlusInfinity(self.sort), "-inf": x == z3.fpMinusInfinity(self.sort),
            "+0": x == z3.fpPlusZero(self.sort), "-0": x == z3.fpMinusZero(self.sort),
            "+1": x == self.const(1.0), "-1": x == self.const(-1.0),
        }
        # (no `special.sign_ranges` here: stated in this model, exp's made the IEEE query of
        # FastMathTransform's check time out after 30 s instead of refuting it in 1.7 s; the
        # abstract model, where they prove selu's legalization, has them)
        return self.with_specials(rule.specials, cases, x, general)

    def _bounded(self, h, bound: float | None):
        """`h` where |h| ≤ `bound`, else `bound` (NaN and ±inf included; `h` itself when
        there is no bound): over every interpretation of the function inside `h`, exactly the
        functions into [-bound, bound], so the rule's range fact needs no axiom."""
        if bound is None:
            return h
        top = self.const(bound)
        return zf.If(zf.fpLEQ(z3.fpAbs(h), top), h, top)

    def binary(self, fname: str, a, b):
        if fname not in special.BINARY_UF:
            raise Unsupported(f"float function {fname}")
        f = self._uf(fname, 2)
        general = zf.If(zf.Or(zf.fpIsNaN(a), zf.fpIsNaN(b)), self.nan(), f(a, b))
        if fname == "pow":
            one = self.const(1.0)
            return zf.If(zf.Or(zf.fpIsZero(b), a == one), one, general)
        if fname == "log_add_exp":
            return zf.If(zf.Or(zf.fpIsNaN(a), zf.fpIsNaN(b)), self.nan(),
                         zf.If(zf.fpLT(a, b), f(a, b), f(b, a)))
        return general


class IEEEModel(FloatModel):
    name = "ieee"

    def _float_domain(self, dtype: str) -> ScalarDomain:
        return IEEEFloats(self, dtype)

    def cast(self, x, src: str, dst: str):
        if src == dst:
            return x
        s, d = self.domain(src), self.domain(dst)
        if isinstance(s, IEEEFloats) and isinstance(d, IEEEFloats):
            return z3.fpToFP(RNE, x, d.sort)
        if isinstance(d, BoolDomain):
            return s.truthy(x)
        if isinstance(s, BoolDomain):
            return zf.If(x, d.one(), d.zero())
        if isinstance(s, IntDomain) and isinstance(d, IntDomain):
            return _int_resize(x, s, d)
        if isinstance(s, IntDomain) and isinstance(d, IEEEFloats):
            return z3.fpSignedToFP(RNE, x, d.sort) if s.signed else z3.fpUnsignedToFP(RNE, x, d.sort)
        if isinstance(s, IEEEFloats) and isinstance(d, IntDomain):
            # C 6.3.1.4 / LLVM fptosi, fptoui: truncation toward zero; NaN, ±inf and values
            # whose truncation does not fit are UB (the TVM VM gives INT_MIN or garbage there,
            # numpy gives other garbage: measured, see docs/float-models.md). The bounds are
            # powers of two, exact in every format (or +inf when they overflow float16, which
            # is right: every finite float16 then fits).
            t = z3.fpRoundToIntegral(z3.RTZ(), x)
            lo = -(1 << (d.bits - 1)) if d.signed else 0
            hi = 1 << (d.bits - 1) if d.signed else 1 << d.bits     # exclusive
            in_range = zf.And(zf.Not(zf.fpIsNaN(x)), zf.Not(zf.fpIsInf(x)),
                              zf.fpGEQ(t, _int_bound(lo, s.sort)), zf.fpLT(t, _int_bound(hi, s.sort)))
            self.on_ub(zf.Not(in_range), f"astype {src}->{dst} of NaN, inf or an out-of-range value")
            return (z3.fpToSBV(z3.RTZ(), x, d.sort) if d.signed else z3.fpToUBV(z3.RTZ(), x, d.sort))
        raise Unsupported(f"astype {src} -> {dst}")

    def decode(self, model: z3.ModelRef, terms: Sequence[tuple[z3.ExprRef, str]]) -> list[Any]:
        out: list[Any] = []
        for term, dtype in terms:
            v = model_value(model, term)
            if v is None:
                out.append(None)
            elif is_bool(dtype):
                out.append(z3.is_true(v))
            elif is_int(dtype):
                bits, signed = INT_FORMATS[dtype]
                iv = v.as_long()
                out.append(iv - (1 << bits) if signed and iv >> (bits - 1) else iv)
            else:
                out.append(fp_value(v, dtype))
        return out


def _int_bound(value: int, sort: z3.FPSortRef) -> z3.ExprRef:
    """±2^n (or 0) as a float of `sort`: exact, or ±inf beyond the format's range."""
    if value == 0:
        return z3.fpPlusZero(sort)
    fmt_max = {(5, 11): 65504.0}.get((sort.ebits(), sort.sbits()))
    if fmt_max is not None and abs(value) > fmt_max:
        return z3.fpPlusInfinity(sort) if value > 0 else z3.fpMinusInfinity(sort)
    return z3.FPVal(float(value), None, sort)


def fp_value(v: z3.ExprRef, dtype: str) -> float:
    """A z3 floating-point numeral as a Python float (exact: via its bit pattern)."""
    if z3.is_fp_value(v):
        if v.isNaN():
            return math.nan
        if v.isInf():
            return -math.inf if v.isNegative() else math.inf
        if v.isZero():
            return -0.0 if v.isNegative() else 0.0
    bits = z3.simplify(z3.fpToIEEEBV(v)).as_long()
    width = {"float16": 16, "bfloat16": 16, "float32": 32, "float64": 64}[dtype]
    raw = np.array([bits], dtype=f"uint{width}")
    return float(raw.view(numpy_dtype(dtype))[0])
