"""softmax, log_softmax and the normalization layers (layer/batch/group/instance/RMS norm).

Each is the composition of reductions from `statistical.py` and elementwise float operations,
in the order the op's documentation writes the formula, so that a pass that decomposes the op
into Relax ops (DecomposeOpsForInference, LegalizeOps' Relax-level rewrites) meets the very
same SMT terms:
    softmax(x)   = exp(x - max(x)) / sum(exp(x - max(x)))        (the numerically stable form)
    layer_norm   = (x - mean(x)) / sqrt(var(x) + eps) * gamma + beta
    batch_norm   = (x - moving_mean) / sqrt(moving_var + eps) * gamma + beta   (inference)
                 = (x - mean(x)) / sqrt(var(x) + eps) * gamma + beta   (training; moving
                   statistics updated as moving * momentum + batch * (1 - momentum))
Statistics are numpy's: mean = sum / n and var = mean((x - mean)^2) (ddof = 0).
`eps` is rounded to the data's dtype (TVM emits it as a constant of that dtype).
"""
from __future__ import annotations

from typing import Sequence

from tvtv.absfp.dtypes import is_float
from tvtv.encode.context import EncodeContext
from tvtv.encode.ops.common import checked_result, norm_axis, tensor_arg
from tvtv.encode.ops.statistical import centered, mean_axes, reduce_axes, variance_axes
from tvtv.encode.registry import register
from tvtv.encode.tensor import Tensor, elementwise
from tvtv.errors import Unsupported
from tvtv.ir.program import OpCall, TupleType


def _float_input(call: OpCall, x: Tensor) -> None:
    if not is_float(x.dtype):
        raise Unsupported(f"{call.op} on dtype {x.dtype} (float dtypes only)")


def _axes_list(call: OpCall, key: str, ndim: int) -> list[int]:
    """A normalization op's `axes` attribute in the given order (not sorted: gamma's
    dimensions follow it), negative axes counted from the end."""
    raw = call.attrs.get(key)
    if raw is None:
        raise Unsupported(f"{call.op} without {key}")
    items = [raw] if isinstance(raw, int) else list(raw)
    out = [norm_axis(int(a), ndim) for a in items]
    if len(set(out)) != len(out) or any(not 0 <= a < ndim for a in out):
        raise Unsupported(f"{call.op}: {key}={raw!r} for rank {ndim}")
    return out


def along(p: Tensor, axes: Sequence[int], shape: Sequence[int]) -> Tensor:
    """A parameter tensor (gamma, beta, moving_mean, ...) indexed by the data's indices on
    `axes` (p's k-th dimension is the data's axis axes[k]), seen in the data's `shape`."""
    axes = list(axes)
    want = tuple(shape[a] for a in axes)
    if p.shape != want:
        raise Unsupported(f"parameter of shape {p.shape}, expected {want}")
    if axes == list(range(len(shape) - len(axes), len(shape))):
        return p    # trailing axes in order: numpy broadcasting already reads it right
    return Tensor.from_fn(tuple(shape), p.dtype, lambda ix: p.at_multi([ix[a] for a in axes]))


def normalize(ctx: EncodeContext, d: Tensor, var: Tensor, eps: float) -> Tensor:
    """d / sqrt(var + eps), `var` broadcast against the deviations `d`."""
    dom = ctx.dom(d.dtype)
    e = dom.const(eps)
    denom = elementwise(var.shape, var.dtype, [var], lambda v: dom.unary("sqrt", dom.add(v, e)))
    return elementwise(d.shape, d.dtype, [d, denom], dom.div)


def scale_shift(ctx: EncodeContext, y: Tensor, gamma: Tensor | None,
                beta: Tensor | None) -> Tensor:
    """y * gamma + beta (either step skipped when its parameter is None)."""
    dom = ctx.dom(y.dtype)
    if gamma is not None:
        y = elementwise(y.shape, y.dtype, [y, gamma], dom.mul)
    if beta is not None:
        y = elementwise(y.shape, y.dtype, [y, beta], dom.add)
    return y


def standardize(ctx: EncodeContext, x: Tensor, axes: Sequence[int], eps: float) -> Tensor:
    """(x - mean(x)) / sqrt(var(x) + eps) over `axes` (statistics with keepdims)."""
    d = centered(ctx, x, sorted(axes))
    var = variance_axes(ctx, x, sorted(axes), True, deviations=d)
    return normalize(ctx, d, var, eps)


# -- softmax ----------------------------------------------------------------------------------

def _softmax_parts(ctx: EncodeContext, call: OpCall, x: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """(x - max, exp(x - max), sum(exp(x - max))) along the op's axis, with keepdims."""
    _float_input(call, x)
    axis = norm_axis(int(call.attrs.get("axis", -1)), x.ndim)
    if not 0 <= axis < x.ndim:
        raise Unsupported(f"{call.op}: axis {call.attrs.get('axis')} for rank {x.ndim}")
    dom = ctx.dom(x.dtype)
    m = reduce_axes(ctx, x, [axis], True, "max")
    shifted = elementwise(x.shape, x.dtype, [x, m], dom.sub)
    e = elementwise(x.shape, x.dtype, [shifted], lambda v: dom.unary("exp", v))
    s = reduce_axes(ctx, e, [axis], True, "sum")
    return shifted, e, s


@register("relax.nn.softmax")
def encode_softmax(ctx: EncodeContext, call: OpCall, args: list) -> Tensor:
    """softmax = exp(x - max) / sum(exp(x - max)) along `axis` (the numerically stable form,
    as scipy and PyTorch compute it): a row holding NaN or +inf, or only -inf, is all NaN.

    The documented formula exp(x) / sum(exp(x)) is equal in real arithmetic; the stable form
    is what every implementation (TVM's legalization included) computes, and it decides the
    special values: max = +inf gives inf - inf = NaN; a row of all -inf gives
    -inf - -inf = NaN, so NaN too (as numpy/scipy give).
    """
    x = tensor_arg(args, 0, call)
    dom = ctx.dom(x.dtype)
    _, e, s = _softmax_parts(ctx, call, x)
    return checked_result(call, elementwise(x.shape, x.dtype, [e, s], dom.div))


@register("relax.nn.log_softmax")
def encode_log_softmax(ctx: EncodeContext, call: OpCall, args: list) -> Tensor:
    """log_softmax = (x - max) - log(sum(exp(x - max))) along `axis` (the stable form, as
    scipy/PyTorch compute it): a row holding NaN or +inf, or only -inf, is all NaN."""
    x = tensor_arg(args, 0, call)
    dom = ctx.dom(x.dtype)
    shifted, _, s = _softmax_parts(ctx, call, x)
    logs = elementwise(s.shape, s.dtype, [s], lambda v: dom.unary("log", v))
    return checked_result(call, elementwise(x.shape, x.dtype, [shifted, logs], dom.sub))


# -- normalization layers ---------------------------------------------------------------------

@register("relax.nn.layer_norm")
def encode_layer_norm(ctx: EncodeContext, call: OpCall, args: list) -> Tensor:
    """layer_norm = (x - mean) / sqrt(var + eps) * gamma + beta over `axes` (numpy mean/var,
    ddof=0; gamma and beta indexed by those axes in the given order; `scale`/`center` False
    drop gamma/beta); any NaN or inf in a group makes the group NaN.

    The documented formula, with `/ sqrt` (TVM's legalization computes E[x^2] - E[x]^2 and
    multiplies by rsqrt, which differs in rounding; that difference is LegalizeOps').
    """
    x, gamma, beta = (tensor_arg(args, k, call) for k in range(3))
    _float_input(call, x)
    axes = _axes_list(call, "axes", x.ndim)
    y = standardize(ctx, x, axes, float(call.attrs.get("epsilon", 1e-5)))
    g = along(gamma, axes, x.shape) if call.attrs.get("scale", True) else None
    b = along(beta, axes, x.shape) if call.attrs.get("center", True) else None
    return checked_result(call, scale_shift(ctx, y, g, b))


@register("relax.nn.batch_norm")
def encode_batch_norm(ctx: EncodeContext, call: OpCall, args: list) -> tuple:
    """batch_norm along `axis` -> (out, moving_mean', moving_var'): inference (training=False) normalizes with the moving statistics and returns them unchanged; training (the default) normalizes with the batch's mean and variance (ddof=0) over the other axes and returns moving * momentum + batch * (1 - momentum), as Relax documents (TVM 0.27 computes moving * (1 - momentum) + batch * momentum).

    Inference (training=False): out = ((x - moving_mean) / sqrt(moving_var + eps)) * gamma +
    beta, the moving statistics returned unchanged (TVM's VM and DecomposeOpsForInference do
    the same). Training (training=True, TVMScript's default): out normalizes with the batch's
    own statistics over every axis but `axis` (numpy mean and var, ddof=0), and the moving
    statistics are updated as Relax's documentation writes it:
    `moving_mean * momentum + data_mean * (1 - momentum)` (likewise the variance), with
    `momentum` and `1 - momentum` rounded to the dtype. NOTE: TVM 0.27's legalization (topi)
    and DecomposeOpsForTraining compute `(1 - momentum) * moving_mean + momentum * data_mean`
    instead (PyTorch's convention; measured on the VM): that disagreement is a finding.

    The operations are in DecomposeOpsForInference's / DecomposeOpsForTraining's order
    (subtract, add eps, sqrt, divide, multiply, add), so those passes meet the same terms.
    `scale`/`center` False drop gamma/beta.
    """
    x, gamma, beta, mmean, mvar = (tensor_arg(args, k, call) for k in range(5))
    _float_input(call, x)
    axis = norm_axis(int(call.attrs.get("axis", 1)), x.ndim)
    if not 0 <= axis < x.ndim:
        raise Unsupported(f"relax.nn.batch_norm: axis {call.attrs.get('axis')} for rank {x.ndim}")
    ty = call.ty
    if not isinstance(ty, TupleType) or len(ty.fields) != 3:
        raise Unsupported(f"relax.nn.batch_norm with result type {ty}")
    dom = ctx.dom(x.dtype)
    training = bool(call.attrs.get("training", True))
    # the statistics normalized with, per channel: the batch's (each reduction built once,
    # as DecomposeOpsForTraining computes them: mean, then the variance of the deviations)
    # or the moving ones
    others = [a for a in range(x.ndim) if a != axis]
    mean = mean_axes(ctx, x, others, False) if training else mmean
    d = elementwise(x.shape, x.dtype, [x, along(mean, [axis], x.shape)], dom.sub)
    var = variance_axes(ctx, x, others, False, deviations=d) if training else mvar
    y = normalize(ctx, d, along(var, [axis], x.shape), float(call.attrs.get("epsilon", 1e-5)))
    new_mean, new_var = mmean, mvar
    if training:
        momentum = float(call.attrs.get("momentum", 0.1))
        m, keep = dom.const(momentum), dom.const(1.0 - momentum)
        new_mean, new_var = (
            elementwise(old.shape, old.dtype, [old, stat],
                        lambda o, s: dom.add(dom.mul(o, m), dom.mul(s, keep)))
            for old, stat in ((mmean, mean), (mvar, var)))
    g = along(gamma, [axis], x.shape) if call.attrs.get("scale", True) else None
    b = along(beta, [axis], x.shape) if call.attrs.get("center", True) else None
    out = scale_shift(ctx, y, g, b)
    return (checked_result(call, out, ty.fields[0]), checked_result(call, new_mean, ty.fields[1]),
            checked_result(call, new_var, ty.fields[2]))


@register("relax.nn.group_norm")
def encode_group_norm(ctx: EncodeContext, call: OpCall, args: list) -> Tensor:
    """group_norm: split the channel axis into `num_groups` groups of consecutive channels and
    layer-normalize each group over its channels and `axes`: (x - mean) / sqrt(var + eps),
    then * gamma[c] + beta[c] per channel c (as TVM's VM computes it).

    Implemented on the row-major view of x with the channel axis split into
    (num_groups, channels // num_groups), which has the same flat layout.
    """
    x, gamma, beta = (tensor_arg(args, k, call) for k in range(3))
    _float_input(call, x)
    groups = int(call.attrs.get("num_groups", 1))
    c_axis = norm_axis(int(call.attrs.get("channel_axis", 1)), x.ndim)
    axes = _axes_list(call, "axes", x.ndim)
    if c_axis in axes or not 0 <= c_axis < x.ndim:
        raise Unsupported(f"relax.nn.group_norm: channel_axis {c_axis} with axes {axes}")
    channels = x.shape[c_axis]
    if groups <= 0 or channels % groups:
        raise Unsupported(f"relax.nn.group_norm: {channels} channels in {groups} groups")
    split = x.shape[:c_axis] + (groups, channels // groups) + x.shape[c_axis + 1:]
    xs = Tensor(split, x.dtype, x.arr)
    red = [c_axis + 1] + [a + 1 if a > c_axis else a for a in axes]
    ys = standardize(ctx, xs, red, float(call.attrs.get("epsilon", 1e-5)))
    y = Tensor(x.shape, x.dtype, ys.arr)
    g = along(gamma, [c_axis], x.shape) if call.attrs.get("scale", True) else None
    b = along(beta, [c_axis], x.shape) if call.attrs.get("center", True) else None
    return checked_result(call, scale_shift(ctx, y, g, b))


@register("relax.nn.instance_norm")
def encode_instance_norm(ctx: EncodeContext, call: OpCall, args: list) -> Tensor:
    """instance_norm = (x - mean) / sqrt(var + eps) * gamma[c] + beta[c], the statistics over
    `axes` (per sample and channel), gamma/beta indexed by `channel_axis` (as TVM's VM)."""
    x, gamma, beta = (tensor_arg(args, k, call) for k in range(3))
    _float_input(call, x)
    c_axis = norm_axis(int(call.attrs.get("channel_axis", 1)), x.ndim)
    axes = _axes_list(call, "axes", x.ndim)
    if c_axis in axes or not 0 <= c_axis < x.ndim:
        raise Unsupported(f"relax.nn.instance_norm: channel_axis {c_axis} with axes {axes}")
    y = standardize(ctx, x, axes, float(call.attrs.get("epsilon", 1e-5)))
    g = along(gamma, [c_axis], x.shape) if call.attrs.get("scale", True) else None
    b = along(beta, [c_axis], x.shape) if call.attrs.get("center", True) else None
    return checked_result(call, scale_shift(ctx, y, g, b))


@register("relax.nn.rms_norm")
def encode_rms_norm(ctx: EncodeContext, call: OpCall, args: list) -> Tensor:
    """rms_norm = x / sqrt(mean(x * x) + eps) * weight over `axes` (weight indexed by those
    axes in the given order); the documentation's `mean(data)` means the mean square.

    Division by sqrt as documented (TVM's legalization multiplies by rsqrt).
    """
    x, weight = tensor_arg(args, 0, call), tensor_arg(args, 1, call)
    _float_input(call, x)
    axes = _axes_list(call, "axes", x.ndim)
    dom = ctx.dom(x.dtype)
    sq = elementwise(x.shape, x.dtype, [x], lambda v: dom.mul(v, v))
    ms = mean_axes(ctx, sq, sorted(axes), True)
    y = normalize(ctx, x, ms, float(call.attrs.get("epsilon", 1e-5)))
    return checked_result(call, scale_shift(ctx, y, along(weight, axes, x.shape), None))
