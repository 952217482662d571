"""mlir-tv's abstract floating point (CAV'22, section 4), for every float dtype.

A float is a bit-vector `sign(1) ++ magnitude(k)`. Magnitude codes, from the top:
    2^k-1  NaN          2^k-2  inf          2^k-3  the dtype's largest finite value (FLT_MAX)
    0      zero         1 .. 2^k-4  ordinary magnitudes, ordered like the real magnitudes
Other constants get *symbolic* magnitudes: a fresh variable per distinct |value|, constrained
only by a precondition that orders them (and puts them strictly between 0 and FLT_MAX).
Comparisons, neg, abs, max and min are exact; +, *, /, exp, ... are uninterpreted functions
wrapped in `ite`s for the special cases IEEE fixes. Commutativity is built in as
`f(x, y) & f(y, x)` (bitwise and), which is symmetric by construction. On finite nonzero
operands the result's magnitude is kept where rounding puts it (never NaN; a same-sign sum
at least the larger magnitude, a different-sign one nonzero and at most it; a product with a
factor ≥ 1 at least the other factor, with one ≤ 1 at most it), so that, e.g., exp(x) - 1 is
never -0 for x < 0 (selu's legalization).

Soundness: every rule below holds for IEEE-754 round-to-nearest arithmetic, and an IEEE
counterexample that observes N distinct values maps to this domain when 2^k - 4 ≥ N
(`width.py` picks k from that count), so a proof here is a proof for IEEE floats.
A counterexample here may be spurious (the UFs allow more than IEEE does): it is reported
`unconfirmed` unless execution confirms it.

Casts between float dtypes (mlir-tv §4.1, "Supporting Floating Point Casts"). When a run uses
several float dtypes, they form a *chain* from narrow to wide (float16 or bfloat16 < float32 <
float64) and each wider dtype's magnitude is split into three parts, most significant first:
    limit bits (1)  |  truncated bits (the narrower dtype's magnitude width)  |  precision bits
The limit bit says the value overflows the narrower dtype (the cast gives ±inf); the truncated
bits are the narrower dtype's code of the value rounded toward zero; the precision bits are the
offset from it (0: the value is exactly representable). Narrowing keeps the truncated bits when
the precision bits are 0 and otherwise rounds up or down as an uninterpreted predicate of the
value says (up from the narrow FLT_MAX is overflow to inf); widening is exact: truncated bits =
the narrow magnitude, limit and precision bits 0. Casts that skip a link of the chain go through
it (double rounding is admitted: every result a direct IEEE cast gives is among the admitted
ones). Casts between dtypes not on one chain (float16 <-> bfloat16) are uninterpreted functions
of the magnitude that keep NaN, ±inf, ±0 and the sign. A wider constant is tied to the narrower
domain by a precondition (its truncated bits are the code of its value rounded toward zero in
the narrow dtype, and the rounding predicate gives IEEE's round-to-nearest-even answer), so
casts of constants are exact.
"""
from __future__ import annotations

import functools
import math
from typing import Any, Callable, Sequence

import numpy as np
import z3

from tvtv import z3fast as zf
from tvtv import z3raw
from tvtv.absfp import special
from tvtv.absfp.dtypes import FLOAT_FORMATS, INT_FORMATS, is_bool, is_float, is_int, numpy_dtype
from tvtv.absfp.integers import BoolDomain, IntDomain
from tvtv.absfp.interface import FloatModel, ScalarDomain, model_value
from tvtv.absfp.width import WiderDtypeNeeded
from tvtv.errors import Unsupported


def round_to(value: float, dtype: str) -> float:
    """`value` rounded to `dtype` (the constant a program of that dtype really holds)."""
    with np.errstate(over="ignore"):
        return float(np.asarray(value, dtype=numpy_dtype(dtype)))


def _clamp(m: z3.BitVecRef, low: z3.BitVecRef, high: z3.BitVecRef) -> z3.BitVecRef:
    """The magnitude code `m` where low ≤ m ≤ high, else `low`: over every interpretation of
    the function inside `m`, exactly the functions into [low, high] (no axiom needed)."""
    return zf.If(zf.And(zf.ULE(low, m), zf.ULE(m, high)), m, low)


# the most nodes a term `_unit_sign` simplifies may have (a constant is `mk(sign, magnitude)`:
# 3 nodes; negated, 5)
UNIT_TERM_NODES = 16


def _memoized(op: Callable[..., z3.ExprRef]) -> Callable[..., z3.ExprRef]:
    """`op` of a domain, built once per tuple of arguments (terms, and names such as a
    function's).

    The TIR interpreter evaluates the same element expression once per output element that
    reads it (a matmul's `A[i, k] - B[i, k]` once per column j): on a `zero` graph add ran
    1,160 times on 249 distinct operand pairs, mul 1,025 on 435, lt 992 on about 400. Each
    call builds z3py If-chains again for a term that is the same either way, since Z3
    hash-conses ASTs (the same function of the same operands is the same AST), so a hit
    changes no verdict. Keyed by AST ids: the entry keeps its arguments alive (Z3 reuses the
    id of a freed AST). Ids are per Z3 context, and so is a domain: its sort, constants and
    functions were made in one context, and terms of another cannot be mixed with them."""
    name = op.__name__

    @functools.wraps(op)
    def memoized(self: "AbstractFloats", *args: Any) -> z3.ExprRef:
        key = (name, *(x.get_id() if isinstance(x, z3.ExprRef) else x for x in args))
        hit = self._memo.get(key)
        if hit is not None:
            return hit[1]
        r = op(self, *args)
        self._memo[key] = (args, r)
        return r
    return memoized


class AbstractFloats(ScalarDomain):
    """The abstract domain of one float dtype."""

    def __init__(self, owner: "AbstractModel", dtype: str, k: int | None = None,
                 narrow: "AbstractFloats | None" = None) -> None:
        self.owner = owner
        self.dtype = dtype
        # The magnitude is `limit(1) | truncated(narrow.k) | precision(p)` when `narrow` is set.
        self.narrow = narrow
        self.k = k if k is not None else owner.mag_bits
        self.p = self.k - 1 - narrow.k if narrow is not None else 0
        self.sort = z3.BitVecSort(self.k + 1)
        self.NAN = (1 << self.k) - 1
        self.INF = (1 << self.k) - 2
        self.MAX = (1 << self.k) - 3
        self.max_value = FLOAT_FORMATS[dtype].max_value
        self.const_mags: dict[float, z3.ExprRef] = {}   # |value| -> symbolic magnitude
        self._ufs: dict[str, z3.FuncDeclRef] = {}
        # (op, argument ids or names) -> (the arguments, result): see `_memoized`
        self._memo: dict[tuple, tuple[tuple, z3.ExprRef]] = {}
        self._consts: dict[str, z3.ExprRef] = {}   # float.hex(value) -> `const(value)`
        # magnitude codes and signs as numerals, made once (z3.BitVecVal costs 13 µs a call)
        self._mag_numerals: dict[int, z3.BitVecNumRef] = {}
        self._sign_numerals = (z3.BitVecVal(0, 1), z3.BitVecVal(1, 1))

    # -- parts ---------------------------------------------------------------------------------
    def sign(self, x):
        return zf.Extract(self.k, self.k, x)

    def mag(self, x):
        return zf.Extract(self.k - 1, 0, x)

    def code(self, m: int) -> z3.BitVecNumRef:
        """The magnitude code `m` as a numeral."""
        term = self._mag_numerals.get(m)
        if term is None:
            term = self._mag_numerals[m] = z3.BitVecVal(m, self.k)
        return term

    def _mag_is(self, m, code: int) -> z3.BoolRef:
        """`m == code` for a magnitude term `m`, as z3py builds it."""
        return zf.EqNumeral(m, self.code(code))

    def mk(self, sign, mag):
        if isinstance(sign, int):
            sign = self._sign_numerals[sign]
        if isinstance(mag, int):
            mag = self.code(mag)
        return zf.Concat(sign, mag)

    def negative(self, x):
        return zf.EqNumeral(self.sign(x), self._sign_numerals[1])

    def is_nan(self, x):
        return self._mag_is(self.mag(x), self.NAN)

    def is_inf(self, x):
        return self._mag_is(self.mag(x), self.INF)

    def is_zero(self, x):
        return self._mag_is(self.mag(x), 0)

    def nan(self):
        return self.mk(0, self.NAN)

    def inf(self, sign: int = 0):
        return self.mk(sign, self.INF)

    def _uf(self, name: str, *sorts: z3.SortRef) -> z3.FuncDeclRef:
        key = f"{name}_{self.dtype}"
        if key not in self._ufs:
            self._ufs[key] = z3.Function(f"absfp_{key}", *sorts)
            self.owner.used_ufs.add(name)
        return self._ufs[key]

    # -- constants -------------------------------------------------------------------------------
    def const_mag(self, magnitude: float) -> z3.ExprRef:
        """The magnitude code of a positive finite non-max constant (symbolic, ordered)."""
        if magnitude not in self.const_mags:
            self.const_mags[magnitude] = z3.BitVec(f"absfp_{self.dtype}_c{magnitude!r}", self.k)
        return self.const_mags[magnitude]

    def const(self, value: Any) -> z3.ExprRef:
        """The code of the constant `value`, rounded to the dtype; built once per value
        (an encoding asks for 0.0 and the like thousands of times, and rounding through numpy
        costs more than the lookup)."""
        key = float(value).hex()   # NaN too is one key
        term = self._consts.get(key)
        if term is None:
            term = self._consts[key] = self._const(value)
        return term

    def _const(self, value: Any) -> z3.ExprRef:
        v = round_to(float(value), self.dtype)
        if math.isnan(v):
            return self.nan()
        s = 1 if math.copysign(1.0, v) < 0 else 0
        a = abs(v)
        if math.isinf(a):
            return self.inf(s)
        if a == 0.0:
            return self.mk(s, 0)
        if a == self.max_value:
            return self.mk(s, self.MAX)
        return self.mk(s, self.const_mag(a))

    def constant_atoms(self) -> list[z3.BoolRef]:
        """Atoms `precondition` makes false: a constant's magnitude code is never 0, inf's or
        NaN's (0 < m < MAX < INF < NAN), so its "is zero", "is inf" and "is NaN" tests are."""
        return [p for m in self.const_mags.values() for p in (m == 0, m == self.INF, m == self.NAN)]

    def precondition(self) -> list[z3.BoolRef]:
        mags = sorted(self.const_mags.items())
        facts = []
        for _, m in mags:
            facts += [z3.UGT(m, 0), z3.ULT(m, self.MAX)]
        for (_, m1), (_, m2) in zip(mags, mags[1:]):
            facts.append(z3.ULT(m1, m2))
        return facts

    # -- exact operations ----------------------------------------------------------------------
    def neg(self, x):
        return x ^ z3.BitVecVal(1 << self.k, self.k + 1)

    def abs(self, x):
        return self.mk(0, self.mag(x))

    def eq(self, a, b):
        both_zero = zf.And(self.is_zero(a), self.is_zero(b))
        return zf.And(zf.Not(self.is_nan(a)), zf.Not(self.is_nan(b)), zf.Or(a == b, both_zero))

    @_memoized
    def lt(self, a, b):
        sa, sb, ma, mb = self.negative(a), self.negative(b), self.mag(a), self.mag(b)
        both_zero = zf.And(ma == 0, mb == 0)
        ordered = zf.Or(
            zf.And(sa, zf.Not(sb), zf.Not(both_zero)),
            zf.And(zf.Not(sa), zf.Not(sb), z3.ULT(ma, mb)),
            zf.And(sa, sb, z3.UGT(ma, mb)))
        return zf.And(zf.Not(self.is_nan(a)), zf.Not(self.is_nan(b)), ordered)

    def same(self, a, b):
        return zf.Or(zf.And(self.is_nan(a), self.is_nan(b)), a == b)

    def is_signed_inf(self, a, sign: int):
        """`a` is -inf (sign -1) or +inf (sign 1): exactly that code. (The interface's
        `is_inf(a) and a < 0` means the same, through a comparison with zero that costs a
        dozen terms per element in a max or min reduction's every term.)"""
        return a == self.inf(1 if sign < 0 else 0)

    # -- arithmetic ----------------------------------------------------------------------------
    @_memoized
    def add(self, a, b):
        sa, sb, ma, mb = self.sign(a), self.sign(b), self.mag(a), self.mag(b)
        nan = zf.Or(self.is_nan(a), self.is_nan(b),
                    zf.And(self.is_inf(a), self.is_inf(b), zf.Ne(sa, sb)))
        f = self._uf("add", self.sort, self.sort, self.sort)
        r = f(a, b) & f(b, a)
        # IEEE 754 §6.3: a sum of two nonzero same-sign values keeps the sign; with different
        # signs the larger magnitude decides; x + (-x) = +0 in round-to-nearest.
        same_sign = zf.Eq(sa, sb)
        sign = zf.If(same_sign, sa, zf.If(zf.UGT(ma, mb), sa, sb))
        a_zero, b_zero = self._mag_is(ma, 0), self._mag_is(mb, 0)
        return zf.If(nan, self.nan(),
               zf.If(self.is_inf(a), a,
               zf.If(self.is_inf(b), b,
               zf.If(zf.And(a_zero, b_zero), self.mk(sa & sb, 0),   # -0 + -0 = -0, else +0
               zf.If(a_zero, b,
               zf.If(b_zero, a,
               zf.If(zf.And(zf.Eq(ma, mb), zf.Ne(sa, sb)), self.mk(0, 0),
                     self.mk(sign, self._summed(ma, mb, same_sign, self.mag(r))))))))))

    def _not_nan(self, m):
        """The magnitude `m` of a +, * or / of finite nonzero operands, with the NaN code read
        as inf: IEEE 754 §7.2 gives NaN only for invalid operations (inf - inf, 0 * inf, 0 / 0,
        inf / inf) and NaN operands, which the callers decide before, while overflow to inf
        is possible. Over every interpretation of the function inside `m`, exactly the
        functions into the other codes."""
        return zf.If(self._mag_is(m, self.NAN), self.code(self.INF), m)

    def _summed(self, ma, mb, same_sign, m):
        """The magnitude `m` of a sum of finite nonzero values of magnitudes `ma`, `mb` that
        do not cancel exactly, kept where rounding puts it: with equal signs at least the
        larger magnitude (inf on overflow), with different signs at most the larger and never
        zero (IEEE 754 with subnormals: x + y = 0 only for y = -x); never NaN. Values outside
        are read as the lower end: exactly the functions into the range."""
        big = zf.If(zf.UGE(ma, mb), ma, mb)
        low = zf.If(same_sign, big, self.code(1))
        high = zf.If(same_sign, self.code(self.INF), big)
        return _clamp(m, low, high)

    def _scaled(self, ma, mb, m):
        """The magnitude `m` of a product of finite nonzero magnitudes `ma`, `mb` (neither 1),
        kept where rounding puts it: |a·b| is at least |a| when |b| ≥ 1 and at most |a| when
        |b| ≤ 1 (rounding is monotone and |a| is a float), and likewise with a and b
        exchanged; never NaN (`_not_nan`), and inf only when both are above 1. Values outside
        are read as the lower end: exactly the functions into the range."""
        one = self.const_mag(1.0)
        zero, inf = self.code(0), self.code(self.INF)

        def umax(p, q):
            return zf.If(zf.UGE(p, q), p, q)

        def umin(p, q):
            return zf.If(zf.ULE(p, q), p, q)
        low = umax(zf.If(zf.UGE(mb, one), ma, zero), zf.If(zf.UGE(ma, one), mb, zero))
        high = umin(zf.If(zf.ULE(mb, one), ma, inf), zf.If(zf.ULE(ma, one), mb, inf))
        return _clamp(m, low, high)

    def sub(self, a, b):
        # IEEE 754: x - y is x + (-y), NaN operands included.
        if z3.eq(a, b):
            return self.self_difference(a)
        split = self.difference_from_guarded(a, b)
        if split is not None:
            return split
        return self.add(a, self.neg(b))

    def _unit_sign(self, x) -> int | None:
        """0 or 1 when x is the constant +1.0 or -1.0, else None. Only small terms are
        simplified: a constant's term is a few nodes (`mk`, perhaps negated), and simplifying
        the sign of a large term walks all of it on every multiplication (measured: 16 of a
        zero graph's 42 s in a sum of products)."""
        if not z3raw.at_most(x, UNIT_TERM_NODES):
            return None
        sign, mag = z3.simplify(self.sign(x)), z3.simplify(self.mag(x))
        if z3.is_bv_value(sign) and z3.eq(mag, self.const_mag(1.0)):
            return sign.as_long()
        return None

    @_memoized
    def mul(self, a, b):
        # IEEE 754: x * 1 = x and x * -1 = -x exactly (a NaN stays a NaN: every NaN code is
        # the one NaN here). As terms, so that TIR's `x * -1.0` is the Relax `negative(x)`.
        for x, unit in ((a, b), (b, a)):
            s_unit = self._unit_sign(unit)
            if s_unit is not None:
                return self.neg(x) if s_unit else x
        ma, mb = self.mag(a), self.mag(b)
        s = self.sign(a) ^ self.sign(b)
        one = self.const_mag(1.0)
        msort = ma.sort()
        f = self._uf("mul", msort, msort, msort)
        a_zero, b_zero = self._mag_is(ma, 0), self._mag_is(mb, 0)
        nan = zf.Or(self.is_nan(a), self.is_nan(b),
                    zf.And(self.is_inf(a), b_zero), zf.And(a_zero, self.is_inf(b)))
        return zf.If(nan, self.nan(),
               zf.If(zf.Or(self.is_inf(a), self.is_inf(b)), self.mk(s, self.INF),
               zf.If(zf.Or(a_zero, b_zero), self.mk(s, 0),
               zf.If(zf.Eq(ma, one), self.mk(s, mb),
               zf.If(zf.Eq(mb, one), self.mk(s, ma),
                     self.mk(s, self._scaled(ma, mb, f(ma, mb) & f(mb, ma))))))))

    @_memoized
    def div(self, a, b):
        ma, mb = self.mag(a), self.mag(b)
        s = self.sign(a) ^ self.sign(b)
        one = self.const_mag(1.0)
        f = self._uf("div", ma.sort(), ma.sort(), ma.sort())
        nan = zf.Or(self.is_nan(a), self.is_nan(b), zf.And(ma == 0, mb == 0),
                    zf.And(self.is_inf(a), self.is_inf(b)))
        return zf.If(nan, self.nan(),
               zf.If(self.is_inf(a), self.mk(s, self.INF),
               zf.If(self.is_inf(b), self.mk(s, 0),
               zf.If(ma == 0, self.mk(s, 0),
               zf.If(mb == 0, self.mk(s, self.INF),
               zf.If(mb == one, self.mk(s, ma),
               zf.If(ma == mb, self.mk(s, one),
                     self.mk(s, self._not_nan(f(ma, mb))))))))))

    # -- functions from the special-value table -------------------------------------------------
    @_memoized
    def unary(self, fname: str, x):
        wider = self.owner.computed_wider(fname, x, self.dtype)
        if wider is not None:
            return wider
        rule = special.UNARY_RULES.get(fname)
        if rule is None:
            raise Unsupported(f"float function {fname}")
        uf = self._uf(fname, self.sort, self.sort)
        top = special.bound(rule, self.dtype)
        if special.finite(rule, self.dtype):
            # NaN and inf codes read as the largest finite one: exactly the functions into
            # the finite codes
            def f(arg):
                v = uf(arg)
                m = self.mag(v)
                return self.mk(self.sign(v), zf.If(
                    zf.Or(self._mag_is(m, self.NAN), self._mag_is(m, self.INF)),
                    self.code(self.MAX), m))
        elif special.nan_free(rule, self.dtype):
            # a NaN code read as inf: exactly the functions into the other codes
            def f(arg):
                v = uf(arg)
                return self.mk(self.sign(v), self._not_nan(self.mag(v)))
        else:
            f = uf
        if rule.odd:
            # f(-x) = -f(x); the sign of f(|x|) itself is free (sin(6.1) < 0).
            h = self._bounded(f(self.abs(x)), top)
            general = zf.If(self.negative(x), self.neg(h), h)
        elif rule.nonneg:
            general = self._bounded(self.mk(0, self.mag(f(x))), top)
        else:
            general = self._bounded(f(x), top)
        pos, neg = special.sign_ranges(rule, self.dtype)
        if pos is not None or neg is not None:
            # x is ordinary here (the specials decide ±0), so its sign splits the cases
            general = zf.If(self.negative(x), self._within(general, neg),
                            self._within(general, pos))
        if rule.nan_below_zero:
            general = zf.If(self.negative(x), self.nan(), general)
        cases = {
            "nan": self.is_nan(x),
            "+inf": x == self.inf(0), "-inf": x == self.inf(1),
            "+0": x == self.mk(0, 0), "-0": x == self.mk(1, 0),
        }
        if "+1" in rule.specials or "-1" in rule.specials:
            one = self.const_mag(1.0)
            cases["+1"] = x == self.mk(0, one)
            cases["-1"] = x == self.mk(1, one)
        return self.with_specials(rule.specials, cases, x, general)

    def _range_mag(self, value: float) -> z3.ExprRef:
        """The magnitude code of a range end: 0, inf, or an ordered constant's."""
        if value == 0:
            return z3.BitVecVal(0, self.k)
        if math.isinf(value):
            return z3.BitVecVal(self.INF, self.k)
        return self.const_mag(value)

    def _within(self, h, rng: tuple[float, float] | None):
        """`h` where it lies in [low, high] (0 ≤ low: non-negative, NaN excluded), else
        +low: over every interpretation of the function inside `h`, exactly the functions
        into the range."""
        if rng is None:
            return h
        assert rng[0] >= 0, "a range of non-negative values"
        low, high, m = self._range_mag(rng[0]), self._range_mag(rng[1]), self.mag(h)
        inside = zf.And(zf.Or(self.sign(h) == 0, m == 0), z3.ULE(low, m), z3.ULE(m, high))
        return zf.If(inside, self.mk(0, m), self.mk(0, low))

    def _bounded(self, h, bound: float | None):
        """`h` with a magnitude above `bound`'s (NaN and inf included) replaced by `bound`'s,
        sign kept (`h` itself when there is no bound). Over every interpretation of the
        function inside `h` these are exactly the functions into [-bound, bound]: the rule's
        range fact without an axiom."""
        if bound is None:
            return h
        top = self.const_mag(bound)
        m = self.mag(h)
        return self.mk(self.sign(h), zf.If(z3.ULE(m, top), m, top))

    states_ranges = True

    def bounded(self, a, bound: float, nan: bool = False):
        """`a` with a magnitude above `bound`'s (inf, and NaN unless `nan`) replaced by
        `bound`'s, sign kept: for a value a TIR range proof (`tvtv.encode.tir.ranges`) puts
        in [-bound, bound] (or NaN), the uninterpreted +, *, / inside `a` then give only
        such values."""
        if math.isinf(bound) or math.isnan(bound):
            return a
        m = self.mag(a)
        top = self.code(0) if bound == 0 else (
            self.code(self.MAX) if bound >= self.max_value else self.const_mag(bound))
        clamped = zf.If(z3.ULE(m, top), m, top)
        if nan:
            clamped = zf.If(self._mag_is(m, self.NAN), m, clamped)
        return self.mk(self.sign(a), clamped)

    @_memoized
    def binary(self, fname: str, a, b):
        if fname not in special.BINARY_UF:
            raise Unsupported(f"float function {fname}")
        f = self._uf(fname, self.sort, self.sort, self.sort)
        general = zf.If(zf.Or(self.is_nan(a), self.is_nan(b)), self.nan(), f(a, b))
        if fname == "pow":
            # C99 F.9.4.4: pow(x, ±0) = 1 for any x, pow(+1, y) = 1 for any y, NaNs included.
            one = self.const(1.0)
            return zf.If(zf.Or(self.is_zero(b), a == one), one, general)
        if fname == "log_add_exp":
            g = self._uf(fname + "_c", self.sort, self.sort, self.sort)
            return zf.If(zf.Or(self.is_nan(a), self.is_nan(b)), self.nan(), g(a, b) & g(b, a))
        return general


class AbstractModel(FloatModel):
    """The abstract float model of a run. `mag_bits` is the magnitude width k of the narrowest
    float dtype; `float_dtypes` (the float dtypes the programs use) decides the cast chain and
    the wider dtypes' split widths. Without it every dtype has width k and float casts are
    uninterpreted functions (the paper's coarse level). `precise_casts=False` asks for that
    coarse level even when a chain exists."""

    name = "abstract"

    def __init__(self, mag_bits: int = 16, float_dtypes: Sequence[str] = (),
                 precise_casts: bool = True) -> None:
        super().__init__()
        if not 3 <= mag_bits <= 62:
            raise ValueError("magnitude width must be in 3..62")
        self.mag_bits = mag_bits
        self.used_ufs: set[str] = set()
        self._casts: dict[tuple[str, str], z3.FuncDeclRef] = {}
        self.chain: list[str] = cast_chain(float_dtypes) if precise_casts else []
        # the dtypes a chain is asked for (none: every cast uninterpreted, as without a chain)
        self._chain_dtypes = frozenset(float_dtypes) if precise_casts else frozenset()

    def computed_wider(self, fname: str, x: z3.ExprRef, dtype: str) -> z3.ExprRef | None:
        """As the float models' (`FloatModel.computed_wider`); where the model was made for
        a cast chain of the programs' dtypes and the function is computed in a dtype not
        among them, that dtype is asked for (`WiderDtypeNeeded`)."""
        wide = special.COMPUTED_IN.get((fname, dtype))
        if wide is not None and self._chain_dtypes and wide not in self._chain_dtypes:
            raise WiderDtypeNeeded(wide)
        return super().computed_wider(fname, x, dtype)

    def width(self, dtype: str) -> int:
        """Magnitude bits of `dtype`: k for the chain's first link, each later link adds a
        limit bit, the previous link's width (truncated bits) and k precision bits."""
        if dtype not in self.chain:
            return self.mag_bits
        return self.mag_bits + self.chain.index(dtype) * (1 + self.mag_bits)

    def _float_domain(self, dtype: str) -> ScalarDomain:
        narrow = None
        if dtype in self.chain and self.chain.index(dtype) > 0:
            narrow = self.domain(self.chain[self.chain.index(dtype) - 1])
        return AbstractFloats(self, dtype, self.width(dtype), narrow)  # type: ignore[arg-type]

    def describe(self) -> str:
        widths = ", ".join(f"{d} {self.width(d)}" for d in self.chain)
        return f"abstract (magnitude bits {self.mag_bits}" + (f"; casts split: {widths})" if len(self.chain) > 1 else ")")

    def false_atoms(self) -> list[z3.BoolRef]:
        return [p for d in self._domains.values() if isinstance(d, AbstractFloats)
                for p in d.constant_atoms()]

    def preconditions(self) -> list[z3.BoolRef]:
        facts: list[z3.BoolRef] = []
        # Wider links first: tying a wide constant to the narrow domain may add narrow constants.
        floats = [d for d in self._domains.values() if isinstance(d, AbstractFloats)]
        floats.sort(key=lambda d: -self.chain.index(d.dtype) if d.dtype in self.chain else 1)
        for d in floats:
            if d.narrow is not None:
                facts += _truncation_precondition(self, d)
        for d in floats:
            facts += d.precondition()
        return facts

    # -- casts ---------------------------------------------------------------------------------
    def _cast_uf(self, src: str, dst: str, dom_sort: z3.SortRef, rng: z3.SortRef, kind: str = "cast"):
        if (src, dst, kind) not in self._casts:
            self._casts[(src, dst, kind)] = z3.Function(f"absfp_{kind}_{src}_{dst}", dom_sort, rng)
            self.used_ufs.add(kind)
        return self._casts[(src, dst, kind)]

    def cast(self, x, src: str, dst: str):
        if src == dst:
            return x
        s, d = self.domain(src), self.domain(dst)
        if isinstance(s, AbstractFloats) and isinstance(d, AbstractFloats):
            return self._float_cast(x, s, d)
        if isinstance(d, BoolDomain):
            return s.truthy(x)          # x != 0: NaN is True, ±0 False (numpy)
        if isinstance(s, BoolDomain):
            return zf.If(x, d.one(), d.zero())
        if isinstance(s, IntDomain) and isinstance(d, IntDomain):
            return _int_resize(x, s, d)
        if isinstance(s, IntDomain) and isinstance(d, AbstractFloats):
            # Exact on 0 (+0) and on the sign; the magnitude is a function of the integer,
            # never 0 or NaN for a nonzero integer (it may overflow to inf: 70000 -> float16).
            g = self._cast_uf(src, dst, s.sort, d.sort)
            sign = zf.If(s.lt(x, s.zero()), z3.BitVecVal(1, 1), z3.BitVecVal(0, 1))
            m = d.mag(g(x))
            m = zf.If(m == 0, z3.BitVecVal(1, d.k), zf.If(m == d.NAN, z3.BitVecVal(d.INF, d.k), m))
            return zf.If(x == 0, d.mk(0, 0), d.mk(sign, m))
        if isinstance(s, AbstractFloats) and isinstance(d, IntDomain):
            # C 6.3.1.4 / LLVM fptosi: NaN, ±inf and values whose truncation does not fit the
            # integer type are UB (the TVM VM returns INT_MIN or garbage there: measured).
            # The abstract magnitude does not know the range: "out of range" is an
            # uninterpreted predicate, false at ±0. Truncation of ±0 is 0.
            oor = self._cast_uf(src, dst, s.sort, z3.BoolSort(), "cast_out_of_range")
            g = self._cast_uf(src, dst, s.sort, d.sort)
            self.on_ub(zf.Or(s.is_nan(x), s.is_inf(x), zf.And(s.mag(x) != 0, oor(x))),
                       f"astype {src}->{dst} of NaN, inf or an out-of-range value")
            return zf.If(s.mag(x) == 0, d.zero(), g(x))
        raise Unsupported(f"astype {src} -> {dst}")

    def _float_cast(self, x, s: "AbstractFloats", d: "AbstractFloats"):
        if s.dtype in self.chain and d.dtype in self.chain:
            i, j = self.chain.index(s.dtype), self.chain.index(d.dtype)
            step = 1 if j > i else -1
            for k in range(i, j, step):
                a, b = self.domain(self.chain[k]), self.domain(self.chain[k + step])
                x = self._widen(x, a, b) if step > 0 else self._narrow(x, a, b)  # type: ignore[arg-type]
            return x
        # Not on one chain: IEEE conversion keeps NaN, ±inf, ±0 and the sign; the magnitude
        # is an uninterpreted function (the paper's fully abstract cast).
        g = self._cast_uf(s.dtype, d.dtype, s.mag(x).sort(), z3.BitVecSort(d.k))
        mx = s.mag(x)
        return zf.If(s.is_nan(x), d.nan(),
               zf.If(s.is_inf(x), d.mk(s.sign(x), d.INF),
               zf.If(mx == 0, d.mk(s.sign(x), 0), d.mk(s.sign(x), g(mx)))))

    def _widen(self, x, s: "AbstractFloats", d: "AbstractFloats"):
        """Exact: limit and precision bits 0, truncated bits = the narrow magnitude."""
        mag = z3.Concat(z3.BitVecVal(0, 1), s.mag(x), z3.BitVecVal(0, d.p))
        return zf.If(s.is_nan(x), d.nan(),
               zf.If(s.is_inf(x), d.mk(s.sign(x), d.INF), d.mk(s.sign(x), mag)))

    def _narrow(self, x, s: "AbstractFloats", d: "AbstractFloats"):
        """Round to nearest (IEEE 754 §4.3.1): overflow (limit bit) gives ±inf; exact values
        (precision bits 0) keep their truncated bits; others round down (toward zero) or up
        (the next narrow code; up from FLT_MAX is inf) as `round_up(value)` says. The sign
        is kept, so a tiny value that rounds to zero gives a zero of its sign."""
        lb, tb, pb = split(s, s.mag(x))
        up = self._cast_uf(s.dtype, d.dtype, s.mag(x).sort(), z3.BoolSort(), "round_up")
        rounded = zf.If(zf.And(pb != 0, up(s.mag(x))), tb + 1, tb)
        overflow = zf.Or(lb != 0, z3.UGE(tb, d.INF))
        mag = zf.If(overflow, z3.BitVecVal(d.INF, d.k), rounded)
        return zf.If(s.is_nan(x), d.nan(),
               zf.If(s.is_inf(x), d.mk(s.sign(x), d.INF), d.mk(s.sign(x), mag)))

    # -- counterexamples -------------------------------------------------------------------------
    def decode(self, model: z3.ModelRef, terms: Sequence[tuple[z3.ExprRef, str]]) -> list[Any]:
        """Concrete values for abstract ones. Magnitudes become reals that respect their
        order: constants keep their value, others are placed between their neighbours."""
        raw: list[Any] = []
        by_dtype: dict[str, set[int]] = {}
        for term, dtype in terms:
            v = model_value(model, term)
            if v is None:
                raw.append(None)
                continue
            if is_bool(dtype):
                raw.append(z3.is_true(v))
                continue
            iv = v.as_long()
            raw.append(iv)
            if is_float(dtype):
                d = self.domain(dtype)
                by_dtype.setdefault(dtype, set()).add(iv & ((1 << d.k) - 1))
        maps = {dt: self._magnitude_map(model, dt, mags) for dt, mags in by_dtype.items()}
        out: list[Any] = []
        for (term, dtype), iv in zip(terms, raw):
            if iv is None:
                out.append(None)
            elif is_bool(dtype):
                out.append(iv)
            elif is_int(dtype):
                bits, signed = INT_FORMATS[dtype]
                out.append(iv - (1 << bits) if signed and iv >> (bits - 1) else iv)
            else:
                d = self.domain(dtype)
                sign = -1.0 if iv >> d.k else 1.0
                out.append(math.copysign(maps[dtype][iv & ((1 << d.k) - 1)], sign))
        return out

    def _magnitude_map(self, model: z3.ModelRef, dtype: str, mags: set[int]) -> dict[int, float]:
        d: AbstractFloats = self.domain(dtype)  # type: ignore[assignment]
        anchors = {0: 0.0, d.MAX: d.max_value}
        for value, sym in d.const_mags.items():
            anchors[model.eval(sym, model_completion=True).as_long()] = value
        result = {d.NAN: math.nan, d.INF: math.inf, **anchors}
        free = sorted(m for m in mags if m not in result)
        keys = sorted(anchors)
        np_t = numpy_dtype(dtype).type
        for m in free:
            lo = max(k for k in keys if k < m)
            hi = min(k for k in keys if k > m)
            same_gap = [f for f in free if lo < f < hi]
            j = same_gap.index(m) + 1
            a, b = anchors[lo], anchors[hi]
            if b == d.max_value:
                val = (a if a >= 1 else 0.0) + j      # small, readable integers above a
                if val >= b:
                    val = a + (b - a) * j / (len(same_gap) + 1)
            else:
                val = a + (b - a) * j / (len(same_gap) + 1)
            result[m] = float(np_t(val))
        return result


def _int_resize(x, s: IntDomain, d: IntDomain):
    if d.bits == s.bits:
        return x
    if d.bits < s.bits:
        return z3.Extract(d.bits - 1, 0, x)
    return z3.SignExt(d.bits - s.bits, x) if s.signed else z3.ZeroExt(d.bits - s.bits, x)


# Order of float dtypes from narrow to wide; float16 and bfloat16 are both narrower than
# float32 but neither contains the other, so one chain takes only one of them (float16 first).
_RANK = {"float16": 0, "bfloat16": 0, "float32": 1, "float64": 2}


def cast_chain(float_dtypes: Sequence[str]) -> list[str]:
    """The chain of split dtypes for a run using `float_dtypes` (empty with fewer than two)."""
    present = sorted({d for d in float_dtypes if d in _RANK}, key=lambda d: (_RANK[d], d != "float16"))
    chain: list[str] = []
    for d in present:
        if not chain or _RANK[d] > _RANK[chain[-1]]:
            chain.append(d)
    return chain if len(chain) > 1 else []


def split(d: AbstractFloats, mag):
    """(limit, truncated, precision) bits of a magnitude of split dtype `d`."""
    assert d.narrow is not None
    return (z3.Extract(d.k - 1, d.k - 1, mag), z3.Extract(d.k - 2, d.p, mag),
            z3.Extract(d.p - 1, 0, mag) if d.p > 0 else z3.BitVecVal(0, 1))


def narrow_code(n: AbstractFloats, value: float):
    """The magnitude code of a non-negative finite `value` of the narrow dtype."""
    if value == 0.0:
        return z3.BitVecVal(0, n.k)
    if value == n.max_value:
        return z3.BitVecVal(n.MAX, n.k)
    return n.const_mag(value)


def _toward_zero(value: float, dtype: str) -> tuple[float, float]:
    """(value rounded to nearest even in dtype, value rounded toward zero in dtype); value > 0."""
    np_t = numpy_dtype(dtype).type
    with np.errstate(over="ignore"):
        r = np_t(value)
    if float(r) <= value:
        return float(r), float(r)
    return float(r), float(np.nextafter(r, np_t(0)))


def _truncation_precondition(model: AbstractModel, d: AbstractFloats) -> list[z3.BoolRef]:
    """Tie every constant of split dtype `d` to its narrower dtype (mlir-tv's truncate
    precondition): limit, truncated and precision bits as IEEE says, and the rounding
    predicate of the narrowing cast giving round-to-nearest-even."""
    n = d.narrow
    assert n is not None
    facts: list[z3.BoolRef] = []
    up = model._cast_uf(d.dtype, n.dtype, z3.BitVecSort(d.k), z3.BoolSort(), "round_up")
    for value, m in sorted(d.const_mags.items()):
        lb, tb, pb = split(d, m)
        nearest, floor = _toward_zero(value, n.dtype)
        if math.isinf(nearest):
            facts.append(lb != 0)
            continue
        facts += [lb == 0, tb == narrow_code(n, floor)]
        if nearest == value:
            facts.append(pb == 0)
        else:
            facts += [pb != 0, up(m) == z3.BoolVal(nearest > floor)]
            if nearest > floor:
                # floor and ceiling are neighbours in the narrow dtype; an order-preserving
                # map of the observed values can give neighbours consecutive codes.
                facts.append(narrow_code(n, nearest) == narrow_code(n, floor) + 1)
    return facts
