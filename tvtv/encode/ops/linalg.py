"""Linear algebra: matmul, outer, einsum.

Every reduction is `reduction.dot` / `reduction.reduce_sum`: a float sum of products is an
uninterpreted function of the lambda-built array of its terms (summation order unspecified,
numpy's +0.0 start, IEEE special cases fixed for small n), so a matmul, a conv and their
legalized TIR loops meet in one vocabulary. Integer sums are exact (wrapping).

`relax.op.linear(x, w, b)` is not an operator in TVM 0.27: its Python API emits
`permute_dims(w)`, `matmul(x, .)` and `add(., b)` (measured with BlockBuilder), so it is
covered by the encoders of those three ops and has no entry here.
"""
from __future__ import annotations

from typing import Callable, Sequence

import z3

from tvtv.absfp.dtypes import is_bool
from tvtv.encode.context import EncodeContext
from tvtv.encode.ops.common import out_type, tensor_arg
from tvtv.encode.reduction import dot, reduce_sum
from tvtv.encode.registry import register
from tvtv.encode.tensor import Tensor, broadcast_index, broadcast_shape, unravel
from tvtv.encode.values import as_tensor
from tvtv.errors import Unsupported
from tvtv.ir.program import OpCall


def cast_reader(ctx: EncodeContext, t: Tensor, out_dtype: str) -> Callable[[Sequence], z3.ExprRef]:
    """Read `t` at a multi-index and cast the element to `out_dtype` (no-op when equal)."""
    if t.dtype == out_dtype:
        return t.at_multi
    return lambda ix: ctx.model.cast(t.at_multi(ix), t.dtype, out_dtype)


def _check_arith_dtype(dtype: str, op: str) -> None:
    if is_bool(dtype):
        raise Unsupported(f"{op} on bool tensors")


@register("relax.matmul")
def encode_matmul(ctx: EncodeContext, call: OpCall, args: list) -> Tensor:
    """numpy.matmul (array API): out[..., m, n] = sum over k of a[..., m, k] * b[..., k, n], a 1-D operand gets a unit dim that is removed again, batch dims broadcast; both operands are cast to out_dtype before multiplying; the sum is `dot` (order unspecified, starts from +0.0, so K=1 gives +0.0 + a*b and any NaN or inf*0 or +inf with -inf in a row gives NaN).

    out_dtype (e.g. int8 x int8 -> int32, float16 -> float32) casts each operand element
    first, as TVM's own legalization does (`T.Cast("float32", a) * T.Cast("float32", b)`);
    the documentation only says "the data type of the matmul result".
    """
    a, b = tensor_arg(args, 0, call), tensor_arg(args, 1, call)
    ty = out_type(call)
    out_dtype = ty.dtype
    _check_arith_dtype(out_dtype, call.op)
    if a.ndim == 0 or b.ndim == 0:
        raise Unsupported("matmul of a 0-d tensor")
    ash = a.shape if a.ndim > 1 else (1,) + a.shape
    bsh = b.shape if b.ndim > 1 else b.shape + (1,)
    k_len = ash[-1]
    if bsh[-2] != k_len:
        raise Unsupported(f"matmul of shapes {a.shape} and {b.shape}")
    batch = broadcast_shape(ash[:-2], bsh[:-2])
    want = batch + ((ash[-2],) if a.ndim > 1 else ()) + ((bsh[-1],) if b.ndim > 1 else ())
    if tuple(ty.shape) != want:
        raise Unsupported(f"matmul result type {ty} differs from the expected shape {want}")
    read_a, read_b = cast_reader(ctx, a, out_dtype), cast_reader(ctx, b, out_dtype)
    nb = len(batch)

    def element(ix: list[z3.BitVecRef]) -> z3.ExprRef:
        bix, rest = ix[:nb], list(ix[nb:])
        m = rest.pop(0) if a.ndim > 1 else None
        n = rest.pop(0) if b.ndim > 1 else None
        a_pre = list(broadcast_index(bix, batch, a.shape[:-2])) if a.ndim > 1 else []
        b_pre = list(broadcast_index(bix, batch, b.shape[:-2])) if b.ndim > 1 else []

        def ea(r: z3.BitVecRef) -> z3.ExprRef:
            return read_a(a_pre + [m, r] if a.ndim > 1 else [r])

        def eb(r: z3.BitVecRef) -> z3.ExprRef:
            return read_b(b_pre + [r, n] if b.ndim > 1 else [r])

        return dot(ctx, out_dtype, k_len, ea, eb)

    return Tensor.from_fn(ty.shape, out_dtype, element)


@register("relax.outer")
def encode_outer(ctx: EncodeContext, call: OpCall, args: list) -> Tensor:
    """numpy.outer of two 1-D tensors: out[i, j] = a[i] * b[j], one exact IEEE product per element (no sum, so no +0.0 start: -1 * 0 = -0.0); operands of different dtypes are unsupported.

    TVM infers the first operand's dtype for mixed dtypes; the documentation does not say
    what the product means then, so tvtv does not guess.
    """
    a, b = tensor_arg(args, 0, call), tensor_arg(args, 1, call)
    ty = out_type(call)
    if a.dtype != b.dtype or ty.dtype != a.dtype:
        raise Unsupported(f"outer of {a.dtype} and {b.dtype} tensors (result {ty.dtype})")
    _check_arith_dtype(ty.dtype, call.op)
    if a.ndim != 1 or b.ndim != 1 or tuple(ty.shape) != (a.shape[0], b.shape[0]):
        raise Unsupported(f"outer of shapes {a.shape} and {b.shape}")
    dom = ctx.dom(ty.dtype)
    return Tensor.from_fn(ty.shape, ty.dtype, lambda ix: dom.mul(a.at(ix[0]), b.at(ix[1])))


def parse_einsum(subscripts: str, n_operands: int) -> tuple[list[str], str]:
    """Operand subscripts and output subscript of an explicit-letter einsum (numpy rules:
    without '->' the output is the letters that occur once, in alphabetical order)."""
    s = subscripts.replace(" ", "")
    if "." in s:
        raise Unsupported("einsum with an ellipsis")
    if "->" in s:
        lhs, out = s.split("->")
    else:
        lhs = s
        letters = lhs.replace(",", "")
        out = "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
    ins = lhs.split(",")
    if len(ins) != n_operands or not all(c.isalpha() for c in "".join(ins) + out):
        raise Unsupported(f"einsum subscripts {subscripts!r} for {n_operands} operands")
    if len(set(out)) != len(out) or any(c not in lhs for c in out):
        raise Unsupported(f"einsum output subscripts {out!r}")
    return ins, out


@register("relax.einsum")
def encode_einsum(ctx: EncodeContext, call: OpCall, args: list) -> Tensor:
    """numpy.einsum with explicit letters: each output element is the product of the operands' elements (left to right, exact IEEE products) summed over the contracted letters with `reduce_sum` (order unspecified, +0.0 start); with no contracted letter it is the bare product (a single operand: the element itself, exactly).

    Ellipses, broadcasting of size-1 dimensions and mixed dtypes are unsupported.
    """
    ops_v = args[0]
    operands = [as_tensor(v, "einsum operand") for v in
                (ops_v if isinstance(ops_v, tuple) else tuple(args))]
    ty = out_type(call)
    dtype = ty.dtype
    if any(t.dtype != dtype for t in operands):
        raise Unsupported("einsum with mixed dtypes")
    _check_arith_dtype(dtype, call.op)
    ins, out = parse_einsum(str(call.attrs.get("subscripts", "")), len(operands))
    size: dict[str, int] = {}
    for sub, t in zip(ins, operands):
        if len(sub) != t.ndim:
            raise Unsupported(f"einsum subscripts {sub!r} for a rank-{t.ndim} operand")
        for c, d in zip(sub, t.shape):
            if size.setdefault(c, d) != d:
                raise Unsupported(f"einsum letter {c!r} with sizes {size[c]} and {d}")
    if tuple(ty.shape) != tuple(size[c] for c in out):
        raise Unsupported(f"einsum result type {ty} for subscripts {call.attrs.get('subscripts')}")
    contracted = sorted({c for c in "".join(ins) if c not in out})
    red_shape = [size[c] for c in contracted]
    n = 1
    for d in red_shape:
        n *= d
    dom = ctx.dom(dtype)

    def element(ix: list[z3.BitVecRef]) -> z3.ExprRef:
        env = dict(zip(out, ix))

        def product(r: z3.BitVecRef | None) -> z3.ExprRef:
            e = dict(env)
            if r is not None:
                e.update(zip(contracted, unravel(r, red_shape)))
            acc = None
            for sub, t in zip(ins, operands):
                v = t.at_multi([e[c] for c in sub])
                acc = v if acc is None else dom.mul(acc, v)
            return acc

        if not contracted:
            return product(None)
        return reduce_sum(ctx, dtype, n, product)

    return Tensor.from_fn(ty.shape, dtype, element)
