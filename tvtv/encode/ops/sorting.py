"""Sorting: relax.sort, relax.argsort, relax.topk and relax.median.

Spec (Relax docstrings in python/tvm/relax/op/sorting.py and statistical.py, read with the
numpy / PyTorch ops they name): every op orders one axis by the *stable total order* of
numpy.sort(kind="stable") and torch.sort(stable=True): numbers ascending, NaN after every
number (NaN is the greatest), equal elements (-0.0 and +0.0 are equal, as are two NaNs) in
input order. `descending` reverses the order of the keys but not of ties: NaN first, equal
elements still in input order (torch.sort(descending=True, stable=True); numpy has no
descending sort). topk(largest) is the first k of the descending order, topk(smallest) the
first k of the ascending one (torch.topk, NaN the largest). median is torch.median: the
lower median, NaN (and the first NaN's index) when the row holds a NaN.

Encoding: along the sorted axis of length n, element i's position in the stable order is
    rank(i) = #{m < i : not (x[i] before x[m])} + #{m > i : x[m] before x[i]}
("before" the strict key order above), a deterministic term of n - 1 comparisons; ranks are
a permutation of 0..n-1, so out[j] = the x[i] (argsort: the i) with rank(i) = j, an If
chain over i. Per row that is n^2 comparisons, hence the bound `SORT_BOUND` on n.

TVM 0.27 (measured on the VM, tests/test_ops_sorting.py): LegalizeOps does not lower sort,
argsort or topk at all (no legalization is registered: relax.backend.DispatchSortScan turns
them into topi.sort/argsort/topk inside `relax.build`, i.e. a `call_packed` to
tvm.contrib.sort.*, a std::stable_sort with `<` / `>` comparators). Off NaN that run agrees
with the spec, ties and -0.0/+0.0 included, in both directions; a NaN breaks its
comparator's strict weak order and the output is not sorted (findings, pinned in the tests).
median *is* legalized: topi.argsort (the same `call_packed`) then gathers; the TIR interpreter
models that kernel with `sorted_along` (`PrimFuncEncoder.extern_sort`).
"""
from __future__ import annotations

from typing import Callable, Sequence

import z3

from tvtv import z3fast as zf
from tvtv.absfp.dtypes import is_float, is_int
from tvtv.absfp.interface import ScalarDomain
from tvtv.encode.context import EncodeContext
from tvtv.encode.ops.common import (bool_attr, checked_result, index_result_dtype, norm_axis,
                                    out_type, tensor_arg)
from tvtv.encode.registry import register
from tvtv.encode.tensor import Tensor, idx
from tvtv.encode.values import Value
from tvtv.errors import Unsupported
from tvtv.ir.program import OpCall, TensorType, TupleType

Term = z3.ExprRef
Index = z3.BitVecRef
# The longest sorted axis: a row's ranks take n^2 comparisons (n - 1 per element), and every
# output element selects among n ranks.
SORT_BOUND = 32


# -- the stable order and ranks ----------------------------------------------------------------

def _before(dom: ScalarDomain, descending: bool) -> Callable[[Term, Term], z3.BoolRef]:
    """a comes strictly before b: a < b with NaN the greatest (b < a when descending)."""
    def less(a: Term, b: Term) -> z3.BoolRef:
        if not is_float(dom.dtype):
            return dom.lt(a, b)
        return zf.Or(dom.lt(a, b), zf.And(zf.Not(dom.is_nan(a)), dom.is_nan(b)))
    return (lambda a, b: less(b, a)) if descending else less


def stable_ranks(dom: ScalarDomain, terms: Sequence[Term], descending: bool) -> list[Index]:
    """Each term's position in the stable sort of `terms` (index-width bit-vectors)."""
    before = _before(dom, descending)
    one, zero = idx(1), idx(0)
    ranks = []
    for i, xi in enumerate(terms):
        flags = [zf.If(zf.Not(before(xi, xm)) if m < i else before(xm, xi), one, zero)
                 for m, xm in enumerate(terms) if m != i]
        ranks.append(z3.Sum(*flags) if len(flags) > 1 else (flags[0] if flags else zero))
    return ranks


def pick(ranks: Sequence[Index], j: Index, options: Sequence[Term]) -> Term:
    """options[i] for the i with ranks[i] == j (the ranks are a permutation of 0..n-1)."""
    out = options[-1]
    for i in range(len(options) - 2, -1, -1):
        out = zf.If(ranks[i] == j, options[i], out)
    return out


# -- attributes ------------------------------------------------------------------------------

def _sortable(x: Tensor, op: str) -> None:
    if not (is_float(x.dtype) or is_int(x.dtype)):
        raise Unsupported(f"{op} on dtype {x.dtype}")
    if x.ndim == 0:
        raise Unsupported(f"{op} of a 0-d tensor")


def _axis(call: OpCall, x: Tensor) -> int:
    a = call.attrs.get("axis", -1)
    if not isinstance(a, int) or isinstance(a, bool):
        raise Unsupported(f"{call.op}: axis {a!r}")
    n = norm_axis(a, x.ndim)
    if not 0 <= n < x.ndim:
        raise Unsupported(f"{call.op}: axis {a} out of range for rank {x.ndim}")
    return n


def _length(call: OpCall, n: int) -> int:
    if n > SORT_BOUND:
        raise Unsupported(f"{call.op} along an axis of {n} elements (limit {SORT_BOUND}: "
                          f"the encoding compares every pair)")
    return n


# -- sorted views of an axis -----------------------------------------------------------------

def sorted_along(ctx: EncodeContext, x: Tensor, axis: int, descending: bool, length: int,
                 index_dtype: str | None) -> Tensor:
    """The first `length` elements of every row along `axis` in the stable order: their
    values (`index_dtype` None) or their positions in the row (of `index_dtype`)."""
    n = x.shape[axis]
    dom = ctx.dom(x.dtype)
    odom = ctx.dom(index_dtype) if index_dtype else None
    shape = list(x.shape)
    shape[axis] = length

    def elem(ix: list[Index]) -> Term:
        def read(m: int) -> Term:
            jx = list(ix)
            jx[axis] = idx(m)
            return x.at_multi(jx)
        row = [read(m) for m in range(n)]
        options = row if odom is None else [odom.const(m) for m in range(n)]
        if n == 0:
            return (odom or dom).zero()
        return pick(stable_ranks(dom, row, descending), ix[axis], options)

    return Tensor.from_fn(shape, index_dtype or x.dtype, elem)


# -- encoders ----------------------------------------------------------------------------------

@register("relax.sort")
def encode_sort(ctx: EncodeContext, call: OpCall, args: list) -> Tensor:
    """sort is numpy.sort(x, axis, kind="stable"): ascending, NaN last, -0.0 and +0.0 equal and kept in input order; descending reverses the keys, not the ties (NaN first, equal elements in input order, torch.sort(descending=True, stable=True)); int or float, axis length at most 32.

    Details. The value at position j is the element whose stable rank is j (module
    docstring). Stability is observable only on -0.0/+0.0 (NaN payloads are not): sort([+0,
    -0]) is [+0, -0] either way. TVM's CPU sort (tvm.contrib.sort.sort: std::stable_sort
    with `<`, or `>` when descending) computes the same off NaN, ties included (measured on
    the VM); with a NaN its comparator is not a strict weak order and the result is not
    sorted (finding: sort([2, nan, 1, nan, 0]) runs as [1, 2, nan, nan, 0]). TVM's CPU
    kernels reject int8/uint8 at run time ("Unsupported input dtype"); the spec sorts them."""
    x = tensor_arg(args, 0, call)
    _sortable(x, call.op)
    axis = _axis(call, x)
    n = _length(call, x.shape[axis])
    return checked_result(call, sorted_along(ctx, x, axis, bool_attr(call, "descending", False), n, None))


@register("relax.argsort")
def encode_argsort(ctx: EncodeContext, call: OpCall, args: list) -> Tensor:
    """argsort is numpy.argsort(x, axis, kind="stable") in the attribute `dtype`: the positions of sort's order (NaN last, ties and -0.0/+0.0 in input order); descending reverses the keys, not the ties (NaN first, equal elements in input order); axis length at most 32.

    Details. So take_along_axis(x, argsort(x)) is sort(x) for both directions. TVM's CPU
    argsort agrees off NaN, ties included (measured); with a NaN its output is not the
    stable order (finding: argsort([nan, 1, 2]) runs as [0, 1, 2], the spec is [1, 2, 0])."""
    x = tensor_arg(args, 0, call)
    _sortable(x, call.op)
    axis = _axis(call, x)
    n = _length(call, x.shape[axis])
    od = index_result_dtype(call, out_type(call).dtype, n)
    if call.attrs.get("dtype") not in (None, "", od):
        raise Unsupported(f"{call.op}: dtype {call.attrs.get('dtype')} but result type {od}")
    return checked_result(call, sorted_along(ctx, x, axis, bool_attr(call, "descending", False), n, od))


@register("relax.topk")
def encode_topk(ctx: EncodeContext, call: OpCall, args: list) -> Value:
    """topk is torch.topk(sorted=True) with stable ties: the first k elements of the descending stable order (largest) or of the ascending one (not largest), NaN the largest; k < 1 takes the whole axis, k above the axis length is clamped to it (as TVM types it); ret_type "both" gives the tuple (values, indices), "values" or "indices" one tensor of indices in `dtype`.

    Details. torch leaves the order of equal elements unspecified; the spec fixes input
    order (the lower index first), which TVM's CPU topk (tvm.contrib.sort.topk, a stable
    sort) computes off NaN (measured, -0.0/+0.0 ties included). With a NaN TVM's result is
    not torch's (finding: topk([2, nan, 1, nan, 0], 2) runs as values [nan, 2], indices [1,
    0], for largest and for smallest; torch gives [nan, nan] / [1, 3] and [0, 1] / [4, 2]).
    Also findings: k = -2 crashes the kernel (`vector::reserve`) although the docstring
    says k < 1 returns everything (k = 0 does); k = 9 on an axis of 5 is typed with 5
    columns but the run returns 9 (the first 5 agree). Axis length at most 32."""
    x = tensor_arg(args, 0, call)
    _sortable(x, call.op)
    axis = _axis(call, x)
    n = _length(call, x.shape[axis])
    k = call.attrs.get("k", 1)
    if not isinstance(k, int) or isinstance(k, bool):
        raise Unsupported(f"{call.op}: k {k!r}")
    length = n if k < 1 else min(k, n)
    desc = bool_attr(call, "largest", True)
    ret = call.attrs.get("ret_type", "both")
    if ret not in ("both", "values", "indices"):
        raise Unsupported(f"{call.op}: ret_type {ret!r}")
    od = call.attrs.get("dtype") or "int32"
    if ret == "both":
        if not isinstance(call.ty, TupleType) or len(call.ty.fields) != 2:
            raise Unsupported(f"{call.op} with ret_type both and result type {call.ty}")
        vty, ity = call.ty.fields
        od = index_result_dtype(call, ity.dtype if isinstance(ity, TensorType) else od, n)
        return (checked_result(call, sorted_along(ctx, x, axis, desc, length, None), vty),
                checked_result(call, sorted_along(ctx, x, axis, desc, length, od), ity))
    if ret == "values":
        return checked_result(call, sorted_along(ctx, x, axis, desc, length, None))
    od = index_result_dtype(call, out_type(call).dtype, n)
    return checked_result(call, sorted_along(ctx, x, axis, desc, length, od))


def _median_axis(call: OpCall, x: Tensor) -> int | None:
    """The single reduced axis, or None for the whole (flattened) tensor."""
    axis = call.attrs.get("axis")
    if axis is None:
        return None
    items = [axis] if isinstance(axis, int) else list(axis)
    if not all(isinstance(a, int) and not isinstance(a, bool) for a in items):
        raise Unsupported(f"{call.op}: axis {axis!r}")
    axes = sorted({norm_axis(a, x.ndim) for a in items})
    if len(axes) != len(items) or not all(0 <= a < x.ndim for a in axes):
        raise Unsupported(f"{call.op}: axis {axis!r} for rank {x.ndim}")
    if len(axes) == 1 and isinstance(call.ty, TupleType):
        return axes[0]
    if axes == list(range(x.ndim)) and isinstance(call.ty, TensorType):
        return None
    raise Unsupported(f"{call.op} over axes {axis!r} of a rank-{x.ndim} tensor with result "
                      f"type {call.ty} (one axis or all axes only)")


def _median_of(ctx: EncodeContext, row: list[Term], dtype: str, index_dtype: str | None) -> Term:
    """torch.median of one row: the value (index_dtype None) or the position of the lower
    median in the stable ascending order; NaN and the first NaN's position when there is one."""
    dom = ctx.dom(dtype)
    n = len(row)
    mid = idx((n - 1) // 2)
    options = row if index_dtype is None else [ctx.dom(index_dtype).const(m) for m in range(n)]
    out = pick(stable_ranks(dom, row, False), mid, options)
    if not is_float(dtype):
        return out
    if index_dtype is None:
        return zf.If(zf.Or(*[dom.is_nan(t) for t in row]), dom.nan(), out)
    for m in range(n - 1, -1, -1):          # the first NaN wins
        out = zf.If(dom.is_nan(row[m]), options[m], out)
    return out


@register("relax.median")
def encode_median(ctx: EncodeContext, call: OpCall, args: list) -> Value:
    """median is torch.median: the lower median (element (n-1)//2 of the stable ascending order) over one axis, giving the tuple (values, int64 indices) as TVM types it, or over all axes (axis None or every axis), giving the value only; NaN when the row holds a NaN, with the first NaN's index; keepdims keeps the reduced axes as 1; int or float, at most 32 elements per median.

    Details. torch.median(x, dim) (aten/src/ATen/native/Sorting.cpp,
    median_with_indices_impl) returns the first NaN and its index when the row holds one,
    else nth_element under `x[i] < x[j] || (x[i] == x[j] && i < j)`: the stable order, so
    the index of equal medians (and the sign of a zero median) is the lower index's. The
    full reduction takes the same element (torch's value there is one of the equal ones).
    Several but not all axes are unsupported. (Finding: TVM's legalization reduces only the
    first listed axis and returns a tuple even when TVM types the call as the full median:
    median(x (2, 3), axis=[0, 1]) runs as two tensors of shape (3,), typed as a scalar.)
    TVM's legalization (topi.argsort, then gathers) agrees off NaN (measured); with a NaN
    the row is not sorted (finding: median([nan, 1, 0, -1], axis=1) runs as (-1.0, 3);
    torch gives (nan, 0))."""
    x = tensor_arg(args, 0, call)
    _sortable(x, call.op)
    keep = bool(call.attrs.get("keepdims", False))
    axis = _median_axis(call, x)
    dt = x.dtype
    if axis is None:
        if _length(call, x.numel) == 0:
            raise Unsupported(f"{call.op} of an empty tensor")
        shape = tuple(1 for _ in x.shape) if keep else ()
        row = [x.at(m) for m in range(x.numel)]
        return checked_result(call, Tensor.from_flat(shape, dt, lambda i: _median_of(ctx, row, dt, None)))
    n = _length(call, x.shape[axis])
    if n == 0:
        raise Unsupported(f"{call.op} over an empty axis")
    shape = tuple(1 if k == axis else d for k, d in enumerate(x.shape)) if keep else \
        tuple(d for k, d in enumerate(x.shape) if k != axis)
    vty, ity = call.ty.fields
    od = index_result_dtype(call, ity.dtype if isinstance(ity, TensorType) else None, n)

    def rows(ix: list[Index]) -> list[Term]:
        base = list(ix) if keep else list(ix[:axis]) + [idx(0)] + list(ix[axis:])
        out = []
        for m in range(n):
            base[axis] = idx(m)
            out.append(x.at_multi(base))
        return out

    values = Tensor.from_fn(shape, dt, lambda ix: _median_of(ctx, rows(ix), dt, None))
    indices = Tensor.from_fn(shape, od, lambda ix: _median_of(ctx, rows(ix), dt, od))
    return (checked_result(call, values, vty), checked_result(call, indices, ity))
