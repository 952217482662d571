"""PyTorch-style advanced indexing: index_tensor (x[I0, I1, ...]), index_put (Tensor.index_put_)
and slice_scatter (torch.slice_scatter).

The Relax docstrings name NumPy/PyTorch (index_tensor: "as if one had written
data[I0, ..., Ik-1] in NumPy/PyTorch"; index_put's example is torch's index_put_;
slice_scatter is torch.slice_scatter, emitted by TVM's PyTorch frontends). So:
  * an index v of an axis of extent n is valid in [-n, n) and a negative one wraps once
    (v + n), as PyTorch does; outside that range is UB (PyTorch raises);
  * index_put without `accumulate` writing one element twice is UB (PyTorch: "undefined
    which value"), as the "update" scatters of `indexing.py`;
  * slice_scatter's start/end follow Python slicing (negative ones wrap, then clamp to
    [0, n]); a src whose shape is not the slice's is refused (PyTorch raises).

Measured on apache-tvm 0.27 (LLVM VM, `tests/test_ops_advanced_indexing.py`):
  * index_tensor (`topi.adv_index`) does not wrap negative indices: x (3, 4) float32
    arange, rows [-1, 0, 2], cols [1, -1, -4] gives [3.08e-41, 0.0, 4.0] (PyTorch:
    [9.0, 3.0, 8.0]): raw out-of-bounds reads. A finding: LegalizeOps does not refine the
    PyTorch semantics there (the legalized TIR's load is out of bounds, UB).
  * index_put (`topi.index_put`) wraps negative indices once, keeps the last write on
    duplicates without accumulate and sums serially with it; it reads `values` at the flat
    position of the index tuple, so values that only broadcast to the index shape (PyTorch
    allows values of shape (1,)) are read out of bounds: values [7.0] at rows = cols =
    [0, 1, 2] of zeros (3, 3) give diagonal [7.0, 3.08e-41, 2.03e-06] (PyTorch: 7, 7, 7).
  * slice_scatter (`topi.slice_scatter`) masks positions start <= i < end with
    (i - start) % step == 0 and takes src at clip(ceil((i - start) / step), 0, n - 1) for
    *every* i: past the slice that index exceeds src's axis (start 1, end 6, step 2, n 8:
    i = 7 reads src column 3 of 3), an out-of-bounds load whose value the select then
    drops. TVM's inference wants src's axis = ceil((end - start) / step) without wrapping
    or clamping, so start -3, end 8 needs 11 elements (PyTorch: 3): refused here; with both
    negative (start -3, end -1, n 8: 2 elements in both) the VM writes nothing (its mask
    compares i >= -3 and i < -1), while PyTorch writes positions 5 and 6.
"""
from __future__ import annotations

import math
from typing import Sequence

import z3

from tvtv import z3fast as zf
from tvtv.absfp.dtypes import INT_FORMATS
from tvtv.encode.context import EncodeContext
from tvtv.encode.ops.common import index_value, tensor_arg
from tvtv.encode.ops.indexing import add_index_ub
from tvtv.encode.ops.manipulate import literal_axis, checked_type
from tvtv.encode.registry import register
from tvtv.encode.tensor import Tensor, broadcast_index, broadcast_shape, idx, unravel
from tvtv.encode.values import PrimScalar, as_tensor
from tvtv.errors import Unsupported
from tvtv.ir.program import OpCall

Index = z3.BitVecRef
# index_put: every output element reads every index tuple (which of them write it); above
# this many tuples the call is refused rather than built as a huge term (as scatter_nd).
INDEX_PUT_TUPLES = 256
# Up to this many pairs of index tuples, the duplicate-write condition is a disjunction over
# the pairs; above, one quantified formula (which Z3 decides only with the indices known:
# with 30 free tuples, 435 pairs, the quantified query took over 120 s, the disjunction < 1 s).
DUPLICATE_PAIRS_EXPAND = 4096


# ------------------------------------------------------------------------------------------------
# helpers
# ------------------------------------------------------------------------------------------------
def _index_tensors(v: object, call: OpCall) -> list[Tensor]:
    """The index tensors of the `indices` argument (a tuple, or one tensor), integer typed."""
    fields = list(v) if isinstance(v, tuple) else [v]
    ts = [as_tensor(t, f"index tensor of {call.op}") for t in fields]
    for k, t in enumerate(ts):
        if t.dtype not in INT_FORMATS:
            raise Unsupported(f"{call.op}: index tensor {k} of dtype {t.dtype}")
    if not ts:
        raise Unsupported(f"{call.op} without index tensors")
    return ts


def _wrap(v: z3.BitVecRef, n: int) -> z3.BitVecRef:
    """PyTorch's negative index, wrapped once: v + n for v < 0 (65-bit, `index_value`)."""
    return zf.If(v < z3.BitVecVal(0, 65), v + z3.BitVecVal(n, 65), v)


def _valid(v: z3.BitVecRef, n: int) -> z3.BoolRef:
    """v in [-n, n): the indices PyTorch accepts for an axis of extent n."""
    return zf.And(v >= z3.BitVecVal(-n, 65), v < z3.BitVecVal(n, 65))


def _position(v: z3.BitVecRef, n: int) -> Index:
    """The wrapped index as a 32-bit tensor index (in [0, n) where it matters)."""
    return z3.Extract(31, 0, _wrap(v, n))


def _index_ub(ctx: EncodeContext, ts: Sequence[Tensor], bounds: Sequence[int], op: str,
              used: bool) -> None:
    """UB when an element of index tensor d lies outside [-bounds[d], bounds[d]). With
    broadcasting every element of every index tensor is read once the broadcast shape is
    non-empty (`used`); an empty one reads none."""
    if not used:
        return
    for d, (t, n) in enumerate(zip(ts, bounds)):
        add_index_ub(ctx, t, lambda k, t=t, n=n: zf.Not(_valid(index_value(t.at(k), t.dtype, op), n)),
                     f"{op} with an index outside [-n, n)", f"{op.split('.')[-1]}_k{d}")


def _read_index(t: Tensor, b: list[Index] | list[int], shape: Sequence[int], op: str) -> z3.BitVecRef:
    """Index tensor `t` at broadcast multi-index `b` (of the broadcast shape), 65-bit."""
    pos = [idx(x) if isinstance(x, int) else x for x in b]
    return index_value(t.at_multi(broadcast_index(pos, shape, t.shape)), t.dtype, op)


def _literal_int(v: object, what: str, op: str) -> int:
    if isinstance(v, PrimScalar) and isinstance(v.concrete, int) and not isinstance(v.concrete, bool):
        return v.concrete
    if isinstance(v, PrimScalar) and v.concrete is not None:
        try:
            return int(v.concrete)
        except (TypeError, ValueError):
            pass
    raise Unsupported(f"{op}: {what} must be a literal integer")


# ------------------------------------------------------------------------------------------------
# index_tensor
# ------------------------------------------------------------------------------------------------
@register("relax.index_tensor")
def encode_index_tensor(ctx: EncodeContext, call: OpCall, args: list) -> Tensor:
    """index_tensor is PyTorch/NumPy x[I0, ..., Ik-1]: the k integer index tensors broadcast to B, out[b, r] = x[I0[b], ..., Ik-1[b], r], shape B + x.shape[k:]; an index of axis d in [-n_d, 0) wraps once (+n_d), outside [-n_d, n_d) is UB; any data dtype, any integer index dtype.

    Details. 1 <= k <= x.ndim (TVM's inference refuses more; none is refused here); index
    shapes that do not broadcast are Unsupported (TVM refuses them too). Any integer index
    dtype is read exactly (TVM's inference accepts signed ones only). Measured on the VM:
    TVM does not wrap negative indices: x = arange(12) as (3, 4) float32, rows [-1, 0, 2],
    cols [1, -1, -4] gives [3.08e-41, 0.0, 4.0] where PyTorch gives [9.0, 3.0, 8.0] (a
    finding: the legalized TIR loads out of bounds, so LegalizeOps is refuted there)."""
    op = call.op
    x = tensor_arg(args, 0, call)
    ts = _index_tensors(args[1], call)
    k = len(ts)
    if k > x.ndim:
        raise Unsupported(f"{op}: {k} index tensors for data of rank {x.ndim}")
    B = broadcast_shape(*[t.shape for t in ts])
    ty = checked_type(call, B + tuple(x.shape[k:]), x.dtype)
    bounds = x.shape[:k]
    _index_ub(ctx, ts, bounds, op, math.prod(B) > 0)
    nb = len(B)

    def elem(ix: list[Index]) -> z3.ExprRef:
        b, rest = ix[:nb], ix[nb:]
        coords = [_position(_read_index(t, b, B, op), n) for t, n in zip(ts, bounds)]
        return x.at_multi(coords + rest)
    return Tensor.from_fn(ty.shape, ty.dtype, elem)


# ------------------------------------------------------------------------------------------------
# index_put
# ------------------------------------------------------------------------------------------------
def _values_shape(values: Tensor, B: tuple[int, ...], op: str) -> tuple[int, ...]:
    """values' shape without leading 1s (PyTorch strips them), after checking it broadcasts
    to the index shape B (PyTorch's rule; TVM's inference does not check)."""
    shape = tuple(values.shape)
    while len(shape) > len(B) and shape and shape[0] == 1:
        shape = shape[1:]
    ok = len(shape) <= len(B) and all(
        s in (1, B[len(B) - len(shape) + j]) for j, s in enumerate(shape))
    if not ok:
        raise Unsupported(f"{op}: values of shape {values.shape} do not broadcast to the "
                          f"index shape {B}")
    return shape


@register("relax.index_put")
def encode_index_put(ctx: EncodeContext, call: OpCall, args: list) -> Tensor:
    """index_put is PyTorch Tensor.index_put_ with one index tensor per axis: the index tensors broadcast to B, out = data, then out[I0[b], ..., In-1[b]] = values[b] (+= with accumulate) for every b of B, values broadcast to B; indices in [-n, n), negative ones wrap once, outside is UB; without accumulate two b writing one element is UB; accumulate on integer data only; float accumulate is Unsupported.

    Details. The number of index tensors must equal data's rank (TVM's inference and
    `topi.index_put` require it; PyTorch's trailing full slices are not expressible). Float
    accumulation with duplicate indices sums in an order PyTorch leaves unspecified (as
    the float scatter reductions of `indexing.py`): Unsupported; integer accumulation is
    order-free (wrapping add). At most `INDEX_PUT_TUPLES` index tuples. Measured on the VM:
    negative indices wrap once (as here); duplicates keep the last write without
    accumulate and add serially with it; values are read at the tuple's flat position, so
    broadcast values (shape (1,) for 3 tuples) are read out of bounds: zeros (3, 3), rows =
    cols = [0, 1, 2], values [7.0] give diagonal [7.0, 3.08e-41, 2.03e-06] (PyTorch:
    [7, 7, 7]): a finding; tvtv refutes LegalizeOps there (a load of values out of bounds)
    and proves it for values of the index shape."""
    op = call.op
    x = tensor_arg(args, 0, call)
    ts = _index_tensors(args[1], call)
    values = tensor_arg(args, 2, call)
    if len(ts) != x.ndim:
        raise Unsupported(f"{op}: {len(ts)} index tensors for data of rank {x.ndim}")
    if values.dtype != x.dtype:
        raise Unsupported(f"{op}: values of dtype {values.dtype} into data of dtype {x.dtype}")
    accumulate = call.attrs.get("accumulate", False)
    if not isinstance(accumulate, bool):
        raise Unsupported(f"{op}: accumulate {accumulate!r}")
    if accumulate and x.dtype not in INT_FORMATS:
        raise Unsupported(f"{op} with accumulate on {x.dtype} (float accumulation order "
                          "is unspecified)")
    B = broadcast_shape(*[t.shape for t in ts])
    vshape = _values_shape(values, B, op)
    ty = checked_type(call, x.shape, x.dtype)
    P = math.prod(B)
    if P > INDEX_PUT_TUPLES:
        raise Unsupported(f"{op}: {P} index tuples (limit {INDEX_PUT_TUPLES})")
    bounds = x.shape
    _index_ub(ctx, ts, bounds, op, P > 0)
    multi = [list(b) for b in _multi_indices(B)]

    def target(b: list[Index] | list[int]) -> list[z3.BitVecRef]:
        """The wrapped coordinates (65-bit) the index tuple at broadcast index b writes."""
        return [_wrap(_read_index(ix, b, B, op), n) for ix, n in zip(ts, bounds)]
    targets = [target(b) for b in multi]

    if not accumulate and P > 1:
        # two tuples writing one element: UB (PyTorch leaves the value undefined)
        def same(c: list[z3.BitVecRef], c2: list[z3.BitVecRef]) -> z3.BoolRef:
            return zf.And(*[u == v for u, v in zip(c, c2)])
        if P * (P - 1) // 2 <= DUPLICATE_PAIRS_EXPAND:
            bad = zf.Or(*[same(targets[t], targets[t2]) for t in range(P) for t2 in range(t + 1, P)])
        else:
            t, t2 = z3.BitVec("index_put_t", 32), z3.BitVec("index_put_t2", 32)
            bad = z3.Exists([t, t2], zf.And(z3.ULT(t, t2), z3.ULT(t2, idx(P)),
                                            same(target(unravel(t, B)), target(unravel(t2, B)))))
        ctx.add_ub(bad, f"{op} (without accumulate) writing one element twice")

    vals = Tensor(vshape, values.dtype, values.arr)
    dom = ctx.dom(x.dtype)

    def elem(ix: list[Index]) -> z3.ExprRef:
        acc = x.at_multi(ix)
        for t in range(P):
            hit = zf.And(*[c == z3.ZeroExt(65 - 32, i) for c, i in zip(targets[t], ix)])
            u = vals.at_multi(broadcast_index([idx(c) for c in multi[t]], B, vshape))
            acc = zf.If(hit, dom.add(acc, u) if accumulate else u, acc)
        return acc
    return Tensor.from_fn(ty.shape, ty.dtype, elem)


def _multi_indices(shape: Sequence[int]) -> list[tuple[int, ...]]:
    """Every multi-index of `shape`, row-major."""
    out: list[tuple[int, ...]] = [()]
    for d in shape:
        out = [p + (j,) for p in out for j in range(d)]
    return out


# ------------------------------------------------------------------------------------------------
# slice_scatter
# ------------------------------------------------------------------------------------------------
def _slice_positions(start: int, end: int, step: int, n: int) -> range:
    """Python's (and PyTorch's, for step >= 1) positions of x[start:end:step] on an axis of n."""
    return range(n)[slice(start, end, step)]


@register("relax.slice_scatter")
def encode_slice_scatter(ctx: EncodeContext, call: OpCall, args: list) -> Tensor:
    """slice_scatter is torch.slice_scatter: out = input, then out[..., start:end:step, ...] = src along `axis` (Python slicing: negative start/end wrap, then clamp to [0, n]; step >= 1); src must have the slice's shape; any dtype; no UB; non-literal bounds and other src shapes are Unsupported.

    Details. TVM's inference wants src's axis to be ceil((end - start) / step) without
    wrapping or clamping; calls where that differs from PyTorch's slice length (start -3,
    end 8 on an axis of 8: TVM 11, PyTorch 3) are refused, since PyTorch rejects them.
    Measured on the VM: with both bounds negative and equal lengths (start -3, end -1, axis
    of 8) TVM writes nothing (its mask tests -3 <= i < -1), PyTorch writes positions 5, 6:
    a finding. Its legalization also reads src at clip(ceil((i - start) / step), 0, n - 1)
    for every i of the axis, out of bounds past the slice (start 1, end 6, step 2, n 8: i = 7
    reads src column 3 of 3), a load whose value the select drops; the TIR semantics makes
    that load UB, so LegalizeOps is refuted whenever the slice stops before the axis's
    last element (or is empty) and proved when it reaches it (1:8:3 of 8, 2:4 of 4)."""
    op = call.op
    x, src = tensor_arg(args, 0, call), tensor_arg(args, 1, call)
    if len(args) != 5:
        raise Unsupported(f"{op} with {len(args)} arguments")
    start, end, step = (_literal_int(args[k], w, op) for k, w in ((2, "start"), (3, "end"), (4, "step")))
    if src.dtype != x.dtype:
        raise Unsupported(f"{op}: src of dtype {src.dtype} into input of dtype {x.dtype}")
    a = literal_axis(call.attrs.get("axis", 0), x.ndim, call)
    if step < 1:
        raise Unsupported(f"{op}: step {step} (PyTorch requires step >= 1)")
    n = x.shape[a]
    pos = _slice_positions(start, end, step, n)
    want = list(x.shape)
    want[a] = len(pos)
    if tuple(src.shape) != tuple(want):
        raise Unsupported(f"{op}: src of shape {src.shape} for the slice {start}:{end}:{step} of "
                          f"axis {a} of {x.shape} (PyTorch's slice has shape {tuple(want)})")
    ty = checked_type(call, x.shape, x.dtype)
    first = pos.start if len(pos) else 0
    last = pos[-1] if len(pos) else -1

    def elem(ix: list[Index]) -> z3.ExprRef:
        if not len(pos):
            return x.at_multi(ix)
        i = ix[a]
        off = i - idx(first) if first else i
        inside = [z3.UGE(i, idx(first))] if first else []
        inside.append(z3.ULE(i, idx(last)))
        if step != 1:
            inside.append(z3.URem(off, idx(step)) == idx(0))
        k = z3.UDiv(off, idx(step)) if step != 1 else off
        return zf.If(zf.And(*inside), src.at_multi(ix[:a] + [k] + ix[a + 1:]), x.at_multi(ix))
    return Tensor.from_fn(ty.shape, ty.dtype, elem)
