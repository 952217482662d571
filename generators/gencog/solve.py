"""Concolic solving of a `TypeSpec` (GenCoG paper, section 5.2 and algorithm 2).

`solve(spec, known, rng)` returns a `Solution`: concrete attributes and input/output types of
one call satisfying every constraint of `spec`, given the types of the inputs in `known`.

How (one `Session` per call):

1. **Specialise**: each known input's rank and dims bind their template variables (dims are
   exempt from the dim domain: a computed tensor may have dims > MAX_DIM), and its type also
   becomes equalities ``IN[i].rank == r``, ``IN[i].shape == [...]``, ``IN[i].dtype == t``;
   every other variable's domain (its range or choices) is a constraint; every output must
   have rank 1..MAX_RANK and at most `MAX_ELEMS` elements, every fresh input at most
   `INPUT_MAX_ELEMS`.
2. **Partial evaluation to a fixed point**: every constraint and every part of the spec is
   evaluated with what is known. References (``IN[i].shape``, ``a("axis")``) are replaced by
   their expressions, lists whose length is known become Python lists (list constructions
   make their template variables then), ForAll expands to a conjunction, Cond picks its branch,
   And/Or short-circuit. A residual conjunct ``v == c`` binds `v`. Repeat until nothing new.
3. **Constrained random sampling**: the residual constraints that are plain arithmetic and
   logic over variables (no list structure left) are *solvable*. A variable mentioned by an
   unsolvable constraint waits for the next round, except where it only fixes a list length,
   a ForAll range or a Cond's branch: deciding those unfolds the structure (GenCoG's
   definition dependencies). Preferred are variables bounded only by solvable constraints;
   failing those, any variable not waiting; failing that, one waiting variable drawn from its
   domain. The chosen variables are grouped with union-find over shared constraints and
   decided per group:
   * one variable with a small domain: uniformly among the domain values that satisfy its
     constraints (GenCoG: "a variable only bounded by a constant range is sampled directly");
   * all domains small: random order, each variable drawn among the values under which no
     constraint is infeasible by interval reasoning (forward checking), a few restarts;
   * otherwise (large domains, or forward checking kept failing) **Z3** over bit-vectors
     (`BV_WIDTH` bits, signed, with no-overflow guards on + - *), random phase selection and
     a random seed from `rng`, plus a few random bound hints kept when still satisfiable, so
     that models do not cluster at the bounds.
4. Back to 2 until everything is concrete; a constraint that evaluates to false, or a round
   that decides nothing, ends the session. Random choices can dead-end where a complete
   search would backtrack, so `solve` tries up to `SOLVE_TRIES` sessions before raising
   `SolveError`.

Everything is deterministic for a given `rng` state: no iteration over sets, Z3 seeded, and
Z3 bounded by a resource limit (`rlimit`, deterministic) instead of a wall-clock timeout.
Z3 answers that are unsat are cached by the text of the query (unsat does not depend on seed).
"""
from __future__ import annotations

import random
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Optional, Sequence

from generators.gencog import expr as E
from generators.gencog.spec import INPUT_MAX_ELEMS, MAX_ELEMS, MAX_RANK, TypeSpec
from generators.graph import TensorSpec

BV_WIDTH = 16
Z3_RLIMIT = 3_000_000
MAX_ROUNDS = 40
MAX_LIST_LEN = 64
ENUM_LIMIT = 512
"""Single-variable groups with at most this many domain values are sampled by enumeration."""
Z3_HINTS = 2
SOLVE_TRIES = 3
FORWARD_DOMAIN = 64
"""Groups whose variables all have at most this many values are sampled with forward checking."""
FORWARD_RESTARTS = 4

_UNSAT_CACHE: dict[str, bool] = {}


class SolveError(Exception):
    """The spec has no solution with the given inputs (or the solver gave up)."""


class _Undefined(Exception):
    """An expression has no value (index out of range, division by zero)."""


@dataclass
class Solution:
    """A solved call: attribute values (in the spec's order), input and output types."""

    attrs: dict[str, Any]
    in_types: list[TensorSpec]
    out_types: list[TensorSpec]


def _concrete(v: Any) -> bool:
    if isinstance(v, E.Expr):
        return False
    if isinstance(v, list):
        return all(_concrete(x) for x in v)
    return True


def _wrap(v: Any) -> E.Expr:
    """A partial-evaluation result as an expression (Python lists as List literals)."""
    if isinstance(v, E.Expr):
        return v
    if isinstance(v, list):
        return E.List([_wrap(x) for x in v])
    return E.Const(v)


_PY_ARITH = {
    "+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b,
    "max": max, "min": min,
}
_PY_CMP = {
    "==": lambda a, b: a == b, "!=": lambda a, b: a != b, "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b, ">": lambda a, b: a > b, ">=": lambda a, b: a >= b,
}


def _py_arith(op: str, a: Any, b: Any) -> Any:
    if op in ("//", "%"):
        if b == 0:
            raise _Undefined(f"{a} {op} 0")
        return a // b if op == "//" else a % b
    return _PY_ARITH[op](a, b)


class Session:
    """One solving of one spec (see the module docstring)."""

    def __init__(self, spec: TypeSpec, known: dict[int, TensorSpec], rng: random.Random,
                 in_num: Optional[int] = None) -> None:
        self.spec, self.known, self.rng = spec, known, rng
        self.env: dict[int, Any] = {}  # Var uid -> value
        self.vars: dict[int, E.Var] = {}  # registered Vars, in order of first meeting
        self.cache: dict[int, Any] = {}  # id(node) -> instantiation (ListGen, ForAll, ...)
        self.keep: list[Any] = []  # keeps cached nodes alive so their ids stay unique
        self.memo: dict[int, Any] = {}
        self.constraints: list[E.Expr] = []
        self.z3_calls = 0
        self.speculative = False  # trying values: do not register the variables met
        self.exempting = False  # registering dims of known inputs: no domain constraint
        self._build_constraints(in_num)
        self._bind_known(in_num)

    # -- setup ------------------------------------------------------------------------------
    def _build_constraints(self, in_num: Optional[int]) -> None:
        spec = self.spec
        cs: list[E.Expr] = list(spec.extra)
        if in_num is not None:
            cs.append(E.NumRef("in") == in_num)
        for i, t in sorted(self.known.items()):
            cs.append(E.IN[i].rank == t.ndim)
            cs.append(E.IN[i].dtype == t.dtype)
            cs.append(E.IN[i].shape == E.List(list(t.shape)))
        known_idx = E.List(sorted(self.known))
        cs.append(E.ForAll(E.IN.num, lambda i: E.Cond(
            E.InSet(i, known_idx), True,
            E.ReduceArray(E.IN[i].shape, "*", 1) <= INPUT_MAX_ELEMS)))
        cs.append(E.ForAll(E.OUT.num, lambda i: E.And(
            E.Len(E.OUT[i].shape) >= 1, E.Len(E.OUT[i].shape) <= MAX_RANK,
            E.ForAll(E.Len(E.OUT[i].shape), lambda j: E.OUT[i].shape[j] >= 1),
            E.ReduceArray(E.OUT[i].shape, "*", 1) <= MAX_ELEMS)))
        self.constraints = cs

    def _bind_known(self, in_num: Optional[int]) -> None:
        """Bind the template variables of the known inputs to their types. Their dims are
        exempt from the dim domain (a known tensor may have dims > MAX_DIM); ranks and dtypes
        keep theirs (they are what the spec accepts)."""
        try:
            n = self.pe(self.spec.in_num)
            if isinstance(n, E.Var) and in_num is not None:
                self.env[n.uid] = in_num
            for i, t in sorted(self.known.items()):
                self.memo.clear()
                r = self.pe(E.IN[i].rank)
                if isinstance(r, E.Var) and r.uid not in self.env:
                    self.env[r.uid] = t.ndim
                self.memo.clear()
                self.exempting = True
                shape = self.pe(E.IN[i].shape)
                self.exempting = False
                if isinstance(shape, list) and len(shape) == t.ndim:
                    for v, d in zip(shape, t.shape):
                        if isinstance(v, E.Var) and v.uid not in self.env:
                            self.env[v.uid] = d
        except _Undefined as ex:
            raise SolveError(str(ex)) from None
        finally:
            self.exempting = False
            self.memo.clear()

    def _parts(self) -> list[E.Expr]:
        s = self.spec
        return [s.in_num, s.in_ranks, s.in_dtypes, s.in_shapes, s.out_num, s.out_dtypes,
                s.out_shapes] + [e for _, e in s.attrs]

    # -- partial evaluation ---------------------------------------------------------------------
    def _register(self, v: E.Var) -> None:
        if v.uid in self.vars or self.speculative:
            return
        self.vars[v.uid] = v
        if self.exempting:
            return
        if v.ran is not None:
            self.constraints.append(E.And(v.ran[0] <= v, v <= v.ran[1]))
        if v.choices is not None:
            self.constraints.append(E.InSet(v, v.choices))

    def pe(self, e: E.Expr) -> Any:
        """Partially evaluate `e`: a Python value (lists as Python lists, possibly with
        residual elements) or a residual expression."""
        got = self.memo.get(id(e))
        if got is not None and got[0] is e:
            return got[1]
        r = self._pe(e)
        self.memo[id(e)] = (e, r)  # holding e keeps its id from being reused meanwhile
        return r

    def _cached(self, node: E.Expr, tag: Any, make: Any) -> Any:
        key = (id(node), tag)
        got = self.cache.get(key)  # type: ignore[call-overload]
        if got is None:
            got = self.cache[key] = make()  # type: ignore[index]
            self.keep.append(node)
        return got

    def _pe(self, e: E.Expr) -> Any:  # noqa: C901 (one case per node kind)
        if isinstance(e, E.Const):
            return list(e.value) if isinstance(e.value, tuple) else e.value
        if isinstance(e, E.Var):
            self._register(e)
            return self.env.get(e.uid, e)
        if isinstance(e, E.Arith):
            x, y = self.pe(e.a), self.pe(e.b)
            if _concrete(x) and _concrete(y):
                return _py_arith(e.op, x, y)
            if isinstance(x, list) or isinstance(y, list):
                return e
            return E.Arith(e.op, _wrap(x), _wrap(y))
        if isinstance(e, E.Cmp):
            return self._pe_cmp(e.op, self.pe(e.a), self.pe(e.b), e)
        if isinstance(e, E.Not):
            x = self.pe(e.a)
            return (not x) if _concrete(x) else E.Not(_wrap(x))
        if isinstance(e, (E.And, E.Or)):
            is_and = isinstance(e, E.And)
            rest = []
            for arg in e.args:
                x = self.pe(arg)
                if _concrete(x):
                    if bool(x) != is_and:  # False in And, True in Or
                        return not is_and
                    continue
                rest.append(_wrap(x))
            if not rest:
                return is_and
            if len(rest) == 1:
                return rest[0]
            return E.And(*rest) if is_and else E.Or(*rest)
        if isinstance(e, E.Cond):
            p = self.pe(e.p)
            if _concrete(p):
                return self.pe(e.t if p else e.f)
            t, f = self.pe(e.t), self.pe(e.f)
            if isinstance(t, list) or isinstance(f, list):
                return e
            return E.Cond(_wrap(p), _wrap(t), _wrap(f))
        if isinstance(e, E.ForAll):
            lo, hi = self.pe(e.start), self.pe(e.end)
            if not (isinstance(lo, int) and isinstance(hi, int)):
                return e
            body = self._cached(e, (lo, hi), lambda: E.And(
                *[E.to_expr(e.body(E.Const(i))) for i in range(lo, hi)]))
            return self.pe(body)
        if isinstance(e, E.List):
            return [self.pe(x) for x in e.items]
        if isinstance(e, E.ListGen):
            n = self.pe(e.length)
            if not isinstance(n, int):
                return e
            if n < 0 or n > MAX_LIST_LEN:
                raise _Undefined(f"list length {n}")
            items = self._cached(e, n, lambda: [E.to_expr(e.body(E.Const(i)))
                                                for i in range(n)])
            return [self.pe(x) for x in items]
        if isinstance(e, E.GetItem):
            lst, idx = self.pe(e.lst), self.pe(e.idx)
            if isinstance(lst, list) and isinstance(idx, int):
                if not -len(lst) <= idx < len(lst):
                    raise _Undefined(f"index {idx} of a list of {len(lst)}")
                return lst[idx]
            if isinstance(lst, list) and lst and not any(isinstance(x, list) for x in lst):
                # unknown index into a known list: a Cond chain (range checked separately)
                out: E.Expr = _wrap(lst[-1])
                for k in range(len(lst) - 2, -1, -1):
                    out = E.Cond(_wrap(idx) == k, _wrap(lst[k]), out)
                return out
            return e
        if isinstance(e, E.Slice):
            lst = self.pe(e.lst)
            lo = 0 if e.lo is None else self.pe(e.lo)
            hi = None if e.hi is None else self.pe(e.hi)
            if isinstance(lst, list) and isinstance(lo, int) and (hi is None or isinstance(hi, int)):
                return lst[lo:hi]
            return e
        if isinstance(e, E.Len):
            lst = self.pe(e.lst)
            if isinstance(lst, list):
                return len(lst)
            if isinstance(lst, E.ListGen):
                n = self.pe(lst.length)
                return n if isinstance(n, int) else _wrap(n)
            return e
        if isinstance(e, E.Concat):
            parts = [self.pe(x) for x in e.lists]
            if all(isinstance(p, list) for p in parts):
                return [x for p in parts for x in p]
            return e
        if isinstance(e, E.Map):
            lst = self.pe(e.lst)
            if not isinstance(lst, list):
                return e
            items = self._cached(e, _list_key(lst),
                                 lambda: [E.to_expr(e.fn(_wrap(x))) for x in lst])
            return [self.pe(x) for x in items]
        if isinstance(e, E.Filter):
            lst = self.pe(e.lst)
            if not isinstance(lst, list):
                return e
            preds = self._cached(e, _list_key(lst), lambda: [E.to_expr(e.pred(_wrap(x)))
                                                             for x in lst])
            out_l = []
            for x, p in zip(lst, preds):
                pv = self.pe(p)
                if not _concrete(pv):
                    return e
                if pv:
                    out_l.append(x)
            return out_l
        if isinstance(e, E.ReduceArray):
            lst, init = self.pe(e.lst), self.pe(e.init)
            if not isinstance(lst, list):
                return e
            acc: Any = init
            for x in lst:
                if _concrete(acc) and _concrete(x):
                    acc = _py_arith(e.op, acc, x)
                else:
                    acc = E.Arith(e.op, _wrap(acc), _wrap(x))
            return acc
        if isinstance(e, E.InSet):
            x, lst = self.pe(e.elem), self.pe(e.lst)
            if not (isinstance(lst, list) and _concrete(lst)):
                return e
            if _concrete(x):
                return x in lst
            if isinstance(x, list):
                return e
            return E.InSet(_wrap(x), E.List(lst))
        if isinstance(e, E.Subset):
            lst = self.pe(e.lst)
            if not (isinstance(lst, list) and _concrete(lst)):
                return e
            def pick() -> list[Any]:
                hi = len(lst) if e.max_len is None else min(e.max_len, len(lst))
                if hi < e.min_len:
                    raise _Undefined("subset of a too short list")
                k = self.rng.randint(e.min_len, hi)
                idx = sorted(self.rng.sample(range(len(lst)), k))
                return [lst[i] for i in idx]
            return list(self._cached(e, tuple(lst), pick))
        if isinstance(e, E.Perm):
            lst = self.pe(e.lst)
            if not (isinstance(lst, list) and _concrete(lst)):
                return e
            return list(self._cached(e, tuple(lst), lambda: self.rng.sample(lst, len(lst))))
        if isinstance(e, E.Divisors):
            n = self.pe(e.n)
            if not isinstance(n, int):
                return e
            if n < 1:
                raise _Undefined(f"divisors of {n}")
            return [d for d in range(1, n + 1) if n % d == 0]
        if isinstance(e, E.TensorRef):
            return self._pe_tensor(e)
        if isinstance(e, E.NumRef):
            return self.pe(self.spec.in_num if e.side == "in" else self.spec.out_num)
        if isinstance(e, E.AttrRef):
            return self.pe(self.spec.attr(e.name))
        raise TypeError(f"cannot evaluate {type(e).__name__}")

    def _pe_cmp(self, op: str, x: Any, y: Any, e: E.Expr) -> Any:
        if _concrete(x) and _concrete(y):
            return _PY_CMP[op](x, y)
        if isinstance(x, list) and isinstance(y, list) and op in ("==", "!="):
            if len(x) != len(y):
                return op == "!="
            parts = [self._pe_cmp(op, a, b, e) for a, b in zip(x, y)]
            if op == "==":
                return self.pe(E.And(*[_wrap(p) for p in parts]))
            return self.pe(E.Or(*[_wrap(p) for p in parts]))
        if isinstance(x, list) or isinstance(y, list):
            return e
        return E.Cmp(op, _wrap(x), _wrap(y))

    def _pe_tensor(self, e: E.TensorRef) -> Any:
        i = self.pe(e.idx)
        if not isinstance(i, int):
            return e
        s = self.spec
        if e.side == "in":
            part = {"rank": s.in_ranks, "shape": s.in_shapes, "dtype": s.in_dtypes}[e.field]
        else:
            part = {"rank": s.out_shapes, "shape": s.out_shapes, "dtype": s.out_dtypes}[e.field]
        lst = self.pe(part)
        if not isinstance(lst, list):
            return e
        if not 0 <= i < len(lst):
            raise _Undefined(f"{e.side}put {i} of {len(lst)}")
        item = lst[i]
        if e.side == "out" and e.field == "rank":
            return len(item) if isinstance(item, list) else e
        return item

    # -- the fixed point ----------------------------------------------------------------------
    def propagate(self) -> list[E.Expr]:
        """Simplify until nothing changes; returns the residual conjuncts (binding every
        ``var == const`` met on the way). Raises SolveError on a false constraint."""
        while True:
            self.memo.clear()
            bound = False
            try:
                for part in self._parts():
                    self.pe(part)
                residual: list[E.Expr] = []
                k = 0
                while k < len(self.constraints):  # may grow as variables register
                    r = self.pe(self.constraints[k])
                    k += 1
                    for c in _conjuncts(r):
                        if c is True:
                            continue
                        if c is False:
                            raise SolveError(f"constraint {self.constraints[k - 1]!r} is false")
                        if self._bind(c):
                            bound = True
                            self.memo.clear()
                        else:
                            residual.append(c)
            except _Undefined as ex:
                raise SolveError(str(ex)) from None
            self.constraints = residual
            if not bound:
                return residual

    def _bind(self, c: Any) -> bool:
        if isinstance(c, E.Var) and c.kind == E.BOOL:
            self.env[c.uid] = True
            return True
        if isinstance(c, E.Not) and isinstance(c.a, E.Var):
            self.env[c.a.uid] = False
            return True
        if isinstance(c, E.Cmp) and c.op == "==":
            for v, k in ((c.a, c.b), (c.b, c.a)):
                if isinstance(v, E.Var) and isinstance(k, E.Const) and v.uid not in self.env:
                    self.env[v.uid] = k.value
                    return True
        return False

    # -- sampling -----------------------------------------------------------------------------
    def sample_round(self, residual: list[E.Expr]) -> bool:
        """Decide the solvable variables; False if none could be decided."""
        solvable: list[E.Expr] = []
        blocked: set[int] = set()
        for c in residual:
            if _is_solvable(c):
                solvable.append(c)
            else:
                _blocked_vars(c, blocked, self)
        # Tier 1: variables bounded only by solvable constraints (a solvable constraint that
        # mentions a waiting variable makes its other variables wait too). Tier 2, when tier 1
        # is empty: every variable not itself waiting (deferred constraints are rechecked
        # later). Tier 3: one waiting variable with a concrete domain, drawn from it.
        strict = set(blocked)
        grew = True
        while grew:
            grew = False
            for c in solvable:
                vs = _vars_of(c)
                if any(v in strict for v in vs) and not all(v in strict for v in vs):
                    strict.update(vs)
                    grew = True
        unbound = [uid for uid in self.vars if uid not in self.env]
        pending = [uid for uid in unbound if uid not in strict]
        if not pending:
            pending = [uid for uid in unbound if uid not in blocked]
        if not pending:
            for uid in self.rng.sample(unbound, len(unbound)):
                dom = self._domain(self.vars[uid])
                if dom:
                    self.env[uid] = self.rng.choice(dom)
                    self.memo.clear()
                    return True
            return False
        pend_set = set(pending)
        parent = {uid: uid for uid in pending}

        def find(u: int) -> int:
            while parent[u] != u:
                parent[u] = parent[parent[u]]
                u = parent[u]
            return u

        groups_cs: dict[int, list[E.Expr]] = {}
        usable: list[tuple[E.Expr, list[int]]] = []
        for c in solvable:
            vs = _vars_of(c)
            if any(v not in pend_set for v in vs):
                continue  # mentions a blocked variable: next round
            usable.append((c, vs))
            for v in vs[1:]:
                ra, rb = find(vs[0]), find(v)
                if ra != rb:
                    parent[rb] = ra
        for c, vs in usable:
            if vs:
                groups_cs.setdefault(find(vs[0]), []).append(c)
        members: dict[int, list[int]] = {}
        for uid in pending:
            members.setdefault(find(uid), []).append(uid)
        for root, uids in members.items():
            cs = groups_cs.get(root, [])
            if len(uids) == 1 and self._enumerate(self.vars[uids[0]], cs):
                continue
            if self._forward_sample(uids, cs):
                continue
            self._z3(uids, cs)
        return True

    def _forward_sample(self, uids: list[int], cs: list[E.Expr]) -> bool:
        """Random sampling with forward checking for a group whose variables all have small
        concrete domains: variables in random order (among those whose domain is concrete
        by then), each drawn among the values under which no constraint of the group is
        already infeasible by interval reasoning (`_feasible`); a dead end restarts (at most
        `FORWARD_RESTARTS` times). False (nothing bound) when some domain is not small or
        every attempt hit a dead end: the group then goes to Z3."""
        by_var: dict[int, list[E.Expr]] = {u: [] for u in uids}
        for c in cs:
            for v in _vars_of(c):
                if v in by_var:
                    by_var[v].append(c)
        for _ in range(FORWARD_RESTARTS):
            todo = list(uids)
            done: list[int] = []
            while todo:
                ready = []
                for u in todo:
                    self.memo.clear()
                    d = self._domain(self.vars[u])
                    if d is not None:
                        ready.append((u, d))
                if not ready or any(len(d) > FORWARD_DOMAIN for _, d in ready):
                    for x in done:
                        self.env.pop(x, None)
                    self.memo.clear()
                    return False
                u, dom = self.rng.choice(ready)
                todo.remove(u)
                ok = []
                self.speculative = True
                for val in dom:
                    self.env[u] = val
                    self.memo.clear()
                    try:
                        if all(self._feasible(self.pe(c)) for c in by_var[u]):
                            ok.append(val)
                    except _Undefined:
                        pass
                self.speculative = False
                if not ok:
                    del self.env[u]
                    break
                self.env[u] = self.rng.choice(ok)
                done.append(u)
            if not todo and len(done) == len(uids):
                self.memo.clear()
                try:
                    if all(self.pe(c) is True for c in cs):
                        return True
                except _Undefined:
                    pass
            for u in done:
                self.env.pop(u, None)
            self.memo.clear()
        return False

    def _interval(self, e: Any) -> Optional[tuple[int, int]]:
        """Bounds of an integer residual expression, unbound variables ranging over their
        domains (None when unknown)."""
        if isinstance(e, bool):
            return None
        if isinstance(e, int):
            return (e, e)
        if isinstance(e, E.Const):
            return self._interval(e.value)
        if isinstance(e, E.Var):
            if e.uid in self.env:
                return self._interval(self.env[e.uid])
            if e.kind != E.INT:
                return None
            d = self._domain(e)
            return (min(d), max(d)) if d else None
        if isinstance(e, E.Arith):
            ia, ib = self._interval(e.a), self._interval(e.b)
            if ia is None or ib is None:
                return None
            (al, ah), (bl, bh) = ia, ib
            if e.op == "+":
                return (al + bl, ah + bh)
            if e.op == "-":
                return (al - bh, ah - bl)
            if e.op == "*":
                ps = (al * bl, al * bh, ah * bl, ah * bh)
                return (min(ps), max(ps))
            if e.op == "max":
                return (max(al, bl), max(ah, bh))
            if e.op == "min":
                return (min(al, bl), min(ah, bh))
            if bl <= 0:
                return None
            if e.op == "//":
                ps = (al // bl, al // bh, ah // bl, ah // bh)
                return (min(ps), max(ps))
            return (0, bh - 1) if al >= 0 else None
        if isinstance(e, E.Cond):
            it, if_ = self._interval(e.t), self._interval(e.f)
            if it is None or if_ is None:
                return None
            return (min(it[0], if_[0]), max(it[1], if_[1]))
        return None

    def _feasible(self, r: Any) -> bool:
        """False only if residual `r` cannot hold whatever the unbound variables become."""
        if r is True or r is False:
            return r
        if isinstance(r, E.And):
            return all(self._feasible(x) for x in r.args)
        if isinstance(r, E.Or):
            return any(self._feasible(x) for x in r.args)
        if isinstance(r, E.Cmp):
            ia, ib = self._interval(r.a), self._interval(r.b)
            if ia is None or ib is None:
                return True
            (al, ah), (bl, bh) = ia, ib
            return {"<=": al <= bh, "<": al < bh, ">=": ah >= bl, ">": ah > bl,
                    "==": al <= bh and bl <= ah,
                    "!=": not (al == ah == bl == bh)}[r.op]
        return True

    def _domain(self, v: E.Var) -> Optional[list[Any]]:
        if v.choices is not None:
            ch = self.pe(v.choices)
            return ch if isinstance(ch, list) and _concrete(ch) else None
        lo, hi = self.pe(v.ran[0]), self.pe(v.ran[1])  # type: ignore[index]
        if isinstance(lo, int) and isinstance(hi, int) and hi - lo + 1 <= ENUM_LIMIT:
            return list(range(lo, hi + 1))
        return None

    def _enumerate(self, v: E.Var, cs: list[E.Expr]) -> bool:
        """Sample `v` uniformly among its domain values satisfying `cs` (False if its domain
        is not small and concrete)."""
        dom = self._domain(v)
        if dom is None:
            return False
        ok = []
        self.speculative = True
        for val in dom:
            self.env[v.uid] = val
            self.memo.clear()
            try:
                if all(self.pe(c) is True for c in cs):
                    ok.append(val)
            except _Undefined:
                pass
        self.speculative = False
        del self.env[v.uid]
        self.memo.clear()
        if not ok:
            raise SolveError(f"no value of {v!r} satisfies {cs!r}")
        self.env[v.uid] = self.rng.choice(ok)
        return True

    def _z3(self, uids: list[int], cs: list[E.Expr]) -> None:
        import z3

        self.z3_calls += 1
        seed = self.rng.randrange(1 << 30)  # drawn first: a cache hit consumes the same
        # strings/dtypes get codes by sorted value within this query, and every query has
        # its own Z3 context: the answer depends on the query and the seed only, not on what
        # this process solved before
        strings = sorted({x.value for c in cs for x in E.walk(c)
                          if isinstance(x, E.Const) and isinstance(x.value, str)})
        ctx = z3.Context()
        enc = _Z3Encoder(self.vars, {v: k + 1 for k, v in enumerate(strings)}, ctx)
        formulas = [enc.encode(c) for c in cs]
        formulas = enc.side + formulas
        key = "\n".join(sorted(f.sexpr() for f in formulas))
        if key in _UNSAT_CACHE:
            raise SolveError("unsatisfiable (cached)")
        s = z3.Solver(ctx=ctx)
        s.set("random_seed", seed)
        s.set("phase_selection", 5)
        s.set("rlimit", Z3_RLIMIT)
        s.add(*formulas)
        res = s.check()
        if res == z3.unsat:
            _UNSAT_CACHE[key] = True
            raise SolveError("unsatisfiable")
        if res != z3.sat:
            raise SolveError("z3 gave up")
        # random bound hints, kept when still satisfiable (spreads models over the domain)
        model = s.model()
        ints = [u for u in uids if self.vars[u].kind == E.INT and u in enc.syms]
        for u in self.rng.sample(ints, min(Z3_HINTS, len(ints))):
            cur = model.eval(enc.syms[u], model_completion=True).as_signed_long()
            dom = self._domain(self.vars[u])
            target = self.rng.choice(dom) if dom else cur + self.rng.randint(-4, 4)
            if target == cur:
                continue
            s.push()
            sym = enc.syms[u]
            s.add(sym >= target if target > cur else sym <= target)
            if s.check() == z3.sat:
                model = s.model()
            else:
                s.pop()
        for u in uids:
            v = self.vars[u]
            if u not in enc.syms:
                dom = self._domain(v)
                if not dom:
                    raise SolveError(f"{v!r} has no concrete domain")
                self.env[u] = self.rng.choice(dom)
                continue
            val = model.eval(enc.syms[u], model_completion=True)
            if v.kind == E.BOOL:
                self.env[u] = z3.is_true(val)
            elif v.kind == E.INT:
                self.env[u] = val.as_signed_long()
            else:
                code = val.as_long()
                back = [k for k, c in enc.codes.items() if c == code]
                if not back:
                    raise SolveError(f"z3 chose no value for {v!r}")
                self.env[u] = back[0]
        self.memo.clear()

    # -- driver -------------------------------------------------------------------------------
    def run(self) -> Solution:
        for _ in range(MAX_ROUNDS):
            residual = self.propagate()
            parts = [self.pe(p) for p in self._parts()]
            if not residual and all(_concrete(p) for p in parts):
                return self._solution()
            if not self.sample_round(residual):
                raise SolveError(f"stuck with {len(residual)} residual constraints: "
                                 f"{residual[:3]!r}")
        raise SolveError("too many rounds")

    def _solution(self) -> Solution:
        s = self.spec
        attrs = {n: self.pe(e) for n, e in s.attrs}
        n_in, n_out = self.pe(s.in_num), self.pe(s.out_num)
        shapes, dtypes = self.pe(s.in_shapes), self.pe(s.in_dtypes)
        oshapes, odtypes = self.pe(s.out_shapes), self.pe(s.out_dtypes)
        if len(shapes) != n_in or len(dtypes) != n_in or len(oshapes) != n_out:
            raise SolveError("inconsistent tensor counts")
        ins = [TensorSpec(tuple(sh), dt) for sh, dt in zip(shapes, dtypes)]
        outs = [TensorSpec(tuple(sh), dt) for sh, dt in zip(oshapes, odtypes)]
        return Solution(attrs, ins, outs)


def _list_key(lst: list[Any]) -> tuple[Any, ...]:
    """A cache key for a partially evaluated list: concrete elements by value, residual ones
    by identity (the same Var is the same object)."""
    return tuple(("c", repr(x)) if _concrete(x) else ("e", id(x)) for x in lst)


def _conjuncts(r: Any) -> list[Any]:
    if isinstance(r, E.And):
        out: list[Any] = []
        for x in r.args:
            out.extend(_conjuncts(x))
        return out
    if isinstance(r, E.Const):
        return [r.value]
    return [r]


_SOLVABLE_NODES = (E.Const, E.Var, E.Arith, E.Cmp, E.Not, E.And, E.Or, E.Cond, E.InSet, E.List)


def _is_solvable(c: E.Expr) -> bool:
    """Plain arithmetic and logic over variables: no list structure or reference left."""
    stack = [c]
    while stack:
        x = stack.pop()
        if isinstance(x, E.Var):
            continue  # its domain is a constraint of its own
        if not isinstance(x, _SOLVABLE_NODES):
            return False
        stack.extend(x.children())
    return True


def _vars_of(c: E.Expr) -> list[int]:
    out: list[int] = []
    stack = [c]
    while stack:
        x = stack.pop()
        if isinstance(x, E.Var):
            if x.uid not in out:
                out.append(x.uid)
            continue
        stack.extend(reversed(x.children()))
    return out


def _blocked_vars(c: E.Expr, blocked: set[int], sess: Session) -> None:
    """Add to `blocked` the variables of an unsolvable residual `c` that must wait; those
    only fixing a list length, a ForAll range or a Cond's branch are not blocked (deciding
    them unfolds the structure)."""
    stack: list[E.Expr] = [c]
    while stack:
        x = stack.pop()
        if isinstance(x, E.Var):
            blocked.add(x.uid)
            continue
        if isinstance(x, (E.ListGen, E.ForAll)):
            continue  # its length / range variables are structural
        if isinstance(x, E.Cond):
            stack.extend((x.t, x.f))  # the predicate chooses structure: structural
            continue
        if isinstance(x, (E.TensorRef, E.NumRef, E.AttrRef)):
            # a reference that could not be resolved: what it stands for waits too
            r = sess.pe(x) if not isinstance(x, E.TensorRef) else x
            if isinstance(r, E.Expr) and r is not x:
                stack.append(r)
            continue
        stack.extend(x.children())


class _Z3Encoder:
    """Scalar residual expressions as Z3 terms: ints as `BV_WIDTH`-bit signed bit-vectors,
    bools as Bools, strings/dtypes as bit-vector `codes`, all in context `ctx`. Arithmetic that could
    overflow gets a no-overflow side condition in `side`."""

    def __init__(self, vars_: dict[int, E.Var], codes: dict[str, int], ctx: Any) -> None:
        self.vars, self.codes, self.ctx = vars_, codes, ctx
        self.syms: dict[int, Any] = {}
        self.side: list[Any] = []

    def encode(self, e: Any) -> Any:  # noqa: C901
        import z3

        W = BV_WIDTH
        if isinstance(e, E.Const):
            v = e.value
            if isinstance(v, bool):
                return z3.BoolVal(v, self.ctx)
            if isinstance(v, int):
                return z3.BitVecVal(v, W, self.ctx)
            if isinstance(v, (str,)):
                return z3.BitVecVal(self.codes[v], W, self.ctx)
            raise SolveError(f"cannot encode constant {v!r}")
        if isinstance(e, E.Var):
            sym = self.syms.get(e.uid)
            if sym is None:
                name = f"x{len(self.syms)}"  # by order of meeting: unsat-cache keys generalise
                if e.kind == E.BOOL:
                    sym = z3.Bool(name, self.ctx)
                elif e.kind in (E.INT, E.STR, E.DTYPE):
                    sym = z3.BitVec(name, W, self.ctx)
                else:
                    raise SolveError(f"cannot encode a {e.kind} variable")
                self.syms[e.uid] = sym
            return sym
        if isinstance(e, E.Arith):
            a, b = self.encode(e.a), self.encode(e.b)
            if e.op == "+":
                self.side += [z3.BVAddNoOverflow(a, b, True), z3.BVAddNoUnderflow(a, b)]
                return a + b
            if e.op == "-":
                self.side += [z3.BVSubNoOverflow(a, b), z3.BVSubNoUnderflow(a, b, True)]
                return a - b
            if e.op == "*":
                self.side += [z3.BVMulNoOverflow(a, b, True), z3.BVMulNoUnderflow(a, b)]
                return a * b
            if e.op in ("//", "%"):
                # specs divide non-negative values by positive ones (floor = truncation)
                self.side += [a >= 0, b > 0]
                return z3.UDiv(a, b) if e.op == "//" else z3.URem(a, b)
            if e.op == "max":
                return z3.If(a >= b, a, b)
            return z3.If(a <= b, a, b)
        if isinstance(e, E.Cmp):
            a, b = self.encode(e.a), self.encode(e.b)
            return {"==": lambda: a == b, "!=": lambda: a != b, "<": lambda: a < b,
                    "<=": lambda: a <= b, ">": lambda: a > b, ">=": lambda: a >= b}[e.op]()
        if isinstance(e, E.Not):
            return z3.Not(self.encode(e.a))
        if isinstance(e, E.And):
            return z3.And(*[self.encode(x) for x in e.args])
        if isinstance(e, E.Or):
            return z3.Or(*[self.encode(x) for x in e.args])
        if isinstance(e, E.Cond):
            return z3.If(self.encode(e.p), self.encode(e.t), self.encode(e.f))
        if isinstance(e, E.InSet):
            x = self.encode(e.elem)
            assert isinstance(e.lst, E.List)
            return z3.Or(*[x == self.encode(i) for i in e.lst.items]) if e.lst.items \
                else z3.BoolVal(False, self.ctx)
        raise SolveError(f"cannot encode {type(e).__name__}")


def solve(spec: TypeSpec, known: dict[int, TensorSpec], rng: random.Random,
          in_num: Optional[int] = None, extra: Sequence[E.Expr] = ()) -> Solution:
    """A random solution of `spec` with the inputs in `known` fixed (and, for variadic specs,
    `in_num` inputs), satisfying also the constraints `extra` (e.g. ``IN[0].dtype ==
    "float16"``). Raises SolveError when there is none (or it was not found)."""
    for attempt in range(SOLVE_TRIES):  # random choices can dead-end: try afresh
        sess = Session(spec, known, rng, in_num)
        sess.constraints += list(extra)
        try:
            return sess.run()
        except SolveError:
            if attempt == SOLVE_TRIES - 1:
                raise
    raise AssertionError("unreachable")


def solve_initial(spec: TypeSpec, known: dict[int, TensorSpec], rng: random.Random,
                  in_num: Optional[int] = None) -> Session:
    """Only the partial evaluation (step 2) with `known`: the session tells what is already
    determined about the other inputs (`input_pattern`). Raises SolveError if `known`
    already contradicts the spec."""
    sess = Session(spec, known, rng, in_num)
    sess.propagate()
    return sess


def input_pattern(sess: Session, i: int) -> tuple[Optional[int], Optional[str],
                                                  Optional[list[Optional[int]]]]:
    """What partial evaluation knows of input `i`: (rank, dtype, dims with None where
    unknown), each None when unknown."""
    try:
        rank = sess.pe(E.IN[i].rank)
        dtype = sess.pe(E.IN[i].dtype)
        shape = sess.pe(E.IN[i].shape)
    except _Undefined:
        return None, None, None
    rank = rank if isinstance(rank, int) else None
    dtype = dtype if isinstance(dtype, str) else None
    dims = [d if isinstance(d, int) else None for d in shape] if isinstance(shape, list) \
        else None
    return rank, dtype, dims


@lru_cache(maxsize=None)
def first_input_ok(op: str, rank: int, dtype: str) -> bool:
    """Whether partial evaluation of `op`'s spec accepts a first input of this rank and dtype
    (GenCoG's op lookup by first-input type). Deterministic: a fixed random source."""
    from generators.gencog.ops import OPS

    sess = Session(OPS[op].spec, {}, random.Random(0))
    sess.constraints += [E.IN[0].rank == rank, E.IN[0].dtype == dtype]
    try:
        sess.propagate()
    except SolveError:
        return False
    return True
