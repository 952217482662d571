"""relax.bucketize: torch.bucketize (searchsorted of every input element in a 1-D sorted
boundaries tensor).

Relax's docstring (python/tvm/relax/op/search.py): boundaries is a "1-D tensor, must contain a
strictly increasing sequence, or the return value is undefined"; `right` "similar to
torch.bucketize"; out_int32 picks int32 over int64. torch.bucketize returns, for each x, the
index i with boundaries[i-1] < x <= boundaries[i] (right=False) or boundaries[i-1] <= x <
boundaries[i] (right=True): the number of boundaries below x (at or below x with right).
"""
from __future__ import annotations

import z3

from tvtv import z3fast as zf
from tvtv.absfp.dtypes import is_float, is_int
from tvtv.encode.context import EncodeContext
from tvtv.encode.ops.common import add_ub_for_some, bool_attr, checked_result, tensor_arg
from tvtv.encode.registry import register
from tvtv.encode.tensor import Tensor, idx
from tvtv.errors import Unsupported
from tvtv.ir.program import OpCall

Term = z3.ExprRef
# every output element compares its input with every boundary: refuse larger boundaries
BOUNDARIES_BOUND = 256


def _add_unsorted_ub(ctx: EncodeContext, b: Tensor) -> None:
    """UB unless boundaries[k] < boundaries[k+1] for every k (the docstring's "strictly
    increasing, or the return value is undefined"; a NaN boundary is never ordered)."""
    dom = ctx.dom(b.dtype)
    add_ub_for_some(ctx, b.numel - 1, lambda k: zf.Not(dom.lt(b.at(k), b.at(k + idx(1)))),
                    "bucketize with boundaries that are not strictly increasing", "bucketize_k")


@register("relax.bucketize")
def encode_bucketize(ctx: EncodeContext, call: OpCall, args: list) -> Tensor:
    """bucketize is torch.bucketize: out = #{k : boundaries[k] < x} (right=False) or #{k : boundaries[k] <= x} (right=True), int32 if out_int32 else int64; boundaries not strictly increasing (NaN among them too) is UB; a NaN x gives len(boundaries) (PyTorch); int or float data, boundaries of the data's dtype.

    Details. With strictly increasing boundaries the count is the binary search's insertion
    point. PyTorch's CPU/CUDA kernels (aten/src/ATen/native/Bucketization.cpp:
    `cus_lower_bound` moves right while `!(mid_val >= val)`, `cus_upper_bound` while
    `!(mid_val > val)`) send a NaN input past every boundary: len(boundaries), NaN sorting
    last as in torch.sort. At most `BOUNDARIES_BOUND` boundaries; boundaries of another
    dtype than the data are unsupported (PyTorch would promote).

    TVM 0.27 legalizes to `topi.searchsorted`, a binary search (`while lo < hi`, `if
    b[mid] < x: lo = mid + 1`) that gives 0 for a NaN input where PyTorch gives
    len(boundaries) (finding, measured on the VM: bucketize(NaN, [1, 2, 3]) = 0 for both
    values of `right`); on other inputs it agrees (measured with ±inf, ties and -0)."""
    x, b = tensor_arg(args, 0, call), tensor_arg(args, 1, call)
    if not (is_float(x.dtype) or is_int(x.dtype)):
        raise Unsupported(f"{call.op} on {x.dtype} data")
    if b.dtype != x.dtype:
        raise Unsupported(f"{call.op}: boundaries of dtype {b.dtype} for {x.dtype} data")
    if b.ndim != 1:
        raise Unsupported(f"{call.op}: boundaries of shape {b.shape} (must be 1-D)")
    n = b.shape[0]
    if n > BOUNDARIES_BOUND:
        raise Unsupported(f"{call.op}: {n} boundaries (limit {BOUNDARIES_BOUND})")
    right = bool_attr(call, "right")
    od = "int32" if bool_attr(call, "out_int32") else "int64"
    width = 32 if od == "int32" else 64
    _add_unsorted_ub(ctx, b)
    dom = ctx.dom(x.dtype)
    below = dom.le if right else dom.lt
    one, zero = z3.BitVecVal(1, width), z3.BitVecVal(0, width)

    def count(v: Term) -> Term:
        flags = [zf.If(below(b.at(k), v), one, zero) for k in range(n)]
        total = z3.Sum(*flags) if len(flags) > 1 else (flags[0] if flags else zero)
        if is_float(x.dtype):
            total = zf.If(dom.is_nan(v), z3.BitVecVal(n, width), total)   # PyTorch: NaN last
        return total

    return checked_result(call, Tensor.from_flat(x.shape, od, lambda i: count(x.at(i))))
