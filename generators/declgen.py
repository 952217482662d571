"""The "declgen" baseline: declarative-style random generation, the naive baseline of Isra
(§IV-A1, DeclGen; the artifact's `g_ran.py`) that GenCoG and HIRGen also compare against.

Nothing here knows an op's type constraints. Each operation is drawn from syntax alone: a
random op type, its in-degree, input tensors that are existing values (with probability
`pick_rate`) or new placeholders of random rank 1..5, dimensions 1..5 and a random dtype,
and attribute values from each attribute's syntactic domain (an axis is an integer below the
first input's rank, as in the artifact; lists have random lengths). TVM is the only judge:

* ``mode="op"`` (default): every drawn operation is handed to TVM at once (`relax`
  normalisation infers its type); if TVM raises, the operation is discarded and another is
  drawn, until the graph has its number of operations. TVM's inferred type becomes the node's
  type. (Feedback per operation: the Randoop-like variant of the baseline; it can reach any
  size.)
* ``mode="graph"``: the artifact's DeclGen proper: the whole graph is drawn first and then
  emitted; if TVM rejects any binding, the whole graph is discarded and a new one drawn (with a
  new operation count). Accepted graphs are small, as in Isra's Table I (NOO 2.88).

Either way the result is emitted once more with type checking and must be well formed.
Rejections are counted in `DeclStats` (pass `stats=DeclStats()` to `generate`).

Left out of the op set: `take` (out-of-range indices are undefined behaviour that TVM does not
reject) and `divide` (integer division by zero crashes the VM); both are type-valid but unsafe
to run. Graphs are TVM-valid (they type-check and are well formed), not free of NaN.
"""
from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any, Optional, Sequence

from generators.graph import GET_ITEM, Graph, GraphError, Node, OutSpec, TensorSpec

DTYPES = ("float32", "float16", "int32", "int64", "bool")
MAX_RANK, MAX_DIM = 5, 5
LAYOUT_ATTRS = {"data_layout": "NCHW", "layout": "NCHW", "out_layout": "NCHW",
                "kernel_layout": "OIHW"}
EXCLUDED = ("relax.take", "relax.divide")


@dataclass
class DeclStats:
    """What a run of DeclGen cost: operations (or graphs) TVM accepted and rejected."""

    accepted: int = 0
    rejected: int = 0

    @property
    def attempts(self) -> int:
        return self.accepted + self.rejected

    @property
    def acceptance(self) -> float:
        return self.accepted / self.attempts if self.attempts else 0.0


def op_names() -> list[str]:
    """DeclGen's op types: Isra's table minus `EXCLUDED` (same universe for comparisons)."""
    from generators.isra import op_names as isra_ops

    return [o for o in isra_ops() if o not in EXCLUDED]


def _ints(rng: random.Random, lo: int, hi: int, n: Optional[int] = None) -> list[int]:
    return [rng.randint(lo, hi) for _ in range(rng.randint(1, MAX_RANK) if n is None else n)]


def draw_attr(rng: random.Random, op: str, name: str, rank: int) -> Any:
    """A random value of attribute `name` of `op` from its syntactic domain (`rank` is the
    first input's rank, which bounds axes)."""
    if name in LAYOUT_ATTRS:
        return LAYOUT_ATTRS[name]
    r = max(rank, 1)
    if name == "axis":
        if op in ("relax.squeeze", "relax.expand_dims"):
            return sorted(set(_ints(rng, -r, r - 1, rng.randint(1, r))))
        if op.split(".")[-1] in ("sum", "mean", "max", "min", "prod", "variance"):
            return None if rng.random() < 0.2 else sorted(set(_ints(rng, -r, r - 1)))
        if op in ("relax.argmax", "relax.argmin") and rng.random() < 0.2:
            return None
        return rng.randint(-r, r - 1)
    if name == "axes":
        return _ints(rng, -r, r - 1)
    if name in ("keepdims", "ceil_mode", "count_include_pad"):
        return rng.random() < 0.5
    if name in ("shape",):
        return _ints(rng, 1, MAX_DIM)
    if name in ("begin", "end"):
        return _ints(rng, 0, MAX_DIM)
    if name == "strides" and op == "relax.strided_slice":
        return _ints(rng, 1, 3)
    if name in ("strides", "dilation", "pool_size", "output_size"):
        v = rng.randint(1, 3)
        return [v, v] if rng.random() < 0.7 else _ints(rng, 1, 3, 2)
    if name == "padding":
        return _ints(rng, 0, 2, 4)
    if name == "groups":
        return rng.randint(1, 4)
    if name == "indices_or_sections":
        return rng.randint(1, 4) if rng.random() < 0.5 else sorted(_ints(rng, 1, MAX_DIM))
    if name == "repeats":
        return rng.randint(1, 3) if op == "relax.repeat" else _ints(rng, 1, 3)
    if name == "pad_width":
        return _ints(rng, 0, 2, 2 * rng.randint(1, MAX_RANK))
    if name == "pad_mode":
        return "constant"
    if name in ("pad_value", "min", "max"):
        return rng.choice((-1.0, 0.0, 0.5, 1.0, 2.0))
    if name == "dtype":
        return rng.choice(DTYPES)
    if name in ("out_dtype",):
        return None
    if name == "assume_inbound":
        return False
    if name == "epsilon":
        return 1e-5
    if name in ("center", "scale"):
        return True
    if name == "momentum":
        return 0.1
    if name == "training":
        return False
    if name == "mode":
        return "clip"
    raise GraphError(f"declgen: no domain for attribute {name!r} of {op}")


def tvm_infer(node: Node, in_specs: Sequence[TensorSpec]) -> OutSpec:
    """The type TVM infers for `node` applied to tensors of types `in_specs`; raises whatever
    TVM raises when it rejects the call (or GraphError for a non-static result)."""
    from tvm import relax

    from generators.emit import call_expr, type_to_out

    params = [relax.Var(f"p{i}", relax.TensorType(list(s.shape), s.dtype))
              for i, s in enumerate(in_specs)]
    expr = relax.BlockBuilder().normalize(call_expr(node, params))
    out = type_to_out(expr.ty)
    if out is None:
        raise GraphError(f"{node.op}: non-static result {expr.ty}")
    return out


class _Draw:
    """Syntax-only drawing of operations over a pool of tensor values."""

    def __init__(self, rng: random.Random, pick_rate: float) -> None:
        self.rng, self.pick_rate = rng, pick_rate
        self.graph = Graph()
        self.pool: list[str] = []
        self.specs: dict[str, TensorSpec] = {}
        self.n_inputs = self.n_values = 0

    def new_input(self) -> str:
        spec = TensorSpec(tuple(self.rng.randint(1, MAX_DIM)
                                for _ in range(self.rng.randint(1, MAX_RANK))),
                          self.rng.choice(DTYPES))
        name = f"x{self.n_inputs}"
        self.n_inputs += 1
        self.graph.inputs[name] = spec
        self.specs[name] = spec
        self.pool.append(name)
        return name

    def tensor(self) -> str:
        if self.pool and self.rng.random() < self.pick_rate:
            return self.rng.choice(self.pool)
        return self.new_input()

    def node(self, ops: Sequence[str]) -> Node:
        from generators.signatures import SIGNATURES

        op = self.rng.choice(list(ops))
        sig = SIGNATURES[op]
        n = self.rng.randint(1, 4) if sig.tensors is None else sig.tensors
        inputs = [self.tensor() for _ in range(n)]
        rank = self.specs[inputs[0]].ndim if inputs[0] in self.specs else 1
        attrs = {a: draw_attr(self.rng, op, a, rank) for a in sig.args + sig.attrs}
        name = f"v{self.n_values}"
        self.n_values += 1
        return Node(name, op, inputs, attrs, TensorSpec((), "float32"))  # type: TVM's to say

    def add(self, node: Node, out: OutSpec) -> None:
        node.out = out
        self.graph.nodes.append(node)
        if isinstance(out, TensorSpec):
            self.specs[node.name] = out
            self.pool.append(node.name)
            return
        for k, t in enumerate(out):
            item = f"v{self.n_values}"
            self.n_values += 1
            self.graph.nodes.append(Node(item, GET_ITEM, [node.name], {"index": k}, t))
            self.specs[item] = t
            self.pool.append(item)

    def finish(self) -> Graph:
        g = self.graph
        used = {i for n in g.nodes for i in n.inputs}
        for name in list(g.inputs):
            if name not in used:
                del g.inputs[name]
        g.outputs = [n.name for n in g.nodes if n.name not in used and n.is_call
                     and isinstance(n.out, TensorSpec)]
        g.outputs += [n.name for n in g.nodes if n.op == GET_ITEM and n.name not in used]
        return g


def _checked(g: Graph) -> Graph:
    """`g` emitted with type checking and checked for well-formedness (the acceptance test)."""
    from tvm import relax

    from generators.emit import emit

    if not relax.analysis.check_well_formed(emit(g)):
        raise GraphError("not well formed")
    return g


def generate(seed: int, min_ops: int = 1, max_ops: int = 30, *, mode: str = "op",
             pick_rate: float = 0.97, ops: Optional[Sequence[str]] = None,
             max_attempts: int = 100_000, stats: Optional[DeclStats] = None) -> Graph:
    """A DeclGen graph with min_ops..max_ops operations (see the module doc for `mode`).
    Raises RuntimeError after `max_attempts` rejected draws."""
    if min_ops < 1 or max_ops < min_ops:
        raise ValueError(f"need 1 <= min_ops <= max_ops, got {min_ops}, {max_ops}")
    if mode not in ("op", "graph"):
        raise ValueError(f"declgen mode must be 'op' or 'graph', got {mode!r}")
    names = op_names() if ops is None else [o if o.startswith("relax.") else f"relax.{o}"
                                            for o in ops]
    rng = random.Random(seed)
    stats = stats if stats is not None else DeclStats()
    budget = max_attempts
    if mode == "op":
        d = _Draw(rng, pick_rate)
        d.new_input()
        target = rng.randint(min_ops, max_ops)
        while len([n for n in d.graph.nodes if n.is_call]) < target:
            node = d.node(names)
            try:
                out = tvm_infer(node, [d.specs[i] for i in node.inputs])
            except Exception:  # TVM rejected the call: discard it, draw again  # noqa: BLE001
                stats.rejected += 1
                budget -= 1
                if budget <= 0:
                    raise RuntimeError(f"declgen: {max_attempts} operations rejected") from None
                continue
            stats.accepted += 1
            d.add(node, out)
        return _checked(d.finish())
    while True:  # mode == "graph": all or nothing
        d = _Draw(rng, pick_rate)
        d.new_input()
        try:
            for _ in range(rng.randint(min_ops, max_ops)):
                node = d.node(names)
                d.add(node, tvm_infer(node, [d.specs[i] for i in node.inputs]))
            g = _checked(d.finish())
        except Exception:  # noqa: BLE001  (any TVM rejection discards the whole graph)
            stats.rejected += 1
            budget -= 1
            if budget <= 0:
                raise RuntimeError(f"declgen: {max_attempts} graphs rejected") from None
            continue
        stats.accepted += 1
        return g
