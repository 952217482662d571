"""z3py's `And`, `Or`, `Not`, `If`, `Select` and `Store`, building the same terms through
Z3's C API when the arguments are already terms of the right kinds, and calling z3py's own
function for anything else (Python values to convert, arithmetic to coerce, probes, lists
of mixed contexts), so every call means exactly what z3py's would. `substitute_all` and
`simplify_all` do z3py's `substitute` and `simplify` for many terms at once.

z3py checks and coerces every argument on every call: measured here (z3 4.15, 2026-12-02),
`z3.And(a, b, c)` takes 52 µs against 4 µs, `z3.Or(a, b)` 40 µs, `z3.If` 19 µs against
3 µs, `z3.Select` 23 µs against 5 µs. The encoders build hundreds of thousands of such terms
in a check (the abstract domain's `If`/`And` for every float operation, a select for every
tensor element read), and on seed-0 `zero` graphs these constructors were a quarter to a
third of the check's time (py-spy). `tests/test_z3fast.py` compares the terms with z3py's.

Only exact classes take the fast path (`type(x) is z3.BoolRef`): a quantifier is a
`BoolRef` subclass and an integer or real `ArithRef` may need z3py's coercion, so both go
to z3py. The C calls are z3core's checked wrappers: a sort mismatch raises `Z3Exception`
as z3py would.
"""
from __future__ import annotations

from typing import Any

import z3
from z3 import z3core

from tvtv import z3context, z3raw

_Ast = z3core.Ast
_BOOL = z3.BoolRef
# exact class of a term -> the class z3py gives a term of its sort that is not a numeral
# (an `If` of two bit-vector numerals is a `BitVecRef`)
_VALUE_CLASS: dict[type, type] = {
    z3.BoolRef: z3.BoolRef,
    z3.BitVecRef: z3.BitVecRef, z3.BitVecNumRef: z3.BitVecRef,
    z3.FPRef: z3.FPRef, z3.FPNumRef: z3.FPRef,
    z3.ArrayRef: z3.ArrayRef,
}
_INDEX_CLASSES = (z3.BitVecRef, z3.BitVecNumRef)
_ARRAY_CLASSES = (z3.ArrayRef, z3.QuantifierRef)    # (a lambda is a QuantifierRef)

# (id of the context, id of an array's sort) -> (the sort, the class z3py gives its
# elements); the sort is kept so that Z3 cannot give its id to another sort (ids of freed
# terms and sorts are reused)
_ELEMENT_CLASS: dict[tuple[int, int], tuple[z3.SortRef, type]] = z3context.cache({})


def _bools(args: tuple[Any, ...]) -> z3.Context | None:
    """The context of `args` when all are plain Boolean terms of one context, else None."""
    ctx = None
    for a in args:
        if type(a) is not _BOOL:
            return None
        if ctx is None:
            ctx = a.ctx
        elif a.ctx is not ctx:
            return None
    return ctx


def And(*args: Any) -> z3.BoolRef:
    """`z3.And(*args)` (also given one list or tuple of terms)."""
    if len(args) == 1 and isinstance(args[0], (list, tuple)):
        args = tuple(args[0])
    ctx = _bools(args)
    if ctx is None:
        return z3.And(*args)
    n = len(args)
    return _BOOL(z3core.Z3_mk_and(ctx.ref(), n, (_Ast * n)(*[a.as_ast() for a in args])), ctx)


def Or(*args: Any) -> z3.BoolRef:
    """`z3.Or(*args)` (also given one list or tuple of terms)."""
    if len(args) == 1 and isinstance(args[0], (list, tuple)):
        args = tuple(args[0])
    ctx = _bools(args)
    if ctx is None:
        return z3.Or(*args)
    n = len(args)
    return _BOOL(z3core.Z3_mk_or(ctx.ref(), n, (_Ast * n)(*[a.as_ast() for a in args])), ctx)


def Not(a: Any) -> z3.BoolRef:
    """`z3.Not(a)`."""
    if type(a) is not _BOOL:
        return z3.Not(a)
    return _BOOL(z3core.Z3_mk_not(a.ctx_ref(), a.as_ast()), a.ctx)


def If(c: Any, t: Any, e: Any) -> Any:
    """`z3.If(c, t, e)`."""
    cls = _VALUE_CLASS.get(type(t))
    if (cls is None or type(c) is not _BOOL or _VALUE_CLASS.get(type(e)) is not cls
            or t.ctx is not c.ctx or e.ctx is not c.ctx):
        return z3.If(c, t, e)
    ctx = c.ctx
    return cls(z3core.Z3_mk_ite(ctx.ref(), c.as_ast(), t.as_ast(), e.as_ast()), ctx)


def Select(arr: Any, i: Any) -> Any:
    """`z3.Select(arr, i)` for one bit-vector index term."""
    if type(arr) not in _ARRAY_CLASSES or type(i) not in _INDEX_CLASSES or i.ctx is not arr.ctx:
        return z3.Select(arr, i)
    ctx = arr.ctx
    ref, a = ctx.ref(), arr.as_ast()
    key = (id(ctx), z3raw.SORT_ID(ref, z3raw.SORT(ref, a)))
    hit = _ELEMENT_CLASS.get(key)
    if hit is None:
        term = z3.Select(arr, i)
        _ELEMENT_CLASS[key] = (arr.sort(), _VALUE_CLASS.get(type(term), type(term)))
        return term
    return hit[1](z3core.Z3_mk_select(ref, a, i.as_ast()), ctx)


def Store(arr: Any, i: Any, v: Any) -> z3.ArrayRef:
    """`z3.Store(arr, i, v)` for one bit-vector index term."""
    if (type(arr) is not z3.ArrayRef or type(i) not in _INDEX_CLASSES or type(v) not in _VALUE_CLASS
            or i.ctx is not arr.ctx or v.ctx is not arr.ctx):
        return z3.Store(arr, i, v)
    ctx = arr.ctx
    return z3.ArrayRef(z3core.Z3_mk_store(ctx.ref(), arr.as_ast(), i.as_ast(), v.as_ast()), ctx)


def _same_kind(a: Any, b: Any) -> z3.Context | None:
    """The context of terms `a` and `b` when both are plain terms of one value class (see
    `_VALUE_CLASS`) and one context, else None."""
    cls = _VALUE_CLASS.get(type(a))
    if cls is None or _VALUE_CLASS.get(type(b)) is not cls or a.ctx is not b.ctx:
        return None
    return a.ctx


def _python_order(a: Any, b: Any) -> tuple[Any, Any]:
    """The operands in the order Python gives them to `__eq__`/`__ne__`: a right operand of
    a proper subclass of the left one's class goes first (`x == BitVecVal(4, 16)` calls the
    numeral's `__eq__`, and z3py builds `4 == x`)."""
    ta, tb = type(a), type(b)
    return (b, a) if ta is not tb and issubclass(tb, ta) else (a, b)


def Eq(a: Any, b: Any) -> z3.BoolRef:
    """`a == b` (z3py's `ExprRef.__eq__`: Z3's `=`, for floats structural equality)."""
    ctx = _same_kind(a, b)
    if ctx is None:
        return a == b
    a, b = _python_order(a, b)
    return _BOOL(z3core.Z3_mk_eq(ctx.ref(), a.as_ast(), b.as_ast()), ctx)


def Ne(a: Any, b: Any) -> z3.BoolRef:
    """`a != b` (z3py's `ExprRef.__ne__`: Z3's `distinct` of the two)."""
    ctx = _same_kind(a, b)
    if ctx is None:
        return a != b
    a, b = _python_order(a, b)
    return _BOOL(z3core.Z3_mk_distinct(ctx.ref(), 2, (_Ast * 2)(a.as_ast(), b.as_ast())), ctx)


_BV = z3.BitVecRef
_BV_CLASSES = (z3.BitVecRef, z3.BitVecNumRef)


def Extract(high: int, low: int, a: Any) -> z3.BitVecRef:
    """`z3.Extract(high, low, a)` of a bit-vector term."""
    if type(a) not in _BV_CLASSES or type(high) is not int or type(low) is not int:
        return z3.Extract(high, low, a)
    return _BV(z3core.Z3_mk_extract(a.ctx_ref(), high, low, a.as_ast()), a.ctx)


def Concat(a: Any, b: Any) -> z3.BitVecRef:
    """`z3.Concat(a, b)` of two bit-vector terms."""
    if type(a) not in _BV_CLASSES or type(b) not in _BV_CLASSES or a.ctx is not b.ctx:
        return z3.Concat(a, b)
    return _BV(z3core.Z3_mk_concat(a.ctx_ref(), a.as_ast(), b.as_ast()), a.ctx)


def _comparison(mk: Any, slow: Any, classes: tuple[type, ...], what: str) -> Any:
    """A fast `slow(a, b)` for two terms whose classes are in `classes`, made by the C
    function `mk`."""
    def compare(a: Any, b: Any) -> z3.BoolRef:
        if type(a) not in classes or type(b) not in classes or a.ctx is not b.ctx:
            return slow(a, b)
        return _BOOL(mk(a.ctx_ref(), a.as_ast(), b.as_ast()), a.ctx)
    compare.__name__ = slow.__name__
    compare.__doc__ = f"`z3.{slow.__name__}(a, b)` of two {what} terms."
    return compare


ULT = _comparison(z3core.Z3_mk_bvult, z3.ULT, _BV_CLASSES, "bit-vector")
ULE = _comparison(z3core.Z3_mk_bvule, z3.ULE, _BV_CLASSES, "bit-vector")
UGT = _comparison(z3core.Z3_mk_bvugt, z3.UGT, _BV_CLASSES, "bit-vector")
UGE = _comparison(z3core.Z3_mk_bvuge, z3.UGE, _BV_CLASSES, "bit-vector")


def EqNumeral(a: Any, numeral: Any) -> z3.BoolRef:
    """`a == n` for a Python int n, given n's numeral of `a`'s sort: the term z3py builds for
    `a == n` (`a` first; `Eq` of two terms puts a numeral first, as Python does)."""
    if type(a) not in _VALUE_CLASS or a.ctx is not numeral.ctx:
        return a == numeral
    return _BOOL(z3core.Z3_mk_eq(a.ctx_ref(), a.as_ast(), numeral.as_ast()), a.ctx)


_FP_CLASSES = (z3.FPRef, z3.FPNumRef)


def _fp_predicate(mk: Any, slow: Any) -> Any:
    def predicate(a: Any) -> z3.BoolRef:
        if type(a) not in _FP_CLASSES:
            return slow(a)
        return _BOOL(mk(a.ctx_ref(), a.as_ast()), a.ctx)
    predicate.__name__ = slow.__name__
    predicate.__doc__ = f"`z3.{slow.__name__}(a)` of a float term."
    return predicate


fpIsNaN = _fp_predicate(z3core.Z3_mk_fpa_is_nan, z3.fpIsNaN)
fpIsInf = _fp_predicate(z3core.Z3_mk_fpa_is_infinite, z3.fpIsInf)
fpIsZero = _fp_predicate(z3core.Z3_mk_fpa_is_zero, z3.fpIsZero)
fpIsNegative = _fp_predicate(z3core.Z3_mk_fpa_is_negative, z3.fpIsNegative)
fpIsPositive = _fp_predicate(z3core.Z3_mk_fpa_is_positive, z3.fpIsPositive)
fpLT = _comparison(z3core.Z3_mk_fpa_lt, z3.fpLT, _FP_CLASSES, "float")
fpLEQ = _comparison(z3core.Z3_mk_fpa_leq, z3.fpLEQ, _FP_CLASSES, "float")
fpGT = _comparison(z3core.Z3_mk_fpa_gt, z3.fpGT, _FP_CLASSES, "float")
fpGEQ = _comparison(z3core.Z3_mk_fpa_geq, z3.fpGEQ, _FP_CLASSES, "float")
fpEQ = _comparison(z3core.Z3_mk_fpa_eq, z3.fpEQ, _FP_CLASSES, "float")


def batch(name: str, terms: Any) -> z3.BoolRef:
    """`z3.Function(name, *[t.sort() for t in terms], z3.BoolSort())(*terms)`: one term
    holding `terms` as its arguments, so that one simplification or walk does them all
    (`tvtv.encode.canonical`). Through z3py each argument's sort is asked and cast again
    (~20 µs a term; outputs have thousands)."""
    terms = list(terms)
    if not terms or any(not isinstance(t, z3.ExprRef) or t.ctx is not terms[0].ctx for t in terms):
        return z3.Function(name, *[t.sort() for t in terms], z3.BoolSort())(*terms)
    ctx = terms[0].ctx
    ref, n = ctx.ref(), len(terms)
    args = (_Ast * n)(*[t.as_ast() for t in terms])
    sorts = (z3core.Sort * n)(*[z3raw.SORT(ref, a) for a in args])
    boolean = z3.BoolSort(ctx)
    # the declaration is referenced by the application, which is wrapped (given a
    # reference) before a further API call could free it
    decl = z3core.Z3_mk_func_decl(ref, z3.to_symbol(name, ctx), n, sorts, boolean.ast)
    return _BOOL(z3core.Z3_mk_app(ref, decl, n, args), ctx)


def substitute_all(terms: Any, pairs: Any) -> list[Any]:
    """`[z3.substitute(t, *pairs) for t in terms]`, with the pairs checked and converted
    once. z3py checks every pair's sorts again for every term it substitutes in (`p[0].sort()
    .eq(p[1].sort())`, a sort object made per side): with one pair per input element and one
    fact per output element that is quadratic, and on a typed-generator graph's pre-image
    query (`tvtv.preimage`, thousands of each) it was 43% of a 180 s `zero` check
    (py-spy). The C call is z3core's checked wrapper, as z3py's is."""
    terms, pairs = list(terms), list(pairs)
    if not terms or not pairs:
        return [z3.substitute(t, *pairs) for t in terms]
    ctx = terms[0].ctx
    if any(not z3.is_expr(t) or t.ctx is not ctx for t in terms) or any(
            not (isinstance(p, tuple) and len(p) == 2 and z3.is_expr(p[0]) and z3.is_expr(p[1])
                 and p[0].ctx is ctx and p[1].ctx is ctx) for p in pairs):
        return [z3.substitute(t, *pairs) for t in terms]
    if not all(a.sort().eq(b.sort()) for a, b in pairs):
        raise z3.Z3Exception('Z3 invalid substitution, mismatching "from" and "to" sorts.')
    ref, n = ctx.ref(), len(pairs)
    sources = (_Ast * n)(*[a.as_ast() for a, _ in pairs])
    targets = (_Ast * n)(*[b.as_ast() for _, b in pairs])
    return [z3.z3._to_expr_ref(z3core.Z3_substitute(ref, t.as_ast(), n, sources, targets), ctx)
            for t in terms]


def simplify_all(terms: Any) -> list[Any]:
    """`[z3.simplify(t) for t in terms]` in one call of Z3's simplifier, which keeps its
    cache for the whole call but none between calls: terms that share subterms (the elements
    of one tensor, read from one lambda-built array) are simplified once, not once per term.
    Measured on a typed-generator graph's pre-image queries (`tvtv.preimage`): simplifying
    the facts one by one was 99% of building them (py-spy). Each result is Z3's
    simplification of its term, so it means the same; its form may differ from a call of its
    own (the simplifier orders commutative arguments by term ids, and on a graph's larger
    queries some forms differed beyond that: `bench/preimage_query.py`)."""
    terms = list(terms)
    if len(terms) < 2:
        return [z3.simplify(t) for t in terms]
    return list(z3.simplify(batch("tvtv_simplify_batch", terms)).children())
