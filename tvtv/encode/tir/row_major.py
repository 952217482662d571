"""Row-major copies: one convention for a reshaped tensor, in TIR as in Relax.

LegalizeOps turns reshape, flatten, squeeze and expand_dims into a block that stores
`out[v0, .., vk] = x[<index arithmetic of v0..vk>]`, where the arithmetic (floordiv and
floormod of the flat position) sends every element of `x` to the same flat position of `out`.
The Relax encoders of those ops (`ops/manipulate.py`, `_relabel`) give `out` *the input's
own array* under the new shape. A TIR interpreter that built `out` as a lambda over the index
arithmetic would be equal to it only extensionally: every term built on it differs from the
Relax one, and Z3 must see through floordiv/floormod under a lambda to match them
(RewriteDataflowReshape on `default`, seed 1 graph 0, timed out after 289 s that way).

So a bulk write that is a row-major copy gives its buffer the source buffer's array, and a
tensor is read, whatever its shape, through the reader of the array's producer at the
row-major-corresponding index (`reshaped`): the relax.reshape encoder, a legalized reshape's
PrimFunc and FuseTIR's intermediate buffer of that reshape all build the same terms, and a
consumer still inlines the producer's body (as FuseTIR's source and target both do).

Soundness: the copy is claimed only when a solver shows, for every multi-index in the written
box, that the source index is in bounds and has the output's flat position (`is_row_major`).
The query is over 32-bit index arithmetic alone (no data), so it is small and cached.
"""
from __future__ import annotations

import math
from typing import Sequence

import z3

from tvtv.encode.context import EncodeContext
from tvtv.encode.tensor import INDEX_BITS, idx, ravel
from tvtv.encode.tir import index as IX
from tvtv.encode.tir.values import Reader

# Solver time (ms) for "this index map is the row-major identity"; index arithmetic only.
QUERY_MS = 2000


def fresh_indices(shape: Sequence[int]) -> list[IX.Ix]:
    """One index per dimension of `shape`, each ranging over its dimension. The names are
    fixed, so the same copy builds the same query terms (and hits the cache)."""
    return [IX.Ix(z3.BitVec(f"tir_row_major_i{d}", INDEX_BITS), 0, size - 1) if size > 1
            else IX.constant(0) for d, size in enumerate(shape)]


def is_row_major(ctx: EncodeContext, out_ix: Sequence[IX.Ix], out_shape: Sequence[int],
                 src_ix: Sequence[IX.Ix], src_shape: Sequence[int]) -> bool:
    """Does reading the source of `src_shape` at `src_ix` (expressions of `out_ix`) read, for
    every `out_ix` within `out_shape`, the element at the output's own flat position, in
    bounds?"""
    if len(out_ix) != len(out_shape) or len(src_ix) != len(src_shape):
        return False
    cache = getattr(ctx, "tir_row_major", None)
    if cache is None:
        cache = {}
        ctx.tir_row_major = cache
    # keyed by AST ids; the entry keeps the ASTs alive (Z3 reuses the id of a freed AST)
    keep = (tuple(v.term for v in out_ix), tuple(v.term for v in src_ix))
    key = (tuple(t.get_id() for t in keep[0]), tuple(out_shape),
           tuple(t.get_id() for t in keep[1]), tuple(src_shape))
    if key not in cache:
        cache[key] = (_prove(out_ix, out_shape, src_ix, src_shape), keep)
    return cache[key][0]


def _prove(out_ix: Sequence[IX.Ix], out_shape: Sequence[int], src_ix: Sequence[IX.Ix],
           src_shape: Sequence[int]) -> bool:
    within = [z3.ULE(v.term, idx(size - 1)) for v, size in zip(out_ix, out_shape)
              if v.const is None]
    wrong: list[z3.BoolRef] = []
    for v, size in zip(src_ix, src_shape):
        if v.lo < 0:
            wrong.append(IX.lt(v, IX.constant(0)))
        if v.hi >= size:
            wrong.append(IX.le(IX.constant(size), v))
    src_flat = ravel([v.const if v.const is not None else v.term for v in src_ix], src_shape)
    out_flat = ravel([v.const if v.const is not None else v.term for v in out_ix], out_shape)
    wrong.append(src_flat != out_flat)
    s = z3.Solver()
    s.set("timeout", QUERY_MS)
    s.add(*within, z3.Or(*wrong))
    return s.check() == z3.unsat


def groups(src_shape: Sequence[int], out_shape: Sequence[int]) -> list[tuple[list[int], list[int]]]:
    """Consecutive dimensions of two shapes of the same element count, grouped so that
    each group's dimensions have equal products on both sides: (source dims, output dims).
    A reshape moves elements only within a group, so squeeze and expand_dims (groups of a
    dimension and size-1 ones) need no division at all."""
    result: list[tuple[list[int], list[int]]] = []
    i = j = 0
    while i < len(src_shape) or j < len(out_shape):
        ga: list[int] = []
        gb: list[int] = []
        pa = pb = 1
        if i < len(src_shape):
            ga.append(i)
            pa *= src_shape[i]
            i += 1
        if j < len(out_shape):
            gb.append(j)
            pb *= out_shape[j]
            j += 1
        # equal totals: the smaller side has dimensions left
        while pa != pb:
            if pa < pb:
                ga.append(i)
                pa *= src_shape[i]
                i += 1
            else:
                gb.append(j)
                pb *= out_shape[j]
                j += 1
        result.append((ga, gb))
    return result


def reshaped(reader: Reader, src_shape: Sequence[int], out_shape: Sequence[int]) -> Reader:
    """A reader of the same row-major elements under `out_shape`: `reader` (of `src_shape`)
    at the source multi-index of the same flat position, computed group by group with the
    ranged index arithmetic (so a dimension that stays put is passed through unchanged)."""
    if tuple(src_shape) == tuple(out_shape):
        return reader
    if math.prod(src_shape) != math.prod(out_shape) or math.prod(out_shape) == 0:
        raise ValueError(f"no row-major view of {tuple(src_shape)} as {tuple(out_shape)}")
    parts = groups(src_shape, out_shape)
    add, mul = IX.BINARY["add"], IX.BINARY["mul"]
    div, mod = IX.BINARY["floordiv"], IX.BINARY["floormod"]

    def read(ix: list[IX.Ix]) -> z3.ExprRef:
        src: list[IX.Ix] = [IX.constant(0)] * len(src_shape)
        for ga, gb in parts:
            local = IX.constant(0)
            for d in gb:
                local = add(mul(local, IX.constant(out_shape[d])), ix[d])
            stride = 1
            for d in reversed(ga):
                q = div(local, IX.constant(stride))
                src[d] = q if d == ga[0] else mod(q, IX.constant(src_shape[d]))
                stride *= src_shape[d]
        return reader(src)
    return read
