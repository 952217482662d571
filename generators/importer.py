"""Read a Relax IRModule back into a `Graph` (the inverse of `generators/emit.py`).

`import_module(mod)` reads ``main`` and every other global function of the module: Relax
functions become `Graph.functions` (in name order), PrimFuncs are kept as opaque TVMScript text
in `Graph.prim_funcs` and called through ``relax.call_tir`` nodes. Bindings may be op calls,
calls of global functions (`CALL`) or of function values (`INVOKE`), tuples, TupleGetItems,
constants, aliases, nested functions (`FUNCTION`), If (`IF`) and match_cast (`MATCH_CAST`), in
dataflow or plain binding blocks, over values of static types (tensors with constant shapes or
of unknown shape (``R.Tensor(dtype=..., ndim=...)``), tuples of them, functions of them);
an alias whose declared type is less precise than its value's is an `ALIAS` node. Anything else (symbolic shapes, shape or prim values as
bindings, packed calls, recursion) raises `UnsupportedModule`. Ops listed in
`emit.SIGNATURES` are read through the same table as they are emitted, so
``import_module(emit(g)) == g`` for canonical graphs (global functions in name order); other
ops keep their tensor arguments as inputs, their other arguments as attributes ``arg<i>``
(i = position in the call) and every field of their attrs object.

Constants that appear inline as call arguments become CONST nodes named ``c0, c1, ...`` in
the order they are met in each function, placed just before their first user (one node per
constant object and body). ``return (a, b)`` reads as outputs ``[a, b]``, while
``gv = (a, b); return gv`` keeps the TUPLE node ``gv`` as the single output.
"""
from __future__ import annotations

from typing import Any

import tvm
import tvm_ffi
from tvm import relax

from generators.emit import SIGNATURES, required_exports, type_to_out
from generators.graph import (ALIAS, CALL, CONST, FUNCTION, GET_ITEM, IF, INVOKE, MATCH_CAST,
                              TUPLE, Graph, GraphError, Node, OutSpec, TensorSpec)

# dir() of an attrs object also lists these methods/handles; they are not fields.
_NOT_FIELDS = frozenset({"get_int", "get_int_tuple", "get_str", "id_", "is_", "same_as"})


class UnsupportedModule(GraphError):
    """The module uses something the graph IR cannot represent."""


def plain_value(value: Any) -> Any:
    """A TVM attribute / argument value as plain Python (int, float, bool, str, None, list)."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, tvm.tirx.IntImm):
        if str(value.ty) == "bool":
            return bool(value.value)
        return int(value.value)
    if isinstance(value, tvm.tirx.FloatImm):
        return float(value.value)
    if isinstance(value, (int, float)):
        return value
    if isinstance(value, str):  # includes tvm_ffi String
        return str(value)
    if isinstance(value, tvm.ir.PrimType) or type(value).__name__ == "dtype":
        return str(value)
    if isinstance(value, relax.ShapeExpr):
        return [plain_value(v) for v in value.values]
    if isinstance(value, tvm.ir.Tuple):
        return [plain_value(v) for v in value.fields]
    if isinstance(value, (tvm_ffi.container.Array, list, tuple)):
        return [plain_value(v) for v in value]
    if isinstance(value, tvm_ffi.container.Map):
        return {str(k): plain_value(v) for k, v in value.items()}
    # Relax PrimValue wrappers (R.prim_value(...)) carry the prim expression in .value
    inner = getattr(value, "value", None)
    if inner is not None and isinstance(inner, (tvm.tirx.IntImm, tvm.tirx.FloatImm)):
        return plain_value(inner)
    raise UnsupportedModule(f"attribute/argument value {value!r} ({type(value).__name__})")


def attrs_of(attrs: Any, names: tuple[str, ...] | None = None) -> dict[str, Any]:
    """The fields `names` of a TVM attrs object (all fields when `names` is None)."""
    if attrs is None:
        return {}
    if names is None:
        names = tuple(n for n in dir(attrs) if not n.startswith("_") and n not in _NOT_FIELDS
                      and not callable(getattr(attrs, n, None)))
    return {n: plain_value(getattr(attrs, n)) for n in names}


def _is_tensor(expr: Any) -> bool:
    return isinstance(getattr(expr, "ty", None), (relax.TensorType, tvm.ir.TupleType))


def _static(ty: Any, what: str) -> OutSpec:
    out = type_to_out(ty)
    if out is None:
        raise UnsupportedModule(f"{what}: non-static type {ty}")
    return out


class _Importer:
    """Reads one module; names are made unique per global function (nested bodies share the
    names of their function)."""

    def __init__(self) -> None:
        self.plain: set[str] = set()  # names bound to plain Vars in dataflow blocks
        self.names: dict[Any, str] = {}  # Relax Var -> value name
        self.used: set[str] = set()
        self.consts: dict[int, list[tuple[Any, str]]] = {}  # id(graph) -> (GenericConst, name)
        self.n_consts = 0
        self.n_tuples = 0

    def reset(self) -> None:
        """Start a new global function."""
        self.used, self.consts, self.n_consts, self.n_tuples = set(), {}, 0, 0

    def fresh(self, base: str) -> str:
        name, k = base, 1
        while name in self.used:
            name, k = f"{base}_{k}", k + 1
        self.used.add(name)
        return name

    def const(self, g: Graph, c: Any) -> str:
        seen = self.consts.setdefault(id(g), [])
        for other, name in seen:
            if other.same_as(c):
                return name
        out = type_to_out(c.ty)
        if not isinstance(out, TensorSpec):
            raise UnsupportedModule(f"constant of type {c.ty}")
        name = self.fresh(f"c{self.n_consts}")
        self.n_consts += 1
        g.nodes.append(Node(name, CONST, [], {"value": c.value.numpy().tolist(),
                                              "dtype": out.dtype}, out))
        seen.append((c, name))
        return name

    def value(self, g: Graph, expr: Any) -> str:
        """The name of the value an argument expression denotes (creating CONST / TUPLE nodes
        in `g` for inline constants and tuples)."""
        if isinstance(expr, tvm.ir.GenericConst):
            return self.const(g, expr)
        if isinstance(expr, tvm.ir.Var):
            if expr not in self.names:
                raise UnsupportedModule(f"free variable {expr.name}")
            return self.names[expr]
        if isinstance(expr, tvm.ir.Tuple):
            fields = [self.value(g, f) for f in expr.fields]
            name = self.fresh(f"t{self.n_tuples}")
            self.n_tuples += 1
            g.nodes.append(Node(name, TUPLE, fields, {"inline": True},
                                tuple(self._spec(g, f) for f in fields)))
            self.specs[name] = g.nodes[-1].out
            return name
        raise UnsupportedModule(f"argument {type(expr).__name__} {expr}")

    def _spec(self, g: Graph, name: str) -> OutSpec:
        """The type of a value visible from body `g` (its own or of an enclosing scope)."""
        for n in g.nodes:
            if n.name == name:
                return n.out
        if name in g.inputs:
            return g.inputs[name]
        return self.specs[name]

    def call(self, g: Graph, name: str, call: Any) -> Node:
        op = call.op
        out = _static(call.ty, name)
        if isinstance(op, tvm.ir.GlobalVar):
            return Node(name, CALL, [self.value(g, a) for a in call.args],
                        {"func": op.name_hint}, out)
        if isinstance(op, tvm.ir.Var):
            return Node(name, INVOKE, [self.value(g, op)] + [self.value(g, a) for a in call.args],
                        {}, out)
        if not isinstance(op, tvm.ir.Op):
            raise UnsupportedModule(f"call of {op}")
        args = list(call.args)
        if op.name == "relax.call_tir":
            if len(args) != 2 or not isinstance(args[0], tvm.ir.GlobalVar):
                raise UnsupportedModule("call_tir with symbolic arguments")
            fields = args[1].fields if isinstance(args[1], tvm.ir.Tuple) else [args[1]]
            return Node(name, op.name, [self.value(g, a) for a in fields],
                        {"func": args[0].name_hint}, out)
        if op.name in ("relax.call_dps_packed", "relax.call_pure_packed", "relax.call_packed",
                       "relax.call_inplace_packed", "relax.call_tir_inplace",
                       "relax.call_tir_with_grad"):
            raise UnsupportedModule(f"{op.name}")
        sig = SIGNATURES.get(op.name)
        if sig is None:
            inputs = [self.value(g, a) for a in args if _is_tensor(a)]
            attrs = {f"arg{i}": plain_value(a) for i, a in enumerate(args) if not _is_tensor(a)}
            attrs.update(attrs_of(call.attrs))
            return Node(name, op.name, inputs, attrs, out)
        if sig.tensors is None:  # one tuple of tensors (concat)
            first = args[0]
            inputs = [self.value(g, f) for f in first.fields] \
                if isinstance(first, tvm.ir.Tuple) else [self.value(g, first)]
            rest = args[1:]
        else:
            inputs = [self.value(g, a) for a in args[:sig.tensors]]
            rest = args[sig.tensors:]
        if len(rest) != len(sig.args):
            raise UnsupportedModule(f"{op.name} with {len(args)} arguments")
        attrs = {a: plain_value(v) for a, v in zip(sig.args, rest)}
        attrs.update(attrs_of(call.attrs, sig.attrs))
        return Node(name, op.name, inputs, attrs, out)

    def binding(self, g: Graph, b: Any, dataflow: bool) -> None:
        var, value = b.var, b.value
        if isinstance(b, relax.MatchCast):
            src = self.value(g, value)
            name = self.fresh(var.name)
            node = Node(name, MATCH_CAST, [src], {}, _static(b.ty, name), dataflow=dataflow)
            self._add(g, node, var)
            return
        if not isinstance(b, relax.VarBinding):
            raise UnsupportedModule(f"{type(b).__name__} binding of {var.name}")
        if isinstance(value, tvm.ir.Var):
            src = self.value(g, value)
            declared = _static(var.ty, var.name)
            if declared == self._spec(g, src):  # alias: same value, no node
                self.names[var] = src
                return
            name = self.fresh(var.name)  # `y: T = x` with T less precise than x's type
            self._add(g, Node(name, ALIAS, [src], {}, declared, dataflow=dataflow), var)
            return
        name = self.fresh(var.name)
        if isinstance(value, tvm.ir.Call):
            node = self.call(g, name, value)
        elif isinstance(value, tvm.ir.TupleGetItem):
            src = self.value(g, value.tuple_value)
            spec = self._spec(g, src)
            if not isinstance(spec, tuple):
                raise UnsupportedModule(f"TupleGetItem of a non-tuple in {name}")
            node = Node(name, GET_ITEM, [src], {"index": int(value.index)},
                        spec[int(value.index)])
        elif isinstance(value, tvm.ir.Tuple):
            fields = [self.value(g, f) for f in value.fields]
            node = Node(name, TUPLE, fields, {}, tuple(self._spec(g, f) for f in fields))
        elif isinstance(value, tvm.ir.GenericConst):
            out = type_to_out(value.ty)
            if not isinstance(out, TensorSpec):
                raise UnsupportedModule(f"constant of type {value.ty}")
            node = Node(name, CONST, [], {"value": value.value.numpy().tolist(),
                                          "dtype": out.dtype}, out)
            self.consts.setdefault(id(g), []).append((value, name))
        elif isinstance(value, relax.Function):
            body = self.function(value, nested=True)
            node = Node(name, FUNCTION, [], {}, _static(value.ty, name), [body])
        elif isinstance(value, relax.If):
            cond = self.value(g, value.cond)
            branches = [self.seq(Graph(), value.true_branch),
                        self.seq(Graph(), value.false_branch)]
            node = Node(name, IF, [cond], {}, _static(var.ty, name), branches)
        else:
            raise UnsupportedModule(f"binding {name} = {type(value).__name__}")
        node.dataflow = dataflow and node.op != IF
        self._add(g, node, var)

    def _add(self, g: Graph, node: Node, var: Any) -> None:
        if node.dataflow and not isinstance(var, relax.DataflowVar):
            self.plain.add(node.name)  # a plain Var in a dataflow block
        g.nodes.append(node)
        self.names[var] = node.name
        self.specs[node.name] = node.out

    def seq(self, g: Graph, seq: Any) -> Graph:
        """Fill `g` with the bindings and result of a SeqExpr."""
        if not isinstance(seq, relax.SeqExpr):
            raise UnsupportedModule(f"body {type(seq).__name__} is not a SeqExpr")
        for block in seq.blocks:
            df = isinstance(block, relax.DataflowBlock)
            for b in block.bindings:
                self.binding(g, b, df)
        result = seq.body
        if isinstance(result, tvm.ir.Tuple):  # `return (a, b)`: outputs a and b
            outputs = [self.value(g, f) for f in result.fields]
        else:  # `gv = (a, b); return gv` keeps its TUPLE node gv as the one output
            outputs = [self.value(g, result)]
        g.outputs = outputs
        needed = required_exports(g)
        for n in g.nodes:
            n.exported = n.dataflow and n.name in self.plain and n.name not in needed
        return g

    def function(self, fn: Any, nested: bool = False) -> Graph:
        if not isinstance(fn, relax.Function):
            raise UnsupportedModule(f"{type(fn).__name__} is not a Relax function")
        g = Graph()
        for p in fn.params:
            spec = _static(p.ty, f"parameter {p.name}")
            name = self.fresh(p.name)
            g.inputs[name] = spec
            self.names[p] = name
            self.specs[name] = spec
        self.seq(g, fn.body)
        declared = _static(fn.ret_ty, "return type")
        if declared != _static(fn.body.ty, "function body"):
            g.ret_type = declared
        if not nested:
            attrs = attrs_of_dict(fn.attrs)
            g.private = "global_symbol" not in attrs
            attrs.pop("global_symbol", None)
            g.attrs = attrs
        return g

    specs: dict[str, OutSpec]

    def module(self, mod: tvm.ir.IRModule, func: str) -> Graph:
        self.specs = {}
        fns = {gv.name_hint: f for gv, f in mod.functions.items()}
        if func not in fns:
            raise UnsupportedModule(f"module has no function {func!r}")
        main = self.function(fns[func])
        for name in sorted(fns):
            if name == func:
                continue
            f = fns[name]
            if isinstance(f, relax.Function):
                self.reset()
                self.specs = {}
                main.functions[name] = self.function(f)
            elif isinstance(f, tvm.tirx.PrimFunc):
                main.prim_funcs[name] = f.script()
            else:
                raise UnsupportedModule(f"function {name} of kind {type(f).__name__}")
        return main


def attrs_of_dict(attrs: Any) -> dict[str, Any]:
    """A function's DictAttrs as a plain dict (empty when there are none)."""
    if attrs is None:
        return {}
    return {str(k): plain_value(v) for k, v in attrs.items()}


def import_module(mod: tvm.ir.IRModule, func: str = "main") -> Graph:
    """The graph of the Relax function `func` of `mod`, with the module's other functions (see
    the module docstring for what is supported)."""
    fn = mod[func] if func in [gv.name_hint for gv in mod.functions] else None
    if not isinstance(fn, relax.Function):
        raise UnsupportedModule(f"{func} is not a Relax function")
    graph = _Importer().module(mod, func)
    graph.validate()
    return graph
