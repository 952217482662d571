"""Encode a Relax function of a `Program` into SMT values, binding by binding.

Calls of Relax functions (by GlobalVar, or of local closures) are inlined. `call_tir` is an
uninterpreted function of its (bounded) input arrays, keyed by the PrimFunc's structural
hash, so two structurally equal PrimFuncs are the same function whatever their names.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import z3

from tvtv.absfp.dtypes import check_supported
from tvtv.encode import registry
from tvtv.encode.context import EncodeContext
from tvtv.encode.tensor import INDEX, Tensor, idx
from tvtv.encode.values import Closure, PrimScalar, Shape, Value, as_tensor
from tvtv.errors import Unsupported
from tvtv.ir import program as P
from tvtv.ir.relax_reader import UNSUPPORTED_ATTR

MAX_INLINE_DEPTH = 32


class FunctionEncoder:
    def __init__(self, program: P.Program, ctx: EncodeContext) -> None:
        self.program = program
        self.ctx = ctx
        self.depth = 0

    # -- functions ---------------------------------------------------------------------------
    def call(self, fn: P.Function, args: Sequence[Value], env: dict | None = None) -> Value:
        if UNSUPPORTED_ATTR in fn.attrs:
            raise Unsupported(f"function {fn.name}: {fn.attrs[UNSUPPORTED_ATTR]}")
        if len(args) != len(fn.params):
            raise Unsupported(f"call of {fn.name} with {len(args)} arguments, expected {len(fn.params)}")
        self.depth += 1
        if self.depth > MAX_INLINE_DEPTH:
            raise Unsupported(f"calls nested deeper than {MAX_INLINE_DEPTH} (recursion?) in {fn.name}")
        try:
            scope = dict(env or {})
            for p, a in zip(fn.params, args):
                scope[p.vid] = a
            return self.body(fn.body, scope)
        finally:
            self.depth -= 1

    def body(self, body: P.Body, env: dict) -> Value:
        for b in body.bindings:
            value = self.expr(b.value, env)
            if b.match_cast is not None:
                value = self.match_cast(value, b.match_cast, b.name)
            env[b.vid] = value
        return self.expr(body.result, env)

    def match_cast(self, value: Value, ty: P.Type, name: str) -> Value:
        if isinstance(ty, P.TensorType):
            t = as_tensor(value, f"match_cast {name}")
            if t.shape != ty.shape or t.dtype != ty.dtype:
                # A failing match_cast is a runtime error: the program is undefined from here.
                self.ctx.add_ub(z3.BoolVal(True), f"match_cast {name} fails: {t.shape} {t.dtype} vs {ty}")
            return t
        if isinstance(ty, P.TupleType) and isinstance(value, tuple):
            return tuple(self.match_cast(v, t, name) for v, t in zip(value, ty.fields))
        raise Unsupported(f"match_cast to {ty}")

    # -- expressions -----------------------------------------------------------------------------
    def expr(self, e: P.Expr, env: dict) -> Value:
        if isinstance(e, P.VarRef):
            if e.vid not in env:
                raise Unsupported(f"unbound variable {e.vid}")
            return env[e.vid]
        if isinstance(e, P.Const):
            check_supported(e.dtype, "a constant")
            return Tensor.from_numpy(e.value, e.dtype, self.ctx.dom(e.dtype))
        if isinstance(e, P.PrimValue):
            if e.dtype in ("string", "dtype"):
                return PrimScalar(z3.BoolVal(True), e.dtype, e.value)
            check_supported(e.dtype, "a scalar argument")
            return PrimScalar(self.ctx.dom(e.dtype).const(e.value), e.dtype, e.value)
        if isinstance(e, P.ShapeValue):
            return Shape(e.values)
        if isinstance(e, P.TupleExpr):
            return tuple(self.expr(f, env) for f in e.fields)
        if isinstance(e, P.GetItem):
            t = self.expr(e.tuple_value, env)
            if not isinstance(t, tuple):
                raise Unsupported("TupleGetItem of a non-tuple")
            return t[e.index]
        if isinstance(e, P.OpCall):
            args = [self.expr(a, env) for a in e.args]
            return registry.lookup(e.op)(self.ctx, e, args)
        if isinstance(e, P.FuncCall):
            fn = self.program.functions.get(e.func)
            if fn is None:
                raise Unsupported(f"call of unknown function {e.func}")
            return self.call(fn, [self.expr(a, env) for a in e.args])
        if isinstance(e, P.LocalCall):
            callee = self.expr(e.callee, env)
            args = [self.expr(a, env) for a in e.args]
            if isinstance(callee, Closure):
                return self.call(callee.function, args, callee.env)
            raise Unsupported("call of a non-function value")
        if isinstance(e, P.FuncExpr):
            return Closure(e.func, env)
        if isinstance(e, P.GlobalRef):
            fn = self.program.functions.get(e.name)
            if fn is None:
                raise Unsupported(f"reference to {e.name}")
            return Closure(fn, {})
        if isinstance(e, P.CallTIR):
            return self.call_tir(e, [self.expr(a, env) for a in e.args])
        if isinstance(e, P.IfExpr):
            return self.if_expr(e, env)
        raise Unsupported(f"expression {type(e).__name__}")

    def if_expr(self, e: P.IfExpr, env: dict) -> Value:
        c = as_tensor(self.expr(e.cond, env), "If condition")
        cond = self.ctx.dom(c.dtype).truthy(c.at(0))
        self.ctx.path.append(cond)
        try:
            then_v = self.body(e.then_body, dict(env))
        finally:
            self.ctx.path.pop()
        self.ctx.path.append(z3.Not(cond))
        try:
            else_v = self.body(e.else_body, dict(env))
        finally:
            self.ctx.path.pop()
        return merge(cond, then_v, else_v)

    def call_tir(self, e: P.CallTIR, args: list[Value]) -> Value:
        """An opaque PrimFunc: output field k is UF_{hash,k}(bounded inputs..., index)."""
        self.ctx.notes.add("call_tir opaque")
        tensors = [as_tensor(a, f"argument of call_tir {e.prim}") for a in args]
        bounded = [t.materialized(self.ctx.dom(t.dtype).zero()) for t in tensors]
        out_types = e.ty.fields if isinstance(e.ty, P.TupleType) else (e.ty,)
        outs = []
        for k, ty in enumerate(out_types):
            if not isinstance(ty, P.TensorType):
                raise Unsupported(f"call_tir {e.prim} with output type {ty}")
            check_supported(ty.dtype, f"call_tir {e.prim}")
            sort = self.ctx.dom(ty.dtype).sort
            f = self.ctx.uf(f"tir_{e.prim_hash:x}_{k}", *[b.sort() for b in bounded], INDEX, sort)
            outs.append(Tensor.from_flat(ty.shape, ty.dtype, lambda i, f=f: f(*bounded, i)))
        return tuple(outs) if isinstance(e.ty, P.TupleType) else outs[0]


def merge(cond: z3.BoolRef, a: Value, b: Value) -> Value:
    """`cond ? a : b` for values of the same structure."""
    if isinstance(a, tuple) and isinstance(b, tuple) and len(a) == len(b):
        return tuple(merge(cond, x, y) for x, y in zip(a, b))
    ta, tb = as_tensor(a, "If branch"), as_tensor(b, "If branch")
    if ta.shape != tb.shape or ta.dtype != tb.dtype:
        raise Unsupported("If branches of different types")
    return Tensor(ta.shape, ta.dtype, z3.If(cond, ta.arr, tb.arr))


def input_value(name: str, ty: P.Type, ctx: EncodeContext) -> Value:
    """A fresh symbolic value of type `ty` for a function parameter."""
    if isinstance(ty, P.TensorType):
        check_supported(ty.dtype, f"parameter {name}")
        return Tensor.variable(name, ty.shape, ty.dtype, ctx.dom(ty.dtype))
    if isinstance(ty, P.TupleType):
        return tuple(input_value(f"{name}.{k}", f, ctx) for k, f in enumerate(ty.fields))
    raise Unsupported(f"parameter {name} of type {ty}")


def concrete_value(value: np.ndarray | tuple, ty: P.Type, ctx: EncodeContext) -> Value:
    """A constant value for a parameter (used to evaluate on given inputs)."""
    if isinstance(ty, P.TupleType):
        return tuple(concrete_value(v, t, ctx) for v, t in zip(value, ty.fields))
    assert isinstance(ty, P.TensorType)
    return Tensor.from_numpy(np.asarray(value).reshape(ty.shape), ty.dtype, ctx.dom(ty.dtype))
