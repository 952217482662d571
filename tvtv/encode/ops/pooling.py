"""Pooling: max_pool1d/2d/3d, avg_pool1d/2d/3d, adaptive_avg_pool1d/2d/3d.

Window geometry (layouts, strides, padding, dilation) is shared with the convolutions
(`convolution.py`). Semantics follow PyTorch where TVM's documentation is silent:
- max pooling: padding is -inf (it never wins), so an element is the exact left fold of
  numpy.maximum over the window's taps (`reduce_fold`; NaN propagates, max over only
  -inf/padding is -inf; windows of more than `reduction.MAXMIN_FOLD_BOUND` = 512 taps are
  uninterpreted with NaN fixed). TVM's legalization pads with -FLT_MAX instead, which differs
  exactly when a window holds only -inf and padding; that difference is meant to be found.
- average pooling: the input is zero-padded; the sum over the window (`reduce_sum`,
  padded taps are +0.0 terms) is divided by the number of taps inside the input
  (count_include_pad=False) or inside the padded input (count_include_pad=True; taps of a
  ceil_mode window that fall beyond the padding are never counted, as in PyTorch and TVM).
  An element whose window holds no counted tap is NaN (0/0, as numpy's mean of nothing).
- adaptive average pooling: output i averages input [floor(i*L/O), ceil((i+1)*L/O)) per
  dimension (PyTorch), a `reduce_sum` of exactly the window's elements divided by its size.
- integer averages are `relax.mean`'s: the sum wraps in the dtype and the division by the
  count truncates toward zero (PyTorch has no integer average pooling; TVM's legalization
  computes exactly this, measured: [3, -8] averages to -2). An integer window of only padding
  (count_include_pad=False) averages to 0: its sum, 0, divided by max(count, 1), which is
  what TVM's legalization computes (measured on the VM). No integer is the mean of nothing,
  and making it undefined would make every run of such a graph undefined (windows are
  static), so every target would refine it; TVM's value keeps the rest of the graph checked.
"""
from __future__ import annotations

import math
import numpy as np
import z3

from tvtv import z3fast as zf
from tvtv.absfp.dtypes import is_float, is_int, numpy_dtype
from tvtv.encode.context import EncodeContext
from tvtv.encode.ops.common import out_type, tensor_arg
from tvtv.encode.ops.convolution import (SPATIAL, as_index, canonical_reader, canonical_shape,
                                         canonical_tensor, check_layout, in_range, int_list,
                                         padding, tap)
from tvtv.encode.ops.statistical import count_const
from tvtv.encode.reduction import reduce_fold, reduce_sum
from tvtv.encode.registry import register
from tvtv.encode.tensor import Tensor, idx, unravel
from tvtv.errors import Unsupported
from tvtv.ir.program import OpCall


class Window:
    """The static geometry of a (non-adaptive) pooling op in canonical (N, C, spatial) order."""

    def __init__(self, call: OpCall, x: Tensor, nd: int, what: str = "result type") -> None:
        """`what` names the tensor of the pooled shape in errors (a gradient's output_grad)."""
        attrs = call.attrs
        ty = out_type(call)
        self.canon = "NC" + SPATIAL[nd]
        self.layout = check_layout(attrs.get("layout"), self.canon, "data")
        self.out_layout = check_layout(attrs.get("out_layout") or self.layout, self.canon, "out")
        n_b, ch, *self.in_sz = canonical_shape(x.shape, self.layout, self.canon)
        self.k = int_list(attrs, "pool_size", nd, 1)
        self.s = int_list(attrs, "strides", nd, 1)
        self.d = int_list(attrs, "dilation", nd, 1)
        self.lo, self.hi = padding(attrs, nd)
        self.ceil = bool(attrs.get("ceil_mode", False))
        self.out_sz = [self._out_len(i, k, s, d, a, b) for i, k, s, d, a, b in
                       zip(self.in_sz, self.k, self.s, self.d, self.lo, self.hi)]
        if canonical_shape(ty.shape, self.out_layout, self.canon) != [n_b, ch, *self.out_sz]:
            raise Unsupported(f"{call.op} {what} {ty}, expected {[n_b, ch, *self.out_sz]}")
        self.shape, self.dtype = ty.shape, ty.dtype
        self.n = math.prod(self.k)
        self.read = canonical_reader(x, self.layout, self.canon)
        # largest padded-input position any tap reaches, per dimension
        self.max_p = [(o - 1) * s + (k - 1) * d for o, s, k, d in
                      zip(self.out_sz, self.s, self.k, self.d)]

    def _out_len(self, i: int, k: int, s: int, d: int, a: int, b: int) -> int:
        span = i + a + b - d * (k - 1) - 1
        if not self.ceil:
            return span // s + 1
        out = -(-span // s) + 1
        # PyTorch (and TVM): the last window must start inside the input or its front padding
        if (out - 1) * s >= i + a:
            out -= 1
        return out

    def taps(self, sp: list[z3.BitVecRef], r: z3.BitVecRef) -> list[z3.BitVecRef]:
        """Padded-input positions of tap r (row-major over the pool window) of output sp."""
        return [tap(o, k, s, d) for o, k, s, d in zip(sp, unravel(r, self.k), self.s, self.d)]

    def inside(self, pos: list[z3.BitVecRef]) -> list[z3.BoolRef]:
        """Conditions: the tap lies in the input (not in padding or beyond)."""
        conds = []
        for p, a, i, m in zip(pos, self.lo, self.in_sz, self.max_p):
            conds += in_range(p, a, a + i, m)
        return conds

    def input_at(self, nb: z3.BitVecRef, c: z3.BitVecRef, pos: list[z3.BitVecRef]) -> z3.ExprRef:
        return self.read([nb, c, *[p if a == 0 else p - idx(a) for p, a in zip(pos, self.lo)]])

    def counts(self, include_pad: bool) -> list[list[int]]:
        """Per dimension, the number of counted taps of each output position (static)."""
        out = []
        for i, k, s, d, a, b, o_len in zip(self.in_sz, self.k, self.s, self.d, self.lo,
                                           self.hi, self.out_sz):
            lo_ok, hi_ok = (0, a + i + b) if include_pad else (a, a + i)
            out.append([sum(lo_ok <= o * s + t * d < hi_ok for t in range(k))
                        for o in range(o_len)])
        return out


def _lowest(dtype: str) -> float | int:
    """The value padding takes in max pooling: -inf, or the dtype's minimum for integers."""
    if is_float(dtype):
        return float("-inf")
    if dtype == "bool":
        return 0
    return int(np.iinfo(numpy_dtype(dtype)).min)


def _max_pool(ctx: EncodeContext, call: OpCall, args: list, nd: int) -> Tensor:
    x = tensor_arg(args, 0, call)
    win = Window(call, x, nd)
    if win.dtype == "bool":
        raise Unsupported(f"{call.op} on bool tensors")
    dom = ctx.dom(win.dtype)
    pad = dom.const(_lowest(win.dtype))

    def element(ix: list[z3.BitVecRef]) -> z3.ExprRef:
        nb, c, *sp = ix

        def term(r: z3.BitVecRef) -> z3.ExprRef:
            pos = win.taps(sp, r)
            conds = win.inside(pos)
            v = win.input_at(nb, c, pos)
            return zf.If(zf.And(*conds), v, pad) if conds else v

        return reduce_fold(ctx, win.dtype, win.n, term, "max")

    return canonical_tensor(win.shape, win.out_layout, win.canon, win.dtype, element)


def _avg_pool(ctx: EncodeContext, call: OpCall, args: list, nd: int) -> Tensor:
    x = tensor_arg(args, 0, call)
    win = Window(call, x, nd)
    _averageable(call, win.dtype)
    include_pad = bool(call.attrs.get("count_include_pad", False))
    dom = ctx.dom(win.dtype)
    zero = dom.const(0.0 if is_float(win.dtype) else 0)
    possible = possible_counts(win, include_pad)

    def element(ix: list[z3.BitVecRef]) -> z3.ExprRef:
        nb, c, *sp = ix

        def term(r: z3.BitVecRef) -> z3.ExprRef:
            pos = win.taps(sp, r)
            conds = win.inside(pos)
            v = win.input_at(nb, c, pos)
            # zero padding: a padded tap is a +0.0 term (harmless: the sum starts from +0.0)
            return zf.If(zf.And(*conds), v, zero) if conds else v

        total = reduce_sum(ctx, win.dtype, win.n, term)
        return divide_by_count(ctx, win, total, sp, include_pad, possible)

    return canonical_tensor(win.shape, win.out_layout, win.canon, win.dtype, element)


def possible_counts(win: Window, include_pad: bool) -> list[int]:
    """The divisors avg_pool's windows can have (their numbers of counted taps), sorted."""
    return sorted({math.prod(c) for c in _product(win.counts(include_pad))})


def divide_by_count(ctx: EncodeContext, win: Window, total: z3.ExprRef, sp: list[z3.BitVecRef],
                    include_pad: bool, possible: list[int]) -> z3.ExprRef:
    """total / the number of counted taps of output position sp (one of `possible`): an
    If over the possible counts, each a division by a constant (`_average`)."""
    if len(possible) == 1:
        return _average(ctx, win.dtype, total, possible[0])
    count = _count_term(win, sp, include_pad)
    result = _average(ctx, win.dtype, total, possible[-1])
    for cnt in reversed(possible[:-1]):
        result = zf.If(count == idx(cnt), _average(ctx, win.dtype, total, cnt), result)
    return result


def _product(lists: list[list[int]]) -> list[tuple[int, ...]]:
    out: list[tuple[int, ...]] = [()]
    for values in lists:
        out = [t + (v,) for t in out for v in sorted(set(values))]
    return out


def _count_term(win: Window, sp: list[z3.BitVecRef], include_pad: bool) -> z3.BitVecRef:
    """The number of counted taps of output position sp (a bit-vector term)."""
    total: z3.BitVecRef | None = None
    for dim, (o, k, s, d) in enumerate(zip(sp, win.k, win.s, win.d)):
        n_dim: z3.BitVecRef = idx(0)
        for t in range(k):
            conds = _dim_conds(win, dim, tap(o, t, s, d), include_pad)
            n_dim = n_dim + (zf.If(zf.And(*conds), idx(1), idx(0)) if conds else idx(1))
        total = n_dim if total is None else total * n_dim
    return total if total is not None else idx(1)


def _dim_conds(win: Window, dim: int, p: z3.BitVecRef, include_pad: bool) -> list[z3.BoolRef]:
    a, b, i, m = win.lo[dim], win.hi[dim], win.in_sz[dim], win.max_p[dim]
    return in_range(p, 0, a + i + b, m) if include_pad else in_range(p, a, a + i, m)


def _averageable(call: OpCall, dtype: str) -> None:
    if not (is_float(dtype) or is_int(dtype)):
        raise Unsupported(f"{call.op} on {dtype} tensors")


def _average(ctx: EncodeContext, dtype: str, total: z3.ExprRef, count: int) -> z3.ExprRef:
    """total / count: IEEE division for floats (an empty window is 0 / 0 = NaN), truncating
    division for integers, as `relax.mean` (the sum wraps in the dtype; an empty window is
    its sum, 0, over max(count, 1) as TVM computes it: see the module doc)."""
    dom = ctx.dom(dtype)
    if count == 0:
        return dom.nan() if is_float(dtype) else total
    return dom.div(total, count_const(ctx, dtype, count))


@register("relax.nn.max_pool1d")
def encode_max_pool1d(ctx: EncodeContext, call: OpCall, args: list) -> Tensor:
    """Max over each window (PyTorch max_pool1d) as an exact left fold of numpy.maximum: padding is -inf and never wins (all-padding/-inf window -> -inf; integers pad with the dtype's minimum), NaN propagates, ceil_mode windows must start inside the input or front padding.

    NOTE: TVM's legalization pads with -FLT_MAX, which differs when a window holds only -inf
    and padding; this is intended to be found, not copied.
    """
    return _max_pool(ctx, call, args, 1)


@register("relax.nn.max_pool2d")
def encode_max_pool2d(ctx: EncodeContext, call: OpCall, args: list) -> Tensor:
    """Max over each window (PyTorch max_pool2d) as an exact left fold of numpy.maximum: padding is -inf and never wins (all-padding/-inf window -> -inf; integers pad with the dtype's minimum), NaN propagates, ceil_mode windows must start inside the input or front padding.

    Padding is (top, left, bottom, right); layouts are permutations of NCHW (e.g. NHWC).
    NOTE: TVM's legalization pads with -FLT_MAX, which differs when a window holds only -inf
    and padding; this is intended to be found, not copied.
    """
    return _max_pool(ctx, call, args, 2)


@register("relax.nn.max_pool3d")
def encode_max_pool3d(ctx: EncodeContext, call: OpCall, args: list) -> Tensor:
    """max_pool2d's semantics with three spatial dimensions: exact fold of numpy.maximum, -inf padding never wins, NaN propagates."""
    return _max_pool(ctx, call, args, 3)


@register("relax.nn.avg_pool1d")
def encode_avg_pool1d(ctx: EncodeContext, call: OpCall, args: list) -> Tensor:
    """Window sum (`reduce_sum`, zero padding as +0.0 terms) divided by the number of taps in the input (count_include_pad=False) or in the padded input (True; ceil_mode overhang never counts, as PyTorch), an empty window giving NaN (integers: 0, as TVM); integers wrap and divide truncating, as relax.mean.

    Note: TVM's avg_pool1d defaults to count_include_pad=True, avg_pool2d to False; the
    attribute is read from the call.
    """
    return _avg_pool(ctx, call, args, 1)


@register("relax.nn.avg_pool2d")
def encode_avg_pool2d(ctx: EncodeContext, call: OpCall, args: list) -> Tensor:
    """Window sum (`reduce_sum`, zero padding as +0.0 terms) divided by the number of taps in the input (count_include_pad=False) or in the padded input (True; ceil_mode overhang never counts, as PyTorch), an empty window giving NaN (integers: 0, as TVM); integers wrap and divide truncating, as relax.mean.

    The division is one IEEE division of the sum by the count (exact count as a float).
    """
    return _avg_pool(ctx, call, args, 2)


@register("relax.nn.avg_pool3d")
def encode_avg_pool3d(ctx: EncodeContext, call: OpCall, args: list) -> Tensor:
    """avg_pool2d's semantics with three spatial dimensions: window sum (zero padding as +0.0 terms) / number of counted taps, NaN for an empty window (integers: 0, as TVM); integers as relax.mean."""
    return _avg_pool(ctx, call, args, 3)


# -- adaptive average pooling ----------------------------------------------------------------

def _adaptive_avg_pool(ctx: EncodeContext, call: OpCall, args: list, nd: int) -> Tensor:
    x = tensor_arg(args, 0, call)
    ty = out_type(call)
    _averageable(call, ty.dtype)
    canon = "NC" + SPATIAL[nd]
    layout = check_layout(call.attrs.get("layout"), canon, "data")
    out_layout = check_layout(call.attrs.get("out_layout") or layout, canon, "out")
    n_b, ch, *in_sz = canonical_shape(x.shape, layout, canon)
    osz = call.attrs.get("output_size")
    out_sz = in_sz if osz is None else int_list(call.attrs, "output_size", nd, 1)
    if canonical_shape(ty.shape, out_layout, canon) != [n_b, ch, *out_sz]:
        raise Unsupported(f"{call.op} result type {ty}, expected {[n_b, ch, *out_sz]}")
    if any(o == 0 for o in out_sz):
        return canonical_tensor(ty.shape, out_layout, canon, ty.dtype, lambda ix: ctx.dom(ty.dtype).zero())
    read = canonical_reader(x, layout, canon)

    def start(o: z3.BitVecRef, i: int, out: int) -> z3.BitVecRef:
        return z3.UDiv(as_index(o) * idx(i), idx(out))                     # floor(o*L/O)

    def size(o: z3.BitVecRef, i: int, out: int) -> z3.BitVecRef:
        end = z3.UDiv(as_index(o) * idx(i) + idx(i + out - 1), idx(out))  # ceil((o+1)*L/O)
        return end - start(o, i, out)

    # window sizes occurring per dimension (static); an element is an If over the classes
    sizes = [sorted({-(-(o + 1) * i // out) - (o * i // out) for o in range(out)})
             for i, out in zip(in_sz, out_sz)]

    def element(ix: list[z3.BitVecRef]) -> z3.ExprRef:
        nb, c, *sp = ix
        starts = [start(o, i, out) for o, i, out in zip(sp, in_sz, out_sz)]

        def average(win: tuple[int, ...]) -> z3.ExprRef:
            n = math.prod(win)

            def term(r: z3.BitVecRef) -> z3.ExprRef:
                return read([nb, c, *[st + off for st, off in zip(starts, unravel(r, list(win)))]])

            return _average(ctx, ty.dtype, reduce_sum(ctx, ty.dtype, n, term), n)

        classes = _product(sizes)
        result = average(classes[-1])
        for win in reversed(classes[:-1]):
            cond = zf.And(*[size(o, i, out) == idx(w) for o, i, out, w, opts in
                            zip(sp, in_sz, out_sz, win, sizes) if len(opts) > 1])
            result = zf.If(cond, average(win), result)
        return result

    return canonical_tensor(ty.shape, out_layout, canon, ty.dtype, element)


@register("relax.nn.adaptive_avg_pool1d")
def encode_adaptive_avg_pool1d(ctx: EncodeContext, call: OpCall, args: list) -> Tensor:
    """Output i is the mean of input [floor(i*L/O), ceil((i+1)*L/O)) (PyTorch adaptive_avg_pool1d): a `reduce_sum` of exactly the window's elements divided by its size (integers: wrapping sum, truncating division, as relax.mean); output_size None keeps the input size."""
    return _adaptive_avg_pool(ctx, call, args, 1)


@register("relax.nn.adaptive_avg_pool2d")
def encode_adaptive_avg_pool2d(ctx: EncodeContext, call: OpCall, args: list) -> Tensor:
    """Output (i, j) is the mean of rows [floor(i*H/OH), ceil((i+1)*H/OH)) x cols [floor(j*W/OW), ceil((j+1)*W/OW)) (PyTorch adaptive_avg_pool2d): a `reduce_sum` of exactly the window's elements divided by its size (integers: wrapping sum, truncating division, as relax.mean); output_size None keeps the input size.

    Windows of different sizes are different sums (an If over the few size classes), so
    each sum has exactly its window's terms.
    """
    return _adaptive_avg_pool(ctx, call, args, 2)


@register("relax.nn.adaptive_avg_pool3d")
def encode_adaptive_avg_pool3d(ctx: EncodeContext, call: OpCall, args: list) -> Tensor:
    """adaptive_avg_pool2d's semantics with three spatial dimensions: the mean of the PyTorch window [floor(i*L/O), ceil((i+1)*L/O)) per dimension; integers as relax.mean."""
    return _adaptive_avg_pool(ctx, call, args, 3)
