"""Tensor transformations: reshape, permute_dims, expand_dims, squeeze, flatten, concat, split,
strided_slice, take, broadcast_to, tile, repeat, flip. All accept every dtype.

`split` returns a tuple: its recognizer accepts tuple types whose tensor fields agree on every
axis but one (the type generator's `tuple_containing` draws such tuples, and `TupleGetItem`
takes a field out).
"""
from __future__ import annotations

import math
from typing import Any

from generators.typed.opinfo import (INDICES, ArgSpec, Solution, register, relax_op,
                                     tensor_rec, tensor_sampler)
from generators.typed.types import (ALL_DTYPES, MAX_ELEMS, MAX_RANK, TensorTy, TupleTy, Ty,
                                    TypeGenerator, shrink)


def factorization(ctx: TypeGenerator, n: int, rank: int) -> tuple[int, ...]:
    """A random shape of `rank` with `n` elements."""
    dims = [1] * rank
    p, m = 2, n
    factors = []
    while m > 1 and p * p <= m:
        while m % p == 0:
            factors.append(p)
            m //= p
        p += 1
    if m > 1:
        factors.append(m)
    for f in factors:
        dims[ctx.rng.randrange(rank)] *= f
    return tuple(dims)


def _reshape_solve(ty: Ty, ctx: TypeGenerator) -> Solution:
    assert isinstance(ty, TensorTy)
    rank = ctx.rank(1, MAX_RANK) if ty.size > 1 else ctx.rank(0, MAX_RANK)
    src = TensorTy(factorization(ctx, ty.size, rank), ty.dtype)
    return Solution([ArgSpec(src)], {"shape": list(ty.shape)})


def _permute_solve(ty: Ty, ctx: TypeGenerator) -> Solution:
    """out[i] = in[axes[i]], so in[axes[i]] = out[i]."""
    assert isinstance(ty, TensorTy)
    axes = list(range(ty.ndim))
    ctx.rng.shuffle(axes)
    src = [0] * ty.ndim
    for i, a in enumerate(axes):
        src[a] = ty.shape[i]
    return Solution([ArgSpec(TensorTy(tuple(src), ty.dtype))], {"axes": axes})


def _expand_dims_solve(ty: Ty, ctx: TypeGenerator) -> Solution:
    assert isinstance(ty, TensorTy)
    ones = [i for i, d in enumerate(ty.shape) if d == 1]
    axes = sorted(ctx.rng.sample(ones, ctx.rng.randint(1, len(ones))))
    src = tuple(d for i, d in enumerate(ty.shape) if i not in axes)
    return Solution([ArgSpec(TensorTy(src, ty.dtype))], {"axis": axes})


def _squeeze_solve(ty: Ty, ctx: TypeGenerator) -> Solution:
    assert isinstance(ty, TensorTy)
    n_new = ctx.rng.randint(1, MAX_RANK - ty.ndim)
    rank = ty.ndim + n_new
    axes = sorted(ctx.rng.sample(range(rank), n_new))
    it = iter(ty.shape)
    src = tuple(1 if i in axes else next(it) for i in range(rank))
    return Solution([ArgSpec(TensorTy(src, ty.dtype))], {"axis": axes})


def _flatten_solve(ty: Ty, ctx: TypeGenerator) -> Solution:
    assert isinstance(ty, TensorTy)
    src = factorization(ctx, ty.size, ctx.rank(1, MAX_RANK))
    return Solution([ArgSpec(TensorTy(src, ty.dtype))])


def _concat_solve(ty: Ty, ctx: TypeGenerator) -> Solution:
    """Cut the axis into 1-3 positive pieces."""
    assert isinstance(ty, TensorTy)
    rng = ctx.rng
    axis = rng.randrange(ty.ndim)
    d = ty.shape[axis]
    cuts = sorted(rng.sample(range(1, d), min(d - 1, rng.randint(0, 2)))) if d > 1 else []
    bounds = [0] + cuts + [d]
    args = []
    for lo, hi in zip(bounds, bounds[1:]):
        shape = list(ty.shape)
        shape[axis] = hi - lo
        args.append(ArgSpec(TensorTy(tuple(shape), ty.dtype)))
    return Solution(args, {"axis": axis})


def split_axis(ty: Ty) -> int | None:
    """The axis a `split` returning `ty` splits along, or None if no split returns `ty`."""
    if not isinstance(ty, TupleTy) or len(ty.fields) < 2:  # one section gives a tensor
        return None
    fs = ty.fields
    if not all(isinstance(f, TensorTy) for f in fs):
        return None
    f0 = fs[0]
    assert isinstance(f0, TensorTy)
    if f0.ndim < 1 or any(f.dtype != f0.dtype or f.ndim != f0.ndim for f in fs) or \
            sum(f.size for f in fs) > MAX_ELEMS:  # type: ignore[union-attr]
        return None
    differ = [a for a in range(f0.ndim) if any(f.shape[a] != f0.shape[a] for f in fs)]
    if len(differ) > 1:
        return None
    if differ:
        return differ[0]
    return 0


def _split_solve(ty: Ty, ctx: TypeGenerator) -> Solution:
    assert isinstance(ty, TupleTy)
    axis = split_axis(ty)
    assert axis is not None
    sizes = [f.shape[axis] for f in ty.fields]  # type: ignore[union-attr]
    f0 = ty.fields[0]
    assert isinstance(f0, TensorTy)
    shape = list(f0.shape)
    shape[axis] = sum(sizes)
    indices = [sum(sizes[:i + 1]) for i in range(len(sizes) - 1)]
    return Solution([ArgSpec(TensorTy(tuple(shape), f0.dtype))],
                    {"indices_or_sections": indices, "axis": axis})


def _split_sample(ctx: TypeGenerator) -> Ty:
    f0 = ctx.tensor(lo=1)
    axis = ctx.rng.randrange(f0.ndim)
    fields = []
    for _ in range(ctx.rng.randint(2, 3)):
        shape = list(f0.shape)
        shape[axis] = ctx.dim()
        fields.append(TensorTy(tuple(shrink(shape, MAX_ELEMS // 3)), f0.dtype))
    # shrink may have changed other axes: realign them to the first field
    first = fields[0]
    fields = [TensorTy(tuple(f.shape[a] if a == axis else first.shape[a]
                             for a in range(first.ndim)), first.dtype) for f in fields]
    return TupleTy(tuple(fields))


def _strided_slice_solve(ty: Ty, ctx: TypeGenerator) -> Solution:
    """Per sliced axis: in = begin + (out-1)*stride + 1 + slack, end = begin + (out-1)*stride + 1."""
    assert isinstance(ty, TensorTy)
    rng = ctx.rng
    axes = sorted(rng.sample(range(ty.ndim), rng.randint(1, ty.ndim)))
    src = list(ty.shape)
    begins, ends, strides = [], [], []
    for a in axes:
        d = ty.shape[a]
        s, b, slack = rng.choice((1, 1, 2)), rng.randint(0, 2), rng.randint(0, 2)
        src[a] = b + (d - 1) * s + 1 + slack
        begins.append(b)
        ends.append(b + (d - 1) * s + 1)
        strides.append(s)
    if math.prod(src) > MAX_ELEMS:  # the trivial slice always fits
        for k, a in enumerate(axes):
            src[a], begins[k], ends[k], strides[k] = ty.shape[a], 0, ty.shape[a], 1
    return Solution([ArgSpec(TensorTy(tuple(src), ty.dtype))],
                    {"axes": axes, "begin": begins, "end": ends, "strides": strides})


def _take_solve(ty: Ty, ctx: TypeGenerator) -> Solution:
    """take(x, idx, axis): out = x.shape[:axis] + idx.shape + x.shape[axis+1:], idx 1-D."""
    assert isinstance(ty, TensorTy)
    axis = ctx.rng.randrange(ty.ndim)
    shape = list(ty.shape)
    shape[axis] = ctx.dim()
    shape = shrink(shape, MAX_ELEMS, keep=[a for a in range(ty.ndim) if a != axis])
    idx = TensorTy((ty.shape[axis],), ctx.rng.choice(("int64", "int32")))
    return Solution([ArgSpec(TensorTy(tuple(shape), ty.dtype)),
                     ArgSpec(idx, INDICES, bound=shape[axis])], {"axis": axis})


def _broadcast_to_solve(ty: Ty, ctx: TypeGenerator) -> Solution:
    assert isinstance(ty, TensorTy)
    from generators.typed.elementwise import broadcast_operand

    return Solution([ArgSpec(broadcast_operand(ty, ctx))], {"shape": list(ty.shape)})


def divisors(n: int) -> list[int]:
    return [k for k in range(1, n + 1) if n % k == 0]


def _tile_solve(ty: Ty, ctx: TypeGenerator) -> Solution:
    assert isinstance(ty, TensorTy)
    reps = [ctx.rng.choice(divisors(d)) for d in ty.shape]
    src = tuple(d // r for d, r in zip(ty.shape, reps))
    return Solution([ArgSpec(TensorTy(src, ty.dtype))], {"repeats": reps})


def _repeat_ok(ty: TensorTy) -> bool:
    return any(d % 2 == 0 or d % 3 == 0 for d in ty.shape)


def _repeat_solve(ty: Ty, ctx: TypeGenerator) -> Solution:
    assert isinstance(ty, TensorTy)
    choices = [(a, r) for a, d in enumerate(ty.shape) for r in (2, 3) if d % r == 0]
    axis, r = ctx.rng.choice(choices)
    src = list(ty.shape)
    src[axis] //= r
    return Solution([ArgSpec(TensorTy(tuple(src), ty.dtype))], {"repeats": r, "axis": axis})


def _flip_solve(ty: Ty, ctx: TypeGenerator) -> Solution:
    assert isinstance(ty, TensorTy)
    return Solution([ArgSpec(ty)], {"axis": ctx.rng.randrange(ty.ndim)})


def _fix_repeat(ty: TensorTy, ctx: TypeGenerator) -> TensorTy:
    if ty.ndim and not _repeat_ok(ty):
        return TensorTy((2,) + ty.shape[1:], ty.dtype)
    return ty


def _has_one(ty: TensorTy) -> bool:
    return 1 in ty.shape


def _fix_one(ty: TensorTy, ctx: TypeGenerator) -> TensorTy:
    if ty.ndim and 1 not in ty.shape:
        i = ctx.rng.randrange(ty.ndim)
        return TensorTy(ty.shape[:i] + (1,) + ty.shape[i + 1:], ty.dtype)
    return ty


def register_all() -> None:
    A = ALL_DTYPES
    op = relax_op

    def reg(name: str, rec: Any, solve: Any, sample: Any, build: Any, weight: float = 1.0) -> None:
        register("relax." + name, rec, solve, sample, build, weight)

    reg("reshape", tensor_rec(A), _reshape_solve, tensor_sampler(A),
        lambda args, at: op("reshape")(args[0], at["shape"]))
    reg("permute_dims", tensor_rec(A, 2), _permute_solve, tensor_sampler(A, 2),
        lambda args, at: op("permute_dims")(args[0], at["axes"]))
    reg("expand_dims", tensor_rec(A, 1, extra=_has_one), _expand_dims_solve,
        tensor_sampler(A, 1, extra=_has_one, fix=_fix_one),
        lambda args, at: op("expand_dims")(args[0], at["axis"]))
    reg("squeeze", tensor_rec(A, 0, MAX_RANK - 1), _squeeze_solve,
        tensor_sampler(A, 0, MAX_RANK - 1),
        lambda args, at: op("squeeze")(args[0], at["axis"]))
    reg("flatten", tensor_rec(A, 1, 1), _flatten_solve, tensor_sampler(A, 1, 1),
        lambda args, at: op("flatten")(args[0]), weight=0.5)
    reg("concat", tensor_rec(A, 1), _concat_solve, tensor_sampler(A, 1),
        lambda args, at: op("concat")(args, axis=at["axis"]))
    reg("split", lambda ty: split_axis(ty) is not None, _split_solve, _split_sample,
        lambda args, at: op("split")(args[0], at["indices_or_sections"], axis=at["axis"]))
    reg("strided_slice", tensor_rec(A, 1), _strided_slice_solve, tensor_sampler(A, 1),
        lambda args, at: op("strided_slice")(args[0], at["axes"], at["begin"], at["end"],
                                             at["strides"]))
    reg("take", tensor_rec(A, 1), _take_solve, tensor_sampler(A, 1),
        lambda args, at: op("take")(args[0], args[1], axis=at["axis"]))
    reg("broadcast_to", tensor_rec(A, 1), _broadcast_to_solve, tensor_sampler(A, 1),
        lambda args, at: op("broadcast_to")(args[0], at["shape"]))
    reg("tile", tensor_rec(A, 1), _tile_solve, tensor_sampler(A, 1),
        lambda args, at: op("tile")(args[0], at["repeats"]), weight=0.5)
    reg("repeat", tensor_rec(A, 1, extra=_repeat_ok), _repeat_solve,
        tensor_sampler(A, 1, extra=_repeat_ok, fix=_fix_repeat),
        lambda args, at: op("repeat")(args[0], at["repeats"], axis=at["axis"]), weight=0.5)
    reg("flip", tensor_rec(A, 1), _flip_solve, tensor_sampler(A, 1),
        lambda args, at: op("flip")(args[0], at["axis"]))
