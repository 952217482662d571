"""A canonical form of Z3 terms for "is this the same term?" checks.

`z3.simplify` is not a normal form: the order in which it leaves the arguments of `or`, `and`
and `=` depends on how the term was built (measured: the Relax `exp` and its legalized loop
give `(or (= x +0) (= x -0))` on one side and `(or (= x -0) (= x +0))` on the other, for a
third of the elements). `canonical` sorts the arguments of commutative operators by their
structural hash after simplification, so such pairs become one term. It only decides which
output elements need a solver: a pair that is still different is proved or refuted by Z3.
Sorting the arguments of a commutative operator keeps the term's meaning, so two canonical
terms that are equal denote equal values.

Under premises that make input elements neither NaN nor infinite (`Canonicalizer`'s facts),
IEEE terms built from them by selections (`ite`, max, min, negation, absolute value) keep
those classes, and a few atoms about them are decided (`_FloatClasses`): TVM's max loops start
from -FLT_MAX where the Relax specification starts from -inf, and `max(-FLT_MAX, a)` is `a`
for any `a` that is not NaN or -inf (measured on a zero graph's max_pool2d with padding: 160
of 288 elements differed as terms, 0.2-1.2 s each in the solver). Sums and products of
bounded finite terms are finite too: the clamp after a legalized dequantize's
`float32(x - zp) * float32(scale)` folds (6 elements: 7-12 s in the solver, 0.1 s now).
"""
from __future__ import annotations

from typing import Any, Sequence

import z3
from z3 import z3core

from tvtv import z3fast as zf
from tvtv import z3raw

# Operators whose arguments may be reordered without changing the value.
COMMUTATIVE = {
    z3.Z3_OP_OR, z3.Z3_OP_AND, z3.Z3_OP_EQ, z3.Z3_OP_XOR, z3.Z3_OP_DISTINCT,
    z3.Z3_OP_ADD, z3.Z3_OP_MUL,
    z3.Z3_OP_BADD, z3.Z3_OP_BMUL, z3.Z3_OP_BAND, z3.Z3_OP_BOR, z3.Z3_OP_BXOR,
}

# simplify-and-replace rounds of a term under premises (folding a decided atom can expose
# another in the form `atom_facts` lists)
FACT_ROUNDS = 4


_ID, _HASH, _KIND = z3raw.ID, z3raw.HASH, z3raw.KIND
KIND = _KIND
_NUM_ARGS, _ARG, _DECL, _DECL_KIND = z3raw.NUM_ARGS, z3raw.ARG, z3raw.DECL, z3raw.DECL_KIND
_INC_REF, _DEC_REF = z3raw.INC_REF, z3raw.DEC_REF
_APP_KINDS = (z3.Z3_APP_AST,)        # numerals have no arguments: kept as they are
_SORT, _SORT_ID = z3raw.SORT, z3raw.SORT_ID

# IEEE classes a float term may take, as bits
NAN, PINF, NINF, FINITE = 1, 2, 4, 8
ANY = NAN | PINF | NINF | FINITE
# operators whose result's class is the union of some arguments' classes (ite: 1 and 2)
_SELECTING = {z3.Z3_OP_ITE, z3.Z3_OP_FPA_MAX, z3.Z3_OP_FPA_MIN}
_SPECIAL = {z3.Z3_OP_FPA_NAN: NAN, z3.Z3_OP_FPA_PLUS_INF: PINF, z3.Z3_OP_FPA_MINUS_INF: NINF,
            z3.Z3_OP_FPA_NUM: FINITE, z3.Z3_OP_FPA_PLUS_ZERO: FINITE, z3.Z3_OP_FPA_MINUS_ZERO: FINITE}


# rounded operations whose classes and bounds `_FloatClasses` follows (argument 0 is the
# rounding mode); fp.to_fp with one argument reinterprets bits and is not followed
_ROUNDED = {z3.Z3_OP_FPA_ADD, z3.Z3_OP_FPA_SUB, z3.Z3_OP_FPA_MUL, z3.Z3_OP_FPA_TO_FP,
            z3.Z3_OP_FPA_TO_FP_UNSIGNED}


def _class_args(ref: Any, e: Any, kind: int) -> list[Any] | None:
    """The arguments whose classes decide `e`'s (`_FloatClasses._combine`): an ite's
    branches, max/min/neg/abs's operands, a rounded operation's operands after the rounding
    mode (round to nearest even only: the models use no other); None for any other term."""
    if kind == z3.Z3_OP_ITE:
        return [_ARG(ref, e, 1), _ARG(ref, e, 2)]
    if kind in _SELECTING or kind in (z3.Z3_OP_FPA_NEG, z3.Z3_OP_FPA_ABS):
        return [_ARG(ref, e, i) for i in range(_NUM_ARGS(ref, e))]
    conversion = kind in (z3.Z3_OP_FPA_TO_FP, z3.Z3_OP_FPA_TO_FP_UNSIGNED)
    if kind in _ROUNDED and _NUM_ARGS(ref, e) == (2 if conversion else 3):
        rm = _ARG(ref, e, 0)
        if _KIND(ref, rm) not in (z3.Z3_APP_AST, z3.Z3_NUMERAL_AST) \
                or _DECL_KIND(ref, _DECL(ref, rm)) != z3.Z3_OP_FPA_RM_NEAREST_TIES_TO_EVEN:
            return None
        rest = [_ARG(ref, e, i) for i in range(1, _NUM_ARGS(ref, e))]
        if conversion and not _is_float_sort(ref, rest[0]):
            # an integer converted: finite, its bound from its width (no class to follow)
            return [] if _is_bv_sort(ref, rest[0]) else None
        return rest
    return None


def _is_float_sort(ref: Any, e: Any) -> bool:
    return z3core.Z3_get_sort_kind(ref, _SORT(ref, e)) == z3.Z3_FLOATING_POINT_SORT


def _is_bv_sort(ref: Any, e: Any) -> bool:
    return z3core.Z3_get_sort_kind(ref, _SORT(ref, e)) == z3.Z3_BV_SORT


def _bv_size(ref: Any, e: Any) -> int:
    return z3core.Z3_get_bv_sort_size(ref, _SORT(ref, e))


class _FloatClasses:
    """The IEEE classes (NaN, +inf, -inf, finite) float terms may take on the inputs the
    premises admit, and the atoms and selections that this decides.

    Leaves get theirs from the facts ("x[k] is NaN" false: x[k] is not NaN); a numeral has
    its own; `ite`, fp.max and fp.min take one of their arguments' values, negation swaps the
    infinities, absolute value makes -inf +inf. Rounded sums, differences, products and
    conversions of finite (or NaN) operands are finite (or NaN) while a bound of their
    magnitude fits the format (`_combine`; an integer converted is bounded by its width).
    Anything else (a division, an uninterpreted function) may be anything. Every term is a
    raw pointer some live term holds (`Canonicalizer._held`)."""

    def __init__(self, ctx: z3.Context, facts: dict[int, tuple[z3.ExprRef, z3.ExprRef]]) -> None:
        self.ctx, self.ref = ctx, ctx.ref()
        ref = self.ref
        self.cls: dict[int, int] = {}
        self.false = z3.BoolVal(False, ctx)
        self._max: dict[int, tuple[int, int]] = {}   # sort id -> ids of -max and +max finite
        self._keep: list[z3.ExprRef] = []
        for atom, value in facts.values():
            a = atom.as_ast()
            if KIND(ref, a) != z3.Z3_APP_AST or not z3.is_false(value):
                continue
            kind = _DECL_KIND(ref, _DECL(ref, a))
            drop = {z3.Z3_OP_FPA_IS_NAN: NAN, z3.Z3_OP_FPA_IS_INF: PINF | NINF}.get(kind)
            if drop is not None:
                leaf = _ID(ref, _ARG(ref, a, 0))
                self.cls[leaf] = self.cls.get(leaf, ANY) & ~drop
        # id -> an upper bound of |value| where the term is finite (`_bound`)
        self.mag: dict[int, float] = {}
        # sort id -> (largest finite value, 1 + 2^(1-p), smallest subnormal): `_limits`
        self._sort_limits: dict[int, tuple[float, float, float]] = {}

    def of(self, root: Any) -> int:
        """The classes `root` may take (bits of NAN, PINF, NINF, FINITE)."""
        ref, cls = self.ref, self.cls
        stack = [root]
        while stack:
            e = stack[-1]
            key = _ID(ref, e)
            if key in cls:
                stack.pop()
                continue
            if KIND(ref, e) != z3.Z3_APP_AST:
                cls[key] = ANY
                stack.pop()
                continue
            kind = _DECL_KIND(ref, _DECL(ref, e))
            if kind in _SPECIAL:
                cls[key] = _SPECIAL[kind]
                stack.pop()
                continue
            args = _class_args(ref, e, kind)
            if args is None:
                cls[key] = ANY
                stack.pop()
                continue
            todo = [a for a in args if _ID(ref, a) not in cls]
            if todo:
                stack.extend(todo)
                continue
            cls[key] = self._combine(e, kind, args)
            stack.pop()
        return cls[_ID(ref, root)]

    def _combine(self, e: Any, kind: int, args: list[Any]) -> int:
        """The classes of `e` (operator `kind`) from its arguments' (`_class_args`), which
        are known; records its bound (`self.mag`) on the way."""
        ref, cls = self.ref, self.cls
        c = 0
        for a in args:
            c |= cls[_ID(ref, a)]
        if kind in _SELECTING:
            self.mag[_ID(ref, e)] = max(self._bound(a) for a in args)
            return c
        if kind == z3.Z3_OP_FPA_NEG:
            self.mag[_ID(ref, e)] = self._bound(args[0])
            return (c & (NAN | FINITE)) | (PINF if c & NINF else 0) | (NINF if c & PINF else 0)
        if kind == z3.Z3_OP_FPA_ABS:
            self.mag[_ID(ref, e)] = self._bound(args[0])
            return (c & (NAN | FINITE)) | (PINF if c & (PINF | NINF) else 0)
        # rounded arithmetic and conversions: an operand's infinity may give inf or NaN
        # (inf - inf, 0 * inf; IEEE 754 7.2), so only finite and NaN operands are followed.
        # The exact result of finite operands is at most `exact` in magnitude; rounding is
        # monotone (IEEE 754 4.3), so it rounds to at most the sort's largest finite value
        # when `exact` is at most that, and to at most `exact` times (1 + 2^(1-p)) (p: the
        # precision) plus the smallest subnormal; the factor 1 + 2^-49 covers Python's own
        # rounding of the bound.
        if c & (PINF | NINF):
            return ANY
        if kind == z3.Z3_OP_FPA_TO_FP and not args:
            exact = 2.0 ** (_bv_size(ref, _ARG(ref, e, 1)) - 1)      # a signed integer
        elif kind == z3.Z3_OP_FPA_TO_FP_UNSIGNED:
            exact = 2.0 ** _bv_size(ref, _ARG(ref, e, 1))
        elif kind == z3.Z3_OP_FPA_TO_FP:
            exact = self._bound(args[0])
        elif kind == z3.Z3_OP_FPA_MUL:
            exact = self._bound(args[0]) * self._bound(args[1])
        else:                                               # add, sub
            exact = self._bound(args[0]) + self._bound(args[1])
        top, rel, tiny = self._limits(e)
        exact *= 1 + 2.0 ** -49
        # below the normal range rounding errs by up to half the smallest subnormal, which
        # the relative term does not cover: add that subnormal
        self.mag[_ID(ref, e)] = min(exact * rel + tiny, top)
        return (c & NAN) | FINITE | (0 if exact <= top else PINF | NINF)

    def _bound(self, e: Any) -> float:
        """An upper bound of |e| where e is finite: its own for a numeral and for the terms
        `_combine` bounds, else its sort's largest finite value."""
        ref = self.ref
        key = _ID(ref, e)
        if key in self.mag:
            return self.mag[key]
        if _KIND(ref, e) in (z3.Z3_APP_AST, z3.Z3_NUMERAL_AST) \
                and _DECL_KIND(ref, _DECL(ref, e)) == z3.Z3_OP_FPA_NUM:
            v = z3.z3._to_expr_ref(e, self.ctx)
            assert isinstance(v, z3.FPNumRef)
            # |v| < 2^(e - bias + 1) (subnormals: exponent field 0 means 1 - bias)
            b = 2.0 ** (max(v.exponent_as_long(), 1) - (2 ** (v.ebits() - 1) - 1) + 1)
        elif _KIND(ref, e) in (z3.Z3_APP_AST, z3.Z3_NUMERAL_AST) \
                and _DECL_KIND(ref, _DECL(ref, e)) in (z3.Z3_OP_FPA_PLUS_ZERO,
                                                       z3.Z3_OP_FPA_MINUS_ZERO):
            b = 0.0
        else:
            b = self._limits(e)[0]
        self.mag[key] = b
        return b

    def _limits(self, e: Any) -> tuple[float, float, float]:
        """For float term `e`'s sort, once per sort: its largest finite value (a Python
        float; inf past float64's range), 1 + 2^(1-p) (p: the precision), and its smallest
        subnormal."""
        ref = self.ref
        sort = _SORT(ref, e)
        sid = _SORT_ID(ref, sort)
        if sid not in self._sort_limits:
            eb, sb = z3core.Z3_fpa_get_ebits(ref, sort), z3core.Z3_fpa_get_sbits(ref, sort)
            try:
                top = (2 - 2.0 ** (1 - sb)) * 2.0 ** (2 ** (eb - 1) - 1)
            except OverflowError:
                top = float("inf")
            self._sort_limits[sid] = (top, 1 + 2.0 ** (1 - sb), 2.0 ** (2 - 2 ** (eb - 1) - (sb - 1)))
        return self._sort_limits[sid]

    def _extreme(self, e: Any) -> int:
        """-1 if `e` is the lowest finite float of its sort (-FLT_MAX for float32), +1 if
        the highest, else 0."""
        ref = self.ref
        if KIND(ref, e) != z3.Z3_NUMERAL_AST and KIND(ref, e) != z3.Z3_APP_AST:
            return 0
        if _DECL_KIND(ref, _DECL(ref, e)) != z3.Z3_OP_FPA_NUM:
            return 0
        sort = _SORT(ref, e)
        sid = _SORT_ID(ref, sort)
        if sid not in self._max:
            s = z3.FPSortRef(sort, self.ctx)
            eb, sb = s.ebits(), s.sbits()
            ids = []
            for sign in (1, 0):
                v = z3.simplify(z3.fpFP(z3.BitVecVal(sign, 1, self.ctx),
                                        z3.BitVecVal(2 ** eb - 2, eb, self.ctx),
                                        z3.BitVecVal(2 ** (sb - 1) - 1, sb - 1, self.ctx)))
                self._keep.append(v)
                ids.append(v.get_id())
            self._max[sid] = (ids[0], ids[1])
        low, high = self._max[sid]
        key = _ID(ref, e)
        return -1 if key == low else 1 if key == high else 0

    def decide(self, kind: int, kids: list[Any]) -> Any | None:
        """A term equal to `kind(kids)` on every admitted input, if the classes give a
        simpler one: False for an atom they decide, `a` for max(-FLT_MAX, a) or
        min(+FLT_MAX, a) written as an `ite`; else None."""
        ref = self.ref
        if kind == z3.Z3_OP_FPA_IS_NAN:
            return self.false.as_ast() if not self.of(kids[0]) & NAN else None
        if kind == z3.Z3_OP_FPA_IS_INF:
            return self.false.as_ast() if not self.of(kids[0]) & (PINF | NINF) else None
        if kind == z3.Z3_OP_EQ and len(kids) == 2:
            # (= a -oo) and the like: Z3's `=` on floats is identity of values (NaN = NaN)
            for a, b in (kids, kids[::-1]):
                if KIND(ref, b) in (z3.Z3_APP_AST, z3.Z3_NUMERAL_AST):
                    special = _SPECIAL.get(_DECL_KIND(ref, _DECL(ref, b)))
                    if special in (NAN, PINF, NINF) and not self.of(a) & special:
                        return self.false.as_ast()
            return None
        if kind == z3.Z3_OP_FPA_LT:
            a, b = kids
            # a < -FLT_MAX only for a = -inf; +FLT_MAX < b only for b = +inf (IEEE 754 5.11:
            # comparisons with NaN are false)
            if self._extreme(b) == -1 and not self.of(a) & NINF:
                return self.false.as_ast()
            if self._extreme(a) == 1 and not self.of(b) & PINF:
                return self.false.as_ast()
            return None
        if kind == z3.Z3_OP_ITE:
            c, t, e = kids
            if KIND(ref, c) != z3.Z3_APP_AST or _DECL_KIND(ref, _DECL(ref, c)) != z3.Z3_OP_FPA_LT:
                return None
            p, q = _ARG(ref, c, 0), _ARG(ref, c, 1)
            same = _ID(ref, t), _ID(ref, e)
            # ite(-FLT_MAX < a, a, -FLT_MAX) is a unless a is NaN or -inf (then -FLT_MAX;
            # at a = -FLT_MAX both branches are a)
            if same == (_ID(ref, q), _ID(ref, p)) and self._extreme(p) == -1 \
                    and not self.of(t) & (NAN | NINF):
                return t
            # ite(a < +FLT_MAX, a, +FLT_MAX) is a unless a is NaN or +inf
            if same == (_ID(ref, p), _ID(ref, q)) and self._extreme(q) == 1 \
                    and not self.of(t) & (NAN | PINF):
                return t
        return None


# IEEE multiplication and division by 1.0 are exact on every value (IEEE 754 5.4.1: the
# result is x rounded, and x is representable; x * 1 keeps x's sign, ±inf stays ±inf, NaN
# stays NaN): `fp.mul(rm, x, 1.0)`, `fp.mul(rm, 1.0, x)` and `fp.div(rm, x, 1.0)` are x.
# Z3's simplifier leaves them (measured: an adaptive_avg_pool2d whose windows are single
# elements, `(0 + x) / 1` against TVM's `0 + x`, 288 elements, unknown after 6 s in IEEE).
_BY_ONE = {z3.Z3_OP_FPA_MUL, z3.Z3_OP_FPA_DIV}

# operators `_FloatClasses.decide` may rewrite
_DECIDABLE = {z3.Z3_OP_FPA_IS_NAN, z3.Z3_OP_FPA_IS_INF, z3.Z3_OP_EQ, z3.Z3_OP_FPA_LT, z3.Z3_OP_ITE}


class Canonicalizer:
    """Canonical forms with a memo shared across calls (source and target elements share
    most of their subterms).

    `facts` maps simplified atoms to the truth value the check's premises give them (e.g.
    "input element x[3] is NaN" -> False under no-nan, `tvtv.absfp.assumptions.atom_facts`):
    such an atom is replaced and the result simplified again. The canonical form then denotes
    the same value as the term *on every input the premises admit*, which is all a check
    compares (its queries carry the premises).

    The walk uses Z3's C API on raw term pointers: through z3py objects it cost ~0.1 ms a
    node, most of a zero-pipeline check (measured: 87 of 114 s on a generated graph). Every
    term the memo holds, visited or built, keeps a reference until the canonicalizer goes, so
    an id is never reused for another term while it is a memo key."""

    def __init__(self, facts: dict[int, tuple[z3.ExprRef, z3.ExprRef]] | None = None,
                 premises: Sequence[tuple[z3.ExprRef, z3.ExprRef]] = ()) -> None:
        # id -> canonical form (raw pointers)
        self._memo: dict[int, Any] = {}
        self._facts = dict(facts or {})
        # (term, value) pairs as built, simplified with every term simplified here
        # (`_simplify`), whose forms then join `_facts`
        self._premises = list(premises)
        # ids of memo keys whose canonical form has an atom replaced by a premise
        self._decided: set[int] = set()
        self._ctx: z3.Context | None = None
        self._held: list[Any] = []      # raw pointers this canonicalizer holds a reference to
        self._ones: dict[int, int] = {}     # float sort id -> id of its numeral 1.0
        self._one_terms: list[z3.ExprRef] = []   # those numerals, kept alive
        self._classes: _FloatClasses | None = None

    def __del__(self) -> None:
        ctx = self._ctx
        if ctx is None or ctx.ctx is None:
            return
        ref = ctx.ref()
        for a in self._held:
            _DEC_REF(ref, a)

    def _hold(self, ref: Any, a: Any) -> Any:
        _INC_REF(ref, a)
        self._held.append(a)
        return a

    def __call__(self, term: z3.ExprRef) -> z3.ExprRef:
        return self._rounds(self._simplify(term))

    def _rounds(self, out: z3.ExprRef) -> z3.ExprRef:
        """The canonical form of `out`, a term `_simplify` returned."""
        for _ in range(FACT_ROUNDS):
            root = out
            out = self._canon(root)
            if root.get_id() not in self._decided:
                break
            out = self._simplify(out)     # a premise decided an atom: fold what it decided
        return out

    def _simplify(self, term: z3.ExprRef) -> z3.ExprRef:
        """`z3.simplify(term)`; with premises, they are simplified in the same call (as
        arguments of one application beside `term`) and their forms become facts.

        One call, because the forms of separate calls need not meet: Z3's simplifier orders
        the arguments of `or`, `=` and `+` by term ids, and the ids of the terms it builds
        and drops depend on what the process built before. FuseTIR's seed-0 graph 19 (a
        group's `v - v`, clipped) proved in 17-28 s when its finite-runs retry ran alone,
        with the premises' forms simplified once beforehand; after the first check in the
        same process, 31-47 of its 48 elements kept their `v - v` and the check ran out of
        time (2026-11-29). Within one call, a term is rewritten once (the simplifier's
        cache), so the premise's form and the output's subterm are one term."""
        if not self._premises:
            return z3.simplify(term)
        keys = [k for k, _ in self._premises]
        both = z3.simplify(zf.batch("tvtv_premise_batch", [*keys, term]))
        for k, (_, value) in enumerate(self._premises):
            _implied(both.arg(k), value, self._facts)
        return both.arg(len(keys))

    def many(self, terms: Sequence[z3.ExprRef]) -> list[z3.ExprRef]:
        """The canonical forms of `terms`, each the one `self(term)` means, in one pass.

        `z3.simplify` keeps no memo between calls, so elements of one output that share a
        subterm (a row's sum in a softmax or layer_norm, read by every element of the row)
        have it simplified once per element when asked one by one. Here the terms are the
        arguments of one application of a fresh uninterpreted function, simplified and
        canonicalized together: Z3's simplifier rewrites an application's arguments bottom up
        without context, so each argument becomes the term it would alone (measured on a
        (6, 4, 4, 21) layer_norm in the real model: 58 s one by one, 13 s in chunks of 256
        elements). A fact round applies to every term when any was decided, which is again
        `self`'s rewrite of each: simplifying is idempotent on what it already folded."""
        if not terms:
            return []
        if len(terms) == 1:
            return [self(terms[0])]
        out = self(zf.batch("tvtv_canon_batch", terms))
        return [out.arg(k) for k in range(len(terms))]

    def pairs(self, xs: Sequence[z3.ExprRef], ys: Sequence[z3.ExprRef]) -> list[tuple[z3.ExprRef, z3.ExprRef]]:
        """Forms of the pairs (xs[k], ys[k]) that are one term exactly when their canonical
        forms (`many`) are: all are simplified together first, and a pair whose simplified
        terms are already one term is that term (its canonical forms would be one term too:
        the walk is a function of the term), so only the other pairs are walked. Measured
        on zero graph 3 of seed 0: a (4, 7, 5, 1) output's 140 pairs are all one term after
        simplifying (0.4 s), which the walk took another 2 s to confirm."""
        n = len(xs)
        if n == 0:
            return []
        terms = [*xs, *ys]
        simple = self._simplify(zf.batch("tvtv_canon_batch", terms))
        forms = [(simple.arg(k), simple.arg(n + k)) for k in range(n)]
        rest = [k for k, (x, y) in enumerate(forms) if not z3.eq(x, y)]
        if not rest:
            return forms
        walked = [*[forms[k][0] for k in rest], *[forms[k][1] for k in rest]]
        out = self._rounds(zf.batch("tvtv_canon_batch", walked))
        for pos, k in enumerate(rest):
            forms[k] = (out.arg(pos), out.arg(len(rest) + pos))
        return forms

    def _by_one(self, ref: Any, kind: int, kids: list[Any]) -> Any | None:
        """x for `fp.mul(rm, x, 1.0)`, `fp.mul(rm, 1.0, x)` and `fp.div(rm, x, 1.0)` (see
        `_BY_ONE`); None otherwise."""
        if len(kids) != 3:
            return None
        rm, a, b = kids
        if self._is_one(ref, b):
            return a
        if kind == z3.Z3_OP_FPA_MUL and self._is_one(ref, a):
            return b
        return None

    def _is_one(self, ref: Any, e: Any) -> bool:
        """Is the raw term `e` the float numeral 1.0 of its sort?"""
        if _KIND(ref, e) not in (z3.Z3_APP_AST, z3.Z3_NUMERAL_AST) \
                or _DECL_KIND(ref, _DECL(ref, e)) != z3.Z3_OP_FPA_NUM:
            return False
        sid = _SORT_ID(ref, _SORT(ref, e))
        if sid not in self._ones:
            assert self._ctx is not None
            one = z3.simplify(z3.FPVal(1.0, z3.FPSortRef(_SORT(ref, e), self._ctx), self._ctx))
            self._one_terms.append(one)
            self._ones[sid] = one.get_id()
        return _ID(ref, e) == self._ones[sid]

    def _canon(self, root: z3.ExprRef) -> z3.ExprRef:
        # post-order with an explicit stack: fused graphs nest thousands of terms deep,
        # beyond Python's recursion limit
        if self._ctx is None:
            self._ctx = root.ctx
        ref = root.ctx_ref()
        if self._classes is None:
            # without facts too: integers converted to floats are finite, and their bounded
            # sums and products decide a clamp (`_FloatClasses._combine`)
            self._classes = _FloatClasses(root.ctx, self._facts)
        memo, facts, decided, classes = self._memo, self._facts, self._decided, self._classes
        # (term, its arguments once they are pushed: the post-order visit reuses them)
        stack: list[tuple[Any, list[Any] | None]] = [(root.as_ast(), None)]
        while stack:
            e, children = stack.pop()
            key = _ID(ref, e)
            if key in memo:
                continue
            if key in facts:
                self._hold(ref, e)
                memo[key] = self._hold(ref, facts[key][1].as_ast())
                decided.add(key)
                continue
            if children is None:
                n = _NUM_ARGS(ref, e) if _KIND(ref, e) in _APP_KINDS else 0
                if n == 0:
                    memo[key] = self._hold(ref, e)   # a constant, variable or quantifier
                    continue
                children = [_ARG(ref, e, i) for i in range(n)]
                stack.append((e, children))
                stack.extend((c, None) for c in children if _ID(ref, c) not in memo)
                continue
            ids = [_ID(ref, c) for c in children]
            kids = [memo[i] for i in ids]
            if decided and any(i in decided for i in ids):
                decided.add(key)
            kind = _DECL_KIND(ref, _DECL(ref, e))
            if kind in COMMUTATIVE:
                kids.sort(key=lambda c: (_HASH(ref, c), _ID(ref, c)))
            self._hold(ref, e)
            if all(_ID(ref, k) == i for k, i in zip(kids, ids)):
                form = e
            else:
                form = self._hold(ref, _rebuild(ref, e, kind, kids))
            if kind in _BY_ONE:
                unit = self._by_one(ref, kind, kids)
                if unit is not None:
                    form = unit
            if classes is not None and kind in _DECIDABLE:
                simpler = classes.decide(kind, kids)
                if simpler is not None:
                    form = self._hold(ref, simpler)
                    decided.add(key)
            memo[key] = form
        return z3.z3._to_expr_ref(memo[_ID(ref, root.as_ast())], root.ctx)


def _implied(form: z3.ExprRef, value: z3.ExprRef,
             facts: dict[int, tuple[z3.ExprRef, z3.ExprRef]]) -> None:
    """Add to `facts` (id -> (term, value)) what a premise "`form` is `value`" gives: the form
    itself and, where it is a false disjunction, every disjunct false (a true conjunction:
    every conjunct true). Z3's simplifier flattens a disjunction into the one around it
    (`or(or(a, b), c)` is `or(a, b, c)`), so a premise such as "v is not NaN", whose form
    spreads over v's case splits, is no subterm of an output that tests it beside something
    else (a float16 cast of `v - v`: zero seed-5 graph 18); its disjuncts are. Raw C API
    calls, and a disjunct already known is not wrapped again: a zero graph's 35,000 premise
    forms hold some 190,000 disjuncts, which z3py's walk took 4.4 s to list."""
    if not z3.is_app(form) or z3.is_true(form) or z3.is_false(form) \
            or z3.is_fp_value(form) or z3.is_bv_value(form):
        return
    facts[form.get_id()] = (form, value)
    ref, a = form.ctx_ref(), form.as_ast()
    kind = _DECL_KIND(ref, _DECL(ref, a))
    if not (kind == z3.Z3_OP_OR and z3.is_false(value) or kind == z3.Z3_OP_AND and z3.is_true(value)):
        return
    for i in range(_NUM_ARGS(ref, a)):
        arg = _ARG(ref, a, i)
        if _ID(ref, arg) not in facts and _KIND(ref, arg) == z3.Z3_APP_AST \
                and _DECL_KIND(ref, _DECL(ref, arg)) not in (z3.Z3_OP_TRUE, z3.Z3_OP_FALSE):
            facts[_ID(ref, arg)] = (z3.BoolRef(arg, form.ctx), value)


def _rebuild(ref: Any, e: Any, kind: int, kids: list[Any]) -> Any:
    """`e`'s operator applied to `kids` (raw pointers; checked calls: a failure raises)."""
    arr = (z3core.Ast * len(kids))(*kids)
    if kind == z3.Z3_OP_OR:
        return z3core.Z3_mk_or(ref, len(kids), arr)
    if kind == z3.Z3_OP_AND:
        return z3core.Z3_mk_and(ref, len(kids), arr)
    if kind == z3.Z3_OP_DISTINCT:
        return z3core.Z3_mk_distinct(ref, len(kids), arr)
    return z3core.Z3_mk_app(ref, _DECL(ref, e), len(kids), arr)
