"""z3py's `And`, `Or`, `Not`, `If`, `Select` and `Store`, building the same terms through
Z3's C API when the arguments are already terms of the right kinds, and calling z3py's own
function for anything else (Python values to convert, arithmetic to coerce, probes, lists
of mixed contexts), so every call means exactly what z3py's would.

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

from tvtv import z3context

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
_SORT = z3core.Z3_get_sort
_SORT_ID = z3core.Z3_get_sort_id

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
    key = (id(ctx), _SORT_ID(ref, _SORT(ref, a)))
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
