"""Read a TVM Relax IRModule into tvtv's `Program` (see `program.py`).

This is one of the two files that touch TVM's Python API (the other is `tvm_bridge.py`).
Names follow apache-tvm 0.27: `tvm.ir.Var`/`Call`/`GenericConst`, `.ty` instead of
StructInfo, `Call.ty_args`, `relax.TensorType(.shape, .dtype)`.
"""
from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import tvm
import tvm_ffi
from tvm import relax

from tvtv.errors import Unsupported
from tvtv.ir import program as P
from tvtv.ir.tir_reader import read_prim_func

# Attribute objects list their fields through dir(); these are methods, not fields.
UNSUPPORTED_ATTR = "tvtv.unsupported"
_ATTR_METHODS = {"get_int", "get_int_tuple", "get_str", "id_", "is_", "same_as"}


def convert_attr_value(value: Any) -> Any:
    """Turn a TVM attribute value into plain Python (ints, floats, strings, lists, None)."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, tvm.tirx.IntImm):   # 0.27: IntImm has `.ty`, no `.dtype`
        return bool(value.value) if str(value.ty) == "bool" else int(value.value)
    if isinstance(value, tvm.tirx.FloatImm):
        return float(value.value)
    if isinstance(value, (int, float)):
        return value
    if isinstance(value, str):               # includes tvm_ffi String
        return str(value)
    if isinstance(value, tvm.ir.PrimType) or type(value).__name__ in ("DataType", "dtype"):
        return str(value)
    if isinstance(value, relax.ShapeExpr):
        return [convert_attr_value(v) for v in value.values]
    if isinstance(value, (tvm_ffi.container.Array, list, tuple)):
        return [convert_attr_value(v) for v in value]
    if isinstance(value, (tvm_ffi.container.Map, dict)):
        return {str(k): convert_attr_value(v) for k, v in value.items()}
    return str(value)


def convert_attrs(attrs: Any) -> dict[str, Any]:
    if attrs is None:
        return {}
    out: dict[str, Any] = {}
    if isinstance(attrs, tvm.ir.DictAttrs) or type(attrs).__name__ == "DictAttrs":
        for k in attrs.keys():
            out[str(k)] = convert_attr_value(attrs[k])
        return out
    for name in dir(attrs):
        if name.startswith("_") or name in _ATTR_METHODS:
            continue
        try:
            v = getattr(attrs, name)
        except Exception:  # a field TVM cannot read back: leave it out
            continue
        if callable(v) and not isinstance(v, tvm.runtime.Object):
            continue
        out[name] = convert_attr_value(v)
    return out


def prim_func_hash(fn: Any) -> int:
    """A PrimFunc's structural hash, its `global_symbol` left out: the name it is exported
    under (AttachGlobalSymbol adds it at the end of the `default` pipeline) does not change
    what it computes, and opaque `call_tir`s are keyed by this hash."""
    attrs = fn.attrs
    if attrs is not None and "global_symbol" in attrs:
        fn = fn.without_attr("global_symbol")
    return int(tvm_ffi.structural_hash(fn))


def _dtype(d: Any) -> str:
    return str(d)


def convert_type(ty: Any) -> P.Type:
    """Relax type → tvtv type. Symbolic shapes become OpaqueType (static shapes only for now)."""
    if isinstance(ty, relax.TensorType):
        if ty.shape is None or not isinstance(ty.shape, relax.ShapeExpr):
            return P.OpaqueType(str(ty))
        dims = []
        for v in ty.shape.values:
            if type(v).__name__ != "IntImm":
                return P.OpaqueType(str(ty))
            dims.append(int(v.value))
        return P.TensorType(tuple(dims), _dtype(ty.dtype))
    if isinstance(ty, tvm.ir.TupleType):
        return P.TupleType(tuple(convert_type(f) for f in ty.fields))
    return P.OpaqueType(str(ty))


def _inferred_type(e: Any) -> P.Type:
    """TVM's inferred type of an expression that carries none yet."""
    bb = relax.BlockBuilder()
    bb._begin_binding_block()   # normalizing a non-leaf expression needs an open scope
    try:
        return convert_type(bb.normalize(e).ty)
    except Exception:
        return P.OpaqueType("untyped")
    finally:
        bb._end_block()


class _Reader:
    def __init__(self, mod: tvm.ir.IRModule) -> None:
        self.mod = mod
        self.var_ids: dict[Any, str] = {}
        self.counter = itertools.count()
        self.prim_funcs = {gv.name_hint for gv, f in mod.functions.items()
                           if not isinstance(f, relax.Function)}
        self._hashes: dict[str, int] = {}

    def prim_hash(self, gv: Any) -> int:
        """`prim_func_hash` of the PrimFunc `gv` names, computed once per module."""
        if gv.name_hint not in self._hashes:
            self._hashes[gv.name_hint] = prim_func_hash(self.mod[gv])
        return self._hashes[gv.name_hint]

    def vid(self, var: Any) -> str:
        if var not in self.var_ids:
            self.var_ids[var] = f"{var.name}%{next(self.counter)}"
        return self.var_ids[var]

    # -- expressions ---------------------------------------------------------------------
    def expr(self, e: Any) -> P.Expr:
        if isinstance(e, tvm.ir.GlobalVar):
            return P.GlobalRef(e.name_hint)
        if isinstance(e, tvm.ir.Var):  # relax.Var and DataflowVar
            if e not in self.var_ids:
                raise Unsupported(f"free variable {e.name}")
            return P.VarRef(self.var_ids[e])
        if isinstance(e, tvm.ir.GenericConst):
            ty = convert_type(e.ty)
            if not hasattr(e.value, "numpy"):
                # after CallTIRRewrite (the `default` pipeline) `R.dtype("float32")`, an
                # argument of the memory builtins, is a constant holding a dtype
                if type(e.value).__name__ in ("dtype", "DataType"):
                    return P.PrimValue(str(e.value), "dtype")
                raise Unsupported(f"constant of kind {type(e.value).__name__} ({e.value})")
            arr = e.value.numpy()
            dtype = ty.dtype if isinstance(ty, P.TensorType) else str(arr.dtype)
            return P.Const(np.asarray(arr), dtype)
        if isinstance(e, relax.ShapeExpr):
            vals = []
            for v in e.values:
                if type(v).__name__ != "IntImm":
                    raise Unsupported(f"symbolic shape {e}")
                vals.append(int(v.value))
            return P.ShapeValue(tuple(vals))
        kind = type(e).__name__
        if kind in ("IntImm", "FloatImm"):
            value = int(e.value) if kind == "IntImm" else float(e.value)
            dtype = str(e.ty) if hasattr(e, "ty") else ("int64" if kind == "IntImm" else "float32")
            if dtype == "bool":
                value = bool(value)
            return P.PrimValue(value, dtype)
        if isinstance(e, tvm.ir.Tuple):
            return P.TupleExpr(tuple(self.expr(f) for f in e.fields))
        if isinstance(e, tvm.ir.TupleGetItem):
            return P.GetItem(self.expr(e.tuple_value), int(e.index))
        if isinstance(e, relax.If):
            return P.IfExpr(self.expr(e.cond), self.seq(e.true_branch), self.seq(e.false_branch),
                            convert_type(e.ty))
        if isinstance(e, relax.Function):
            return P.FuncExpr(self.function("<local>", e, public=False))
        if isinstance(e, tvm.ir.Call):
            return self.call(e)
        if kind == "PrimValue" or hasattr(e, "value") and kind.endswith("PrimValue"):
            return self.expr(e.value)
        if kind == "DataTypeImm":
            return P.PrimValue(str(e.value), "dtype")
        if kind in ("StringImm",):
            return P.PrimValue(str(e.value), "string")
        raise Unsupported(f"Relax expression {kind}")

    def call(self, e: Any) -> P.Expr:
        ty = convert_type(e.ty)
        if isinstance(ty, P.OpaqueType) and type(e.ty) is tvm.ir.Type:
            # A module not in normal form (built by hand, before Normalize) has calls without
            # inferred types; ask TVM's type inference, which does not change the meaning.
            ty = _inferred_type(e)
        op = e.op
        if isinstance(op, tvm.ir.GlobalVar):
            args = tuple(self.expr(a) for a in e.args)
            if op.name_hint in self.prim_funcs:
                # CallTIRRewrite's destination-passing call of a PrimFunc
                return P.PrimCall(op.name_hint, self.prim_hash(op), args, ty)
            return P.FuncCall(op.name_hint, args, ty)
        if type(op).__name__ == "ExternFunc":
            return P.ExternCall(str(op.global_symbol), tuple(self.expr(a) for a in e.args), ty)
        if isinstance(op, tvm.ir.Op):
            name = op.name
            if name == "relax.call_tir":
                gv = e.args[0]
                inputs = e.args[1]
                args = tuple(self.expr(a) for a in inputs.fields) if isinstance(inputs, tvm.ir.Tuple) \
                    else (self.expr(inputs),)
                if len(e.args) > 2:
                    raise Unsupported("call_tir with symbolic-shape arguments")
                out_ty = convert_type(e.ty_args[0]) if len(e.ty_args) else ty
                return P.CallTIR(gv.name_hint, self.prim_hash(gv), args, out_ty)
            args = tuple(self.expr(a) for a in e.args)
            return P.OpCall(name, args, convert_attrs(e.attrs), ty,
                            tuple(convert_type(t) for t in e.ty_args))
        # a call of a local function-valued variable
        return P.LocalCall(self.expr(op), tuple(self.expr(a) for a in e.args), ty)

    def seq(self, s: Any) -> P.Body:
        if not isinstance(s, relax.SeqExpr):
            return P.Body((), self.expr(s))
        bindings: list[P.Binding] = []
        for block in s.blocks:
            for b in block.bindings:
                value = self.expr(b.value)
                var_id = self.vid(b.var)
                ty = convert_type(b.var.ty)
                if isinstance(b, relax.MatchCast):
                    bindings.append(P.Binding(var_id, b.var.name, value, ty, convert_type(b.ty)))
                else:
                    bindings.append(P.Binding(var_id, b.var.name, value, ty))
        return P.Body(tuple(bindings), self.expr(s.body))

    def function(self, name: str, f: Any, public: bool) -> P.Function:
        params = tuple(P.Param(self.vid(p), p.name, convert_type(p.ty)) for p in f.params)
        body = self.seq(f.body)
        return P.Function(name, params, body, convert_type(f.ret_ty), convert_attrs(f.attrs), public)


def read_module(mod: tvm.ir.IRModule) -> P.Program:
    """Convert a whole IRModule. Functions tvtv cannot read are left out and reported as
    unsupported only when something uses them (the error is raised lazily by the encoder)."""
    reader = _Reader(mod)
    functions: dict[str, P.Function] = {}
    prims: dict[str, P.PrimFuncInfo] = {}
    for gv, fn in mod.functions.items():
        name = gv.name_hint
        if isinstance(fn, relax.Function):
            attrs = convert_attrs(fn.attrs)
            public = "global_symbol" in attrs
            try:
                functions[name] = reader.function(name, fn, public)
            except Unsupported as err:
                # Keep the function with its reason; the encoder reports it as `unknown`
                # if (and only if) the function is checked or called.
                functions[name] = P.Function(name, (), P.Body((), P.GlobalRef(name)),
                                             P.OpaqueType("unsupported"),
                                             {**attrs, UNSUPPORTED_ATTR: str(err)}, public)
        else:
            try:
                tir, tir_error = read_prim_func(name, fn), None
            except Unsupported as err:
                tir, tir_error = None, str(err)
            prims[name] = P.PrimFuncInfo(name, reader.prim_hash(gv), tir, tir_error)
    return P.Program(functions, prims)
