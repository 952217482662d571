"""Tensor-manipulation Relax ops: reshapes, transposes, slices, gathers, padding, stacking.

Every op here is a pure index map: the output element at a multi-index reads one input
element at an index computed from it (with bit-vector arithmetic on `INDEX` terms), so the
encoding is `Lambda i. src[g(i)]` and its cost does not depend on the tensor size. Nothing is
computed on the values, so every dtype (float, int, bool) works and special values (NaN, ±0,
±inf) pass through unchanged.

Each encoder computes the output shape from the op's attributes itself and compares it with
the type TVM inferred (`call.ty`); a disagreement raises `Unsupported` naming both, because
it means tvtv reads an attribute differently from TVM (or TVM's inference is wrong).

Semantics: numpy's (np.reshape, np.transpose, np.concatenate, np.take, np.pad ...) unless
TVM's documentation says otherwise; each encoder's docstring says what was decided.
Attributes measured on apache-tvm 0.27: `strided_slice` takes axes/begin/end/strides as
*arguments* (Relax tuples of PrimValues), `reshape`/`broadcast_to`/`collapse_sum_to` take
their shape as a `Shape` argument, `nn.pad` has `pad_width` (flat before/after pairs),
`pad_mode` and `pad_value` (a float) as attributes.
"""
from __future__ import annotations

import math
from typing import Callable, Sequence

import z3

from tvtv import z3fast as zf
from tvtv.absfp.dtypes import INT_FORMATS, is_bool, is_float
from tvtv.encode.context import EncodeContext
from tvtv.encode.ops.common import add_ub_for_some, index_value, norm_axis, out_type, tensor_arg
from tvtv.encode.reduction import reduce_sum
from tvtv.encode.registry import register
from tvtv.encode.tensor import INDEX_BITS, Tensor, broadcast_index, idx, unravel
from tvtv.encode.values import PrimScalar, Shape, Value, as_tensor
from tvtv.errors import Unsupported
from tvtv.ir.program import OpCall, TensorType, TupleType

Index = z3.BitVecRef

# ------------------------------------------------------------------------------------------------
# helpers
# ------------------------------------------------------------------------------------------------
def checked_type(call: OpCall, shape: Sequence[int], dtype: str) -> TensorType:
    """TVM's inferred result type, after checking it equals what the attributes say."""
    ty = out_type(call)
    if tuple(ty.shape) != tuple(shape) or ty.dtype != dtype:
        raise Unsupported(f"{call.op}: TVM inferred {ty} but the attributes {call.attrs} give "
                          f"Tensor({tuple(shape)}, {dtype})")
    return ty


def literal_axis(axis: object, ndim: int, call: OpCall, what: str = "axis") -> int:
    """A literal axis in [-ndim, ndim) normalised to [0, ndim)."""
    if not isinstance(axis, int) or isinstance(axis, bool):
        raise Unsupported(f"{call.op}: {what} {axis!r} is not a literal integer")
    if not -ndim <= axis < ndim:
        raise Unsupported(f"{call.op}: {what} {axis} out of range for rank {ndim}")
    return norm_axis(axis, ndim)


def _int_list(v: Value, what: str) -> list[int]:
    """A literal list of integers given as a Relax tuple of PrimValues or a shape."""
    if isinstance(v, Shape):
        return [int(d) for d in v.dims]
    if isinstance(v, tuple):
        out = []
        for x in v:
            if not isinstance(x, PrimScalar) or not isinstance(x.concrete, int) \
                    or isinstance(x.concrete, bool):
                raise Unsupported(f"{what} must be literal integers")
            out.append(int(x.concrete))
        return out
    raise Unsupported(f"{what} must be a tuple of literal integers, got {type(v).__name__}")


def _shape_arg(v: Value, what: str) -> tuple[int, ...]:
    if isinstance(v, Shape):
        return tuple(int(d) for d in v.dims)
    raise Unsupported(f"{what} must be a static shape, got {type(v).__name__}")


def _relabel(src: Tensor, ty: TensorType, op: str) -> Tensor:
    """The same row-major elements under a new shape (reshape and its relatives)."""
    if math.prod(ty.shape) != src.numel:
        raise Unsupported(f"{op}: cannot view {src.shape} as {ty.shape}")
    return Tensor(tuple(ty.shape), ty.dtype, src.arr)


def tensor_fields(v: Value, call: OpCall) -> list[Tensor]:
    if not isinstance(v, tuple):
        raise Unsupported(f"{call.op}: expected a tuple of tensors, got {type(v).__name__}")
    return [as_tensor(t, f"field of the tuple argument of {call.op}") for t in v]


def _select_chain(i: Index, bounds: Sequence[int], pick: Callable[[int], z3.ExprRef]) -> z3.ExprRef:
    """pick(k) for the first k with i < bounds[k] (the last piece needs no test)."""
    result = pick(len(bounds) - 1)
    for k in range(len(bounds) - 2, -1, -1):
        result = zf.If(z3.ULT(i, idx(bounds[k])), pick(k), result)
    return result


def _urem_shifted(i: Index, shift: int, period: int) -> Index:
    """(i - shift) mod period (Python's non-negative modulo) for 0 <= i, with period > 0."""
    k = -(-shift // period) + 1           # k * period >= shift, so the operand stays >= 0
    return z3.URem(i + idx(k * period - shift), idx(period))


# ------------------------------------------------------------------------------------------------
# shape-only ops: the flat array is unchanged
# ------------------------------------------------------------------------------------------------
@register("relax.reshape")
def encode_reshape(ctx: EncodeContext, call: OpCall, args: list) -> Tensor:
    """reshape is np.reshape (row-major, -1 inferred by TVM): the flat element order is kept.

    The target shape arrives as a `Shape` argument; TVM has already resolved a -1 into the
    result type, which is what the output uses (checked to have the same element count)."""
    x = tensor_arg(args, 0, call)
    ty = out_type(call)
    if len(args) > 1 and isinstance(args[1], Shape):
        want = _shape_arg(args[1], "reshape's shape")
        if -1 not in want and tuple(want) != tuple(ty.shape):
            raise Unsupported(f"relax.reshape: TVM inferred {ty} for shape {want}")
    return _relabel(x, ty, call.op)


@register("relax.flatten")
def encode_flatten(ctx: EncodeContext, call: OpCall, args: list) -> Tensor:
    """flatten is np.ravel (row-major) into one dimension; a scalar becomes shape (1,)."""
    x = tensor_arg(args, 0, call)
    ty = checked_type(call, (x.numel,), x.dtype)
    return _relabel(x, ty, call.op)


@register("relax.nn.batch_flatten")
def encode_batch_flatten(ctx: EncodeContext, call: OpCall, args: list) -> Tensor:
    """batch_flatten reshapes (N, d1, d2, ...) to (N, d1*d2*...) in row-major order."""
    x = tensor_arg(args, 0, call)
    if x.ndim < 1:
        raise Unsupported("relax.nn.batch_flatten of a scalar")
    ty = checked_type(call, (x.shape[0], math.prod(x.shape[1:])), x.dtype)
    return _relabel(x, ty, call.op)


@register("relax.expand_dims")
def encode_expand_dims(ctx: EncodeContext, call: OpCall, args: list) -> Tensor:
    """expand_dims is np.expand_dims with a list of axes (negative ones count in the result's rank).

    Axes are positions in the output, of rank ndim + len(axis), as numpy does."""
    x = tensor_arg(args, 0, call)
    axes = call.attrs.get("axis")
    axes = [axes] if isinstance(axes, int) else list(axes or [])
    rank = x.ndim + len(axes)
    pos = {literal_axis(a, rank, call) for a in axes}
    if len(pos) != len(axes):
        raise Unsupported(f"relax.expand_dims: repeated axes {axes}")
    it = iter(x.shape)
    shape = tuple(1 if k in pos else next(it) for k in range(rank))
    ty = checked_type(call, shape, x.dtype)
    return _relabel(x, ty, call.op)


@register("relax.squeeze")
def encode_squeeze(ctx: EncodeContext, call: OpCall, args: list) -> Tensor:
    """squeeze is np.squeeze: axis None removes every size-1 dimension, [] removes none.

    Squeezing an axis whose size is not 1 is an error in TVM's type inference, so it
    never reaches the encoder; it is rejected as unsupported if it does."""
    x = tensor_arg(args, 0, call)
    axes = call.attrs.get("axis")
    if axes is None:
        drop = {k for k, d in enumerate(x.shape) if d == 1}
    else:
        axes = [axes] if isinstance(axes, int) else list(axes)
        drop = {literal_axis(a, x.ndim, call) for a in axes}
        if any(x.shape[k] != 1 for k in drop):
            raise Unsupported(f"relax.squeeze of axes {axes} of shape {x.shape}")
    shape = tuple(d for k, d in enumerate(x.shape) if k not in drop)
    ty = checked_type(call, shape, x.dtype)
    return _relabel(x, ty, call.op)


# ------------------------------------------------------------------------------------------------
# permutations and reversals
# ------------------------------------------------------------------------------------------------
@register("relax.permute_dims")
def encode_permute_dims(ctx: EncodeContext, call: OpCall, args: list) -> Tensor:
    """permute_dims is np.transpose: output axis j is input axis axes[j]; axes None reverses them."""
    x = tensor_arg(args, 0, call)
    axes = call.attrs.get("axes")
    perm = list(range(x.ndim))[::-1] if axes is None else [literal_axis(a, x.ndim, call) for a in axes]
    if sorted(perm) != list(range(x.ndim)):
        raise Unsupported(f"relax.permute_dims: {axes} is not a permutation of rank {x.ndim}")
    ty = checked_type(call, tuple(x.shape[a] for a in perm), x.dtype)
    if perm == list(range(x.ndim)):
        return Tensor(ty.shape, ty.dtype, x.arr)

    def elem(ix: list[Index]) -> z3.ExprRef:
        src: list[Index | int] = [0] * x.ndim
        for j, a in enumerate(perm):
            src[a] = ix[j]
        return x.at_multi(src)
    return Tensor.from_fn(ty.shape, ty.dtype, elem)


@register("relax.flip")
def encode_flip(ctx: EncodeContext, call: OpCall, args: list) -> Tensor:
    """flip is np.flip along one axis (negative axes count from the end)."""
    x = tensor_arg(args, 0, call)
    a = literal_axis(call.attrs.get("axis"), x.ndim, call)
    ty = checked_type(call, x.shape, x.dtype)
    n = x.shape[a]

    def elem(ix: list[Index]) -> z3.ExprRef:
        src = list(ix)
        src[a] = idx(n - 1) - ix[a]
        return x.at_multi(src)
    return Tensor.from_fn(ty.shape, ty.dtype, elem)


# ------------------------------------------------------------------------------------------------
# joining and splitting
# ------------------------------------------------------------------------------------------------
@register("relax.concat")
def encode_concat(ctx: EncodeContext, call: OpCall, args: list) -> Tensor:
    """concat is np.concatenate of a tuple of tensors along `axis`; axis None flattens each first.

    All inputs have the result's dtype (TVM's inference requires it); empty inputs add nothing."""
    ts = tensor_fields(args[0], call)
    if not ts:
        raise Unsupported("relax.concat of an empty tuple")
    axis = call.attrs.get("axis", 0)
    if axis is None:
        ts = [Tensor((t.numel,), t.dtype, t.arr) for t in ts]
        a = 0
    else:
        a = literal_axis(axis, ts[0].ndim, call)
    base = ts[0].shape
    for t in ts:
        if t.ndim != len(base) or any(t.shape[k] != base[k] for k in range(len(base)) if k != a):
            raise Unsupported(f"relax.concat of shapes {[t.shape for t in ts]} along {axis}")
    ts = [t for t in ts if t.shape[a] > 0] or ts[:1]
    shape = list(base)
    shape[a] = sum(t.shape[a] for t in ts)
    ty = checked_type(call, shape, ts[0].dtype)
    offsets, ends = [], []
    acc = 0
    for t in ts:
        offsets.append(acc)
        acc += t.shape[a]
        ends.append(acc)

    def elem(ix: list[Index]) -> z3.ExprRef:
        def pick(k: int) -> z3.ExprRef:
            src = list(ix)
            src[a] = ix[a] - idx(offsets[k]) if offsets[k] else ix[a]
            return ts[k].at_multi(src)
        return _select_chain(ix[a], ends, pick)
    return Tensor.from_fn(ty.shape, ty.dtype, elem)


@register("relax.stack")
def encode_stack(ctx: EncodeContext, call: OpCall, args: list) -> Tensor:
    """stack is np.stack of equally shaped tensors along a new axis (negative counts in the result)."""
    ts = tensor_fields(args[0], call)
    if not ts or any(t.shape != ts[0].shape for t in ts):
        raise Unsupported(f"relax.stack of shapes {[t.shape for t in ts]}")
    a = literal_axis(call.attrs.get("axis", 0), ts[0].ndim + 1, call)
    shape = list(ts[0].shape)
    shape.insert(a, len(ts))
    ty = checked_type(call, shape, ts[0].dtype)

    def elem(ix: list[Index]) -> z3.ExprRef:
        rest = ix[:a] + ix[a + 1:]
        return _select_chain(ix[a], list(range(1, len(ts) + 1)), lambda k: ts[k].at_multi(rest))
    return Tensor.from_fn(ty.shape, ty.dtype, elem)


def split_bounds(n: int, spec: object) -> list[tuple[int, int]]:
    """[start, stop) of each section of a dimension of size n.

    An int k is TVM's documented rule: sections of ceil(n / k) elements, the last ones smaller
    (possibly empty: 6 into 4 gives 2, 2, 2, 0, unlike np.array_split). A list of indices is
    np.split's rule: section j is x[idx[j-1]:idx[j]] with Python slice clamping."""
    if isinstance(spec, int):
        if spec <= 0:
            raise Unsupported(f"relax.split into {spec} sections")
        size = -(-n // spec)
        return [(min(j * size, n), min((j + 1) * size, n)) for j in range(spec)]
    cuts = [0] + list(spec) + [n]
    out = []
    for lo, hi in zip(cuts, cuts[1:]):
        start, stop, _ = slice(lo, hi).indices(n)
        out.append((start, max(start, stop)))
    return out


@register("relax.split")
def encode_split(ctx: EncodeContext, call: OpCall, args: list) -> Value:
    """split follows TVM's doc: int k gives ceil(n/k)-sized sections (last smaller), a list is np.split's indices.

    The result is a tuple of tensors, except that TVM types a split into a single section
    as a plain tensor (measured: `split(x, 1)` and `split(x, [])` have a Tensor type), which
    the encoder follows. Negative indices are rejected when TVM's inferred section sizes
    disagree with numpy's (TVM 0.27 infers `split(x5, [-2])` as sizes 0 and 5; numpy as 3, 2)."""
    x = tensor_arg(args, 0, call)
    a = literal_axis(call.attrs.get("axis", 0), x.ndim, call)
    spec = call.attrs.get("indices_or_sections")
    bounds = split_bounds(x.shape[a], spec)
    shapes = []
    for lo, hi in bounds:
        s = list(x.shape)
        s[a] = hi - lo
        shapes.append(tuple(s))
    if isinstance(call.ty, TensorType):
        if len(bounds) != 1:
            raise Unsupported(f"relax.split into {len(bounds)} sections with type {call.ty}")
        checked_type(call, shapes[0], x.dtype)
        return x
    if not isinstance(call.ty, TupleType):
        raise Unsupported(f"relax.split with result type {call.ty}")
    got = [tuple(f.shape) if isinstance(f, TensorType) else None for f in call.ty.fields]
    if got != shapes:
        raise Unsupported(f"relax.split: TVM inferred {call.ty} but {spec} on axis {a} gives {shapes}")
    outs = []
    for (lo, _), shape in zip(bounds, shapes):
        def elem(ix: list[Index], lo: int = lo) -> z3.ExprRef:
            src = list(ix)
            src[a] = ix[a] + idx(lo) if lo else ix[a]
            return x.at_multi(src)
        outs.append(Tensor.from_fn(shape, x.dtype, elem))
    return tuple(outs)


# ------------------------------------------------------------------------------------------------
# slicing
# ------------------------------------------------------------------------------------------------
@register("relax.strided_slice")
def encode_strided_slice(ctx: EncodeContext, call: OpCall, args: list) -> Tensor:
    """strided_slice is Python slicing x[b:e:s] per listed axis (negatives from the end, clamped); with assume_inbound=True a negative or out-of-bounds begin/end is UB.

    In TVM 0.27 axes, begin, end and strides are *arguments* (Relax tuples of literal
    PrimValues; strides optional, default 1), only `assume_inbound` is an attribute.
    assume_inbound=True promises literal in-bound values: 0 <= b, e <= n for stride > 0 and
    0 <= b, e <= n - 1 for stride < 0; when the literal values break that promise the op is
    UB. (TVM itself is inconsistent there: its type inference takes negative values
    literally while its legalization adds n to them.) Within the promise this is plain
    slicing. TVM 0.27 infers *negative* dimensions for empty slices whose end lies before
    their begin (x[3:1] on 5 elements: -2), and with assume_inbound=True and a negative
    stride it infers the whole axis (x[4:0:-1] on 6 elements: 6, while its VM returns 4
    elements); such types disagree with the slice and are rejected as unsupported."""
    x = tensor_arg(args, 0, call)
    if len(args) < 4:
        raise Unsupported("relax.strided_slice without axes/begin/end arguments")
    axes = _int_list(args[1], "strided_slice axes")
    begin = _int_list(args[2], "strided_slice begin")
    end = _int_list(args[3], "strided_slice end")
    steps = _int_list(args[4], "strided_slice strides") if len(args) > 4 and args[4] is not None \
        else [1] * len(axes)
    if not len(axes) == len(begin) == len(end) == len(steps):
        raise Unsupported("relax.strided_slice with lists of different lengths")
    inbound = bool(call.attrs.get("assume_inbound", False))
    ty = out_type(call)
    starts = [0] * x.ndim
    step_of = [1] * x.ndim
    shape = list(x.shape)
    seen = set()
    broken = False
    for ax, b, e, s in zip(axes, begin, end, steps):
        k = literal_axis(ax, x.ndim, call)
        if k in seen:
            raise Unsupported(f"relax.strided_slice with repeated axis {ax}")
        seen.add(k)
        if s == 0:
            raise Unsupported("relax.strided_slice with stride 0")
        n = x.shape[k]
        if inbound:
            top = n if s > 0 else n - 1
            broken = broken or not (0 <= b <= top and 0 <= e <= top)
        start, _, _ = slice(b, e, s).indices(n)
        starts[k], step_of[k] = start, s
        shape[k] = len(range(n)[b:e:s])
    if broken:
        # Out-of-bound indices promised in bound: undefined, whatever TVM inferred.
        ctx.add_ub(z3.BoolVal(True), "strided_slice with assume_inbound=True and a begin/end "
                   "out of bounds")
        if any(d < 0 for d in ty.shape):
            raise Unsupported(f"relax.strided_slice: TVM inferred the negative shape {ty.shape}")
        return Tensor.from_flat(ty.shape, ty.dtype, lambda i: ctx.dom(ty.dtype).zero())
    ty = checked_type(call, shape, x.dtype)

    def elem(ix: list[Index]) -> z3.ExprRef:
        src = []
        for k, i in enumerate(ix):
            if k in seen and (starts[k] or step_of[k] != 1):
                # start + i * step in 32-bit two's complement: a negative step wraps correctly
                src.append(idx(starts[k]) + i * idx(step_of[k]))
            else:
                src.append(i)
        return x.at_multi(src)
    return Tensor.from_fn(ty.shape, ty.dtype, elem)


# ------------------------------------------------------------------------------------------------
# gathering
# ------------------------------------------------------------------------------------------------
def wrapped_position(raw: z3.BitVecRef, dtype: str, n: int) -> z3.BitVecRef | None:
    """Python's `raw mod n` as a 32-bit index, computed as TVM's legalization of take's "wrap"
    mode does, `truncmod(truncmod(raw, n) + n, n)`, here `r = raw srem n; r < 0 ? r + n : r`
    in `raw`'s own width. The TIR encoder builds this very term for that TIR pattern, so the
    two sides meet without the solver reasoning about 64-bit division. None where the
    dtype's width cannot hold it without overflow (unsigned, or n > 2^(bits-2) or n >= 2^31):
    the caller then computes in 65 bits."""
    bits, signed = INT_FORMATS[dtype]
    if not signed or n <= 0 or n > (1 << (bits - 2)) or n >= (1 << (INDEX_BITS - 1)):
        return None
    r = z3.SRem(raw, z3.BitVecVal(n, bits))
    pos = zf.If(r < 0, r + n, r)                      # |r| < n: no overflow
    if bits > INDEX_BITS:
        return z3.Extract(INDEX_BITS - 1, 0, pos)
    return z3.ZeroExt(INDEX_BITS - bits, pos) if bits < INDEX_BITS else pos


@register("relax.take")
def encode_take(ctx: EncodeContext, call: OpCall, args: list) -> Tensor:
    """take is np.take along `axis`; mode "fast": an index outside [0, n) (negative too) is UB; "wrap": Python modulo n; "clip": clamped to [0, n-1]; "nan": NaN outside [0, n).

    Details. "fast" is TVM's default and its doc says out-of-bound indices "lead to seg
    fault (user must make sure indices are in-bound)"; TVM's code indexes directly, so -1
    reads out of bounds too: negative indices are UB, not numpy's from-the-end. "wrap" is
    ((i mod n) + n) mod n as TVM computes it (= numpy's mode="wrap"); "clip" is numpy's
    mode="clip" (negative -> 0). "nan" exists for float dtypes only (unsupported otherwise).
    axis None (the data must be 1-D in TVM) reads the flattened data. The output shape is
    data.shape[:axis] + indices.shape + data.shape[axis+1:]."""
    x, ind = tensor_arg(args, 0, call), tensor_arg(args, 1, call)
    axis = call.attrs.get("axis")
    mode = call.attrs.get("mode", "fast")
    if mode not in ("fast", "wrap", "clip", "nan"):
        raise Unsupported(f"relax.take with mode {mode!r}")
    if mode == "nan" and not is_float(x.dtype):
        raise Unsupported(f"relax.take with mode 'nan' on {x.dtype}")
    if axis is None:
        x = Tensor((x.numel,), x.dtype, x.arr)
        a = 0
    else:
        a = literal_axis(axis, x.ndim, call)
    n = x.shape[a]
    shape = x.shape[:a] + ind.shape + x.shape[a + 1:]
    ty = checked_type(call, shape, x.dtype)
    dom = ctx.dom(x.dtype)
    N = z3.BitVecVal(n, 65)
    zero65 = z3.BitVecVal(0, 65)

    def in_range(v: z3.BitVecRef) -> z3.BoolRef:
        return zf.And(v >= zero65, v < N)

    def position(v: z3.BitVecRef) -> Index:
        if mode == "wrap" and n > 0:
            r = z3.SRem(v, N)
            v = zf.If(r < zero65, r + N, r)
        elif mode == "clip" and n > 0:
            v = zf.If(v < zero65, zero65, zf.If(v >= N, N - 1, v))
        return z3.Extract(31, 0, v)

    if math.prod(shape) > 0 and (mode == "fast" or (n == 0 and mode != "nan")):
        # An index outside [0, n) is UB in "fast" mode, and in "wrap"/"clip" mode when n == 0
        # (there is nothing to wrap or clip to; TVM's type inference allows it).
        def bad_at(k: Index) -> z3.BoolRef:
            return zf.Not(in_range(index_value(ind.at(k), ind.dtype, "take")))
        add_ub_for_some(ctx, ind.numel, bad_at, f"take (mode={mode}) with an index outside "
                        f"[0, {n})", "take_k")

    def elem(ix: list[Index]) -> z3.ExprRef:
        raw = ind.at_multi(ix[a:a + ind.ndim])
        v = index_value(raw, ind.dtype, "take")
        pos = wrapped_position(raw, ind.dtype, n) if mode == "wrap" else None
        src = ix[:a] + [position(v) if pos is None else pos] + ix[a + ind.ndim:]
        got = x.at_multi(src)
        return zf.If(in_range(v), got, dom.nan()) if mode == "nan" else got
    return Tensor.from_fn(ty.shape, ty.dtype, elem)


# ------------------------------------------------------------------------------------------------
# replication
# ------------------------------------------------------------------------------------------------
@register("relax.broadcast_to")
def encode_broadcast_to(ctx: EncodeContext, call: OpCall, args: list) -> Tensor:
    """broadcast_to is np.broadcast_to: size-1 (and missing leading) dimensions repeat."""
    x = tensor_arg(args, 0, call)
    shape = _shape_arg(args[1], "broadcast_to's shape")
    off = len(shape) - x.ndim
    if off < 0 or any(d != 1 and d != shape[off + k] for k, d in enumerate(x.shape)):
        raise Unsupported(f"relax.broadcast_to of {x.shape} to {shape}")
    ty = checked_type(call, shape, x.dtype)
    if tuple(shape) == x.shape:
        return x
    return Tensor.from_fn(ty.shape, ty.dtype,
                          lambda ix: x.at_multi(broadcast_index(ix, ty.shape, x.shape)))


@register("relax.tile")
def encode_tile(ctx: EncodeContext, call: OpCall, args: list) -> Tensor:
    """tile is np.tile: repeats and data rank are aligned by prepending 1s; element i reads i mod d."""
    x = tensor_arg(args, 0, call)
    reps = call.attrs.get("repeats")
    reps = [reps] if isinstance(reps, int) else list(reps)
    if any(r < 0 for r in reps):
        raise Unsupported(f"relax.tile with repeats {reps}")
    rank = max(len(reps), x.ndim)
    reps = [1] * (rank - len(reps)) + reps
    dims = [1] * (rank - x.ndim) + list(x.shape)
    ty = checked_type(call, tuple(d * r for d, r in zip(dims, reps)), x.dtype)
    off = rank - x.ndim

    def elem(ix: list[Index]) -> z3.ExprRef:
        src = []
        for k, d in enumerate(x.shape):
            i = ix[off + k]
            src.append(i if reps[off + k] == 1 else (0 if d == 1 else z3.URem(i, idx(d))))
        return x.at_multi(src)
    return Tensor.from_fn(ty.shape, ty.dtype, elem)


@register("relax.repeat")
def encode_repeat(ctx: EncodeContext, call: OpCall, args: list) -> Tensor:
    """repeat is np.repeat with one integer count: element i along the axis reads i // repeats; axis None flattens first."""
    x = tensor_arg(args, 0, call)
    r = call.attrs.get("repeats")
    if not isinstance(r, int) or r < 0:
        raise Unsupported(f"relax.repeat with repeats {r!r}")
    axis = call.attrs.get("axis")
    if axis is None:
        x = Tensor((x.numel,), x.dtype, x.arr)
        a = 0
    else:
        a = literal_axis(axis, x.ndim, call)
    shape = list(x.shape)
    shape[a] *= r
    ty = checked_type(call, shape, x.dtype)

    def elem(ix: list[Index]) -> z3.ExprRef:
        src = list(ix)
        src[a] = z3.UDiv(ix[a], idx(r)) if r != 1 else ix[a]
        return x.at_multi(src)
    return Tensor.from_fn(ty.shape, ty.dtype, elem)


# ------------------------------------------------------------------------------------------------
# padding
# ------------------------------------------------------------------------------------------------
def _pad_constant(ctx: EncodeContext, dtype: str, value: object) -> z3.ExprRef:
    """pad_value (a float attribute) as an element of `dtype`."""
    dom = ctx.dom(dtype)
    if value is None:
        value = 0.0
    if is_float(dtype):
        return dom.const(float(value))          # rounded to the dtype (1e10 -> inf in float16)
    v = float(value)
    if not math.isfinite(v):
        raise Unsupported(f"relax.nn.pad of {dtype} with the pad_value {value}")
    # TVM casts the value to the dtype, truncating toward zero as C does (measured on the VM:
    # 1.5 -> 1, -1.5 -> -1, 2.7 -> 2, -0.5 -> 0 in int32; 0.5 and -0.5 -> False, 1.5 -> True
    # in bool)
    v = float(math.trunc(v))
    if is_bool(dtype):
        return dom.const(v != 0)
    return dom.const(int(v))


@register("relax.nn.pad")
def encode_pad(ctx: EncodeContext, call: OpCall, args: list) -> Tensor:
    """pad is np.pad: "constant" fills with pad_value (cast to the dtype), "reflect" = np's reflect, "replicate" = np's edge, "circular" = np's wrap.

    pad_width is the flat list (before_0, after_0, before_1, after_1, ...). Negative widths
    (which TVM's type inference accepts as cropping) are unsupported. Reflection and
    wrapping follow numpy also for widths larger than the dimension (numpy repeats the
    pattern; PyTorch rejects such widths). A non-integral pad_value on an integer or bool
    tensor is truncated toward zero, as TVM's cast does (1.5 pads with 1)."""
    x = tensor_arg(args, 0, call)
    widths = list(call.attrs.get("pad_width") or [])
    mode = call.attrs.get("pad_mode", "constant") or "constant"
    if len(widths) != 2 * x.ndim:
        raise Unsupported(f"relax.nn.pad with pad_width {widths} for rank {x.ndim}")
    if any(w < 0 for w in widths):
        raise Unsupported(f"relax.nn.pad with negative pad_width {widths}")
    if mode not in ("constant", "reflect", "replicate", "circular"):
        # TVM 0.27 accepts any string; its LegalizeOps pads every other mode (Relay's "edge"
        # too) as "constant", so such a module has no documented meaning to check
        raise Unsupported(f"relax.nn.pad with pad_mode {mode!r} (Relax's modes are constant, "
                          f"reflect, replicate, circular)")
    before, after = widths[0::2], widths[1::2]
    ty = checked_type(call, tuple(d + b + e for d, b, e in zip(x.shape, before, after)), x.dtype)
    if mode != "constant" and any(d == 0 and b + e > 0 for d, b, e in zip(x.shape, before, after)):
        raise Unsupported(f"relax.nn.pad mode {mode} of an empty dimension")

    if mode == "constant":
        fill = _pad_constant(ctx, x.dtype, call.attrs.get("pad_value"))

        def elem(ix: list[Index]) -> z3.ExprRef:
            src, inside = [], []
            for i, b, e, d in zip(ix, before, after, x.shape):
                j = i - idx(b) if b else i
                src.append(j)
                if b or e:
                    inside.append(z3.ULT(j, idx(d)))   # i - b wraps to a huge value when i < b
            got = x.at_multi(src)
            return zf.If(zf.And(*inside), got, fill) if inside else got
        return Tensor.from_fn(ty.shape, ty.dtype, elem)

    def source(i: Index, b: int, e: int, d: int) -> Index:
        if b == 0 and e == 0:
            return i
        if mode == "replicate":                       # numpy "edge": clamp into [0, d-1]
            return zf.If(z3.ULT(i, idx(b)), idx(0),
                         zf.If(z3.UGE(i, idx(b + d)), idx(d - 1), i - idx(b)))
        if mode == "circular":                        # numpy "wrap": (i - b) mod d
            return _urem_shifted(i, b, d)
        if d == 1:                                    # numpy "reflect" of one element repeats it
            return idx(0)
        p = 2 * (d - 1)                               # numpy "reflect": period 2(d-1), no edge repeat
        j = _urem_shifted(i, b, p)
        return zf.If(z3.ULT(j, idx(d)), j, idx(p) - j)

    return Tensor.from_fn(ty.shape, ty.dtype, lambda ix: x.at_multi(
        [source(i, b, e, d) for i, b, e, d in zip(ix, before, after, x.shape)]))


@register("relax.nn.pixel_shuffle")
def encode_pixel_shuffle(ctx: EncodeContext, call: OpCall, args: list) -> Tensor:
    """pixel_shuffle is torch's: (N, C*r*r, H, W) -> (N, C, H*r, W*r), out[n,c,h,w] = in[n, c*r*r + (h%r)*r + w%r, h//r, w//r]."""
    x = tensor_arg(args, 0, call)
    r = call.attrs.get("upscale_factor")
    if x.ndim != 4 or not isinstance(r, int) or r <= 0 or x.shape[1] % (r * r):
        raise Unsupported(f"relax.nn.pixel_shuffle of {x.shape} with factor {r!r}")
    n, c, h, w = x.shape
    ty = checked_type(call, (n, c // (r * r), h * r, w * r), x.dtype)
    R = idx(r)

    def elem(ix: list[Index]) -> z3.ExprRef:
        i_n, i_c, i_h, i_w = ix
        ch = i_c * idx(r * r) + z3.URem(i_h, R) * R + z3.URem(i_w, R)
        return x.at_multi([i_n, ch, z3.UDiv(i_h, R), z3.UDiv(i_w, R)])
    return Tensor.from_fn(ty.shape, ty.dtype, elem)


# ------------------------------------------------------------------------------------------------
# collapse_sum
# ------------------------------------------------------------------------------------------------
def _collapse_sum(ctx: EncodeContext, call: OpCall, x: Tensor, shape: Sequence[int]) -> Tensor:
    shape = tuple(shape)
    off = x.ndim - len(shape)
    if off < 0 or any(s != 1 and s != x.shape[off + k] for k, s in enumerate(shape)):
        raise Unsupported(f"{call.op} of {x.shape} to {shape}")
    ty = checked_type(call, shape, x.dtype)
    summed = [k for k in range(x.ndim) if k < off or (shape[k - off] == 1 and x.shape[k] != 1)]
    if not summed:                                    # then shape == x.shape
        return x
    kept = [k for k in range(x.ndim) if k not in summed]
    red_shape = [x.shape[k] for k in summed]
    n = math.prod(red_shape)

    def elem(ix: list[Index]) -> z3.ExprRef:
        # output index ix is over `shape`; kept input axis k reads ix[k - off] (or 0 if size 1)
        def term(r: Index) -> z3.ExprRef:
            rix = unravel(r, red_shape)
            src: list[Index | int] = [0] * x.ndim
            for k, ri in zip(summed, rix):
                src[k] = ri
            for k in kept:
                src[k] = ix[k - off]
            return x.at_multi(src)
        return reduce_sum(ctx, x.dtype, n, term)
    return Tensor.from_fn(ty.shape, ty.dtype, elem)


@register("relax.collapse_sum_to")
def encode_collapse_sum_to(ctx: EncodeContext, call: OpCall, args: list) -> Tensor:
    """collapse_sum_to sums (like relax.sum / np.sum, from +0.0) the axes absent from the target shape or 1 there and not 1 in the data; with no such axis it is the identity.

    This is np.sum(x, axis=A, keepdims=True).reshape(shape) for those axes A, the backward of
    broadcasting. An axis of size 1 in both is kept as is (not "summed" with +0.0), so
    collapsing to the data's own shape leaves -0.0 alone; a leading size-1 axis that is
    dropped is summed (a one-term sum: +0.0 + x, as np.sum does)."""
    x = tensor_arg(args, 0, call)
    return _collapse_sum(ctx, call, x, _shape_arg(args[1], "collapse_sum_to's shape"))


@register("relax.collapse_sum_like")
def encode_collapse_sum_like(ctx: EncodeContext, call: OpCall, args: list) -> Tensor:
    """collapse_sum_like is collapse_sum_to to the shape of its second argument (whose values are unused)."""
    x, like = tensor_arg(args, 0, call), tensor_arg(args, 1, call)
    return _collapse_sum(ctx, call, x, like.shape)
