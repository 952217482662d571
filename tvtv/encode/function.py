"""Encode a Relax function of a `Program` into SMT values, binding by binding.

Calls of Relax functions (by GlobalVar, or of local closures) are inlined. `call_tir` is
encoded at the abstraction level's choice (mlir-tv's abstraction refinement, §6.3):
- `tir="opaque"`: an uninterpreted function of its (bounded) input arrays, keyed by the
  PrimFunc's structural hash, so two structurally equal PrimFuncs are the same function
  whatever their names (proves FuseOps-style regrouping without looking inside);
- `tir="body"`: the PrimFunc's body (`tvtv/encode/tir/`), as lambda and reduction terms;
- `tir="common"`: opaque for the PrimFuncs both sides call, bodies for the others
  (`abstraction.opaque_here`).
At every level, a `call_tir` that an operator lemma covers (`tvtv.lemmas`: the PrimFunc was
proved equal to a Relax operator on inputs of these types) is encoded as that operator.
"""
from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Iterator, Sequence

import numpy as np
import z3

from tvtv import z3fast as zf
from tvtv.absfp.dtypes import check_supported
from tvtv.encode import memory, registry
from tvtv.encode.abstraction import (OPAQUE_NOTE, Abstraction, current_level, opaque_here,
                                     opaque_uf_name)
from tvtv.encode.context import EncodeContext
from tvtv.encode.tensor import INDEX, Tensor
from tvtv.encode.tir import encode_prim_func
from tvtv.encode.values import Closure, PrimScalar, Shape, Value, as_tensor, flatten
from tvtv.errors import Unsupported
from tvtv.ir import program as P
from tvtv.ir.nodes import walk
from tvtv.ir.relax_reader import UNSUPPORTED_ATTR

MAX_INLINE_DEPTH = 32
def _materialized(value: Value, materialize: Any) -> Value:
    """`value` with its tensors passed through `materialize` (`EncodeContext.materialize`)."""
    if isinstance(value, tuple):
        return tuple(_materialized(v, materialize) for v in value)
    return materialize(value) if isinstance(value, Tensor) else value


def opaque_can_prove(src: P.Program, tgt: P.Program) -> bool:
    """Opaque call_tir can only prove a target whose PrimFuncs all occur in the source
    (LegalizeOps, FuseTIR, FastMathTransform create new ones: start with bodies there)."""
    have = {p.structural_hash for p in src.prim_funcs.values()}
    return all(p.structural_hash in have for p in tgt.prim_funcs.values())


def called_prim_funcs(program: P.Program) -> frozenset[int]:
    """The structural hashes of the PrimFuncs some function of `program` calls (`call_tir`
    or a destination-passing call): a pass may leave a PrimFunc it no longer calls in the
    module (RewriteDataflowReshape keeps the legalized reshape it replaced)."""
    return frozenset(n.prim_hash for fn in program.functions.values() for n in walk(fn)
                     if isinstance(n, (P.CallTIR, P.PrimCall)))


LEMMA_NOTE = "call_tir by operator lemma"
# prefix of the note naming a call_tir encoded by its PrimFunc body although lemmas were given
BODY_NOTE = "call_tir by PrimFunc body (no operator lemma matches): "


def note_lines(notes: set[str]) -> list[str]:
    """The encoding's notes as report lines, sorted: the per-PrimFunc `BODY_NOTE`s become one
    line naming them all (a generated graph has a dozen; the ladder repeats them per rung)."""
    bodies = sorted(n[len(BODY_NOTE):] for n in notes if n.startswith(BODY_NOTE))
    lines = sorted(n for n in notes if not n.startswith(BODY_NOTE))
    if bodies:
        lines.append(BODY_NOTE + ", ".join(bodies))
    return sorted(lines)


def body_noted(levels: list[str]) -> set[str]:
    """The PrimFuncs a result's levels name as encoded by their bodies (`note_lines`)."""
    return {p for lv in levels if lv.startswith(BODY_NOTE)
            for p in lv[len(BODY_NOTE):].split(", ")}
_LEMMAS: ContextVar[Any] = ContextVar("tvtv_operator_lemmas", default=None)


@contextmanager
def operator_lemmas(lemmas: Any) -> Iterator[None]:
    """Encode covered `call_tir`s by their operator inside the block (a `tvtv.lemmas.LemmaSet`,
    or None for none)."""
    token = _LEMMAS.set(lemmas)
    try:
        yield
    finally:
        _LEMMAS.reset(token)


class FunctionEncoder:
    def __init__(self, program: P.Program, ctx: EncodeContext,
                 abstraction: Abstraction | None = None) -> None:
        self.program = program
        self.ctx = ctx
        self.depth = 0
        self._in_live = False      # encoding a live binding's value (`body`)
        # with live values kept: the checked function's bindings each binding is computed
        # from (itself included), and the one being encoded (`body`, `output_cones`)
        self._cone: dict[str, frozenset[str]] = {}
        self._binding: str | None = None
        self.abstraction = abstraction or current_level()
        # the Relax If branches being encoded, innermost last (`branch`)
        self.branches: list[memory.BranchScope] = []
        ctx.abstraction = self.abstraction   # read by reductions and the TIR encoder

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
            value = self.body(fn.body, scope)
            if self.depth == 1 and self.ctx.live_values is not None:
                self.ctx.output_cones = self.output_cones(fn.body.result, value)
            return value
        finally:
            self.depth -= 1

    def output_cones(self, result: P.Expr, value: Value) -> list[frozenset[str]]:
        """Per flattened output of the checked function, the bindings it is computed from
        (through the forms `_uses` follows: a binding it misses only drops premises)."""
        if isinstance(result, P.TupleExpr) and isinstance(value, tuple) \
                and len(value) == len(result.fields):
            return [c for f, v in zip(result.fields, value) for c in self.output_cones(f, v)]
        cone = frozenset().union(*[self._cone.get(u, frozenset()) for u in _uses(result)])
        return [cone] * len(flatten(value))

    def body(self, body: P.Body, env: dict, refs: bool = False) -> Value:
        """The value of `body` (with `refs`, what its result refers to: `ref`)."""
        # operator calls a conditional lemma may rely on: those of the checked function's own
        # body (not in a branch or a callee), whose results the outputs are computed from
        lemmas = _LEMMAS.get()
        # live values are kept at the checked function's level and, through its live
        # bindings, inside the functions they call (FuseOps' groups): under per-operation a
        # NaN there makes the run poison as much as one in the checked function's own binding
        keep = self.ctx.live_values is not None and (self.depth == 1 or self._in_live)
        record = self.depth == 1 and lemmas is not None and lemmas.conditional \
            and self.ctx.side == "src"
        live = live_bindings(body) if keep or record else set()
        for b in body.bindings:
            outer, self._in_live = self._in_live, keep and b.vid in live and not self.ctx.path
            if keep and self.depth == 1:
                self._binding = b.vid
                self._cone[b.vid] = frozenset({b.vid}).union(
                    *[self._cone.get(u, frozenset()) for u in _uses(b.value)])
            try:
                # an alias (`a = alloc`, `s = (alloc1, alloc2)`) keeps the objects it names
                value = self.ref(b.value, env) if isinstance(b.value, _ALIASES) \
                    else self.expr(b.value, env)
            finally:
                self._in_live = outer
            if b.match_cast is not None:
                value = self.match_cast(memory.read(value), b.match_cast, b.name)
            if self.ctx.materialize is not None:
                value = _materialized(value, self.ctx.materialize)
            env[b.vid] = value
            if b.vid in live and not self.ctx.path:
                if keep:
                    kept = self.ctx.live_values if self.depth == 1 else self.ctx.inner_live_values
                    tensors = [t for t in (value if isinstance(value, tuple) else (value,))
                               if isinstance(t, Tensor)]
                    kept.extend(tensors)  # type: ignore[union-attr]
                    if self._binding is not None:
                        self.ctx.live_binding.update((id(t), self._binding) for t in tensors)
                if record and isinstance(b.value, P.OpCall):
                    self.record_call(b.value, env)
        return self.ref(body.result, env) if refs else self.expr(body.result, env)

    def record_call(self, e: P.OpCall, env: dict) -> None:
        """Note that the source computes operator call `e` (on the arrays of its tensor
        arguments), for conditional operator lemmas (`tvtv.lemmas`). A call with 0-d
        constant arguments is noted twice: with the constants as tensor arguments, and
        with them identified by value (a lemma's module keeps them when LegalizeOps folds
        them into the PrimFunc)."""
        from tvtv.lemmas import call_key, scalar_const

        def tensors_of(values: list[Value]) -> list[Tensor]:
            return [t for a in values for t in (a if isinstance(a, tuple) else (a,))
                    if isinstance(t, Tensor)]

        def note(key: Any, tensors: list[Tensor]) -> None:
            self.ctx.op_calls.setdefault(key, []).append(tuple(t.arr for t in tensors))

        args = [self.expr(a, env) for a in e.args]
        tensors = tensors_of(args)
        note(call_key(e, tuple(P.TensorType(t.shape, t.dtype) for t in tensors), scalar_consts=False),
             tensors)
        if any(scalar_const(a) for a in e.args):
            kept = tensors_of([v for a, v in zip(e.args, args) if not scalar_const(a)])
            note(call_key(e, tuple(P.TensorType(t.shape, t.dtype) for t in kept)), kept)

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
    def ref(self, e: P.Expr, env: dict) -> Any:
        """What `e` refers to, without reading tensor objects (`tvtv.encode.memory`): a
        variable, tuple or tuple item bound to a cell or storage stays that object, so
        `a = alloc` aliases it and a later write to `alloc` is seen through `a`."""
        if isinstance(e, P.VarRef):
            if e.vid not in env:
                raise Unsupported(f"unbound variable {e.vid}")
            v = env[e.vid]
            if isinstance(v, memory.Killed):
                # the VM set the variable's register to null: using it is a runtime error
                self.ctx.add_ub(z3.BoolVal(True), f"use of {v.what} after it was killed")
                return v.referent
            return v
        if isinstance(e, P.TupleExpr):
            return tuple(self.ref(f, env) for f in e.fields)
        if isinstance(e, P.GetItem):
            t = self.ref(e.tuple_value, env)
            if not isinstance(t, tuple):
                raise Unsupported("TupleGetItem of a non-tuple")
            return t[e.index]
        return self.expr(e, env)

    def expr(self, e: P.Expr, env: dict) -> Value:
        if isinstance(e, _ALIASES):     # a variable, tuple or tuple item: its value now
            return memory.read(self.ref(e, env))
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
        if isinstance(e, P.OpCall):
            if e.op in memory.MEMORY_OPS:
                return memory.MEMORY_OPS[e.op](self, e, env)
            args = [self.expr(a, env) for a in e.args]
            return registry.lookup(e.op)(self.ctx, e, args)
        if isinstance(e, P.PrimCall):
            return memory.prim_call(self, e, env)
        if isinstance(e, P.ExternCall):
            return memory.packed_call(self, e, env)
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
        then_v = self.branch(cond, e.then_body, env)
        else_v = self.branch(zf.Not(cond), e.else_body, env)
        return merge(cond, then_v, else_v)

    def branch(self, cond: z3.BoolRef, body: P.Body, env: dict) -> Value:
        """The value of an If branch taken under `cond`. Tensor objects it returns
        (`tvtv.encode.memory`) must live on storage made in the branch: nothing outside can
        reach that storage, so no later write can change them and their value now is the
        If's value. Other objects are unsupported (a later write to an object shared with
        the caller would have to be seen through the If's variable)."""
        scope = memory.BranchScope(frozenset(env))
        self.ctx.path.append(cond)
        self.branches.append(scope)
        try:
            value = self.body(body, dict(env), refs=True)
        finally:
            self.branches.pop()
            self.ctx.path.pop()
        return memory.detach(value, scope)

    def call_tir(self, e: P.CallTIR, args: list[Value]) -> Value:
        """The PrimFunc's outputs: its body's encoding, or (opaque level) output field k is
        UF_{hash,k}(bounded inputs..., index)."""
        tensors = [as_tensor(a, f"argument of call_tir {e.prim}") for a in args]
        out_types = e.ty.fields if isinstance(e.ty, P.TupleType) else (e.ty,)
        lemmas = _LEMMAS.get()
        if lemmas is not None:
            lemma = lemmas.lookup(e.prim_hash, tuple(P.TensorType(t.shape, t.dtype) for t in tensors),
                                  e.ty, [t.arr for t in tensors], self.ctx.source_calls)
            if lemma is not None:   # proved equal to the operator alone: encode the operator
                self.ctx.notes.add(LEMMA_NOTE)
                return FunctionEncoder(lemma.program, self.ctx, self.abstraction).call(
                    lemma.function, tensors)
        if not opaque_here(self.abstraction, e.prim_hash):
            if lemmas is not None:
                self.ctx.notes.add(BODY_NOTE + e.prim)
            outs = encode_prim_func(self.ctx, self.prim_func(e.prim), tensors, len(out_types))
            for t, ty in zip(outs, out_types):
                if not isinstance(ty, P.TensorType) or t.shape != ty.shape or t.dtype != ty.dtype:
                    raise Unsupported(f"call_tir {e.prim}: output type {ty} for buffer "
                                      f"{t.shape} {t.dtype}")
            return tuple(outs) if isinstance(e.ty, P.TupleType) else outs[0]
        outs = self.opaque_outputs(e.prim, e.prim_hash, tensors, out_types)
        return tuple(outs) if isinstance(e.ty, P.TupleType) else outs[0]

    def prim_func(self, name: str) -> Any:
        """PrimFunc `name`'s body in tvtv's TIR picture (`tvtv.ir.tir.PrimFunc`)."""
        info = self.program.prim_funcs.get(name)
        if info is None:
            raise Unsupported(f"call of unknown PrimFunc {name}")
        if info.tir is None:
            raise Unsupported(info.tir_error or f"PrimFunc {name} could not be read")
        return info.tir

    def opaque_outputs(self, prim: str, prim_hash: int, tensors: list[Tensor],
                       out_types: Sequence[P.Type]) -> list[Tensor]:
        """The outputs of PrimFunc `prim` on `tensors` at the opaque rung: output k is
        UF_{hash,k}(bounded inputs..., index)."""
        self.ctx.notes.add(OPAQUE_NOTE)
        bounded = [t.materialized(self.ctx.dom(t.dtype).zero()) for t in tensors]
        outs = []
        for k, ty in enumerate(out_types):
            if not isinstance(ty, P.TensorType):
                raise Unsupported(f"call_tir {prim} with output type {ty}")
            check_supported(ty.dtype, f"call_tir {prim}")
            sort = self.ctx.dom(ty.dtype).sort
            f = self.ctx.uf(opaque_uf_name(prim_hash, k), *[b.sort() for b in bounded], INDEX, sort)
            outs.append(Tensor.from_flat(ty.shape, ty.dtype, lambda i, f=f: f(*bounded, i)))
        return outs


_ALIASES = (P.VarRef, P.TupleExpr, P.GetItem)


def _uses(e: P.Expr) -> set[str]:
    """Variables `e` reads, for the forms whose reads are plain (others: none, so that
    `live_bindings` errs towards fewer bindings)."""
    if isinstance(e, P.VarRef):
        return {e.vid}
    if isinstance(e, P.TupleExpr):
        return set().union(*[_uses(f) for f in e.fields]) if e.fields else set()
    if isinstance(e, P.GetItem):
        return _uses(e.tuple_value)
    if isinstance(e, (P.OpCall, P.CallTIR, P.FuncCall, P.PrimCall, P.ExternCall)):
        return set().union(*[_uses(a) for a in e.args]) if e.args else set()
    return set()


def live_bindings(body: P.Body) -> set[str]:
    """The bindings of `body` its result is computed from (syntactically, through the
    expression forms `_uses` follows)."""
    live = _uses(body.result)
    for b in reversed(body.bindings):
        if b.vid in live:
            live |= _uses(b.value)
    return live


def merge(cond: z3.BoolRef, a: Value, b: Value) -> Value:
    """`cond ? a : b` for values of the same structure."""
    if isinstance(a, tuple) and isinstance(b, tuple) and len(a) == len(b):
        return tuple(merge(cond, x, y) for x, y in zip(a, b))
    ta, tb = as_tensor(a, "If branch"), as_tensor(b, "If branch")
    if ta.shape != tb.shape or ta.dtype != tb.dtype:
        raise Unsupported("If branches of different types")
    return Tensor(ta.shape, ta.dtype, zf.If(cond, ta.arr, tb.arr))


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
