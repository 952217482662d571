"""Evaluate encodings on concrete inputs, without a solver where possible.

Used by conformance tests (an op's encoding against numpy) and to check that a
counterexample's inputs really separate source and target in the IEEE model.
An element that depends on an uninterpreted function (exp, tanh, an opaque PrimFunc ...)
does not simplify to a numeral; it comes back as `None` ("not determined by the model").
"""
from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np
import z3

from tvtv.absfp.dtypes import numpy_dtype
from tvtv.absfp.ieee import IEEEModel, fp_value
from tvtv.absfp.interface import FloatModel
from tvtv.encode import registry
from tvtv.encode.context import EncodeContext
from tvtv.encode.tensor import Tensor
from tvtv.encode.values import PrimScalar, Shape, Value, flatten
from tvtv.ir import program as P


def element_value(term: z3.ExprRef, dtype: str) -> Any:
    """The concrete value of a closed term, or None when it is not a numeral."""
    v = z3.simplify(term)
    if z3.is_true(v):
        return True
    if z3.is_false(v):
        return False
    if z3.is_fp_value(v):
        return fp_value(v, dtype)
    if z3.is_bv_value(v):
        iv = v.as_long()
        bits = v.size()
        if dtype.startswith("int") and iv >> (bits - 1):
            iv -= 1 << bits
        return iv
    return None


def tensor_values(t: Tensor) -> list[Any]:
    return [element_value(t.at(k), t.dtype) for k in range(t.numel)]


def to_array(t: Tensor) -> np.ndarray:
    """All elements as a numpy array; raises ValueError if one is not determined."""
    vals = tensor_values(t)
    if any(v is None for v in vals):
        raise ValueError("some elements depend on uninterpreted functions")
    return np.array(vals, dtype=numpy_dtype(t.dtype)).reshape(t.shape)


def arg_value(value: Any, dtype: str, ctx: EncodeContext) -> Value:
    """numpy array → constant Tensor; ('prim', v) → PrimScalar; ('shape', dims) → Shape."""
    if isinstance(value, tuple) and value and value[0] == "prim":
        return PrimScalar(ctx.dom(dtype).const(value[1]), dtype, value[1])
    if isinstance(value, tuple) and value and value[0] == "shape":
        return Shape(tuple(value[1]))
    arr = np.asarray(value)
    return Tensor.from_numpy(arr, dtype, ctx.dom(dtype))


def encode_op(op: str, args: Sequence[Any], out_ty: P.Type, attrs: dict | None = None,
              model: FloatModel | None = None, arg_dtypes: Sequence[str] | None = None) -> tuple[Value, EncodeContext]:
    """Encode one op applied to concrete arguments; returns the value and the context."""
    model = model or IEEEModel()
    ctx = EncodeContext(model)
    model.on_ub = ctx.add_ub
    dtypes = list(arg_dtypes) if arg_dtypes else [
        str(np.asarray(a).dtype) if not isinstance(a, tuple) else "int64" for a in args]
    values = [arg_value(a, d, ctx) for a, d in zip(args, dtypes)]
    call = P.OpCall(op, tuple(P.VarRef(f"a{k}") for k in range(len(args))), dict(attrs or {}), out_ty)
    return registry.lookup(op)(ctx, call, values), ctx


def eval_op(op: str, args: Sequence[Any], out_ty: P.Type, attrs: dict | None = None,
            arg_dtypes: Sequence[str] | None = None) -> list[np.ndarray | list]:
    """IEEE evaluation of an op on concrete inputs: one array per output tensor
    (an element is None when it depends on an uninterpreted function)."""
    value, _ = encode_op(op, args, out_ty, attrs, IEEEModel(), arg_dtypes)
    out = []
    for t in flatten(value):
        vals = tensor_values(t)
        if any(v is None for v in vals):
            out.append(vals)
        else:
            out.append(np.array(vals, dtype=numpy_dtype(t.dtype)).reshape(t.shape))
    return out


def same_value(a: Any, b: Any) -> bool:
    """Refinement equality on Python values: NaN equals NaN, +0.0 differs from -0.0."""
    if isinstance(a, float) and isinstance(b, float):
        if math.isnan(a) and math.isnan(b):
            return True
        return a == b and math.copysign(1, a) == math.copysign(1, b)
    return bool(a == b)


def arrays_match(got: np.ndarray, want: np.ndarray) -> bool:
    """Bitwise-level agreement of two arrays (NaN = NaN, ±0 distinguished)."""
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape:
        return False
    return all(same_value(float(x) if isinstance(x, (np.floating, float)) else x,
                          float(y) if isinstance(y, (np.floating, float)) else y)
               for x, y in zip(got.reshape(-1).tolist(), want.reshape(-1).tolist()))


def agrees(op: str, args: Sequence[Any], out_ty: P.Type, expected: Sequence[np.ndarray],
           attrs: dict | None = None, model: FloatModel | None = None, exact: bool = True,
           arg_dtypes: Sequence[str] | None = None, timeout_ms: int = 20000) -> bool:
    """Does the op's encoding in `model` agree with `expected` (e.g. numpy's result)?

    exact=True: every output element is *forced* to equal the expected value (under the
    model's preconditions): the encoding is precise on these inputs.
    exact=False: the expected values are *admitted*: some interpretation of the
    uninterpreted functions gives them (the encoding is sound on these inputs).
    Works for the abstract model, where constants are symbolic magnitudes, too.
    """
    model = model or IEEEModel()
    value, ctx = encode_op(op, args, out_ty, attrs, model, arg_dtypes)
    outs = flatten(value)
    if len(outs) != len(expected):
        return False
    eqs = []
    for t, want in zip(outs, expected):
        want = np.asarray(want)
        if tuple(want.shape) != t.shape:
            return False
        dom = model.domain(t.dtype)
        for k, w in enumerate(want.reshape(-1).tolist()):
            eqs.append(dom.same(t.at(k), dom.const(w)))
    s = z3.Solver()
    s.set("timeout", timeout_ms)
    s.add(*model.preconditions())
    s.add(ctx.well_defined())
    if exact:
        s.add(z3.Not(z3.And(*eqs)))
        return s.check() == z3.unsat
    s.add(*eqs)
    return s.check() == z3.sat
