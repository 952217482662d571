"""Z3's C API on raw term pointers, for walks over large terms (`tvtv.encode.canonical`,
`tvtv.encode.abstraction.abstractions_in`, `tvtv.encode.evaluate`, `tvtv.absfp.abstract`): through z3py objects a walk costs ~0.1 ms a node in
object creation and reference counting. A raw pointer is valid while some live term holds it,
so a walk over the subterms of live terms needs no references of its own.

It also builds, for the hashed reductions (`tvtv.absfp.reductions`), the same terms z3py's
`Select` and `Sum` build, without z3py's checks and coercions on every argument
(`tests/test_z3raw.py` compares them term for term)."""
from __future__ import annotations

from typing import Any, Callable, Iterator

import z3
from z3 import z3core


def _raw(wrapper):  # type: ignore[no-untyped-def]
    """The C function behind a z3core wrapper, without its error check: used only for
    getters that cannot fail on a valid term (the wrapper's check costs as much as the call)."""
    return wrapper.__defaults__[-1].f


ID = _raw(z3core.Z3_get_ast_id)
HASH = _raw(z3core.Z3_get_ast_hash)
KIND = _raw(z3core.Z3_get_ast_kind)
NUM_ARGS = _raw(z3core.Z3_get_app_num_args)
ARG = _raw(z3core.Z3_get_app_arg)
DECL = _raw(z3core.Z3_get_app_decl)
DECL_KIND = _raw(z3core.Z3_get_decl_kind)
QUANTIFIER_BODY = _raw(z3core.Z3_get_quantifier_body)
SORT = _raw(z3core.Z3_get_sort)
SORT_ID = _raw(z3core.Z3_get_sort_id)
INC_REF = _raw(z3core.Z3_inc_ref)
DEC_REF = _raw(z3core.Z3_dec_ref)
_DECL_NAME = _raw(z3core.Z3_get_decl_name)
_SYMBOL_STRING = _raw(z3core.Z3_get_symbol_string)


def decl_name(ref: Any, decl: Any) -> str:
    """The name of a function declaration."""
    return _SYMBOL_STRING(ref, _DECL_NAME(ref, decl)).decode()


def _distinct_subterms(ref: Any, roots: list[Any], quantifiers: bool = True,
                       stop: Callable[[Any, int], bool] | None = None
                       ) -> Iterator[tuple[Any, int]]:
    """(raw subterm, its AST kind) for each distinct subterm of the raw terms `roots`
    (quantifier bodies included unless `quantifiers` is False), each once, not looking
    inside a subterm for which `stop(subterm, kind)` holds. The roots must stay alive
    meanwhile."""
    seen: set[int] = set()
    todo = list(roots)
    while todo:
        e = todo.pop()
        key = ID(ref, e)
        if key in seen:
            continue
        seen.add(key)
        kind = KIND(ref, e)
        yield e, kind
        if stop is not None and stop(e, kind):
            continue
        if kind == z3.Z3_APP_AST:
            todo.extend(ARG(ref, e, i) for i in range(NUM_ARGS(ref, e)))
        elif kind == z3.Z3_QUANTIFIER_AST and quantifiers:
            todo.append(QUANTIFIER_BODY(ref, e))


def at_most(term: Any, n: int) -> bool:
    """Has `term` (a z3 expression) at most `n` distinct subterms? Stops after n + 1."""
    for count, _ in enumerate(_distinct_subterms(term.ctx_ref(), [term.as_ast()]), 1):
        if count > n:
            return False
    return True


def uninterpreted_names(terms: Any) -> set[str]:
    """The names of the uninterpreted functions applied (to arguments) in `terms` (z3
    expressions of one context), quantifier bodies included. The terms are alive while it
    runs, so their subterms' ids are not reused."""
    terms = list(terms)
    if not terms:
        return set()
    ref = terms[0].ctx_ref()
    found: set[str] = set()
    named: set[int] = set()               # function declarations (addresses) already named
    for e, kind in _distinct_subterms(ref, [t.as_ast() for t in terms]):
        if kind != z3.Z3_APP_AST or NUM_ARGS(ref, e) == 0:
            continue
        decl = DECL(ref, e)
        if decl.value not in named and DECL_KIND(ref, decl) == z3.Z3_OP_UNINTERPRETED:
            named.add(decl.value)
            found.add(decl_name(ref, decl))
    return found


def outermost_applications(term: z3.ExprRef, value_of: Callable[[z3.ExprRef], Any]
                           ) -> list[tuple[z3.ExprRef, Any]]:
    """(application, value) for the outermost applications of uninterpreted functions (with
    arguments) in `term` that `value_of` gives a value (not None: look inside instead), each
    shared subterm visited once; quantifiers are not looked into. Only those applications
    become z3py objects: the walk is raw (measured on a FastMathTransform graph's IEEE
    evaluation, HIRGen seed 23 graph 2: the z3py walk was 73% of `evaluate.cpu_value`'s
    time). The term is alive while it runs, so its subterms' ids are not reused."""
    ctx, ref = term.ctx, term.ctx_ref()
    found: list[tuple[z3.ExprRef, Any]] = []

    def valued(e: Any, kind: int) -> bool:
        if kind != z3.Z3_APP_AST or NUM_ARGS(ref, e) == 0 \
                or DECL_KIND(ref, DECL(ref, e)) != z3.Z3_OP_UNINTERPRETED:
            return False
        t = z3.z3._to_expr_ref(e, ctx)
        value = value_of(t)
        if value is not None:
            found.append((t, value))
        return value is not None
    for _ in _distinct_subterms(ref, [term.as_ast()], quantifiers=False, stop=valued):
        pass
    return found


def selects(arr: z3.ArrayRef, n: int) -> list[z3.ExprRef]:
    """[arr[0], ..., arr[n-1]] over a bit-vector index sort: the terms `z3.Select` builds,
    made through the C API. z3py's Select checks and coerces its arguments on every call
    (measured: 24 µs a term against 2.5 µs here), and a hashed sum over a lambda array
    selects each of its n terms (seed-0 zero graph 16: 25,200 selects, sums of 1,680 terms)."""
    if n == 0:
        return []
    ctx, ref, a = arr.ctx, arr.ctx_ref(), arr.as_ast()
    index = arr.sort().domain()   # (a lambda is a QuantifierRef: ask its sort)
    first = z3.Select(arr, z3.BitVecVal(0, index.size()))
    wrap = type(first)
    out = [first]
    for k in range(1, n):
        # the numeral is referenced by the select, which is wrapped (given a reference)
        # before the next call can free it (Z3 keeps an API call's result until the next)
        out.append(wrap(z3core.Z3_mk_select(ref, a, z3core.Z3_mk_unsigned_int64(ref, k, index.ast)), ctx))
    return out


def sum_of_applications(f: z3.FuncDeclRef, terms: list[z3.ExprRef]) -> z3.ExprRef:
    """`z3.Sum([f(t) for t in terms])` for a unary integer- or real-valued `f` whose domain is
    the terms' sort (the same term, built through the C API without z3py's per-argument cast
    and coercion)."""
    if len(terms) < 2:
        return z3.Sum([f(t) for t in terms])
    ctx, ref, decl = f.ctx, f.ctx_ref(), f.ast
    wrap = type(f(terms[0]))
    one = (z3core.Ast * 1)()
    apps = []
    for t in terms:
        one[0] = t.as_ast()
        apps.append(wrap(z3core.Z3_mk_app(ref, decl, 1, one), ctx))
    args = (z3core.Ast * len(apps))(*[x.as_ast() for x in apps])
    return wrap(z3core.Z3_mk_add(ref, len(apps), args), ctx)
