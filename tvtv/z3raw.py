"""Z3's C API on raw term pointers, for walks over large terms (`tvtv.encode.canonical`,
`tvtv.encode.function.abstractions_in`, `tvtv.absfp.abstract`): through z3py objects a walk costs ~0.1 ms a node in
object creation and reference counting. A raw pointer is valid while some live term holds it,
so a walk over the subterms of live terms needs no references of its own."""
from __future__ import annotations

from typing import Any

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


def at_most(term: Any, n: int) -> bool:
    """Has `term` (a z3 expression) at most `n` distinct subterms? Stops after n + 1."""
    ref = term.ctx_ref()
    seen: set[int] = set()
    todo = [term.as_ast()]
    while todo:
        e = todo.pop()
        key = ID(ref, e)
        if key in seen:
            continue
        seen.add(key)
        if len(seen) > n:
            return False
        kind = KIND(ref, e)
        if kind == z3.Z3_APP_AST:
            todo.extend(ARG(ref, e, i) for i in range(NUM_ARGS(ref, e)))
        elif kind == z3.Z3_QUANTIFIER_AST:
            todo.append(QUANTIFIER_BODY(ref, e))
    return True
