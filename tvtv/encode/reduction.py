"""Reductions over n elements given by an index function (mlir-tv, section 5.2).

A float sum is an uninterpreted function of the lambda-built array of its n terms, with
indices ≥ n holding the identity, so two sums are equal when their term arrays are (the
hash-based commutative encoding is part of the TIR work). The summation order is unspecified by Relax's documentation, so no order is assumed:
    sum(x) = 0.0 + x_0 + ... + x_{n-1} in an unspecified order (numpy starts from +0.0,
    so a sum of -0.0 terms is +0.0), with the IEEE special cases fixed while n is small:
    any NaN or (+inf and -inf) -> NaN, else any ±inf -> ±inf.
Integer sums and products are exact (wrapping arithmetic is associative). max/min are
exact left folds of numpy.maximum/minimum for small n (NaN propagates, ties give the
later element) and uninterpreted above `MAXMIN_FOLD_BOUND`.
"""
from __future__ import annotations

from typing import Callable

import z3

from tvtv import z3fast as zf
from tvtv.absfp.dtypes import FLOAT_FORMATS, is_float
from tvtv.absfp.interface import ScalarDomain
from tvtv.encode.bijection import all_elements
from tvtv.encode.context import EncodeContext
from tvtv.encode.tensor import INDEX, idx, lambda_over_index

Elem = Callable[[z3.BitVecRef], z3.ExprRef]

# Largest n for which special values are decided term by term (the term grows with n).
SPECIAL_BOUND = 256
# Largest n for which max/min/argmax and integer sums are unrolled exactly.
FOLD_BOUND = 64
# Largest n for which a float or integer max/min (a Relax max/min, a TIR max/min loop) is the
# exact fold: the specification's fold and TIR's loop from -FLT_MAX then meet term for term
# (above, they are two unrelated uninterpreted functions and no lemma can hold). Measured: a
# max over 256 elements (the zero graphs hold ones over 256 and 300) gets its finite-values
# lemma in 2-4 s.
MAXMIN_FOLD_BOUND = 512
# Up to this n an uninterpreted reduction takes its terms as separate arguments; above it,
# one lambda-built array. (Z3 decides FP terms under a UF of a lambda array poorly: in the
# IEEE model such queries time out even for one output, while scalar arguments are fast.)
ARGS_BOUND = 32
# Sums of at most this many terms are unrolled at the last abstraction level (mlir-tv: 10).
UNROLL_BOUND = 10
UNROLL_NOTE = "small sums unrolled (index order)"
SUM_NOTE = "sum: uninterpreted"
PERMUTED_NOTE = ("sum: all elements of one array in some order, summed as that array "
                 "(the order is unspecified: reassociation)")


def uf_of_terms(ctx: EncodeContext, name: str, dtype: str, n: int, elem: Elem, fill: z3.ExprRef,
                result_sort: z3.SortRef, args_bound: int = ARGS_BOUND) -> z3.ExprRef:
    """An uninterpreted function `name` of the n terms elem(0), ..., elem(n-1): of n scalar
    arguments up to `args_bound`, else of one array."""
    if n <= args_bound:
        terms = [elem(idx(k)) for k in range(n)]
        sort = ctx.dom(dtype).sort
        return ctx.uf(f"{name}_{dtype}_{n}", *([sort] * n), result_sort)(*terms)
    if n <= SPECIAL_BOUND:
        # a store chain: Z3 solves FP queries over it far better than over a lambda
        arr = _store_chain(n, elem, fill)
    else:
        arr = term_array(ctx, dtype, n, elem, fill)
    return ctx.uf(f"{name}_{dtype}_{n}", arr.sort(), result_sort)(arr)


def _store_chain(n: int, elem: Elem, fill: z3.ExprRef) -> z3.ArrayRef:
    """The array holding elem(0..n-1) at 0..n-1 and `fill` elsewhere, as stores on a
    constant array: selects at known indices simplify away, unlike a lambda's."""
    arr = z3.K(INDEX, fill)
    for k in range(n):
        arr = zf.Store(arr, idx(k), elem(idx(k)))
    return arr


def term_array(ctx: EncodeContext, dtype: str, n: int, elem: Elem, fill: z3.ExprRef) -> z3.ArrayRef:
    """Lambda r. r < n ? elem(r) : fill."""
    return lambda_over_index(lambda r: zf.If(z3.ULT(r, idx(n)), elem(r), fill), n)


def _any(n: int, pred: Callable[[int], z3.BoolRef]) -> z3.BoolRef:
    return zf.Or(*[pred(k) for k in range(n)]) if n else z3.BoolVal(False)


def _float_specials(ctx: EncodeContext, dtype: str, n: int, elem: Elem, general: z3.ExprRef,
                    kind: str) -> z3.ExprRef:
    dom = ctx.dom(dtype)
    if n > SPECIAL_BOUND:
        return general
    terms = [elem(idx(k)) for k in range(n)]
    any_nan = zf.Or(*[dom.is_nan(t) for t in terms])
    pinf, ninf = dom.const(float("inf")), dom.const(float("-inf"))
    any_p = zf.Or(*[t == pinf for t in terms])
    any_n = zf.Or(*[t == ninf for t in terms])
    if kind == "sum":
        # In every summation order: a NaN term, or +inf and -inf together, give NaN; all-zero
        # terms give +0.0 (the accumulator starts at +0.0). A +inf term without -inf gives
        # +inf, or NaN when finite terms overflowed to -inf first ([-MAX, -MAX, +inf] summed
        # left to right): the order is unspecified, so only "+inf or NaN" is fixed.
        all_zero = zf.And(*[zf.Or(t == dom.const(0.0), t == dom.const(-0.0)) for t in terms])
        inf_or_nan_p = zf.If(dom.is_nan(general), dom.nan(), pinf)
        inf_or_nan_n = zf.If(dom.is_nan(general), dom.nan(), ninf)
        return zf.If(zf.Or(any_nan, zf.And(any_p, any_n)), dom.nan(),
                     zf.If(any_p, inf_or_nan_p, zf.If(any_n, inf_or_nan_n,
                     zf.If(all_zero, dom.const(0.0), general))))
    return _product_specials(dom, terms, general, any_nan, zf.Or(any_p, any_n))


# float products of up to this many terms get their zero and infinity cases stated
# (`_product_specials`); each case adds a term per factor
PRODUCT_SPECIAL_BOUND = 64


def _product_specials(dom: ScalarDomain, terms: list[z3.ExprRef], general: z3.ExprRef,
                      any_nan: z3.BoolRef, any_inf: z3.BoolRef) -> z3.ExprRef:
    """A float product's value in every multiplication order (IEEE 754 §6.1, §7.2), where
    one is fixed: a NaN term gives NaN; a zero and an infinity give NaN (the zero's subtree
    is ±0 or NaN, the infinity's ±inf or NaN, and 0 * inf is NaN); all-zero terms give the
    zero whose sign is the xor of theirs (a product's sign is always the xor, §6.3); a zero
    among finite terms gives that zero or NaN (the other terms may overflow to inf first:
    (MAX * MAX) * 0 is NaN, MAX * (MAX * 0) is 0); an infinity among nonzero terms gives
    the infinity of the xor sign or NaN (the others may underflow to 0 first). Otherwise
    uninterpreted. (GenCoG seed-0 graph 7: the product of floor_mod(x, x), ±0 by numpy's
    rule and +0 in TIR, was left to two unrelated function values.)"""
    if len(terms) > PRODUCT_SPECIAL_BOUND:
        return zf.If(any_nan, dom.nan(), general)
    zero = dom.const(0.0)
    one = dom.const(1.0)

    def signed_zero(t: z3.ExprRef) -> z3.ExprRef:
        # ±0 with t's sign, for a non-NaN t: 1 / ±inf, or ±0 * t
        return zf.If(dom.is_inf(t), dom.div(one, t), dom.mul(zero, t))
    sign = signed_zero(terms[0])
    for t in terms[1:]:
        sign = dom.mul(sign, signed_zero(t))        # ±0 * ±0: the xor of the signs
    is_zero = [dom.eq(t, zero) for t in terms]
    any_zero, all_zero = zf.Or(*is_zero), zf.And(*is_zero)
    or_nan = lambda v: zf.If(dom.is_nan(general), dom.nan(), v)    # noqa: E731
    return zf.If(zf.Or(any_nan, zf.And(any_zero, any_inf)), dom.nan(),
           zf.If(all_zero, sign,
           zf.If(any_zero, or_nan(sign),
           zf.If(any_inf, or_nan(dom.div(one, sign)), general))))


def reduce_sum(ctx: EncodeContext, dtype: str, n: int, elem: Elem) -> z3.ExprRef:
    dom = ctx.dom(dtype)
    if n == 0:
        return dom.const(0)
    if not is_float(dtype):
        if n <= FOLD_BOUND:
            acc = elem(idx(0))
            for k in range(1, n):
                acc = dom.add(acc, elem(idx(k)))
            return acc
        return uf_of_terms(ctx, "sum", dtype, n, elem, dom.zero(), dom.sort)
    if n == 1:
        return dom.add(dom.const(0.0), elem(idx(0)))   # +0.0 + x: only -0.0 changes
    if n <= SPECIAL_BOUND and dom.exact_reductions:
        return dom.sum([elem(idx(k)) for k in range(n)])   # the real model: exact, flat
    if n == 2 and ctx.exact_pair_sums:
        # Every order and bracketing of +0.0, a, b gives this one value: IEEE 754 addition
        # commutes, and a sum is -0.0 only when both addends are -0.0 (x + -x is +0.0 under
        # roundTiesToEven, §6.3), so +0.0 added anywhere only turns a -0.0 into +0.0.
        return dom.add(dom.add(dom.const(0.0), elem(idx(0))), elem(idx(1)))
    level = ctx.abstraction
    if level is not None and level.unroll and n <= UNROLL_BOUND:
        # last rung of the ladder: the sum in index order, +0.0 + x_0 + ... + x_{n-1} (one
        # of the orders the op allows; TIR's loops use exactly this one)
        ctx.notes.add(UNROLL_NOTE)
        acc = dom.const(0.0)
        for k in range(n):
            acc = dom.add(acc, elem(idx(k)))
        return acc
    ctx.notes.add(SUM_NOTE)
    if n > SPECIAL_BOUND and getattr(ctx, "reassociate", False):
        # all elements of one array in some order (a layout change, a reshape, TIR's loop
        # order): the sum of that array's first n elements, one term whatever the order
        arr = all_elements(elem, n, INDEX)
        if arr is not None:
            ctx.notes.add(PERMUTED_NOTE)
            terms = term_array(ctx, dtype, n, lambda r: zf.Select(arr, r), dom.const(-0.0))
            return ctx.uf(f"msum_{dtype}_{n}", terms.sort(), dom.sort)(terms)
    general = uf_of_terms(ctx, "sum", dtype, n, elem, dom.const(-0.0), dom.sort)
    return _float_specials(ctx, dtype, n, elem, general, "sum")


def reduce_prod(ctx: EncodeContext, dtype: str, n: int, elem: Elem) -> z3.ExprRef:
    dom = ctx.dom(dtype)
    if n == 0:
        return dom.const(1)
    if n == 1:
        return elem(idx(0)) if not is_float(dtype) else dom.mul(dom.const(1.0), elem(idx(0)))
    if not is_float(dtype) and n <= FOLD_BOUND:
        acc = elem(idx(0))
        for k in range(1, n):
            acc = dom.mul(acc, elem(idx(k)))
        return acc
    if is_float(dtype) and n <= SPECIAL_BOUND and dom.exact_reductions:
        return dom.prod([elem(idx(k)) for k in range(n)])
    ctx.notes.add("prod: uninterpreted")
    general = uf_of_terms(ctx, "prod", dtype, n, elem, dom.const(1), dom.sort)
    return _float_specials(ctx, dtype, n, elem, general, "prod") if is_float(dtype) else general


# bool sums and products unrolled up to this many terms (an Or / And); beyond, the same as
# a quantified formula over the term index
BOOL_UNROLL_BOUND = 4096


def reduce_bool(ctx: EncodeContext, kind: str, n: int, elem: Elem) -> z3.BoolRef:
    """sum ("any") or prod ("all") of n bool terms. TVM's bool arithmetic saturates: the
    sum of a bool tensor is its `or`, the product its `and`, in a bool result (LegalizeOps
    folds `acc or x` from False and `acc and x` from True; measured on the VM against
    numpy's any / all: tests/test_ops_statistical.py). Exact for every n: an Or / And of
    the terms, or for more than `BOOL_UNROLL_BOUND` terms "some r < n has elem(r)" /
    "every r < n has elem(r)", one bound index."""
    if kind not in ("sum", "prod"):
        raise ValueError(kind)
    if n <= BOOL_UNROLL_BOUND:
        terms = [elem(idx(k)) for k in range(n)]
        if not terms:
            return z3.BoolVal(kind == "prod")
        return zf.Or(*terms) if kind == "sum" else zf.And(*terms)
    # The bound index is named by how many such quantifiers are being built around it, so
    # that source and target build the same term (a fresh name would make alpha-equivalent
    # but different terms), and a term built inside elem (a nested large bool sum) binds
    # its own index, not this one.
    global _bool_depth
    r = z3.Const(f"bool_r{_bool_depth}", INDEX)
    _bool_depth += 1
    try:
        body = elem(r)
    finally:
        _bool_depth -= 1
    in_range = z3.ULT(r, idx(n))
    if kind == "sum":
        return z3.Exists([r], zf.And(in_range, body))
    return z3.ForAll([r], z3.Implies(in_range, body))


_bool_depth = 0


def reduce_fold(ctx: EncodeContext, dtype: str, n: int, elem: Elem, kind: str) -> z3.ExprRef:
    """max or min: the left fold of numpy.maximum / numpy.minimum."""
    dom = ctx.dom(dtype)
    step = dom.maximum if kind == "max" else dom.minimum
    if n == 0:
        raise ValueError("max/min of an empty axis")
    if n <= MAXMIN_FOLD_BOUND:
        if is_float(dtype):
            # The same value as the fold of numpy.maximum (whose every step is NaN when
            # either side is): NaN when any term is, else the fold of `a > b ? a : b` (ties
            # give the later term). Stated once, the NaN test leaves the bare chain of
            # selects TIR's `T.max` loops build, so a legalized max meets it term for term.
            terms = [elem(idx(k)) for k in range(n)]
            acc = select_chain(dom, terms, kind)
            return zf.If(zf.Or(*[dom.is_nan(t) for t in terms]), dom.nan(), acc) if n > 1 else acc
        acc = elem(idx(0))
        for k in range(1, n):
            acc = step(acc, elem(idx(k)))
        return acc
    ctx.notes.add(f"{kind}: uninterpreted")
    general = uf_of_terms(ctx, kind, dtype, n, elem, elem(idx(0)), dom.sort)
    if is_float(dtype) and n <= SPECIAL_BOUND:
        terms = [elem(idx(k)) for k in range(n)]
        return zf.If(zf.Or(*[dom.is_nan(t) for t in terms]), dom.nan(), general)
    return general


def select_chain(dom: ScalarDomain, terms: list[z3.ExprRef], kind: str) -> z3.ExprRef:
    """The left fold of `acc > t ? acc : t` (max; `<` for min) from the first term: the bare
    chain of selects both `reduce_fold` and TIR's max/min loops are stated with."""
    better = dom.gt if kind == "max" else dom.lt
    acc = terms[0]
    for t in terms[1:]:
        acc = zf.If(better(acc, t), acc, t)
    return acc


def _from_finite_bound(dom: ScalarDomain, init: z3.ExprRef, kind: str, n: int, elem: Elem,
                       step: Callable[[z3.ExprRef, z3.ExprRef], z3.ExprRef]) -> z3.ExprRef | None:
    """TIR's max loop from -FLT_MAX (min from +FLT_MAX), stated through the specification's
    select chain, or None when `init` is not that bound or `step` is not `acc > t ? acc : t`.

    The loop's value is `every term is -inf ? -FLT_MAX : chain`: its first step gives x0
    unless x0 is -inf (only -inf is below -FLT_MAX; `-FLT_MAX > NaN` is false, so a NaN
    x0 is kept, as the chain keeps it). While the terms are -inf the loop holds -FLT_MAX where
    the chain holds -inf, and the first term that is not -inf replaces either (a NaN: `acc >
    NaN` is false; a tie with -FLT_MAX is that same value); from there both take the same
    steps. (The chain alone being -inf is not the condition: [NaN, -inf] gives -inf both ways.)
    The specification's max shares the chain, so the two meet term for term and the solver
    decides only the all -inf case: a row of 4 in softmax's legalization was proved in 82 s,
    now 13 s. tests/test_tir_conformance.py proves this form equal to the loop in IEEE
    arithmetic; the abstract model keeps -FLT_MAX the least finite value too. (The real
    model has finite values below -FLT_MAX, no overflow: there this form, like `tir_max`'s
    with -FLT_MAX, takes IEEE's view that only -inf is below.)"""
    big = FLOAT_FORMATS[dom.dtype].max_value
    bound = dom.const(-big if kind == "max" else big)
    if n < 2 or not z3.eq(init, bound):
        return None
    a, t = dom.var("tvtv_step_a"), dom.var("tvtv_step_t")
    better = dom.gt if kind == "max" else dom.lt
    if not z3.eq(step(a, t), zf.If(better(a, t), a, t)):
        return None   # `T.max(t, acc)`: ties and NaNs go the other way
    terms = [elem(idx(k)) for k in range(n)]
    at_inf = zf.And(*[dom.is_signed_inf(x, -1 if kind == "max" else 1) for x in terms])
    return zf.If(at_inf, bound, select_chain(dom, terms, kind))


ARG_NOTES = ("argmax: uninterpreted", "argmin: uninterpreted")


def arg_fold_bound(ctx: EncodeContext) -> int:
    """Up to how many elements an argmax/argmin is the exact fold: `FOLD_BOUND`, and
    `MAXMIN_FOLD_BOUND` at the unrolling rung (`Abstraction.unroll`), which a check climbs
    to when the uninterpreted argmax (`ARG_NOTES`) left a counterexample unconfirmed or a
    query undecided, and where inputs are concrete (`EncodeContext.exact_arg_folds`)."""
    level = ctx.abstraction
    exact = ctx.exact_arg_folds or (level is not None and level.unroll)
    return MAXMIN_FOLD_BOUND if exact else FOLD_BOUND


def reduce_arg(ctx: EncodeContext, dtype: str, n: int, elem: Elem, kind: str,
               out_dtype: str = "int64") -> z3.ExprRef:
    """argmax / argmin: index of the first extreme element; the first NaN wins (numpy).
    An uninterpreted function of the terms above `arg_fold_bound`."""
    dom = ctx.dom(dtype)
    odom = ctx.dom(out_dtype)
    if n > arg_fold_bound(ctx):
        ctx.notes.add(ARG_NOTES[0] if kind == "max" else ARG_NOTES[1])
        return uf_of_terms(ctx, f"arg{kind}", dtype, n, elem, elem(idx(0)), odom.sort,
                           args_bound=MAXMIN_FOLD_BOUND)
    best, best_i = elem(idx(0)), odom.const(0)
    better = dom.gt if kind == "max" else dom.lt
    for k in range(1, n):
        x = elem(idx(k))
        take = zf.And(zf.Not(dom.is_nan(best)), zf.Or(dom.is_nan(x), better(x, best)))
        best_i = zf.If(take, odom.const(k), best_i)
        best = zf.If(take, x, best)
    return best_i


ARG_LOOP_NOTE = ("argmax/argmin loop: stated through the specification's argmax "
                 "(exact where no NaN is folded)")


def tir_arg_loop(ctx: EncodeContext, dtype: str, n: int, elem: Elem, kind: str,
                 init_index: z3.ExprRef, init_value: z3.ExprRef, loop: z3.ExprRef,
                 index_dtype: str = "int64") -> z3.ExprRef:
    """TIR's argmax loop (`fold.arg_reduction`: index `i` from `init_index`, value `v` from
    `init_value`, step k keeps `i` iff `v > x_k or (v == x_k and i < k)`) stated through the
    specification's `reduce_arg`, so that a Relax argmax and its legalization meet term for
    term and the solver decides only where they differ. `loop` is the loop's own index
    result (the unrolled fold, or its uninterpreted fold above `FOLD_BOUND`); it is kept where
    a NaN is folded.

    Where no term and not `init_value` is NaN and `init_index < 0` (TVM: -1 and -FLT_MAX;
    argmin +FLT_MAX): `i < k` always holds, so the step keeps `i` iff `v >= x_k`, i.e. it
    takes k iff `x_k > v`, and `v` is the running maximum of `init_value` and the terms (it
    takes x_k on ties, which only changes a zero's sign, and comparisons ignore that). So
    the result is `init_index` when no term is above `init_value` (TVM's -1 on a row of
    -FLT_MAX, docs/findings.md), and otherwise the first index of the greatest term: once a
    term above `init_value` is reached both folds hold it and take the same steps, and
    before it the specification may hold a term <= `init_value` that every later term above
    `init_value` replaces. That is `reduce_arg`'s value without NaNs (numpy's first-index
    tie rule). With a NaN the loop drops it at the next step where numpy keeps the first:
    `loop` stays. tests/test_tir_conformance.py proves this form equal to the unrolled loop
    in IEEE arithmetic for every input."""
    dom, odom = ctx.dom(dtype), ctx.dom(index_dtype)
    better = dom.gt if kind == "max" else dom.lt
    terms = [elem(idx(k)) for k in range(n)]
    exact = zf.And(zf.Not(dom.is_nan(init_value)), odom.lt(init_index, odom.const(0)),
                   *[zf.Not(dom.is_nan(t)) for t in terms])
    none_above = zf.And(*[zf.Not(better(t, init_value)) for t in terms])
    ctx.notes.add(ARG_LOOP_NOTE)
    # the terms built above, not built again (`reduce_arg` reads them at numerals only: up
    # to `MAXMIN_FOLD_BOUND` its function takes scalar arguments)
    spec = reduce_arg(ctx, dtype, n, lambda r: terms[r.as_long()], kind, index_dtype)
    return zf.If(exact, zf.If(none_above, init_index, spec), loop)


DOT_NOTE = "dot: uninterpreted function"


def dot(ctx: EncodeContext, dtype: str, n: int, a: Elem, b: Elem) -> z3.ExprRef:
    """Sum of products a_k * b_k (the sum's order unspecified, as in `reduce_sum`).

    At the coarsest abstraction level (mlir-tv §6.3, `Abstraction.dot == "uf"`) a float dot
    product is its own uninterpreted function of the two term arrays, unrelated to sums:
    cheap, and enough whenever source and target compute the same dot products."""
    dom = ctx.dom(dtype)
    level = ctx.abstraction
    if level is not None and level.dot == "uf" and is_float(dtype) and n > 1:
        ctx.notes.add(DOT_NOTE)
        fill = dom.const(0.0)
        arr_a = _store_chain(n, a, fill) if n <= SPECIAL_BOUND else term_array(ctx, dtype, n, a, fill)
        arr_b = _store_chain(n, b, fill) if n <= SPECIAL_BOUND else term_array(ctx, dtype, n, b, fill)
        return ctx.uf(f"dot_{dtype}_{n}", arr_a.sort(), arr_b.sort(), dom.sort)(arr_a, arr_b)
    return reduce_sum(ctx, dtype, n, lambda r: dom.mul(a(r), b(r)))


def tir_reduce(ctx: EncodeContext, op: str, dtype: str, init: z3.ExprRef, n: int, elem: Elem,
               step: Callable[[z3.ExprRef, z3.ExprRef], z3.ExprRef]) -> z3.ExprRef:
    """A TIR reduction block: `acc = init; for r in 0..n-1: acc = step(acc, elem(r))`.

    A float sum from +0.0 is `reduce_sum` and a float product from 1.0 is `reduce_prod`:
    the loop's order is one of the orders those leave open, so the Relax op and its loop
    nest are the same term. Any other reduction is the exact left fold for n ≤ FOLD_BOUND
    and an uninterpreted function of (init, terms) beyond (sound, not precise).
    """
    dom = ctx.dom(dtype)
    if n == 0:
        return init
    if dtype == "bool" and op in ("or", "and"):   # exact from any initial value
        folded = reduce_bool(ctx, "sum" if op == "or" else "prod", n, elem)
        if z3.eq(init, z3.BoolVal(op == "and")):
            return folded
        return zf.Or(init, folded) if op == "or" else zf.And(init, folded)
    if is_float(dtype) and op == "add" and z3.eq(init, dom.const(0.0)):
        return reduce_sum(ctx, dtype, n, elem)
    if is_float(dtype) and op == "mul" and z3.eq(init, dom.const(1.0)):
        return reduce_prod(ctx, dtype, n, elem)
    if not is_float(dtype) and op in ("add", "mul") and z3.eq(init, dom.const(0 if op == "add" else 1)):
        return (reduce_sum if op == "add" else reduce_prod)(ctx, dtype, n, elem)
    if is_float(dtype) and op in ("max", "min") and n <= MAXMIN_FOLD_BOUND:
        stated = _from_finite_bound(dom, init, op, n, elem, step)
        if stated is not None:
            return stated
    if n <= (MAXMIN_FOLD_BOUND if op in ("max", "min") else FOLD_BOUND):
        acc = init
        for k in range(n):
            acc = step(acc, elem(idx(k)))
        return acc
    ctx.notes.add(f"tir {op} reduction: uninterpreted")
    arr = term_array(ctx, dtype, n, elem, init)
    return ctx.uf(f"tir_{op}_{dtype}_{n}", dom.sort, arr.sort(), dom.sort)(init, arr)
