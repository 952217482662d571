"""Emit a `Graph` as a TVM Relax IRModule, and the table that says how each op is called.

`emit(graph)` builds ``main`` (and the graph's other global functions, private ones printed as
``@R.function(private=True)``, and its opaque PrimFuncs) with a `relax.BlockBuilder`: one
binding per non-constant node, consecutive nodes with the same `Node.dataflow` flag in one
block (a dataflow block or a plain binding block), constants inlined into their users (scalars
print as ``R.const(1.5, "float32")``, tensors as ``metadata["ir.GenericConst"][i]``), the
outputs returned as one value or as a Relax tuple. A value of a dataflow block is a
`DataflowVar` unless it is used outside its block (a later block, a nested body, a result).
`IF` nodes become ``relax.If`` with SeqExpr branches, `FUNCTION` nodes nested ``relax.Function``
values, `CALL` calls of a GlobalVar, `INVOKE` calls of a function value, `MATCH_CAST`
``MatchCast`` bindings. TVM infers every binding's type; with ``check_types=True`` (the default)
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

from generators.graph import (ALIAS, CALL, CONST, FUNCTION, GET_ITEM, IF, INVOKE, MATCH_CAST,
                              TUPLE, DynTensorSpec, FuncSpec, Graph, GraphError, Node, OutSpec,
                              TensorSpec)
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
    if node.op == "relax.call_tir":
        raise GraphError("call_tir is emitted by the module emitter")  # needs the GlobalVar
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
    """A Relax type as a TensorSpec / (nested) tuple / FuncSpec (None if not static)."""
    if isinstance(ty, relax.TensorType):
        if ty.shape is None:  # R.Tensor(dtype=..., ndim=...): shape unknown
            return DynTensorSpec(str(ty.dtype), int(ty.ndim))
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
        if any(f is None for f in fields):
            return None
        return tuple(fields)  # type: ignore[arg-type]
    if isinstance(ty, relax.FuncType):
        params = [type_to_out(p) for p in ty.params]
        ret = type_to_out(ty.ret)
        if ret is None or any(p is None for p in params):
            return None
        return FuncSpec(tuple(params), ret)  # type: ignore[arg-type]
    return None


def spec_to_type(spec: OutSpec) -> Any:
    """The Relax type of a TensorSpec / tuple / FuncSpec."""
    if isinstance(spec, TensorSpec):
        return relax.TensorType(list(spec.shape), spec.dtype)
    if isinstance(spec, DynTensorSpec):
        return relax.TensorType(None, spec.dtype, ndim=spec.ndim)
    if isinstance(spec, FuncSpec):
        return relax.FuncType([spec_to_type(p) for p in spec.params], spec_to_type(spec.ret))
    return tvm.ir.TupleType([spec_to_type(f) for f in spec])


def call_order(graph: Graph) -> list[str]:
    """The global functions of `graph` in an order where every function comes after the
    functions it calls (raises GraphError on recursion, which the emitter does not support)."""
    order: list[str] = []
    state: dict[str, int] = {}

    def visit(name: str) -> None:
        if state.get(name) == 2:
            return
        if state.get(name) == 1:
            raise GraphError(f"recursive call of function {name!r}")
        state[name] = 1
        for _, n in graph.functions[name].all_nodes(name):
            if n.op == CALL:
                visit(n.attrs["func"])
        state[name] = 2
        order.append(name)

    for name in graph.functions:
        visit(name)
    return order


def is_inline(node: Node) -> bool:
    """Constants and inline tuples: written where they are used, never bound to a variable."""
    return node.op == CONST or (node.op == TUPLE and bool(node.attrs.get("inline")))


def _blocks(nodes: list[Node]) -> list[list[Node]]:
    """Maximal runs of bound nodes with the same dataflow flag (constants and inline tuples
    are written at their uses and belong to no block)."""
    runs: list[list[Node]] = []
    for n in nodes:
        if is_inline(n):
            continue
        df = n.dataflow and n.op != IF
        if runs and (runs[-1][0].dataflow and runs[-1][0].op != IF) == df:
            runs[-1].append(n)
        else:
            runs.append([n])
    return runs


def required_exports(g: Graph) -> set[str]:
    """The values of body `g` that must be plain Vars if bound in a dataflow block: used by a
    later block, inside a nested body, or as a result."""
    runs = _blocks(g.nodes)
    block_of = {n.name: k for k, run in enumerate(runs) for n in run}
    exported = set(g.outputs)
    for k, run in enumerate(runs):
        for n in run:
            for i in g.uses_of(n):
                if block_of.get(i, k) != k or (n.body and i in block_of):
                    exported.add(i)
    return exported


class _Emitter:
    def __init__(self, module: Graph, check_types: bool) -> None:
        self.module = module
        self.check_types = check_types
        self.bb = relax.BlockBuilder()
        self.gvars: dict[str, Any] = {}

    def build(self, func_name: str) -> tvm.ir.IRModule:
        for name, text in self.module.prim_funcs.items():
            self.gvars[name] = self.bb.add_func(parse_prim_func(text), name)
        for name in call_order(self.module):
            f = self.module.functions[name]
            self.gvars[name] = self.bb.add_func(self.function(f, {}, name), name)
        self.bb.add_func(self.function(self.module, {}, func_name), func_name)
        return self.bb.get()

    def function(self, g: Graph, outer: dict[str, Any], name: str | None) -> Any:
        """The relax.Function of body `g`; `name` is set for global functions (a public one gets
        its "global_symbol")."""
        params = [relax.Var(p, spec_to_type(spec)) for p, spec in g.inputs.items()]
        env = dict(outer)
        env.update(zip(g.inputs, params))
        self.bb.begin_scope(params)
        try:
            seq = self.seq(g, env)
        finally:
            self.bb.end_scope()
        ret_ty = None if g.ret_type is None else spec_to_type(g.ret_type)
        fn = relax.Function(params, seq, ret_ty, is_pure=True)
        attrs = dict(g.attrs)
        if name is not None and not g.private:
            attrs = {"global_symbol": name, **attrs}
        for k, v in attrs.items():
            fn = fn.with_attr(k, v)
        return fn

    def seq(self, g: Graph, env: dict[str, Any]) -> Any:
        """The normalized SeqExpr computing body `g` (its values added to `env`)."""
        blocks = []
        runs = _blocks(g.nodes)
        exported = required_exports(g) | {n.name for n in g.nodes if n.exported}
        for run in runs:
            dataflow = run[0].dataflow and run[0].op != IF
            (self.bb._begin_dataflow_block if dataflow else self.bb._begin_binding_block)()
            try:
                for node in run:
                    self._consts_before(g, node, env)
                    self.binding(node, env, dataflow and node.name not in exported)
            finally:
                block = self.bb._end_block()
            if len(block.bindings) > 0:
                blocks.append(block)
        self._consts_before(g, None, env)  # inline values used only as outputs
        rets = [env[o] for o in g.outputs]
        ret = rets[0] if len(rets) == 1 else relax.Tuple(rets)
        return self.bb.normalize(relax.SeqExpr(blocks, ret))

    @staticmethod
    def _consts_before(g: Graph, node: Node | None, env: dict[str, Any]) -> None:
        """Make the inline values (constants, inline tuples) defined before `node` available
        (written where they are used)."""
        for n in g.nodes:
            if n is node:
                return
            if n.name in env:
                continue
            if n.op == CONST:
                env[n.name] = const_expr(n)
            elif is_inline(n):
                env[n.name] = relax.Tuple([env[i] for i in n.inputs])

    def binding(self, node: Node, env: dict[str, Any], local: bool) -> None:
        """Emit `node` as one binding in the current block; `local` makes its var a
        DataflowVar."""
        args = [env[i] for i in node.inputs]
        if node.op == TUPLE:
            expr = relax.Tuple(args)
        elif node.op == GET_ITEM:
            expr = relax.TupleGetItem(args[0], int(node.attrs["index"]))
        elif node.op == CALL:
            expr = relax.Call(self.gvars[node.attrs["func"]], args)
        elif node.op == INVOKE:
            expr = relax.Call(args[0], args[1:])
        elif node.op == FUNCTION:
            expr = self.function(node.body[0], env, None)
        elif node.op == IF:
            expr = relax.If(args[0], self.seq(node.body[0], dict(env)),
                            self.seq(node.body[1], dict(env)))
        elif node.op == ALIAS:  # `name: out = value`, the declared type less precise
            var_cls = relax.DataflowVar if local else relax.Var
            var = var_cls(node.name, spec_to_type(node.out))
            self.bb.emit_normalized(relax.VarBinding(var, args[0]))
            env[node.name] = var
            return
        elif node.op == MATCH_CAST:
            var_cls = relax.DataflowVar if local else relax.Var
            var = var_cls(node.name, spec_to_type(node.out))
            self.bb.emit_normalized(relax.MatchCast(var, self.bb.normalize(args[0]),
                                                    spec_to_type(node.out)))
            env[node.name] = var
            return
        elif node.op == "relax.call_tir":
            out = node.out
            out_ty = spec_to_type(out) if isinstance(out, TensorSpec) else \
                [spec_to_type(t) for t in out]  # type: ignore[union-attr]
            expr = relax.call_tir(self.gvars[node.attrs["func"]], relax.Tuple(args), out_ty)
        else:
            expr = call_expr(node, args)
        value = self.bb.normalize(expr)
        var_cls = relax.DataflowVar if local else relax.Var
        var = var_cls(node.name, value.ty)
        self.bb.emit_normalized(relax.VarBinding(var, value))
        if self.check_types:
            got = type_to_out(var.ty)
            if got != node.out:
                raise GraphError(f"{node.name} = {node.op}: TVM infers {var.ty}, the "
                                 f"graph declares {node.out}")
        env[node.name] = var


def parse_prim_func(text: str) -> Any:
    """A PrimFunc from its TVMScript text (as `import_module` stores opaque PrimFuncs)."""
    from tvm.script import from_source

    return from_source(text)


def emit(graph: Graph, *, check_types: bool = True, func_name: str = "main") -> tvm.ir.IRModule:
    """The IRModule whose public function `func_name` computes `graph`, with the graph's other
    global functions and PrimFuncs.

    Raises GraphError if the graph is malformed or (with `check_types`) if TVM infers a type
    different from a node's declared `out`. TVM's own type errors propagate unchanged.
    """
    graph.validate()
    return _Emitter(graph, check_types).build(func_name)


# -- TVMScript text, without TVM's type inference ----------------------------------------------
def type_text(spec: OutSpec) -> str:
    """A type as TVMScript (``R.Tensor((2, 3), dtype="float32")``, ``R.Tuple(...)``,
    ``R.Callable(...)``)."""
    if isinstance(spec, TensorSpec):
        dims = ", ".join(str(d) for d in spec.shape) + ("," if spec.ndim == 1 else "")
        return f'R.Tensor(({dims}), dtype="{spec.dtype}")'
    if isinstance(spec, DynTensorSpec):
        nd = "" if spec.ndim < 0 else f", ndim={spec.ndim}"
        return f'R.Tensor(dtype="{spec.dtype}"{nd})'
    if isinstance(spec, FuncSpec):
        params = ", ".join(type_text(p) for p in spec.params) + \
            ("," if len(spec.params) == 1 else "")
        return f"R.Callable(({params}), {type_text(spec.ret)})"
    return "R.Tuple(" + ", ".join(type_text(f) for f in spec) + ")"


def _lit(value: Any) -> str:
    """A plain attribute value as a Python literal."""
    if isinstance(value, float) and not np.isfinite(value):
        return f'float("{value}")'
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_lit(v) for v in value) + "]"
    return repr(value)


class _Printer:
    """Prints a Graph as TVMScript text (see `to_script`)."""

    def __init__(self, module: Graph, annotate: bool) -> None:
        self.module = module
        self.annotate = annotate
        self.lines: list[str] = []

    def out(self, indent: int, text: str) -> None:
        self.lines.append("    " * indent + text)

    def const(self, node: Node) -> str:
        assert isinstance(node.out, TensorSpec)
        if node.out.ndim == 0:
            value = node.attrs["value"]
            if node.out.dtype == "bool":
                value = bool(value)
            return f'R.const({_lit(value)}, "{node.out.dtype}")'
        return f'R.const({_lit(node.attrs["value"])}, "{node.out.dtype}")'

    def expr(self, node: Node, env: dict[str, str]) -> str:
        a = [env.get(i, i) for i in node.inputs]
        if node.op == TUPLE:
            return "(" + ", ".join(a) + ("," if len(a) == 1 else "") + ")"
        if node.op == GET_ITEM:
            return f"{a[0]}[{int(node.attrs['index'])}]"
        if node.op == CALL:
            return f"cls.{node.attrs['func']}({', '.join(a)})"
        if node.op == INVOKE:
            return f"{a[0]}({', '.join(a[1:])})"
        if node.op == MATCH_CAST:
            return f"R.match_cast({a[0]}, {type_text(node.out)})"
        if node.op == ALIAS:
            return a[0]
        if node.op == "relax.call_tir":
            args = "(" + ", ".join(a) + ("," if len(a) == 1 else "") + ")"
            out = node.out
            ty = type_text(out) if isinstance(out, TensorSpec) else \
                "[" + ", ".join(type_text(t) for t in out) + "]"  # type: ignore[union-attr]
            return f"R.call_tir(cls.{node.attrs['func']}, {args}, out_ty={ty})"
        fn = "R." + node.op[len("relax."):]
        sig = SIGNATURES.get(node.op)
        if sig is None:
            extra = sorted((int(k[3:]), v) for k, v in node.attrs.items() if _is_extra_arg(k))
            pos = a + [_lit(v) for _, v in extra]
            kw = [f"{k}={_lit(v)}" for k, v in node.attrs.items() if not _is_extra_arg(k)]
        else:
            tensors = ["[" + ", ".join(a) + "]"] if sig.tensors is None else a
            pos = tensors + [_lit(node.attrs[k]) for k in sig.args if k in node.attrs]
            kw = [f"{k}={_lit(node.attrs[k])}" for k in sig.attrs if k in node.attrs]
            kw += [f"{k}={_lit(v)}" for k, v in node.attrs.items()
                   if k not in sig.args and k not in sig.attrs]
        return f"{fn}({', '.join(pos + kw)})"

    def lhs(self, node: Node) -> str:
        if node.op == ALIAS or (self.annotate and node.op not in (FUNCTION, IF, MATCH_CAST)):
            return f"{node.name}: {type_text(node.out)}"
        return node.name

    def body(self, g: Graph, env: dict[str, str], indent: int) -> str:
        """Print the bindings of `g`; returns the result expression."""
        env = dict(env)
        runs = _blocks(g.nodes)
        exported = required_exports(g) | {n.name for n in g.nodes if n.exported}
        pending = list(g.nodes)

        def inline_until(stop: Node | None) -> None:
            nonlocal pending
            k = len(pending) if stop is None else pending.index(stop)
            for m in pending[:k]:
                if m.op == CONST:
                    env[m.name] = self.const(m)
                elif is_inline(m):
                    env[m.name] = self.expr(m, env)
            pending = pending[k:]

        for run in runs:
            inline_until(run[0])
            dataflow = run[0].dataflow and run[0].op != IF
            ind = indent
            if dataflow:
                self.out(indent, "with R.dataflow():")
                ind = indent + 1
            for n in run:
                inline_until(n)
                pending = pending[1:]
                self.binding(n, env, ind)
            if dataflow:
                outs = [n.name for n in run if n.name in exported]
                self.out(ind, f"R.output({', '.join(outs)})")
        inline_until(None)
        rets = [env.get(o, o) for o in g.outputs]
        return rets[0] if len(rets) == 1 else "(" + ", ".join(rets) + ")"

    def binding(self, n: Node, env: dict[str, str], indent: int) -> None:
        if n.op == FUNCTION:
            self.function(n.body[0], n.name, env, indent, nested=True)
            return
        if n.op == IF:
            self.out(indent, f"if {env.get(n.inputs[0], n.inputs[0])}:")
            r = self.body(n.body[0], env, indent + 1)
            self.out(indent + 1, f"{self.lhs(n)} = {r}")
            self.out(indent, "else:")
            r = self.body(n.body[1], env, indent + 1)
            self.out(indent + 1, f"{self.lhs(n)} = {r}")
            return
        self.out(indent, f"{self.lhs(n)} = {self.expr(n, env)}")

    def function(self, g: Graph, name: str, env: dict[str, str], indent: int,
                 nested: bool = False) -> None:
        deco = "@R.function(private=True)" if (g.private and not nested) else "@R.function"
        self.out(indent, deco)
        params = ", ".join(f"{p}: {type_text(s)}" for p, s in g.inputs.items())
        ret = "" if g.ret_type is None else f" -> {type_text(g.ret_type)}"
        self.out(indent, f"def {name}({params}){ret}:")
        if g.attrs:
            self.out(indent + 1, "R.func_attr({" + ", ".join(
                f"{_lit(k)}: {_lit(v)}" for k, v in g.attrs.items()) + "})")
        if not nested:
            self.out(indent + 1, "cls = Module")
        r = self.body(g, env, indent + 1)
        self.out(indent + 1, f"return {r}")

    def module_text(self, func_name: str) -> str:
        self.out(0, "# from tvm.script import ir as I")
        self.out(0, "# from tvm.script import tir as T")
        self.out(0, "# from tvm.script import relax as R")
        self.out(0, "")
        self.out(0, "@I.ir_module")
        self.out(0, "class Module:")
        for name, text in self.module.prim_funcs.items():
            for line in text.splitlines():
                if line.startswith("# from"):
                    continue
                self.out(1, line)
            self.out(0, "")
        for name, f in self.module.functions.items():
            self.function(f, name, {}, 1)
            self.out(0, "")
        self.function(self.module, func_name, {}, 1)
        return "\n".join(self.lines) + "\n"


def to_script(graph: Graph, *, annotate: bool = True, func_name: str = "main") -> str:
    """The module of `graph` as TVMScript text, written without asking TVM anything, so it also
    exists for ill-typed graphs (HIRGen's disruptive mode). With `annotate`, every binding
    carries the node's declared type (TVM's parser then checks it); without, TVM infers all
    types when it parses the text. Parse with `parse_script`."""
    graph.validate()
    return _Printer(graph, annotate).module_text(func_name)


def parse_script(text: str) -> tvm.ir.IRModule:
    """Parse TVMScript text (as `to_script` writes it) into an IRModule; TVM normalizes and
    type-checks it, raising on ill-typed input."""
    from tvm.script import from_source

    return from_source(text)
