"""Neural-network operators: conv2d, max/avg/adaptive-avg pooling, softmax, log_softmax and the
norms (layer, batch, group, RMS). Float dtypes only.

Window arithmetic (NCHW, floor mode): out = (in + pad_lo + pad_hi - dilation*(k-1) - 1) // s + 1.
Solvers choose the input size in = (out-1)*s + dilation*(k-1) + 1 - 2*pad, which gives `out`
exactly; when that is < 1 or too big they fall back to a 1x1 window, stride 1, no padding.
Pooling padding is at most k//2 so every window holds a real element (an all-padding window
would make avg_pool2d divide by a zero count).
"""
from __future__ import annotations



from generators.typed.opinfo import ArgSpec, Solution, register, relax_op, tensor_rec, \
    tensor_sampler
from generators.typed.manipulate import divisors
from generators.typed.types import (FLOATS, MAX_ELEMS, INPUT_MAX_ELEMS, TensorTy, TupleTy, Ty,
                                    TypeGenerator)


GN_DTYPES = ("float32", "float16")  # layer_norm, group_norm: no bfloat16 (legalization)


def _window(ctx: TypeGenerator, out: int, pool: bool) -> tuple[int, int, int, int]:
    """(input size, kernel, stride, pad) of a window op producing `out` along one axis."""
    rng = ctx.rng
    k = rng.choice((1, 2, 3))
    s = rng.choice((1, 1, 2))
    p = rng.randint(0, k // 2) if pool else rng.choice((0, 0, 1))
    size = (out - 1) * s + (k - 1) + 1 - 2 * p
    if size < 1:
        return out, 1, 1, 0
    return size, k, s, p


def _conv2d_solve(ty: Ty, ctx: TypeGenerator) -> Solution:
    assert isinstance(ty, TensorTy)
    n, o, h, w = ty.shape
    hin, kh, sh, ph = _window(ctx, h, False)
    win, kw, sw, pw = _window(ctx, w, False)
    groups = ctx.rng.choice(divisors(o)) if ctx.rng.random() < 0.3 else 1
    cpg = ctx.rng.choice((1, 2, 3))  # input channels per group
    c = groups * cpg
    if n * c * hin * win > MAX_ELEMS or o * cpg * kh * kw > INPUT_MAX_ELEMS:
        hin, kh, sh, ph, win, kw, sw, pw, groups, cpg, c = h, 1, 1, 0, w, 1, 1, 0, 1, 1, 1
    data = TensorTy((n, c, hin, win), ty.dtype)
    weight = TensorTy((o, cpg, kh, kw), ty.dtype)
    return Solution([ArgSpec(data), ArgSpec(weight)],
                    {"strides": [sh, sw], "padding": [ph, pw, ph, pw], "groups": groups})


def _pool_solve(ty: Ty, ctx: TypeGenerator) -> Solution:
    assert isinstance(ty, TensorTy)
    n, c, h, w = ty.shape
    hin, kh, sh, ph = _window(ctx, h, True)
    win, kw, sw, pw = _window(ctx, w, True)
    if n * c * hin * win > MAX_ELEMS:
        hin, kh, sh, ph, win, kw, sw, pw = h, 1, 1, 0, w, 1, 1, 0
    return Solution([ArgSpec(TensorTy((n, c, hin, win), ty.dtype))],
                    {"pool_size": [kh, kw], "strides": [sh, sw], "padding": [ph, pw, ph, pw]})


def _adaptive_solve(ty: Ty, ctx: TypeGenerator) -> Solution:
    assert isinstance(ty, TensorTy)
    n, c, h, w = ty.shape
    hin, win = ctx.dim(), ctx.dim()
    while n * c * hin * win > MAX_ELEMS:
        hin, win = max(1, hin // 2), max(1, win // 2)
    return Solution([ArgSpec(TensorTy((n, c, hin, win), ty.dtype))], {"output_size": [h, w]})


def _softmax_solve(ty: Ty, ctx: TypeGenerator) -> Solution:
    assert isinstance(ty, TensorTy)
    return Solution([ArgSpec(ty)], {"axis": ctx.rng.randrange(-ty.ndim, ty.ndim)})


def _layer_norm_solve(ty: Ty, ctx: TypeGenerator) -> Solution:
    """Normalize over the last 1..2 axes; gamma and beta have their shape."""
    assert isinstance(ty, TensorTy)
    k = ctx.rng.randint(1, min(2, ty.ndim))
    axes = list(range(ty.ndim - k, ty.ndim))
    p = TensorTy(ty.shape[-k:], ty.dtype)
    return Solution([ArgSpec(ty), ArgSpec(p), ArgSpec(p)], {"axes": axes})


def _rms_norm_solve(ty: Ty, ctx: TypeGenerator) -> Solution:
    assert isinstance(ty, TensorTy)
    return Solution([ArgSpec(ty), ArgSpec(TensorTy(ty.shape[-1:], ty.dtype))], {"axes": [-1]})


def _group_norm_solve(ty: Ty, ctx: TypeGenerator) -> Solution:
    assert isinstance(ty, TensorTy)
    c = ty.shape[1]
    p = TensorTy((c,), ty.dtype)
    return Solution([ArgSpec(ty), ArgSpec(p), ArgSpec(p)],
                    {"num_groups": ctx.rng.choice(divisors(c)), "channel_axis": 1,
                     "axes": list(range(2, ty.ndim))})


def batch_norm_axis(ty: Ty) -> int | None:
    """The channel axis of a batch_norm returning `ty` = (data, mean, var), or None."""
    if not isinstance(ty, TupleTy) or len(ty.fields) != 3:
        return None
    data, m, v = ty.fields
    if not (isinstance(data, TensorTy) and data.dtype == "float32" and data.ndim >= 2):
        return None
    if m != v or not isinstance(m, TensorTy) or m.ndim != 1 or m.dtype != data.dtype:
        return None
    axes = [a for a in range(data.ndim) if data.shape[a] == m.shape[0]]
    if not axes:
        return None
    return 1 if 1 in axes else axes[0]


def _batch_norm_solve(ty: Ty, ctx: TypeGenerator) -> Solution:
    assert isinstance(ty, TupleTy)
    axis = batch_norm_axis(ty)
    assert axis is not None
    data, stat, _ = ty.fields
    return Solution([ArgSpec(data)] + [ArgSpec(stat)] * 4, {"axis": axis})


def _batch_norm_sample(ctx: TypeGenerator) -> Ty:
    data = ctx.tensor(("float32",), 2)
    stat = TensorTy((data.shape[1],), data.dtype)
    return TupleTy((data, stat, stat))





def register_all() -> None:
    op = relax_op
    register("relax.nn.conv2d", tensor_rec(FLOATS, 4, 4), _conv2d_solve,
             tensor_sampler(FLOATS, 4, 4),
             lambda args, at: op("nn.conv2d")(args[0], args[1], strides=at["strides"],
                                              padding=at["padding"], groups=at["groups"]),
             weight=1.5)
    for name in ("max_pool2d", "avg_pool2d"):
        def build(args: list, at: dict, name: str = name) -> object:
            return op("nn." + name)(args[0], pool_size=at["pool_size"], strides=at["strides"],
                                    padding=at["padding"])
        register("relax.nn." + name, tensor_rec(FLOATS, 4, 4), _pool_solve,
                 tensor_sampler(FLOATS, 4, 4), build)
    register("relax.nn.adaptive_avg_pool2d", tensor_rec(FLOATS, 4, 4), _adaptive_solve,
             tensor_sampler(FLOATS, 4, 4),
             lambda args, at: op("nn.adaptive_avg_pool2d")(args[0], at["output_size"]),
             weight=0.5)
    for name in ("softmax", "log_softmax"):
        def build_sm(args: list, at: dict, name: str = name) -> object:
            return op("nn." + name)(args[0], axis=at["axis"])
        register("relax.nn." + name, tensor_rec(FLOATS, 1), _softmax_solve,
                 tensor_sampler(FLOATS, 1), build_sm)
    register("relax.nn.layer_norm", tensor_rec(GN_DTYPES, 1), _layer_norm_solve,
             tensor_sampler(GN_DTYPES, 1),
             lambda args, at: op("nn.layer_norm")(*args, axes=at["axes"]))
    # rms_norm of a 1-D tensor fails in legalization (topi.nn.rms_norm indexes a 0-d tensor)
    register("relax.nn.rms_norm", tensor_rec(FLOATS, 2), _rms_norm_solve,
             tensor_sampler(FLOATS, 2),
             lambda args, at: op("nn.rms_norm")(*args, axes=at["axes"]), weight=0.5)
    # group_norm's type rule rejects bfloat16 ("data must be float")
    register("relax.nn.group_norm", tensor_rec(GN_DTYPES, 3), _group_norm_solve,
             tensor_sampler(GN_DTYPES, 3),
             lambda args, at: op("nn.group_norm")(*args, num_groups=at["num_groups"],
                                                  channel_axis=at["channel_axis"],
                                                  axes=at["axes"]), weight=0.5)
    # float32 only: in TVM 0.27 a float16/bfloat16 batch_norm type-checks as float16/bfloat16
    # but its legalized code returns float32 tensors (measured: the VM hands back float32)
    register("relax.nn.batch_norm", lambda ty: batch_norm_axis(ty) is not None,
             _batch_norm_solve, _batch_norm_sample,
             lambda args, at: op("nn.batch_norm")(*args, axis=at["axis"], training=False))
