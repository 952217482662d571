"""Reductions over axes (sum, mean, max, ...), arg-reductions and cumulative scans.

Semantics: numpy's, on the op's dtype (TVM keeps the input dtype: an int32 sum wraps in
int32, where numpy would widen). The order of a float sum or product is unspecified, so
those are the uninterpreted reductions of `tvtv/encode/reduction.py` with their IEEE special
cases fixed; max/min/argmax/argmin are exact folds (NaN propagates / wins, as in numpy).

Every reduction goes through `reduce_axes`, so two reductions over the same terms (e.g. the
mean inside `relax.nn.layer_norm` and an explicit `relax.mean` after DecomposeOps...) are
the same SMT term. The normalization encoders (`normalization.py`) build on `mean_axes` and
`variance_axes` for that reason.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import z3

from tvtv import z3fast as zf
from tvtv.absfp.dtypes import is_bool, is_float, is_int
from tvtv.encode import reduction
from tvtv.encode.context import EncodeContext
from tvtv.encode.ops.common import norm_axis, out_type, tensor_arg
from tvtv.encode.registry import register
from tvtv.encode.tensor import Tensor, elementwise, idx, strides, unravel
from tvtv.errors import Unsupported
from tvtv.ir.program import OpCall

# The longest axis a cumulative scan is unrolled over (its term grows linearly with it).
SCAN_BOUND = 1024


# -- axes and index maps ----------------------------------------------------------------------

def reduce_axes_attr(axis: Any, ndim: int, op: str) -> list[int]:
    """Relax's `axis` attribute (None = every axis, an int, or a list; negatives count from
    the end) as a sorted list of distinct non-negative axes."""
    if axis is None:
        return list(range(ndim))
    items = [axis] if isinstance(axis, int) else list(axis)
    out = []
    for a in items:
        if not isinstance(a, int):
            raise Unsupported(f"{op}: non-literal axis {a!r}")
        n = norm_axis(a, ndim)
        if not 0 <= n < ndim:
            raise Unsupported(f"{op}: axis {a} out of range for rank {ndim}")
        if n in out:
            raise Unsupported(f"{op}: repeated axis {a}")
        out.append(n)
    return sorted(out)


@dataclass(frozen=True)
class ReduceView:
    """How the reduction of a tensor of shape `in_shape` over `axes` reads its input.

    An output element (multi-index `out_ix` of `out_shape`) reduces the `n` input elements
    whose indices agree with it on the kept axes; reduction index r (0 <= r < n) runs over
    the reduced axes in row-major order.
    """

    in_shape: tuple[int, ...]
    axes: tuple[int, ...]
    keepdims: bool

    @property
    def red_shape(self) -> tuple[int, ...]:
        return tuple(self.in_shape[a] for a in self.axes)

    @property
    def n(self) -> int:
        return math.prod(self.red_shape)

    @property
    def out_shape(self) -> tuple[int, ...]:
        if self.keepdims:
            return tuple(1 if k in self.axes else d for k, d in enumerate(self.in_shape))
        return tuple(d for k, d in enumerate(self.in_shape) if k not in self.axes)

    def kept_indices(self, out_ix: Sequence[z3.BitVecRef]) -> dict[int, z3.BitVecRef]:
        """Input axis -> index, for the kept axes, from an output multi-index."""
        kept = [k for k in range(len(self.in_shape)) if k not in self.axes]
        if self.keepdims:
            return {k: out_ix[k] for k in kept}
        return dict(zip(kept, out_ix))

    def source(self, out_ix: Sequence[z3.BitVecRef], r: z3.BitVecRef) -> z3.BitVecRef:
        """Flat input index of reduction term r of output element `out_ix`."""
        kept = self.kept_indices(out_ix)
        st = strides(self.in_shape)
        terms: list[z3.BitVecRef] = []
        for k, ix in kept.items():
            if self.in_shape[k] != 1:
                terms.append(ix if st[k] == 1 else ix * idx(st[k]))
        axes = list(self.axes)
        if axes and axes == list(range(axes[0], axes[-1] + 1)):
            # a contiguous block of axes: its row-major index is r times the block's stride
            s = st[axes[-1]]
            terms.append(r if s == 1 else r * idx(s))
        else:
            for a, ra in zip(axes, unravel(r, self.red_shape)):
                if self.in_shape[a] != 1:
                    terms.append(ra if st[a] == 1 else ra * idx(st[a]))
        total = terms[0] if terms else idx(0)
        for t in terms[1:]:
            total = total + t
        return total


def reduce_with(x: Tensor, axes: Sequence[int], keepdims: bool, dtype: str,
                reducer: Callable[[int, reduction.Elem], z3.ExprRef]) -> Tensor:
    """The tensor of `reducer(n, elem)` for every output element, elem(r) reading term r."""
    view = ReduceView(x.shape, tuple(axes), keepdims)
    n = view.n

    def out_elem(out_ix: list[z3.BitVecRef]) -> z3.ExprRef:
        return reducer(n, lambda r: x.at(view.source(out_ix, r)))

    return Tensor.from_fn(view.out_shape, dtype, out_elem)


def reduce_axes(ctx: EncodeContext, x: Tensor, axes: Sequence[int], keepdims: bool,
                kind: str) -> Tensor:
    """sum / prod / max / min of `x` over `axes` (see `tvtv/encode/reduction.py`)."""
    dt = x.dtype
    if kind in ("sum", "prod") and is_bool(dt):   # any / all (`reduction.reduce_bool`)
        return reduce_with(x, axes, keepdims, dt, lambda n, e: reduction.reduce_bool(ctx, kind, n, e))
    if kind == "sum":
        return reduce_with(x, axes, keepdims, dt, lambda n, e: reduction.reduce_sum(ctx, dt, n, e))
    if kind == "prod":
        return reduce_with(x, axes, keepdims, dt, lambda n, e: reduction.reduce_prod(ctx, dt, n, e))
    if kind in ("max", "min"):
        if ReduceView(x.shape, tuple(axes), keepdims).n == 0:
            raise Unsupported(f"{kind} over an empty axis")
        return reduce_with(x, axes, keepdims, dt,
                           lambda n, e: reduction.reduce_fold(ctx, dt, n, e, kind))
    raise ValueError(kind)


def _numeric(dtype: str, op: str) -> None:
    if not (is_float(dtype) or is_int(dtype)):
        raise Unsupported(f"{op} on dtype {dtype}")


def count_const(ctx: EncodeContext, dtype: str, n: int) -> z3.ExprRef:
    """The element count `n` of a mean as a constant of `dtype`, the divisor of sum / n: a
    float, or for integers the count itself, which must be positive and fit the dtype."""
    if is_int(dtype):
        bits = int("".join(c for c in dtype if c.isdigit()))
        limit = (1 << (bits - 1)) - 1 if dtype.startswith("int") else (1 << bits) - 1
        if not 0 < n <= limit:
            raise Unsupported(f"integer mean over {n} elements does not fit {dtype}")
        return ctx.dom(dtype).const(n)
    return ctx.dom(dtype).const(float(n))


def divide_by_count(ctx: EncodeContext, s: Tensor, n: int) -> Tensor:
    """s / n elementwise: IEEE division for floats, truncating division for integers."""
    dom = ctx.dom(s.dtype)
    count = count_const(ctx, s.dtype, n)
    return elementwise(s.shape, s.dtype, [s], lambda v: dom.div(v, count))


def mean_axes(ctx: EncodeContext, x: Tensor, axes: Sequence[int], keepdims: bool) -> Tensor:
    """sum(x over axes) / n, n being the number of reduced elements."""
    _numeric(x.dtype, "mean")
    n = ReduceView(x.shape, tuple(axes), keepdims).n
    return divide_by_count(ctx, reduce_axes(ctx, x, axes, keepdims, "sum"), n)


def centered(ctx: EncodeContext, x: Tensor, axes: Sequence[int]) -> Tensor:
    """x - mean(x, axes, keepdims=True) (the deviations, broadcast back to x's shape)."""
    m = mean_axes(ctx, x, axes, True)
    dom = ctx.dom(x.dtype)
    return elementwise(x.shape, x.dtype, [x, m], dom.sub)


def variance_axes(ctx: EncodeContext, x: Tensor, axes: Sequence[int], keepdims: bool,
                  deviations: Tensor | None = None) -> Tensor:
    """mean((x - mean(x))^2) over axes (numpy's var with ddof=0). `deviations` may pass the
    already built `centered(ctx, x, axes)` so that callers share the term."""
    d = deviations if deviations is not None else centered(ctx, x, axes)
    dom = ctx.dom(x.dtype)
    sq = elementwise(d.shape, d.dtype, [d], lambda v: dom.mul(v, v))
    return mean_axes(ctx, sq, axes, keepdims)


def _check_shape(call: OpCall, t: Tensor) -> Tensor:
    ty = out_type(call)
    if tuple(ty.shape) != t.shape or ty.dtype != t.dtype:
        raise Unsupported(f"{call.op}: encoded result {t.shape} {t.dtype} differs from TVM's "
                          f"inferred type {ty}")
    return t


def _axes_of(call: OpCall, x: Tensor) -> tuple[list[int], bool]:
    return (reduce_axes_attr(call.attrs.get("axis"), x.ndim, call.op),
            bool(call.attrs.get("keepdims", False)))


# -- encoders ---------------------------------------------------------------------------------

@register("relax.sum")
def encode_sum(ctx: EncodeContext, call: OpCall, args: list) -> Tensor:
    """Sum over `axis` (None = all) in an unspecified order starting from +0.0 (numpy:
    sum([-0.0]) is +0.0): a NaN term or both infinities give NaN, a ±inf term gives ±inf or
    NaN (finite terms may overflow first in some order), all-zero terms give +0.0; integer
    sums wrap in the input dtype; a bool sum is `any` (bool arithmetic saturates in TVM).

    Float sums of n >= 2 terms are uninterpreted functions of their terms
    (`tvtv/encode/reduction.py`); one term is exactly +0.0 + x; integer sums are exact
    (two's complement, in the input dtype as TVM infers it, where numpy would widen). An
    empty axis list (`axis=[]`) reduces one element, as numpy's `sum(axis=())` does (so -0.0
    becomes +0.0, which TVM also computes).
    """
    x = tensor_arg(args, 0, call)
    axes, keep = _axes_of(call, x)
    return _check_shape(call, reduce_axes(ctx, x, axes, keep, "sum"))


@register("relax.prod")
def encode_prod(ctx: EncodeContext, call: OpCall, args: list) -> Tensor:
    """Product over `axis` in an unspecified order: any NaN gives NaN, one term is 1.0 * x
    (exact), integers wrap, a bool product is `all`; other float products are uninterpreted.

    The product of +inf and 0 (NaN in IEEE) is left to the uninterpreted function, which
    admits it (sound but not precise).
    """
    x = tensor_arg(args, 0, call)
    axes, keep = _axes_of(call, x)
    return _check_shape(call, reduce_axes(ctx, x, axes, keep, "prod"))


@register("relax.max", "relax.min")
def encode_max_min(ctx: EncodeContext, call: OpCall, args: list) -> Tensor:
    """numpy max/min over `axis`: NaN propagates, max over all -inf is -inf, max(-0.0, +0.0)
    keeps the later of equal elements (numpy.maximum's left fold); exact up to 512 terms.

    (TVM's legalization ignores NaN: max([1, nan, 2]) runs as 2.0 on the VM; the Relax op
    follows numpy here, so LegalizeOps shows that difference.) Above 512 terms the result is
    an uninterpreted function that is still NaN when any term is NaN.
    """
    x = tensor_arg(args, 0, call)
    axes, keep = _axes_of(call, x)
    kind = call.op.split(".")[-1]
    return _check_shape(call, reduce_axes(ctx, x, axes, keep, kind))


@register("relax.mean")
def encode_mean(ctx: EncodeContext, call: OpCall, args: list) -> Tensor:
    """mean = sum / n over `axis` (any NaN gives NaN); for integer dtypes TVM keeps the dtype
    and the division truncates toward zero (as TVM computes it: mean([3, -8]) = -2).

    numpy has no integer mean (it returns float64), so the integer case follows TVM's C-style
    `/`; the sum itself wraps in the input dtype.
    """
    x = tensor_arg(args, 0, call)
    axes, keep = _axes_of(call, x)
    return _check_shape(call, mean_axes(ctx, x, axes, keep))


@register("relax.variance")
def encode_variance(ctx: EncodeContext, call: OpCall, args: list) -> Tensor:
    """variance = mean((x - mean(x))^2) over `axis` (numpy var, ddof=0; any NaN or inf gives
    NaN); integers use wrapping arithmetic and truncating division, as TVM computes them.

    The inner mean is taken with keepdims and broadcast back, so the deviations term is the
    one layer_norm and friends build.
    """
    x = tensor_arg(args, 0, call)
    axes, keep = _axes_of(call, x)
    return _check_shape(call, variance_axes(ctx, x, axes, keep))


@register("relax.std")
def encode_std(ctx: EncodeContext, call: OpCall, args: list) -> Tensor:
    """std = sqrt(variance) (numpy std, ddof=0); integer std is unsupported (no integer sqrt
    semantics is documented).
    """
    x = tensor_arg(args, 0, call)
    if not is_float(x.dtype):
        raise Unsupported(f"relax.std on dtype {x.dtype}")
    axes, keep = _axes_of(call, x)
    var = variance_axes(ctx, x, axes, keep)
    dom = ctx.dom(x.dtype)
    return _check_shape(call, elementwise(var.shape, var.dtype, [var],
                                          lambda v: dom.unary("sqrt", v)))


@register("relax.argmax", "relax.argmin")
def encode_argmax_argmin(ctx: EncodeContext, call: OpCall, args: list) -> Tensor:
    """numpy argmax/argmin along `axis` (None = the flattened tensor): the index of the first
    extreme element, the first NaN winning; exact up to 64 candidates, above that
    uninterpreted below the unrolling rung (exact up to 512 there and on concrete inputs).

    The result dtype is TVM's inferred one (int64).
    """
    x = tensor_arg(args, 0, call)
    axes, keep = _axes_of(call, x)
    ty = out_type(call)
    kind = call.op.split(".")[-1][3:]
    if ReduceView(x.shape, tuple(axes), keep).n == 0:
        raise Unsupported(f"{call.op} over an empty axis")
    dt = x.dtype
    return _check_shape(call, reduce_with(
        x, axes, keep, ty.dtype,
        lambda n, e: reduction.reduce_arg(ctx, dt, n, e, kind, out_dtype=ty.dtype)))


@register("relax.cumsum", "relax.cumprod")
def encode_cumulative(ctx: EncodeContext, call: OpCall, args: list) -> Tensor:
    """numpy cumsum/cumprod along `axis` (None = flattened): a sequential left fold c_0 = x_0,
    c_j = c_{j-1} + x_j (numpy's accumulate, so it is exact IEEE, -0.0 stays -0.0); with
    `exclusive` the fold starts from the identity: out_0 = +0.0 (1 for prod), out_j =
    ((0 + x_0) + ...) + x_{j-1}, which is what TVM computes.

    `dtype` (when given) is the accumulator and result dtype: the input is cast to it first.
    Unrolled for axes up to `SCAN_BOUND` long (the term is linear in the axis length).
    """
    x = tensor_arg(args, 0, call)
    ty = out_type(call)
    axis = call.attrs.get("axis")
    exclusive = bool(call.attrs.get("exclusive", False))
    dtype = call.attrs.get("dtype") or x.dtype
    if dtype in ("void", ""):
        dtype = x.dtype
    _numeric(dtype, call.op)
    if axis is None:
        x = Tensor((x.numel,), x.dtype, x.arr)   # the flattened view: same row-major order
        axis = 0
    if isinstance(axis, (list, tuple)):
        raise Unsupported(f"{call.op}: axis {axis!r}")
    axis = norm_axis(axis, x.ndim)
    length = x.shape[axis]
    if length > SCAN_BOUND:
        raise Unsupported(f"{call.op} along an axis of {length} elements (limit {SCAN_BOUND})")
    src_dt = x.dtype
    dom = ctx.dom(dtype)
    step = dom.add if call.op == "relax.cumsum" else dom.mul
    identity = dom.const(0.0 if is_float(dtype) else 0) if call.op == "relax.cumsum" \
        else dom.one()
    shape = x.shape

    def elem(ix: list[z3.BitVecRef]) -> z3.ExprRef:
        def read(k: int) -> z3.ExprRef:
            jx = list(ix)
            jx[axis] = idx(k)
            return ctx.model.cast(x.at_multi(jx), src_dt, dtype)
        # prefixes[j] is the value at position j along the axis
        prefixes = []
        if exclusive:
            acc = identity
            for k in range(length):
                prefixes.append(acc)
                acc = step(acc, read(k))
        else:
            acc = read(0) if length else identity
            prefixes.append(acc)
            for k in range(1, length):
                acc = step(acc, read(k))
                prefixes.append(acc)
        j = ix[axis]
        out = prefixes[-1] if prefixes else identity
        for k in range(len(prefixes) - 2, -1, -1):
            out = zf.If(j == idx(k), prefixes[k], out)
        return out

    return _check_shape(call, Tensor.from_fn(shape, dtype, elem))
