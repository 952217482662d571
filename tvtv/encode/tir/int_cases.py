"""The constant cases of an integer term: a bit-vector term built of if-then-else and
bit-vector operations over a few constants (a binary search's `mid = (lo + hi) >> 1`, with
`lo` and `hi` merged over the branches of earlier rounds) takes one of a few values, each
under a condition. A scalar program reads a buffer at such an index one constant position per
case (`ScalarProgram.case_split`)."""
from __future__ import annotations

import itertools
import math
from typing import Callable

import z3

from tvtv import z3fast as zf

# The largest number of operand combinations an operation is evaluated on
CASE_PRODUCT = 16384


def and_(a: z3.BoolRef, b: z3.BoolRef) -> z3.BoolRef:
    if z3.is_true(a):
        return b
    if z3.is_true(b):
        return a
    return zf.And(a, b)


def or_(a: z3.BoolRef, b: z3.BoolRef) -> z3.BoolRef:
    if z3.is_true(a) or z3.is_true(b):
        return z3.BoolVal(True)
    return zf.Or(a, b)


def signed(k: int, bits: int) -> int:
    k &= (1 << bits) - 1
    return k - (1 << bits) if k >> (bits - 1) else k


def bv_fold(term: z3.ExprRef) -> Callable[[list[int]], int | None] | None:
    """Python's evaluation of bit-vector operation `term` on constant (signed) operands, as
    an unsigned result of the term's width (None where z3 must evaluate)."""
    kind = term.decl().kind()
    bits = term.size()
    m = (1 << bits) - 1
    if kind == z3.Z3_OP_BADD:
        return lambda a: sum(a) & m
    if kind == z3.Z3_OP_BSUB:
        return lambda a: (a[0] - a[1]) & m
    if kind == z3.Z3_OP_BMUL:
        return lambda a: math.prod(a) & m
    if kind == z3.Z3_OP_BNEG:
        return lambda a: (-a[0]) & m
    if kind == z3.Z3_OP_BASHR:
        return lambda a: (a[0] >> (a[1] & m)) & m if 0 <= (a[1] & m) < bits else None
    if kind == z3.Z3_OP_SIGN_EXT:
        return lambda a: a[0] & m
    if kind == z3.Z3_OP_ZERO_EXT:
        src = term.arg(0).size()
        return lambda a: a[0] & ((1 << src) - 1)
    if kind == z3.Z3_OP_EXTRACT:
        hi, lo = term.params()
        return lambda a: (a[0] >> lo) & ((1 << (hi - lo + 1)) - 1)
    return None


def int_cases(term: z3.ExprRef, limit: int,
               memo: dict[int, tuple[z3.ExprRef, list | None]]) -> list[tuple[z3.BoolRef, int]] | None:
    """The values of bit-vector `term` (signed) with the conditions under which it takes
    them (disjoint, covering), when `term` is built of if-then-else over conditions and
    bit-vector operations on terms of this kind, with at most `limit` values anywhere;
    None otherwise. Each operation is evaluated on its operands' constants (z3.simplify)."""
    hit = memo.get(term.get_id())
    if hit is not None:
        return hit[1]
    result: list[tuple[z3.BoolRef, int]] | None = None
    if z3.is_bv_value(term):
        v = term.as_long()
        bits = term.size()
        result = [(z3.BoolVal(True), v - (1 << bits) if v >> (bits - 1) else v)]
    elif z3.is_app_of(term, z3.Z3_OP_ITE):
        c = term.arg(0)
        a = int_cases(term.arg(1), limit, memo)
        b = int_cases(term.arg(2), limit, memo) if a is not None else None
        if a is not None and b is not None:
            merged: dict[int, z3.BoolRef] = {}
            for cond, k in [(and_(c, ca), k) for ca, k in a] + \
                    [(and_(zf.Not(c), cb), k) for cb, k in b]:
                merged[k] = or_(merged[k], cond) if k in merged else cond
            result = [(cond, k) for k, cond in merged.items()] if len(merged) <= limit else None
    elif z3.is_bv(term) and z3.is_app(term) and term.num_args() > 0 and \
            term.decl().kind() != z3.Z3_OP_UNINTERPRETED and \
            all(z3.is_bv(term.arg(j)) for j in range(term.num_args())):
        args = [int_cases(term.arg(j), limit, memo) for j in range(term.num_args())]
        if all(a is not None for a in args) and math.prod(len(a) for a in args) <= CASE_PRODUCT:  # type: ignore[arg-type]
            decl = term.decl()
            merged = {}
            ok = True
            fold = bv_fold(term)
            for combo in itertools.product(*args):   # type: ignore[arg-type]
                k = fold([kj for _, kj in combo]) if fold is not None else None
                if k is None:
                    vals = [z3.BitVecVal(kj, term.arg(j).size()) for j, (_, kj) in enumerate(combo)]
                    v = z3.simplify(decl(*vals))
                    if not z3.is_bv_value(v):
                        ok = False
                        break
                    k = v.as_long()
                k = signed(k, term.size())
                cond: z3.BoolRef = z3.BoolVal(True)
                for cj, _ in combo:
                    cond = and_(cond, cj)
                merged[k] = or_(merged[k], cond) if k in merged else cond
                if len(merged) > limit:
                    ok = False
                    break
            result = [(cond, k) for k, cond in merged.items()] if ok else None
    memo[term.get_id()] = (term, result)
    return result
