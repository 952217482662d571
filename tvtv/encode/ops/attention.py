"""Fused multi-head attention: relax.nn.attention and relax.nn.attention_bias.

Composed from the building blocks of the other encoders, in the order TVM's documentation
writes the formula (`Softmax(Q @ K^T) @ V`, scaled, with optional bias and causal mask):
    scores[b, n, s, t] = dot_h(Q[b, s, n, h], K[b, t, n, h])          (`reduction.dot`)
    p = scores / sqrt(H)   (default scale)   or   scores * scale        (explicit scale)
    p = p + bias           (bias broadcast to (B, N, S, S_kv))
    w = softmax(p) along t                                             (as relax.nn.softmax)
    out[b, s, n, v] = dot_t(w[b, n, s, t], V[b, t, n, v])
so a decomposition into matmul / permute_dims / softmax and TVM's legalization (two
batch_matmuls around a softmax) meet the same SMT terms.
"""
from __future__ import annotations

import z3

from tvtv import z3fast as zf
from tvtv.absfp.dtypes import is_float
from tvtv.encode.context import EncodeContext
from tvtv.encode.ops.common import checked_result, tensor_arg
from tvtv.encode.ops.statistical import reduce_axes
from tvtv.encode.reduction import dot
from tvtv.encode.registry import register
from tvtv.encode.tensor import Tensor, elementwise, idx
from tvtv.errors import Unsupported
from tvtv.ir.program import OpCall

CAUSAL_MASKS = ("TopLeft", "BottomRight")


def _attention(ctx: EncodeContext, call: OpCall, args: list) -> Tensor:
    q, k, v = (tensor_arg(args, i, call) for i in range(3))
    bias = tensor_arg(args, 3, call) if len(args) > 3 and args[3] is not None else None
    op = call.op
    for t in (q, k, v) + ((bias,) if bias is not None else ()):
        if not is_float(t.dtype) or t.dtype != q.dtype:
            raise Unsupported(f"{op} on dtype {t.dtype} (one float dtype for all operands only)")
    if q.ndim != 4 or k.ndim != 4 or v.ndim != 4:
        raise Unsupported(f"{op} of shapes {q.shape}, {k.shape}, {v.shape} (BSNH 4-D only)")
    B, S, N, H = q.shape
    Bk, T, Nk, Hk = k.shape
    Bv, Tv, Nv, HV = v.shape
    if (Bk, Nk, Hk) != (B, N, H) or (Bv, Tv, Nv) != (B, T, N):
        raise Unsupported(f"{op} of shapes {q.shape}, {k.shape}, {v.shape}")
    if call.attrs.get("window_size") is not None:
        raise Unsupported(f"{op} with window_size (sliding-window attention)")
    mask = call.attrs.get("causal_mask")
    if mask is not None and mask not in CAUSAL_MASKS:
        raise Unsupported(f"{op} with causal_mask={mask!r}")
    dtype = q.dtype
    dom = ctx.dom(dtype)
    pshape = (B, N, S, T)

    # scores = Q K^T per batch and head, shape (B, N, S, T)
    scores = Tensor.from_fn(pshape, dtype, lambda ix: dot(
        ctx, dtype, H, lambda r: q.at_multi([ix[0], ix[2], ix[1], r]),
        lambda r: k.at_multi([ix[0], ix[3], ix[1], r])))
    scale = call.attrs.get("scale")
    if scale is None:
        root = dom.unary("sqrt", dom.const(float(H)))
        p = elementwise(pshape, dtype, [scores], lambda x: dom.div(x, root))
    else:
        c = dom.const(float(scale))
        p = elementwise(pshape, dtype, [scores], lambda x: dom.mul(x, c))
    if bias is not None:
        if bias.ndim != 4 or bias.shape[-1] != T or any(
                d not in (1, w) for d, w in zip(bias.shape, pshape)):
            raise Unsupported(f"{op}: bias of shape {bias.shape} for scores {pshape}")
        p = elementwise(pshape, dtype, [p, bias], dom.add)

    if mask is None:
        m = reduce_axes(ctx, p, [3], True, "max")
        e = elementwise(pshape, dtype, [p, m], lambda x, y: dom.unary("exp", dom.sub(x, y)))
    else:
        offset = 0 if mask == "TopLeft" else abs(S - T)
        zero, ninf = dom.const(0.0), dom.const(float("-inf"))

        def keep(ix: list) -> z3.BoolRef:   # np.tril(*, k=offset): t <= s + offset
            return z3.ULE(ix[3], ix[2] + idx(offset))

        # the softmax over the kept positions only: a masked score is -inf, so it neither
        # shifts the row max nor weighs anything (every row keeps t = 0 at least)
        pm = Tensor.from_fn(pshape, dtype, lambda ix: zf.If(keep(ix), p.at_multi(ix), ninf))
        m = reduce_axes(ctx, pm, [3], True, "max")
        e = Tensor.from_fn(pshape, dtype, lambda ix: zf.If(
            keep(ix), dom.unary("exp", dom.sub(pm.at_multi(ix), m.at_multi(ix[:3] + [idx(0)]))),
            zero))
    s = reduce_axes(ctx, e, [3], True, "sum")
    w = elementwise(pshape, dtype, [e, s], dom.div)

    out = Tensor.from_fn((B, S, N, HV), dtype, lambda ix: dot(
        ctx, dtype, T, lambda r: w.at_multi([ix[0], ix[2], ix[1], r]),
        lambda r: v.at_multi([ix[0], r, ix[2], ix[3]])))
    return checked_result(call, out)


@register("relax.nn.attention")
def encode_attention(ctx: EncodeContext, call: OpCall, args: list) -> Tensor:
    """attention(Q, K, V) in BSNH layout: out[b, s, n, :] = softmax_t(dot_h(Q[b, s, n, h], K[b, t, n, h]) / sqrt(H)) @ V[b, :, n, :] (an explicit `scale` multiplies instead of dividing by sqrt(H)); the softmax is relax.nn.softmax's stable form; causal_mask TopLeft/BottomRight keeps t <= s + 0 / |S - S_kv| (np.tril) and takes the softmax over the kept positions only (a masked score is -inf: it weighs 0 and does not shift the row max); window_size and non-float dtypes are Unsupported.

    Default scale: the documentation says "by default 1 / sqrt(head_dim)" without saying how
    it is rounded; TVM's LegalizeOps (`_te_attention`) computes `p / sqrt(float(H))` with
    sqrt(H) rounded to the dtype, which tvtv takes as the meaning (a multiplication by the
    rounded 1/sqrt(H) differs in the last bit on some inputs). An explicit `scale` is a
    multiplication by the scale rounded to the dtype (as the legalization's `p * scale`).
    Measured: in float16 TVM keeps `scale` a float32 FloatImm and its legalization computes
    `Cast("float32", p) * T.float32(scale)` and the softmax in float32 (with a "different
    data type" warning), so verify gives a counterexample against this float16 reading;
    float16 with the default scale is proved.

    Causal masks: the documentation gives only the mask matrix (np.tril with k = 0 for
    TopLeft and k = |seq_len - seq_len_kv| for BottomRight, the absolute value included). It
    does not say what a masked score is replaced with. A mask means the softmax of the kept
    scores (PyTorch's scaled_dot_product_attention fills -inf), which is what tvtv encodes.
    TVM's legalization replaces a masked score by 0 (trilu) before the row max and zeroes the
    masked exps before the sum: equal in real arithmetic, but a row whose kept scores are all
    negative is shifted by 0 instead of its max, so the roundings differ, and a row whose kept
    scores are all below about -88 (float32) underflows to 0 / 0 = NaN on the VM where the
    softmax of the kept scores is finite (a finding, docs/findings.md).
    """
    return _attention(ctx, call, args)


@register("relax.nn.attention_bias")
def encode_attention_bias(ctx: EncodeContext, call: OpCall, args: list) -> Tensor:
    """attention_bias(Q, K, V, bias): relax.nn.attention with `bias` (4-D, last dim S_kv, broadcast to (B, N, S, S_kv)) added to the scaled scores before the causal mask and softmax; same scale, masks and Unsupported cases as relax.nn.attention.

    (TVMScript prints `R.nn.attention` with a bias as `R.nn.attention_bias`; both are the
    same computation, `p = QK^T * scale + bias`, as LegalizeOps' `_te_attention`.)
    """
    return _attention(ctx, call, args)
