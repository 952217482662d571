"""GenCoGL specifications of Relax ops (TVM 0.27), one per op, registered in `OPS`.

Families (GenCoG's table 1 on Relax): elementwise unary, broadcasting binary (and `where`),
reductions, softmax, tensor transformations, 1d/2d/3d convolution and transposed convolution,
max/avg/adaptive-avg pooling 1d/2d/3d, matmul and the composite linear, prelu, normalisations,
pad, resize2d, astype. Each factory writes the op's type rule as TVM 0.27 checks it (the rules
were checked by building calls; every spec is exercised against TVM's inference in
tests/test_gen_gencog.py).

Dtypes (measured on TVM 0.27: each (op, dtype) is type-checked, legalized, built on llvm and
run): float-only ops take float32, float16 and bfloat16 unless TVM refuses bfloat16 (layer/
instance/group norm, prelu, power, isnan/isinf/isfinite, argmax/argmin); ops TVM accepts on
integers also take int32 and int8; comparisons give bool (never on bool inputs: LLVM codegen
emits `fcmp` on i1); logical ops take bool; `astype` connects dtypes. Never on integers:
divide, floor_divide, floor_mod, power (a zero divisor kills the VM with SIGFPE) and avg
pooling (a window that is all padding divides by a zero count). Left out because TVM 0.27's
LegalizeOps changes the result dtype (so a later op of the declared dtype fails to build):
batch_norm on float16/bfloat16 (gives float32), mean/variance on ints (int64),
adaptive_avg_pool on int8 (int32). rms_norm only on trailing axes leaving one dim (other axes
type-check but fail in legalization).
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

from generators.gencog.expr import (BOOL as KBOOL, DTYPE, FLOAT, IN, INT, OUT, STR, And, Concat,
                                    Cond, Const, Divisors, Expr, Filter, ForAll, InSet, Len, List,
                                    ListGen, Map, Not, Or, Perm, Range, ReduceArray, Subset,
                                    Var, a)
from generators.gencog.spec import (ALL_DTYPES, BOOL, F16, F32, FLOATS, I32, I64, INTS,
                                    MAX_DIM, MAX_RANK, NUMERIC, OPS, TypeSpec, register)

r0, s0 = IN[0].rank, IN[0].shape
NICE_FLOATS = (-2.0, -1.5, -1.0, -0.5, -0.25, 0.0, 0.25, 0.5, 1.0, 1.5, 2.0, 3.0)
F32_F16 = (F32, F16)


def _prod(lst: Any) -> Expr:
    return ReduceArray(lst, "*", 1)


def _bcast(tensors: Sequence[tuple[Any, Any]]) -> tuple[list[Expr], Expr]:
    """numpy broadcasting of (shape, rank) pairs: the constraints and the output shape."""
    cons: list[Expr] = []
    for i in range(len(tensors)):
        for j in range(i + 1, len(tensors)):
            (sa, ra), (sb, rb) = tensors[i], tensors[j]
            cons.append(ForAll(ra.min(rb), lambda k, sa=sa, ra=ra, sb=sb, rb=rb: Or(
                sa[ra - k - 1] == sb[rb - k - 1], sa[ra - k - 1] == 1, sb[rb - k - 1] == 1)))
    R: Expr = tensors[0][1]
    for _, r in tensors[1:]:
        R = R.max(r)

    def dim(j: Expr) -> Expr:
        out: Expr = Const(1)
        for s, r in tensors:
            out = out.max(Cond(j >= R - r, s[j - (R - r)], 1))
        return out
    return cons, ListGen(R, dim)


def _same(dtypes: Sequence[str], out_dtype: Any = None, **kw: Any) -> Callable[[], TypeSpec]:
    """Elementwise unary: output type = input type (or dtype `out_dtype`)."""
    def f() -> TypeSpec:
        return TypeSpec(dtypes=dtypes, out_shapes=[s0],
                        out_dtypes=None if out_dtype is None else [out_dtype], **kw)
    return f


def _binary(dtypes: Sequence[str], out_dtype: Any = None) -> Callable[[], TypeSpec]:
    def f() -> TypeSpec:
        cons, out = _bcast([(IN[0].shape, IN[0].rank), (IN[1].shape, IN[1].rank)])
        return TypeSpec(in_num=2, dtypes=dtypes, extra=cons, out_shapes=[out],
                        out_dtypes=None if out_dtype is None else [out_dtype])
    return f


def _where() -> TypeSpec:
    cons, out = _bcast([(IN[i].shape, IN[i].rank) for i in range(3)])
    dt = Var(DTYPE, choices=ALL_DTYPES, name="dt")
    return TypeSpec(in_num=3, in_dtypes=List([BOOL, dt, dt]), dtypes=(BOOL,), extra=cons,
                    out_shapes=[out], out_dtypes=[dt])


def _kept_dims(axes: Any, keepdims: Any) -> Expr:
    """The shape of a reduction of IN[0] over `axes` (a list)."""
    return Cond(keepdims,
                ListGen(r0, lambda j: Cond(InSet(j, axes), 1, s0[j])),
                Map(Filter(Range(r0), lambda j: Not(InSet(j, axes))), lambda j: s0[j]))


def _reduce(dtypes: Sequence[str]) -> Callable[[], TypeSpec]:
    def f() -> TypeSpec:
        return TypeSpec(attrs=[("axis", Subset(Range(r0))), ("keepdims", Var(KBOOL))],
                        dtypes=dtypes, out_shapes=[_kept_dims(a("axis"), a("keepdims"))],
                        extra=[Or(a("keepdims"), Len(a("axis")) < r0)])  # no rank-0 result
    return f


def _arg_reduce() -> TypeSpec:
    # bfloat16 fails to build in TVM 0.27 (a type mismatch after legalization)
    return TypeSpec(attrs=[("axis", Var(INT, ran=(0, r0 - 1))), ("keepdims", Var(KBOOL))],
                    dtypes=F32_F16 + INTS, out_dtypes=[I64], extra=[Or(a("keepdims"), r0 >= 2)],
                    out_shapes=[_kept_dims(List([a("axis")]), a("keepdims"))])


def _softmax() -> TypeSpec:
    return TypeSpec(attrs=[("axis", Var(INT, ran=(Const(0) - r0, r0 - 1)))], dtypes=FLOATS,
                    out_shapes=[s0])


def _leakyrelu() -> TypeSpec:
    return TypeSpec(attrs=[("alpha", Var(FLOAT, choices=(0.01, 0.1, 0.2, 0.5, 1.5)))],
                    dtypes=FLOATS, out_shapes=[s0])


def _clip() -> TypeSpec:
    # integral bounds, so the call means the same on float and integer tensors
    return TypeSpec(attrs=[("min", Var(FLOAT, choices=(-3.0, -2.0, -1.0, 0.0, 1.0))),
                           ("max", a("min") + Var(FLOAT, choices=(0.0, 1.0, 2.0, 4.0, 6.0)))],
                    dtypes=NUMERIC, out_shapes=[s0])


def _astype() -> TypeSpec:
    return TypeSpec(attrs=[("dtype", Var(DTYPE, choices=ALL_DTYPES))], dtypes=ALL_DTYPES,
                    extra=[a("dtype") != IN[0].dtype], out_shapes=[s0],
                    out_dtypes=[a("dtype")])


# -- tensor transformations ---------------------------------------------------------------------
def _reshape() -> TypeSpec:
    # each new dim divides the size (GenCoG: dims in a range; divisors keep it solvable
    # by sampling rather than by factoring in Z3)
    shape = ListGen(Var(INT, ran=(1, MAX_RANK)),
                    lambda _: Var(INT, choices=Divisors(_prod(s0))))
    return TypeSpec(attrs=[("shape", shape)], dtypes=ALL_DTYPES,
                    extra=[_prod(a("shape")) == _prod(s0)], out_shapes=[a("shape")])


def _permute_dims() -> TypeSpec:
    return TypeSpec(attrs=[("axes", Perm(Range(r0)))], dtypes=ALL_DTYPES,
                    out_shapes=[Map(a("axes"), lambda k: s0[k])])


def _expand_dims() -> TypeSpec:
    k = a("axis")[0]
    return TypeSpec(attrs=[("axis", List([Var(INT, ran=(0, r0))]))], dtypes=ALL_DTYPES,
                    rank_range=(1, MAX_RANK - 1),
                    out_shapes=[Concat(s0[:k], List([1]), s0[k:])])


def _squeeze() -> TypeSpec:
    return TypeSpec(attrs=[("axis", Subset(Filter(Range(r0), lambda j: s0[j] == 1)))],
                    dtypes=ALL_DTYPES, rank_range=(2, MAX_RANK),
                    extra=[ReduceArray(Map(s0, lambda d: Cond(d == 1, 1, 0)), "+", 0) >= 1],
                    out_shapes=[Map(Filter(Range(r0), lambda j: Not(InSet(j, a("axis")))),
                                    lambda j: s0[j])])


def _flatten() -> TypeSpec:
    return TypeSpec(dtypes=ALL_DTYPES, out_shapes=[List([_prod(s0)])])


def _batch_flatten() -> TypeSpec:
    return TypeSpec(dtypes=ALL_DTYPES, rank_range=(2, MAX_RANK),
                    out_shapes=[List([s0[0], _prod(s0[1:])])])


def _concat() -> TypeSpec:
    axis = a("axis")
    return TypeSpec(
        attrs=[("axis", Var(INT, ran=(0, r0 - 1)))], in_num=Var(INT, ran=(1, 4)),
        dtypes=ALL_DTYPES, variadic=True,
        extra=[ForAll(IN.num, lambda i: And(IN[i].rank == r0, ForAll(
            r0, lambda j: Or(j == axis, IN[i].shape[j] == s0[j]))))],
        out_shapes=[ListGen(r0, lambda j: Cond(
            j == axis, ReduceArray(Map(Range(IN.num), lambda i: IN[i].shape[j]), "+", 0),
            s0[j]))])


def _split() -> TypeSpec:
    n, axis = a("indices_or_sections"), a("axis")
    return TypeSpec(
        # one section gives a tensor, not a tuple, in TVM 0.27: at least 2
        attrs=[("indices_or_sections", Var(INT, ran=(2, 4))),
               ("axis", Var(INT, ran=(0, r0 - 1)))],
        dtypes=ALL_DTYPES, extra=[s0[axis] % n == 0], out_num=n, tuple_out=True,
        out_shapes=ListGen(OUT.num, lambda _: ListGen(
            r0, lambda j: Cond(j == axis, s0[j] // n, s0[j]))))


def _strided_slice() -> TypeSpec:
    begin_all = ListGen(r0, lambda j: Var(INT, ran=(0, s0[j] - 1)))
    end_all = ListGen(r0, lambda j: Var(INT, ran=(begin_all[j] + 1, s0[j])))
    stride_all = ListGen(r0, lambda _: Var(INT, ran=(1, 3)))
    axes = a("axes")
    return TypeSpec(
        attrs=[("axes", Subset(Range(r0))),
               ("begin", Map(axes, lambda j: begin_all[j])),
               ("end", Map(axes, lambda j: end_all[j])),
               ("strides", Map(axes, lambda j: stride_all[j])),
               ("assume_inbound", Const(False))],
        dtypes=ALL_DTYPES,
        out_shapes=[ListGen(r0, lambda j: Cond(
            InSet(j, axes), (end_all[j] - begin_all[j] + stride_all[j] - 1) // stride_all[j],
            s0[j]))])


def _take() -> TypeSpec:
    axis = a("axis")
    return TypeSpec(
        attrs=[("axis", Var(INT, ran=(0, r0 - 1))),
               # "fast" reads out of bounds on bad indices; clip and wrap are total
               ("mode", Var(STR, choices=("clip", "wrap")))],
        in_num=2, params=(1,),
        in_dtypes=List([Var(DTYPE, choices=NUMERIC), Var(DTYPE, choices=(I32, I64))]),
        extra=[IN[1].rank <= 2, IN[0].rank + IN[1].rank <= MAX_RANK + 1],
        out_shapes=[Concat(s0[:axis], IN[1].shape, s0[axis + 1:])])


def _tile() -> TypeSpec:
    reps = a("repeats")
    L = Len(reps)
    R = r0.max(L)
    return TypeSpec(
        attrs=[("repeats", ListGen(Var(INT, ran=(1, MAX_RANK)),
                                   lambda _: Var(INT, ran=(1, 3))))],
        dtypes=ALL_DTYPES,
        out_shapes=[ListGen(R, lambda j: Cond(j >= R - r0, s0[j - (R - r0)], 1)
                            * Cond(j >= R - L, reps[j - (R - L)], 1))])


def _repeat() -> TypeSpec:
    return TypeSpec(
        attrs=[("repeats", Var(INT, ran=(1, 3))), ("axis", Var(INT, ran=(0, r0 - 1)))],
        dtypes=ALL_DTYPES,
        out_shapes=[ListGen(r0, lambda j: Cond(j == a("axis"), s0[j] * a("repeats"),
                                               s0[j]))])


def _flip() -> TypeSpec:
    return TypeSpec(attrs=[("axis", Var(INT, ran=(0, r0 - 1)))], dtypes=ALL_DTYPES,
                    out_shapes=[s0])


def _broadcast_to() -> TypeSpec:
    R = Var(INT, ran=(r0, MAX_RANK), name="R")

    def dim(j: Expr) -> Expr:
        src = s0[j - (R - r0)]
        return Cond(j < R - r0, Var(INT, ran=(1, 4)), Cond(src == 1, Var(INT, ran=(1, 4)), src))
    return TypeSpec(attrs=[("shape", ListGen(R, dim))], dtypes=ALL_DTYPES,
                    out_shapes=[a("shape")])


def _pad() -> TypeSpec:
    pw = a("pad_width")
    return TypeSpec(
        attrs=[("pad_width", ListGen(r0 * 2, lambda _: Var(INT, ran=(0, 2)))),
               # Relax's modes (relax.op.nn.pad's doc); Relay's "edge" is accepted by TVM 0.27
               # but undocumented, and LegalizeOps pads it as "constant"
               ("pad_mode", Var(STR, choices=("constant", "reflect", "replicate", "circular"))),
               ("pad_value", Var(FLOAT, choices=NICE_FLOATS))],
        dtypes=NUMERIC,
        # reflect mirrors without the edge: each pad must be smaller than its dim
        extra=[Or(a("pad_mode") != "reflect", ForAll(r0, lambda j: And(
            pw[j * 2] < s0[j], pw[j * 2 + 1] < s0[j])))],
        out_shapes=[ListGen(r0, lambda j: s0[j] + pw[j * 2] + pw[j * 2 + 1])])


# -- linear algebra ---------------------------------------------------------------------------
def _matmul() -> TypeSpec:
    ra, rb = IN[0].rank, IN[1].rank
    sa, sb = IN[0].shape, IN[1].shape
    # batch dims: all but the last two (none for rank 1 and 2)
    ba, bb = sa[: (ra - 2).max(0)], sb[: (rb - 2).max(0)]
    cons, batch = _bcast([(ba, (ra - 2).max(0)), (bb, (rb - 2).max(0))])
    return TypeSpec(
        attrs=[("out_dtype", Const(None))], in_num=2, dtypes=NUMERIC,
        extra=cons + [sa[ra - 1] == Cond(rb == 1, sb[0], sb[rb - 2])],
        out_shapes=[Concat(batch, Cond(ra >= 2, List([sa[ra - 2]]), List([])),
                           Cond(rb >= 2, List([sb[rb - 1]]), List([])))])


def _linear() -> TypeSpec:
    """relax.op.linear(x, w, b): permute_dims(w) then matmul (then add b), w of [out, in]."""
    w = IN[1].shape
    # input 2 (the bias) is always solved; it is used (and becomes a graph input) with bias
    return TypeSpec(
        attrs=[("bias", Var(KBOOL))], in_num=3, params=(1, 2),
        dtypes=NUMERIC, emit_as="linear",
        extra=[IN[1].rank == 2, w[1] == s0[r0 - 1], IN[2].rank == 1, IN[2].shape[0] == w[0]],
        out_shapes=[Concat(s0[: r0 - 1], List([w[0]]))])


# -- convolution and pooling ----------------------------------------------------------------------
_LAYOUTS = {1: ("NCW", "OIW", "IOW"), 2: ("NCHW", "OIHW", "IOHW"),
            3: ("NCDHW", "OIDHW", "IODHW")}


def _conv(n: int, transpose: bool) -> Callable[[], TypeSpec]:
    data_l, kern_l, kern_t = _LAYOUTS[n]

    def f() -> TypeSpec:
        w = IN[1].shape
        st, pad, dil, g = a("strides"), a("padding"), a("dilation"), a("groups")
        C = s0[1]
        attrs: list[tuple[str, Any]] = [
            ("strides", ListGen(n, lambda _: Var(INT, ran=(1, 3)))),
            ("padding", ListGen(2 * n, lambda _: Var(INT, ran=(0, 2)))),
            ("dilation", ListGen(n, lambda _: Var(INT, ran=(1, 2)))),
            ("groups", Var(INT, ran=(1, C)))]
        if transpose:
            attrs.append(("output_padding", ListGen(n, lambda i: Var(INT, ran=(0, st[i] - 1)))))
        attrs += [("data_layout", Const(data_l)),
                  ("kernel_layout", Const(kern_t if transpose else kern_l)),
                  ("out_layout", Const(data_l)), ("out_dtype", Const(None))]
        if transpose:
            # weight [C, O/groups, k...]: out = (x-1)*s - pads + d*(k-1) + output_padding + 1
            extra = [IN[1].rank == n + 2, w[0] == C, C % g == 0]
            spatial = ListGen(n, lambda i: (s0[i + 2] - 1) * st[i] - pad[i] - pad[i + n]
                              + dil[i] * (w[i + 2] - 1) + a("output_padding")[i] + 1)
            channels = w[1] * g
        else:
            # weight [O, C/groups, k...]: out = (x + pads - d*(k-1) - 1) // s + 1
            extra = [IN[1].rank == n + 2, w[1] * g == C, C % g == 0, w[0] % g == 0,
                     ForAll(n, lambda i: s0[i + 2] + pad[i] + pad[i + n]
                            - dil[i] * (w[i + 2] - 1) - 1 >= 0)]
            spatial = ListGen(n, lambda i: (s0[i + 2] + pad[i] + pad[i + n]
                                            - dil[i] * (w[i + 2] - 1) - 1) // st[i] + 1)
            channels = w[0]
        return TypeSpec(attrs=attrs, in_num=2, params=(1,), dtypes=NUMERIC,
                        rank_range=(n + 2, n + 2), extra=extra,
                        out_shapes=[Concat(List([s0[0], channels]), spatial)])
    return f


def _pool(n: int, kind: str) -> Callable[[], TypeSpec]:
    layout = _LAYOUTS[n][0]

    def f() -> TypeSpec:
        k, st, pad, dil = a("pool_size"), a("strides"), a("padding"), a("dilation")
        numer = ListGen(n, lambda i: s0[i + 2] + pad[i] + pad[i + n] - dil[i] * (k[i] - 1) - 1)
        return TypeSpec(
            attrs=[("pool_size", ListGen(n, lambda _: Var(INT, ran=(1, 3)))),
                   ("strides", ListGen(n, lambda _: Var(INT, ran=(1, 3)))),
                   ("padding", ListGen(2 * n, lambda i: Var(INT, ran=(0, k[i % n] // 2)))),
                   ("dilation", ListGen(n, lambda _: Var(INT, ran=(1, 2)))),
                   ("ceil_mode", Var(KBOOL)), ("count_include_pad", Var(KBOOL)),
                   ("layout", Const(layout)), ("out_layout", Const(layout))],
            dtypes=FLOATS if kind == "avg" else NUMERIC, rank_range=(n + 2, n + 2),
            extra=[ForAll(n, lambda i: numer[i] >= 0)],
            out_shapes=[Concat(s0[:2], ListGen(n, lambda i: Cond(
                a("ceil_mode"), ceil_out(i), numer[i] // st[i] + 1)))])

    def ceil_out(i: Expr) -> Expr:
        # TVM 0.27 (measured): ceil, minus one when the last window would start past the
        # input and its left padding (as PyTorch)
        out = (numer_e(i) + a("strides")[i] - 1) // a("strides")[i] + 1
        return Cond((out - 1) * a("strides")[i] >= s0[i + 2] + a("padding")[i], out - 1, out)

    def numer_e(i: Expr) -> Expr:
        k, pad, dil = a("pool_size"), a("padding"), a("dilation")
        return s0[i + 2] + pad[i] + pad[i + n] - dil[i] * (k[i] - 1) - 1
    return f


def _adaptive(n: int) -> Callable[[], TypeSpec]:
    layout = _LAYOUTS[n][0]

    def f() -> TypeSpec:
        return TypeSpec(
            attrs=[("output_size", ListGen(n, lambda i: Var(INT, ran=(1, s0[i + 2])))),
                   ("layout", Const(layout)), ("out_layout", Const(layout))],
            # int8: TVM 0.27's legalization returns int32
            dtypes=FLOATS + (I32,), rank_range=(n + 2, n + 2),
            out_shapes=[Concat(s0[:2], a("output_size"))])
    return f


# -- other neural-network ops ----------------------------------------------------------------------
def _channel_params(first: int, last: int, axis: Any) -> list[Expr]:
    """Inputs first..last are 1-d of the channel dim s0[axis]."""
    return [And(IN[i].rank == 1, IN[i].shape[0] == s0[axis]) for i in range(first, last + 1)]


def _prelu() -> TypeSpec:
    return TypeSpec(attrs=[("axis", Var(INT, ran=(0, r0 - 1)))], in_num=2, params=(1,),
                    dtypes=F32_F16, rank_range=(2, MAX_RANK),
                    extra=_channel_params(1, 1, a("axis")), out_shapes=[s0])


_EPS = (1e-5, 1e-3, 0.1)


def _batch_norm() -> TypeSpec:
    C = List([s0[a("axis")]])
    return TypeSpec(
        attrs=[("axis", Var(INT, ran=(0, r0 - 1))), ("epsilon", Var(FLOAT, choices=_EPS)),
               ("center", Var(KBOOL)), ("scale", Var(KBOOL)), ("momentum", Const(0.1)),
               ("training", Var(KBOOL))],
        # float32 only: TVM 0.27's legalization of a float16 batch_norm yields float32
        # (a later same-dtype op then fails to build)
        in_num=5, params=(1, 2, 3, 4), dtypes=(F32,), rank_range=(2, MAX_RANK),
        extra=_channel_params(1, 4, a("axis")), out_num=3, tuple_out=True,
        used_outputs=(0,), out_shapes=List([s0, C, C]))


def _layer_norm() -> TypeSpec:
    gshape = Map(a("axes"), lambda j: s0[j])
    return TypeSpec(
        attrs=[("axes", Subset(Range(r0))), ("epsilon", Var(FLOAT, choices=_EPS)),
               ("center", Var(KBOOL)), ("scale", Var(KBOOL))],
        in_num=3, params=(1, 2), dtypes=F32_F16,
        extra=[IN[1].rank == Len(a("axes")), IN[2].rank == Len(a("axes")),
               IN[1].shape == gshape, IN[2].shape == gshape],
        out_shapes=[s0])


def _instance_norm() -> TypeSpec:
    ch = a("channel_axis")
    return TypeSpec(
        attrs=[("channel_axis", Var(INT, ran=(0, r0 - 1))),
               ("axes", Subset(Filter(Range(r0), lambda j: j != ch))),
               ("epsilon", Var(FLOAT, choices=_EPS)), ("center", Var(KBOOL)),
               ("scale", Var(KBOOL))],
        in_num=3, params=(1, 2), dtypes=F32_F16, rank_range=(2, MAX_RANK),
        extra=_channel_params(1, 2, ch), out_shapes=[s0])


def _group_norm() -> TypeSpec:
    ch = a("channel_axis")
    return TypeSpec(
        attrs=[("num_groups", Var(INT, ran=(1, s0[ch]))),
               ("channel_axis", Var(INT, ran=(0, r0 - 1))),
               ("axes", Subset(Filter(Range(r0), lambda j: j != ch))),
               ("epsilon", Var(FLOAT, choices=_EPS)), ("center", Var(KBOOL)),
               ("scale", Var(KBOOL))],
        in_num=3, params=(1, 2), dtypes=F32_F16, rank_range=(2, MAX_RANK),
        extra=_channel_params(1, 2, ch) + [s0[ch] % a("num_groups") == 0],
        out_shapes=[s0])


def _rms_norm() -> TypeSpec:
    # TVM 0.27 type-checks any axes but its legalization only builds for trailing axes that
    # leave at least one dim (else "Tensor dimension mismatch in read"): trailing k < rank
    k = Var(INT, ran=(1, r0 - 1), name="k")
    gshape = Map(a("axes"), lambda j: s0[j])
    return TypeSpec(
        attrs=[("axes", ListGen(k, lambda j: r0 - k + j)),
               ("epsilon", Var(FLOAT, choices=_EPS))],
        in_num=2, params=(1,), dtypes=FLOATS, rank_range=(2, MAX_RANK),
        extra=[IN[1].rank == Len(a("axes")), IN[1].shape == gshape], out_shapes=[s0])


def resize_attrs(n: int) -> list[tuple[str, Any]]:
    """The attributes of resize2d (n = 2, NCHW) and resize3d (n = 3, NCDHW)."""
    return [("size", ListGen(n, lambda _: Var(INT, ran=(1, MAX_DIM)))),
            ("roi", Const([0.0] * (2 * n))), ("layout", Const("NCHW" if n == 2 else "NCDHW")),
            ("method", Var(STR, choices=("nearest_neighbor", "linear", "cubic"))),
            ("coordinate_transformation_mode",
             Var(STR, choices=("half_pixel", "align_corners", "asymmetric"))),
            ("rounding_method", Var(STR, choices=("round", "floor", "ceil"))),
            ("cubic_alpha", Var(FLOAT, choices=(-0.5, -0.75))), ("cubic_exclude", Const(0)),
            ("extrapolation_value", Const(0.0)), ("out_dtype", Const(None))]


def _resize2d() -> TypeSpec:
    size = a("size")
    return TypeSpec(
        attrs=resize_attrs(2), dtypes=NUMERIC, rank_range=(4, 4),
        # align_corners scales by (in-1)/(out-1): no output dim of 1
        extra=[Or(a("coordinate_transformation_mode") != "align_corners",
                  And(size[0] > 1, size[1] > 1))],
        out_shapes=[Concat(s0[:2], size)])


# -- the registry ----------------------------------------------------------------------------------
FLOAT_UNARY = ("exp", "sin", "cos", "tan", "sigmoid", "tanh", "sqrt", "log", "erf", "rsqrt",
               "nn.gelu", "nn.silu")
NUMERIC_UNARY = ("negative", "abs", "nn.relu", "square", "sign", "floor", "ceil", "round",
                 "trunc")
NUMERIC_BINARY = ("add", "subtract", "multiply", "maximum", "minimum")
FLOAT_BINARY = ("divide", "power", "floor_divide", "floor_mod")  # never on ints (SIGFPE)
COMPARE = ("less", "greater", "equal", "not_equal", "less_equal", "greater_equal")

for _n in FLOAT_UNARY:
    register(_n, _same(FLOATS))
for _n in NUMERIC_UNARY:
    register(_n, _same(NUMERIC))
for _n in ("isnan", "isinf", "isfinite"):  # TVM 0.27 refuses bfloat16 here
    register(_n, _same(F32_F16, BOOL))
register("logical_not", _same((BOOL,)))
register("bitwise_not", _same(INTS))
register("nn.leakyrelu", _leakyrelu)
register("clip", _clip)
register("astype", _astype)
for _n in NUMERIC_BINARY:
    register(_n, _binary(NUMERIC))
for _n in FLOAT_BINARY:
    register(_n, _binary(F32_F16 if _n == "power" else FLOATS))  # power: no bfloat16
for _n in COMPARE:
    register(_n, _binary(NUMERIC, BOOL))
for _n in ("logical_and", "logical_or"):
    register(_n, _binary((BOOL,)))
for _n in ("bitwise_and", "bitwise_or", "bitwise_xor"):
    register(_n, _binary(INTS))
register("where", _where)
for _n in ("sum", "max", "min", "prod"):
    register(_n, _reduce(NUMERIC))
for _n in ("mean", "variance"):  # on ints TVM 0.27's legalization returns int64
    register(_n, _reduce(FLOATS))
register("std", _reduce(FLOATS))
register("argmax", _arg_reduce)
register("argmin", _arg_reduce)
register("nn.softmax", _softmax)
register("nn.log_softmax", _softmax)
register("reshape", _reshape)
register("permute_dims", _permute_dims)
register("expand_dims", _expand_dims)
register("squeeze", _squeeze)
register("flatten", _flatten)
register("nn.batch_flatten", _batch_flatten)
register("concat", _concat)
register("split", _split)
register("strided_slice", _strided_slice)
register("take", _take)
register("tile", _tile)
register("repeat", _repeat)
register("flip", _flip)
register("broadcast_to", _broadcast_to)
register("nn.pad", _pad)
register("matmul", _matmul)
register("linear", _linear)
for _d in (1, 2, 3):
    register(f"nn.conv{_d}d", _conv(_d, False))
    register(f"nn.conv{_d}d_transpose", _conv(_d, True))
    register(f"nn.max_pool{_d}d", _pool(_d, "max"))
    register(f"nn.avg_pool{_d}d", _pool(_d, "avg"))
    register(f"nn.adaptive_avg_pool{_d}d", _adaptive(_d))
register("nn.prelu", _prelu)
register("nn.batch_norm", _batch_norm)
register("nn.layer_norm", _layer_norm)
register("nn.instance_norm", _instance_norm)
register("nn.group_norm", _group_norm)
register("nn.rms_norm", _rms_norm)
register("image.resize2d", _resize2d)

# the Relax-era ops (generators/gencog/ops_relax.py) register into the same table
from generators.gencog import ops_relax  # noqa: E402,F401

__all__ = ["OPS"]
