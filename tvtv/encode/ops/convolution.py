"""Convolutions (conv1d/2d/3d and conv1d/2d_transpose), and the window geometry shared with
pooling (`pooling.py`): layouts, stride/padding/dilation attributes, tap positions.

Each output element is `reduction.dot` over the taps (input channel of the group, then the
kernel positions, row-major: the order of TVM's legalized reduction loops `rc, ry, rx`), so a
conv and its TIR loop nest meet in one vocabulary. A tap reads the input at
`o * stride + k * dilation - pad_before` in each spatial dimension.

Layouts: any permutation of the canonical letters (data `NCHW`, kernel `OIHW` (`IOHW` for the
transposed convs), out `NCHW`), e.g. `NHWC`/`HWIO`; packed layouts such as `NCHW4c` are
unsupported. A permuted layout only changes where an element is read or written: the
semantics is the canonical one (TVM's documentation: "convert the layout to the canonical
layout, perform the computation, then convert to the out_layout").
"""
from __future__ import annotations

import math
from typing import Any, Callable, Sequence

import z3

from tvtv import z3fast as zf
from tvtv.absfp.dtypes import is_bool, is_float
from tvtv.encode.context import EncodeContext
from tvtv.encode.ops.common import out_type, tensor_arg
from tvtv.encode.reduction import dot, reduce_sum
from tvtv.encode.registry import register
from tvtv.encode.tensor import Tensor, idx, unravel
from tvtv.errors import Unsupported
from tvtv.ir.program import OpCall

SPATIAL = {1: "W", 2: "HW", 3: "DHW"}
Index = Any   # a z3 bit-vector index term or a Python int


# -- layouts ---------------------------------------------------------------------------------

def check_layout(layout: str | None, canonical: str, what: str) -> str:
    """`layout` (default: canonical) if it is a permutation of the canonical letters."""
    layout = canonical if layout in (None, "") else str(layout)
    if len(layout) != len(canonical) or sorted(layout) != sorted(canonical):
        raise Unsupported(f"{what} layout {layout!r} (only permutations of {canonical!r})")
    return layout


def canonical_shape(shape: Sequence[int], layout: str, canonical: str) -> list[int]:
    return [shape[layout.index(c)] for c in canonical]


def canonical_reader(t: Tensor, layout: str, canonical: str) -> Callable[[Sequence[Index]], z3.ExprRef]:
    """Read `t` (stored in `layout`) at an index given in canonical order."""
    if layout == canonical:
        return t.at_multi
    pos = [canonical.index(c) for c in layout]
    return lambda ix: t.at_multi([ix[p] for p in pos])


def canonical_tensor(shape: Sequence[int], layout: str, canonical: str, dtype: str,
                     fn: Callable[[list[z3.BitVecRef]], z3.ExprRef]) -> Tensor:
    """The tensor of `shape` (in `layout`) whose element is fn(canonical index)."""
    if layout == canonical:
        return Tensor.from_fn(shape, dtype, fn)
    pos = [layout.index(c) for c in canonical]
    return Tensor.from_fn(shape, dtype, lambda ix: fn([ix[p] for p in pos]))


# -- attributes ------------------------------------------------------------------------------

def int_list(attrs: dict, name: str, nd: int, default: int) -> list[int]:
    """A per-spatial-dimension attribute (strides, dilation, pool_size, output_padding)."""
    v = attrs.get(name)
    if v is None:
        return [default] * nd
    vals = [int(x) for x in (v if isinstance(v, (list, tuple)) else [v])]
    if len(vals) == 1:
        vals = vals * nd
    if len(vals) != nd:
        raise Unsupported(f"{name}={v} for {nd} spatial dimensions")
    return vals


def padding(attrs: dict, nd: int) -> tuple[list[int], list[int]]:
    """(before, after) padding per spatial dimension; TVM's normal form is
    (before_0, .., before_{nd-1}, after_0, .., after_{nd-1}), e.g. (top, left, bottom, right)."""
    v = attrs.get("padding")
    vals = [int(x) for x in (v if isinstance(v, (list, tuple)) else [v or 0])]
    if len(vals) == 1:
        vals = vals * (2 * nd)
    elif len(vals) == nd:
        vals = vals + vals
    if len(vals) != 2 * nd:
        raise Unsupported(f"padding={v} for {nd} spatial dimensions")
    return vals[:nd], vals[nd:]


def out_dtype_of(call: OpCall) -> str:
    ty = out_type(call)
    if is_bool(ty.dtype):
        raise Unsupported(f"{call.op} on bool tensors")
    return ty.dtype


def as_index(v: Index) -> z3.BitVecRef:
    return idx(v) if isinstance(v, int) else v


def tap(o: Index, k: Index, stride: int, dilation: int) -> z3.BitVecRef:
    """Position in the padded input read by output position `o` at kernel offset `k`."""
    a = as_index(o) if stride == 1 else as_index(o) * idx(stride)
    b = as_index(k) if dilation == 1 else as_index(k) * idx(dilation)
    return a + b


def in_range(p: z3.BitVecRef, lo: int, hi: int, max_p: int) -> list[z3.BoolRef]:
    """Conditions for lo <= p < hi (p >= 0, p <= max_p statically); trivially true ones are left out."""
    conds = []
    if lo > 0:
        conds.append(z3.UGE(p, idx(lo)))
    if max_p >= hi:
        conds.append(z3.ULT(p, idx(hi)))
    return conds


# -- convolution -----------------------------------------------------------------------------

def _operands(call: OpCall, args: list, nd: int, weight_layout: str
              ) -> tuple[Tensor, Tensor, Any, str, str, str, str, str, str, list[int], list[int], int]:
    """What conv and conv_transpose share: data and weight, the output type and dtype, the
    canonical data and weight layouts, the data/kernel/out layouts checked against the canonical ones (`NC<spatial>` and
    `<weight_layout><spatial>`), the canonical data and weight shapes, and groups."""
    x, w = tensor_arg(args, 0, call), tensor_arg(args, 1, call)
    attrs = call.attrs
    cx, cw = "NC" + SPATIAL[nd], weight_layout + SPATIAL[nd]
    dl = check_layout(attrs.get("data_layout"), cx, "data")
    kl = check_layout(attrs.get("kernel_layout"), cw, "kernel")
    ol = check_layout(attrs.get("out_layout") or dl, cx, "out")
    if x.dtype != w.dtype:
        raise Unsupported(f"{call.op} of {x.dtype} data and {w.dtype} weight")
    groups = int(attrs.get("groups", 1) or 1)
    return (x, w, out_type(call), out_dtype_of(call), cx, cw, dl, kl, ol,
            canonical_shape(x.shape, dl, cx), canonical_shape(w.shape, kl, cw), groups)


def _conv(ctx: EncodeContext, call: OpCall, args: list, nd: int) -> Tensor:
    attrs = call.attrs
    x, w, ty, out_dtype, cx, cw, dl, kl, ol, x_sz, w_sz, groups = _operands(call, args, nd, "OI")
    n_b, c_in, *in_sz = x_sz
    c_out, c_grp, *k_sz = w_sz
    strides = int_list(attrs, "strides", nd, 1)
    dil = int_list(attrs, "dilation", nd, 1)
    lo, hi = padding(attrs, nd)
    if c_in != c_grp * groups or c_out % groups:
        raise Unsupported(f"{call.op}: {c_in} input channels, weight {w.shape}, groups={groups}")
    out_sz = [(i + a + b - d * (k - 1) - 1) // s + 1
              for i, a, b, d, k, s in zip(in_sz, lo, hi, dil, k_sz, strides)]
    if canonical_shape(ty.shape, ol, cx) != [n_b, c_out, *out_sz]:
        raise Unsupported(f"{call.op} result type {ty}, expected {[n_b, c_out, *out_sz]} in {ol}")
    o_grp = c_out // groups
    n_terms = c_grp * math.prod(k_sz)
    read_x = canonical_reader(x, dl, cx)
    read_w = canonical_reader(w, kl, cw)
    dom_in = ctx.dom(x.dtype)
    cast = (lambda v: v) if x.dtype == out_dtype else (lambda v: ctx.model.cast(v, x.dtype, out_dtype))
    max_p = [(o - 1) * s + (k - 1) * d for o, s, k, d in zip(out_sz, strides, k_sz, dil)]

    def element(ix: list[z3.BitVecRef]) -> z3.ExprRef:
        nb, oc, *sp = ix
        base = z3.UDiv(oc, idx(o_grp)) * idx(c_grp) if groups > 1 else None

        def padded_x(r: z3.BitVecRef) -> z3.ExprRef:
            ic, *ks = unravel(r, [c_grp, *k_sz])
            ch = ic if base is None else base + ic
            conds, pos = [], []
            for o, k, s, d, a, i, m in zip(sp, ks, strides, dil, lo, in_sz, max_p):
                p = tap(o, k, s, d)
                conds += in_range(p, a, a + i, m)
                pos.append(p if a == 0 else p - idx(a))
            v = read_x([nb, ch, *pos])
            # zero padding: the input is padded with 0 (PyTorch/TVM), so a padded tap is the
            # product 0 * w, which is NaN when w is inf or NaN (IEEE 754 7.2)
            if conds:
                v = zf.If(zf.And(*conds), v, dom_in.zero())
            return cast(v)

        def weight(r: z3.BitVecRef) -> z3.ExprRef:
            ic, *ks = unravel(r, [c_grp, *k_sz])
            return cast(read_w([oc, ic, *ks]))

        return dot(ctx, out_dtype, n_terms, padded_x, weight)

    return canonical_tensor(ty.shape, ol, cx, out_dtype, element)


@register("relax.nn.conv1d")
def encode_conv1d(ctx: EncodeContext, call: OpCall, args: list) -> Tensor:
    """out[b, c, x] = dot over (k, dx) of padded_data[b, g*I + k, x*s + dx*d] * w[c, k, dx] (PyTorch conv1d), the data zero-padded so a padded tap is the term 0 * w (NaN for an inf/NaN weight); operands cast to out_dtype first; the sum is `dot` (unspecified order, +0.0 start, NaN/inf special cases exact).

    Layouts: permutations of NCW / OIW; groups split input and output channels evenly.
    """
    return _conv(ctx, call, args, 1)


@register("relax.nn.conv2d")
def encode_conv2d(ctx: EncodeContext, call: OpCall, args: list) -> Tensor:
    """out[b, c, y, x] = dot over (k, dy, dx) of padded_data[b, g*I + k, y*sh + dy*dh, x*sw + dx*dw] * w[c, k, dy, dx] (PyTorch conv2d), the data zero-padded so a padded tap is the term 0 * w (NaN for an inf/NaN weight); operands cast to out_dtype first; the sum is `dot` (unspecified order, +0.0 start, NaN/inf special cases exact).

    Layouts: permutations of NCHW (e.g. NHWC) / OIHW (e.g. HWIO); padding is
    (top, left, bottom, right); groups split input and output channels evenly.
    """
    return _conv(ctx, call, args, 2)


@register("relax.nn.conv3d")
def encode_conv3d(ctx: EncodeContext, call: OpCall, args: list) -> Tensor:
    """conv2d's semantics with three spatial dimensions (NCDHW / OIDHW and permutations): zero padding gives 0 * w terms, operands cast to out_dtype, the sum is `dot`."""
    return _conv(ctx, call, args, 3)


# -- transposed convolution ------------------------------------------------------------------

def _conv_transpose(ctx: EncodeContext, call: OpCall, args: list, nd: int) -> Tensor:
    attrs = call.attrs
    x, w, ty, out_dtype, cx, cw, dl, kl, ol, x_sz, w_sz, groups = _operands(call, args, nd, "IO")
    n_b, c_in, *in_sz = x_sz
    w_in, o_grp, *k_sz = w_sz
    strides = int_list(attrs, "strides", nd, 1)
    dil = int_list(attrs, "dilation", nd, 1)
    out_pad = int_list(attrs, "output_padding", nd, 0)
    lo, hi = padding(attrs, nd)
    if w_in != c_in or c_in % groups:
        raise Unsupported(f"{call.op}: {c_in} input channels, weight {w.shape}, groups={groups}")
    c_grp = c_in // groups
    c_out = o_grp * groups
    out_sz = [(i - 1) * s - a - b + d * (k - 1) + op + 1
              for i, s, a, b, d, k, op in zip(in_sz, strides, lo, hi, dil, k_sz, out_pad)]
    if canonical_shape(ty.shape, ol, cx) != [n_b, c_out, *out_sz]:
        raise Unsupported(f"{call.op} result type {ty}, expected {[n_b, c_out, *out_sz]} in {ol}")
    n_terms = c_grp * math.prod(k_sz)
    read_x = canonical_reader(x, dl, cx)
    read_w = canonical_reader(w, kl, cw)
    odom = ctx.dom(out_dtype)
    cast = (lambda v: v) if x.dtype == out_dtype else (lambda v: ctx.model.cast(v, x.dtype, out_dtype))
    # the identity of the sum: a left-out term (IEEE: x + -0.0 == x for every x)
    left_out = odom.const(-0.0) if is_float(out_dtype) else odom.zero()

    def element(ix: list[z3.BitVecRef]) -> z3.ExprRef:
        nb, oc, *sp = ix
        if groups > 1:
            base = z3.UDiv(oc, idx(o_grp)) * idx(c_grp)
            ocl = z3.URem(oc, idx(o_grp))
        else:
            base, ocl = None, oc

        def term(r: z3.BitVecRef) -> z3.ExprRef:
            ic, *ks = unravel(r, [c_grp, *k_sz])
            ch = ic if base is None else base + ic
            conds, pos = [], []
            for o, k, s, a, d, i in zip(sp, ks, strides, lo, dil, in_sz):
                # output o receives input position q / s through kernel offset k when
                # q = o + pad_before - k * dilation is a non-negative multiple of s below in*s
                shifted = o + idx(a) if a else o
                kd = k * idx(d) if d != 1 else k
                q = shifted - kd
                conds.append(z3.UGE(shifted, kd))
                if s != 1:
                    conds.append(z3.URem(q, idx(s)) == idx(0))
                    q = z3.UDiv(q, idx(s))
                conds.append(z3.ULT(q, idx(i)))
                pos.append(q)
            prod = odom.mul(cast(read_x([nb, ch, *pos])), cast(read_w([ch, ocl, *ks])))
            return zf.If(zf.And(*conds), prod, left_out)

        return reduce_sum(ctx, out_dtype, n_terms, term)

    return canonical_tensor(ty.shape, ol, cx, out_dtype, element)


@register("relax.nn.conv1d_transpose")
def encode_conv1d_transpose(ctx: EncodeContext, call: OpCall, args: list) -> Tensor:
    """The gradient of conv1d w.r.t. its data (PyTorch conv_transpose1d): out[b, g*O + c, y] = sum of data[b, g*I + k, i] * w[g*I + k, c, dx] over the pairs with i*s + dx*d = y + pad_before only (positions that receive no product are not 0 * w terms: an inf weight does not reach them); operands cast to out_dtype first; the sum is `reduce_sum` (unspecified order, +0.0 start).

    Kernel layout IOW (permutations allowed); output_padding adds positions at the end
    (which receive products only if some tap reaches them). A position that receives no
    product is +0.0 in IEEE terms, but `reduce_sum` leaves a sum of only -0.0 terms
    uninterpreted for now.
    """
    return _conv_transpose(ctx, call, args, 1)


@register("relax.nn.conv2d_transpose")
def encode_conv2d_transpose(ctx: EncodeContext, call: OpCall, args: list) -> Tensor:
    """The gradient of conv2d w.r.t. its data (PyTorch conv_transpose2d): out[b, g*O + c, y, x] = sum of data[b, g*I + k, i, j] * w[g*I + k, c, dy, dx] over the pairs with i*sh + dy*dh = y + pad_top and j*sw + dx*dw = x + pad_left only (no 0 * w terms for positions between strided inputs); operands cast to out_dtype first; the sum is `reduce_sum` (unspecified order, +0.0 start).

    Kernel layout IOHW (permutations allowed). TVM's legalization dilates the data with
    zeros and runs a conv, which makes 0 * w terms: with an inf weight it gives NaN where
    PyTorch gives a finite value (intended to be found).
    """
    return _conv_transpose(ctx, call, args, 2)


@register("relax.nn.conv3d_transpose")
def encode_conv3d_transpose(ctx: EncodeContext, call: OpCall, args: list) -> Tensor:
    """conv2d_transpose's semantics with three spatial dimensions (PyTorch conv_transpose3d): only the products that reach an output position are summed (no 0 * w terms); operands cast to out_dtype; the sum is `reduce_sum`."""
    return _conv_transpose(ctx, call, args, 3)
