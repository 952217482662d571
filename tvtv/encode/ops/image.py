"""Image ops: relax.image.resize2d (nearest_neighbor and linear).

The specification is the ONNX Resize formula as TVM documents it (topi/image/resize.py): an
output position x maps to the input coordinate
  half_pixel          (x + 0.5) * (in / out) - 0.5
  pytorch_half_pixel  as half_pixel if out > 1, else 0.0
  align_corners       (in - 1) / (out - 1) * x
  asymmetric          (in / out) * x
  tf_half_pixel_for_nn (x + 0.5) * (in / out)
with the arithmetic the specification fixes: float32 (scale = float32(in) / float32(out),
then the products and sums in the order written, each rounded to float32). Since every
output position and size is static, the coordinates, neighbour indices and weights are
computed here in Python with numpy float32 scalars, and each output element is a term over
the input elements: an index table (a z3 store chain over the output position) selects the
input element(s), a float table the weights.

- nearest_neighbor: the coordinate is rounded to an index by rounding_method (TVM's
  `get_closest_index`): round = round-half-to-even (TVM lowers `round` to nearbyint,
  measured: coordinate 0.5 -> 0, 1.5 -> 2), round_prefer_floor = ceil(c - 0.5),
  round_prefer_ceil = floor(c + 0.5), floor = floor(c + 1e-5), ceil = ceil(c - 1e-5)
  (TVM's epsilon; 1e-5 as a float32 constant), "" = round for align_corners and floor for
  every other mode; then clamped to [0, in - 1]. For asymmetric with floor/"" and an integer
  up-scaling factor k = out / in (TVM's `can_convert_multiply_to_intdiv`) the index is the
  integer x // k. The element is the input element itself (float16 data is computed by
  TVM as float32 and cast back, which is exact; integers of at most 16 bits likewise).
- linear: x0 = floor(c) (as an integer), t = c - float32(x0); the neighbours x0 and x0 + 1
  are clamped to [0, in - 1]; value = lerp(lerp(p00, p01, tx), lerp(p10, p11, tx), ty) with
  lerp(A, B, t) = A * (1 - t) + B * t in float32 (TVM's `_lerp`; 1 - t is a float32
  constant per position). So a weight 0 still multiplies: inf * 0 = NaN reaches the output,
  as in TVM. float16 data is cast to float32, interpolated, and rounded back to float16.
"""
from __future__ import annotations

import math
from typing import Callable, Sequence

import numpy as np
import z3

from tvtv.absfp.dtypes import INT_FORMATS, is_float
from tvtv.encode.context import EncodeContext
from tvtv.encode.ops.common import checked_result, out_type, tensor_arg
from tvtv.encode.ops.convolution import (canonical_reader, canonical_shape, canonical_tensor,
                                         check_layout)
from tvtv.encode.registry import register
from tvtv.encode.tensor import INDEX, Tensor, idx
from tvtv.errors import Unsupported
from tvtv.ir.program import OpCall

f32 = np.float32
MODES = ("half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric",
         "tf_half_pixel_for_nn")
ROUNDINGS = ("", "round", "floor", "ceil", "round_prefer_floor", "round_prefer_ceil")
MAX_OUT_DIM = 4096          # output positions per spatial dimension (tables are store chains)
EPS = f32(1e-5)


# -- the static coordinate arithmetic (float32, TVM's order of operations) --------------------

def in_coord(x: int, size_in: int, size_out: int, mode: str) -> np.float32:
    """The input coordinate of output position x (topi `get_inx`), in float32."""
    scale = f32(size_in) / f32(size_out)
    fx = f32(x)
    with np.errstate(all="ignore"):
        if mode == "half_pixel":
            return (fx + f32(0.5)) * scale - f32(0.5)
        if mode == "pytorch_half_pixel":
            return (fx + f32(0.5)) * scale - f32(0.5) if size_out > 1 else f32(0.0)
        if mode == "align_corners":
            return f32(size_in - 1) / f32(size_out - 1) * fx
        if mode == "asymmetric":
            return scale * fx
        if mode == "tf_half_pixel_for_nn":
            return (fx + f32(0.5)) * scale
    raise Unsupported(f"relax.image.resize2d coordinate_transformation_mode={mode!r}")


def int_div_factor(size_in: int, size_out: int) -> int | None:
    """k when TVM replaces asymmetric floor by the integer division x // k (out = k * in)."""
    div = size_out / size_in
    if div % 1 != 0:
        return None
    if div > 1 / (1e-5 * size_in + 1e-5):
        return None
    return int(div)


def nearest_index(x: int, size_in: int, size_out: int, mode: str, rounding: str) -> int:
    """The clamped input index of output position x for nearest_neighbor."""
    if rounding == "":
        rounding = "round" if mode == "align_corners" else "floor"
    k = int_div_factor(size_in, size_out) if mode == "asymmetric" and rounding == "floor" else None
    if k is not None:
        i = x // k
    else:
        c = in_coord(x, size_in, size_out, mode)
        if rounding == "round":
            r = np.rint(c)                        # nearbyint: half to even
        elif rounding == "round_prefer_floor":
            r = np.ceil(c - f32(0.5))
        elif rounding == "round_prefer_ceil":
            r = np.floor(c + f32(0.5))
        elif rounding == "floor":
            r = np.floor(c + EPS)
        elif rounding == "ceil":
            r = np.ceil(c - EPS)
        else:
            raise Unsupported(f"relax.image.resize2d rounding_method={rounding!r}")
        if not np.isfinite(r):
            raise Unsupported(f"relax.image.resize2d: non-finite coordinate {c} ({mode})")
        i = int(r)
    return min(max(i, 0), size_in - 1)


def linear_taps(x: int, size_in: int, size_out: int, mode: str) -> tuple[int, int, np.float32, np.float32]:
    """(clamped x0, clamped x0 + 1, 1 - t, t) of output position x for linear."""
    c = in_coord(x, size_in, size_out, mode)
    if not np.isfinite(c):
        raise Unsupported(f"relax.image.resize2d: non-finite coordinate {c} ({mode})")
    x0 = int(np.floor(c))
    t = c - f32(x0)
    clamp = lambda i: min(max(i, 0), size_in - 1)  # noqa: E731
    return clamp(x0), clamp(x0 + 1), f32(1.0) - t, t


# -- tables over a (symbolic) output position ------------------------------------------------

def table(values: Sequence[z3.ExprRef], sort: z3.SortRef) -> Callable[[z3.BitVecRef], z3.ExprRef]:
    """The function position -> values[position] as a z3 term (a store chain when it varies)."""
    first = values[0]
    if all(z3.eq(v, first) for v in values):
        return lambda _p: first
    arr = z3.K(INDEX, first)
    for k, v in enumerate(values):
        if not z3.eq(v, first):
            arr = z3.Store(arr, idx(k), v)
    return lambda p: z3.Select(arr, p)


def index_table(ints: Sequence[int]) -> Callable[[z3.BitVecRef], z3.ExprRef]:
    if all(i == k for k, i in enumerate(ints)):
        return lambda p: p
    return table([idx(i) for i in ints], INDEX)


# -- the encoder -----------------------------------------------------------------------------

def _attr(call: OpCall, name: str, default):
    v = call.attrs.get(name, default)
    return default if v is None else v


@register("relax.image.resize2d")
def encode_resize2d(ctx: EncodeContext, call: OpCall, args: list) -> Tensor:
    """ONNX/TVM Resize in float32 with static coordinates: c = (x+0.5)*(in/out)-0.5 (half_pixel; pytorch_half_pixel: 0 if out=1), (in-1)/(out-1)*x (align_corners), (in/out)*x (asymmetric), (x+0.5)*(in/out) (tf_half_pixel_for_nn); nearest_neighbor rounds c by rounding_method (round = half-to-even, floor/ceil with TVM's 1e-5 epsilon, ""= round for align_corners else floor; asymmetric integer up-scaling = x // k) and clamps, the element is the input's; linear = lerp(lerp(p00,p01,tx),lerp(p10,p11,tx),ty), lerp(A,B,t) = A*(1-t)+B*t in float32 with clamped neighbours floor(c), floor(c)+1 and t = c - floor(c); layouts NCHW/NHWC; float32/float16 (computed in float32, rounded back), nearest also on integers of <= 16 bits; cubic, tf_crop_and_resize, out_dtype != data dtype, align_corners with out=1 and linear integers are Unsupported.

    The weights being float32 numbers computed per position is the specification's own
    choice of arithmetic (TVM's topi computes exactly these float32 operations at run time;
    measured on the VM: bitwise equal). TVM's `round` is nearbyint (half to even), unlike
    ONNX's round_prefer_*; the measured rounding is the one encoded. TVM clamps the source
    indices to the input (ONNX's half_pixel with out > in reaches -0.25 -> index -1: clamped
    to 0 here, as TVM).
    """
    x = tensor_arg(args, 0, call)
    ty = out_type(call)
    op = call.op
    method = str(_attr(call, "method", "linear"))
    mode = str(_attr(call, "coordinate_transformation_mode", "half_pixel"))
    rounding = str(_attr(call, "rounding_method", "round"))
    if method not in ("nearest_neighbor", "linear"):
        raise Unsupported(f"{op} method={method!r}")
    if mode not in MODES:
        raise Unsupported(f"{op} coordinate_transformation_mode={mode!r}")
    if method == "nearest_neighbor" and rounding not in ROUNDINGS:
        raise Unsupported(f"{op} rounding_method={rounding!r}")
    if ty.dtype != x.dtype:
        raise Unsupported(f"{op} out_dtype={ty.dtype} on {x.dtype} data (TVM's legalization "
                          "ignores out_dtype)")
    if is_float(x.dtype):
        if x.dtype not in ("float32", "float16"):
            raise Unsupported(f"{op} on {x.dtype} data")
    elif method == "linear" or x.dtype not in INT_FORMATS or INT_FORMATS[x.dtype][0] > 16:
        raise Unsupported(f"{op} method={method!r} on {x.dtype} data")
    canon = "NCHW"
    layout = check_layout(str(_attr(call, "layout", "NCHW")), canon, "data")
    if layout not in ("NCHW", "NHWC"):
        raise Unsupported(f"{op} layout={layout!r}")
    n_b, ch, h_in, w_in = canonical_shape(x.shape, layout, canon)
    n_o, c_o, h_out, w_out = canonical_shape(ty.shape, layout, canon)
    if (n_o, c_o) != (n_b, ch):
        raise Unsupported(f"{op} result type {ty} for data {x.shape}")
    if max(h_out, w_out) > MAX_OUT_DIM:
        raise Unsupported(f"{op} output size {h_out}x{w_out} (> {MAX_OUT_DIM} per dimension)")
    if mode == "align_corners" and min(h_out, w_out) == 1:
        raise Unsupported(f"{op} coordinate_transformation_mode='align_corners' with an output "
                          "size of 1 (TVM divides by out - 1 = 0)")
    if math.prod(ty.shape) == 0:
        return checked_result(call, Tensor.from_fn(ty.shape, ty.dtype,
                                                   lambda ix: ctx.dom(ty.dtype).zero()))
    read = canonical_reader(x, layout, canon)

    if method == "nearest_neighbor":
        ys = index_table([nearest_index(i, h_in, h_out, mode, rounding) for i in range(h_out)])
        xs = index_table([nearest_index(i, w_in, w_out, mode, rounding) for i in range(w_out)])
        return checked_result(call, canonical_tensor(
            ty.shape, layout, canon, ty.dtype,
            lambda ix: read([ix[0], ix[1], ys(ix[2]), xs(ix[3])])))

    dom = ctx.dom("float32")
    cast_in = ((lambda v: v) if x.dtype == "float32"
               else (lambda v: ctx.model.cast(v, x.dtype, "float32")))
    cast_out = ((lambda v: v) if x.dtype == "float32"
                else (lambda v: ctx.model.cast(v, "float32", x.dtype)))

    def tables(n_in: int, n_out: int):
        taps = [linear_taps(i, n_in, n_out, mode) for i in range(n_out)]
        lo = index_table([t[0] for t in taps])
        hi = index_table([t[1] for t in taps])
        one_minus = table([dom.const(float(t[2])) for t in taps], dom.sort)
        frac = table([dom.const(float(t[3])) for t in taps], dom.sort)
        return lo, hi, one_minus, frac

    y0, y1, ywa, ywb = tables(h_in, h_out)
    x0, x1, xwa, xwb = tables(w_in, w_out)

    def lerp(a: z3.ExprRef, b: z3.ExprRef, wa: z3.ExprRef, wb: z3.ExprRef) -> z3.ExprRef:
        return dom.add(dom.mul(a, wa), dom.mul(b, wb))

    def element(ix: list[z3.BitVecRef]) -> z3.ExprRef:
        nb, c, yo, xo = ix
        p = lambda yy, xx: cast_in(read([nb, c, yy, xx]))  # noqa: E731
        xa, xb = xwa(xo), xwb(xo)
        top = lerp(p(y0(yo), x0(xo)), p(y0(yo), x1(xo)), xa, xb)
        bottom = lerp(p(y1(yo), x0(xo)), p(y1(yo), x1(xo)), xa, xb)
        return cast_out(lerp(top, bottom, ywa(yo), ywb(yo)))

    return checked_result(call, canonical_tensor(ty.shape, layout, canon, ty.dtype, element))
