"""The graph IR shared by every generator: a module of Relax functions over named values.

A `Graph` is one Relax function: its parameters (`Graph.inputs`, name -> type), its bindings as
a list of `Node`s in order, and its results (`Graph.outputs`: names of values returned, one
tensor, or a Relax tuple when there are several). The `Graph` of ``main`` is also the module:
`Graph.functions` holds the other global Relax functions (private unless `Graph.private` is
False), and `Graph.prim_funcs` the module's TIR PrimFuncs as opaque TVMScript text (they only
appear in modules imported after lowering passes).

Each node defines one value named `Node.name`. A node is either a call of a TVM Relax operator
(`Node.op` is the registered op name, e.g. ``"relax.nn.conv2d"``; ``"relax.call_tir"`` keeps
the PrimFunc name in ``attrs["func"]``) or a pseudo-op that is not an operator call:

* `CONST`: a constant tensor (inlined into its users when emitted);
* `TUPLE`: a Relax tuple of earlier values (with ``attrs["inline"]`` it is not bound to a
  variable but written where it is used, like constants); `GET_ITEM`: a TupleGetItem
  (``attrs["index"]``);
* `CALL`: a call of the global function ``attrs["func"]`` with the inputs as arguments;
* `FUNCTION`: a local (nested) function; ``body[0]`` is its `Graph` (parameters = its inputs);
  the value has a `FuncSpec` type. Its body may use values of the enclosing scopes (closure);
* `INVOKE`: a call of a function value: ``inputs = [callee, *args]``;
* `IF`: ``inputs = [cond]`` (a bool tensor of rank 0); ``body = [then, else]``, two graphs
  without inputs whose outputs give the result; they may use values of the enclosing scopes;
* `MATCH_CAST`: ``inputs = [value]``, `out` is the type matched against (a Relax match_cast);
* `ALIAS`: ``inputs = [value]``, a binding ``y: T = x`` whose declared type T forgets part of
  x's (e.g. ``R.Tensor(dtype="bool", ndim=1)``); plain aliases are not nodes.

Types are `TensorSpec` (static shape), `DynTensorSpec` (a tensor of known dtype and maybe
known rank but unknown shape, as in ``R.Tensor(dtype="float32", ndim=3)``), tuples of types,
and `FuncSpec`.

Names are unique within one global function, nested bodies included (no shadowing), so a name
identifies a value in a function. `Node.dataflow` says whether the binding sits in a dataflow
block (consecutive nodes with the same flag share a block); `IF` nodes never do.

Attributes are plain Python values (int, float, bool, str, None and lists of them), exactly the
keyword/positional arguments of the `tvm.relax.op` function of the op (see `generators/emit.py`
for which become Relax arguments and which become attributes). Everything here is pure Python:
no TVM import, and `to_dict`/`from_dict` give a JSON-serialisable form.

Queries that look across functions: `Graph.walk()` (every function and nested body, with a
scope path), `Graph.all_nodes()`, `Graph.op_calls()` (every operator call of the module, nested
bodies and global functions included; ``deep=False`` for this body only) and
`Graph.op_edges()` (producer op -> consumer op pairs, followed through tuples, casts, calls,
branches and closures).
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator, Optional, Union

# Pseudo-ops: nodes that are not operator calls.
CONST = "const"  # attrs: {"value": nested list or scalar, "dtype": str}; no inputs
TUPLE = "tuple"  # inputs: the fields; attrs: {} or {"inline": True} (written in place, unbound)
GET_ITEM = "tuple_get_item"  # inputs: [the tuple]; attrs: {"index": int}
CALL = "call"  # inputs: the arguments; attrs: {"func": name of a global Relax function}
FUNCTION = "function"  # no inputs; body: [the function's Graph]; out: FuncSpec
INVOKE = "invoke"  # inputs: [function value, *arguments]
IF = "if"  # inputs: [cond]; body: [then-graph, else-graph]
MATCH_CAST = "match_cast"  # inputs: [value]; out: the type matched against
ALIAS = "alias"  # inputs: [value]; out: a declared type less precise than the value's
PSEUDO_OPS = frozenset({CONST, TUPLE, GET_ITEM, CALL, FUNCTION, INVOKE, IF, MATCH_CAST, ALIAS})
# Pseudo-ops whose nodes carry nested graphs in `Node.body`.
WITH_BODY = frozenset({FUNCTION, IF})


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


@dataclass(frozen=True)
class DynTensorSpec:
    """A tensor whose shape is unknown: its `dtype`, and its rank `ndim` (-1: unknown too)."""

    dtype: str
    ndim: int = -1

    def to_dict(self) -> dict[str, Any]:
        return {"dtype": self.dtype, "ndim": self.ndim}

    def __str__(self) -> str:
        return f"{self.dtype}[{'?' if self.ndim < 0 else ', '.join('?' * self.ndim)}]"


@dataclass(frozen=True)
class FuncSpec:
    """The type of a function value: parameter types and result type."""

    params: tuple["OutSpec", ...]
    ret: "OutSpec"

    def __str__(self) -> str:
        return f"fn({', '.join(spec_str(p) for p in self.params)}) -> {spec_str(self.ret)}"


# A value's type: a tensor, a (possibly nested) tuple, or a function.
OutSpec = Union[TensorSpec, DynTensorSpec, tuple, FuncSpec]


def out_to_json(out: OutSpec) -> Any:
    """JSON form of a type: a tensor is a dict with "shape"/"dtype", a tuple a list, a function
    a dict with "params"/"ret"."""
    if isinstance(out, (TensorSpec, DynTensorSpec)):
        return out.to_dict()
    if isinstance(out, FuncSpec):
        return {"params": [out_to_json(p) for p in out.params], "ret": out_to_json(out.ret)}
    return [out_to_json(t) for t in out]


def out_from_json(d: Any) -> OutSpec:
    if isinstance(d, dict):
        if "params" in d:
            return FuncSpec(tuple(out_from_json(p) for p in d["params"]), out_from_json(d["ret"]))
        if "shape" not in d:
            return DynTensorSpec(str(d["dtype"]), int(d.get("ndim", -1)))
        return TensorSpec.from_dict(d)
    return tuple(out_from_json(t) for t in d)


def spec_str(out: OutSpec) -> str:
    if isinstance(out, tuple):
        return "(" + ", ".join(spec_str(t) for t in out) + ")"
    return str(out)


def tensors_of(out: OutSpec) -> list[TensorSpec]:
    """The tensor types inside a type (tuples flattened; none for functions)."""
    if isinstance(out, TensorSpec):
        return [out]
    if isinstance(out, FuncSpec):
        return []
    return [t for f in out for t in tensors_of(f)]


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

    `inputs` name earlier values (parameters, earlier nodes, or values of enclosing scopes for
    nodes of a nested body), in the op's argument order. `body` holds the nested graphs of
    `FUNCTION` and `IF` nodes; `dataflow` whether the binding is in a dataflow block.
    """

    name: str
    op: str
    inputs: list[str]
    attrs: dict[str, Any]
    out: OutSpec
    body: list["Graph"] = field(default_factory=list)
    dataflow: bool = True
    exported: bool = False
    """In a dataflow block, bind to a plain Var even if nothing outside the block uses it
    (values used outside are always plain Vars; this keeps an imported module's choice)."""

    @property
    def is_call(self) -> bool:
        """True for a call of a Relax operator (what counts as an "op" of the graph)."""
        return self.op not in PSEUDO_OPS

    @property
    def is_tuple(self) -> bool:
        return isinstance(self.out, tuple)

    def to_dict(self) -> dict[str, Any]:
        d = {"name": self.name, "op": self.op, "inputs": list(self.inputs),
             "attrs": _plain(self.attrs), "out": out_to_json(self.out)}
        if self.body:
            d["body"] = [g.to_dict() for g in self.body]
        if not self.dataflow:
            d["dataflow"] = False
        if self.exported:
            d["exported"] = True
        return d

    @staticmethod
    def from_dict(d: dict[str, Any]) -> "Node":
        return Node(str(d["name"]), str(d["op"]), [str(i) for i in d["inputs"]],
                    dict(d.get("attrs", {})), out_from_json(d["out"]),
                    [Graph.from_dict(b) for b in d.get("body", [])],
                    bool(d.get("dataflow", True)), bool(d.get("exported", False)))


class GraphError(ValueError):
    """A graph that is not well formed (undefined or duplicate names, bad outputs)."""


@dataclass
class Graph:
    """A Relax function: named parameters, nodes in order, and outputs; for ``main`` also the
    module's other functions (see the module docstring)."""

    inputs: dict[str, OutSpec] = field(default_factory=dict)
    nodes: list[Node] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)
    functions: dict[str, "Graph"] = field(default_factory=dict)
    private: bool = False
    attrs: dict[str, Any] = field(default_factory=dict)
    prim_funcs: dict[str, str] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)
    """Facts about the graph that are not part of the Relax module (e.g. the constraint a
    disruptive generator broke); serialised, never emitted."""
    ret_type: Optional[OutSpec] = None
    """The function's declared return type when it is less precise than its results' types
    (None: the results' types)."""

    # -- queries on this body ------------------------------------------------------------
    def node(self, name: str) -> Node:
        for n in self.nodes:
            if n.name == name:
                return n
        raise KeyError(name)

    def spec_of(self, name: str) -> OutSpec:
        """The type of the value called `name` (a parameter or a node of this body)."""
        if name in self.inputs:
            return self.inputs[name]
        return self.node(name).out

    def op_calls(self, deep: bool = True) -> list[Node]:
        """The nodes that are Relax operator calls, in order (pseudo-ops excluded). With `deep`
        (the default) every op call of the module: this body with nested bodies expanded in
        place (before the node holding them), then each global function in `functions`."""
        if not deep:
            return [n for n in self.nodes if n.is_call]
        return [n for _, n in self.all_nodes() if n.is_call]

    @property
    def num_ops(self) -> int:
        """Number of operator calls in the whole module (see `op_calls`)."""
        return len(self.op_calls())

    def op_sequence(self) -> list[str]:
        return [n.op for n in self.op_calls()]

    def free_vars(self) -> list[str]:
        """Names this body (nested bodies included) uses without defining them: values of
        enclosing scopes. Empty for global functions."""
        defined = set(self.inputs)
        free: list[str] = []
        for n in self.nodes:
            uses = list(n.inputs) + [v for b in n.body for v in b.free_vars()]
            for i in uses:
                if i not in defined and i not in free:
                    free.append(i)
            defined.add(n.name)
        for o in self.outputs:
            if o not in defined and o not in free:
                free.append(o)
        return free

    def uses_of(self, node: Node) -> list[str]:
        """The values `node` uses: its inputs, then the free variables of its bodies."""
        out = list(node.inputs)
        for b in node.body:
            out.extend(v for v in b.free_vars() if v not in out)
        return out

    def consumers(self) -> dict[str, list[str]]:
        """For every value of this body, the nodes of this body that use it (in node order;
        outputs not counted). A value used inside a nested body counts as used by the node
        holding that body."""
        uses: dict[str, list[str]] = {name: [] for name in self.inputs}
        for n in self.nodes:
            uses.setdefault(n.name, [])
            for i in self.uses_of(n):
                uses.setdefault(i, []).append(n.name)
        return uses

    # -- queries across functions ----------------------------------------------------------
    def walk(self, scope: str = "main") -> Iterator[tuple[str, "Graph"]]:
        """(scope path, graph) for this body, every nested body (path ``parent/node.k``) and,
        for the module, every global function (path = its name)."""
        yield scope, self
        for n in self.nodes:
            for k, b in enumerate(n.body):
                yield from b.walk(f"{scope}/{n.name}.{k}")
        for fname, f in self.functions.items():
            yield from f.walk(fname)

    def all_nodes(self, scope: str = "main") -> list[tuple[str, Node]]:
        """(scope path, node) for every node of the module: nested bodies before the node that
        holds them, then the global functions."""
        out: list[tuple[str, Node]] = []
        for n in self.nodes:
            for k, b in enumerate(n.body):
                out.extend(b.all_nodes(f"{scope}/{n.name}.{k}"))
            out.append((scope, n))
        for fname, f in self.functions.items():
            out.extend(f.all_nodes(fname))
        return out

    def op_edges(self) -> list[tuple[tuple[str, str], tuple[str, str]]]:
        """The data edges between operator calls of the module, as pairs
        ((scope, producer name), (scope, consumer name)), sorted. An edge exists when a value
        computed by the producer reaches an input of the consumer through any chain of tuples,
        tuple items, match_casts, function calls (arguments -> parameters, results -> caller),
        branches of an If (their results) and closures; never through constants or inputs."""
        return sorted(_EdgeAnalysis(self).edges())

    def op_edge_types(self) -> list[tuple[str, str]]:
        """`op_edges()` as (producer op, consumer op) names, in the same order."""
        nodes = {(s, n.name): n for s, n in self.all_nodes()}
        return [(nodes[a].op, nodes[b].op) for a, b in self.op_edges()]

    # -- checks --------------------------------------------------------------------------
    def validate(self, outer: Optional[dict[str, OutSpec]] = None,
                 module: Optional["Graph"] = None) -> None:
        """Raise GraphError unless every name is defined once (per function, nested bodies
        included) before it is used, every GET_ITEM index is in range, calls name existing
        functions with the right number of arguments, bodies have the right shape, and the
        outputs exist. `outer` are the values of enclosing scopes (for nested bodies)."""
        module = self if module is None else module
        names: set[str] = set(outer or {})
        self._validate(dict(outer or {}), names, module)
        if outer is None:
            for fname, f in self.functions.items():
                if f.functions:
                    raise GraphError(f"function {fname!r} has functions of its own")
                f._validate({}, set(), module)

    def _validate(self, outer: dict[str, OutSpec], names: set[str], module: "Graph") -> None:
        defined: dict[str, OutSpec] = dict(outer)
        for p, spec in self.inputs.items():
            if p in names:
                raise GraphError(f"value {p!r} defined twice")
            names.add(p)
            defined[p] = spec
        for n in self.nodes:
            if n.name in names:
                raise GraphError(f"value {n.name!r} defined twice")
            for i in n.inputs:
                if i not in defined:
                    raise GraphError(f"node {n.name!r} uses {i!r} before it is defined")
            if n.op == GET_ITEM:
                src = defined[n.inputs[0]]
                if not isinstance(src, tuple) or not 0 <= n.attrs["index"] < len(src):
                    raise GraphError(f"node {n.name!r}: bad tuple index")
            elif n.op == CONST and n.inputs:
                raise GraphError(f"constant {n.name!r} has inputs")
            elif n.op == CALL:
                callee = module.functions.get(n.attrs.get("func", ""))
                if callee is None:
                    raise GraphError(f"node {n.name!r} calls unknown function "
                                     f"{n.attrs.get('func')!r}")
                if len(callee.inputs) != len(n.inputs):
                    raise GraphError(f"node {n.name!r}: {len(n.inputs)} arguments for "
                                     f"{len(callee.inputs)} parameters")
            elif n.op == INVOKE:
                f = defined[n.inputs[0]]
                if not isinstance(f, FuncSpec) or len(f.params) != len(n.inputs) - 1:
                    raise GraphError(f"node {n.name!r} invokes a non-function or with the "
                                     f"wrong number of arguments")
            expected = {FUNCTION: 1, IF: 2}.get(n.op, 0)
            if len(n.body) != expected:
                raise GraphError(f"node {n.name!r} ({n.op}) has {len(n.body)} bodies, "
                                 f"expected {expected}")
            if n.op == IF and (len(n.inputs) != 1 or n.dataflow):
                raise GraphError(f"if {n.name!r} needs one input and dataflow=False")
            if n.op == FUNCTION and n.inputs:
                raise GraphError(f"function {n.name!r} has inputs")
            for b in n.body:
                if n.op == IF and b.inputs:
                    raise GraphError(f"branch of {n.name!r} has parameters")
                b._validate(defined, names, module)
            names.add(n.name)
            defined[n.name] = n.out
        if not self.outputs:
            raise GraphError("graph has no outputs")
        for o in self.outputs:
            if o not in defined:
                raise GraphError(f"output {o!r} is not defined")

    # -- editing (for minimization) --------------------------------------------------------
    def replace_uses(self, old: str, new: str) -> None:
        """Make every use of value `old` in this body (nested bodies and outputs included) a
        use of `new`."""
        for n in self.nodes:
            n.inputs = [new if i == old else i for i in n.inputs]
            for b in n.body:
                b.replace_uses(old, new)
        self.outputs = [new if o == old else o for o in self.outputs]

    def rename(self, mapping: dict[str, str]) -> None:
        """Rename values of this body (parameters, nodes, nested bodies, uses, outputs) at
        once by `mapping` (names not in it are kept)."""
        self.inputs = {mapping.get(k, k): v for k, v in self.inputs.items()}
        for n in self.nodes:
            n.name = mapping.get(n.name, n.name)
            n.inputs = [mapping.get(i, i) for i in n.inputs]
            for b in n.body:
                b.rename(mapping)
        self.outputs = [mapping.get(o, o) for o in self.outputs]

    def canonical_constants(self) -> None:
        """Name the constants of every global function ``c0, c1, ...`` in the order the
        importer meets them (nested bodies in place), as `import_module` names them, so that
        ``import_module(emit(g)) == g`` also holds for generators that move constants around.
        Constants carry the default ``dataflow=True`` (they are never bound)."""
        for g in [self] + list(self.functions.values()):
            consts = [n for _, n in g._in_order() if n.op == CONST]
            mapping = {n.name: f"c{k}" for k, n in enumerate(consts)}
            taken = {n.name for _, n in g._in_order()} | set(g.inputs)
            clash = (taken - set(mapping)) & set(mapping.values())
            if clash:
                raise GraphError(f"cannot name constants canonically: {sorted(clash)} taken")
            g.rename(mapping)
            for n in consts:
                n.dataflow = True

    def _in_order(self) -> Iterator[tuple["Graph", Node]]:
        """(body, node) for the nodes of this body, nested bodies visited at their node's place
        (before it)."""
        for n in self.nodes:
            for b in n.body:
                yield from b._in_order()
            yield self, n

    def prune(self) -> None:
        """Drop nodes whose values nobody uses (outputs are used), recursively in nested
        bodies, and global functions nobody calls. Parameters are kept."""
        changed = True
        while changed:
            changed = False
            for _, g in list(self.walk()):
                uses = g.consumers()
                keep = [n for n in g.nodes if uses[n.name] or n.name in g.outputs]
                if len(keep) != len(g.nodes):
                    g.nodes, changed = keep, True
            called = {n.attrs["func"] for _, n in self.all_nodes() if n.op == CALL}
            for fname in list(self.functions):
                if fname not in called:
                    del self.functions[fname]
                    changed = True

    # -- serialisation -------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable dict (lists, dicts, str, int, float, bool, None). Fields that
        hold their default are left out."""
        d: dict[str, Any] = {
            "inputs": [{"name": k, **_input_json(v)} for k, v in self.inputs.items()],
            "nodes": [n.to_dict() for n in self.nodes],
            "outputs": list(self.outputs),
        }
        if self.functions:
            d["functions"] = {k: f.to_dict() for k, f in self.functions.items()}
        if self.private:
            d["private"] = True
        if self.attrs:
            d["attrs"] = _plain(self.attrs)
        if self.prim_funcs:
            d["prim_funcs"] = dict(self.prim_funcs)
        if self.meta:
            d["meta"] = _plain(self.meta)
        if self.ret_type is not None:
            d["ret_type"] = out_to_json(self.ret_type)
        return d

    @staticmethod
    def from_dict(d: dict[str, Any]) -> "Graph":
        inputs = {str(i["name"]): _input_from_json(i) for i in d["inputs"]}
        return Graph(inputs, [Node.from_dict(n) for n in d["nodes"]],
                     [str(o) for o in d["outputs"]],
                     {str(k): Graph.from_dict(f) for k, f in d.get("functions", {}).items()},
                     bool(d.get("private", False)), dict(d.get("attrs", {})),
                     {str(k): str(v) for k, v in d.get("prim_funcs", {}).items()},
                     dict(d.get("meta", {})),
                     out_from_json(d["ret_type"]) if "ret_type" in d else None)

    def to_json(self, **kw: Any) -> str:
        return json.dumps(self.to_dict(), **kw)

    @staticmethod
    def from_json(text: str) -> "Graph":
        return Graph.from_dict(json.loads(text))

    def copy(self) -> "Graph":
        return Graph.from_dict(json.loads(self.to_json()))

    def __str__(self) -> str:
        return "\n".join(self._lines("main", ""))

    def _lines(self, name: str, indent: str) -> list[str]:
        lines = []
        for fname, f in self.functions.items():
            lines.extend(f._lines(fname, indent))
        head = "private " if self.private else ""
        lines.append(f"{indent}{head}{name}"
                     f"({', '.join(f'{k}: {spec_str(v)}' for k, v in self.inputs.items())}):")
        for n in self.nodes:
            attrs = "" if not n.attrs or n.op == CONST else \
                " {" + ", ".join(f"{k}={v!r}" for k, v in n.attrs.items()) + "}"
            lines.append(f"{indent}  {n.name}: {spec_str(n.out)} = "
                         f"{n.op}({', '.join(n.inputs)}){attrs}")
            for k, b in enumerate(n.body):
                lines.extend(b._lines(f"{n.name}.{k}", indent + "    "))
        lines.append(f"{indent}  return {', '.join(self.outputs)}")
        return lines


def _input_json(spec: OutSpec) -> dict[str, Any]:
    if isinstance(spec, TensorSpec):
        return spec.to_dict()
    return {"type": out_to_json(spec)}


def _input_from_json(d: dict[str, Any]) -> OutSpec:
    return out_from_json(d["type"]) if "type" in d else TensorSpec.from_dict(d)


class _EdgeAnalysis:
    """Which operator calls each value may come from, propagated to a fixed point across
    pseudo-ops, function calls, branches and closures (see `Graph.op_edges`)."""

    def __init__(self, module: Graph) -> None:
        self.module = module
        # (scope of the defining function, name) -> set of producer op keys; a value is
        # keyed by the top-level function it belongs to ("main" or a global name), since
        # names are unique per function.
        self.src: dict[tuple[str, str], set[tuple[str, str]]] = {}
        self.scopes: list[tuple[str, str, Graph]] = []  # (scope path, function key, graph)
        for fname, g in [("main", module)] + list(module.functions.items()):
            for path, sub in self._bodies(g, fname):
                self.scopes.append((path, fname, sub))
        self.fn_body = {(fk, n.name): n.body[0] for _, fk, g in self.scopes
                        for n in g.nodes if n.op == FUNCTION}

    @staticmethod
    def _bodies(g: Graph, path: str) -> Iterator[tuple[str, Graph]]:
        yield path, g
        for n in g.nodes:
            for k, b in enumerate(n.body):
                yield from _EdgeAnalysis._bodies(b, f"{path}/{n.name}.{k}")

    def get(self, fk: str, name: str) -> set[tuple[str, str]]:
        return self.src.get((fk, name), set())

    def add(self, fk: str, name: str, items: Iterable[tuple[str, str]]) -> bool:
        cur = self.src.setdefault((fk, name), set())
        before = len(cur)
        cur.update(items)
        return len(cur) != before

    def outputs_src(self, fk: str, g: Graph) -> set[tuple[str, str]]:
        return {s for o in g.outputs for s in self.get(fk, o)}

    def edges(self) -> set[tuple[tuple[str, str], tuple[str, str]]]:
        changed = True
        while changed:
            changed = False
            for path, fk, g in self.scopes:
                for n in g.nodes:
                    if n.is_call:
                        changed |= self.add(fk, n.name, [(path, n.name)])
                    elif n.op in (TUPLE, GET_ITEM, MATCH_CAST):
                        # tuples are not tracked per field: an item may come from any field
                        changed |= self.add(fk, n.name, {s for i in n.inputs
                                                         for s in self.get(fk, i)})
                    elif n.op == CALL:
                        callee = self.module.functions[n.attrs["func"]]
                        cname = n.attrs["func"]
                        for p, a in zip(callee.inputs, n.inputs):
                            changed |= self.add(cname, p, self.get(fk, a))
                        changed |= self.add(fk, n.name, self.outputs_src(cname, callee))
                    elif n.op == INVOKE:
                        body = self.fn_body.get((fk, n.inputs[0]))
                        if body is not None:  # a function value of another origin: no edges
                            for p, a in zip(body.inputs, n.inputs[1:]):
                                changed |= self.add(fk, p, self.get(fk, a))
                            changed |= self.add(fk, n.name, self.outputs_src(fk, body))
                    elif n.op == IF:
                        changed |= self.add(fk, n.name, {s for b in n.body
                                                         for s in self.outputs_src(fk, b)})
        out = set()
        for path, fk, g in self.scopes:
            for n in g.nodes:
                if n.is_call:
                    for i in n.inputs:
                        for s in self.get(fk, i):
                            out.add((s, (path, n.name)))
        return out


def union(graphs: Iterable[Graph]) -> Graph:
    """The disjoint union of `graphs` (without functions): all inputs, nodes and outputs side
    by side, the names of graph k prefixed with ``g{k}_`` (useful to build and run many small
    graphs at once)."""
    out = Graph()
    for k, g in enumerate(graphs):
        if g.functions or any(n.body for n in g.nodes):
            raise GraphError("union of graphs with functions is not supported")
        p = f"g{k}_"
        for name, spec in g.inputs.items():
            out.inputs[p + name] = spec
        for n in g.nodes:
            out.nodes.append(Node(p + n.name, n.op, [p + i for i in n.inputs],
                                  json.loads(json.dumps(_plain(n.attrs))), n.out,
                                  dataflow=n.dataflow))
        out.outputs.extend(p + o for o in g.outputs)
    return out
