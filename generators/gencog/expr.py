"""GenCoGL-style constraint expressions, embedded in Python (GenCoG paper, figure 4).

An op specification (`generators.gencog.spec.TypeSpec`) is written with these nodes:

* scalars: `Const`, `Var` (an unknown with a domain: an integer range ``ran=(lo, hi)``
  (inclusive) or a tuple of ``choices``; kinds int, bool, float, str, dtype), arithmetic
  (``+ - * // %``, `.max()`, `.min()`), comparisons (``== != < <= > >=`` build `Cmp` nodes,
  they do not compare), `Not`, `And`, `Or`, `ForAll` (over ``range(end)``), `Cond`;
* lists: `List` (a literal), `ListGen` (list construction: a length and a body per index; each
  element may be a fresh template `Var`), indexing ``e[i]``, slicing ``e[i:j]``, `Len`,
  `Concat`, `Map`, `Filter`, `ReduceArray` (fold with + * max min);
* sets: `InSet` (membership), `Subset` (a random non-empty sub-list of a list, kept in order),
  `Perm` (a random permutation of a list); the last two are GenCoG's non-deterministic forms,
  resolved with the solver's random source once their list is known;
* references: `IN.num`, ``IN[i].rank`` / ``.shape`` / ``.dtype`` (and the same for `OUT`), and
  ``a("name")`` for an attribute.

Expressions are trees of immutable nodes; Python operators on them build new nodes. `Var`s are
compared by identity, so two ``Var()`` calls are two unknowns. Evaluation (partial or full)
is in `generators.gencog.solve`.
"""
from __future__ import annotations

import itertools
from typing import Any, Callable, Iterable, Optional, Sequence

INT, BOOL, FLOAT, STR, DTYPE = "int", "bool", "float", "str", "dtype"
ARITH_OPS = ("+", "-", "*", "//", "%", "max", "min")
CMP_OPS = ("==", "!=", "<", "<=", ">", ">=")

_var_ids = itertools.count()


def to_expr(v: Any) -> "Expr":
    """`v` as an expression: Exprs unchanged, Python lists/tuples as `List`, others `Const`."""
    if isinstance(v, Expr):
        return v
    if isinstance(v, (list, tuple)):
        return List([to_expr(x) for x in v])
    return Const(v)


class Expr:
    """A GenCoGL expression. Python's operators build larger expressions."""

    __slots__ = ()
    __hash__ = object.__hash__
    __iter__ = None  # type: ignore[assignment]  # not iterable (no __getitem__ protocol)

    def __bool__(self) -> bool:
        raise TypeError("a GenCoGL expression has no truth value (use And/Or/Cond)")

    # arithmetic
    def __add__(self, o: Any) -> "Expr": return Arith("+", self, to_expr(o))
    def __radd__(self, o: Any) -> "Expr": return Arith("+", to_expr(o), self)
    def __sub__(self, o: Any) -> "Expr": return Arith("-", self, to_expr(o))
    def __rsub__(self, o: Any) -> "Expr": return Arith("-", to_expr(o), self)
    def __mul__(self, o: Any) -> "Expr": return Arith("*", self, to_expr(o))
    def __rmul__(self, o: Any) -> "Expr": return Arith("*", to_expr(o), self)
    def __floordiv__(self, o: Any) -> "Expr": return Arith("//", self, to_expr(o))
    def __rfloordiv__(self, o: Any) -> "Expr": return Arith("//", to_expr(o), self)
    def __mod__(self, o: Any) -> "Expr": return Arith("%", self, to_expr(o))
    def __neg__(self) -> "Expr": return Arith("-", Const(0), self)
    def max(self, o: Any) -> "Expr": return Arith("max", self, to_expr(o))
    def min(self, o: Any) -> "Expr": return Arith("min", self, to_expr(o))

    # comparisons build constraints
    def __eq__(self, o: Any) -> "Expr": return Cmp("==", self, to_expr(o))  # type: ignore[override]
    def __ne__(self, o: Any) -> "Expr": return Cmp("!=", self, to_expr(o))  # type: ignore[override]
    def __lt__(self, o: Any) -> "Expr": return Cmp("<", self, to_expr(o))
    def __le__(self, o: Any) -> "Expr": return Cmp("<=", self, to_expr(o))
    def __gt__(self, o: Any) -> "Expr": return Cmp(">", self, to_expr(o))
    def __ge__(self, o: Any) -> "Expr": return Cmp(">=", self, to_expr(o))

    # lists
    def __getitem__(self, idx: Any) -> "Expr":
        if isinstance(idx, slice):
            if idx.step is not None:
                raise ValueError("slices with a step are not supported")
            return Slice(self, None if idx.start is None else to_expr(idx.start),
                         None if idx.stop is None else to_expr(idx.stop))
        return GetItem(self, to_expr(idx))

    def children(self) -> tuple["Expr", ...]:
        return ()


class Const(Expr):
    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __repr__(self) -> str:
        return repr(self.value)


class Var(Expr):
    """An unknown. `ran` is an inclusive integer range (either end may be an expression, e.g.
    ``Var(ran=(0, IN[0].rank - 1))``); `choices` a finite domain (any kind). Without both, an
    int var defaults to ``ran=(0, 255)`` and a bool var to {False, True}."""

    __slots__ = ("kind", "ran", "choices", "uid", "name")

    def __init__(self, kind: str = INT, ran: Optional[tuple[Any, Any]] = None,
                 choices: Optional[Sequence[Any]] = None, name: str = "") -> None:
        self.kind = kind
        self.ran = None if ran is None else (to_expr(ran[0]), to_expr(ran[1]))
        self.choices = None if choices is None else \
            choices if isinstance(choices, Expr) else to_expr(list(choices))
        if kind == BOOL and choices is None:
            self.choices = to_expr([False, True])
        if kind == INT and ran is None and choices is None:
            self.ran = (Const(0), Const(255))
        if kind in (FLOAT, STR, DTYPE) and choices is None:
            raise ValueError(f"a {kind} Var needs choices")
        self.uid = next(_var_ids)
        self.name = name

    def children(self) -> tuple[Expr, ...]:
        out: list[Expr] = []
        if self.ran is not None:
            out.extend(self.ran)
        if self.choices is not None:
            out.append(self.choices)
        return tuple(out)

    def __repr__(self) -> str:
        return f"${self.name or 'v'}{self.uid}"


class Arith(Expr):
    __slots__ = ("op", "a", "b")

    def __init__(self, op: str, a: Expr, b: Expr) -> None:
        assert op in ARITH_OPS, op
        self.op, self.a, self.b = op, a, b

    def children(self) -> tuple[Expr, ...]:
        return (self.a, self.b)

    def __repr__(self) -> str:
        if self.op in ("max", "min"):
            return f"{self.op}({self.a!r}, {self.b!r})"
        return f"({self.a!r} {self.op} {self.b!r})"


class Cmp(Expr):
    __slots__ = ("op", "a", "b")

    def __init__(self, op: str, a: Expr, b: Expr) -> None:
        assert op in CMP_OPS, op
        self.op, self.a, self.b = op, a, b

    def children(self) -> tuple[Expr, ...]:
        return (self.a, self.b)

    def __repr__(self) -> str:
        return f"({self.a!r} {self.op} {self.b!r})"


class Not(Expr):
    __slots__ = ("a",)

    def __init__(self, a: Any) -> None:
        self.a = to_expr(a)

    def children(self) -> tuple[Expr, ...]:
        return (self.a,)

    def __repr__(self) -> str:
        return f"not {self.a!r}"


class And(Expr):
    __slots__ = ("args",)

    def __init__(self, *args: Any) -> None:
        self.args = tuple(to_expr(a) for a in args)

    def children(self) -> tuple[Expr, ...]:
        return self.args

    def __repr__(self) -> str:
        return "and(" + ", ".join(map(repr, self.args)) + ")"


class Or(Expr):
    __slots__ = ("args",)

    def __init__(self, *args: Any) -> None:
        self.args = tuple(to_expr(a) for a in args)

    def children(self) -> tuple[Expr, ...]:
        return self.args

    def __repr__(self) -> str:
        return "or(" + ", ".join(map(repr, self.args)) + ")"


class Cond(Expr):
    """``t if p else f``."""

    __slots__ = ("p", "t", "f")

    def __init__(self, p: Any, t: Any, f: Any) -> None:
        self.p, self.t, self.f = to_expr(p), to_expr(t), to_expr(f)

    def children(self) -> tuple[Expr, ...]:
        return (self.p, self.t, self.f)

    def __repr__(self) -> str:
        return f"cond({self.p!r}, {self.t!r}, {self.f!r})"


class ForAll(Expr):
    """``all(body(i) for i in range(start, end))``."""

    __slots__ = ("end", "body", "start")

    def __init__(self, end: Any, body: Callable[[Expr], Any], start: Any = 0) -> None:
        self.end, self.body, self.start = to_expr(end), body, to_expr(start)

    def children(self) -> tuple[Expr, ...]:
        return (self.start, self.end)

    def __repr__(self) -> str:
        return f"forall({self.start!r}..{self.end!r})"


class List(Expr):
    """A list literal."""

    __slots__ = ("items",)

    def __init__(self, items: Iterable[Any]) -> None:
        self.items = tuple(to_expr(i) for i in items)

    def children(self) -> tuple[Expr, ...]:
        return self.items

    def __repr__(self) -> str:
        return "[" + ", ".join(map(repr, self.items)) + "]"


class ListGen(Expr):
    """List construction: ``[body(i) for i in range(length)]``. `body` is called once per index
    per solving session (so a ``Var(...)`` in it is a fresh template variable per element)."""

    __slots__ = ("length", "body")

    def __init__(self, length: Any, body: Callable[[Expr], Any]) -> None:
        self.length, self.body = to_expr(length), body

    def children(self) -> tuple[Expr, ...]:
        return (self.length,)

    def __repr__(self) -> str:
        return f"list({self.length!r})"


class GetItem(Expr):
    __slots__ = ("lst", "idx")

    def __init__(self, lst: Expr, idx: Expr) -> None:
        self.lst, self.idx = lst, idx

    def children(self) -> tuple[Expr, ...]:
        return (self.lst, self.idx)

    def __repr__(self) -> str:
        return f"{self.lst!r}[{self.idx!r}]"


class Slice(Expr):
    __slots__ = ("lst", "lo", "hi")

    def __init__(self, lst: Expr, lo: Optional[Expr], hi: Optional[Expr]) -> None:
        self.lst, self.lo, self.hi = lst, lo, hi

    def children(self) -> tuple[Expr, ...]:
        return tuple(e for e in (self.lst, self.lo, self.hi) if e is not None)

    def __repr__(self) -> str:
        return f"{self.lst!r}[{self.lo!r}:{self.hi!r}]"


class Len(Expr):
    __slots__ = ("lst",)

    def __init__(self, lst: Any) -> None:
        self.lst = to_expr(lst)

    def children(self) -> tuple[Expr, ...]:
        return (self.lst,)

    def __repr__(self) -> str:
        return f"len({self.lst!r})"


class Concat(Expr):
    __slots__ = ("lists",)

    def __init__(self, *lists: Any) -> None:
        self.lists = tuple(to_expr(x) for x in lists)

    def children(self) -> tuple[Expr, ...]:
        return self.lists

    def __repr__(self) -> str:
        return "concat(" + ", ".join(map(repr, self.lists)) + ")"


class Map(Expr):
    """``[fn(x) for x in lst]``."""

    __slots__ = ("lst", "fn")

    def __init__(self, lst: Any, fn: Callable[[Expr], Any]) -> None:
        self.lst, self.fn = to_expr(lst), fn

    def children(self) -> tuple[Expr, ...]:
        return (self.lst,)

    def __repr__(self) -> str:
        return f"map({self.lst!r})"


class Filter(Expr):
    """``[x for x in lst if pred(x)]`` (needs every predicate decided)."""

    __slots__ = ("lst", "pred")

    def __init__(self, lst: Any, pred: Callable[[Expr], Any]) -> None:
        self.lst, self.pred = to_expr(lst), pred

    def children(self) -> tuple[Expr, ...]:
        return (self.lst,)

    def __repr__(self) -> str:
        return f"filter({self.lst!r})"


class ReduceArray(Expr):
    """Fold of a list with `op` (one of + * max min) starting from `init`."""

    __slots__ = ("lst", "op", "init")

    def __init__(self, lst: Any, op: str, init: Any) -> None:
        assert op in ("+", "*", "max", "min"), op
        self.lst, self.op, self.init = to_expr(lst), op, to_expr(init)

    def children(self) -> tuple[Expr, ...]:
        return (self.lst, self.init)

    def __repr__(self) -> str:
        return f"reduce({self.lst!r}, {self.op}, {self.init!r})"


class InSet(Expr):
    """``elem in lst`` (a constraint). With `elem` an unknown and the list known, the solver
    may pick a random member (GenCoG's non-deterministic simplification)."""

    __slots__ = ("elem", "lst")

    def __init__(self, elem: Any, lst: Any) -> None:
        self.elem, self.lst = to_expr(elem), to_expr(lst)

    def children(self) -> tuple[Expr, ...]:
        return (self.elem, self.lst)

    def __repr__(self) -> str:
        return f"({self.elem!r} in {self.lst!r})"


class Subset(Expr):
    """A random non-empty sub-list of `lst` (in `lst`'s order), of length in
    ``[min_len, max_len]`` (max_len None = len(lst))."""

    __slots__ = ("lst", "min_len", "max_len")

    def __init__(self, lst: Any, min_len: int = 1, max_len: Optional[int] = None) -> None:
        self.lst, self.min_len, self.max_len = to_expr(lst), min_len, max_len

    def children(self) -> tuple[Expr, ...]:
        return (self.lst,)

    def __repr__(self) -> str:
        return f"subset({self.lst!r})"


class Perm(Expr):
    """A random permutation of `lst`."""

    __slots__ = ("lst",)

    def __init__(self, lst: Any) -> None:
        self.lst = to_expr(lst)

    def children(self) -> tuple[Expr, ...]:
        return (self.lst,)

    def __repr__(self) -> str:
        return f"perm({self.lst!r})"


def Range(end: Any, start: Any = 0) -> Expr:  # noqa: N802 (reads as a constructor)
    """``[start, ..., end - 1]`` as a list expression (either end may be an expression)."""
    s = to_expr(start)
    return ListGen(to_expr(end) - s, lambda i: s + i)


class Divisors(Expr):
    """``[d for d in 1..n if n % d == 0]`` (an extension of GenCoGL: the domain of a dim that
    must divide a size, e.g. reshape's new dims, without a list of n elements)."""

    __slots__ = ("n",)

    def __init__(self, n: Any) -> None:
        self.n = to_expr(n)

    def children(self) -> tuple["Expr", ...]:
        return (self.n,)

    def __repr__(self) -> str:
        return f"divisors({self.n!r})"


# -- references to the spec ----------------------------------------------------------------
class TensorRef(Expr):
    """``IN[i].rank`` / ``.shape`` / ``.dtype`` (`side` "in" or "out", `field`)."""

    __slots__ = ("side", "idx", "field")

    def __init__(self, side: str, idx: Expr, field: str) -> None:
        self.side, self.idx, self.field = side, idx, field

    def children(self) -> tuple[Expr, ...]:
        return (self.idx,)

    def __repr__(self) -> str:
        return f"{self.side.upper()}[{self.idx!r}].{self.field}"


class NumRef(Expr):
    __slots__ = ("side",)

    def __init__(self, side: str) -> None:
        self.side = side

    def __repr__(self) -> str:
        return f"{self.side.upper()}.num"


class AttrRef(Expr):
    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"a({self.name!r})"


class _Tensor:
    def __init__(self, side: str, idx: Expr) -> None:
        self.rank = TensorRef(side, idx, "rank")
        self.shape = TensorRef(side, idx, "shape")
        self.dtype = TensorRef(side, idx, "dtype")


class _Tensors:
    """`IN` / `OUT`: ``IN.num`` is the number of tensors, ``IN[i]`` one tensor."""

    def __init__(self, side: str) -> None:
        self.side = side
        self.num = NumRef(side)

    def __getitem__(self, idx: Any) -> _Tensor:
        return _Tensor(self.side, to_expr(idx))


IN = _Tensors("in")
OUT = _Tensors("out")


def a(name: str) -> AttrRef:
    """Reference to the attribute `name` of the spec."""
    return AttrRef(name)


def walk(e: Expr) -> Iterable[Expr]:
    """`e` and all its sub-expressions (pre-order; lambdas are not entered)."""
    stack = [e]
    while stack:
        x = stack.pop()
        yield x
        stack.extend(reversed(x.children()))
