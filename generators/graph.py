"""The graph IR shared by every generator: a dataflow graph of Relax op calls.

A `Graph` is a list of `Node`s in topological order over named values:

* graph inputs (`Graph.inputs`, name -> `TensorSpec`), which become the parameters of `main`;
* nodes, each defining one value named `Node.name`. A node is either a call of a TVM Relax
  operator (`Node.op` is the registered op name, e.g. ``"relax.nn.conv2d"``) or one of three
  pseudo-ops that are not calls: `CONST` (a constant tensor, inlined into its users when
  emitted), `TUPLE` (a Relax tuple of earlier values) and `GET_ITEM` (a TupleGetItem);
* graph outputs (`Graph.outputs`): names of values returned by `main` (a single tensor, or a
  Relax tuple when there are several).

Attributes are plain Python values (int, float, bool, str, None and lists of them), exactly the
keyword/positional arguments of the `tvm.relax.op` function of the op (see `generators/emit.py`
for which become Relax arguments and which become attributes). Everything here is pure Python:
no TVM import, and `to_dict`/`from_dict` give a JSON-serialisable form.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any, Iterable, Union

# Pseudo-ops: nodes that are not op calls.
CONST = "const"  # attrs: {"value": nested list or scalar, "dtype": str}; no inputs
TUPLE = "tuple"  # inputs: the fields; no attrs
GET_ITEM = "tuple_get_item"  # inputs: [the tuple]; attrs: {"index": int}
PSEUDO_OPS = frozenset({CONST, TUPLE, GET_ITEM})


@dataclass(frozen=True)
class TensorSpec:
    """The static type of a tensor value: its `shape` (a tuple of ints) and `dtype` (a TVM dtype
    string such as "float32", "bool", "int64")."""

    shape: tuple[int, ...]
    dtype: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "shape", tuple(int(d) for d in self.shape))

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        """Number of elements (1 for a rank-0 tensor)."""
        return math.prod(self.shape)

    def to_dict(self) -> dict[str, Any]:
        return {"shape": list(self.shape), "dtype": self.dtype}

    @staticmethod
    def from_dict(d: dict[str, Any]) -> "TensorSpec":
        return TensorSpec(tuple(d["shape"]), str(d["dtype"]))

    def __str__(self) -> str:
        return f"{self.dtype}{list(self.shape)}"


# A node's output: one tensor, or a tuple of tensors (split, batch_norm, TUPLE nodes).
OutSpec = Union[TensorSpec, tuple[TensorSpec, ...]]


def out_to_json(out: OutSpec) -> Any:
    if isinstance(out, TensorSpec):
        return out.to_dict()
    return [t.to_dict() for t in out]


def out_from_json(d: Any) -> OutSpec:
    if isinstance(d, dict):
        return TensorSpec.from_dict(d)
    return tuple(TensorSpec.from_dict(t) for t in d)


def _plain(value: Any) -> Any:
    """Attribute values in canonical plain form: tuples become lists, recursively."""
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return value


@dataclass
class Node:
    """One value definition: `name = op(*inputs, **attrs)` whose result has type `out`.

    `inputs` name earlier values (graph inputs or earlier nodes), in the op's argument order.
    """

    name: str
    op: str
    inputs: list[str]
    attrs: dict[str, Any]
    out: OutSpec

    @property
    def is_call(self) -> bool:
        """True for a call of a Relax operator (what counts as an "op" of the graph)."""
        return self.op not in PSEUDO_OPS

    @property
    def is_tuple(self) -> bool:
        return not isinstance(self.out, TensorSpec)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "op": self.op, "inputs": list(self.inputs),
                "attrs": _plain(self.attrs), "out": out_to_json(self.out)}

    @staticmethod
    def from_dict(d: dict[str, Any]) -> "Node":
        return Node(str(d["name"]), str(d["op"]), [str(i) for i in d["inputs"]],
                    dict(d.get("attrs", {})), out_from_json(d["out"]))


class GraphError(ValueError):
    """A graph that is not well formed (undefined or duplicate names, bad outputs)."""


@dataclass
class Graph:
    """A dataflow graph: named inputs, nodes in topological order, and outputs."""

    inputs: dict[str, TensorSpec] = field(default_factory=dict)
    nodes: list[Node] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)

    # -- queries -------------------------------------------------------------------------
    def node(self, name: str) -> Node:
        for n in self.nodes:
            if n.name == name:
                return n
        raise KeyError(name)

    def spec_of(self, name: str) -> OutSpec:
        """The type of the value called `name`."""
        if name in self.inputs:
            return self.inputs[name]
        return self.node(name).out

    def op_calls(self) -> list[Node]:
        """The nodes that are Relax op calls, in order (pseudo-ops excluded)."""
        return [n for n in self.nodes if n.is_call]

    @property
    def num_ops(self) -> int:
        return len(self.op_calls())

    def op_sequence(self) -> list[str]:
        return [n.op for n in self.op_calls()]

    def consumers(self) -> dict[str, list[str]]:
        """For every value, the nodes that use it (in node order; outputs not counted)."""
        uses: dict[str, list[str]] = {name: [] for name in self.inputs}
        for n in self.nodes:
            uses.setdefault(n.name, [])
            for i in n.inputs:
                uses.setdefault(i, []).append(n.name)
        return uses

    def validate(self) -> None:
        """Raise GraphError unless every name is defined once before it is used, every
        GET_ITEM index is in range, and the outputs exist."""
        defined: dict[str, OutSpec] = dict(self.inputs)
        for n in self.nodes:
            if n.name in defined:
                raise GraphError(f"value {n.name!r} defined twice")
            for i in n.inputs:
                if i not in defined:
                    raise GraphError(f"node {n.name!r} uses {i!r} before it is defined")
            if n.op == GET_ITEM:
                src = defined[n.inputs[0]]
                if isinstance(src, TensorSpec) or not 0 <= n.attrs["index"] < len(src):
                    raise GraphError(f"node {n.name!r}: bad tuple index")
            if n.op == CONST and n.inputs:
                raise GraphError(f"constant {n.name!r} has inputs")
            defined[n.name] = n.out
        if not self.outputs:
            raise GraphError("graph has no outputs")
        for o in self.outputs:
            if o not in defined:
                raise GraphError(f"output {o!r} is not defined")

    # -- serialisation -------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable dict (lists, dicts, str, int, float, bool, None)."""
        return {
            "inputs": [{"name": k, **v.to_dict()} for k, v in self.inputs.items()],
            "nodes": [n.to_dict() for n in self.nodes],
            "outputs": list(self.outputs),
        }

    @staticmethod
    def from_dict(d: dict[str, Any]) -> "Graph":
        inputs = {str(i["name"]): TensorSpec.from_dict(i) for i in d["inputs"]}
        return Graph(inputs, [Node.from_dict(n) for n in d["nodes"]],
                     [str(o) for o in d["outputs"]])

    def to_json(self, **kw: Any) -> str:
        return json.dumps(self.to_dict(), **kw)

    @staticmethod
    def from_json(text: str) -> "Graph":
        return Graph.from_dict(json.loads(text))

    def copy(self) -> "Graph":
        return Graph.from_dict(json.loads(self.to_json()))

    def __str__(self) -> str:
        lines = [f"graph({', '.join(f'{k}: {v}' for k, v in self.inputs.items())}):"]
        for n in self.nodes:
            out = n.out if isinstance(n.out, TensorSpec) else \
                "(" + ", ".join(str(t) for t in n.out) + ")"
            attrs = "" if not n.attrs or n.op == CONST else \
                " {" + ", ".join(f"{k}={v!r}" for k, v in n.attrs.items()) + "}"
            lines.append(f"  {n.name}: {out} = {n.op}({', '.join(n.inputs)}){attrs}")
        lines.append(f"  return {', '.join(self.outputs)}")
        return "\n".join(lines)


def union(graphs: Iterable[Graph]) -> Graph:
    """The disjoint union of `graphs`: all inputs, nodes and outputs side by side, the names of
    graph k prefixed with ``g{k}_`` (useful to build and run many small graphs at once)."""
    out = Graph()
    for k, g in enumerate(graphs):
        p = f"g{k}_"
        for name, spec in g.inputs.items():
            out.inputs[p + name] = spec
        for n in g.nodes:
            out.nodes.append(Node(p + n.name, n.op, [p + i for i in n.inputs],
                                  json.loads(json.dumps(_plain(n.attrs))), n.out))
        out.outputs.extend(p + o for o in g.outputs)
    return out
