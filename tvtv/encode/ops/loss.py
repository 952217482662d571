"""Loss functions and dropout: relax.nn.nll_loss, relax.nn.cross_entropy_with_logits,
relax.nn.dropout.

Semantics: the Relax op docstrings (python/tvm/relax/op/nn/nn.py), which follow PyTorch's
NLLLoss for nll_loss; each encoder's docstring says what was decided where the docstring is
silent or self-contradictory, and what TVM 0.27 computes on the VM (LLVM, CPU). Sums are the
uninterpreted, order-free sums of `tvtv/encode/reduction.py` (`reduce_sum`), so a
specification and TVM's reduction loops meet in one vocabulary.
"""
from __future__ import annotations


import z3

from tvtv import z3fast as zf
from tvtv.absfp.dtypes import INT_FORMATS, is_float
from tvtv.encode import reduction
from tvtv.encode.context import EncodeContext
from tvtv.encode.ops.common import add_ub_for_some, checked_result, index_value, tensor_arg
from tvtv.encode.registry import register
from tvtv.encode.tensor import INDEX_BITS, Tensor, elementwise
from tvtv.errors import Unsupported
from tvtv.ir.program import OpCall, TupleType


def _float_data(call: OpCall, t: Tensor, what: str) -> None:
    if not is_float(t.dtype):
        raise Unsupported(f"{call.op} with {what} of dtype {t.dtype} (float dtypes only)")


# -- nll_loss ---------------------------------------------------------------------------------

@register("relax.nn.nll_loss")
def encode_nll_loss(ctx: EncodeContext, call: OpCall, args: list) -> Tensor:
    """nll_loss: l[n, d..] = -p[n, t, d..] * w[t] with t = targets[n, d..] (w = ones without `weights`), l = +0.0 where t == ignore_index; reduction "none" gives l, "sum" gives sum(l), "mean" gives sum(l) / sum(w[t] over the non-ignored targets) (NaN when every target is ignored: 0/0, as PyTorch); a target outside [0, C) other than ignore_index is UB; float dtypes only, integer targets.

    Shapes: predictions (N, C, d_1.., d_k) with targets (N, d_1.., d_k), or predictions (C,)
    with a scalar target. The documented formula `-p * w` with `w = 0` for an ignored target
    would read p at class ignore_index (out of range); PyTorch (which the doc follows) and
    TVM give 0 there, so an ignored element is +0.0 and its weight +0.0. The sums are
    uninterpreted order-free sums of the loss terms / weight terms in the targets' row-major
    order. A target outside [0, C) is UB: PyTorch raises an error, and TVM 0.27 reads the
    predictions and weights out of bounds (measured on the VM: targets [5, 0, 1] with C = 4
    give 0.0 for the bad element, the same as -1 and 4).

    Finding (measured on the VM and in the legalized TIR): TVM 0.27 computes the loss term
    as `(0.0 - p) * w`, not `-p * w`: the two differ only in the sign of a zero, e.g.
    p = +0.0, w = 1 gives -0.0 by the documentation (and PyTorch) but +0.0 on TVM; reduction
    "none" shows it. Everything else (ignore_index, weights, the mean's divisor, 0/0 = NaN
    when every target is ignored) matched the VM. Second finding: the legalized TIR is
    `Select(t != ignore_index, (0.0 - p[n, t]) * w[t], 0.0)`, and TIR's Select evaluates
    both operands, so an ignored target loads p[n, ignore_index] and w[ignore_index]: out of
    bounds for the default ignore_index = -100 (the VM happens to discard the loaded value;
    `tvtv.verify` against LegalizeOps reports this UB). With an ignore_index inside [0, C)
    the legalized "sum" and "mean" are proved.
    """
    has_w = len(args) >= 3 and args[2] is not None
    x, tgt = tensor_arg(args, 0, call), tensor_arg(args, 1, call)
    w = tensor_arg(args, 2, call) if has_w else None
    _float_data(call, x, "predictions")
    if tgt.dtype not in INT_FORMATS:
        raise Unsupported(f"relax.nn.nll_loss with targets of dtype {tgt.dtype}")
    reduction_kind = call.attrs.get("reduction", "mean")
    if reduction_kind not in ("none", "sum", "mean"):
        raise Unsupported(f"relax.nn.nll_loss with reduction {reduction_kind!r}")
    ignore = int(call.attrs.get("ignore_index", -100))
    if x.ndim == 1:
        c_axis, want_t = 0, ()
    elif x.ndim >= 2:
        c_axis, want_t = 1, (x.shape[0],) + x.shape[2:]
    else:
        raise Unsupported("relax.nn.nll_loss with scalar predictions")
    if tgt.shape != want_t:
        raise Unsupported(f"relax.nn.nll_loss: targets of shape {tgt.shape} for predictions "
                          f"of shape {x.shape}")
    C = x.shape[c_axis]
    if w is not None:
        if w.shape != (C,) or w.dtype != x.dtype:
            raise Unsupported(f"relax.nn.nll_loss: weights {w.shape} {w.dtype}, expected "
                              f"({C},) {x.dtype}")
    dom = ctx.dom(x.dtype)
    wide_c, wide_ign = z3.BitVecVal(C, 65), z3.BitVecVal(ignore, 65)
    zero65 = z3.BitVecVal(0, 65)

    def ignored(t: z3.BitVecRef) -> z3.BoolRef:
        return t == wide_ign

    def position(t: z3.BitVecRef) -> z3.BitVecRef:
        return z3.Extract(INDEX_BITS - 1, 0, t)

    # UB: a target that is neither ignore_index nor in [0, C)
    def bad_at(k: z3.BitVecRef) -> z3.BoolRef:
        t = index_value(tgt.at(k), tgt.dtype, call.op)
        return zf.And(zf.Not(ignored(t)), zf.Or(t < zero65, t >= wide_c))
    add_ub_for_some(ctx, tgt.numel, bad_at, f"nll_loss with a target outside [0, {C}) other "
                    f"than ignore_index {ignore}", "nll_loss_k")

    def weight_of(t: z3.BitVecRef) -> z3.ExprRef:
        return w.at(position(t)) if w is not None else dom.const(1.0)

    def loss_elem(ix: list[z3.BitVecRef]) -> z3.ExprRef:
        t = index_value(tgt.at_multi(ix), tgt.dtype, call.op)
        src = [position(t)] if x.ndim == 1 else [ix[0], position(t)] + list(ix[1:])
        term = dom.mul(dom.neg(x.at_multi(src)), weight_of(t))
        return zf.If(ignored(t), dom.const(0.0), term)

    def weight_elem(ix: list[z3.BitVecRef]) -> z3.ExprRef:
        t = index_value(tgt.at_multi(ix), tgt.dtype, call.op)
        return zf.If(ignored(t), dom.const(0.0), weight_of(t))

    loss = Tensor.from_fn(tgt.shape, x.dtype, loss_elem)
    if reduction_kind == "none":
        return checked_result(call, loss)
    n = tgt.numel
    total = reduction.reduce_sum(ctx, x.dtype, n, lambda r: loss.at(r))
    if reduction_kind == "mean":
        wts = Tensor.from_fn(tgt.shape, x.dtype, weight_elem)
        total = dom.div(total, reduction.reduce_sum(ctx, x.dtype, n, lambda r: wts.at(r)))
    return checked_result(call, Tensor.scalar(total, x.dtype))


# -- cross_entropy_with_logits ----------------------------------------------------------------

@register("relax.nn.cross_entropy_with_logits")
def encode_cross_entropy_with_logits(ctx: EncodeContext, call: OpCall, args: list) -> Tensor:
    """cross_entropy_with_logits(x, y) = -sum(x * y) / N, N = x.shape[0] when x.ndim >= 2 (no division for 1-D): a scalar; the sum is over all elements (uninterpreted, order-free); x and y of one shape and float dtype.

    The documented formula is sum_i(-x_i * y_i) / N (no softmax is applied: the predictions
    are taken as log-probabilities). In real arithmetic it equals -sum(x_i * y_i) / N, and
    in IEEE arithmetic too up to the sign of a zero result (RNE is symmetric, so negating
    every term negates every partial sum; only a sum that is exactly zero keeps +0.0 where
    the negated sum is -0.0). The documentation does not fix that sign; this encoding
    negates the sum, as TVM 0.27 computes it (legalized TIR: `sum(x * y) * -1.0 / N`), so
    the zero loss of e.g. all-zero labels is -0.0 (N = batch, rounded to the dtype).
    Measured on the VM: the same values as this formula (PyTorch's
    `cross_entropy(..., reduction="mean")` with probability targets would apply
    log_softmax first: Relax's op does not).
    """
    x, y = tensor_arg(args, 0, call), tensor_arg(args, 1, call)
    _float_data(call, x, "predictions")
    if y.shape != x.shape or y.dtype != x.dtype:
        raise Unsupported(f"relax.nn.cross_entropy_with_logits: labels {y.shape} {y.dtype} "
                          f"for predictions {x.shape} {x.dtype}")
    dom = ctx.dom(x.dtype)
    prod = elementwise(x.shape, x.dtype, [x, y], dom.mul)
    total = dom.neg(reduction.reduce_sum(ctx, x.dtype, prod.numel, lambda r: prod.at(r)))
    if x.ndim >= 2:
        total = dom.div(total, dom.const(float(x.shape[0])))
    return checked_result(call, Tensor.scalar(total, x.dtype))


# -- dropout ----------------------------------------------------------------------------------

@register("relax.nn.dropout")
def encode_dropout(ctx: EncodeContext, call: OpCall, args: list) -> tuple:
    """dropout(data, rate) -> (data, ones_like(data)): the inference-time semantics, the output the data unchanged (bit for bit, NaN and -0.0 included) and the mask all 1 in data's dtype; training-mode (random) dropout is not modelled.

    The Relax docstring describes training dropout (each element zeroed with probability
    `rate`, the rest scaled by 1/(1-rate)) but then says the result's first field "is the
    original tensor" and the second the mask (1.0 where not dropped): the op has no training
    flag and no seed, so no deterministic training semantics is defined. The inference
    semantics is the one deterministic reading the docstring supports (first field = the
    original tensor, nothing dropped so the mask is all ones), the one TVM 0.27 implements
    (LegalizeOps: `topi.identity(x)` and `full_like(x, 1.0)`, measured on the VM) and the one
    DecomposeOps-style inference rewrites rely on. It is one refinement of the random
    semantics (the outcome in which nothing is dropped, without the 1/(1-rate) scaling the
    docstring's "original tensor" rules out); a rewrite that is only correct for another
    random outcome is rejected. `rate` is not read (any value gives the same result).
    """
    x = tensor_arg(args, 0, call)
    ty = call.ty
    if not isinstance(ty, TupleType) or len(ty.fields) != 2:
        raise Unsupported(f"relax.nn.dropout with result type {ty}")
    dom = ctx.dom(x.dtype)
    one = dom.one()
    mask = Tensor.from_flat(x.shape, x.dtype, lambda i: one)
    return (checked_result(call, Tensor(x.shape, x.dtype, x.arr), ty.fields[0]),
            checked_result(call, mask, ty.fields[1]))
