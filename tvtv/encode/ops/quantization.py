"""Affine (de)quantization: relax.quantize and relax.dequantize (ONNX QuantizeLinear /
DequantizeLinear as the Relax docstrings state them).

Relax's docstrings (python/tvm/relax/op/qdq.py):
    quantize:   Q = clamp(round(input / scale) + zero_point, out_dtype::min, out_dtype::max)
    dequantize: out = clamp(scale * (input - zero_point), out_dtype::min, out_dtype::max)
with `scale` and `zero_point` scalars (0-d, or 1-element) or vectors along `axis` (per-axis
quantization, ONNX's 1-D case). The docstrings do not name the rounding: ONNX's is round half
to even, which TVM's `T.round` also computes (measured: 0.5 -> 0, 2.5 -> 2, -2.5 -> -2,
127.5 -> 128 in int16). The arithmetic of the formulas is read as exact where it is on
integers (`+ zero_point`, `input - zero_point`) and in the stated float dtypes elsewhere.

Supported (TVM's type inference admits more; the rest is `Unsupported`, not guessed):
  * quantize: float16/float32 data and scale, int8 zero_point, out_dtype int8, uint8, int16,
    uint16 (float8 outputs and float16 zero points are unsupported);
  * dequantize: int8/uint8/int16/uint16/int32 data with an int8 zero_point, or float16/float32
    data with an int8 or float16 zero_point; float16/float32 scale; out_dtype float16/float32.
"""
from __future__ import annotations

from typing import Callable

import z3

from tvtv import z3fast as zf
from tvtv.absfp.dtypes import FLOAT_FORMATS, INT_FORMATS, is_float
from tvtv.encode.context import EncodeContext
from tvtv.encode.ops.common import checked_result, tensor_arg
from tvtv.encode.ops.manipulate import literal_axis
from tvtv.encode.registry import register
from tvtv.encode.tensor import Tensor
from tvtv.errors import Unsupported
from tvtv.ir.program import OpCall

Index = z3.BitVecRef
Term = z3.ExprRef
Reader = Callable[[list[Index]], Term]

_QUANT_OUT = ("int8", "uint8", "int16", "uint16")
_DEQUANT_INT_IN = ("int8", "uint8", "int16", "uint16", "int32")
_FLOATS = ("float16", "float32")


# ------------------------------------------------------------------------------------------------
# helpers
# ------------------------------------------------------------------------------------------------
def _param_reader(p: Tensor, x: Tensor, axis: int, call: OpCall, what: str) -> Reader:
    """How an output element at multi-index ix reads a quantization parameter: a scalar (0-d
    or one element) for every element, or a vector of data.shape[axis] elements at ix[axis]."""
    if p.numel == 1 and p.ndim <= 1:
        return lambda ix: p.at(0)
    if p.ndim == 1 and p.shape[0] == x.shape[axis]:
        return lambda ix: p.at(ix[axis])
    raise Unsupported(f"{call.op}: {what} of shape {p.shape} for data {x.shape}, axis {axis}")


def _out_dtype(call: OpCall, allowed: tuple[str, ...]) -> str:
    od = str(call.attrs.get("out_dtype", ""))
    if od not in allowed:
        raise Unsupported(f"{call.op} with out_dtype {od!r}")
    return od


def _require_dtype(t: Tensor, allowed: tuple[str, ...], call: OpCall, what: str) -> None:
    if t.dtype not in allowed:
        raise Unsupported(f"{call.op} with {what} of dtype {t.dtype}")


def _int_range(dtype: str) -> tuple[int, int]:
    bits, signed = INT_FORMATS[dtype]
    return (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)


def _sum_dtype(wide: str, od: str) -> str:
    """The float dtype in which `rint(q) + zero_point` and the clamp are exact: the
    quotient's own where its integers cover [out::min - 128, out::max + 128] exactly
    (float32: up to 2^24; float16 for 8-bit outputs: up to 2048; a larger |rint(q)| is
    clamped either way), else float32. The same dtype as TVM's where that is exact, so both
    sides build alike terms (float16 int8 quantize was left unknown with float32 sums)."""
    return wide if wide == "float32" or od in ("int8", "uint8") else "float32"


def _wider(a: str, b: str) -> str:
    """The dtype numpy's promotion gives two float dtypes of float16/float32."""
    return "float32" if "float32" in (a, b) else "float16"


# ------------------------------------------------------------------------------------------------
# quantize
# ------------------------------------------------------------------------------------------------
@register("relax.quantize")
def encode_quantize(ctx: EncodeContext, call: OpCall, args: list) -> Tensor:
    """quantize is ONNX QuantizeLinear: out = clamp(rint(x / scale) + zero_point, out::min, out::max), rint half to even, x / scale in the wider float dtype, + zero_point exact; NaN quotients (NaN x or scale, 0 / 0) are UB, ±inf saturates; float16/float32 data and scale, int8 zero_point, out int8/uint8/int16/uint16.

    Details. scale and zero_point are scalars (0-d or one element) or vectors along `axis`
    (per-axis). rint(x / scale) + zero_point is the exact integer sum (computed in a float
    dtype where it is exact wherever the clamp keeps it, `_sum_dtype`: float32 quotients
    beyond 2^24 give sums far outside every range, and the clamp the same). NaN has no
    integer: the docstring's clamp leaves it undefined (ONNX too), so UB; TVM 0.27 gives 127
    for int8 and -32768 for int16 from float16 data (measured). Float8 out_dtypes (which
    TVM's inference allows) and float16 zero points are unsupported.

    Measured on the VM (TVM 0.27, LLVM): rounding is half to even (2.5 -> 2, -2.5 -> -2,
    0.5 -> 0), ±inf and ±FLT_MAX saturate. Findings with float16 data *and* float16 scale
    (TVM then computes `+ zero_point` and the clamp in float16): out_dtype int16 gives
    quantize(60000) = -32768 (the clamp's bound 32767 rounds to 32768 in float16, whose cast
    overflows), and quantize(4094, zero_point 1) = 4096 (exact: 4095); out_dtype uint16 fails
    to legalize (the literal 65535 exceeds float16)."""
    x, scale, zp = (tensor_arg(args, k, call) for k in range(3))
    _require_dtype(x, _FLOATS, call, "data")
    _require_dtype(scale, _FLOATS, call, "scale")
    _require_dtype(zp, ("int8",), call, "zero_point")
    od = _out_dtype(call, _QUANT_OUT)
    a = literal_axis(call.attrs.get("axis", -1), x.ndim, call)
    s_at = _param_reader(scale, x, a, call, "scale")
    z_at = _param_reader(zp, x, a, call, "zero_point")
    wide = _wider(x.dtype, scale.dtype)
    acc = _sum_dtype(wide, od)
    dw, da = ctx.dom(wide), ctx.dom(acc)
    cast = ctx.model.cast
    lo, hi = (da.const(float(v)) for v in _int_range(od))

    def elem(ix: list[Index]) -> Term:
        q = dw.div(cast(x.at_multi(ix), x.dtype, wide), cast(s_at(ix), scale.dtype, wide))
        r = cast(dw.unary("round", q), wide, acc)                 # exact widening
        t = da.add(r, cast(z_at(ix), zp.dtype, acc))              # exact where the clamp keeps it
        clamped = zf.If(da.lt(t, lo), lo, zf.If(da.gt(t, hi), hi, t))
        # an integral value in range: the cast is exact; NaN reaches it unclamped and the
        # model's cast records the UB (float -> int of NaN)
        return cast(clamped, acc, od)
    return checked_result(call, Tensor.from_fn(x.shape, od, elem))


# ------------------------------------------------------------------------------------------------
# dequantize
# ------------------------------------------------------------------------------------------------
def _difference(ctx: EncodeContext, x: Tensor, zp: Tensor, xv: Term, zv: Term) -> Term:
    """input - zero_point as a float32: the exact integer difference rounded once (int data),
    or float32(x) - float32(zero_point) rounded once (float data)."""
    cast = ctx.model.cast
    if is_float(x.dtype):
        f32 = ctx.dom("float32")
        return f32.sub(cast(xv, x.dtype, "float32"), cast(zv, zp.dtype, "float32"))
    # int32 data needs 34 bits for the exact difference: int64; narrower data fits int32
    # (TVM's own compute dtype, so both sides build the same terms there)
    mid = "int64" if x.dtype == "int32" else "int32"
    diff = ctx.dom(mid).sub(cast(xv, x.dtype, mid), cast(zv, zp.dtype, mid))
    return cast(diff, mid, "float32")


@register("relax.dequantize")
def encode_dequantize(ctx: EncodeContext, call: OpCall, args: list) -> Tensor:
    """dequantize is ONNX DequantizeLinear with Relax's clamp: out = round_out(clamp(float32(x - zero_point) * float32(scale), -out::max, out::max)), x - zero_point exact for int data, NaN stays NaN, ±inf clamps to ±max; int8/uint8/int16/uint16/int32 data (int8 zero_point) or float16/float32 data (int8/float16 zero_point), out float16/float32.

    Details. The docstring's clamp bounds out_dtype::min/max are read as the dtype's finite
    range (TVM's own float16 lowering clamps to ±65504). The product is computed in float32
    (TVM's stated compute dtype; ONNX's reference computes in float32 too) and rounded once
    more to float16 for a float16 out_dtype. Integer data with a float16 zero_point is
    unsupported (TVM converts the data to float16 there), as are float8 data.

    Findings, measured on the VM (TVM 0.27): (1) out_dtype float32 is not clamped:
    dequantize(127, scale=FLT_MAX, zero_point 0) = inf (spec: FLT_MAX); (2) int32 data: TVM
    subtracts in int32, which wraps: dequantize(-2^31, scale 1, zero_point 1) =
    2147483648.0 (spec: -2147483648.0); (3) out_dtype float16 maps NaN to 65504 (its clamp
    is T.max(T.min(NaN, 65504), -65504)): dequantize(3, scale=NaN) = 65504 (spec: NaN)."""
    x, scale, zp = (tensor_arg(args, k, call) for k in range(3))
    _require_dtype(x, _DEQUANT_INT_IN + _FLOATS, call, "data")
    _require_dtype(scale, _FLOATS, call, "scale")
    _require_dtype(zp, ("int8", "float16") if is_float(x.dtype) else ("int8",), call,
                   "zero_point")
    od = _out_dtype(call, _FLOATS)
    a = literal_axis(call.attrs.get("axis", -1), x.ndim, call)
    s_at = _param_reader(scale, x, a, call, "scale")
    z_at = _param_reader(zp, x, a, call, "zero_point")
    f32 = ctx.dom("float32")
    cast = ctx.model.cast
    bound = FLOAT_FORMATS[od].max_value
    hi, lo = f32.const(bound), f32.const(-bound)

    def elem(ix: list[Index]) -> Term:
        d = _difference(ctx, x, zp, x.at_multi(ix), z_at(ix))
        p = f32.mul(d, cast(s_at(ix), scale.dtype, "float32"))
        clamped = zf.If(f32.lt(p, lo), lo, zf.If(f32.gt(p, hi), hi, p))   # NaN stays NaN
        return cast(clamped, "float32", od)
    return checked_result(call, Tensor.from_fn(x.shape, od, elem))
