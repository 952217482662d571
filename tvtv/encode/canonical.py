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

# simplify-and-replace rounds of a term under premises (folding a decided atom can expose
# another in the form `atom_facts` lists)
FACT_ROUNDS = 4


class Canonicalizer:
    """Canonical forms with a memo shared across calls (source and target elements share
    most of their subterms).

    `facts` maps simplified atoms to the truth value the check's premises give them (e.g.
    "input element x[3] is NaN" -> False under no-nan, `tvtv.absfp.assumptions.atom_facts`):
    such an atom is replaced and the result simplified again. The canonical form then denotes
    the same value as the term *on every input the premises admit*, which is all a check
    compares (its queries carry the premises)."""

    def __init__(self, facts: dict[int, tuple[z3.ExprRef, z3.ExprRef]] | None = None) -> None:
        # id -> (term, canonical form); the term is kept so that Z3 does not free it and
        # reuse its id for another term
        self._memo: dict[int, tuple[z3.ExprRef, z3.ExprRef]] = {}
        self._facts = facts or {}
        # ids of memo keys whose canonical form has an atom replaced by a premise
        self._decided: set[int] = set()

    def __call__(self, term: z3.ExprRef) -> z3.ExprRef:
        out = z3.simplify(term)
        for _ in range(FACT_ROUNDS):
            root = out
            out = self._canon(root)
            if root.get_id() not in self._decided:
                break
            out = z3.simplify(out)     # a premise decided an atom: fold what it decided
        return out

    def _canon(self, root: z3.ExprRef) -> z3.ExprRef:
        # post-order with an explicit stack: fused graphs nest thousands of terms deep,
        # beyond Python's recursion limit
        memo = self._memo
        stack: list[tuple[z3.ExprRef, bool]] = [(root, False)]
        while stack:
            e, children_done = stack.pop()
            key = e.get_id()
            if key in memo:
                continue
            if key in self._facts:
                memo[key] = (e, self._facts[key][1])
                self._decided.add(key)
                continue
            if not (z3.is_app(e) and e.num_args() > 0):
                memo[key] = (e, e)      # a constant, variable or quantifier: kept as it is
                continue
            if not children_done:
                stack.append((e, True))
                stack.extend((c, False) for c in e.children() if c.get_id() not in memo)
                continue
            children = e.children()
            kids = [memo[c.get_id()][1] for c in children]
            if self._decided and any(c.get_id() in self._decided for c in children):
                self._decided.add(key)
            if e.decl().kind() in COMMUTATIVE:
                kids.sort(key=lambda c: (c.hash(), c.get_id()))
            changed = any(not k.eq(c) for k, c in zip(kids, children))
            memo[key] = (e, _rebuild(e, kids) if changed else e)
        return memo[root.get_id()][1]


def _rebuild(e: z3.ExprRef, kids: list[z3.ExprRef]) -> z3.ExprRef:
    kind = e.decl().kind()
    if kind == z3.Z3_OP_OR:
        return z3.Or(*kids)
    if kind == z3.Z3_OP_AND:
        return z3.And(*kids)
    if kind == z3.Z3_OP_DISTINCT:
        return z3.Distinct(*kids)
    return e.decl()(*kids)
