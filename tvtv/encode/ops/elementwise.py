"""Elementwise unary and binary Relax ops, with numpy broadcasting.

Semantics: numpy's ufuncs on the op's dtype (IEEE 754 round-to-nearest for floats), except
where Relax's documentation or TVM's frontends say otherwise (integer `divide` truncates,
`mod` is C's fmod). Each encoder's docstring starts with its one-line semantic decision; the
docs' semantics table is generated from those lines.

What TVM accepts was measured on apache-tvm 0.27 (type inference and `relax.build` + VM):
- type inference lets every binary op take any dtype (even `bitwise_and` on float32), but
  legalization/codegen rejects many of them; the encoders raise `Unsupported` for those
  (bitwise ops on floats, logical ops on non-bool, `power`/`atan2`/`log_add_exp` on ints,
  `negative`/`abs`/`sign`/`square` on bool), rather than inventing a meaning;
- operands of a binary op must have the same dtype (type inference checks it);
- the `nn` activations (gelu, silu, leakyrelu, softplus, selu) require a float dtype.
"""
from __future__ import annotations

import math
from typing import Any, Callable

import z3

from tvtv import z3fast as zf
from tvtv.absfp.dtypes import INT_FORMATS, is_bool, is_float, is_int
from tvtv.absfp.interface import ScalarDomain
from tvtv.encode.context import EncodeContext
from tvtv.encode.ops.common import norm_axis, out_type, tensor_arg
from tvtv.encode.registry import register
from tvtv.encode.tensor import Tensor, elementwise, ravel
from tvtv.encode.values import PrimScalar, Value
from tvtv.errors import Unsupported
from tvtv.ir.program import OpCall

Term = z3.ExprRef


# ---------------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------------
def _short(call: OpCall) -> str:
    """`relax.nn.gelu` -> `nn.gelu` (for messages)."""
    return call.op[len("relax."):] if call.op.startswith("relax.") else call.op


def _literal(ctx: EncodeContext, value: Any, dtype: str, what: str) -> Term:
    """The constant of `dtype` that a literal scalar argument denotes (TVM casts literals to
    the tensor's dtype); a literal that dtype cannot hold exactly is unsupported for ints."""
    dom = ctx.dom(dtype)
    if is_float(dtype):
        return dom.const(float(value))
    if is_bool(dtype):
        if value in (0, 1):
            return dom.const(bool(value))
        raise Unsupported(f"{what}: literal {value!r} for a bool tensor")
    if isinstance(value, float) and not value.is_integer():
        raise Unsupported(f"{what}: non-integral literal {value!r} for a {dtype} tensor")
    bits, signed = INT_FORMATS[dtype]
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    if not lo <= int(value) <= hi:
        raise Unsupported(f"{what}: literal {value!r} out of the range of {dtype}")
    return dom.const(int(value))


def _operand(ctx: EncodeContext, args: list[Value], k: int, call: OpCall, dtype: str) -> Tensor:
    """Argument k as a tensor of `dtype` (a literal PrimValue is converted to `dtype`)."""
    v = args[k]
    if isinstance(v, PrimScalar):
        if v.dtype == dtype:
            return Tensor.scalar(v.term, dtype)
        if v.concrete is not None:
            return Tensor.scalar(_literal(ctx, v.concrete, dtype, f"argument {k} of {call.op}"),
                                 dtype)
        raise Unsupported(f"argument {k} of {call.op}: {v.dtype} scalar for a {dtype} op")
    t = tensor_arg(args, k, call)
    if t.dtype != dtype:
        raise Unsupported(f"argument {k} of {call.op} has dtype {t.dtype}, expected {dtype}")
    return t


def _operands_dtype(args: list[Value], call: OpCall) -> str:
    """The common dtype of a binary op's operands (tensors decide over literals)."""
    for v in args:
        if isinstance(v, Tensor):
            return v.dtype
    for v in args:
        if isinstance(v, PrimScalar):
            return v.dtype
    raise Unsupported(f"{call.op} without tensor operands")


def _require(ok: bool, call: OpCall, dtype: str) -> None:
    if not ok:
        raise Unsupported(f"{_short(call)} on {dtype}")


def _signbit(dom: ScalarDomain, x: Term) -> z3.BoolRef:
    """C's signbit for non-NaN floats: x < 0 or x is -0.0."""
    return zf.Or(dom.lt(x, dom.zero()), dom.same(x, dom.const(-0.0)))


def _copysign_zero(dom: ScalarDomain, y: Term) -> Term:
    """copysign(0, y) for non-NaN y."""
    return zf.If(_signbit(dom, y), dom.const(-0.0), dom.zero())


def _signed(dom: ScalarDomain, negative: z3.BoolRef, value: Term) -> Term:
    return zf.If(negative, dom.neg(value), value)


def _unary_map(ctx: EncodeContext, call: OpCall, args: list[Value],
               fn: Callable[[ScalarDomain, Term], Term]) -> Tensor:
    """out[i] = fn(dom, x[i]); `dom` is the input's domain."""
    x = tensor_arg(args, 0, call)
    ty = out_type(call)
    dom = ctx.dom(x.dtype)
    return elementwise(ty.shape, ty.dtype, [x], lambda v: fn(dom, v))


def _binary_map(ctx: EncodeContext, call: OpCall, args: list[Value],
                fn: Callable[[ScalarDomain, Term, Term], Term]) -> Tensor:
    """out[i] = fn(dom, a[b_a(i)], b[b_b(i)]) with numpy broadcasting; `dom` is the operands'
    domain (the result's dtype comes from the call's inferred type)."""
    dtype = _operands_dtype(args, call)
    a, b = _operand(ctx, args, 0, call, dtype), _operand(ctx, args, 1, call, dtype)
    ty = out_type(call)
    dom = ctx.dom(dtype)
    return elementwise(ty.shape, ty.dtype, [a, b], lambda x, y: fn(dom, x, y))


# ---------------------------------------------------------------------------------------------
# binary arithmetic
# ---------------------------------------------------------------------------------------------
_ARITH = {"relax.add": "add", "relax.subtract": "sub", "relax.multiply": "mul",
          "relax.divide": "div"}


@register(*_ARITH)
def encode_arith(ctx: EncodeContext, call: OpCall, args: list) -> object:
    """IEEE +, -, *, / (x + (+0.) is +0. at x = -0.); ints wrap, divide truncates, x / 0 and INT_MIN / -1 UB.

    On bool, add is `or` and multiply is `and` (numpy); subtract and divide are unsupported.
    numpy's `divide` on ints is true division into float64; a Relax `divide` of int tensors
    keeps the int dtype and TVM computes it with C's truncating `/` (TIR truncdiv; measured
    -7 / 2 = -3), so that is the meaning taken here.
    """
    name = _ARITH[call.op]
    return _binary_map(ctx, call, args, lambda dom, a, b: getattr(dom, name)(a, b))


@register("relax.maximum", "relax.minimum")
def encode_max_min(ctx: EncodeContext, call: OpCall, args: list) -> object:
    """numpy.maximum/minimum: NaN propagates; a tie of ±0 gives the second operand (maximum(-0., 0.) = +0.).

    That tie rule is numpy's float32/float64 loops'; its float16 loop breaks ties the other
    way (measured), and tvtv uses the float32 rule for every dtype.
    """
    name = "maximum" if call.op == "relax.maximum" else "minimum"
    return _binary_map(ctx, call, args, lambda dom, a, b: getattr(dom, name)(a, b))


# ---------------------------------------------------------------------------------------------
# comparisons
# ---------------------------------------------------------------------------------------------
_COMPARE = {"relax.equal": "eq", "relax.not_equal": "ne", "relax.less": "lt",
            "relax.less_equal": "le", "relax.greater": "gt", "relax.greater_equal": "ge"}


def _bits(dtype: str) -> int:
    return 1 if is_bool(dtype) else int("".join(c for c in dtype if c.isdigit()))


def compared_dtype(a: str, b: str) -> str:
    """The dtype two comparison operands of different dtypes are cast to, as TIR does it
    (LegalizeOps of `less` on each pair, measured: `T.Cast("float16", x) < y` for int32
    against float16): a float over an int or bool, the wider of two floats or of two ints,
    an int over a bool, and of two ints of one width the unsigned one (uint8 over int8)."""
    if is_float(a) != is_float(b):
        return a if is_float(a) else b
    if _bits(a) != _bits(b):
        return a if _bits(a) > _bits(b) else b
    return a if a.startswith("uint") else b


@register(*_COMPARE)
def encode_compare(ctx: EncodeContext, call: OpCall, args: list) -> object:
    """IEEE comparisons into bool: false when an operand is NaN (not_equal: true); -0. == +0.; False < True.

    Relax's type inference accepts operands of different dtypes here (the result is bool
    either way); both are then cast to one dtype as TIR does (`compared_dtype`: an int32
    70000 compared with a float16 is +inf).
    """
    name = _COMPARE[call.op]
    tensors = [v for v in args if isinstance(v, Tensor)]
    if len(tensors) == 2 and tensors[0].dtype != tensors[1].dtype:
        common = compared_dtype(tensors[0].dtype, tensors[1].dtype)
        args = [v if v.dtype == common else
                elementwise(v.shape, common, [v],
                            lambda x, src=v.dtype: ctx.model.cast(x, src, common))
                for v in args]
    return _binary_map(ctx, call, args, lambda dom, a, b: getattr(dom, name)(a, b))


# ---------------------------------------------------------------------------------------------
# division-like ops: floor_divide, floor_mod, mod
# ---------------------------------------------------------------------------------------------
def fmod(dom: ScalarDomain, a: Term, b: Term) -> Term:
    """C99 fmod(a, b) = a - trunc(a / b) * b, exact; the result has a's sign.

    In the IEEE model it is computed exactly from SMT's `fp.rem` (IEEE remainder, whose
    quotient is rounded to nearest): when that quotient was rounded away from zero, the
    remainder has the other sign, and adding |b| with a's sign gives fmod (the sum is exact,
    fmod being representable). Cheap on constants; slow for the solver on symbolic inputs.
    In other models: the special cases of C99 F.9.4.7 (fmod(±0, y) = ±0 for y ≠ 0,
    fmod(±inf, y) = NaN, fmod(x, ±0) = NaN, fmod(x, ±inf) = x for finite x), fmod(x, y) = x
    when |x| < |y| and = ±0 when |x| = |y|, else an uninterpreted magnitude with a's sign.
    """
    if isinstance(a.sort(), z3.FPSortRef):
        r = z3.fpRem(a, b)
        adj = zf.If(zf.fpIsNegative(a), z3.fpNeg(z3.fpAbs(b)), z3.fpAbs(b))
        fix = zf.And(zf.Not(zf.fpIsZero(r)), zf.Not(zf.fpIsNaN(r)),
                     zf.fpIsNegative(r) != zf.fpIsNegative(a))
        return zf.If(fix, z3.fpAdd(z3.RNE(), r, adj), r)
    zero = dom.zero()
    f = dom.abs(dom.binary("fmod", a, b))
    abs_a, abs_b = dom.abs(a), dom.abs(b)
    nan = zf.Or(dom.is_nan(a), dom.is_nan(b), dom.is_inf(a), dom.eq(b, zero))
    return zf.If(nan, dom.nan(),
           zf.If(zf.Or(dom.is_inf(b), dom.eq(a, zero), dom.lt(abs_a, abs_b)), a,
           zf.If(dom.eq(abs_a, abs_b), dom.mul(a, zero),          # ±0 with a's sign
                 _signed(dom, dom.lt(a, zero), f))))


def np_divmod(dom: ScalarDomain, a: Term, b: Term) -> tuple[Term, Term]:
    """numpy's float floor_divide and remainder (npy_divmod, numpy 2.x; PyTorch's
    div(rounding_mode='floor') and remainder use the same algorithm), step by step:
        b == 0:  (a / b, fmod(a, b) = NaN)
        mod = fmod(a, b); div = (a - mod) / b
        if mod != 0 and (b < 0) != (mod < 0): mod += b; div -= 1
        if mod == 0: mod = copysign(0, b)
        floordiv = floor(div) (+1 if div - floor(div) > 0.5), or copysign(0, a / b) if div == 0
    so floor_divide(1, 0.1f) = 9 (not floor(1 / 0.1f) = 10), floor_divide(inf, 1) = NaN,
    floor_divide(-1, inf) = -1, remainder(-1, inf) = inf, remainder(0, -1) = -0.
    """
    zero, one = dom.zero(), dom.one()
    mod = fmod(dom, a, b)
    quotient = dom.div(a, b)
    div = dom.div(dom.sub(a, mod), b)
    mod_nonzero = dom.truthy(mod)                               # C truthiness: NaN is true
    flip = zf.And(mod_nonzero, dom.lt(b, zero) != dom.lt(mod, zero))
    div = zf.If(flip, dom.sub(div, one), div)
    mod_out = zf.If(mod_nonzero, zf.If(flip, dom.add(mod, b), mod), _copysign_zero(dom, b))
    fl = dom.unary("floor", div)
    snapped = zf.If(dom.gt(dom.sub(div, fl), dom.const(0.5)), dom.add(fl, one), fl)
    floordiv = zf.If(dom.truthy(div), snapped, _copysign_zero(dom, quotient))
    b_zero = dom.eq(b, zero)
    return zf.If(b_zero, quotient, floordiv), zf.If(b_zero, mod, mod_out)


def _via_float32(ctx: EncodeContext, dtype: str,
                 fn: Callable[[ScalarDomain, Term, Term], Term]) -> Callable[..., Term]:
    """numpy and ml_dtypes compute float16/bfloat16 divmod in float32 and round the result."""
    if dtype not in ("float16", "bfloat16"):
        return fn
    wide = ctx.dom("float32")

    def run(dom: ScalarDomain, a: Term, b: Term) -> Term:
        r = fn(wide, ctx.model.cast(a, dtype, "float32"), ctx.model.cast(b, dtype, "float32"))
        return ctx.model.cast(r, "float32", dtype)
    return run


@register("relax.floor_divide")
def encode_floor_divide(ctx: EncodeContext, call: OpCall, args: list) -> object:
    """numpy.floor_divide: floats by numpy's divmod (1 // 0.1f = 9, x // 0 = x / 0, inf // y = NaN); ints floor, x // 0 UB.

    Float details in `np_divmod`; float16/bfloat16 are computed in float32 and rounded, as
    numpy and ml_dtypes do. Ints: INT_MIN // -1 is UB too; bool is unsupported. TVM's
    frontends map torch's floor division and ONNX/TFLite FLOOR_DIV here; TVM's own lowering
    computes floor(a / b) on floats, which differs on inexact quotients and on infinities.
    """
    dtype = _operands_dtype(args, call)
    _require(not is_bool(dtype), call, dtype)
    if is_int(dtype):
        return _binary_map(ctx, call, args, lambda dom, a, b: dom.floor_div(a, b))
    return _binary_map(ctx, call, args,
                       _via_float32(ctx, dtype, lambda d, a, b: np_divmod(d, a, b)[0]))


@register("relax.floor_mod")
def encode_floor_mod(ctx: EncodeContext, call: OpCall, args: list) -> object:
    """numpy.remainder (divisor's sign) by numpy's divmod: x % 0 = NaN, -1 % inf = inf, 0 % -1 = -0; ints floored, x % 0 UB.

    Float details in `np_divmod`; float16/bfloat16 are computed in float32 and rounded.
    Ints: INT_MIN % -1 is UB too; bool is unsupported. TVM's frontends map torch.remainder
    and ONNX Mod(fmod=0) to this op.
    """
    dtype = _operands_dtype(args, call)
    _require(not is_bool(dtype), call, dtype)
    if is_int(dtype):
        return _binary_map(ctx, call, args, lambda dom, a, b: dom.floor_mod(a, b))
    return _binary_map(ctx, call, args,
                       _via_float32(ctx, dtype, lambda d, a, b: np_divmod(d, a, b)[1]))


@register("relax.mod")
def encode_mod(ctx: EncodeContext, call: OpCall, args: list) -> object:
    """C fmod = numpy.fmod (dividend's sign, exact): fmod(x, ±0) = NaN, fmod(±inf, y) = NaN, fmod(x, ±inf) = x; ints C %, x % 0 UB.

    numpy's `mod` is `remainder`, but TVM's frontends map torch.fmod and ONNX Mod(fmod=1) to
    relax.mod and the floored remainder to relax.floor_mod, and TVM lowers it to truncmod/fmod.
    Ints: INT_MIN % -1 is UB too; bool is unsupported.
    """
    dtype = _operands_dtype(args, call)
    _require(not is_bool(dtype), call, dtype)
    if is_int(dtype):
        return _binary_map(ctx, call, args, lambda dom, a, b: dom.trunc_mod(a, b))
    return _binary_map(ctx, call, args, fmod)


# ---------------------------------------------------------------------------------------------
# float functions of two arguments
# ---------------------------------------------------------------------------------------------
def _is_odd_integer(dom: ScalarDomain, y: Term) -> z3.BoolRef:
    """y is a finite odd integer: floor(y) = y and floor(y / 2) ≠ y / 2 (y / 2 is exact for
    odd integers, and every float of magnitude ≥ 2^p is even)."""
    half = dom.div(y, dom.const(2.0))
    return zf.And(zf.Not(dom.is_inf(y)), dom.eq(dom.unary("floor", y), y),
                  zf.Not(dom.eq(dom.unary("floor", half), half)))


def pow_float(dom: ScalarDomain, x: Term, y: Term) -> Term:
    """C99 pow with the special cases of F.9.4.4 (on top of the model's pow(x, ±0) = 1,
    pow(+1, y) = 1 and NaN propagation); finite nonzero cases stay uninterpreted."""
    zero, one = dom.zero(), dom.one()
    inf, ninf, nan = dom.const(math.inf), dom.const(-math.inf), dom.nan()
    pz, nz = dom.zero(), dom.const(-0.0)
    base = dom.binary("pow", x, y)
    ax = dom.abs(x)
    y_neg = dom.lt(y, zero)
    odd = _is_odd_integer(dom, y)
    is_integer = dom.eq(dom.unary("floor", y), y)
    # listed from the most specific; the model's own cases (y = ±0, x = +1) come first
    cases: list[tuple[z3.BoolRef, Term]] = [
        (zf.Or(dom.eq(y, zero), dom.same(x, one)), one),
        (zf.Or(dom.is_nan(x), dom.is_nan(y)), nan),
        (zf.And(dom.same(x, dom.const(-1.0)), dom.is_inf(y)), one),
        (zf.And(dom.same(y, inf), dom.lt(ax, one)), pz),
        (zf.And(dom.same(y, inf), dom.gt(ax, one)), inf),
        (zf.And(dom.same(y, ninf), dom.lt(ax, one)), inf),
        (zf.And(dom.same(y, ninf), dom.gt(ax, one)), pz),
        (dom.same(x, inf), zf.If(y_neg, pz, inf)),
        (dom.same(x, ninf), zf.If(y_neg, zf.If(odd, nz, pz), zf.If(odd, ninf, inf))),
        (dom.same(x, pz), zf.If(y_neg, inf, pz)),
        (dom.same(x, nz), zf.If(y_neg, zf.If(odd, ninf, inf), zf.If(odd, nz, pz))),
        (zf.And(dom.lt(x, zero), zf.Not(is_integer)), nan),   # finite x < 0, finite non-integer y
    ]
    result = base
    for cond, value in reversed(cases):
        result = zf.If(cond, value, result)
    return result


@register("relax.power")
def encode_power(ctx: EncodeContext, call: OpCall, args: list) -> object:
    """C99 pow on floats with every special case of F.9.4.4 (pow(NaN, ±0) = 1, pow(-1, ±inf) = 1, ...); other values uninterpreted.

    Ints and bool are unsupported (TVM's lowering rejects them: "power only applies to
    float"). See `pow_float` for the cases.
    """
    dtype = _operands_dtype(args, call)
    _require(is_float(dtype), call, dtype)
    return _binary_map(ctx, call, args, pow_float)


def atan2_float(dom: ScalarDomain, y: Term, x: Term) -> Term:
    """C99 atan2(y, x) with the special cases of F.9.1.4 (constants rounded to the dtype);
    the general case is uninterpreted and odd in y."""
    zero = dom.zero()
    pi, half_pi = math.pi, math.pi / 2

    def pm(v: float) -> Term:     # ±v with y's sign
        return zf.If(_signbit(dom, y), dom.const(-v), dom.const(v))
    x_neg = _signbit(dom, x)      # x < 0 or x = -0
    general = _signed(dom, _signbit(dom, y), dom.binary("atan2", dom.abs(y), x))
    inf, ninf = dom.const(math.inf), dom.const(-math.inf)
    return zf.If(zf.Or(dom.is_nan(x), dom.is_nan(y)), dom.nan(),
           zf.If(dom.eq(y, zero), zf.If(x_neg, pm(pi), y),
           zf.If(dom.is_inf(y), zf.If(dom.same(x, inf), pm(pi / 4),
                                zf.If(dom.same(x, ninf), pm(3 * pi / 4), pm(half_pi))),
           zf.If(dom.eq(x, zero), pm(half_pi),
           zf.If(dom.same(x, inf), dom.mul(y, zero),          # ±0 with y's sign
           zf.If(dom.same(x, ninf), pm(pi), general))))))


@register("relax.atan2")
def encode_atan2(ctx: EncodeContext, call: OpCall, args: list) -> object:
    """numpy.arctan2(y, x): C99 F.9.1.4's special cases exact (atan2(±0, -0) = ±pi ...), odd in y, others uninterpreted.

    pi, pi/2, pi/4 and 3pi/4 are rounded to the dtype. Ints and bool are unsupported (TVM
    cannot compile them).
    """
    dtype = _operands_dtype(args, call)
    _require(is_float(dtype), call, dtype)
    return _binary_map(ctx, call, args, atan2_float)


def log_add_exp_float(dom: ScalarDomain, a: Term, b: Term) -> Term:
    """numpy.logaddexp: NaN propagates; equal operands give a + ln 2 (so -inf, -inf gives -inf
    and inf, inf gives inf); +inf wins; x, -inf gives x + 0.0 (so -0.0 becomes +0.0);
    otherwise a commutative uninterpreted function."""
    ninf, zero = dom.const(-math.inf), dom.zero()
    return zf.If(zf.Or(dom.is_nan(a), dom.is_nan(b)), dom.nan(),
           zf.If(dom.eq(a, b), dom.add(a, dom.const(math.log(2.0))),
           zf.If(zf.Or(dom.same(a, dom.const(math.inf)), dom.same(b, dom.const(math.inf))),
                 dom.const(math.inf),
           zf.If(dom.same(b, ninf), dom.add(a, zero),
           zf.If(dom.same(a, ninf), dom.add(b, zero),
                 dom.binary("log_add_exp", a, b))))))


@register("relax.log_add_exp")
def encode_log_add_exp(ctx: EncodeContext, call: OpCall, args: list) -> object:
    """numpy.logaddexp: NaN propagates, a == b gives a + ln 2, +inf wins, (x, -inf) gives x + 0.; others uninterpreted.

    The general case is a commutative uninterpreted function. Ints and bool are unsupported
    (TVM cannot compile them).
    """
    dtype = _operands_dtype(args, call)
    _require(is_float(dtype), call, dtype)
    return _binary_map(ctx, call, args, log_add_exp_float)


# ---------------------------------------------------------------------------------------------
# bitwise, shift and logical ops
# ---------------------------------------------------------------------------------------------
_BITWISE: dict[str, tuple[Callable[[Term, Term], Term], Callable[..., z3.BoolRef]]] = {
    "relax.bitwise_and": (lambda a, b: a & b, z3.And),
    "relax.bitwise_or": (lambda a, b: a | b, z3.Or),
    "relax.bitwise_xor": (lambda a, b: a ^ b, z3.Xor),
}


@register(*_BITWISE)
def encode_bitwise(ctx: EncodeContext, call: OpCall, args: list) -> object:
    """numpy bitwise and/or/xor: on the two's complement bits of ints, logical on bool; floats unsupported."""
    dtype = _operands_dtype(args, call)
    _require(is_int(dtype) or is_bool(dtype), call, dtype)
    int_fn, bool_fn = _BITWISE[call.op]
    fn = bool_fn if is_bool(dtype) else int_fn
    return _binary_map(ctx, call, args, lambda dom, a, b: fn(a, b))


@register("relax.left_shift", "relax.right_shift")
def encode_shift(ctx: EncodeContext, call: OpCall, args: list) -> object:
    """Int shifts (right shift arithmetic when signed, left shift wraps); an amount outside [0, bits) is UB.

    UB follows C/LLVM, which TVM's code inherits (numpy would give 0 or -1). Floats and bool
    are unsupported. The UB is recorded for the whole tensor (`EncodeContext.add_ub`).
    """
    dtype = _operands_dtype(args, call)
    _require(is_int(dtype), call, dtype)
    bits, signed = INT_FORMATS[dtype]
    left = call.op == "relax.left_shift"

    def shift(dom: ScalarDomain, a: Term, b: Term) -> Term:
        width = dom.const(bits)
        bad = zf.Or(b < 0, b >= width) if signed else z3.UGE(b, width)
        ctx.add_ub(bad, f"{_short(call)} by an amount outside [0, {bits})")
        if left:
            return a << b
        return a >> b if signed else z3.LShR(a, b)
    return _binary_map(ctx, call, args, shift)


_LOGICAL = {"relax.logical_and": z3.And, "relax.logical_or": z3.Or}


@register(*_LOGICAL)
def encode_logical(ctx: EncodeContext, call: OpCall, args: list) -> object:
    """Logical and/or of bool tensors; other dtypes unsupported (Relax keeps their dtype, LegalizeOps rejects them)."""
    dtype = _operands_dtype(args, call)
    _require(is_bool(dtype), call, dtype)
    fn = _LOGICAL[call.op]
    return _binary_map(ctx, call, args, lambda dom, a, b: fn(a, b))


@register("relax.logical_xor")
def encode_logical_xor(ctx: EncodeContext, call: OpCall, args: list) -> object:
    """Logical xor of bool tensors; of int tensors the bitwise xor in their dtype, as TVM computes it (2 xor 3 is 1, where numpy's logical_xor is False); floats unsupported.

    Relax keeps an int operand's dtype, and topi legalizes the op as `x ^ y` for every dtype:
    on ints that is the bitwise xor (measured on the VM: logical_xor([2, -1], [3, 1]) in
    int32 is [1, -2]; docs/findings.md). On floats LegalizeOps rejects it.
    """
    dtype = _operands_dtype(args, call)
    _require(is_bool(dtype) or is_int(dtype), call, dtype)
    fn = z3.Xor if is_bool(dtype) else (lambda a, b: a ^ b)
    return _binary_map(ctx, call, args, lambda dom, a, b: fn(a, b))


# ---------------------------------------------------------------------------------------------
# unary ops
# ---------------------------------------------------------------------------------------------
_UNARY_FUNCS = ("exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "erf", "sin", "cos", "tan",
                "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh")
_ROUNDING = ("floor", "ceil", "trunc", "round")


@register(*(f"relax.{n}" for n in _UNARY_FUNCS))
def encode_unary_function(ctx: EncodeContext, call: OpCall, args: list) -> object:
    """Float functions with the special values of absfp/special.py (rsqrt(-0.) = -inf, sigmoid(±0) = 0.5), else uninterpreted; float16 erf is float32 erf rounded (TVM's only float16 erf); under per-operation no-signed-zeros tanh and atanh see -0 as +0, as TVM's code does.

    sqrt is exact in the IEEE model; elsewhere the functions are uninterpreted, constrained by
    the table's odd / nonneg / NaN-below-zero flags (measured against numpy by the tests) and
    its range bounds (tanh, erf, sin, cos in [-1, 1], sigmoid in [0, 1] on finite arguments in
    float16/bfloat16/float32, measured on TVM's code).
    Ints and bool are unsupported (Relax's type inference rejects them).
    """
    x = tensor_arg(args, 0, call)
    _require(is_float(x.dtype), call, x.dtype)
    fname = call.op.split(".")[-1]
    if ctx.zero_signs_free and fname in ZERO_SIGN_DROPPED:
        return _unary_map(ctx, call, args, lambda dom, v: dom.unary(fname, plus_zero(dom, v)))
    return _unary_map(ctx, call, args, lambda dom, v: dom.unary(fname, v))


# Functions TVM's CPU code evaluates with the argument's zero sign dropped: LLVM's lowering of
# tanh and atanh gives f(-0) = +0 (measured, `tvtv/encode/tir/intrinsics.py`), where IEEE /
# C99 Annex F give -0. Under per-operation no-signed-zeros (LLVM's `nsz` on every operation:
# the sign of a zero argument or result is insignificant) the specification may drop it
# too: f(±0) = ±0 for these, so f(+0) differs from f(-0) only in the sign of a zero result,
# which is one of the runs the source allows. Then the legalization equals the operator
# exactly and gets an operator lemma (`tvtv.lemmas`).
ZERO_SIGN_DROPPED = ("tanh", "atanh")


def plus_zero(dom: ScalarDomain, v: Term) -> Term:
    """`v` with -0 replaced by +0."""
    return zf.If(v == dom.const(-0.0), dom.const(0.0), v)


@register(*(f"relax.{n}" for n in _ROUNDING))
def encode_rounding(ctx: EncodeContext, call: OpCall, args: list) -> object:
    """numpy floor/ceil/trunc/rint (round is half to even, as TVM's nearbyint): ±0, ±inf, NaN are fixed; identity on ints, bool.

    Measured on TVM: round(2.5) = 2, round(-3.5) = -4; signs are kept (ceil(-0.5) = -0.).
    """
    x = tensor_arg(args, 0, call)
    if not is_float(x.dtype):
        return _unary_map(ctx, call, args, lambda dom, v: v)
    fname = call.op.split(".")[-1]
    return _unary_map(ctx, call, args, lambda dom, v: dom.unary(fname, v))


@register("relax.abs")
def encode_abs(ctx: EncodeContext, call: OpCall, args: list) -> object:
    """numpy.abs: clears a float's sign bit (abs(-0.) = +0., abs(NaN) = NaN); ints wrap (abs(INT_MIN) = INT_MIN); bool unsupported."""
    x = tensor_arg(args, 0, call)
    _require(not is_bool(x.dtype), call, x.dtype)
    return _unary_map(ctx, call, args, lambda dom, v: dom.abs(v))


@register("relax.negative")
def encode_negative(ctx: EncodeContext, call: OpCall, args: list) -> object:
    """numpy.negative: flips a float's sign bit (-(+0.) = -0.); ints wrap modulo 2^bits; bool unsupported."""
    x = tensor_arg(args, 0, call)
    _require(not is_bool(x.dtype), call, x.dtype)
    return _unary_map(ctx, call, args, lambda dom, v: dom.neg(v))


@register("relax.square")
def encode_square(ctx: EncodeContext, call: OpCall, args: list) -> object:
    """numpy.square = x * x in the dtype (ints wrap); bool unsupported (numpy would give int8, TVM rejects it)."""
    x = tensor_arg(args, 0, call)
    _require(not is_bool(x.dtype), call, x.dtype)
    return _unary_map(ctx, call, args, lambda dom, v: dom.mul(v, v))


def _sign(dom: ScalarDomain, v: Term) -> Term:
    zero, one = dom.zero(), dom.one()
    if is_int(dom.dtype) and not INT_FORMATS[dom.dtype][1]:
        return zf.If(v == 0, zero, one)
    r = zf.If(dom.gt(v, zero), one, zf.If(dom.lt(v, zero), dom.neg(one), zero))
    return zf.If(dom.is_nan(v), dom.nan(), r) if is_float(dom.dtype) else r


@register("relax.sign")
def encode_sign(ctx: EncodeContext, call: OpCall, args: list) -> object:
    """numpy.sign: -1, 0 or 1 in the dtype, sign(±0.) = +0., sign(NaN) = NaN (TVM's lowering gives 0); bool unsupported."""
    x = tensor_arg(args, 0, call)
    _require(not is_bool(x.dtype), call, x.dtype)
    return _unary_map(ctx, call, args, _sign)


_CLASSIFY = {
    "relax.isnan": lambda dom, v: dom.is_nan(v),
    "relax.isinf": lambda dom, v: dom.is_inf(v),
    "relax.isfinite": lambda dom, v: zf.Not(zf.Or(dom.is_nan(v), dom.is_inf(v))),
}


@register(*_CLASSIFY)
def encode_classify(ctx: EncodeContext, call: OpCall, args: list) -> object:
    """numpy isnan/isinf/isfinite into bool; every int and bool value is finite (not NaN, not inf)."""
    return _unary_map(ctx, call, args, _CLASSIFY[call.op])


@register("relax.bitwise_not")
def encode_bitwise_not(ctx: EncodeContext, call: OpCall, args: list) -> object:
    """numpy.invert: ~x on the two's complement bits of ints, logical not on bool; floats unsupported."""
    x = tensor_arg(args, 0, call)
    _require(is_int(x.dtype) or is_bool(x.dtype), call, x.dtype)
    return _unary_map(ctx, call, args,
                      lambda dom, v: zf.Not(v) if is_bool(dom.dtype) else ~v)


@register("relax.logical_not")
def encode_logical_not(ctx: EncodeContext, call: OpCall, args: list) -> object:
    """Logical not of a bool tensor; other dtypes unsupported (Relax keeps their dtype, TVM cannot compile them)."""
    x = tensor_arg(args, 0, call)
    _require(is_bool(x.dtype), call, x.dtype)
    return _unary_map(ctx, call, args, lambda dom, v: zf.Not(v))


# ---------------------------------------------------------------------------------------------
# selection, clipping and casts
# ---------------------------------------------------------------------------------------------
@register("relax.where")
def encode_where(ctx: EncodeContext, call: OpCall, args: list) -> object:
    """numpy.where(cond, x1, x2) with the three operands broadcast together; cond must be bool (Relax requires it)."""
    ty = out_type(call)
    cond = tensor_arg(args, 0, call)
    if not is_bool(cond.dtype):
        raise Unsupported(f"where with a {cond.dtype} condition")
    x1, x2 = _operand(ctx, args, 1, call, ty.dtype), _operand(ctx, args, 2, call, ty.dtype)
    return elementwise(ty.shape, ty.dtype, [cond, x1, x2], lambda c, a, b: zf.If(c, a, b))


def _clip_bound(ctx: EncodeContext, v: Value, dtype: str, which: str) -> Term:
    """A clip bound as a constant of the tensor's dtype. Integer bounds outside the dtype's
    range are saturated (the comparison then never selects them); a bound that would be
    selected yet cannot be represented is unsupported."""
    what = f"the {which} bound of clip"
    if not isinstance(v, PrimScalar):
        raise Unsupported(f"{what} is a {type(v).__name__}, expected a scalar")
    if v.concrete is None:
        if v.dtype == dtype:
            return v.term
        raise Unsupported(f"{what}: symbolic {v.dtype} bound for a {dtype} tensor")
    value = v.concrete
    if is_int(dtype) and not isinstance(value, bool):
        if isinstance(value, float) and not value.is_integer():
            if math.isinf(value):
                value = -(1 << 70) if value < 0 else (1 << 70)
            else:
                raise Unsupported(f"{what}: non-integral {value!r} for a {dtype} tensor")
        bits, signed = INT_FORMATS[dtype]
        lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
        value = int(value)
        if (which == "lower" and value > hi) or (which == "upper" and value < lo):
            raise Unsupported(f"{what}: {value} is outside the range of {dtype}")
        value = min(max(value, lo), hi)
    return _literal(ctx, value, dtype, what)


@register("relax.clip")
def encode_clip(ctx: EncodeContext, call: OpCall, args: list) -> object:
    """numpy.clip: lo if x < lo, else hi if > hi, else x: clip(-0., 0, 6) = -0., NaN stays NaN, lo > hi gives hi.

    The bounds are literals converted to the tensor's dtype (see `_clip_bound`). TVM's
    lowering gives clip(NaN, 0, 6) = 6 and clip(-0., 0, 6) = +0. (measured): differences
    tvtv reports.

    Under per-operation no-signed-zeros (`ctx.zero_signs_free`: LLVM's `nsz` on every
    operation, docs/float-models.md) the sign of a zero result is insignificant, and a zero
    result takes the sign of TVM's `max(min(x, hi), lo)` (`T.min`/`T.max` are fcmp + select:
    clip(-0., -1, 0) = +0), as tanh's does: the source is then evaluated as one of the runs
    nsz allows, the one TVM computes. Only for ordered float bounds, where both formulas
    clamp to the same value and a zero result is a zero on both sides.
    """
    x = tensor_arg(args, 0, call)
    ty = out_type(call)
    dom = ctx.dom(x.dtype)
    lo = _clip_bound(ctx, args[1], x.dtype, "lower")
    hi = _clip_bound(ctx, args[2], x.dtype, "upper")
    bounds = [getattr(a, "concrete", None) for a in args[1:3]]
    tvm_zero_sign = ctx.zero_signs_free and is_float(x.dtype) \
        and None not in bounds and float(bounds[0]) <= float(bounds[1])

    def clip(v: Term) -> Term:
        t = zf.If(dom.lt(v, lo), lo, v)
        r = zf.If(dom.gt(t, hi), hi, t)
        if tvm_zero_sign:
            m = zf.If(dom.lt(v, hi), v, hi)
            r = zf.If(dom.eq(r, dom.const(0.0)), zf.If(dom.gt(m, lo), m, lo), r)
        return r
    return elementwise(ty.shape, ty.dtype, [x], clip)


@register("relax.astype")
def encode_astype(ctx: EncodeContext, call: OpCall, args: list) -> object:
    """astype as numpy: float->float RNE keeping ±0/inf/NaN; float->int truncates, NaN/out of range UB; to bool: x != 0.

    Int to int wraps; bool to numbers is 0/1; NaN converts to True. Float to int out of range
    is UB because TVM's VM returns values that depend on the tensor's length there (LLVM
    fptosi poison: measured, tests/test_casts.py). The conversions are the float model's
    `cast`: bit-exact in the IEEE model; in the abstract model the limit/truncated/precision
    split of mlir-tv §4.1 along float16|bfloat16 < float32 < float64 (docs/float-models.md);
    the identity between float dtypes in the real model.
    """
    x = tensor_arg(args, 0, call)
    ty = out_type(call)
    want = call.attrs.get("dtype")
    if want is not None and str(want) != ty.dtype:
        raise Unsupported(f"astype to {want} with result type {ty}")
    return elementwise(ty.shape, ty.dtype, [x],
                        lambda v: ctx.model.cast(v, x.dtype, ty.dtype))


# ---------------------------------------------------------------------------------------------
# nn activations
# ---------------------------------------------------------------------------------------------
def _float_unary(ctx: EncodeContext, call: OpCall, args: list,
                 fn: Callable[[ScalarDomain, Term], Term]) -> Tensor:
    x = tensor_arg(args, 0, call)
    _require(is_float(x.dtype), call, x.dtype)
    return _unary_map(ctx, call, args, fn)


@register("relax.nn.relu")
def encode_relu(ctx: EncodeContext, call: OpCall, args: list) -> object:
    """numpy.maximum(x, 0): relu(-0.) = +0., relu(NaN) = NaN (TVM's lowering gives 0 for NaN); ints max(x, 0)."""
    return _unary_map(ctx, call, args, lambda dom, v: dom.maximum(v, dom.zero()))


@register("relax.nn.leakyrelu")
def encode_leakyrelu(ctx: EncodeContext, call: OpCall, args: list) -> object:
    """x if x > 0 else alpha * x (PyTorch's and TVM's definition): leakyrelu(-0.) = -0., NaN stays NaN; float only.

    The doc's formula max(x, 0) + alpha * min(x, 0) agrees except on signed zeros.
    """
    alpha = float(call.attrs.get("alpha", 0.01))
    return _float_unary(ctx, call, args, lambda dom, v: zf.If(
        dom.gt(v, dom.zero()), v, dom.mul(dom.const(alpha), v)))


@register("relax.nn.prelu")
def encode_prelu(ctx: EncodeContext, call: OpCall, args: list) -> object:
    """x if x > 0 else alpha[c] * x, c the index along `axis` (alpha of shape (C,) or (1,)); float only.

    prelu(-0.) = alpha * -0.; NaN stays NaN. Other alpha shapes are unsupported.
    """
    x = tensor_arg(args, 0, call)
    alpha = tensor_arg(args, 1, call)
    ty = out_type(call)
    _require(is_float(x.dtype), call, x.dtype)
    if alpha.dtype != x.dtype:
        raise Unsupported(f"prelu with a {alpha.dtype} alpha for {x.dtype} data")
    axis = norm_axis(int(call.attrs.get("axis", 1)), x.ndim)
    if not 0 <= axis < x.ndim:
        raise Unsupported(f"prelu axis {call.attrs.get('axis')} for rank {x.ndim}")
    if alpha.ndim != 1 or alpha.shape[0] not in (1, x.shape[axis]):
        raise Unsupported(f"prelu alpha of shape {alpha.shape} for data {x.shape}, axis {axis}")
    dom = ctx.dom(x.dtype)
    per_channel = alpha.shape[0] != 1

    def elem(ix: list) -> Term:
        v = x.at(ravel(ix, x.shape))
        a = alpha.at(ix[axis]) if per_channel else alpha.at(0)
        return zf.If(dom.gt(v, dom.zero()), v, dom.mul(a, v))
    return Tensor.from_fn(ty.shape, ty.dtype, elem)


def gelu(dom: ScalarDomain, x: Term) -> Term:
    """0.5 * x * (1 + erf(x * 0.5**0.5)), evaluated in this order in the dtype."""
    e = dom.unary("erf", dom.mul(x, dom.const(0.5 ** 0.5)))
    return dom.mul(dom.mul(dom.const(0.5), x), dom.add(dom.one(), e))


@register("relax.nn.gelu")
def encode_gelu(ctx: EncodeContext, call: OpCall, args: list) -> object:
    """Relax's formula 0.5 * x * (1 + erf(x * 0.5**0.5)), left to right in the dtype: gelu(±0) = ±0, gelu(-inf) = NaN.

    gelu(inf) = inf and NaN stays NaN; float only.
    """
    return _float_unary(ctx, call, args, gelu)


def gelu_tanh(dom: ScalarDomain, x: Term) -> Term:
    """0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3))), x^3 = (x * x) * x."""
    cube = dom.mul(dom.mul(x, x), x)
    inner = dom.mul(dom.const(math.sqrt(2.0 / math.pi)),
                    dom.add(x, dom.mul(dom.const(0.044715), cube)))
    return dom.mul(dom.mul(dom.const(0.5), x), dom.add(dom.one(), dom.unary("tanh", inner)))


@register("relax.nn.gelu_tanh")
def encode_gelu_tanh(ctx: EncodeContext, call: OpCall, args: list) -> object:
    """Relax's 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3))), x^3 = (x*x)*x, in the dtype: gelu_tanh(-inf) = NaN.

    gelu_tanh(±0) = ±0, gelu_tanh(inf) = inf; float only.
    """
    return _float_unary(ctx, call, args, gelu_tanh)


@register("relax.nn.silu")
def encode_silu(ctx: EncodeContext, call: OpCall, args: list) -> object:
    """x * sigmoid(x) in the dtype: silu(±0) = ±0, silu(inf) = inf, silu(-inf) = -inf * 0 = NaN; float only."""
    return _float_unary(ctx, call, args, lambda dom, v: dom.mul(v, dom.unary("sigmoid", v)))


SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946


def selu(dom: ScalarDomain, x: Term) -> Term:
    """scale * (x if x > 0 else alpha * (exp(x) - 1))."""
    neg = dom.mul(dom.const(SELU_ALPHA), dom.sub(dom.unary("exp", x), dom.one()))
    return dom.mul(dom.const(SELU_SCALE), zf.If(dom.gt(x, dom.zero()), x, neg))


@register("relax.nn.selu")
def encode_selu(ctx: EncodeContext, call: OpCall, args: list) -> object:
    """Relax's lambda * (x if x > 0 else alpha * (exp(x) - 1)) in the dtype: selu(±0) = +0., NaN stays NaN; float only.

    lambda and alpha are PyTorch's constants (as TVM's lowering); selu(-inf) = -lambda * alpha.
    """
    return _float_unary(ctx, call, args, selu)


def softplus(dom: ScalarDomain, x: Term, beta: float, threshold: float) -> Term:
    """x if beta * x > threshold else (1 / beta) * log(1 + exp(beta * x))."""
    b = dom.const(beta)
    bx = dom.mul(b, x)
    smooth = dom.mul(dom.div(dom.one(), b),
                     dom.unary("log", dom.add(dom.one(), dom.unary("exp", bx))))
    return zf.If(dom.gt(bx, dom.const(threshold)), x, smooth)


@register("relax.nn.softplus")
def encode_softplus(ctx: EncodeContext, call: OpCall, args: list) -> object:
    """x where beta * x > threshold (PyTorch's rule), else (1 / beta) * log(1 + exp(beta * x)) in the dtype; float only.

    softplus(inf) = inf, softplus(-inf) = +0 (for beta > 0), NaN stays NaN. The doc only says
    the function is "approximated as linear" beyond the threshold; PyTorch and TVM's lowering
    compare beta * x > threshold.
    """
    beta = float(call.attrs.get("beta", 1.0))
    threshold = float(call.attrs.get("threshold", 20.0))
    return _float_unary(ctx, call, args, lambda dom, v: softplus(dom, v, beta, threshold))
