"""Image ops: relax.image.resize2d and resize3d (nearest_neighbor, linear, cubic), affine_grid, grid_sample.

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
- cubic (ONNX Resize mode "cubic", cubic_coeff_a = cubic_alpha, exclude_outside =
  cubic_exclude): x0 = floor(c), t = c - floor(c); the taps x0 - 1 .. x0 + 2, clamped to
  [0, in - 1], weigh (Keys' cubic convolution kernel with coefficient a)
    w0 = a*((t3 - 2*t2) + t)              w1 = ((a+2)*t3 - (3+a)*t2) + 1
    w2 = (-(a+2)*t3 + (3+2a)*t2) - a*t    w3 = (-a)*t3 + a*t2,   t2 = t*t, t3 = t2*t
  in float32 (topi's `_cubic_spline_weights`; the constants a, a+2, 3+a, 3+2a, -a computed in
  double from the attribute and rounded once to float32); exclude: a tap outside
  [0, in - 1] weighs 0 and the others are divided by ((w0 + w1) + w2) + w3. The value is
  the separable sum kernel(rows) with kernel(v, w) = ((v0*w0 + v1*w1) + v2*w2) + v3*w3 in
  float32 (topi's `_cubic_kernel`), the innermost over w, the outermost over the first
  spatial dimension. ONNX's formula for the coefficients is another arrangement of the same
  polynomials (checked against a float64 ONNX reference in the tests); its reference
  implementation takes the taps x0 - 2 .. x0 + 1 with t = 1 at an integral coordinate,
  where the weights are (0, 0, 1, 0): the same value except which clamped neighbour gets the
  0 weight (only inf/NaN data can tell: 0 * inf = NaN). Zero weights multiply here too.
"""
from __future__ import annotations

import math
from fractions import Fraction
from typing import Callable, Sequence

import numpy as np
import z3

from tvtv import z3fast as zf
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

def in_coord(x: int, size_in: int, size_out: int, mode: str,
             op: str = "relax.image.resize2d") -> np.float32:
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
    raise Unsupported(f"{op} coordinate_transformation_mode={mode!r}")


def int_div_factor(size_in: int, size_out: int) -> int | None:
    """k when TVM replaces asymmetric floor by the integer division x // k (out = k * in)."""
    div = size_out / size_in
    if div % 1 != 0:
        return None
    if div > 1 / (1e-5 * size_in + 1e-5):
        return None
    return int(div)


def nearest_index(x: int, size_in: int, size_out: int, mode: str, rounding: str,
                  op: str = "relax.image.resize2d", int_div: bool = True) -> int:
    """The clamped input index of output position x for nearest_neighbor. `int_div`: the
    asymmetric floor of an integer up-scaling is x // k (resize2d; topi's resize3d has no
    such path and computes floor(c + 1e-5))."""
    if rounding == "":
        rounding = "round" if mode == "align_corners" else "floor"
    k = (int_div_factor(size_in, size_out)
         if int_div and mode == "asymmetric" and rounding == "floor" else None)
    if k is not None:
        i = x // k
    else:
        c = in_coord(x, size_in, size_out, mode, op)
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
            raise Unsupported(f"{op} rounding_method={rounding!r}")
        if not np.isfinite(r):
            raise Unsupported(f"{op}: non-finite coordinate {c} ({mode})")
        i = int(r)
    return min(max(i, 0), size_in - 1)


def linear_taps(x: int, size_in: int, size_out: int, mode: str,
                op: str = "relax.image.resize2d") -> tuple[int, int, np.float32, np.float32]:
    """(clamped x0, clamped x0 + 1, 1 - t, t) of output position x for linear."""
    c = in_coord(x, size_in, size_out, mode, op)
    if not np.isfinite(c):
        raise Unsupported(f"{op}: non-finite coordinate {c} ({mode})")
    x0 = int(np.floor(c))
    t = c - f32(x0)
    clamp = lambda i: min(max(i, 0), size_in - 1)  # noqa: E731
    return clamp(x0), clamp(x0 + 1), f32(1.0) - t, t


def cubic_coefficients(alpha: float) -> tuple[np.float32, ...]:
    """(a, a + 2, 3 + a, 3 + 2a, -a) for the attribute a (a double): each computed in double
    and rounded once to float32, as the constants of topi's `_cubic_spline_weights`."""
    return (f32(alpha), f32(alpha + 2), f32(3 + alpha), f32(3 + 2 * alpha), f32(-alpha))


def cubic_weights(t: np.float32, alpha: float) -> list[np.float32]:
    """The 4 cubic-convolution weights of the taps floor(c) - 1 .. floor(c) + 2 at t = c -
    floor(c) (Keys' kernel with coefficient a), in float32 in topi's order:
    w0 = a*((t3 - 2*t2) + t), w1 = ((a+2)*t3 - (3+a)*t2) + 1,
    w2 = (-(a+2)*t3 + (3+2a)*t2) - a*t, w3 = (-a)*t3 + a*t2, with t2 = t*t, t3 = t2*t."""
    a, a2, a3, a23, na = cubic_coefficients(alpha)
    with np.errstate(all="ignore"):
        t2 = t * t
        t3 = t2 * t
        return [a * ((t3 - f32(2.0) * t2) + t),
                (a2 * t3 - a3 * t2) + f32(1.0),
                (-a2 * t3 + a23 * t2) - a * t,
                na * t3 + a * t2]


def cubic_taps(x: int, size_in: int, size_out: int, mode: str, alpha: float, exclude: bool,
               op: str = "relax.image.resize2d") -> tuple[list[int], list[np.float32]]:
    """(4 clamped tap indices, 4 float32 weights) of output position x for cubic. With
    `exclude` the weights of the taps outside [0, in - 1] are 0 and the others are divided by
    the sum ((w0 + w1) + w2) + w3 of the kept weights (float32)."""
    c = in_coord(x, size_in, size_out, mode, op)
    if not np.isfinite(c):
        raise Unsupported(f"{op}: non-finite coordinate {c} ({mode})")
    x0 = int(np.floor(c))
    w = cubic_weights(c - np.floor(c), alpha)
    taps = [x0 - 1 + i for i in range(4)]
    if exclude:
        w = [f32(0.0) if not 0 <= j < size_in else wi for j, wi in zip(taps, w)]
        total = ((w[0] + w[1]) + w[2]) + w[3]
        with np.errstate(all="ignore"):
            w = [wi / total for wi in w]
    return [min(max(j, 0), size_in - 1) for j in taps], w


# -- tables over a (symbolic) output position ------------------------------------------------

def table(values: Sequence[z3.ExprRef], sort: z3.SortRef) -> Callable[[z3.BitVecRef], z3.ExprRef]:
    """The function position -> values[position] as a z3 term (a store chain when it varies)."""
    first = values[0]
    if all(z3.eq(v, first) for v in values):
        return lambda _p: first
    arr = z3.K(INDEX, first)
    for k, v in enumerate(values):
        if not z3.eq(v, first):
            arr = zf.Store(arr, idx(k), v)
    return lambda p: zf.Select(arr, p)


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
    """ONNX/TVM Resize in float32 with static coordinates: c = (x+0.5)*(in/out)-0.5 (half_pixel; pytorch_half_pixel: 0 if out=1), (in-1)/(out-1)*x (align_corners), (in/out)*x (asymmetric), (x+0.5)*(in/out) (tf_half_pixel_for_nn); nearest_neighbor rounds c by rounding_method (round = half-to-even, floor/ceil with TVM's 1e-5 epsilon, ""= round for align_corners else floor; asymmetric integer up-scaling = x // k) and clamps, the element is the input's; linear = lerp(lerp(p00,p01,tx),lerp(p10,p11,tx),ty), lerp(A,B,t) = A*(1-t)+B*t in float32 with clamped neighbours floor(c), floor(c)+1 and t = c - floor(c); cubic (ONNX cubic, a = cubic_alpha) = K(K(row_-1), ..., K(row_2); wy), K(v; w) = ((v0*w0 + v1*w1) + v2*w2) + v3*w3 in float32 over the clamped taps floor(c)-1..floor(c)+2 with the float32 weights a*((t3-2*t2)+t), ((a+2)*t3-(3+a)*t2)+1, (-(a+2)*t3+(3+2a)*t2)-a*t, (-a)*t3+a*t2 (t2 = t*t, t3 = t2*t), cubic_exclude: weights of taps outside the input 0, the rest divided by their sum ((w0+w1)+w2)+w3; layouts NCHW/NHWC; float32/float16 (computed in float32, rounded back), nearest also on integers of <= 16 bits; tf_crop_and_resize, out_dtype != data dtype, align_corners with out=1 and linear/cubic integers are Unsupported.

    The weights being float32 numbers computed per position is the specification's own
    choice of arithmetic (TVM's topi computes exactly these float32 operations at run time;
    measured on the VM: bitwise equal). TVM's `round` is nearbyint (half to even), unlike
    ONNX's round_prefer_*; the measured rounding is the one encoded. TVM clamps the source
    indices to the input (ONNX's half_pixel with out > in reaches -0.25 -> index -1: clamped
    to 0 here, as TVM).

    cubic: the weights are static float32 numbers computed here in topi's order (the
    module's docstring); TVM computes the same float32 operations per element at run time
    (LegalizeOps proved; measured on the VM: bitwise equal on random and special data,
    float32 and float16, all modes, cubic_exclude 0 and 1). Finding (code generation, not
    the TIR): TVM's LLVM backend emits `llvm.fmuladd` for the weights' a*b + c; run on the
    generic x86-64 target it is unfused, but where LLVM constant-folds the static weights
    (small unrolled/vectorized output loops) it folds them fused: align_corners 3 -> 4 along
    w with cubic_exclude=1 gives the weight 0.35087717 on the VM, 0.35087714 here (1 ulp).
    Integer data (TVM: the float32 sum truncated by a cast, undefined when cubic overshoot
    leaves the integer range) is Unsupported, as for linear.
    """
    return _encode_resize(ctx, call, args, "NCHW", ("NCHW", "NHWC"), int_div=True)


@register("relax.image.resize3d")
def encode_resize3d(ctx: EncodeContext, call: OpCall, args: list) -> Tensor:
    """resize2d in three spatial dimensions (d, h, w), each coordinate as resize2d's (float32, static): nearest_neighbor rounds each by rounding_method and clamps (no integer-division path: asymmetric floor is floor(c + 1e-5)); linear = lerp(lerp(lerp(p000,p001,tx),lerp(p010,p011,tx),ty), lerp(lerp(p100,p101,tx),lerp(p110,p111,tx),ty), tz), lerp(A,B,t) = A*(1-t)+B*t in float32, clamped neighbours; cubic = resize2d's cubic kernel K along w, then h, then d (K(K(K(p; wx); wy); wz)), each dimension's weights from its own coordinate (cubic_exclude: masked and renormalised per dimension); layouts NCDHW/NDHWC; float32/float16 (computed in float32, rounded back), nearest also on integers of <= 16 bits; tf_crop_and_resize, out_dtype != data dtype, align_corners with out=1 and linear/cubic integers are Unsupported.

    The order of the trilinear lerps is topi's `_resize_3d`: along w first, then h, then d
    (ONNX's Resize leaves it open; a fixed float32 order is needed for a definite result).
    topi's resize3d, unlike resize2d, never replaces asymmetric floor by an integer division
    (`get_inx` is called without `use_int_div`), so neither does this specification.
    Measured on the VM: bitwise equal to this formula on random and special inputs
    (tests/test_ops_image.py), cubic with cubic_exclude=0 included.

    Finding (cubic_exclude=1): topi's `_resize_3d` computes the depth weights wrongly,
    `wz[i] = if_then_else(xint - 1 + i < 0 or xint + i > image_height, 0, wx[i])`: the
    width's raw weights, masked by the width's tap positions against the height, then
    renormalised. The specification masks and renormalises each dimension's own weights
    (ONNX exclude_outside); the VM's result differs (e.g. (1, 2, 2, 3, 4) -> (3, 5, 7)
    half_pixel: by up to 2.86 on uniform [-1, 1) data) and LegalizeOps is refuted
    (counterexample; pinned in tests/test_ops_image.py).
    """
    return _encode_resize(ctx, call, args, "NCDHW", ("NCDHW", "NDHWC"), int_div=False)


def _resize_dtype_checks(op: str, method: str, dtype: str, out_dtype: str) -> None:
    if out_dtype != dtype:
        raise Unsupported(f"{op} out_dtype={out_dtype} on {dtype} data (TVM's legalization "
                          "ignores out_dtype)")
    if is_float(dtype):
        if dtype not in ("float32", "float16"):
            raise Unsupported(f"{op} on {dtype} data")
    elif method != "nearest_neighbor" or dtype not in INT_FORMATS or INT_FORMATS[dtype][0] > 16:
        raise Unsupported(f"{op} method={method!r} on {dtype} data")


def _encode_resize(ctx: EncodeContext, call: OpCall, args: list, canon: str,
                   layouts: tuple[str, ...], int_div: bool) -> Tensor:
    """resize2d (canon NCHW) and resize3d (canon NCDHW): spatial dimensions canon[2:]."""
    x = tensor_arg(args, 0, call)
    ty = out_type(call)
    op = call.op
    method = str(_attr(call, "method", "linear"))
    mode = str(_attr(call, "coordinate_transformation_mode", "half_pixel"))
    rounding = str(_attr(call, "rounding_method", "round"))
    if method not in ("nearest_neighbor", "linear", "cubic"):
        raise Unsupported(f"{op} method={method!r}")
    if mode not in MODES:
        raise Unsupported(f"{op} coordinate_transformation_mode={mode!r}")
    if method == "nearest_neighbor" and rounding not in ROUNDINGS:
        raise Unsupported(f"{op} rounding_method={rounding!r}")
    _resize_dtype_checks(op, method, x.dtype, ty.dtype)
    layout = check_layout(str(_attr(call, "layout", canon)), canon, "data")
    if layout not in layouts:
        raise Unsupported(f"{op} layout={layout!r}")
    n_b, ch, *sp_in = canonical_shape(x.shape, layout, canon)
    n_o, c_o, *sp_out = canonical_shape(ty.shape, layout, canon)
    if (n_o, c_o) != (n_b, ch):
        raise Unsupported(f"{op} result type {ty} for data {x.shape}")
    if max(sp_out) > MAX_OUT_DIM:
        raise Unsupported(f"{op} output size {sp_out} (> {MAX_OUT_DIM} per dimension)")
    if mode == "align_corners" and min(sp_out) == 1:
        raise Unsupported(f"{op} coordinate_transformation_mode='align_corners' with an output "
                          "size of 1 (TVM divides by out - 1 = 0)")
    if math.prod(ty.shape) == 0:
        return checked_result(call, Tensor.from_fn(ty.shape, ty.dtype,
                                                   lambda ix: ctx.dom(ty.dtype).zero()))
    read = canonical_reader(x, layout, canon)
    dims = list(zip(sp_in, sp_out))

    if method == "nearest_neighbor":
        tabs = [index_table([nearest_index(i, n_in, n_out, mode, rounding, op, int_div)
                             for i in range(n_out)]) for n_in, n_out in dims]
        return checked_result(call, canonical_tensor(
            ty.shape, layout, canon, ty.dtype,
            lambda ix: read([ix[0], ix[1], *(t(p) for t, p in zip(tabs, ix[2:]))])))

    dom = ctx.dom("float32")
    cast_in = ((lambda v: v) if x.dtype == "float32"
               else (lambda v: ctx.model.cast(v, x.dtype, "float32")))
    cast_out = ((lambda v: v) if x.dtype == "float32"
                else (lambda v: ctx.model.cast(v, "float32", x.dtype)))

    alpha = float(_attr(call, "cubic_alpha", -0.75))
    exclude = bool(int(_attr(call, "cubic_exclude", 0)))

    def taps_of(i: int, n_in: int, n_out: int) -> tuple[list[int], list[np.float32]]:
        if method == "linear":
            lo, hi, wa, wb = linear_taps(i, n_in, n_out, mode, op)
            return [lo, hi], [wa, wb]
        return cubic_taps(i, n_in, n_out, mode, alpha, exclude, op)

    def tables(n_in: int, n_out: int):
        """Per tap k: (index table, weight table) over the output position."""
        taps = [taps_of(i, n_in, n_out) for i in range(n_out)]
        return [(index_table([t[0][k] for t in taps]),
                 table([dom.const(float(t[1][k])) for t in taps], dom.sort))
                for k in range(len(taps[0][0]))]

    tabs = [tables(n_in, n_out) for n_in, n_out in dims]

    def kernel(terms: list[tuple[z3.ExprRef, z3.ExprRef]]) -> z3.ExprRef:
        """((v0*w0 + v1*w1) + v2*w2) + ... in float32 (topi's `_lerp` A*(1-t) + B*t for two
        taps, `_cubic_kernel` for four)."""
        acc = dom.mul(*terms[0])
        for v, w in terms[1:]:
            acc = dom.add(acc, dom.mul(v, w))
        return acc

    def element(ix: list[z3.BitVecRef]) -> z3.ExprRef:
        nb, c, *pos = ix

        def interp(k: int, src: list[z3.BitVecRef]) -> z3.ExprRef:
            # topi's order: the outermost sum is over the first spatial dimension, its
            # operands sums over the next, ..., the innermost over w (resize2d linear:
            # _lerp(top, bottom, y) of _lerp(., ., x); cubic: _cubic_kernel over the rows of
            # _cubic_kernel over x; resize3d the same with d outermost)
            if k == len(pos):
                return cast_in(read([nb, c, *src]))
            p = pos[k]
            return kernel([(interp(k + 1, src + [it(p)]), wt(p)) for it, wt in tabs[k]])

        return cast_out(interp(0, []))

    return checked_result(call, canonical_tensor(ty.shape, layout, canon, ty.dtype, element))


# == affine_grid ==============================================================================

_NP_FLOAT = {"float32": np.float32, "float16": np.float16}
_NP_BITS = {"float32": np.uint32, "float16": np.uint16}


def nearest_float(q: Fraction, dtype: str) -> float:
    """The `dtype` number nearest to the rational q (ties to even): q rounded once."""
    t = _NP_FLOAT[dtype]
    with np.errstate(all="ignore"):
        best = t(float(q))        # within one ulp of q (float64 first, then dtype)
        for g in (np.nextafter(best, t(-np.inf)), np.nextafter(best, t(np.inf))):
            d_best, d_g = abs(Fraction(float(best)) - q), abs(Fraction(float(g)) - q)
            if d_g < d_best or (d_g == d_best and int(g.view(_NP_BITS[dtype])) % 2 == 0):
                best = g
    return float(best)


def grid_coord(j: int, size: int, align_corners: bool) -> Fraction:
    """The exact normalized coordinate of position j of `size` (PyTorch/ONNX affine_grid):
    corners -1 + 2j/(size-1) (align_corners), else pixel centers (2j+1)/size - 1."""
    if align_corners:
        return Fraction(2 * j, size - 1) - 1
    return Fraction(2 * j + 1, size) - 1


@register("relax.image.affine_grid")
def encode_affine_grid(ctx: EncodeContext, call: OpCall, args: list) -> Tensor:
    """affine_grid(theta (N, k, k+1), size) (k = 2: (H, W); k = 3: (D, H, W)): out[n, d, *p] = ((theta[n,d,k] + theta[n,d,k-1]*c(p_0)) + ...) + theta[n,d,0]*c(p_last) in the dtype, c(j) = the exact -1 + 2j/(s-1) (align_corners) or (2j+1)/s - 1 (pixel centers) rounded once to the dtype; channel 0 is x (the last spatial axis), layout (N, k, *size); float32/float16; align_corners with a size of 1, other dtypes and shapes are Unsupported.

    Semantics: PyTorch's affine_grid (and ONNX AffineGrid), as the Relax docstring names
    them, in TVM's documented layout [batch, 2, H, W] / [batch, 3, D, H, W] (PyTorch's grid is
    [N, H, W, 2]; channel d here is PyTorch's last axis d: 0 = x, the coordinate along W).
    The normalized coordinates are real numbers in the documentation (linspace(-1, 1) /
    pixel centers); the specification takes each rounded once to the dtype, a static table.
    The matrix product theta @ (x, y, 1) has no summation order in either framework; the
    specification fixes topi's: the translation first, then the products from the slowest
    spatial axis to x, each rounded in the dtype (the product by the homogeneous 1 is exact
    and omitted).

    TVM 0.27 (topi.image.affine_grid) differs in the coordinates (findings, measured on the
    VM with theta = [[1, 0, 0], [0, 1, 0]]): with align_corners=True it steps by
    float32((2 - 1e-7) / (s - 1)) from -1, so the last coordinate is 0.99999988 (not 1) and
    the middle of an odd size is -5.96e-08 (not 0); with align_corners=False it computes
    float32(-1 + 1/s) + j * float32(2/s) at run time, which is off by an ulp for most sizes
    not a power of two (s = 7: the middle coordinate is 2.98e-08, not 0). Sizes 1, 2, 3, 4, 8
    (pixel centers) agree: their coordinates are exact.
    """
    theta = tensor_arg(args, 0, call)
    ty = out_type(call)
    op = call.op
    if theta.dtype not in _NP_FLOAT:
        raise Unsupported(f"{op} on {theta.dtype} data")
    if ty.dtype != theta.dtype:
        raise Unsupported(f"{op}: result dtype {ty.dtype} for {theta.dtype} data")
    if theta.ndim != 3 or theta.shape[1] not in (2, 3) or theta.shape[2] != theta.shape[1] + 1:
        raise Unsupported(f"{op} with theta of shape {theta.shape} (expected (N, 2, 3) or (N, 3, 4))")
    nd = theta.shape[1]
    sizes = tuple(ty.shape[2:])
    if len(ty.shape) != nd + 2 or ty.shape[:2] != theta.shape[:2]:
        raise Unsupported(f"{op} result type {ty} for theta {theta.shape}")
    align = bool(_attr(call, "align_corners", True))
    if align and min(sizes, default=2) < 2:
        raise Unsupported(f"{op} align_corners=True with an output size of 1 (-1 + 2j/(s-1) "
                          "divides by zero; TVM's legalization rejects it)")
    if max(sizes, default=0) > MAX_OUT_DIM:
        raise Unsupported(f"{op} output size {sizes} (> {MAX_OUT_DIM} per dimension)")
    dom = ctx.dom(theta.dtype)
    if math.prod(ty.shape) == 0:
        return checked_result(call, Tensor.from_fn(ty.shape, ty.dtype, lambda ix: dom.zero()))
    coords = [table([dom.const(nearest_float(grid_coord(j, s, align), theta.dtype))
                     for j in range(s)], dom.sort) for s in sizes]

    def element(ix: list[z3.BitVecRef]) -> z3.ExprRef:
        n, d, *pos = ix
        val = theta.at_multi([n, d, idx(nd)])                       # the translation
        for r in range(nd):                                         # slowest axis first
            val = dom.add(val, dom.mul(theta.at_multi([n, d, idx(nd - 1 - r)]), coords[r](pos[r])))
        return val

    return checked_result(call, Tensor.from_fn(ty.shape, ty.dtype, element))


# == grid_sample ==============================================================================

GRID_METHODS = ("bilinear", "nearest")
GRID_PADDINGS = ("zeros", "border")


@register("relax.image.grid_sample")
def encode_grid_sample(ctx: EncodeContext, call: OpCall, args: list) -> Tensor:
    """grid_sample(data (N, C, H, W), grid (N, 2, Ho, Wo)) -> (N, C, Ho, Wo), float32: x = grid[n,0], y = grid[n,1] unnormalized to (g+1)*(s-1)/2 (align_corners) or -0.5 + (g+1)*s/2; border clips to [0, s-1] (t > b ? t : b); bilinear = ((p00*wy0*wx0 + p01*wy0*wx1) + p10*wy1*wx0) + p11*wy1*wx1 with x0 = floor(x), wx1 = x - x0, wx0 = 1 - wx1, taps outside the input read 0.0; nearest = the element at (nearbyint(y), nearbyint(x)) or 0.0 outside; UB: a NaN grid value, a coordinate whose floor/nearbyint is NaN, inf or beyond int32 (bilinear) / int64 (nearest); bicubic, reflection, other layouts and dtypes are Unsupported.

    Semantics: PyTorch's grid_sample (zeros/border, bilinear/nearest), with topi's float32
    order of operations (TVM's documentation of the op, topi/image/grid_sample.py), which
    the framework leaves to its kernels. PyTorch writes the unnormalization
    ((g+1)/2)*(s-1) and ((g+1)*s - 1)/2: halving is exact on float32 short of overflow, so
    the two agree wherever the coordinate is finite in both.

    Decisions where the documentation is silent: a NaN grid value, and a coordinate that
    cannot be an index (infinite, or beyond the integer range: PyTorch's CPU kernel maps it
    to -100, an implementation detail), are undefined, as TVM's legalization casts them to
    int32/int64 (C/LLVM fptosi: undefined). With border padding, the clip makes every
    non-NaN coordinate an index (TVM's clip also maps NaN to 0: a refinement of UB). The -0 of a clipped coordinate is dropped as topi's max
    does (`-0 > 0 ? -0 : 0` = +0); PyTorch's std::max keeps it (only a zero's sign differs).

    Layout (finding): the Relax docstring gives the grid as [N, H_out, W_out, 2] (PyTorch's
    layout), but TVM's struct-info inference and legalization read it as [N, 2, H_out, W_out]
    (grid (1, 5, 6, 2) on data (1, 3, 3, 4) is inferred to give (1, 3, 6, 2)). The encoder
    follows the inferred type, i.e. TVM's layout, the one affine_grid produces.
    """
    x = tensor_arg(args, 0, call)
    grid = tensor_arg(args, 1, call)
    ty = out_type(call)
    op = call.op
    method = str(_attr(call, "method", "bilinear"))
    padding = str(_attr(call, "padding_mode", "zeros"))
    layout = str(_attr(call, "layout", "NCHW"))
    align = bool(_attr(call, "align_corners", False))
    if method not in GRID_METHODS:
        raise Unsupported(f"{op} method={method!r}")
    if padding not in GRID_PADDINGS:
        raise Unsupported(f"{op} padding_mode={padding!r}")
    if layout != "NCHW":
        raise Unsupported(f"{op} layout={layout!r}")
    if x.dtype != "float32" or grid.dtype != "float32" or ty.dtype != "float32":
        raise Unsupported(f"{op} on {x.dtype} data, {grid.dtype} grid")
    if x.ndim != 4 or grid.ndim != 4 or grid.shape[1] != 2 or grid.shape[0] != x.shape[0]:
        raise Unsupported(f"{op} with data {x.shape} and grid {grid.shape} (expected (N, C, H, W) "
                          "and (N, 2, H_out, W_out))")
    n_b, ch, h_in, w_in = x.shape
    if tuple(ty.shape) != (n_b, ch, grid.shape[2], grid.shape[3]):
        raise Unsupported(f"{op} result type {ty} for data {x.shape}, grid {grid.shape}")
    dom = ctx.dom("float32")
    if math.prod(ty.shape) == 0:
        return checked_result(call, Tensor.from_fn(ty.shape, ty.dtype, lambda ix: dom.zero()))
    if min(h_in, w_in) == 0:
        raise Unsupported(f"{op} on empty data {x.shape}")
    model = ctx.model
    i64 = ctx.dom("int64")

    def const(v: float) -> z3.ExprRef:
        return dom.const(v)

    def unnormalize(g: z3.ExprRef, size: int) -> z3.ExprRef:
        g1 = dom.add(g, const(1.0))
        if align:   # (g + 1) * (size - 1) / 2; topi drops the product by 1 for size 2
            return dom.div(g1 if size == 2 else dom.mul(g1, const(float(size - 1))), const(2.0))
        return dom.add(const(-0.5), dom.div(dom.mul(g1, const(float(size))), const(2.0)))

    def clip(v: z3.ExprRef, size: int) -> z3.ExprRef:
        # topi's te.max/te.min: `a > b ? a : b`, `a < b ? a : b`
        lo = zf.If(dom.gt(v, const(0.0)), v, const(0.0))
        hi = const(float(size - 1))
        return zf.If(dom.lt(lo, hi), lo, hi)

    def source(g: z3.ExprRef, size: int) -> z3.ExprRef:
        c = unnormalize(g, size)
        return clip(c, size) if padding == "border" else c

    def tap(nb: z3.BitVecRef, c: z3.BitVecRef, yi: z3.ExprRef, dy: int, xi: z3.ExprRef,
            dx: int) -> z3.ExprRef:
        """data[nb, c, yi + dy, xi + dx] (yi, xi int64 terms) inside the input, else 0.0;
        "inside" written as -d <= i < size - d (the same test, in topi's simplified form)."""
        inside = zf.And(i64.le(i64.const(-dy), yi), i64.le(i64.const(-dx), xi),
                        i64.lt(yi, i64.const(h_in - dy)), i64.lt(xi, i64.const(w_in - dx)))
        low = lambda v, d: z3.Extract(31, 0, v) + idx(d) if d else z3.Extract(31, 0, v)  # noqa: E731
        return zf.If(inside, x.at_multi([nb, c, low(yi, dy), low(xi, dx)]), const(0.0))

    def element(ix: list[z3.BitVecRef]) -> z3.ExprRef:
        nb, c, h, w = ix
        gy, gx = grid.at_multi([nb, idx(1), h, w]), grid.at_multi([nb, idx(0), h, w])
        # a NaN grid value is undefined (the documentation is silent), whatever the padding
        ctx.add_ub(zf.Or(dom.is_nan(gy), dom.is_nan(gx)), f"{op}: a NaN grid value")
        ys, xs = source(gy, h_in), source(gx, w_in)
        if method == "nearest":
            ry, rx = dom.unary("round", ys), dom.unary("round", xs)   # nearbyint
            return tap(nb, c, model.cast(ry, "float32", "int64"), 0, model.cast(rx, "float32", "int64"), 0)
        fy, fx = dom.unary("floor", ys), dom.unary("floor", xs)
        # the index is floor as int64; the weight subtracts float32(int32(floor)) (topi)
        y0, x0 = model.cast(fy, "float32", "int64"), model.cast(fx, "float32", "int64")
        ty1 = dom.sub(ys, model.cast(model.cast(fy, "float32", "int32"), "int32", "float32"))
        tx1 = dom.sub(xs, model.cast(model.cast(fx, "float32", "int32"), "int32", "float32"))
        ty0, tx0 = dom.sub(const(1.0), ty1), dom.sub(const(1.0), tx1)
        terms = [dom.mul(dom.mul(tap(nb, c, y0, dy, x0, dx), wy), wx)
                 for dy, wy in ((0, ty0), (1, ty1)) for dx, wx in ((0, tx0), (1, tx1))]
        acc = terms[0]
        for t in terms[1:]:
            acc = dom.add(acc, t)
        return acc

    return checked_result(call, Tensor.from_fn(ty.shape, ty.dtype, element))
