"""Read a Relax IRModule's `main` back into a `Graph` (the inverse of `generators/emit.py`).

Works for functions made of op calls, tuples, TupleGetItems, constants and aliases in binding
blocks (dataflow or not) with static tensor shapes; anything else (If, match_cast, calls of
global functions, call_tir, symbolic shapes) raises `UnsupportedModule`. Ops listed in
`emit.SIGNATURES` are read through the same table as they are emitted, so
``import_module(emit(g)) == g`` for canonical graphs; other ops keep their tensor arguments as
inputs, their other arguments as attributes ``arg<i>`` (i = position in the call) and every
field of their attrs object.

Constants that appear inline as call arguments become CONST nodes named ``c0, c1, ...`` in
the order they are met, placed just before their first user (one node per constant object).
"""
from __future__ import annotations

from typing import Any

import tvm
import tvm_ffi
from tvm import relax

from generators.emit import SIGNATURES, type_to_out
from generators.graph import CONST, GET_ITEM, TUPLE, Graph, GraphError, Node, TensorSpec

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


class _Importer:
    def __init__(self) -> None:
        self.graph = Graph()
        self.names: dict[Any, str] = {}  # Relax Var -> value name
        self.used: set[str] = set()
        self.consts: list[tuple[Any, str]] = []  # (GenericConst, name), matched by same_as
        self.n_tuples = 0

    def fresh(self, base: str) -> str:
        name, k = base, 1
        while name in self.used:
            name, k = f"{base}_{k}", k + 1
        self.used.add(name)
        return name

    def const(self, c: Any) -> str:
        for other, name in self.consts:
            if other.same_as(c):
                return name
        out = type_to_out(c.ty)
        if not isinstance(out, TensorSpec):
            raise UnsupportedModule(f"constant of type {c.ty}")
        name = self.fresh(f"c{len(self.consts)}")
        arr = c.value.numpy()
        self.graph.nodes.append(Node(name, CONST, [], {"value": arr.tolist(),
                                                       "dtype": out.dtype}, out))
        self.consts.append((c, name))
        return name

    def value(self, expr: Any) -> str:
        """The name of the value an argument expression denotes (creating CONST / TUPLE nodes
        for inline constants and tuples)."""
        if isinstance(expr, tvm.ir.GenericConst):
            return self.const(expr)
        if isinstance(expr, tvm.ir.Var):
            if expr not in self.names:
                raise UnsupportedModule(f"free variable {expr.name}")
            return self.names[expr]
        if isinstance(expr, tvm.ir.Tuple):
            fields = [self.value(f) for f in expr.fields]
            name = self.fresh(f"t{self.n_tuples}")
            self.n_tuples += 1
            self.graph.nodes.append(Node(name, TUPLE, fields, {},
                                         tuple(self._tensor_spec(f) for f in fields)))
            return name
        raise UnsupportedModule(f"argument {type(expr).__name__} {expr}")

    def _tensor_spec(self, name: str) -> TensorSpec:
        spec = self.graph.spec_of(name)
        if not isinstance(spec, TensorSpec):
            raise UnsupportedModule(f"nested tuple {name}")
        return spec

    def call(self, name: str, call: Any) -> Node:
        op = call.op
        if not isinstance(op, tvm.ir.Op):
            raise UnsupportedModule(f"call of {op} (only Relax operators are supported)")
        if op.name in ("relax.call_tir", "relax.call_dps_packed", "relax.call_pure_packed"):
            raise UnsupportedModule(f"{op.name}")
        out = type_to_out(call.ty)
        if out is None:
            raise UnsupportedModule(f"{op.name} with non-static result type {call.ty}")
        sig = SIGNATURES.get(op.name)
        args = list(call.args)
        if sig is None:
            inputs = [self.value(a) for a in args if _is_tensor(a)]
            attrs = {f"arg{i}": plain_value(a) for i, a in enumerate(args) if not _is_tensor(a)}
            attrs.update(attrs_of(call.attrs))
            return Node(name, op.name, inputs, attrs, out)
        if sig.tensors is None:  # one tuple of tensors (concat)
            first = args[0]
            inputs = [self.value(f) for f in first.fields] if isinstance(first, tvm.ir.Tuple) \
                else [self.value(first)]
            rest = args[1:]
        else:
            inputs = [self.value(a) for a in args[:sig.tensors]]
            rest = args[sig.tensors:]
        if len(rest) != len(sig.args):
            raise UnsupportedModule(f"{op.name} with {len(args)} arguments")
        attrs = {a: plain_value(v) for a, v in zip(sig.args, rest)}
        attrs.update(attrs_of(call.attrs, sig.attrs))
        return Node(name, op.name, inputs, attrs, out)

    def binding(self, b: Any) -> None:
        if not isinstance(b, relax.VarBinding):
            raise UnsupportedModule(f"{type(b).__name__} binding of {b.var.name}")
        var, value = b.var, b.value
        if isinstance(value, tvm.ir.Var):  # alias: same value, no node
            self.names[var] = self.value(value)
            return
        name = self.fresh(var.name)
        if isinstance(value, tvm.ir.Call):
            node = self.call(name, value)
        elif isinstance(value, tvm.ir.TupleGetItem):
            src = self.value(value.tuple_value)
            spec = self.graph.spec_of(src)
            if isinstance(spec, TensorSpec):
                raise UnsupportedModule(f"TupleGetItem of a tensor in {name}")
            node = Node(name, GET_ITEM, [src], {"index": int(value.index)},
                        spec[int(value.index)])
        elif isinstance(value, tvm.ir.Tuple):
            fields = [self.value(f) for f in value.fields]
            node = Node(name, TUPLE, fields, {}, tuple(self._tensor_spec(f) for f in fields))
        elif isinstance(value, tvm.ir.GenericConst):
            out = type_to_out(value.ty)
            if not isinstance(out, TensorSpec):
                raise UnsupportedModule(f"constant of type {value.ty}")
            node = Node(name, CONST, [], {"value": value.value.numpy().tolist(),
                                          "dtype": out.dtype}, out)
            self.consts.append((value, name))
        else:
            raise UnsupportedModule(f"binding {name} = {type(value).__name__}")
        self.graph.nodes.append(node)
        self.names[var] = name

    def function(self, fn: Any) -> Graph:
        for p in fn.params:
            spec = type_to_out(p.ty)
            if not isinstance(spec, TensorSpec):
                raise UnsupportedModule(f"parameter {p.name}: {p.ty} (static tensors only)")
            name = self.fresh(p.name)
            self.graph.inputs[name] = spec
            self.names[p] = name
        body = fn.body
        if not isinstance(body, relax.SeqExpr):
            raise UnsupportedModule("function body is not a SeqExpr")
        for block in body.blocks:
            for b in block.bindings:
                self.binding(b)
        result = body.body
        if isinstance(result, tvm.ir.Tuple):
            outputs = [self.value(f) for f in result.fields]
        else:
            outputs = [self.value(result)]
            # `gv = (a, b); return gv` is the same as `return (a, b)`.
            if len(outputs) == 1 and outputs[0] not in self.graph.inputs:
                node = self.graph.node(outputs[0])
                users = self.graph.consumers()[node.name]
                if node.op == TUPLE and not users:
                    self.graph.nodes.remove(node)
                    outputs = list(node.inputs)
        self.graph.outputs = outputs
        return self.graph


def import_module(mod: tvm.ir.IRModule, func: str = "main") -> Graph:
    """The graph computed by the Relax function `func` of `mod` (see the module docstring for
    what is supported)."""
    fn = mod[func]
    if not isinstance(fn, relax.Function):
        raise UnsupportedModule(f"{func} is not a Relax function")
    graph = _Importer().function(fn)
    graph.validate()
    return graph
