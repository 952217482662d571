"""A fresh Z3 context for each case of a run, so that what the cases a worker checked before
left in Z3 does not weigh on the next one.

tvtv builds every term in z3py's main context. Z3 keeps what a check built there: the memory
of freed terms, which later queries pay for (`bench/z3_context.py`, 2026-12-01: 200 trivial
queries took 1.8x the time of a fresh process after a zero check, 1.1x after `fresh()`),
and term ids, which go on growing and by which Z3's simplifier orders the arguments of
`or`, `=` and `+`, so the same query may take another search after other work. How much
that moves a whole check could not be isolated: Python's hash seed reorders the terms of a
check as well (seed-0 zero graph 3 after graphs 3, 11 and 12 in one process took 99.8 s in
one run and 4.2-6.1 s in six others with fixed seeds, with and without `fresh()`).

`fresh()` replaces the main context by a new one (z3py's `main_ctx()` returns its module
global `_main_ctx`), and with it what tvtv keeps of the old one at module level: the constants registered with `constant` (rebuilt, and rebound wherever a module
imported them by name) and the caches registered with `cache`
(emptied). A run's workers call it around each case (`tvtv.runner`); in a process whose
other code keeps z3 objects of its own (`--jobs 0`, the test suite, a user's program) the
context stays, and `scope()` gives a fresh one for a while and then restores the old one.
Nothing else may keep a z3 object across cases: the operator lemmas' cache holds
tvtv's own IR only (`tvtv.lemmas`), and `tests/test_z3context.py` checks that no module-level
z3 object of the old context is left after `fresh()`.
"""
from __future__ import annotations

import sys
from contextlib import contextmanager
from typing import Any, Callable, Iterator, TypeVar

import z3

T = TypeVar("T")

# (module name, attribute, factory) of every z3 object kept at module level
_CONSTANTS: list[tuple[str, str, Callable[[], Any]]] = []
# containers of z3 objects kept across calls (emptied by `fresh`)
_CACHES: list[Any] = []
# modules whose attributes may hold a registered constant imported by name
_PACKAGES = ("tvtv", "generators")


def constant(module: str, name: str, factory: Callable[[], T]) -> T:
    """`factory()`, registered as the module-level z3 object `module.name`: `fresh` builds it
    again in the new context. Use as `NAME = z3context.constant(__name__, "NAME", lambda: ...)`."""
    _CONSTANTS.append((module, name, factory))
    return factory()


def cache(container: T) -> T:
    """`container` (a dict, list or set of z3 objects kept across calls), emptied by `fresh`."""
    _CACHES.append(container)
    return container


def _ours(name: str) -> bool:
    return any(name == p or name.startswith(p + ".") for p in _PACKAGES)


def fresh() -> None:
    """Make a new Z3 context the main one and rebuild tvtv's module-level z3 objects in it.
    Every z3 object made before belongs to the old context (mixing raises "Context
    mismatch"); the old context is deleted once no object refers to it. For a process that
    holds nothing of its own in z3 (a run's worker); elsewhere `scope`."""
    _install(z3.Context(), None)


@contextmanager
def scope() -> Iterator[None]:
    """A fresh context (as `fresh`) for the duration, and the previous main context with its
    objects again after: for a process whose other code keeps z3 objects (a test module's
    domain, a user's terms)."""
    old = z3.main_ctx()
    previous = _install(z3.Context(), None)
    try:
        yield
    finally:
        _install(old, previous)


def _install(ctx: z3.Context, values: dict[tuple[str, str], Any] | None) -> dict[tuple[str, str], Any]:
    """Make `ctx` the main context, empty the caches and give every registered constant the
    value `values` holds for it (a new one from its factory where it holds none), wherever a
    module holds it; returns the constants' values before."""
    previous = {(m, n): getattr(sys.modules[m], n) for m, n, _ in _CONSTANTS if m in sys.modules}
    z3.z3._main_ctx = ctx            # z3py's main_ctx() returns this from now on
    for container in _CACHES:
        container.clear()
    rebuilt: dict[int, tuple[Any, Any]] = {}   # id(old) -> (old, new): old kept alive here
    for module_name, name, factory in _CONSTANTS:
        key = (module_name, name)
        if key in previous:
            old = previous[key]
            rebuilt[id(old)] = (old, values[key] if values and key in values else factory())
    # `from home import NAME` copies too, in any module (a test module's, a benchmark's)
    for name, m in list(sys.modules.items()):
        site = _SITES.get(name)
        if site is None or site[0] is not m:
            try:
                items = list(vars(m).items())
            except TypeError:      # an entry of sys.modules without a __dict__
                continue
            site = _SITES[name] = (m, [attr for attr, value in items if id(value) in rebuilt
                                       and rebuilt[id(value)][0] is value])
        for attr in site[1]:
            value = getattr(m, attr, None)
            pair = rebuilt.get(id(value))
            if pair is not None and pair[0] is value:
                setattr(m, attr, pair[1])
    return previous


# module name -> (the module, the attributes that held a registered constant when `_install`
# first walked it): a module copies a constant by name when it is imported, so later installs
# look at those attributes only (walking every attribute of the ~1,200 modules TVM loads took
# 22 ms per install, which a test suite giving each test a fresh context pays twice per test)
_SITES: dict[str, tuple[Any, list[str]]] = {}


def stale_objects() -> list[str]:
    """`module.attribute` of every module-level z3 object of tvtv or the generators, or
    container holding one, that is not in the current main context (what `fresh` failed to
    rebuild)."""
    ctx = z3.main_ctx()
    found = []
    for n, m in list(sys.modules.items()):
        if m is None or not _ours(n):
            continue
        for attr, value in list(vars(m).items()):
            # a z3 object itself (sorts and declarations too) or one level inside a container
            inner = list(value.keys()) + list(value.values()) if isinstance(value, dict) else \
                list(value) if isinstance(value, (list, tuple, set, frozenset)) else []
            if any(isinstance(v, z3.AstRef) and v.ctx is not ctx for v in [value, *inner]):
                found.append(f"{n}.{attr}")
    return found
