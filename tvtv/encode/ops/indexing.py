"""Gathers and scatters through index tensors: gather_elements, gather_nd, scatter_elements,
scatter_nd.

Index elements are read as 65-bit signed bit-vectors (exact for every integer dtype, see
`common.index_value`); an index outside its axis is undefined behaviour, recorded
with `ctx.add_ub` as for `take` in mode "fast": a disjunction over the index elements up to
`UB_EXPAND` of them, an existential quantifier over the flat index above.

Measured on apache-tvm 0.27 (LLVM VM, `tests/test_ops_indexing.py`):
  * negative indices: the legalizations of gather_elements (`topi.gather`) and gather_nd
    (`topi.gather_nd`) index the data directly, so -1 reads the element *before* the row
    (garbage, out of bounds). ONNX's GatherElements/GatherND allow [-s, s-1]; TVM's own ONNX
    importer therefore rewrites negative indices (`_normalize_negative_indices`) before it
    emits `relax.gather_elements`/`relax.gather_nd`. The Relax ops' contract is thus
    indices in [0, s): a negative one is UB here (a difference from ONNX, recorded).
  * TVM's type inference accepts gather_elements indices larger than the data in a
    non-gathered dimension (data (3, 4), indices (4, 4), axis 1: output (4, 4)); the VM then
    reads past the data. Such calls are refused (`Unsupported`), not given a meaning.
  * gather_nd accepts int64 indices only (type inference refuses int32); gather_elements
    accepts signed integer indices (int8/int32/int64) and refuses unsigned ones.
  * scatter_elements wraps negative indices (`topi.scatter_elements`, as ONNX); scatter_nd
    does not (raw offsets; the ONNX importer normalises them first). With duplicate
    indices both keep the last write ("update") or fold serially ("add", ...); ONNX leaves
    the order undefined, so "update" duplicates are UB here and float reductions (whose
    value depends on that order) are Unsupported. Finding: `topi.scatter_elements` writes
    the wrong elements when indices are smaller than data in a dimension after the axis.
  * LegalizeOps lowers both scatters to IR-builder TIR (an `AttrStmt` pragma_scope "seq"
    around loops that store at positions read from the index tensor), which the TIR
    interpreter unrolls (`write_unrolled`): proved in `tests/test_tir_scatter.py`.
"""
from __future__ import annotations

import math
from typing import Callable

import z3

from tvtv import z3fast as zf
from tvtv.absfp.dtypes import INT_FORMATS
from tvtv.encode.context import EncodeContext
from tvtv.encode.ops.common import UB_EXPAND, add_ub_for_some, index_value, tensor_arg
from tvtv.encode.ops.manipulate import literal_axis, checked_type
from tvtv.encode.registry import register
from tvtv.encode.tensor import Tensor, idx, ravel
from tvtv.errors import Unsupported
from tvtv.ir.program import OpCall

Index = z3.BitVecRef


# ------------------------------------------------------------------------------------------------
# helpers
# ------------------------------------------------------------------------------------------------
def _in_range(v: z3.BitVecRef, n: int) -> z3.BoolRef:
    return zf.And(v >= z3.BitVecVal(0, 65), v < z3.BitVecVal(n, 65))


def _position(v: z3.BitVecRef) -> Index:
    """The index (known to be in [0, n) where it matters) as a 32-bit tensor index."""
    return z3.Extract(31, 0, v)


def _index_dtype_check(ind: Tensor, op: str) -> None:
    if ind.dtype not in INT_FORMATS:
        raise Unsupported(f"{op} with indices of dtype {ind.dtype}")


def add_index_ub(ctx: EncodeContext, ind: Tensor, bad_at: Callable[[Index], z3.BoolRef],
                  reason: str, name: str) -> None:
    """UB when `bad_at(k)` holds for some flat index element k (expanded or quantified)."""
    add_ub_for_some(ctx, ind.numel, bad_at, reason, name)


# ------------------------------------------------------------------------------------------------
# gathers
# ------------------------------------------------------------------------------------------------
@register("relax.gather_elements")
def encode_gather_elements(ctx: EncodeContext, call: OpCall, args: list) -> Tensor:
    """gather_elements is ONNX GatherElements / np.take_along_axis: out[i] = data[i with i[axis] := indices[i]], output shape = indices shape; an index outside [0, n) is UB, negative ones too (TVM does not wrap them); any data dtype, any integer index dtype; indices larger than data in another dimension are Unsupported.

    Details. data and indices have the same rank; for d != axis, indices.shape[d] <=
    data.shape[d] (ONNX/PyTorch's rule; TVM's inference does not check it, and its VM then
    reads past the data: refused). Any integer index dtype is read exactly. Measured on
    the VM: index -1 in row r returns the last element of row r-1 (the flat element before
    the row), 4 on an axis of 4 the first of the next row: no wrapping, raw out-of-bounds
    reads; TVM's ONNX importer normalises negative indices before emitting this op, so its
    contract is [0, n). Every dtype of data works (elements are moved, not computed)."""
    op = call.op
    x, ind = tensor_arg(args, 0, call), tensor_arg(args, 1, call)
    _index_dtype_check(ind, op)
    a = _elements_axis(call, x, ind)
    ty = checked_type(call, ind.shape, x.dtype)
    n = x.shape[a]

    add_index_ub(ctx, ind, lambda k: zf.Not(_in_range(index_value(ind.at(k), ind.dtype, op), n)),
                  f"gather_elements with an index outside [0, {n})", "gather_elements_k")

    def elem(ix: list[Index]) -> z3.ExprRef:
        v = index_value(ind.at_multi(ix), ind.dtype, op)
        return x.at_multi(ix[:a] + [_position(v)] + ix[a + 1:])
    return Tensor.from_fn(ty.shape, ty.dtype, elem)


@register("relax.gather_nd")
def encode_gather_nd(ctx: EncodeContext, call: OpCall, args: list) -> Tensor:
    """gather_nd is ONNX GatherND: with b = batch_dims and m = indices.shape[-1], out[i, r] = data[i[:b], indices[i, 0..m-1], r], shape indices.shape[:-1] + data.shape[b+m:]; indices.shape[:b] must equal data.shape[:b]; index k outside [0, data.shape[b+k]) is UB, negative ones too (TVM does not wrap them); any data dtype, any integer index dtype; other batch or coordinate shapes are Unsupported.

    Details. m = 0 (TVM's inference allows it) copies data[i[:b]] for every index tuple.
    Any integer index dtype is read exactly (TVM's inference accepts int64 only). Measured
    on the VM: a negative index reads out of bounds (no wrapping, like gather_elements);
    TVM's ONNX importer normalises negative indices before emitting this op."""
    op = call.op
    x, ind = tensor_arg(args, 0, call), tensor_arg(args, 1, call)
    _index_dtype_check(ind, op)
    b = call.attrs.get("batch_dims", 0)
    if not isinstance(b, int) or isinstance(b, bool) or b < 0:
        raise Unsupported(f"{op}: batch_dims {b!r}")
    if ind.ndim < 1 or b > ind.ndim - 1:
        raise Unsupported(f"{op}: batch_dims {b} with indices of rank {ind.ndim}")
    m = ind.shape[-1]
    if b + m > x.ndim:
        raise Unsupported(f"{op}: {m} index coordinates after {b} batch dims for data rank {x.ndim}")
    if tuple(ind.shape[:b]) != tuple(x.shape[:b]):
        raise Unsupported(f"{op}: batch dims of indices {ind.shape} and data {x.shape} differ")
    lead = ind.shape[:-1]
    shape = tuple(lead) + tuple(x.shape[b + m:])
    ty = checked_type(call, shape, x.dtype)
    bounds = [x.shape[b + k] for k in range(m)]

    if m > 0 and math.prod(shape) > 0:
        # over the index tuples; each tuple's m coordinates are expanded (m <= rank)
        add_ub_for_some(ctx, ind.numel // m, lambda p: zf.Or(*[
            zf.Not(_in_range(index_value(ind.at(p * idx(m) + idx(k)), ind.dtype, op), bounds[k]))
            for k in range(m)]), f"gather_nd with an index outside {bounds}", "gather_nd_p")

    def elem(ix: list[Index]) -> z3.ExprRef:
        head, rest = ix[:len(lead)], ix[len(lead):]
        coords = [_position(index_value(ind.at_multi(head + [idx(k)]), ind.dtype, op))
                  for k in range(m)]
        return x.at_multi(head[:b] + coords + rest)
    return Tensor.from_fn(ty.shape, ty.dtype, elem)


# ------------------------------------------------------------------------------------------------
# scatters
# ------------------------------------------------------------------------------------------------
# A scatter's output element reads every index of its line (the indices along the axis that
# could write it): above this many, refused rather than built as a huge term.
SCATTER_LINE_BOUND = 256
_INT_REDUCTIONS = {"add": "add", "mul": "mul", "min": "minimum", "max": "maximum"}


def _wrapped(v: z3.BitVecRef, n: int) -> z3.BitVecRef:
    """ONNX's negative index: v + n for v in [-n, 0) (65 bits, as `index_value`)."""
    return zf.If(v < z3.BitVecVal(0, 65), v + z3.BitVecVal(n, 65), v)


@register("relax.scatter_elements")
def encode_scatter_elements(ctx: EncodeContext, call: OpCall, args: list) -> Tensor:
    """scatter_elements is ONNX ScatterElements: out = data, then out[p with p[axis] := indices[p]] (f)= updates[p] for every p of indices; indices in [-n, n), negative ones wrap (+n), outside is UB; reduction "update" (any data dtype): two writes to one element are UB; "add"/"mul"/"min"/"max" on integer data only (order-free); float reductions and "mean" are Unsupported.

    Details. indices and updates have one shape, the rank of data, and no larger than data
    off the axis (TVM accepts larger ones and writes out of bounds: refused). Measured on
    the VM: -1 writes the axis's last element and -n its first (TVM wraps, as ONNX); with
    duplicate indices "update" keeps the last write along the axis (ONNX and TVM's topi
    doc: duplicates are not allowed, so UB here); "add"/"mul"/"min"/"max" fold the updates
    serially; "mean" is TVM's running pairwise mean ((d + u1) / 2 + u2) / 2 (not ONNX's,
    which has no mean, nor PyTorch's mean of all): Unsupported, as are float reductions,
    whose value with duplicates depends on an order no specification fixes. Finding: for
    indices smaller than data in a dimension after the axis (data (2, 3, 4), indices
    (1, 2, 2), axis 0), TVM's legalization (`topi.scatter_elements`) uses the flat offset
    of the indices' trailing dims as data's, writing the wrong elements (e.g. the update at
    indices[0, 1, 0] lands at out[0, 0, 2], not out[i, 1, 0]); this encoder follows ONNX."""
    op = call.op
    x, ind, upd = (tensor_arg(args, k, call) for k in range(3))
    _index_dtype_check(ind, op)
    if ind.shape != upd.shape:
        raise Unsupported(f"{op}: indices {ind.shape} and updates {upd.shape} differ")
    if upd.dtype != x.dtype:
        raise Unsupported(f"{op}: updates of dtype {upd.dtype} into data of dtype {x.dtype}")
    a = _elements_axis(call, x, ind)
    reduction = _reduction(call, x.dtype)
    ty = checked_type(call, x.shape, x.dtype)
    n, K = x.shape[a], ind.shape[a]
    if K > SCATTER_LINE_BOUND:
        raise Unsupported(f"{op}: {K} indices along the axis (limit {SCATTER_LINE_BOUND})")
    dom = ctx.dom(x.dtype)

    def target(j: Index) -> z3.BitVecRef:
        """The wrapped position (65 bits) index element j (flat) writes along the axis."""
        return _wrapped(index_value(ind.at(j), ind.dtype, op), n)

    # an index outside [-n, n) is UB
    add_index_ub(ctx, ind, lambda j: zf.Not(zf.And(
        index_value(ind.at(j), ind.dtype, op) >= z3.BitVecVal(-n, 65),
        index_value(ind.at(j), ind.dtype, op) < z3.BitVecVal(n, 65))),
        f"scatter_elements with an index outside [-{n}, {n})", "scatter_elements_k")
    if reduction == "update" and K > 1 and ind.numel > 0:
        # two indices of one line (equal off the axis) writing the same element: UB
        stride = math.prod(ind.shape[a + 1:])
        pairs = ind.numel * (K - 1) // 2
        if pairs <= UB_EXPAND:
            bad = zf.Or(*[target(idx(j)) == target(idx(j + d * stride))
                          for j in range(ind.numel) for d in range(1, K - (j // stride) % K)])
        else:
            j, d = z3.BitVec("scatter_elements_j", 32), z3.BitVec("scatter_elements_d", 32)
            pos = z3.URem(z3.UDiv(j, idx(stride)), idx(K))    # j's coordinate on the axis
            bad = z3.Exists([j, d], zf.And(
                z3.ULT(j, idx(ind.numel)), z3.ULT(idx(0), d), z3.ULT(pos + d, idx(K)),
                target(j) == target(j + d * idx(stride))))
        ctx.add_ub(bad, "scatter_elements (reduction update) with a duplicate index")

    def elem(ix: list[Index]) -> z3.ExprRef:
        acc = x.at_multi(ix)
        if K == 0:
            return acc
        here = z3.ZeroExt(65 - 32, ix[a])
        for k in range(K):
            p = ix[:a] + [idx(k)] + ix[a + 1:]
            j = ravel(p, ind.shape)
            hit = target(j) == here
            u = upd.at(j)
            acc = zf.If(hit, u if reduction == "update"
                        else getattr(dom, _INT_REDUCTIONS[reduction])(acc, u), acc)
        inside = [z3.ULT(ix[d], idx(ind.shape[d])) for d in range(x.ndim)
                  if d != a and ind.shape[d] < x.shape[d]]
        return zf.If(zf.And(*inside), acc, x.at_multi(ix)) if inside else acc
    return Tensor.from_fn(ty.shape, ty.dtype, elem)


def _elements_axis(call: OpCall, x: Tensor, ind: Tensor) -> int:
    """The normalized axis of gather_elements / scatter_elements, after checking that the
    indices have the data's rank and fit inside it off the axis (TVM's inference accepts
    larger ones, which the VM reads or writes out of bounds: refused, not given a meaning)."""
    if x.ndim != ind.ndim:
        raise Unsupported(f"{call.op}: data of rank {x.ndim} and indices of rank {ind.ndim}")
    a = literal_axis(call.attrs.get("axis", 0), x.ndim, call)
    for d in range(x.ndim):
        if d != a and ind.shape[d] > x.shape[d]:
            raise Unsupported(f"{call.op}: indices {ind.shape} exceed data {x.shape} in dimension {d}")
    return a


def _reduction(call: OpCall, dtype: str) -> str:
    """A scatter's `reduction` attribute: "update", or an order-free integer reduction."""
    reduction = call.attrs.get("reduction", "update")
    if reduction != "update":
        if reduction not in _INT_REDUCTIONS:
            raise Unsupported(f"{call.op} with reduction {reduction!r}")
        if dtype not in INT_FORMATS:
            raise Unsupported(f"{call.op} with reduction {reduction!r} on {dtype} "
                              "(float accumulation order is unspecified)")
    return reduction


@register("relax.scatter_nd")
def encode_scatter_nd(ctx: EncodeContext, call: OpCall, args: list) -> Tensor:
    """scatter_nd is ONNX ScatterND: out = data, then out[indices[p, 0..m-1], r] (f)= updates[p, r] for every index tuple p (m = indices.shape[-1] >= 1); coordinate k outside [0, data.shape[k]) is UB, negative ones too (TVM does not wrap them); reduction "update" (any data dtype): two tuples writing one element are UB; "add"/"mul"/"min"/"max" on integer data only (order-free); float reductions, "mean" and m = 0 are Unsupported.

    Details. updates.shape = indices.shape[:-1] + data.shape[m:]. At most
    `SCATTER_LINE_BOUND` index tuples (every output element reads all of them). Measured
    on the VM: index (1, -1) of data (3, 4) writes out[0, 3] (the raw flat offset 4 - 1, no
    wrapping; TVM's ONNX importer normalises negative indices before emitting this op);
    with duplicate tuples "update" keeps the last one and "add" sums serially, in tuple
    order (ONNX: the order is undefined); TVM's inference accepts reduction "mean", which
    `topi.scatter_nd` does not implement."""
    op = call.op
    x, ind, upd = (tensor_arg(args, k, call) for k in range(3))
    _index_dtype_check(ind, op)
    if upd.dtype != x.dtype:
        raise Unsupported(f"{op}: updates of dtype {upd.dtype} into data of dtype {x.dtype}")
    if ind.ndim < 1 or ind.shape[-1] == 0 or ind.shape[-1] > x.ndim:
        raise Unsupported(f"{op}: indices of shape {ind.shape} for data of rank {x.ndim}")
    m = ind.shape[-1]
    lead = tuple(ind.shape[:-1])
    if tuple(upd.shape) != lead + tuple(x.shape[m:]):
        raise Unsupported(f"{op}: updates {upd.shape} for indices {ind.shape} and data {x.shape}")
    reduction = _reduction(call, x.dtype)
    ty = checked_type(call, x.shape, x.dtype)
    P = math.prod(lead)
    if P > SCATTER_LINE_BOUND:
        raise Unsupported(f"{op}: {P} index tuples (limit {SCATTER_LINE_BOUND})")
    dom = ctx.dom(x.dtype)
    bounds = x.shape[:m]

    def coord(t: Index, k: int) -> z3.BitVecRef:
        return index_value(ind.at(t * idx(m) + idx(k)), ind.dtype, op)

    if P > 0:
        ctx.add_ub(zf.Or(*[zf.Not(_in_range(coord(idx(t), k), bounds[k]))
                           for t in range(P) for k in range(m)]),
                   f"scatter_nd with an index outside {list(bounds)}")
    if reduction == "update" and P > 1:
        def same(t: Index, t2: Index) -> z3.BoolRef:
            return zf.And(*[coord(t, k) == coord(t2, k) for k in range(m)])
        if P * (P - 1) // 2 <= UB_EXPAND:
            bad = zf.Or(*[same(idx(t), idx(t2)) for t in range(P) for t2 in range(t + 1, P)])
        else:
            t, t2 = z3.BitVec("scatter_nd_t", 32), z3.BitVec("scatter_nd_t2", 32)
            bad = z3.Exists([t, t2], zf.And(z3.ULT(t, t2), z3.ULT(t2, idx(P)), same(t, t2)))
        ctx.add_ub(bad, "scatter_nd (reduction update) with a duplicate index tuple")

    tail_size = math.prod(x.shape[m:])

    def elem(ix: list[Index]) -> z3.ExprRef:
        acc = x.at_multi(ix)
        tail = ravel(ix[m:], x.shape[m:]) if m < x.ndim else idx(0)
        for t in range(P):
            hit = zf.And(*[coord(idx(t), k) == z3.ZeroExt(65 - 32, ix[k]) for k in range(m)])
            u = upd.at(idx(t * tail_size) + tail if tail_size != 1 else idx(t))
            acc = zf.If(hit, u if reduction == "update"
                        else getattr(dom, _INT_REDUCTIONS[reduction])(acc, u), acc)
        return acc
    return Tensor.from_fn(ty.shape, ty.dtype, elem)
