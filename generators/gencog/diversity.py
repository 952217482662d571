"""GenCoG's expressivity metrics: vertex diversity and edge diversity (paper, equations 4, 5).

For a set of graphs and the operator set O (the Relax ops that have a GenCoG specification,
`generators.gencog.ops.OPS`, without the composite "linear"):

* vertex diversity of op o = #{distinct (input types, attributes) of calls of o} / N_est(o),
  capped at 1; `vertex_diversity` returns it per op and their mean over O under "mean";
* edge diversity = #{(o1, o2) : some call of o2 uses a value computed by a call of o1} / #O^2.

Input types are (shape, dtype) of the inputs that are not weights (the spec's `params`, e.g.
a conv's kernel, as in GenCoG's `VertexDiversity.record`); attributes are compared by their
canonical JSON text. Values reached through tuples (`split`, `batch_norm`) count as produced
by the call that made the tuple. Calls of ops outside O are ignored, so graphs from any
generator (or imported modules) can be measured against the same O.

**N_est(o), the estimate of o's call space** (after GenCoG's `metric/div.py::_est_space`):

    N_est(o) = MAX_DIM ** r_max(o)          first-input shapes (dims 1..MAX_DIM, max rank)
             * #dtypes(o)                   first-input dtypes the spec accepts
             * (2 if o takes several non-weight inputs or is variadic, else 1)
             * (floor(log2(A(o))) + 1)      attributes, A = product of per-attribute choices

where r_max and the dtypes are those for which the spec's partial evaluation accepts a first
input, and A multiplies, per attribute, the number of values its expression can take: a
variable's choices or range size (a range with symbolic ends counts MAX_DIM values), a list
literal the product of its elements, a list construction of unknown length its element count
to the power MAX_RANK, a subset 2**MAX_RANK, a permutation MAX_RANK!, a constant 1.
The dtype factor is ours (GenCoG's graphs were all float32); the log keeps attribute-rich ops
from dwarfing the rest, as in GenCoG.
"""
from __future__ import annotations

import json
import math
from functools import lru_cache
from typing import Any, Iterable, Optional, Sequence

from generators.graph import Graph, TensorSpec


def _ops() -> dict[str, Any]:
    from generators.gencog.ops import OPS

    return OPS


def op_set() -> list[str]:
    """O: the Relax ops with a GenCoG spec (sorted; the composite "linear" excluded)."""
    return sorted(n for n, op in _ops().items() if op.spec.emit_as is None)


def _params(op: str) -> tuple[int, ...]:
    o = _ops().get(op)
    return () if o is None else o.spec.params


@lru_cache(maxsize=None)
def call_space(op: str) -> int:
    """N_est(op), the estimated size of op's call space (see the module docstring)."""
    from generators.gencog import expr as E
    from generators.gencog.solve import first_input_ok
    from generators.gencog.spec import ALL_DTYPES, MAX_DIM, MAX_RANK, TypeSpec

    spec: TypeSpec = _ops()[op].spec
    ranks = [r for r in range(1, MAX_RANK + 1)
             if any(first_input_ok(op, r, dt) for dt in ALL_DTYPES)]
    dtypes = [dt for dt in ALL_DTYPES if any(first_input_ok(op, r, dt) for r in ranks)]
    r_max = max(ranks, default=1)
    in_space = MAX_DIM ** r_max * max(1, len(dtypes))
    n_in = spec.in_num.value if isinstance(spec.in_num, E.Const) else 2
    if spec.variadic or n_in - len(spec.params) > 1:
        in_space *= 2
    attr_space = 1
    for _, e in spec.attrs:
        attr_space *= max(1, _choices(e))
    return in_space * (int(math.log2(attr_space)) + 1)


def _choices(e: Any) -> int:
    """Rough number of values expression `e` can take (see the module docstring)."""
    from generators.gencog import expr as E
    from generators.gencog.spec import MAX_DIM, MAX_RANK

    if isinstance(e, E.Const):
        return 1
    if isinstance(e, E.Var):
        if e.choices is not None and isinstance(e.choices, E.List):
            return len(e.choices.items)
        if e.ran is not None and all(isinstance(x, E.Const) for x in e.ran):
            return max(1, e.ran[1].value - e.ran[0].value + 1)  # type: ignore[union-attr]
        return MAX_DIM
    if isinstance(e, E.List):
        return math.prod(max(1, _choices(x)) for x in e.items)
    if isinstance(e, E.ListGen):
        body = E.to_expr(e.body(E.Const(0)))
        n = e.length.value if isinstance(e.length, E.Const) else MAX_RANK
        return max(1, _choices(body)) ** n
    if isinstance(e, E.Subset):
        return 2 ** MAX_RANK
    if isinstance(e, E.Perm):
        return math.factorial(MAX_RANK)
    if isinstance(e, E.Cond):
        return _choices(e.t) + _choices(e.f)
    if isinstance(e, (E.AttrRef, E.TensorRef, E.Arith, E.GetItem, E.Map)):
        return 1  # determined by other attributes / inputs
    return MAX_DIM


def vertex_key(op: str, in_types: Sequence[Any], attrs: dict[str, Any]) -> str:
    """The identity of a call for vertex diversity: non-weight input types and attributes."""
    params = _params(op)
    types = []
    for i, t in enumerate(in_types):
        if i in params:
            continue
        if isinstance(t, TensorSpec):
            types.append([list(t.shape), t.dtype])
        elif isinstance(t, tuple):
            types.append([[list(x.shape), x.dtype] if isinstance(x, TensorSpec) else str(x)
                          for x in t])
        else:  # a tensor of unknown shape (after match_cast from R.Tensor(ndim=k)), ...
            types.append(str(t))
    return json.dumps([types, attrs], sort_keys=True, default=str)


def _module_types(g: Graph) -> dict[tuple[str, str], Any]:
    """(global function, value name) -> type, for every value of every function of `g`
    (names are unique within a global function, nested bodies included)."""
    types: dict[tuple[str, str], Any] = {}
    for path, sub in g.walk():
        fk = path.split("/")[0]
        types.update({(fk, name): spec for name, spec in sub.inputs.items()})
        types.update({(fk, n.name): n.out for n in sub.nodes})
    return types


class VertexDiversity:
    """Incremental equation 4: `add` a call, read `per_op()` / `result()`."""

    def __init__(self, ops: Optional[Sequence[str]] = None) -> None:
        self.ops = list(op_set() if ops is None else ops)
        self._index = set(self.ops)
        self.seen: dict[str, set[str]] = {o: set() for o in self.ops}

    def contains(self, op: str, in_types: Sequence[Any], attrs: dict[str, Any]) -> bool:
        return op in self._index and vertex_key(op, in_types, attrs) in self.seen[op]

    def add(self, op: str, in_types: Sequence[Any], attrs: dict[str, Any]) -> bool:
        """Record a call; True if it is new (raises the op's vertex diversity)."""
        if op not in self._index:
            return False
        key = vertex_key(op, in_types, attrs)
        if key in self.seen[op]:
            return False
        self.seen[op].add(key)
        return True

    def record_graph(self, g: Graph) -> None:
        """Record every op call of the module `g`: main, global functions and nested bodies
        (an input's type is looked up in the function it belongs to)."""
        types = _module_types(g)
        for path, n in g.all_nodes():
            if n.is_call:
                fk = path.split("/")[0]
                self.add(n.op, [types[(fk, i)] for i in n.inputs], n.attrs)

    def of(self, op: str) -> float:
        return min(1.0, len(self.seen[op]) / call_space(op))

    def per_op(self) -> dict[str, float]:
        return {o: self.of(o) for o in self.ops}

    def result(self) -> float:
        return sum(self.of(o) for o in self.ops) / len(self.ops) if self.ops else 0.0


class EdgeDiversity:
    """Incremental equation 5."""

    def __init__(self, ops: Optional[Sequence[str]] = None) -> None:
        self.ops = list(op_set() if ops is None else ops)
        self._index = set(self.ops)
        self.pairs: set[tuple[str, str]] = set()

    def add(self, tail: str, head: str) -> bool:
        """Record that a call of `head` uses a value of a call of `tail`; True if new."""
        if tail not in self._index or head not in self._index or (tail, head) in self.pairs:
            return False
        self.pairs.add((tail, head))
        return True

    def record_graph(self, g: Graph) -> None:
        """Record the op-to-op edges of the module `g` (`Graph.op_edges`: followed through
        tuples, calls, branches and closures, across functions)."""
        ops = {(path, n.name): n.op for path, n in g.all_nodes() if n.is_call}
        for a, b in g.op_edges():
            self.add(ops[a], ops[b])

    def result(self) -> float:
        return len(self.pairs) / (len(self.ops) ** 2) if self.ops else 0.0


def vertex_diversity(graphs: Iterable[Graph]) -> dict[str, float]:
    """Per-op vertex diversity over `graphs` (equation 4's terms), plus "mean" (div_V)."""
    vd = VertexDiversity()
    for g in graphs:
        vd.record_graph(g)
    out = vd.per_op()
    out["mean"] = vd.result()
    return out


def edge_diversity(graphs: Iterable[Graph]) -> float:
    """div_E of `graphs` (equation 5)."""
    ed = EdgeDiversity()
    for g in graphs:
        ed.record_graph(g)
    return ed.result()


__all__ = ["EdgeDiversity", "VertexDiversity", "call_space", "edge_diversity", "op_set",
           "vertex_diversity", "vertex_key"]
