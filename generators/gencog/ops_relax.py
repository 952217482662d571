"""GenCoGL specifications of the Relax ops that GenCoG's (Relay-era) table has no family for.

Inverse trigonometric and hyperbolic functions, softplus/selu/gelu_tanh, atan2, mod,
log_add_exp, outer; scans (cumsum, cumprod), sorting (sort, argsort, topk, median),
triangular masks (tril, triu), stack, meshgrid, einsum, slice_scatter, collapse_sum_to,
zeros_like/ones_like, dropout, resize3d, affine_grid and attention. Registered into the same
`OPS` table as `generators.gencog.ops` (which imports this module last).

Dtypes were measured on TVM 0.27 as in `generators.gencog.ops` (type-checked, legalized, built
on llvm and run on the VM): acos, acosh, asin, asinh, atan, sinh, cosh and atan2 do not build
in float16 ("unknown intrinsic tirx.acos": LLVM has no half-precision libm call for them);
sort, argsort and median refuse int8 ("Unsupported input dtype"); mod on bfloat16 fails to
build (a uint16/bfloat16 store mismatch) and on integers may divide by zero (SIGFPE), as
floor_mod; log_add_exp builds only in float32 and float16; attention only on floats.

Left out: nn.pixel_shuffle (TVM 0.27's legalization calls `topi.nn.pixel_shuffle`, which does
not exist, so no call builds); one_hot (its on/off values are float64 unless given as float32
PrimValues, which the graph IR does not hold); gather/scatter/take-like ops with index tensors
(an out-of-range index is undefined behaviour TVM does not reject); ops without a tensor input
(zeros, arange, eye, ...: GenCoG grows a graph from an existing value); cross_entropy_with_logits
and nll_loss (rank-0 results, which the generators never make).

Where tvtv's encoder has a documented limit (docs/semantics.md), the spec stays inside it so
generated graphs remain checkable: sort-like ops on at most 32 elements per axis, resize3d's
linear and cubic methods only on floats, affine_grid's align_corners only with sizes > 1.
"""
from __future__ import annotations

from typing import Any, Callable

from generators.gencog.expr import (BOOL as KBOOL, DTYPE, FLOAT, IN, INT, OUT, STR, And, Concat,
                                    Cond, Const, Expr, ForAll, List, ListGen, Map, Not, Or, Range,
                                    Var, a)
from generators.gencog.ops import _binary, _kept_dims, _same, resize_attrs
from generators.gencog.spec import (ALL_DTYPES, BF16, F16, F32, FLOATS, I32, I64, MAX_DIM,
                                    MAX_RANK, NUMERIC, TypeSpec, register)

r0, s0 = IN[0].rank, IN[0].shape
F32_BF16 = (F32, BF16)
F32_F16 = (F32, F16)
SORTABLE = (F32, F16, BF16, I32)
SORT_MAX = 32  # tvtv's sort/argsort/topk/median encoders take at most 32 elements per axis


def _axis() -> Var:
    return Var(INT, ran=(0, r0 - 1))


# -- elementwise ---------------------------------------------------------------------------------
def _softplus() -> TypeSpec:
    return TypeSpec(attrs=[("beta", Var(FLOAT, choices=(0.5, 1.0, 2.0))),
                           ("threshold", Var(FLOAT, choices=(10.0, 20.0)))],
                    dtypes=FLOATS, out_shapes=[s0])


def _outer() -> TypeSpec:
    return TypeSpec(in_num=2, dtypes=NUMERIC, rank_range=(1, 1), extra=[IN[1].rank == 1],
                    out_shapes=[List([s0[0], IN[1].shape[0]])])


# -- scans and sorting ---------------------------------------------------------------------------
def _scan() -> TypeSpec:
    return TypeSpec(attrs=[("axis", _axis()), ("dtype", Const(None)),
                           ("exclusive", Var(KBOOL))], dtypes=NUMERIC, out_shapes=[s0])


def _sort() -> TypeSpec:
    return TypeSpec(attrs=[("axis", _axis()), ("descending", Var(KBOOL))], dtypes=SORTABLE,
                    extra=[s0[a("axis")] <= SORT_MAX], out_shapes=[s0])


def _argsort() -> TypeSpec:
    return TypeSpec(attrs=[("axis", _axis()), ("descending", Var(KBOOL)),
                           ("dtype", Var(DTYPE, choices=(I32, I64)))],
                    dtypes=SORTABLE, extra=[s0[a("axis")] <= SORT_MAX], out_shapes=[s0],
                    out_dtypes=[a("dtype")])


def _topk() -> TypeSpec:
    # ret_type "both" (the tuple): "values" and "indices" are its two fields alone
    ax = a("axis")
    shape = ListGen(r0, lambda j: Cond(j == ax, a("k"), s0[j]))
    return TypeSpec(attrs=[("k", Var(INT, ran=(1, s0[ax]))), ("axis", _axis()),
                           ("ret_type", Const("both")), ("largest", Var(KBOOL)),
                           ("dtype", Var(DTYPE, choices=(I32, I64)))],
                    dtypes=NUMERIC, extra=[s0[ax] <= SORT_MAX], out_num=2, tuple_out=True,
                    out_shapes=List([shape, shape]),
                    out_dtypes=List([IN[0].dtype, a("dtype")]))


def _median() -> TypeSpec:
    # one axis: the tuple (values, int64 indices), as TVM 0.27 types it
    axes = a("axis")
    shape = _kept_dims(axes, a("keepdims"))
    return TypeSpec(attrs=[("axis", List([_axis()])), ("keepdims", Var(KBOOL))],
                    dtypes=SORTABLE, out_num=2, tuple_out=True,
                    extra=[s0[axes[0]] <= SORT_MAX, Or(a("keepdims"), r0 >= 2)],
                    out_shapes=List([shape, shape]), out_dtypes=List([IN[0].dtype, I64]))


# -- shape manipulation --------------------------------------------------------------------------
def _triangle() -> TypeSpec:
    return TypeSpec(attrs=[("k", Var(INT, ran=(-2, 2)))], dtypes=ALL_DTYPES,
                    rank_range=(2, MAX_RANK), out_shapes=[s0])


def _stack() -> TypeSpec:
    ax = a("axis")
    return TypeSpec(
        attrs=[("axis", Var(INT, ran=(0, r0)))], in_num=Var(INT, ran=(1, 4)),
        dtypes=ALL_DTYPES, variadic=True, rank_range=(1, MAX_RANK - 1),
        extra=[ForAll(IN.num, lambda i: And(IN[i].rank == r0, IN[i].shape == s0))],
        out_shapes=[Concat(s0[:ax], List([IN.num]), s0[ax:])])


def _meshgrid() -> TypeSpec:
    dims = Map(Range(IN.num), lambda i: IN[i].shape[0])
    # TVM 0.27 types "xy" with the "ij" shape while computing numpy's (docs/findings.md,
    # "Type inference"), and types one input as a 1-tuple that LegalizeOps returns bare: two
    # or three inputs, and "xy" only where the first two lengths are equal (the shapes agree)
    return TypeSpec(
        attrs=[("indexing", Var(STR, choices=("ij", "xy")))], in_num=Var(INT, ran=(2, 3)),
        dtypes=ALL_DTYPES, variadic=True, rank_range=(1, 1),
        extra=[ForAll(IN.num, lambda i: IN[i].rank == 1),
               Or(a("indexing") == "ij", dims[0] == dims[1])],
        out_num=IN.num, tuple_out=True, out_shapes=ListGen(OUT.num, lambda _: dims))


# (subscripts, rank of each operand, equal dims ((operand, axis) pairs), output dims)
_EINSUM = (
    ("ij,jk->ik", (2, 2), [((0, 1), (1, 0))], [(0, 0), (1, 1)]),
    ("ij,kj->ik", (2, 2), [((0, 1), (1, 1))], [(0, 0), (1, 0)]),
    ("bij,bjk->bik", (3, 3), [((0, 0), (1, 0)), ((0, 2), (1, 1))], [(0, 0), (0, 1), (1, 2)]),
    ("ij,j->i", (2, 1), [((0, 1), (1, 0))], [(0, 0)]),
    ("i,j->ij", (1, 1), [], [(0, 0), (1, 0)]),
    ("ij,ij->ij", (2, 2), [((0, 0), (1, 0)), ((0, 1), (1, 1))], [(0, 0), (0, 1)]),
)


def _einsum() -> TypeSpec:
    """Two operands, one of `_EINSUM`'s subscripts (matmul, transposed and batched matmul,
    matrix-vector, outer and elementwise products)."""
    sub = a("subscripts")

    def per_case(f: Callable[[Any], Expr], default: Expr) -> Expr:
        out = default
        for case in reversed(_EINSUM):
            out = Cond(sub == case[0], f(case), out)
        return out

    def fits(case: Any) -> Expr:
        _, ranks, equal, _ = case
        cons: list[Expr] = [IN[0].rank == ranks[0], IN[1].rank == ranks[1]]
        cons += [IN[p].shape[i] == IN[q].shape[j] for (p, i), (q, j) in equal]
        return And(*cons)

    return TypeSpec(
        attrs=[("subscripts", Var(STR, choices=[c[0] for c in _EINSUM]))], in_num=2,
        dtypes=NUMERIC, rank_range=(1, 3), extra=[per_case(fits, Const(False))],
        out_shapes=[per_case(lambda c: List([IN[p].shape[i] for p, i in c[3]]), List([]))])


def _slice_scatter() -> TypeSpec:
    ax, start, end, step = a("axis"), a("start"), a("end"), a("step")
    n = (end - start + step - 1) // step
    return TypeSpec(
        attrs=[("axis", _axis()), ("start", Var(INT, ran=(0, s0[ax] - 1))),
               ("end", Var(INT, ran=(start + 1, s0[ax]))), ("step", Var(INT, ran=(1, 2)))],
        in_num=2, dtypes=ALL_DTYPES,
        extra=[IN[1].rank == r0,
               ForAll(r0, lambda j: IN[1].shape[j] == Cond(j == ax, n, s0[j]))],
        out_shapes=[s0])


def _collapse_sum_to() -> TypeSpec:
    R = Var(INT, ran=(1, r0), name="R")
    # each target dim is the data's (aligned from the right) or 1: broadcastable to the data
    shape = ListGen(R, lambda j: Cond(Var(KBOOL), s0[j + r0 - R], 1))
    return TypeSpec(attrs=[("shape", shape)], dtypes=NUMERIC, out_shapes=[a("shape")])


def _like(dtypes: tuple[str, ...]) -> Callable[[], TypeSpec]:
    def f() -> TypeSpec:
        return TypeSpec(attrs=[("dtype", Var(DTYPE, choices=dtypes))], dtypes=ALL_DTYPES,
                        out_shapes=[s0], out_dtypes=[a("dtype")])
    return f


# -- neural-network and image ops ----------------------------------------------------------------
def _dropout() -> TypeSpec:
    # inference semantics: (data, ones): both fields usable
    return TypeSpec(attrs=[("rate", Var(FLOAT, choices=(0.1, 0.5)))], dtypes=NUMERIC,
                    out_num=2, tuple_out=True, out_shapes=List([s0, s0]))


def _resize3d() -> TypeSpec:
    size = a("size")
    return TypeSpec(
        attrs=resize_attrs(3), dtypes=NUMERIC, rank_range=(5, 5),
        extra=[Or(a("coordinate_transformation_mode") != "align_corners",
                  And(size[0] > 1, size[1] > 1, size[2] > 1)),
               Or(a("method") == "nearest_neighbor", IN[0].dtype == F32, IN[0].dtype == F16,
                  IN[0].dtype == BF16)],
        out_shapes=[Concat(s0[:2], size)])


def _affine_grid() -> TypeSpec:
    size = a("size")
    # theta (N, 2, 3) -> grid (N, 2, H, W)
    return TypeSpec(
        attrs=[("size", ListGen(2, lambda _: Var(INT, ran=(1, MAX_DIM)))),
               ("align_corners", Var(KBOOL))],
        dtypes=F32_F16, rank_range=(3, 3),
        # tvtv encodes align_corners only for sizes > 1 (a size of 1 divides by zero)
        extra=[s0[1] == 2, s0[2] == 3,
               Or(Not(a("align_corners")), And(size[0] > 1, size[1] > 1))],
        out_shapes=[Concat(List([s0[0], 2]), size)])


def _attention() -> TypeSpec:
    # Q (B, S, N, H), K (B, T, N, H), V (B, T, N, Hv) -> (B, S, N, Hv)
    q, k, v = IN[0].shape, IN[1].shape, IN[2].shape
    return TypeSpec(
        attrs=[("scale", Const(None)),
               ("causal_mask", Var(STR, choices=(None, "TopLeft", "BottomRight"))),
               ("window_size", Const(None))],
        in_num=3, dtypes=FLOATS, rank_range=(4, 4),
        extra=[IN[1].rank == 4, IN[2].rank == 4, k[0] == q[0], k[2] == q[2], k[3] == q[3],
               v[0] == q[0], v[1] == k[1], v[2] == q[2]],
        out_shapes=[List([q[0], q[1], q[2], v[3]])])


# -- the registry --------------------------------------------------------------------------------
for _n in ("acos", "acosh", "asin", "asinh", "atan", "sinh", "cosh"):
    register(_n, _same(F32_BF16))
for _n in ("atanh", "nn.gelu_tanh", "nn.selu"):
    register(_n, _same(FLOATS))
register("nn.softplus", _softplus)
register("atan2", _binary(F32_BF16))
register("mod", _binary(F32_F16))
register("log_add_exp", _binary(F32_F16))
register("outer", _outer)
register("cumsum", _scan)
register("cumprod", _scan)
register("sort", _sort)
register("argsort", _argsort)
register("topk", _topk)
register("median", _median)
register("tril", _triangle)
register("triu", _triangle)
register("stack", _stack)
register("meshgrid", _meshgrid)
register("einsum", _einsum)
register("slice_scatter", _slice_scatter)
register("collapse_sum_to", _collapse_sum_to)
register("zeros_like", _like(ALL_DTYPES))
register("ones_like", _like(ALL_DTYPES))
register("nn.dropout", _dropout)
register("image.resize3d", _resize3d)
register("image.affine_grid", _affine_grid)
register("nn.attention", _attention)
