"""Emit a `Graph` as a TVM Relax IRModule, and the table that says how each op is called.

`emit(graph)` builds ``main`` with `relax.BlockBuilder`: one dataflow block, one binding per
non-constant node, constants inlined into their users (scalars print as ``R.const(1.5,
"float32")``, tensors as ``metadata["ir.GenericConst"][i]``), the outputs returned as one tensor
or as a Relax tuple. TVM infers every binding's type; with ``check_types=True`` (the default)
the inferred type must equal the node's `out`, so a generator's shape arithmetic is checked by
TVM on every emitted graph.

`SIGNATURES` maps a TVM op name to how its Python constructor `tvm.relax.op.<...>` is called:
which leading arguments are tensors, which graph attributes become further (non-tensor) Relax
arguments, and which are fields of the op's attrs object. The importer (`generators/importer.py`)
reads calls back through the same table, so emit -> import is the identity on canonical graphs.
Only this file and `importer.py` touch TVM's API (apache-tvm 0.27).
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np
import tvm
from tvm import relax

from generators.graph import CONST, GET_ITEM, TUPLE, Graph, GraphError, Node, OutSpec, TensorSpec
from generators.signatures import SIGNATURES, OpSignature  # noqa: F401  (re-exported)


def op_constructor(op: str) -> Callable[..., Any]:
    """The Python function of `tvm.relax.op` that builds a call of `op` ("relax.nn.conv2d" ->
    `relax.op.nn.conv2d`)."""
    if not op.startswith("relax."):
        raise GraphError(f"not a Relax op name: {op!r}")
    fn: Any = relax.op
    for part in op.split(".")[1:]:
        fn = getattr(fn, part, None)
        if fn is None:
            raise GraphError(f"no constructor relax.op.{op[len('relax.'):]} for {op!r}")
    return fn


def _is_extra_arg(name: str) -> bool:
    """Attribute names "arg<i>": the importer's names for extra Relax args of unknown ops."""
    return name.startswith("arg") and name[3:].isdigit()


def const_expr(node: Node) -> Any:
    """The Relax constant of a CONST node."""
    assert isinstance(node.out, TensorSpec)
    arr = np.array(node.attrs["value"], dtype=node.attrs["dtype"]).reshape(node.out.shape)
    return relax.const(arr, node.attrs["dtype"])


def call_expr(node: Node, inputs: list[Any]) -> Any:
    """The Relax call `node.op(*inputs, **node.attrs)` following `SIGNATURES`."""
    sig = SIGNATURES.get(node.op)
    fn = op_constructor(node.op)
    if sig is None:
        # Unknown op (e.g. imported from a foreign module): tensors positional, the rest as
        # keywords; imported extra Relax arguments were stored as "arg<i>".
        extra = sorted((int(k[3:]), v) for k, v in node.attrs.items() if _is_extra_arg(k))
        kw = {k: v for k, v in node.attrs.items() if not _is_extra_arg(k)}
        return fn(*inputs, *[v for _, v in extra], **kw)
    missing = [a for a in sig.args + sig.attrs if a not in node.attrs]
    unknown = [a for a in node.attrs if a not in sig.args + sig.attrs]
    if missing or unknown:
        raise GraphError(f"{node.name} = {node.op}: missing attributes {missing}, "
                         f"unknown attributes {unknown}")
    tensors: list[Any] = list(inputs)
    if sig.tensors is None:  # one Relax tuple: built here, or an existing tuple-typed value
        single = len(inputs) == 1 and isinstance(getattr(inputs[0], "ty", None), tvm.ir.TupleType)
        tensors = [inputs[0] if single else list(inputs)]
    if sig.tensors is not None and len(inputs) != sig.tensors:
        raise GraphError(f"{node.name} = {node.op}: expects {sig.tensors} tensor inputs, "
                         f"got {len(inputs)}")
    # The op constructors turn lists/numbers into ShapeExpr, tuples of int64 prim values, ...
    args = [node.attrs[a] for a in sig.args]
    kwargs = {a: node.attrs[a] for a in sig.attrs}
    return fn(*tensors, *args, **kwargs)


def type_to_out(ty: Any) -> OutSpec | None:
    """A Relax type as a TensorSpec / tuple of TensorSpecs (None if not static)."""
    if isinstance(ty, relax.TensorType):
        if not isinstance(ty.shape, relax.ShapeExpr):
            return None
        dims = []
        for v in ty.shape.values:
            if not isinstance(v, tvm.tirx.IntImm):
                return None
            dims.append(int(v.value))
        return TensorSpec(tuple(dims), str(ty.dtype))
    if isinstance(ty, tvm.ir.TupleType):
        fields = [type_to_out(f) for f in ty.fields]
        if any(not isinstance(f, TensorSpec) for f in fields):
            return None
        return tuple(fields)  # type: ignore[arg-type]
    return None


def emit(graph: Graph, *, check_types: bool = True, func_name: str = "main") -> tvm.ir.IRModule:
    """The IRModule whose public function `func_name` computes `graph`.

    Raises GraphError if the graph is malformed or (with `check_types`) if TVM infers a type
    different from a node's declared `out`. TVM's own type errors propagate unchanged.
    """
    graph.validate()
    params = [relax.Var(name, relax.TensorType(list(spec.shape), spec.dtype))
              for name, spec in graph.inputs.items()]
    env: dict[str, Any] = dict(zip(graph.inputs, params))
    outputs = set(graph.outputs)
    bb = relax.BlockBuilder()
    with bb.function(func_name, params):
        with bb.dataflow():
            for node in graph.nodes:
                args = [env[i] for i in node.inputs]
                if node.op == CONST:
                    env[node.name] = const_expr(node)  # inlined, never bound
                    continue
                if node.op == TUPLE:
                    expr = relax.Tuple(args)
                elif node.op == GET_ITEM:
                    expr = relax.TupleGetItem(args[0], int(node.attrs["index"]))
                else:
                    expr = call_expr(node, args)
                emit_fn = bb.emit_output if node.name in outputs else bb.emit
                var = emit_fn(expr, name_hint=node.name)
                if check_types:
                    got = type_to_out(var.ty)
                    if got != node.out:
                        raise GraphError(f"{node.name} = {node.op}: TVM infers {var.ty}, the "
                                         f"graph declares {node.out}")
                env[node.name] = var
        rets = [env[o] for o in graph.outputs]
        bb.emit_func_output(rets[0] if len(rets) == 1 else relax.Tuple(rets))
    return bb.get()
