"""Recognize a reduction whose terms are all elements of one array, in any order.

`reduce_sum` over n terms `elem(r) = A[g(r)]`, where g maps [0, n) one-to-one onto [0, n),
sums exactly the multiset {A[0], ..., A[n-1]}: the same multiset as `A[r]` in index order.
Replacing the terms by A's own first n elements makes a sum over a permuted, reshaped or
differently looped layout the *same* term as the plain sum (a function of the array, no
expansion into n hashed terms), which is what keeps sums of 65,536 elements cheap.

Only valid when the summation order does not matter (`reassociate`, the default); under a
fixed order the caller must not use it. g is checked exactly: the index term is evaluated
for every r < n at once with numpy (bit-vector semantics, 32-bit wrap-around), and it must
hit every index below n exactly once. Index terms using operations outside the small set
the encoders build (add, sub, mul, udiv, urem, extract, concat, ite, comparisons) are not
recognized (the caller keeps the general encoding).
"""
from __future__ import annotations

from typing import Callable

import numpy as np
import z3

# Largest n examined (the numpy evaluation allocates a few arrays of n int64).
MAX_N = 1 << 22


class _Unknown(Exception):
    pass


def _eval(t: z3.ExprRef, r: z3.ExprRef, rv: np.ndarray, memo: dict[int, np.ndarray]) -> np.ndarray:
    """The value of bit-vector (or Boolean) term `t` for every value of `r` in `rv`."""
    key = t.get_id()
    if key in memo:
        return memo[key]
    if z3.eq(t, r):
        out = rv
    elif z3.is_bv_value(t):
        out = np.full(rv.shape, t.as_long(), dtype=np.int64)
    elif z3.is_true(t) or z3.is_false(t):
        out = np.full(rv.shape, z3.is_true(t))
    elif z3.is_app(t):
        k = t.decl().kind()
        args = [_eval(a, r, rv, memo) for a in t.children()]
        width = t.size() if z3.is_bv(t) else None
        mask = (1 << width) - 1 if width else None
        if k == z3.Z3_OP_BADD:
            out = sum(args[1:], args[0]) & mask
        elif k == z3.Z3_OP_BSUB:
            out = (args[0] - args[1]) & mask
        elif k == z3.Z3_OP_BMUL:
            out = args[0]
            for a in args[1:]:
                out = (out * a) & mask
        elif k in (z3.Z3_OP_BUDIV, z3.Z3_OP_BUDIV_I):
            out = np.where(args[1] == 0, mask, args[0] // np.where(args[1] == 0, 1, args[1]))
        elif k in (z3.Z3_OP_BUREM, z3.Z3_OP_BUREM_I):
            out = np.where(args[1] == 0, args[0], args[0] % np.where(args[1] == 0, 1, args[1]))
        elif k == z3.Z3_OP_BSHL:
            out = (args[0] << np.minimum(args[1], 63)) & mask
            out = np.where(args[1] >= width, 0, out)
        elif k == z3.Z3_OP_BLSHR:
            out = np.where(args[1] >= width, 0, args[0] >> np.minimum(args[1], 63))
        elif k == z3.Z3_OP_EXTRACT:
            hi, lo = t.params()
            out = (args[0] >> lo) & ((1 << (hi - lo + 1)) - 1)
        elif k == z3.Z3_OP_CONCAT:
            out = args[0]
            for a, c in zip(args[1:], t.children()[1:]):
                out = (out << c.size()) | a
        elif k == z3.Z3_OP_ITE:
            out = np.where(args[0], args[1], args[2])
        elif k == z3.Z3_OP_ULT:
            out = args[0] < args[1]
        elif k == z3.Z3_OP_ULEQ:
            out = args[0] <= args[1]
        elif k == z3.Z3_OP_EQ:
            out = args[0] == args[1]
        elif k == z3.Z3_OP_NOT:
            out = ~args[0]
        elif k == z3.Z3_OP_AND:
            out = np.logical_and.reduce(args)
        elif k == z3.Z3_OP_OR:
            out = np.logical_or.reduce(args)
        else:
            raise _Unknown(t.decl().name())
    else:
        raise _Unknown(str(t))
    if width := (t.size() if z3.is_bv(t) else None):
        if width > 62:
            raise _Unknown("index wider than 62 bits")
    memo[key] = out
    return out


def all_elements(elem: Callable[[z3.BitVecRef], z3.ExprRef], n: int,
                 index_sort: z3.BitVecSortRef) -> z3.ArrayRef | None:
    """The array A when `elem(r) = A[g(r)]` with g a bijection of [0, n); else None."""
    if n < 2 or n > MAX_N:
        return None
    r = z3.BitVec("tvtv_bijection_r", index_sort.size())
    t = elem(r)
    for _ in range(8):
        if not (z3.is_select(t) and z3.is_bv(t.arg(1))):
            return None
        if not z3.is_quantifier(t.arg(0)):
            break
        # a select of a lambda-built array (a permuted or reshaped view): beta-reduce and
        # look through to the array it reads
        t = z3.simplify(t)
    if not (z3.is_select(t) and z3.is_bv(t.arg(1))) or z3.is_quantifier(t.arg(0)):
        return None
    arr, g = t.arg(0), t.arg(1)
    if any(z3.eq(r, x) for x in _free_index(arr, r)):
        return None   # the array itself depends on r
    try:
        rv = np.arange(n, dtype=np.int64)
        vals = _eval(g, r, rv, {})
    except _Unknown:
        return None
    if vals.shape != rv.shape:
        vals = np.broadcast_to(vals, rv.shape)
    if vals.min() < 0 or vals.max() >= n:
        return None
    seen = np.zeros(n, dtype=bool)
    seen[vals] = True
    return arr if bool(seen.all()) else None


def _free_index(arr: z3.ExprRef, r: z3.ExprRef) -> list[z3.ExprRef]:
    """`[r]` when the array term mentions r, else []."""
    mentions = not z3.eq(z3.substitute(arr, (r, z3.BitVecVal(0, r.size()))), arr)
    return [r] if mentions else []
