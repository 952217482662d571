"""Few cases: a term whose value is one of a few closed terms (numerals, mostly), chosen
by a few Boolean atoms, is replaced by that choice made explicit, a decision tree over the
atoms with each leaf simplified by Z3.

`x - x` is `ite(x is NaN or ±inf, NaN, +0)` in every float model (`self_difference`; Z3's
simplifier writes it `x + (-x)`, met here as well), and a softmax over an axis of one element
computes `x - T.max(-FLT_MAX, x)`, one of -inf, NaN and +0
(`ScalarDomain.difference_from_guarded`). What follows is a function of those few values:
FastMathTransform's fast_exp clamps its argument, multiplies, rounds, converts it to int32
and shifts it into an exponent. Z3 leaves such a chain as bit-level circuits over the case
conditions, and its simplifier does not push an operation into an if-then-else of floats
(`pull_cheap_ite` covers arithmetic and bit-vectors only): FastMathTransform's check of
`softmax` over the last axis of a (2, 4, 1) tensor asked whether that int32 conversion can
overflow, and Z3 had no answer after 60 s (cvc5: 1-2 s). Folded, the conversion's argument
is one of three numerals and the query is decided by simplification.

How: bottom-up over the query (`fold`), a term gets a table, its value under each
assignment of at most ATOMS_LIMIT atoms, when it is an if-then-else of terms with tables
(closed terms have a table of no atoms) or an operation on an argument that has one (its
other arguments closed, or Boolean: a Boolean term is read over the atoms below its
connectives, or is an atom itself). Each table entry is Z3's simplification of the operation
on closed arguments. The fold is exact: a case split, and simplification on closed terms,
which for IEEE arithmetic, comparisons and conversions is evaluation. An entry need not be a
numeral (fp.to_sbv of NaN is a closed term SMT-LIB leaves unspecified; an uninterpreted
function applied to a numeral is one too), and the special-value cases around it may discard
it. Terms with no such cases come back as they were.
"""
from __future__ import annotations

import contextvars
from contextlib import contextmanager
from typing import Any, Iterator, Sequence

import z3
from z3 import z3core

from tvtv.z3raw import ARG, DECL, DECL_KIND, ID, KIND, NUM_ARGS

# at most this many Boolean atoms under one folded term: it is valued under each of their
# 2^n assignments
ATOMS_LIMIT = 4
# (`cases`, `lifted`: at most this many numerals in an if-then-else tree)
CASES_LIMIT = 8

_IS_NUMERAL = z3core.Z3_is_numeral_ast
_NUMERAL_KINDS = frozenset({
    z3.Z3_OP_TRUE, z3.Z3_OP_FALSE,
    z3.Z3_OP_FPA_RM_NEAREST_TIES_TO_EVEN, z3.Z3_OP_FPA_RM_NEAREST_TIES_TO_AWAY,
    z3.Z3_OP_FPA_RM_TOWARD_POSITIVE, z3.Z3_OP_FPA_RM_TOWARD_NEGATIVE, z3.Z3_OP_FPA_RM_TOWARD_ZERO,
    z3.Z3_OP_FPA_PLUS_INF, z3.Z3_OP_FPA_MINUS_INF, z3.Z3_OP_FPA_NAN,
    z3.Z3_OP_FPA_PLUS_ZERO, z3.Z3_OP_FPA_MINUS_ZERO,
})
# operations not valued: array terms (their values are not closed scalars). An uninterpreted
# function is: on closed arguments its application is a closed term, and the special-value
# cases around it (`tvtv.absfp.special`) may discard it
_KEPT_KINDS = frozenset({
    z3.Z3_OP_SELECT, z3.Z3_OP_STORE,
    z3.Z3_OP_CONST_ARRAY, z3.Z3_OP_AS_ARRAY, z3.Z3_OP_ARRAY_MAP, z3.Z3_OP_ARRAY_DEFAULT,
})


def _iff(t: list[bool]) -> bool:
    return all(t) or not any(t)


# Boolean connectives, as functions of their arguments' truths (`_Folder._condition`)
_CONNECTIVES: dict[int, Any] = {
    z3.Z3_OP_AND: all, z3.Z3_OP_OR: any, z3.Z3_OP_NOT: lambda t: not t[0],
    z3.Z3_OP_IMPLIES: lambda t: not t[0] or t[1], z3.Z3_OP_XOR: lambda t: t[0] != t[1],
    z3.Z3_OP_IFF: _iff, z3.Z3_OP_EQ: _iff,
    z3.Z3_OP_ITE: lambda t: t[1] if t[0] else t[2],
}


class _Table:
    """A term's value under each assignment of a few Boolean atoms: `atoms` (atom ids, in
    order) and `values` (closed raw terms; bit i of the index is atom i's truth). `cased`:
    some value was chosen by an atom below a non-Boolean term (an if-then-else of closed
    terms, `x - x`), so the term folds into a decision tree."""
    __slots__ = ("atoms", "values", "cased")

    def __init__(self, atoms: tuple[int, ...], values: list[Any], cased: bool) -> None:
        self.atoms, self.values, self.cased = atoms, values, cased

    def at(self, atoms: tuple[int, ...], index: int) -> Any:
        """The value under the assignment `index` of `atoms` (a superset of ours)."""
        own = 0
        for bit, a in enumerate(self.atoms):
            if index >> atoms.index(a) & 1:
                own |= 1 << bit
        return self.values[own]


class _Folder:
    """One fold over terms of one context: each distinct subterm visited once."""

    def __init__(self, ctx: z3.Context) -> None:
        self.ctx, self.ref = ctx, ctx.ref()
        self.done: dict[int, tuple[Any, _Table | None]] = {}
        self.atom_terms: dict[int, Any] = {}
        self.conditions: dict[int, _Table] = {}
        self.keep: list[z3.ExprRef] = []      # every term made here, referenced while we run
        self.true = self._own(z3core.Z3_mk_true(self.ref))
        self.false = self._own(z3core.Z3_mk_false(self.ref))

    def _own(self, ast: Any) -> Any:
        """`ast`, just made, given a reference (Z3 frees an unreferenced result at its next
        call), as a raw pointer."""
        e = z3.z3._to_expr_ref(ast, self.ctx)
        self.keep.append(e)
        return e.as_ast()

    def _app(self, decl: Any, args: Sequence[Any]) -> Any:
        arr = (z3core.Ast * len(args))(*args)
        return self._own(z3core.Z3_mk_app(self.ref, decl, len(args), arr))

    def _numeral(self, e: Any) -> bool:
        return bool(_IS_NUMERAL(self.ref, e)) \
            or DECL_KIND(self.ref, DECL(self.ref, e)) in _NUMERAL_KINDS

    def _is_bool(self, e: Any) -> bool:
        return z3core.Z3_get_sort_kind(self.ref, z3core.Z3_get_sort(self.ref, e)) == z3.Z3_BOOL_SORT

    def _atom(self, e: Any) -> _Table:
        key = ID(self.ref, e)
        self.atom_terms[key] = e
        return _Table((key,), [self.false, self.true], False)

    def _condition(self, e: Any) -> _Table:
        """The table of a Boolean term with no table of its own, over the atoms below its
        connectives (and, or, not, =, if-then-else on Booleans), or itself as the atom when
        those are more than ATOMS_LIMIT: the case conditions of `x - x`, a clamp and a
        special value are made of the same few tests on `x`, and each such term an atom of
        its own would soon pass the limit. Walked with a stack of its own: a chain of
        connectives thousands deep (FuseTIR's seed-2 graph 25) passed Python's recursion
        limit."""
        ref, conditions = self.ref, self.conditions
        known = conditions.get(ID(ref, e))
        if known is not None:
            return known
        todo: list[tuple[Any, bool]] = [(e, False)]
        while todo:
            x, expanded = todo.pop()
            key = ID(ref, x)
            if key in conditions:
                continue
            if key in (ID(ref, self.true), ID(ref, self.false)):
                conditions[key] = _Table((), [x], False)
                continue
            parts = self._connective(x)
            if parts is None:
                conditions[key] = self._atom(x)
                continue
            op, args = parts
            if not expanded:
                todo.append((x, True))
                todo.extend((a, False) for a in args if ID(ref, a) not in conditions)
                continue
            table = self._combined(op, [conditions[ID(ref, a)] for a in args])
            conditions[key] = table if table is not None else self._atom(x)
        return conditions[ID(ref, e)]

    def _connective(self, e: Any) -> tuple[Any, list[Any]] | None:
        """(the connective, its arguments) of a Boolean connective term, else None."""
        ref = self.ref
        if KIND(ref, e) != z3.Z3_APP_AST:
            return None
        op = _CONNECTIVES.get(DECL_KIND(ref, DECL(ref, e)))
        n = NUM_ARGS(ref, e)
        if op is None or n == 0 or (op is _iff and not self._is_bool(ARG(ref, e, 0))):
            return None
        return op, [ARG(ref, e, i) for i in range(n)]

    def _combined(self, op: Any, kids: list[_Table]) -> _Table | None:
        """The table of the connective `op` over its arguments' tables, or None when they
        hold more than ATOMS_LIMIT atoms together."""
        ref = self.ref
        atoms = tuple(sorted({a for t in kids for a in t.atoms}))
        if len(atoms) > ATOMS_LIMIT:
            return None
        values = []
        for index in range(1 << len(atoms)):
            truths = [ID(ref, t.at(atoms, index)) == ID(ref, self.true) for t in kids]
            values.append(self.true if op(truths) else self.false)
        return _Table(atoms, values, False)

    def fold(self, root: Any) -> Any:
        """`root` (a raw term) folded, as a raw term."""
        ref, done = self.ref, self.done
        todo: list[tuple[Any, bool]] = [(root, False)]
        while todo:
            e, expanded = todo.pop()
            key = ID(ref, e)
            if key in done:
                continue
            kind = KIND(ref, e)
            if kind == z3.Z3_NUMERAL_AST:                # bit-vector, arithmetic, some floats
                done[key] = (e, _Table((), [e], False))
                continue
            if kind != z3.Z3_APP_AST:                    # quantifiers, variables: as they are
                done[key] = (e, None)
                continue
            n = NUM_ARGS(ref, e)
            if n == 0:
                done[key] = (e, _Table((), [e], False) if self._numeral(e) else None)
                continue
            args = [ARG(ref, e, i) for i in range(n)]
            if not expanded:
                todo.append((e, True))
                todo.extend((a, False) for a in args if ID(ref, a) not in done)
                continue
            done[key] = self._node(e, args)
        return done[ID(ref, root)][0]

    def _node(self, e: Any, args: list[Any]) -> tuple[Any, _Table | None]:
        ref = self.ref
        folded = [self.done[ID(ref, a)] for a in args]
        kids = [f[0] for f in folded]
        decl = DECL(ref, e)
        kind = DECL_KIND(ref, decl)
        same = all(ID(ref, k) == ID(ref, a) for k, a in zip(kids, args))
        node = e if same else self._app(decl, kids)
        tables = [f[1] for f in folded]
        if kind in _KEPT_KINDS:
            return node, None
        special = self._self_difference(kind, kids)
        if special is not None:
            return self._emit(special)
        if all(t is not None and not t.atoms for t in tables):
            return node, _Table((), [node], False)      # a closed term (valued when used)
        choosing = kind == z3.Z3_OP_ITE and not self._is_bool(node) \
            and tables[1] is not None and tables[2] is not None
        if not (choosing or any(t is not None and t.cased for t in tables)):
            return node, None
        for i, t in enumerate(tables):
            if t is None:
                if not self._is_bool(kids[i]):
                    return node, None
                tables[i] = self._condition(kids[i])
        atoms = tuple(sorted({a for t in tables for a in t.atoms}))     # type: ignore[union-attr]
        if len(atoms) > ATOMS_LIMIT:
            return node, None
        values = []
        for index in range(1 << len(atoms)):
            vals = [t.at(atoms, index) for t in tables]                  # type: ignore[union-attr]
            if kind == z3.Z3_OP_ITE:
                c = vals[0]
                if not self._numeral(c):
                    c = self._own(z3core.Z3_simplify(ref, c))
                if not self._numeral(c):
                    return node, None
                values.append(vals[1] if DECL_KIND(ref, DECL(ref, c)) == z3.Z3_OP_TRUE else vals[2])
            else:
                # (a value need not be a numeral: SMT-LIB leaves fp.to_sbv of NaN or ±inf
                # unspecified, a closed term of its own, met where TIR's cast is undefined)
                values.append(self._own(z3core.Z3_simplify(ref, self._app(decl, vals))))
        return self._emit(_Table(atoms, values, True))

    def _self_difference(self, kind: int, kids: list[Any]) -> _Table | None:
        """`x + (-x)` in round-to-nearest (Z3's simplifier writes `x - y` as `x + (-y)`): +0
        for finite x (IEEE 754 §6.3: an exact zero sum of opposite signs is +0 in every
        rounding direction but toward negative), NaN for NaN and ±inf (§7.2); as a table
        over `isNaN(x)` and `isInfinite(x)`."""
        ref = self.ref
        if kind != z3.Z3_OP_FPA_ADD or len(kids) != 3 \
                or DECL_KIND(ref, DECL(ref, kids[0])) != z3.Z3_OP_FPA_RM_NEAREST_TIES_TO_EVEN:
            return None
        x = None
        for a, b in ((kids[1], kids[2]), (kids[2], kids[1])):
            if KIND(ref, b) == z3.Z3_APP_AST and DECL_KIND(ref, DECL(ref, b)) == z3.Z3_OP_FPA_NEG \
                    and ID(ref, ARG(ref, b, 0)) == ID(ref, a):
                x = a
        if x is None:
            return None
        sort = z3core.Z3_get_sort(ref, x)
        nan = self._atom(self._own(z3core.Z3_mk_fpa_is_nan(ref, x))).atoms[0]
        inf = self._atom(self._own(z3core.Z3_mk_fpa_is_infinite(ref, x))).atoms[0]
        zero = self._own(z3core.Z3_mk_fpa_zero(ref, sort, False))
        invalid = self._own(z3core.Z3_mk_fpa_nan(ref, sort))
        return _Table(tuple(sorted((nan, inf))), [zero, invalid, invalid, invalid], True)

    def _emit(self, table: _Table) -> tuple[Any, _Table]:
        """The decision tree of `table` over its atoms, and the table."""
        ref = self.ref

        def tree(i: int, rows: list[int]) -> Any:
            first = table.values[rows[0]]
            if all(ID(ref, table.values[r]) == ID(ref, first) for r in rows):
                return first
            atom = self.atom_terms[table.atoms[i]]
            on = tree(i + 1, [r for r in rows if r >> i & 1])
            off = tree(i + 1, [r for r in rows if not r >> i & 1])
            if ID(ref, on) == ID(ref, off):
                return on
            return self._own(z3core.Z3_mk_ite(ref, atom, on, off))
        return tree(0, list(range(len(table.values)))), table


# the fold shared by the queries of one check (`shared`)
# (outside `shared`: None; inside: a list holding the fold once made)
_SHARED: contextvars.ContextVar[list[_Folder] | None] = contextvars.ContextVar(
    "tvtv_numeral_cases", default=None)


@contextmanager
def shared() -> Iterator[None]:
    """Within it, `fold` visits each subterm once over all its calls: a check's queries share
    most of their terms (measured on 8 zero graphs: 190,000 subterm visits, 5% of the run, for
    132 queries). The facts folded are referenced until the end, so that the ids of their
    subterms, by which the fold remembers them, are not reused."""
    token = _SHARED.set([])
    try:
        yield
    finally:
        _SHARED.reset(token)


def fold(facts: Sequence[z3.BoolRef]) -> list[z3.BoolRef]:
    """`facts` with every interpreted operation on a few cases folded (module docstring):
    equivalent facts, the same objects where nothing folds."""
    facts = list(facts)
    if not facts:
        return facts
    ctx = facts[0].ctx
    scope = _SHARED.get()
    if scope and scope[0].ctx is ctx:
        folder = scope[0]
    else:
        folder = _Folder(ctx)
        if scope is not None:
            scope[:] = [folder]
    folder.keep.extend(facts)
    raw = [folder.fold(f.as_ast()) for f in facts]
    return [f if ID(folder.ref, r) == ID(folder.ref, f.as_ast()) else z3.z3._to_expr_ref(r, ctx)
            for f, r in zip(facts, raw)]


def cases(term: z3.ExprRef) -> list[tuple[z3.BoolRef, z3.ExprRef]] | None:
    """(condition, numeral) for each leaf of `term` when it is an if-then-else tree of at
    most CASES_LIMIT numerals with more than one leaf (conditions: the path to the leaf),
    else None."""
    found: list[tuple[z3.BoolRef, z3.ExprRef]] = []
    todo: list[tuple[z3.ExprRef, list[z3.BoolRef]]] = [(term, [])]
    while todo:
        t, path = todo.pop()
        if z3.is_app_of(t, z3.Z3_OP_ITE):
            c = t.arg(0)
            todo.append((t.arg(2), path + [z3.Not(c)]))
            todo.append((t.arg(1), path + [c]))
        elif z3.is_fp_value(t) or z3.is_bv_value(t) or z3.is_true(t) or z3.is_false(t):
            found.append((z3.And(*path) if path else z3.BoolVal(True), t))
        else:
            return None
        if len(found) + len(todo) > CASES_LIMIT:
            return None
    return found if len(found) > 1 else None


def lifted(build: Any, x: z3.ExprRef) -> z3.ExprRef | None:
    """`build(x)` as the if-then-else of `build` on each numeral case of `x` (`cases`), or
    None when `x` has no such cases. For operations that are not Z3's (the float models'
    uninterpreted functions with their special values): on a numeral, those values fold."""
    found = cases(x)
    if found is None:
        return None
    out = z3.simplify(build(found[-1][1]))
    for cond, value in reversed(found[:-1]):
        out = z3.If(cond, z3.simplify(build(value)), out)
    return out
