"""Read a TVM 0.27 s_tir PrimFunc into tvtv's TIR picture (`tvtv/ir/tir.py`).

Names follow apache-tvm 0.27: buffers are `tvm.ir.Var`s whose `.ty` is a `BufferType`,
loads are `tvm.ir.TensorLoad` (`.source`, `.indices`), blocks are `tvm.s_tir.SBlockRealize`
/ `SBlock`, prim expressions live in `tvm.ir.prim.expr` and are dispatched on by class name.
Whatever is not in that vocabulary raises `Unsupported` naming the construct and the
PrimFunc (and block) where it occurs.
"""
from __future__ import annotations

import itertools
from typing import Any, Callable

import tvm

from tvtv.errors import Unsupported
from tvtv.ir import tir as T

_BINARY = {"Add": "add", "Sub": "sub", "Mul": "mul", "Div": "div", "Mod": "mod",
           "FloorDiv": "floordiv", "FloorMod": "floormod", "Min": "min", "Max": "max"}
_COMPARE = {"EQ": "eq", "NE": "ne", "LT": "lt", "LE": "le", "GT": "gt", "GE": "ge"}


# AttrStmt keys that only advise code generation, so the statement means its body:
# "pragma_scope" (the IR-builder TIR LegalizeOps emits for scatter_elements and scatter_nd,
# `T.attr({"pragma_scope": "seq"})` around their loops) asks for sequential execution.
NEUTRAL_ATTRS = frozenset({"pragma_scope"})
# the sort kernels read as `T.ExternSort`: name -> does it write values (else positions)
EXTERN_SORTS = {"tvm.contrib.sort.argsort": False, "tvm.contrib.sort.sort": True}
# the top-k kernel, read as `T.ExternTopK`; ret_type -> which outputs it passes
EXTERN_TOPK = "tvm.contrib.sort.topk"
TOPK_OUTPUTS = {"both": ("values", "indices"), "values": ("values",), "indices": ("indices",)}


def _int(e: Any, what: str) -> int:
    if type(e).__name__ != "IntImm":
        raise Unsupported(f"symbolic {what} {e}")
    return int(e.value)


class _TIRReader:
    def __init__(self, name: str) -> None:
        self.func = name
        self.where = name
        self.ids: dict[Any, str] = {}
        self.buffers: dict[Any, T.Buffer] = {}
        self.analyzer = tvm.sym.Analyzer()   # no bindings: only context-free rewrites
        self.counter = itertools.count()

    def fail(self, what: str) -> Unsupported:
        return Unsupported(f"TIR {what} in PrimFunc {self.where}")

    # -- names -------------------------------------------------------------------------------
    def var(self, v: Any) -> T.Var:
        if v not in self.ids:
            self.ids[v] = f"{v.name}%{next(self.counter)}"
        return T.Var(self.ids[v], str(v.ty))

    def buffer(self, v: Any) -> T.Buffer:
        if v in self.buffers:
            return self.buffers[v]
        ty = v.ty
        if type(ty).__name__ != "BufferType":
            raise self.fail(f"parameter {v.name} of type {ty}")
        if len(getattr(ty, "strides", ()) or ()) or (
                ty.elem_offset is not None and type(ty.elem_offset).__name__ == "IntImm"
                and int(ty.elem_offset.value) != 0):
            raise self.fail(f"strided or offset buffer {v.name}")
        shape = tuple(_int(d, f"shape of buffer {v.name}") for d in ty.shape)
        buf = T.Buffer(f"{v.name}%{next(self.counter)}", shape, str(ty.dtype))
        self.buffers[v] = buf
        return buf

    def known_buffer(self, v: Any) -> str:
        if v not in self.buffers:
            raise self.fail(f"access to undeclared buffer {getattr(v, 'name', v)}")
        return self.buffers[v].id

    # -- expressions ---------------------------------------------------------------------------
    def expr(self, e: Any) -> T.Expr:
        kind = type(e).__name__
        reader = _EXPR_READERS.get(kind)
        if reader is None:
            raise self.fail(f"expression {kind} ({e})")
        return reader(self, e)

    def exprs(self, es: Any) -> tuple[T.Expr, ...]:
        return tuple(self.expr(x) for x in es)

    # -- statements ----------------------------------------------------------------------------
    def stmt(self, s: Any) -> T.Stmt:
        kind = type(s).__name__
        if kind == "For":
            if int(s.kind) != 0 and int(s.kind) not in (1, 2, 3):   # serial/parallel/vectorized/unrolled
                raise self.fail(f"loop kind {s.kind}")
            if s.thread_binding is not None:
                raise self.fail("thread-bound loop")
            if getattr(s, "step", None) is not None and _int(s.step, "loop step") != 1:
                raise self.fail(f"loop step {s.step}")
            return T.For(self.var(s.loop_var), self.expr(s.min), self.expr(s.extent), self.stmt(s.body))
        if kind == "SeqStmt":
            return T.Seq(tuple(self.stmt(x) for x in s.seq))
        if kind == "SBlockRealize":
            return self.block(s)
        if kind == "BufferStore":
            buf = self.known_buffer(s.buffer)
            value = s.value
            if self.buffers[s.buffer].dtype.startswith(("float", "bfloat")):
                value = as_compiled(value, self.analyzer)
            return T.Store(buf, self.exprs(s.indices), self.expr(value))
        if kind == "IfThenElse":
            return T.IfStmt(self.expr(s.condition), self.stmt(s.then_case),
                            None if s.else_case is None else self.stmt(s.else_case))
        if kind == "Bind":
            value = self.expr(s.value)
            return T.Let(self.var(s.var), value)
        if kind == "AllocBuffer":
            # flat in TVM 0.27 (the buffer lives for the rest of the enclosing SeqStmt); a
            # variant with a body scopes that body
            alloc = T.Alloc(self.buffer(s.buffer))
            body = getattr(s, "body", None)
            return alloc if body is None else T.Seq((alloc, self.stmt(body)))
        if kind == "While":
            return T.While(self.expr(s.condition), self.stmt(s.body))
        if kind == "AttrStmt" and str(s.attr_key) in NEUTRAL_ATTRS:
            return self.stmt(s.body)
        if kind == "Evaluate":
            if type(s.value).__name__ in ("IntImm",):
                return T.Nop()
            op = getattr(getattr(s.value, "op", None), "name", "")
            if op.endswith("call_packed") and s.value.args and \
                    type(s.value.args[0]).__name__ == "StringImm":
                # topi's extern kernels (tvm.contrib.sort.*): compiled C++, not TIR; the ones
                # LegalizeOps (median's argsort) and DispatchSortScan (sort) emit have their
                # own statement
                if s.value.args[0].value in EXTERN_SORTS:
                    return self.extern_sort(s.value.args)
                if s.value.args[0].value == EXTERN_TOPK:
                    return self.extern_topk(s.value.args)
                raise self.fail(f"call_packed of the external function {s.value.args[0].value}")
            text = str(s.value)
            raise self.fail(f"statement T.evaluate({text[:160]}{'...' if len(text) > 160 else ''})")
        raise self.fail(f"statement {kind}")

    def packed_array(self, arg: Any) -> T.Buffer:
        """The buffer behind `T.tvm_stack_make_array(buf.data, shape, strides, ndim, dtype,
        offset)`: a whole, dense buffer of a declared shape, or `Unsupported`."""
        if getattr(getattr(arg, "op", None), "name", "") != "tirx.tvm_stack_make_array" \
                or len(arg.args) != 6:
            raise self.fail(f"packed-call argument {arg}")
        data, shape, strides, ndim, _, offset = arg.args
        if getattr(getattr(data, "op", None), "name", "") != "tirx.buffer_data" \
                or data.args[0] not in self.buffers:
            raise self.fail(f"packed-call array of {data}")
        buf = self.buffers[data.args[0]]
        dims = tuple(_int(d, "packed-call array shape") for d in shape.args)
        if dims != buf.shape or _int(ndim, "packed-call array rank") != len(buf.shape) \
                or _int(strides, "packed-call array strides") != 0 \
                or _int(offset, "packed-call array offset") != 0:
            raise self.fail(f"packed-call array of {buf.name} that is not the whole buffer")
        return buf

    def kernel_axis(self, arg: Any, data: T.Buffer, name: str) -> int:
        """A sort kernel's axis argument as a dimension of `data` (negative: from the end, as
        sort.cc counts it)."""
        axis = _int(arg, f"{name} axis")
        axis = axis + len(data.shape) if axis < 0 else axis
        if not 0 <= axis < len(data.shape):
            raise self.fail(f"{name} along axis {axis}")
        return axis

    def extern_sort(self, args: Any) -> T.ExternSort:
        """`tvm.contrib.sort.argsort` or `tvm.contrib.sort.sort`, `(data, out, axis,
        is_ascend)` (src/runtime/contrib/sort/sort.cc: std::stable_sort of each row with `<`,
        or `>` when descending)."""
        name = args[0].value
        if len(args) != 5:
            raise self.fail(f"{name} with {len(args) - 1} arguments")
        data, out = self.packed_array(args[1]), self.packed_array(args[2])
        if data.shape != out.shape:
            raise self.fail(f"{name} into a buffer of another shape")
        axis = self.kernel_axis(args[3], data, name)
        return T.ExternSort(data.id, out.id, axis, bool(_int(args[4], f"{name} direction")),
                            values=EXTERN_SORTS[name])

    def extern_topk(self, args: Any) -> T.ExternTopK:
        """`tvm.contrib.sort.topk`, `(data, outputs.., k, axis, ret_type, is_ascend)`: the
        outputs are (values, indices), (values,) or (indices,) as `ret_type` says
        (src/runtime/contrib/sort/sort.cc)."""
        if len(args) < 6:
            raise self.fail(f"{EXTERN_TOPK} with {len(args) - 1} arguments")
        ret = args[-2]
        if type(ret).__name__ != "StringImm" or ret.value not in TOPK_OUTPUTS:
            raise self.fail(f"{EXTERN_TOPK} with ret_type {ret}")
        names = TOPK_OUTPUTS[ret.value]
        if len(args) != 6 + len(names):
            raise self.fail(f"{EXTERN_TOPK} ({ret.value}) with {len(args) - 1} arguments")
        data = self.packed_array(args[1])
        outs = dict(zip(names, (self.packed_array(a) for a in args[2:2 + len(names)])))
        axis = self.kernel_axis(args[-3], data, EXTERN_TOPK)
        for out in outs.values():
            if len(out.shape) != len(data.shape) or any(
                    a != b for d, (a, b) in enumerate(zip(out.shape, data.shape)) if d != axis):
                raise self.fail(f"{EXTERN_TOPK} into {out.name} of shape {out.shape} "
                                f"from data of shape {data.shape}")
        values, indices = outs.get("values"), outs.get("indices")
        return T.ExternTopK(data.id, values.id if values else None,
                            indices.id if indices else None, _int(args[-4], f"{EXTERN_TOPK} k"),
                            axis, bool(_int(args[-1], f"{EXTERN_TOPK} direction")))

    def block(self, realize: Any) -> T.Block:
        b = realize.block
        outer = self.where
        self.where = f"{self.func}, block {b.name_hint!r}"
        try:
            if len(b.match_buffers):
                raise self.fail("match_buffer")
            alloc = tuple(self.buffer(v) for v in b.alloc_buffers)
            ivs = []
            for iv in b.iter_vars:
                kind = {0: "S", 2: "R"}.get(int(iv.iter_type))
                if kind is None:
                    raise self.fail(f"iter var {iv.var.name} of type {iv.iter_type}")
                ivs.append(T.IterVar(self.var(iv.var), self.expr(iv.dom.min),
                                     self.expr(iv.dom.extent), kind))
            init = None if b.init is None else self.stmt(b.init)
            return T.Block(b.name_hint, tuple(ivs), self.exprs(realize.iter_values),
                           self.expr(realize.predicate), init, self.stmt(b.body), alloc)
        finally:
            self.where = outer


def _binary(r: _TIRReader, e: Any) -> T.Expr:
    return T.Binary(_BINARY[type(e).__name__], r.expr(e.a), r.expr(e.b), str(e.ty))


def _compare(r: _TIRReader, e: Any) -> T.Expr:
    return T.Compare(_COMPARE[type(e).__name__], r.expr(e.a), r.expr(e.b))


def _call(r: _TIRReader, e: Any) -> T.Expr:
    op = e.op
    if not isinstance(op, tvm.ir.Op):
        raise r.fail(f"call of {op}")
    name = op.name
    if name == "prim.if_then_else" or name == "tirx.if_then_else":
        c, t, f = r.exprs(e.args)
        return T.IfThenElse(c, t, f, str(e.ty))
    # TVM 0.27 registers a few intrinsics under `prim.` (`T.ceil` is `prim.ceil`, also
    # prim.log2, prim.likely, prim.clz): the same names as their `tirx.` kin, read alike
    for prefix in ("tirx.", "prim."):
        if name.startswith(prefix):
            return T.Call(name[len(prefix):], r.exprs(e.args), str(e.ty))
    raise r.fail(f"intrinsic {name}")


def _var(r: _TIRReader, e: Any) -> T.Expr:
    if e not in r.ids:
        raise r.fail(f"free variable {e.name}")
    return r.var(e)


# integer bit operations, read as calls of the `tirx.` intrinsics of the same meaning
_BIT_OPS = {"LShift": "shift_left", "RShift": "shift_right", "BitwiseAnd": "bitwise_and",
            "BitwiseOr": "bitwise_or", "BitwiseXor": "bitwise_xor"}


def _bit_op(r: _TIRReader, e: Any) -> T.Expr:
    return T.Call(_BIT_OPS[type(e).__name__], (r.expr(e.a), r.expr(e.b)), str(e.ty))


_EXPR_READERS: dict[str, Callable[[_TIRReader, Any], T.Expr]] = {
    **{k: _bit_op for k in _BIT_OPS},
    "BitwiseNot": lambda r, e: T.Call("bitwise_not", (r.expr(e.a),), str(e.ty)),
    **{k: _binary for k in _BINARY},
    **{k: _compare for k in _COMPARE},
    "And": lambda r, e: T.Logic("and", (r.expr(e.a), r.expr(e.b))),
    "Or": lambda r, e: T.Logic("or", (r.expr(e.a), r.expr(e.b))),
    "Not": lambda r, e: T.Logic("not", (r.expr(e.a),)),
    "Select": lambda r, e: T.Select(r.expr(e.condition), r.expr(e.true_value),
                                    r.expr(e.false_value), str(e.ty)),
    "Cast": lambda r, e: T.Cast(str(e.ty), r.expr(e.value)),
    "IntImm": lambda r, e: T.IntImm(int(e.value), str(e.ty)),
    "FloatImm": lambda r, e: T.FloatImm(float(e.value), str(e.ty)),
    "Var": _var,
    "TensorLoad": lambda r, e: T.Load(r.known_buffer(e.source), r.exprs(e.indices),
                                      str(r.buffers[e.source].dtype) if e.source in r.buffers
                                      else str(e.ty)),
    "Call": _call,
}


def as_compiled(value: Any, analyzer: Any) -> Any:
    """A float expression as TVM's CPU code computes it: after TVM's arithmetic simplifier
    (`tvm.sym.Analyzer.simplify`, what relax.build's `StmtSimplify` applies before code
    generation). It rewrites floats as if they were real numbers (measured on the VM,
    tests/test_tir_simplify.py): `a - a` and `a * 0` become 0, `a + 0` becomes `a` (so
    -0.0 + 0 stays -0.0), `(a + c) - c` becomes `a`, `a == a` true, even where a is NaN or
    infinite. Two buffers are two names: `p0[i] - p1[i]` called with one tensor twice is not
    rewritten. Only stored float values are simplified here (the float rewrites need no
    context, so `analyzer` has no loop bounds bound); the indices of the loads inside such a
    value are simplified with it (integer rewrites, exact), the store's own indices and
    other statements are read as written."""
    return analyzer.simplify(value)


def read_prim_func(name: str, f: Any) -> T.PrimFunc:
    """The PrimFunc `f` (global name `name`) in tvtv's TIR picture, or `Unsupported`; stored
    float values as TVM's simplifier leaves them (`as_compiled`)."""
    r = _TIRReader(name)
    params = []
    for p in f.params:
        if type(p.ty).__name__ != "BufferType":
            raise r.fail(f"scalar parameter {p.name}")
        params.append(r.buffer(p))
    return T.PrimFunc(name, tuple(params), r.stmt(f.body))
