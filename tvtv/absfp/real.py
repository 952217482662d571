"""The real-arithmetic float model (`--fp real`): correct up to rounding only.

A float is a value of the datatype `RealFloat = fin(val: Real) | pinf | ninf | nan`: finite
floats are *exact* real numbers, with IEEE's infinities and NaN kept as in the abstract model
(NaN propagates, inf - inf and 0 * inf are NaN, x / 0 is ±inf and 0 / 0 NaN). +, -, *, / are
exact real operations on finite values, every float dtype is the same set of reals (a cast
between float dtypes is the identity: no rounding, no overflow), and sums are exact, so they
are associative and commutative. A proof in this model says the rewrite is an identity of
real arithmetic: it is *correct up to rounding*, not bit-exact (the verdict says so).

Restrictions (documented in docs/float-models.md): there is one zero (signed zeros are not
distinguished: x / 0 takes the sign of x, as if the zero were +0); constants are the exact
values of the dtype's floats (`float32(0.1)`, not 1/10), so FoldConstant's rounded folds are
refuted unless the fold is exact; transcendental functions are uninterpreted functions of the
real value with the special values of `special.py`; floor, ceil and trunc are exact.
"""
from __future__ import annotations

import math
from fractions import Fraction
from typing import Any, Sequence

import z3

from tvtv import z3fast as zf
from tvtv.absfp import special
from tvtv.absfp.abstract import _int_resize, round_to
from tvtv.absfp.dtypes import INT_FORMATS, is_bool, is_int
from tvtv.absfp.integers import BoolDomain, IntDomain
from tvtv.absfp.interface import FloatModel, ScalarDomain
from tvtv.errors import Unsupported
from tvtv import z3context


def _make_sort() -> tuple[z3.DatatypeSortRef, Any]:
    dt = z3.Datatype("RealFloat")
    dt.declare("fin", ("val", z3.RealSort()))
    dt.declare("pinf")
    dt.declare("ninf")
    dt.declare("nan")
    return dt.create(), dt


RF = z3context.constant(__name__, "RF", lambda: _make_sort()[0])


def real_const(value: float) -> z3.ArithRef:
    """The exact rational value of a finite float."""
    f = Fraction(value)
    return z3.RealVal(f"{f.numerator}/{f.denominator}") if f.denominator != 1 else z3.RealVal(f.numerator)


# Functions whose value on (positive, for sqrt and rsqrt) finite reals is positive.
_POSITIVE = ("exp", "cosh", "sqrt", "rsqrt")


class RealFloats(ScalarDomain):
    """Floats of one dtype as extended reals."""

    def __init__(self, owner: "RealModel", dtype: str) -> None:
        self.owner = owner
        self.dtype = dtype
        self.sort = RF
        self._ufs: dict[str, z3.FuncDeclRef] = {}
        # 1 / s terms built by `div` (AST id -> (the term, s)): `mul` by one is `div` by s
        self._reciprocals: dict[int, tuple[z3.ExprRef, z3.ExprRef]] = {}
        self._one = self.const(1.0)

    # -- values ---------------------------------------------------------------------------------
    @property
    def finite_element(self) -> z3.FuncDeclRef | None:
        """`fin` when inputs are known finite (`RealModel.finite_inputs`): an input tensor is
        then built from reals (`Tensor.variable`), so every NaN/inf test on an input element
        simplifies away instead of being split on by the solver."""
        return RF.fin if self.owner.finite_inputs else None

    def fin(self, v: z3.ArithRef) -> z3.ExprRef:
        return RF.fin(v)

    def val(self, x: z3.ExprRef) -> z3.ArithRef:
        return RF.val(x)

    def is_fin(self, x):
        return RF.is_fin(x)

    def const(self, value: Any) -> z3.ExprRef:
        v = round_to(float(value), self.dtype)
        if math.isnan(v):
            return RF.nan
        if math.isinf(v):
            return RF.pinf if v > 0 else RF.ninf
        return RF.fin(real_const(v))

    def nan(self):
        return RF.nan

    def is_nan(self, x):
        return RF.is_nan(x)

    def is_inf(self, x):
        return zf.Or(RF.is_pinf(x), RF.is_ninf(x))

    def _zero(self, x):
        return zf.And(RF.is_fin(x), RF.val(x) == 0)

    def _positive(self, x):
        """x > 0 or x = +inf."""
        return zf.Or(RF.is_pinf(x), zf.And(RF.is_fin(x), RF.val(x) > 0))

    def _negative(self, x):
        return zf.Or(RF.is_ninf(x), zf.And(RF.is_fin(x), RF.val(x) < 0))

    # -- arithmetic -----------------------------------------------------------------------------
    def add(self, a, b):
        nan = zf.Or(RF.is_nan(a), RF.is_nan(b), zf.And(RF.is_pinf(a), RF.is_ninf(b)),
                    zf.And(RF.is_ninf(a), RF.is_pinf(b)))
        return zf.If(nan, RF.nan,
               zf.If(self.is_inf(a), a,
               zf.If(self.is_inf(b), b, RF.fin(RF.val(a) + RF.val(b)))))

    def sub(self, a, b):
        return self.add(a, self.neg(b))

    def _signed_inf(self, negative):
        return zf.If(negative, RF.ninf, RF.pinf)

    def mul(self, a, b):
        # d * (1 / s) is d / s in this model, special values included (d / 0 and d * +inf
        # are both ±inf or NaN at d = 0; d / ±inf and d * 0 are both 0, or NaN at d = ±inf;
        # for finite s ≠ 0 the reals d * (1/s) and d / s are equal): built as d / s, so a
        # legalization's x * rsqrt(v) meets a specification's x / sqrt(v) as one term
        for c, other in ((b, a), (a, b)):
            hit = self._reciprocals.get(c.get_id())
            if hit is not None and z3.eq(hit[0], c):
                return self.div(other, hit[1])
        return self._mul(a, b)

    def _mul(self, a, b):
        nan = zf.Or(RF.is_nan(a), RF.is_nan(b), zf.And(self.is_inf(a), self._zero(b)),
                    zf.And(self._zero(a), self.is_inf(b)))
        neg = self._negative(a) != self._negative(b)
        return zf.If(nan, RF.nan,
               zf.If(zf.Or(self.is_inf(a), self.is_inf(b)), self._signed_inf(neg),
                     RF.fin(RF.val(a) * RF.val(b))))

    def div(self, a, b):
        q = self._div(a, b)
        if z3.eq(a, self._one):
            self._reciprocals[q.get_id()] = (q, b)
        return q

    def _div(self, a, b):
        nan = zf.Or(RF.is_nan(a), RF.is_nan(b), zf.And(self.is_inf(a), self.is_inf(b)),
                    zf.And(self._zero(a), self._zero(b)))
        neg = self._negative(a) != self._negative(b)
        return zf.If(nan, RF.nan,
               zf.If(self.is_inf(a), self._signed_inf(neg),
               zf.If(self.is_inf(b), RF.fin(z3.RealVal(0)),
               zf.If(self._zero(b), self._signed_inf(self._negative(a)),   # the zero is +0
                     RF.fin(RF.val(a) / RF.val(b))))))

    # -- reductions (`tvtv.absfp.reductions.interpret`) ------------------------------------------
    # A sum or product is the left fold of `add` or `_mul` (no overflow, no rounding, so every
    # order gives it), stated flat: one case split on the terms' kinds, not one per step.
    exact_reductions = True

    def sum(self, terms: Sequence[z3.ExprRef]) -> z3.ExprRef:
        """NaN when a term is NaN or +inf meets -inf; else ±inf when a term is; else the
        exact real sum."""
        any_p = zf.Or(*[RF.is_pinf(t) for t in terms])
        any_n = zf.Or(*[RF.is_ninf(t) for t in terms])
        nan = zf.Or(*[RF.is_nan(t) for t in terms], zf.And(any_p, any_n))
        return zf.If(nan, RF.nan, zf.If(any_p, RF.pinf, zf.If(any_n, RF.ninf,
                     RF.fin(z3.Sum([RF.val(t) for t in terms])))))

    def prod(self, terms: Sequence[z3.ExprRef]) -> z3.ExprRef:
        """NaN when a term is NaN or an infinity meets a zero (0 * inf); else ±inf when a
        term is infinite (negative for an odd number of negative terms); else the exact
        real product."""
        any_inf = zf.Or(*[self.is_inf(t) for t in terms])
        nan = zf.Or(*[RF.is_nan(t) for t in terms],
                    zf.And(any_inf, zf.Or(*[self._zero(t) for t in terms])))
        negative = z3.BoolVal(False)
        for t in terms:
            negative = z3.Xor(negative, self._negative(t))
        return zf.If(nan, RF.nan, zf.If(any_inf, self._signed_inf(negative),
                     RF.fin(z3.Product([RF.val(t) for t in terms]))))

    def neg(self, a):
        return zf.If(RF.is_fin(a), RF.fin(-RF.val(a)),
               zf.If(RF.is_pinf(a), RF.ninf, zf.If(RF.is_ninf(a), RF.pinf, RF.nan)))

    def abs(self, a):
        return zf.If(self._negative(a), self.neg(a), a)

    # -- comparisons ----------------------------------------------------------------------------
    def lt(self, a, b):
        both_fin = zf.And(RF.is_fin(a), RF.is_fin(b))
        return zf.Or(zf.And(both_fin, RF.val(a) < RF.val(b)),
                     zf.And(RF.is_ninf(a), zf.Not(RF.is_ninf(b)), zf.Not(RF.is_nan(b))),
                     zf.And(RF.is_pinf(b), zf.Not(RF.is_pinf(a)), zf.Not(RF.is_nan(a))))

    def eq(self, a, b):
        return zf.And(zf.Not(RF.is_nan(a)), a == b)

    def same(self, a, b):
        return a == b     # one NaN, one zero

    # -- functions -----------------------------------------------------------------------------
    def _uf(self, name: str, arity: int) -> z3.FuncDeclRef:
        if name not in self._ufs:
            self._ufs[name] = z3.Function(f"real_{name}", *([z3.RealSort()] * (arity + 1)))
        return self._ufs[name]

    def unary(self, fname: str, x):
        wider = self.owner.computed_wider(fname, x, self.dtype)
        if wider is not None:
            return wider
        if fname == "rsqrt":
            # rsqrt(x) = 1 / sqrt(x), Relax's definition, exactly: the special values follow
            # (rsqrt(+0) = 1/+0 = +inf, rsqrt(+inf) = 0, a negative x gives NaN), and a
            # legalization computing x * rsqrt(v) meets a specification's x / sqrt(v)
            return self.div(self.const(1.0), self.unary("sqrt", x))
        v = RF.val(x)
        if fname in ("floor", "ceil", "trunc"):
            fl = z3.ToReal(z3.ToInt(v))                     # floor, exactly
            ce = -z3.ToReal(z3.ToInt(-v))
            r = {"floor": fl, "ceil": ce, "trunc": zf.If(v >= 0, fl, ce)}[fname]
            return zf.If(RF.is_fin(x), RF.fin(r), x)
        rule = special.UNARY_RULES.get(fname)
        if rule is None:
            raise Unsupported(f"float function {fname}")
        f = self._uf(fname, 1)
        if rule.odd:
            general = RF.fin(zf.If(v < 0, -f(-v), f(v)))
        elif fname in _POSITIVE:
            # exp, cosh everywhere and sqrt, rsqrt of positive reals are positive (> 0, not
            # just ≥ 0): without it 1 / sqrt(v) could divide by zero in the model
            h = f(v)
            general = RF.fin(zf.If(h > 0, h, z3.RealVal(1)))
        elif rule.nonneg:
            h = f(v)
            general = RF.fin(zf.If(h < 0, -h, h))
        else:
            general = RF.fin(f(v))
        if rule.nan_below_zero:
            general = zf.If(v < 0, RF.nan, general)
        cases = {"nan": RF.is_nan(x), "+inf": RF.is_pinf(x), "-inf": RF.is_ninf(x),
                 "+0": self._zero(x), "+1": x == self.const(1.0), "-1": x == self.const(-1.0)}
        return self.with_specials(rule.specials, cases, x, general)

    def binary(self, fname: str, a, b):
        if fname not in special.BINARY_UF:
            raise Unsupported(f"float function {fname}")
        f = self._uf(fname, 2)
        general = zf.If(zf.Or(self.is_nan(a), self.is_nan(b), self.is_inf(a), self.is_inf(b)),
                        RF.nan, RF.fin(f(RF.val(a), RF.val(b))))
        if fname == "pow":
            one = self.const(1.0)
            return zf.If(zf.Or(self._zero(b), a == one), one, general)
        return general


class RealModel(FloatModel):
    """Floats as exact reals (plus ±inf and NaN); integers and bools exact as in every model."""

    name = "real"
    # inputs are finite by assumption (no-nan and no-inf): set by `tvtv.refinement._encode`.
    # Measured on layer_norm's lemma over 5x8x1x4 (groups of 4): 0.8 s instead of a 6 s timeout.
    finite_inputs = False

    def _float_domain(self, dtype: str) -> ScalarDomain:
        return RealFloats(self, dtype)

    def describe(self) -> str:
        return "real (correct up to rounding only)"

    def cast(self, x, src: str, dst: str):
        if src == dst:
            return x
        s, d = self.domain(src), self.domain(dst)
        if isinstance(s, RealFloats) and isinstance(d, RealFloats):
            return x               # no rounding, no overflow: the point of this model
        if isinstance(d, BoolDomain):
            return s.truthy(x)
        if isinstance(s, BoolDomain):
            return zf.If(x, d.one(), d.zero())
        if isinstance(s, IntDomain) and isinstance(d, IntDomain):
            return _int_resize(x, s, d)
        if isinstance(s, IntDomain) and isinstance(d, RealFloats):
            return RF.fin(z3.ToReal(z3.BV2Int(x, is_signed=s.signed)))
        if isinstance(s, RealFloats) and isinstance(d, IntDomain):
            # truncation toward zero; NaN, ±inf and out of range are UB (as in the IEEE model)
            v = RF.val(x)
            t = zf.If(v >= 0, z3.ToInt(v), -z3.ToInt(-v))
            lo = -(1 << (d.bits - 1)) if d.signed else 0
            hi = (1 << (d.bits - 1)) if d.signed else (1 << d.bits)
            self.on_ub(zf.Or(zf.Not(RF.is_fin(x)), t < lo, t >= hi),
                       f"astype {src}->{dst} of NaN, inf or an out-of-range value")
            return z3.Int2BV(t, d.bits)
        raise Unsupported(f"astype {src} -> {dst}")

    def decode(self, model: z3.ModelRef, terms: Sequence[tuple[z3.ExprRef, str]]) -> list[Any]:
        out: list[Any] = []
        for term, dtype in terms:
            v = model.eval(term, model_completion=True)
            if is_bool(dtype):
                out.append(z3.is_true(v) if z3.is_bool(v) and (z3.is_true(v) or z3.is_false(v)) else None)
            elif is_int(dtype):
                if not z3.is_bv_value(v):
                    out.append(None)
                    continue
                bits, signed = INT_FORMATS[dtype]
                iv = v.as_long()
                out.append(iv - (1 << bits) if signed and iv >> (bits - 1) else iv)
            else:
                out.append(_real_float(model, v))
        return out


def _real_float(model: z3.ModelRef, v: z3.ExprRef) -> float | None:
    for test, value in ((RF.is_nan, math.nan), (RF.is_pinf, math.inf), (RF.is_ninf, -math.inf)):
        if z3.is_true(model.eval(test(v), model_completion=True)):
            return value
    r = model.eval(RF.val(v), model_completion=True)
    if z3.is_rational_value(r):
        return float(Fraction(r.numerator_as_long(), r.denominator_as_long()))
    if z3.is_algebraic_value(r):
        return float(r.approx(20).as_fraction())
    return None
