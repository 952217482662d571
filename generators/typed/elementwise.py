"""Elementwise and broadcasting operators: unary maps, binary arithmetic, comparisons, logical
and bitwise ops, clip, where, astype.

Dtype sets were measured on apache-tvm 0.27 (build + run with LLVM on CPU): `power` runs only
for float32/float16 (bfloat16 and integers fail in legalization); `equal`/`not_equal` on bool
tensors crash LLVM codegen (an fcmp on i1), so comparisons take numeric inputs only; integer
division, floor_divide and floor_mod get a positive constant divisor (see opinfo.POSITIVE);
`astype` never converts a float to an integer (out-of-range / NaN conversion is poison in LLVM).
"""
from __future__ import annotations

from generators.typed.opinfo import (POSITIVE, ArgSpec, Solution, register, relax_op,
                                     tensor_rec, tensor_sampler)
from generators.typed.types import BOOL, FLOATS, INTS, NUMERIC, TensorTy, Ty, TypeGenerator

FLOAT_UNARY = ("exp", "log", "sqrt", "tanh", "sigmoid", "sin", "cos", "erf", "rsqrt",
               "nn.gelu", "nn.silu")
NUMERIC_UNARY = ("negative", "abs", "nn.relu", "floor", "ceil", "round", "square", "sign")
ARITH = ("add", "subtract", "multiply", "maximum", "minimum")
DIVISION = ("divide", "floor_divide", "floor_mod")
COMPARE = ("greater", "less", "greater_equal", "less_equal", "equal", "not_equal")
LOGICAL = ("logical_and", "logical_or", "logical_xor")
BITWISE = ("bitwise_and", "bitwise_or", "bitwise_xor")


def op_name(path: str) -> str:
    return "relax." + path


def broadcast_operand(ty: TensorTy, ctx: TypeGenerator, dtype: str | None = None) -> TensorTy:
    """A type that broadcasts with `ty` to `ty` (never larger): a suffix of its shape with
    some dims replaced by 1."""
    rng = ctx.rng
    drop = rng.choice((0, 0, 0, 1, 2)) if ty.ndim else 0
    suffix = ty.shape[min(drop, ty.ndim):]
    return TensorTy(tuple(1 if rng.random() < 0.25 else d for d in suffix), dtype or ty.dtype)


def broadcast_pair(ty: TensorTy, ctx: TypeGenerator, dtype: str | None = None
                   ) -> tuple[TensorTy, TensorTy]:
    """Two types whose numpy broadcast is exactly `ty`'s shape: one of them (at random) is the
    full shape, the other a broadcast operand."""
    dt = dtype or ty.dtype
    full = TensorTy(ty.shape, dt)
    other = broadcast_operand(ty, ctx, dt)
    return (full, other) if ctx.rng.random() < 0.5 else (other, full)


def unary(path: str, dtypes: tuple[str, ...]) -> None:
    fn = relax_op(path)
    register(op_name(path), tensor_rec(dtypes),
             lambda ty, ctx: Solution([ArgSpec(ty)]),
             tensor_sampler(dtypes),
             lambda args, attrs: fn(*args))


def binary(path: str, dtypes: tuple[str, ...], safe_divisor: bool = False) -> None:
    fn = relax_op(path)

    def solve(ty: Ty, ctx: TypeGenerator) -> Solution:
        assert isinstance(ty, TensorTy)
        a, b = broadcast_pair(ty, ctx)
        # integer division by 0 traps (SIGFPE): the divisor is a constant >= 1
        kind = POSITIVE if safe_divisor and ty.dtype in INTS else "expr"
        return Solution([ArgSpec(a), ArgSpec(b, kind)])

    register(op_name(path), tensor_rec(dtypes), solve, tensor_sampler(dtypes),
             lambda args, attrs: fn(*args))


def compare(path: str) -> None:
    fn = relax_op(path)

    def solve(ty: Ty, ctx: TypeGenerator) -> Solution:
        assert isinstance(ty, TensorTy)
        a, b = broadcast_pair(ty, ctx, ctx.dtype(NUMERIC))
        return Solution([ArgSpec(a), ArgSpec(b)])

    register(op_name(path), tensor_rec((BOOL,)), solve, tensor_sampler((BOOL,)),
             lambda args, attrs: fn(*args))


def _clip_solve(ty: Ty, ctx: TypeGenerator) -> Solution:
    assert isinstance(ty, TensorTy)
    rng = ctx.rng
    if ty.dtype in FLOATS:
        lo = rng.choice((-2.0, -1.0, -0.5, 0.0))
        return Solution([ArgSpec(ty)], {"min": lo, "max": lo + rng.choice((0.5, 1.0, 2.0, 6.0))})
    lo = rng.choice((-5, -1, 0))
    return Solution([ArgSpec(ty)], {"min": lo, "max": lo + rng.choice((1, 3, 6))})


def _where_solve(ty: Ty, ctx: TypeGenerator) -> Solution:
    assert isinstance(ty, TensorTy)
    cond = broadcast_operand(ty, ctx, BOOL)
    a, b = broadcast_pair(ty, ctx)
    return Solution([ArgSpec(cond), ArgSpec(a), ArgSpec(b)])


def astype_sources(dtype: str) -> tuple[str, ...]:
    """Dtypes `astype` may convert from to get `dtype` (never float -> integer)."""
    if dtype in INTS:
        return tuple(d for d in INTS + (BOOL,) if d != dtype)
    return tuple(d for d in NUMERIC + (BOOL,) if d != dtype)


def _astype_solve(ty: Ty, ctx: TypeGenerator) -> Solution:
    assert isinstance(ty, TensorTy)
    src = ctx.dtype(astype_sources(ty.dtype))
    return Solution([ArgSpec(TensorTy(ty.shape, src))], {"dtype": ty.dtype})


def register_all() -> None:
    for p in FLOAT_UNARY:
        unary(p, FLOATS)
    for p in NUMERIC_UNARY:
        unary(p, NUMERIC)
    unary("logical_not", (BOOL,))
    unary("bitwise_not", INTS)
    leaky = relax_op("nn.leakyrelu")
    register("relax.nn.leakyrelu", tensor_rec(FLOATS),
             lambda ty, ctx: Solution([ArgSpec(ty)], {"alpha": ctx.rng.choice((0.01, 0.1, 0.5))}),
             tensor_sampler(FLOATS), lambda args, attrs: leaky(*args, **attrs))
    clip = relax_op("clip")
    register("relax.clip", tensor_rec(NUMERIC), _clip_solve, tensor_sampler(NUMERIC),
             lambda args, attrs: clip(args[0], attrs["min"], attrs["max"]))
    for p in ARITH:
        binary(p, NUMERIC)
    for p in DIVISION:
        binary(p, NUMERIC, safe_divisor=True)
    binary("power", ("float32", "float16"))
    for p in COMPARE:
        compare(p)
    for p in LOGICAL:
        binary(p, (BOOL,))
    for p in BITWISE:
        binary(p, INTS)
    where = relax_op("where")
    register("relax.where", tensor_rec(NUMERIC), _where_solve, tensor_sampler(NUMERIC),
             lambda args, attrs: where(*args))
    astype = relax_op("astype")
    register("relax.astype", tensor_rec(NUMERIC + (BOOL,)), _astype_solve,
             tensor_sampler(NUMERIC + (BOOL,)),
             lambda args, attrs: astype(args[0], attrs["dtype"]), weight=0.7)

