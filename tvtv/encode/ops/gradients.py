"""Relax's gradient operators (python/tvm/relax/op/grad/grad.py): no_grad, start_checkpoint,
end_checkpoint, take_backward, nll_loss_backward, avg_pool2d_backward, max_pool2d_backward.

The docstrings say each `*_backward(output_grad, <the forward op's arguments>)` "returns the
gradient w.r.t." the forward op's first input, with every other parameter "the same as" the
forward op's. The forward ops' meanings are the encoders' (`manipulate.take`,
`loss.nll_loss`, `pooling.max_pool2d`/`avg_pool2d`); where a gradient is not a plain
derivative (ties and NaN in max pooling, ignored targets in nll_loss) PyTorch's autograd
kernels decide, as PyTorch decides the forward ops. A gradient that accumulates several
contributions into one element is the order-free float sum of `reduction.reduce_sum` over
all the candidate contributions, those that do not reach the element being +0.0 terms
(harmless: a sum starts from +0.0, so no partial sum holding it is -0.0, and x + (+0.0) = x
for every other x), so the specification fixes no accumulation order, and TVM's loops (in
index order) meet it at the ladder's unrolled-sums rung. Where the geometry alone shows that
at most one contribution reaches an element (pooling windows that do not overlap), the
element is exactly +0.0 + that contribution (every order gives it), not a sum.

Measured on apache-tvm 0.27 (LegalizeOps, LLVM VM; tests/test_ops_gradients.py):
  * no_grad, start_checkpoint and end_checkpoint legalize to their argument.
  * take_backward legalizes to IR-builder TIR (`pragma_scope "seq"`, serial adds into a
    zeroed buffer, index order), for 1-D indices only (an assertion fails on others).
  * nll_loss_backward legalizes to `Select(c == t, w[t] * -1.0 * (g / sum(w[t])), 0.0)`; an
    ignored target zeroes its weight only when ignore_index >= 0, else it reads
    weights[ignore_index], out of bounds (findings in `encode_nll_loss_backward`).
  * max/avg_pool2d_backward legalize to `topi.nn.pool_grad` (no dilation: LegalizeOps
    leaves a dilated call as it is); findings in their encoders.
"""
from __future__ import annotations

import itertools
from typing import Callable

import z3

from tvtv import z3fast as zf
from tvtv.absfp.dtypes import INT_FORMATS, is_float, is_int
from tvtv.encode import reduction
from tvtv.encode.context import EncodeContext
from tvtv.encode.ops.common import add_ub_for_some, checked_result, index_value, tensor_arg
from tvtv.encode.ops.convolution import canonical_reader, canonical_shape, canonical_tensor
from tvtv.encode.ops.manipulate import literal_axis
from tvtv.encode.ops.pooling import Window, divide_by_count, possible_counts
from tvtv.encode.registry import register
from tvtv.encode.tensor import INDEX_BITS, Tensor, idx, unravel
from tvtv.errors import Unsupported
from tvtv.ir.program import OpCall, TensorType

Index = z3.BitVecRef
# take_backward: every element of the gradient reads every index (a masked term each)
TAKE_INDICES_BOUND = 256
# pooling gradients: an input element sums one masked term per window tap, and max pooling's
# choice of tap is a fold over the window: refuse larger windows
POOL_TAPS_BOUND = 64


# ------------------------------------------------------------------------------------------------
# markers
# ------------------------------------------------------------------------------------------------
def _identity(call: OpCall, args: list) -> object:
    v = args[0]
    if isinstance(v, Tensor):
        return checked_result(call, Tensor(v.shape, v.dtype, v.arr))
    if isinstance(v, tuple):
        return v
    raise Unsupported(f"{call.op} of a {type(v).__name__}")


@register("relax.grad.no_grad")
def encode_no_grad(ctx: EncodeContext, call: OpCall, args: list) -> object:
    """no_grad(x) = x, bit for bit (any dtype): the marker has no effect on the value.

    Details. The docstring calls it a "no gradient dummy operator" whose result is "the
    no-gradient representation w.r.t. input" (it marks an input whose gradient the Gradient
    pass does not propagate); it states no other value, its type is its argument's, and
    TVM's only implementation (LegalizeOps) returns the argument, so the value is the
    argument's (the reading start/end_checkpoint's docs state outright)."""
    return _identity(call, args)


@register("relax.grad.start_checkpoint")
def encode_start_checkpoint(ctx: EncodeContext, call: OpCall, args: list) -> object:
    """start_checkpoint(x) = x, bit for bit (any dtype): the docstring's "the same tensor as the input".

    Details. It only marks where a recomputed (checkpointed) stage begins for the Gradient
    pass; LegalizeOps returns the argument."""
    return _identity(call, args)


@register("relax.grad.end_checkpoint")
def encode_end_checkpoint(ctx: EncodeContext, call: OpCall, args: list) -> object:
    """end_checkpoint(x) = x, bit for bit (any dtype): the docstring's "the same tensor as the input".

    Details. It marks where a checkpointed stage ends; LegalizeOps returns the argument."""
    return _identity(call, args)


# ------------------------------------------------------------------------------------------------
# take_backward
# ------------------------------------------------------------------------------------------------
@register("relax.grad.take_backward")
def encode_take_backward(ctx: EncodeContext, call: OpCall, args: list) -> Tensor:
    """take_backward(g, x, indices, axis) is the gradient of take w.r.t. x: zeros of x's shape with g[.., l, ..] added at x[.., indices[l], ..] for every index position l (duplicates accumulate: an order-free sum from +0.0); an index outside [0, n) is UB (take's mode "fast", negative ones too); float and integer dtypes, any integer index dtype.

    Details. g has take's output shape, x.shape[:axis] + indices.shape + x.shape[axis+1:];
    axis None means take of the flattened x (g has the indices' shape) and the gradient is
    reshaped back to x's shape. Element x[pre, j, post] is the sum over all L index
    positions l of (indices[l] == j ? g[pre, l, post] : +0.0) (`reduce_sum`; integers wrap,
    exact in any order), at most `TAKE_INDICES_BOUND` = 256 indices. This is
    torch.Tensor.index_add_ / np.add.at into zeros; ONNX and PyTorch leave the order of
    duplicate contributions open, and so does this encoding. TVM's legalization adds in
    index order into a buffer zeroed with 0.0, for 1-D indices only; measured on the VM:
    it agrees with the reference on duplicates, ±0, ±inf, NaN and ±FLT_MAX, and a negative
    index writes the element before the line (raw flat offset), the UB here; LegalizeOps
    is proved for axis None, integer data and float data with a duplicate index (3
    indices). Finding: the legalization uses a negative axis unnormalized (`i < axis` in its
    loop bounds): axis -1 of a (2, 2) x stores out of bounds (tvtv: UB in the target) and
    the VM returns garbage where the reference is [[3, 3], [6, 9]]."""
    g, x, ind = (tensor_arg(args, k, call) for k in range(3))
    if ind.dtype not in INT_FORMATS:
        raise Unsupported(f"{call.op} with indices of dtype {ind.dtype}")
    if not (is_float(x.dtype) or is_int(x.dtype)):
        raise Unsupported(f"{call.op} on {x.dtype} tensors")
    if g.dtype != x.dtype:
        raise Unsupported(f"{call.op}: output_grad of dtype {g.dtype} for x of dtype {x.dtype}")
    axis = call.attrs.get("axis")
    if axis is None:
        view, a = (x.numel,), 0
    else:
        view, a = x.shape, literal_axis(axis, x.ndim, call)
    n, L = view[a], ind.numel
    want = tuple(view[:a]) + tuple(ind.shape) + tuple(view[a + 1:])
    if g.shape != want:
        raise Unsupported(f"{call.op}: output_grad of shape {g.shape}, take's output is {want}")
    if L > TAKE_INDICES_BOUND:
        raise Unsupported(f"{call.op}: {L} indices (limit {TAKE_INDICES_BOUND})")
    zero65, wide_n = z3.BitVecVal(0, 65), z3.BitVecVal(n, 65)
    if g.numel > 0:
        def bad_at(k: Index) -> z3.BoolRef:
            v = index_value(ind.at(k), ind.dtype, call.op)
            return zf.Or(v < zero65, v >= wide_n)
        add_ub_for_some(ctx, L, bad_at, f"take_backward with an index outside [0, {n})",
                        "take_backward_k")
    zero = ctx.dom(x.dtype).zero()

    def elem(ix: list[Index]) -> z3.ExprRef:
        pre, j, post = ix[:a], ix[a], ix[a + 1:]
        here = z3.ZeroExt(65 - INDEX_BITS, j)

        def term(r: Index) -> z3.ExprRef:
            l = z3.simplify(r).as_long()
            hit = index_value(ind.at(l), ind.dtype, call.op) == here
            return zf.If(hit, g.at_multi(pre + unravel(idx(l), ind.shape) + post), zero)
        return reduction.reduce_sum(ctx, x.dtype, L, term)

    if L == 0 or n == 0:
        flat = Tensor.from_flat(x.shape, x.dtype, lambda i: zero)
        return checked_result(call, flat)
    grad = Tensor.from_fn(view, x.dtype, elem)
    return checked_result(call, Tensor(x.shape, x.dtype, grad.arr))


# ------------------------------------------------------------------------------------------------
# nll_loss_backward
# ------------------------------------------------------------------------------------------------
@register("relax.grad.nll_loss_backward")
def encode_nll_loss_backward(ctx: EncodeContext, call: OpCall, args: list) -> Tensor:
    """nll_loss_backward(g, p, targets, weights) is the gradient of nll_loss w.r.t. p (PyTorch's nll_loss backward): d[n, c, d..] = -w[t] * q when c == t = targets[n, d..] is not ignore_index, +0.0 elsewhere (every class of an ignored target too), q = g[n, d..] ("none"), g ("sum"), g / W ("mean", W = nll_loss's sum of w[t] over the non-ignored targets); a target outside [0, C) other than ignore_index is UB; float dtypes, integer targets.

    Details. Shapes as nll_loss: predictions (N, C, d_1.., d_k) with targets (N, d_1..,
    d_k), or (C,) with a scalar target; g has the targets' shape for "none" and is a scalar
    for "sum"/"mean"; w = ones without weights. PyTorch (aten LossNLL.cpp,
    nll_loss_backward_out_frame) zeroes the gradient, then writes `-w * g` ("none") or
    `w * -(g / total_weight)` ("mean") at the target of every non-ignored element; IEEE
    negation is exact and rounding is sign-symmetric, so both are (-w[t]) * q bit for bit
    (up to NaN payloads). W is the very sum nll_loss divides by (`reduce_sum` of
    `ignored ? +0.0 : w[t]`), so with every target ignored W = +0.0 but nothing reads it.

    Findings (measured on the VM, and in the legalized TIR `Select(c == t, w'[t] * -1.0 *
    (g / sum(w'[t])), 0.0)`): (1) TVM zeroes an ignored target's weight (w' = w with
    w'[ignore_index] = 0) only when ignore_index >= 0; for a negative ignore_index (the
    default, -100) an ignored target makes TVM load weights[ignore_index], out of bounds,
    into the mean's divisor (tvtv reports the UB). (2) With ignore_index in [0, C) the
    ignored target's class gets 0 * -1.0 * q, which is -0.0 for q > 0 and NaN for an
    infinite q (e.g. "mean" with every target ignored: g / 0), where PyTorch leaves +0.0:
    targets [1, 1] with ignore_index 1, reduction "mean" and g = 1 give NaN at [n, 1] on
    TVM. Everything else (weights, "sum", "none", the divisor of "mean") matched."""
    has_w = len(args) >= 4 and args[3] is not None
    g, p, tgt = (tensor_arg(args, k, call) for k in range(3))
    w = tensor_arg(args, 3, call) if has_w else None
    if not is_float(p.dtype):
        raise Unsupported(f"{call.op} with predictions of dtype {p.dtype} (float dtypes only)")
    if tgt.dtype not in INT_FORMATS:
        raise Unsupported(f"{call.op} with targets of dtype {tgt.dtype}")
    kind = call.attrs.get("reduction", "mean")
    if kind not in ("none", "sum", "mean"):
        raise Unsupported(f"{call.op} with reduction {kind!r}")
    ignore = call.attrs.get("ignore_index", -100)
    if not isinstance(ignore, int) or isinstance(ignore, bool):
        raise Unsupported(f"{call.op}: ignore_index {ignore!r}")
    if p.ndim == 1:
        c_axis, want_t = 0, ()
    elif p.ndim >= 2:
        c_axis, want_t = 1, (p.shape[0],) + p.shape[2:]
    else:
        raise Unsupported(f"{call.op} with scalar predictions")
    if tgt.shape != want_t:
        raise Unsupported(f"{call.op}: targets of shape {tgt.shape} for predictions {p.shape}")
    want_g = tgt.shape if kind == "none" else ()
    if g.shape != want_g or g.dtype != p.dtype:
        raise Unsupported(f"{call.op}: output_grad {g.shape} {g.dtype}, expected {want_g} {p.dtype}")
    C = p.shape[c_axis]
    if w is not None and (w.shape != (C,) or w.dtype != p.dtype):
        raise Unsupported(f"{call.op}: weights {w.shape} {w.dtype}, expected ({C},) {p.dtype}")
    dom = ctx.dom(p.dtype)
    wide_c, wide_ign, zero65 = z3.BitVecVal(C, 65), z3.BitVecVal(ignore, 65), z3.BitVecVal(0, 65)

    def target(ix: list[Index]) -> z3.BitVecRef:
        return index_value(tgt.at_multi(ix), tgt.dtype, call.op)

    def bad_at(k: Index) -> z3.BoolRef:
        t = index_value(tgt.at(k), tgt.dtype, call.op)
        return zf.And(t != wide_ign, zf.Or(t < zero65, t >= wide_c))
    add_ub_for_some(ctx, tgt.numel, bad_at, f"nll_loss_backward with a target outside "
                    f"[0, {C}) other than ignore_index {ignore}", "nll_loss_backward_k")

    def weight(t: z3.BitVecRef) -> z3.ExprRef:
        return w.at(z3.Extract(INDEX_BITS - 1, 0, t)) if w is not None else dom.const(1.0)

    divisor = None
    if kind == "mean":
        def weight_term(r: Index) -> z3.ExprRef:
            t = index_value(tgt.at(r), tgt.dtype, call.op)
            return zf.If(t == wide_ign, dom.const(0.0), weight(t))
        divisor = reduction.reduce_sum(ctx, p.dtype, tgt.numel, weight_term)

    def elem(ix: list[Index]) -> z3.ExprRef:
        c = ix[c_axis]
        rest = ix[:c_axis] + ix[c_axis + 1:]
        t = target(rest)
        q = g.at_multi(rest) if kind == "none" else g.at(0)
        if divisor is not None:
            q = dom.div(q, divisor)
        value = dom.neg(q) if w is None else dom.mul(dom.neg(weight(t)), q)
        hit = zf.And(t != wide_ign, t == z3.ZeroExt(65 - INDEX_BITS, c))
        return zf.If(hit, value, dom.const(0.0))

    return checked_result(call, Tensor.from_fn(p.shape, p.dtype, elem))


# ------------------------------------------------------------------------------------------------
# pooling gradients
# ------------------------------------------------------------------------------------------------
class _GradWindow:
    """max/avg_pool2d's window geometry for a backward call: the forward op's output is
    output_grad (its shape is checked against the attributes), its input is x."""

    def __init__(self, call: OpCall, g: Tensor, x: Tensor) -> None:
        if not is_float(x.dtype) or g.dtype != x.dtype:
            raise Unsupported(f"{call.op} with output_grad {g.dtype} and data {x.dtype} "
                              "(one float dtype only)")
        forward = OpCall(call.op, call.args, call.attrs, TensorType(g.shape, g.dtype))
        self.win = Window(forward, x, 2, "output_grad")
        if self.win.n > POOL_TAPS_BOUND:
            raise Unsupported(f"{call.op}: a window of {self.win.n} taps (limit {POOL_TAPS_BOUND})")
        if any(v < 1 for v in self.win.s + self.win.d + self.win.k):
            raise Unsupported(f"{call.op}: pool_size/strides/dilation must be positive")
        self.read_g = canonical_reader(g, self.win.out_layout, self.win.canon)
        self.x = x

    def sources(self, sp: list[Index]) -> list[tuple[int, list[z3.BoolRef], list[Index]]]:
        """For input position sp (unpadded): each window tap r that can read it, with the
        conditions under which output position o reads sp at tap r, and o."""
        win = self.win
        out = []
        for r, taps in enumerate(itertools.product(*[range(k) for k in win.k])):
            conds: list[z3.BoolRef] = []
            o: list[Index] = []
            possible = True
            for p, t, s, d, lo, size, o_len in zip(sp, taps, win.s, win.d, win.lo, win.in_sz,
                                                   win.out_sz):
                off = t * d - lo               # o * s = p - off
                if off > size - 1 or o_len == 0:
                    possible = False
                    break
                q = p - idx(off) if off > 0 else (p + idx(-off) if off < 0 else p)
                if off > 0:
                    conds.append(z3.UGE(p, idx(off)))
                if s > 1:
                    conds.append(z3.URem(q, idx(s)) == idx(0))
                    q = z3.UDiv(q, idx(s))
                if (size - 1 - off) // s >= o_len:
                    conds.append(z3.ULT(q, idx(o_len)))
                o.append(q)
            if possible:
                out.append((r, conds, o))
        return out

    def one_window(self) -> bool:
        """Does every input element lie in at most one window? So when, per dimension, the
        taps t * d fall in distinct classes modulo the stride (then the conditions of
        `sources` exclude each other)."""
        win = self.win
        return all(len({(t * d) % s for t in range(k)}) == k
                   for k, s, d in zip(win.k, win.s, win.d))

    def gradient(self, ctx: EncodeContext, contribution: Callable[[list[Index], int, list[Index]], z3.ExprRef]
                 ) -> Tensor:
        """d[nb, c, sp] = reduce_sum over taps of (o reads sp at tap r ? contribution : +0.0);
        with at most one window per element, +0.0 + that window's contribution (or +0.0)."""
        win, x = self.win, self.x
        dom = ctx.dom(x.dtype)
        zero = dom.const(0.0)

        def element(ix: list[Index]) -> z3.ExprRef:
            nb, c, *sp = ix
            found = [(conds, contribution([nb, c], r, o)) for r, conds, o in self.sources(sp)]
            if self.one_window():
                # at most one window holds the element: the sum from +0.0 of one term
                out = zero
                for conds, v in reversed(found):
                    v = dom.add(zero, v)
                    out = zf.If(zf.And(*conds), v, out) if conds else v
                return out
            terms = [zf.If(zf.And(*conds), v, zero) if conds else v for conds, v in found]
            if not terms:
                return zero
            return reduction.reduce_sum(ctx, x.dtype, len(terms),
                                        lambda k: terms[z3.simplify(k).as_long()])

        return canonical_tensor(x.shape, win.layout, win.canon, x.dtype, element)


@register("relax.grad.max_pool2d_backward")
def encode_max_pool2d_backward(ctx: EncodeContext, call: OpCall, args: list) -> Tensor:
    """max_pool2d_backward(g, x, ...) is PyTorch's max_pool2d gradient w.r.t. x: each output's g[o] goes to the one tap its window selects (the first tap inside the input, replaced by every later tap that is > the running maximum or NaN: the first maximum on ties, the last NaN when there is one, the first tap of an all -inf window), and an input element sums the g[o] routed to it (order-free from +0.0); taps in padding are never selected; float dtypes; windows up to 64 taps.

    Details. The selection is PyTorch's CPU and CUDA kernel (aten
    cpu/MaxPoolKernel.cpp: maxindex starts at the window's first in-input tap, maxval at
    -inf, and `if ((val > maxval) || isnan(val))` updates both), in window order (row-major
    over the taps, dilation respected); -0.0 and +0.0 tie. A window with no tap in the
    input routes its gradient nowhere. Layouts are permutations of NCHW; attributes are
    max_pool2d's (output_grad must have its output shape).

    Findings (topi.nn.pool_grad, measured on the VM): TVM picks its argmax from -FLT_MAX
    with index -1, `best > v or (best == v and best_idx < v_idx)` keeping the current one,
    so (1) a window whose in-input values are all -inf (or lie only in padding) routes its
    gradient nowhere (PyTorch: the first tap), and (2) NaN never stays selected: a later
    non-NaN tap replaces it (`NaN > v` is false), so the last tap after the NaN gets the
    gradient; (3) a tie with the initial -FLT_MAX keeps index -1, so a window of -FLT_MAX
    values routes nowhere too (confirmed counterexample under no-nan and no-inf); (4) with
    overlapping windows (stride < pool size) pool_grad bounds a window's output range from
    below only and reads its argmax buffer out of bounds (tvtv: UB in the target; the VM
    returns garbage, e.g. x = [2, 0, 1], pool (1, 2), stride 1, g = [1, 2] gives [1, 2, 0]
    for PyTorch's [1, 0, 2]). Ties otherwise go to the first maximum in window order, as
    here. LegalizeOps leaves a dilated call unlegalized."""
    g, x = tensor_arg(args, 0, call), tensor_arg(args, 1, call)
    gw = _GradWindow(call, g, x)
    win = gw.win
    dom = ctx.dom(x.dtype)
    none = idx(win.n)                                  # no tap selected

    def selected(ix: list[Index]) -> z3.ExprRef:
        nb, c, *sp = ix
        sel, best = none, dom.const(float("-inf"))
        for r in range(win.n):
            pos = win.taps(sp, idx(r))
            conds = win.inside(pos)
            v = win.input_at(nb, c, pos)
            take = zf.Or(sel == none, dom.gt(v, best), dom.is_nan(v))
            if conds:
                take = zf.And(zf.And(*conds), take)
            sel, best = zf.If(take, idx(r), sel), zf.If(take, v, best)
        return sel

    choice = Tensor.from_fn(canonical_shape(win.shape, win.out_layout, win.canon), "int32", selected)

    def contribution(nc: list[Index], r: int, o: list[Index]) -> z3.ExprRef:
        at = nc + o
        return zf.If(choice.at_multi(at) == idx(r), gw.read_g(at), dom.const(0.0))

    return checked_result(call, gw.gradient(ctx, contribution))


@register("relax.grad.avg_pool2d_backward")
def encode_avg_pool2d_backward(ctx: EncodeContext, call: OpCall, args: list) -> Tensor:
    """avg_pool2d_backward(g, x, ...) is PyTorch's avg_pool2d gradient w.r.t. x: an input element is the order-free sum (from +0.0) of g[o] / count(o) over the outputs o whose window holds it, count(o) being avg_pool2d's divisor (taps in the input, or in the padded input with count_include_pad; never the ceil_mode overhang); float dtypes; windows up to 64 taps.

    Details. PyTorch's kernel (aten cpu/AvgPoolKernel.cpp, cpu_avg_pool_backward) divides
    once, `grad_delta = grad_output / divide_factor`, and adds grad_delta into every in-input
    tap of the window; the encoding is that, with the accumulation order left open. A
    window with no counted tap has no in-input tap either, so its 0/0 never reaches x.
    Layouts are permutations of NCHW; attributes are avg_pool2d's (output_grad must have
    its output shape); dilation is supported (TVM's LegalizeOps leaves it unlegalized).
    TVM's topi.nn.pool_grad computes g / max(count, 1) per window tap and sums the taps
    in loop order: measured on the VM to agree on padding, ceil_mode, count_include_pad,
    strides and special values; LegalizeOps is proved for overlapping windows, padding
    with and without count_include_pad, ceil_mode and float16."""
    g, x = tensor_arg(args, 0, call), tensor_arg(args, 1, call)
    gw = _GradWindow(call, g, x)
    win = gw.win
    include_pad = bool(call.attrs.get("count_include_pad", False))
    possible = possible_counts(win, include_pad)

    def contribution(nc: list[Index], r: int, o: list[Index]) -> z3.ExprRef:
        return divide_by_count(ctx, win, gw.read_g(nc + o), o, include_pad, possible)

    return checked_result(call, gw.gradient(ctx, contribution))
