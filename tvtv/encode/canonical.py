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

import z3

# Operators whose arguments may be reordered without changing the value.
COMMUTATIVE = {
    z3.Z3_OP_OR, z3.Z3_OP_AND, z3.Z3_OP_EQ, z3.Z3_OP_XOR, z3.Z3_OP_DISTINCT,
    z3.Z3_OP_ADD, z3.Z3_OP_MUL,
    z3.Z3_OP_BADD, z3.Z3_OP_BMUL, z3.Z3_OP_BAND, z3.Z3_OP_BOR, z3.Z3_OP_BXOR,
}


class Canonicalizer:
    """Canonical forms with a memo shared across calls (source and target elements share
    most of their subterms)."""

    def __init__(self) -> None:
        # id -> (term, canonical form); the term is kept so that Z3 does not free it and
        # reuse its id for another term
        self._memo: dict[int, tuple[z3.ExprRef, z3.ExprRef]] = {}

    def __call__(self, term: z3.ExprRef) -> z3.ExprRef:
        return self._canon(z3.simplify(term))

    def _canon(self, e: z3.ExprRef) -> z3.ExprRef:
        key = e.get_id()
        hit = self._memo.get(key)
        if hit is not None:
            return hit[1]
        out = e
        if z3.is_app(e) and e.num_args() > 0:
            kids = [self._canon(c) for c in e.children()]
            kind = e.decl().kind()
            if kind in COMMUTATIVE:
                kids.sort(key=lambda c: (c.hash(), c.get_id()))
            if any(not k.eq(c) for k, c in zip(kids, e.children())):
                out = _rebuild(e, kids)
        self._memo[key] = (e, out)
        return out


def _rebuild(e: z3.ExprRef, kids: list[z3.ExprRef]) -> z3.ExprRef:
    kind = e.decl().kind()
    if kind == z3.Z3_OP_OR:
        return z3.Or(*kids)
    if kind == z3.Z3_OP_AND:
        return z3.And(*kids)
    if kind == z3.Z3_OP_DISTINCT:
        return z3.Distinct(*kids)
    return e.decl()(*kids)
