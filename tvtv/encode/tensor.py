"""Tensors as SMT arrays built from lambdas (mlir-tv, section 5).

A tensor of static shape is an array from a flat row-major index (a bit-vector of
`INDEX_BITS`) to its element sort. Elementwise ops build `Lambda i. f(a[i], b[g(i)])`, so a
chain of them never expands per element: its cost does not grow with the tensor's size.
Only indices below `numel` are meaningful; what an array holds beyond is never observed
(`bounded()` replaces it with a fixed value where a whole array is compared or passed on).
"""
from __future__ import annotations

import math
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Sequence

import numpy as np
import z3

from tvtv.absfp.interface import ScalarDomain
from tvtv import z3context
from tvtv import z3fast as zf
from tvtv.errors import Unsupported

INDEX_BITS = 32
INDEX = z3context.constant(__name__, "INDEX", lambda: z3.BitVecSort(INDEX_BITS))
# Bound index variables of the lambdas being built, with their ranges (numel), innermost last.
_live: list[tuple[z3.BitVecRef, int | None]] = z3context.cache([])
# Up to this range, a condition over a lambda's index is expanded element by element;
# beyond it, it becomes an existential quantifier over the valid indices.
EXPAND_BOUND = 64


# idx's numerals by value: an encoding asks for the same few indices over and over (21,581
# calls in zero graph 1's check), and each new z3py numeral costs several C calls and a
# wrapper; the terms are immutable, so one per value serves every caller
_IDX: dict[int, z3.BitVecRef] = z3context.cache({})
_IDX_KEEP = 1 << 16


def idx(value: int) -> z3.BitVecRef:
    """The index numeral `value` (modulo 2^32) in the main Z3 context."""
    term = _IDX.get(value)
    if term is None:
        term = z3.BitVecVal(value, INDEX_BITS)
        if len(_IDX) < _IDX_KEEP:
            _IDX[value] = term
    return term


def lambda_over_index(body: Callable[[z3.BitVecRef], z3.ExprRef], bound: int | None = None) -> z3.ArrayRef:
    """`Lambda i. body(i)` over a flat index; `bound` is the number of meaningful indices.

    The bound variable is named after its nesting depth (`i!0`, `i!1`, ...): the same
    construction always gives the same term (Z3 compares lambdas with their variable names,
    and a source and target that compute alike must become *identical* terms), while a
    lambda built inside another never captures the outer one's variable."""
    with live_index(bound) as i:
        return z3.Lambda([i], body(i))


@contextmanager
def live_index(bound: int | None, prefix: str = "i") -> Iterator[z3.BitVecRef]:
    """A fresh index variable `prefix!depth`, live inside the block: a condition found there
    that mentions it means "for some index below `bound`" (`close_over_live_indices`)."""
    i = z3.BitVec(f"{prefix}!{len(_live)}", INDEX_BITS)
    _live.append((i, bound))
    try:
        yield i
    finally:
        _live.pop()


def strides(shape: Sequence[int]) -> list[int]:
    out, acc = [], 1
    for d in reversed(shape):
        out.append(acc)
        acc *= d
    return list(reversed(out))


def close_over_live_indices(cond: z3.BoolRef) -> z3.BoolRef:
    """A condition found while building a lambda body (UB of one element, say) mentions the
    lambda's index variable, which is bound *inside* the lambda only. Outside it must mean
    "for some valid index": substitute every index below the bound (small ranges) or
    quantify existentially over `index < bound`."""
    for var, bound in reversed(_live):
        if z3.eq(z3.substitute(cond, (var, idx(0))), cond) and z3.eq(
                z3.substitute(cond, (var, idx(1))), cond):
            continue  # does not mention this index
        if bound is not None and bound <= EXPAND_BOUND:
            cond = zf.Or(*[z3.substitute(cond, (var, idx(k))) for k in range(bound)]) if bound \
                else z3.BoolVal(False)
        else:
            limit = [z3.ULT(var, idx(bound))] if bound is not None else []
            cond = z3.Exists([var], zf.And(*limit, cond))
    return cond


def unravel(i: z3.BitVecRef, shape: Sequence[int]) -> list[z3.BitVecRef]:
    """Row-major multi-index of flat index `i` (valid for 0 <= i < prod(shape))."""
    result = []
    for k, (dim, stride) in enumerate(zip(shape, strides(shape))):
        q = i if stride == 1 else z3.UDiv(i, idx(stride))
        # the leading dimension needs no modulo because i < numel
        result.append(q if k == 0 else z3.URem(q, idx(dim)))
    return result


def ravel(indices: Sequence[z3.BitVecRef | int], shape: Sequence[int]) -> z3.BitVecRef:
    """Flat index of a multi-index (row-major)."""
    total: z3.BitVecRef | None = None
    for ix, stride in zip(indices, strides(shape)):
        term = (idx(ix) if isinstance(ix, int) else ix)
        if stride != 1:
            term = term * idx(stride)
        total = term if total is None else total + term
    return total if total is not None else idx(0)


@dataclass(frozen=True)
class Tensor:
    shape: tuple[int, ...]
    dtype: str
    arr: z3.ArrayRef

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def at(self, i: z3.BitVecRef | int) -> z3.ExprRef:
        """Element at flat index `i`."""
        return zf.Select(self.arr, idx(i) if isinstance(i, int) else i)

    def at_multi(self, indices: Sequence[z3.BitVecRef | int]) -> z3.ExprRef:
        return self.at(ravel(indices, self.shape))

    def bounded(self, fill: z3.ExprRef) -> z3.ArrayRef:
        """The array with every index >= numel holding `fill`."""
        return lambda_over_index(lambda i: zf.If(z3.ULT(i, idx(self.numel)), self.at(i), fill))


    def materialized(self, fill: z3.ExprRef) -> z3.ArrayRef:
        """The array with indices ≥ numel holding `fill`, as a store chain when small:
        Z3 reasons about uninterpreted functions of store chains far better than of
        lambdas (a function of a lambda array can time out even on tiny tensors)."""
        if self.numel > STORE_CHAIN_BOUND:
            return self.bounded(fill)
        arr = z3.K(INDEX, fill)
        for k in range(self.numel):
            arr = zf.Store(arr, idx(k), self.at(k))
        return arr

    # -- construction ---------------------------------------------------------------------------
    @staticmethod
    def from_flat(shape: Sequence[int], dtype: str, fn: Callable[[z3.BitVecRef], z3.ExprRef]) -> "Tensor":
        """Tensor whose element at flat index i is fn(i)."""
        check_size(shape)
        return Tensor(tuple(shape), dtype, lambda_over_index(fn, math.prod(shape)))

    @staticmethod
    def from_fn(shape: Sequence[int], dtype: str,
                fn: Callable[[list[z3.BitVecRef]], z3.ExprRef]) -> "Tensor":
        """Tensor whose element at multi-index (i0, i1, ...) is fn([i0, i1, ...])."""
        shape = tuple(shape)
        return Tensor.from_flat(shape, dtype, lambda i: fn(unravel(i, shape)))

    @staticmethod
    def scalar(value: z3.ExprRef, dtype: str) -> "Tensor":
        return Tensor.from_flat((), dtype, lambda i: value)

    @staticmethod
    def variable(name: str, shape: Sequence[int], dtype: str, dom: ScalarDomain) -> "Tensor":
        """An input tensor: an array `name` of the domain's values, or, in a domain whose
        inputs are known finite (`finite_element`: the real model under no-nan and no-inf),
        `Lambda i. finite_element(name[i])` over an array of the finite values themselves."""
        check_size(shape)
        finite = dom.finite_element
        if finite is not None:
            values = z3.Array(name, INDEX, finite.domain(0))
            return Tensor(tuple(shape), dtype, lambda_over_index(lambda i: finite(zf.Select(values, i)),
                                                                 math.prod(shape)))
        return Tensor(tuple(shape), dtype, z3.Array(name, INDEX, dom.sort))

    @staticmethod
    def from_numpy(value: np.ndarray, dtype: str, dom: ScalarDomain) -> "Tensor":
        """A constant tensor. Elements are stored one by one (constants are small)."""
        flat = np.asarray(value).reshape(-1)
        check_size(np.shape(value))
        if flat.size == 0:
            return Tensor(tuple(np.shape(value)), dtype, z3.K(INDEX, dom.zero()))
        elems = [dom.const(v.item() if hasattr(v, "item") else v) for v in flat]
        first = elems[0]
        if all(z3.eq(e, first) for e in elems):
            return Tensor(tuple(np.shape(value)), dtype, z3.K(INDEX, first))
        arr = z3.K(INDEX, first)
        for k, e in enumerate(elems):
            if not z3.eq(e, first):
                arr = zf.Store(arr, idx(k), e)
        return Tensor(tuple(np.shape(value)), dtype, arr)


MAX_ELEMENTS = 1 << 30
STORE_CHAIN_BOUND = 256


def check_size(shape: Sequence[int]) -> None:
    n = math.prod(shape)
    if n >= MAX_ELEMENTS:
        raise Unsupported(f"tensor of {n} elements (limit {MAX_ELEMENTS})")


def broadcast_shape(*shapes: Sequence[int]) -> tuple[int, ...]:
    """numpy broadcasting of static shapes."""
    nd = max((len(s) for s in shapes), default=0)
    out = []
    for k in range(nd):
        dims = {s[len(s) - nd + k] for s in shapes if len(s) - nd + k >= 0}
        dims.discard(1)
        if len(dims) > 1:
            raise Unsupported(f"shapes {shapes} do not broadcast")
        out.append(dims.pop() if dims else 1)
    return tuple(out)


def broadcast_index(indices: Sequence[z3.BitVecRef], out_shape: Sequence[int],
                    in_shape: Sequence[int]) -> list[z3.BitVecRef | int]:
    """The input multi-index that numpy broadcasting reads for output multi-index `indices`."""
    off = len(out_shape) - len(in_shape)
    return [0 if d == 1 else indices[off + k] for k, d in enumerate(in_shape)]


def read_broadcast(t: Tensor, indices: Sequence[z3.BitVecRef], out_shape: Sequence[int]) -> z3.ExprRef:
    if tuple(t.shape) == tuple(out_shape):
        return t.at(ravel(indices, out_shape))
    return t.at_multi(broadcast_index(indices, out_shape, t.shape))


def elementwise(out_shape: Sequence[int], dtype: str, inputs: Sequence[Tensor],
                fn: Callable[..., z3.ExprRef]) -> Tensor:
    """out[i] = fn(in_0[b_0(i)], in_1[b_1(i)], ...) with numpy broadcasting."""
    out_shape = tuple(out_shape)
    if all(t.shape == out_shape for t in inputs):
        return Tensor.from_flat(out_shape, dtype, lambda i: fn(*(t.at(i) for t in inputs)))
    return Tensor.from_fn(out_shape, dtype,
                          lambda ix: fn(*(read_broadcast(t, ix, out_shape) for t in inputs)))


def to_numpy(t: Tensor, decode: Callable[[list[tuple[z3.ExprRef, str]]], list[Any]],
             np_dtype: Any) -> np.ndarray:
    """Read all elements of `t` through `decode` (e.g. a model's `decode`)."""
    vals = decode([(t.at(k), t.dtype) for k in range(t.numel)])
    return np.array(vals, dtype=np_dtype).reshape(t.shape)
