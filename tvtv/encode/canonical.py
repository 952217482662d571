"""A canonical form of Z3 terms for "is this the same term?" checks.

`z3.simplify` is not a normal form: the order in which it leaves the arguments of `or`, `and`
and `=` depends on how the term was built (measured: the Relax `exp` and its legalized loop
give `(or (= x +0) (= x -0))` on one side and `(or (= x -0) (= x +0))` on the other, for a
third of the elements). `canonical` sorts the arguments of commutative operators by their
structural hash after simplification, so such pairs become one term. It only decides which
output elements need a solver: a pair that is still different is proved or refuted by Z3.
Sorting the arguments of a commutative operator keeps the term's meaning, so two canonical
terms that are equal denote equal values.
"""
from __future__ import annotations

from typing import Any, Sequence

import z3
from z3 import z3core

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
_NUM_ARGS, _ARG, _DECL, _DECL_KIND = z3raw.NUM_ARGS, z3raw.ARG, z3raw.DECL, z3raw.DECL_KIND
_INC_REF, _DEC_REF = z3raw.INC_REF, z3raw.DEC_REF
_APP_KINDS = (z3.Z3_APP_AST,)        # numerals have no arguments: kept as they are


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

    def __init__(self, facts: dict[int, tuple[z3.ExprRef, z3.ExprRef]] | None = None) -> None:
        # id -> canonical form (raw pointers)
        self._memo: dict[int, Any] = {}
        self._facts = facts or {}
        # ids of memo keys whose canonical form has an atom replaced by a premise
        self._decided: set[int] = set()
        self._ctx: z3.Context | None = None
        self._held: list[Any] = []      # raw pointers this canonicalizer holds a reference to

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
        out = z3.simplify(term)
        for _ in range(FACT_ROUNDS):
            root = out
            out = self._canon(root)
            if root.get_id() not in self._decided:
                break
            out = z3.simplify(out)     # a premise decided an atom: fold what it decided
        return out

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
        batch = z3.Function("tvtv_canon_batch", *[t.sort() for t in terms], z3.BoolSort())
        out = self(batch(*terms))
        return [out.arg(k) for k in range(len(terms))]

    def _canon(self, root: z3.ExprRef) -> z3.ExprRef:
        # post-order with an explicit stack: fused graphs nest thousands of terms deep,
        # beyond Python's recursion limit
        if self._ctx is None:
            self._ctx = root.ctx
        ref = root.ctx_ref()
        memo, facts, decided = self._memo, self._facts, self._decided
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
                memo[key] = e
            else:
                memo[key] = self._hold(ref, _rebuild(ref, e, kind, kids))
        return z3.z3._to_expr_ref(memo[_ID(ref, root.as_ast())], root.ctx)


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
