"""Reductions (sum, prod, max, min, mean, variance, argmax, argmin) and matmul.

A reduction's solver re-inserts the reduced axes into the return type: with `keepdims` at
positions where the return type has size 1, without it as new axes (so the return rank is at
most 3). Reduced sizes come from the module's dimension pool, halved until the input has at
most MAX_ELEMS elements (size 1 always fits, so the solver cannot fail).
"""
from __future__ import annotations

import math

from generators.typed.opinfo import ArgSpec, Solution, register, relax_op
from generators.typed.types import (FLOATS, MAX_ELEMS, MAX_RANK, NUMERIC, TensorTy,
                                    Ty, TypeGenerator, shrink)

REDUCE_NUMERIC = ("sum", "prod", "max", "min")
REDUCE_FLOAT = ("mean", "variance")
ARG_REDUCE = ("argmax", "argmin")
ARG_DTYPES = tuple(d for d in NUMERIC if d != "bfloat16")  # argmax on bfloat16 fails to build


def reducible(ty: Ty) -> bool:
    """A tensor that a reduction can return: rank < MAX_RANK (new reduced axes fit), or a
    size-1 axis (keepdims)."""
    return isinstance(ty, TensorTy) and (ty.ndim < MAX_RANK or 1 in ty.shape)


def expand_reduced(ty: TensorTy, ctx: TypeGenerator, max_new: int = MAX_RANK
                   ) -> tuple[tuple[int, ...], list[int], bool]:
    """(input shape, reduced axes, keepdims) of a reduction returning `ty`."""
    rng = ctx.rng
    ones = [i for i, d in enumerate(ty.shape) if d == 1]
    keep = bool(ones) and (ty.ndim >= MAX_RANK or rng.random() < 0.4)
    if keep:
        axes = sorted(rng.sample(ones, rng.randint(1, min(len(ones), max_new))))
        dims = list(ty.shape)
        for a in axes:
            dims[a] = ctx.dim()
    else:
        n_new = rng.randint(1, min(MAX_RANK - ty.ndim, max_new))
        rank = ty.ndim + n_new
        axes = sorted(rng.sample(range(rank), n_new))
        it = iter(ty.shape)
        dims = [ctx.dim() if i in axes else next(it) for i in range(rank)]
    fixed = [i for i in range(len(dims)) if i not in axes]
    return tuple(shrink(dims, MAX_ELEMS, keep=fixed)), axes, keep


def reduction(name: str, dtypes: tuple[str, ...]) -> None:
    fn = relax_op(name)

    def rec(ty: Ty) -> bool:
        return reducible(ty) and ty.dtype in dtypes  # type: ignore[union-attr]

    def solve(ty: Ty, ctx: TypeGenerator) -> Solution:
        assert isinstance(ty, TensorTy)
        shape, axes, keep = expand_reduced(ty, ctx)
        return Solution([ArgSpec(TensorTy(shape, ty.dtype))], {"axis": axes, "keepdims": keep})

    def sample(ctx: TypeGenerator) -> Ty:
        return ctx.tensor(dtypes, 0, MAX_RANK - 1)

    register("relax." + name, rec, solve, sample,
             lambda args, attrs: fn(args[0], axis=attrs["axis"], keepdims=attrs["keepdims"]))


def arg_reduction(name: str) -> None:
    fn = relax_op(name)

    def rec(ty: Ty) -> bool:
        return reducible(ty) and ty.dtype == "int64"  # type: ignore[union-attr]

    def solve(ty: Ty, ctx: TypeGenerator) -> Solution:
        assert isinstance(ty, TensorTy)
        shape, axes, keep = expand_reduced(ty, ctx, max_new=1)
        return Solution([ArgSpec(TensorTy(shape, ctx.dtype(ARG_DTYPES)))],
                        {"axis": axes[0], "keepdims": keep})

    register("relax." + name, rec, solve, lambda ctx: ctx.tensor(("int64",), 0, MAX_RANK - 1),
             lambda args, attrs: fn(args[0], axis=attrs["axis"], keepdims=attrs["keepdims"]),
             weight=0.5)


def _matmul_rec(ty: Ty) -> bool:
    return isinstance(ty, TensorTy) and ty.ndim >= 2 and ty.dtype in NUMERIC


def _matmul_solve(ty: Ty, ctx: TypeGenerator) -> Solution:
    """out = batch + (M, N) from a = batch + (M, K) and b = (K, N), or b with a suffix of the
    batch dims (some of them 1: matmul broadcasts batch dims)."""
    assert isinstance(ty, TensorTy)
    rng = ctx.rng
    *batch, m, n = ty.shape
    b_batch = batch[rng.randint(0, len(batch)):] if batch else []
    b_batch = [1 if rng.random() < 0.3 else d for d in b_batch]
    k = ctx.dim()
    while k > 1 and max(math.prod(batch) * m * k, math.prod(b_batch) * k * n) > MAX_ELEMS:
        k //= 2
    a = TensorTy(tuple(batch) + (m, k), ty.dtype)
    b = TensorTy(tuple(b_batch) + (k, n), ty.dtype)
    return Solution([ArgSpec(a), ArgSpec(b)])


def register_all() -> None:
    for name in REDUCE_NUMERIC:
        reduction(name, NUMERIC)
    for name in REDUCE_FLOAT:
        reduction(name, FLOATS)
    for name in ARG_REDUCE:
        arg_reduction(name)
    matmul = relax_op("matmul")
    register("relax.matmul", _matmul_rec, _matmul_solve,
             lambda ctx: ctx.tensor(NUMERIC, 2, MAX_RANK),
             lambda args, attrs: matmul(args[0], args[1]), weight=1.5)

