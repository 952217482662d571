"""Rearranging Relax ops: layout_transform, reverse_sequence, meshgrid.

Pure index maps, like `manipulate.py`: an output element reads one input element (or a
constant), so every dtype works and special values (NaN, ±0, ±inf) pass through unchanged.

layout_transform's index map reaches the encoder as TVMScript text
(`T.index_map(lambda n, c: (c // T.int64(4), n, c % T.int64(4)))`, what
`relax_reader.convert_attr_value` makes of an `IndexMap`); it is parsed here with `ast`
(integers, the lambda's variables, + - * // % and T.floordiv / T.floormod by positive
constants) and inverted symbolically: each input coordinate must be recovered from the
output coordinates by one of four patterns (`v`, the pair `v // c` and `v % c`, the stride
`v * c`, the fused `v * c + w` with w < c). The inverse is only a candidate: an output position counts as
mapped only when the candidate lies in the input and the forward map sends it back there
(`_forward`), so the encoding is the forward definition, exact whatever the map.

Measured on apache-tvm 0.27 (LLVM VM, tests/test_ops_rearrange.py): see each docstring.
"""
from __future__ import annotations

import ast
import math
from dataclasses import dataclass
from typing import Callable, Sequence

import z3

from tvtv import z3fast as zf
from tvtv.absfp.dtypes import INT_FORMATS
from tvtv.encode.context import EncodeContext
from tvtv.encode.ops.common import index_value, out_type, tensor_arg
from tvtv.encode.ops.indexing import add_index_ub
from tvtv.encode.ops.manipulate import literal_axis, checked_type, tensor_fields
from tvtv.encode.registry import register
from tvtv.encode.tensor import INDEX_BITS, Tensor
from tvtv.errors import Unsupported
from tvtv.ir.program import OpCall, TensorType, TupleType

Index = z3.BitVecRef
LT = "relax.layout_transform"
# index-map arithmetic is done in 64-bit two's complement (no overflow for tensors below
# tvtv's 2^30-element limit and map constants below 2^30)
WIDE = 64


# ------------------------------------------------------------------------------------------------
# index maps: parsed from TVMScript text
# ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Var:
    k: int                         # position among the lambda's parameters


@dataclass(frozen=True)
class Const:
    v: int


@dataclass(frozen=True)
class Bin:
    op: str                        # "+", "-", "*", "//", "%" (floor division and modulo)
    a: "Expr"
    b: "Expr"


Expr = Var | Const | Bin
_BINOPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.FloorDiv: "//", ast.Mod: "%"}
_INT_CTORS = {"int64", "int32", "int16", "int8", "uint64", "uint32", "uint16", "uint8"}


def parse_index_map(text: object) -> tuple[int, list[Expr]]:
    """(number of input variables, output coordinate expressions) of an index map's text."""
    if not isinstance(text, str):
        raise Unsupported(f"{LT}: index_map {text!r} is not TVMScript text")
    try:
        node = ast.parse(text.strip(), mode="eval").body
    except SyntaxError:
        raise Unsupported(f"{LT}: cannot parse index_map {text!r}") from None
    if not (isinstance(node, ast.Call) and _is_t(node.func, "index_map") and len(node.args) == 1
            and isinstance(node.args[0], ast.Lambda)):
        raise Unsupported(f"{LT}: index_map {text!r} is not T.index_map(lambda ...)")
    if node.keywords:   # axis_separators / inverse maps: not given a meaning here
        raise Unsupported(f"{LT}: index_map with {[k.arg for k in node.keywords]}")
    lam = node.args[0]
    names = [a.arg for a in lam.args.args]
    body = lam.body.elts if isinstance(lam.body, (ast.Tuple, ast.List)) else [lam.body]
    return len(names), [_expr(e, names) for e in body]


def _is_t(node: ast.AST, attr: str) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == attr and \
        isinstance(node.value, ast.Name) and node.value.id == "T"


def _expr(node: ast.AST, names: list[str]) -> Expr:
    if isinstance(node, ast.Name) and node.id in names:
        return Var(names.index(node.id))
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
        return Const(node.value)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return Bin("-", Const(0), _expr(node.operand, names))
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        return _binop(_BINOPS[type(node.op)], _expr(node.left, names), _expr(node.right, names))
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and not node.keywords:
        f = node.func.attr
        if _is_t(node.func, f) and f in _INT_CTORS and len(node.args) == 1:
            return _expr(node.args[0], names)
        if _is_t(node.func, f) and f in ("floordiv", "floormod") and len(node.args) == 2:
            return _binop("//" if f == "floordiv" else "%", _expr(node.args[0], names),
                          _expr(node.args[1], names))
    raise Unsupported(f"{LT}: index map expression {ast.unparse(node)!r}")


def _binop(op: str, a: Expr, b: Expr) -> Expr:
    if op in ("//", "%") and not (isinstance(b, Const) and b.v > 0):
        raise Unsupported(f"{LT}: index map {op} by a non-constant or non-positive divisor")
    if isinstance(a, Const) and isinstance(b, Const):
        return Const(_py_apply(op, a.v, b.v))
    return Bin(op, a, b)


def _py_apply(op: str, a: int, b: int) -> int:
    return {"+": a + b, "-": a - b, "*": a * b}[op] if op in "+-*" else \
        (a // b if op == "//" else a % b)            # Python's // and % are floor ones


def _interval(e: Expr, shape: Sequence[int]) -> tuple[int, int]:
    """Bounds of `e` over the input box (exact for one variable, sound for several)."""
    if isinstance(e, Var):
        return 0, shape[e.k] - 1
    if isinstance(e, Const):
        return e.v, e.v
    (alo, ahi), (blo, bhi) = _interval(e.a, shape), _interval(e.b, shape)
    if e.op == "+":
        return alo + blo, ahi + bhi
    if e.op == "-":
        return alo - bhi, ahi - blo
    if e.op == "*":
        corners = [alo * blo, alo * bhi, ahi * blo, ahi * bhi]
        return min(corners), max(corners)
    if e.op == "//":
        return alo // blo, ahi // blo
    if alo // blo == ahi // blo:                      # %: one period, no wrap
        return alo % blo, ahi % blo
    return 0, blo - 1


def _wide(v: Index | int) -> z3.BitVecRef:
    return z3.BitVecVal(v, WIDE) if isinstance(v, int) else z3.ZeroExt(WIDE - INDEX_BITS, v)


def _forward(e: Expr, coords: Sequence[z3.BitVecRef]) -> z3.BitVecRef:
    """`e` at the (64-bit, non-negative) input coordinates, floor division and modulo."""
    if isinstance(e, Var):
        return coords[e.k]
    if isinstance(e, Const):
        return z3.BitVecVal(e.v, WIDE)
    a, b = _forward(e.a, coords), _forward(e.b, coords)
    if e.op == "+":
        return a + b
    if e.op == "-":
        return a - b
    if e.op == "*":
        return a * b
    # b is a positive constant (checked by `_binop`): floor = truncation adjusted for a < 0
    q = zf.If(zf.And(a < 0, z3.SRem(a, b) != 0), a / b - 1, a / b)
    return q if e.op == "//" else a - q * b


def _inverse(n_in: int, exprs: list[Expr],
             in_shape: Sequence[int]) -> Callable[[list[z3.BitVecRef]], list[z3.BitVecRef]]:
    """A candidate preimage (64-bit input coordinates) of output coordinates: each input
    variable read off by one of the patterns `v`, `v // c` with `v % c`, `v * c`, `v * c + w`
    (w's dimension at most c). Whenever the output position has a preimage, it is this one (each
    pattern determines the variable), so the map is injective."""
    found: dict[int, Callable[[list[z3.BitVecRef]], z3.BitVecRef]] = {}
    for j, e in enumerate(exprs):
        if isinstance(e, Var):
            found.setdefault(e.k, lambda o, j=j: o[j])
    for j1, e1 in enumerate(exprs):
        for j2, e2 in enumerate(exprs):
            if isinstance(e1, Bin) and isinstance(e2, Bin) and e1.op == "//" and e2.op == "%" \
                    and isinstance(e1.a, Var) and e1.a == e2.a and e1.b == e2.b:
                c = e1.b.v
                found.setdefault(e1.a.k, lambda o, j1=j1, j2=j2, c=c: o[j1] * c + o[j2])
    for j, e in enumerate(exprs):   # a stride `v * c`: v = o // c (o % c != 0 is padding)
        if isinstance(e, Bin) and e.op == "*":
            for v, c in ((e.a, e.b), (e.b, e.a)):
                if isinstance(v, Var) and isinstance(c, Const) and c.v > 0:
                    found.setdefault(v.k, lambda o, j=j, c=c.v: z3.UDiv(o[j], c))
    for j, e in enumerate(exprs):
        fused = _fused(e)
        if fused is not None:
            hi, c, lo = fused
            if in_shape[lo] <= c:
                found.setdefault(hi, lambda o, j=j, c=c: z3.UDiv(o[j], c))
                found.setdefault(lo, lambda o, j=j, c=c: z3.URem(o[j], c))
    missing = [k for k in range(n_in) if k not in found]
    if missing:
        raise Unsupported(f"{LT}: cannot invert the index map for input axes {missing}")
    return lambda o: [found[k](o) for k in range(n_in)]


def _fused(e: Expr) -> tuple[int, int, int] | None:
    """(hi, c, lo) when e is `hi * c + lo` (either order of the sum and of the product)."""
    if not (isinstance(e, Bin) and e.op == "+"):
        return None
    for mul, lo in ((e.a, e.b), (e.b, e.a)):
        if isinstance(lo, Var) and isinstance(mul, Bin) and mul.op == "*":
            for v, c in ((mul.a, mul.b), (mul.b, mul.a)):
                if isinstance(v, Var) and isinstance(c, Const) and c.v > 0 and v.k != lo.k:
                    return v.k, c.v, lo.k
    return None


@register("relax.layout_transform")
def encode_layout_transform(ctx: EncodeContext, call: OpCall, args: list) -> Tensor:
    """layout_transform is a relayout by an index map f (+ - * and floor // % by constants, permutations): out[f(i)] = x[i] for every input index i; output positions no i maps to hold pad_value; output shape = TVM's inferred one, which must hold every f(i); any dtype; a non-injective or non-invertible map, padding with pad_value None, and axis separators are Unsupported.

    Details. The doc says of pad_value None "any value can be used" at the padding: a
    nondeterministic element, which tvtv's refinement (one value per source element) cannot
    express, so a map that leaves padding with pad_value None is refused; without padding
    (a bijective map) pad_value is not read. Measured on the VM: TVM 0.27 pads with 0 when
    pad_value is None (map (n, c) -> (c // 3, n, c % 3) on (2, 5): out[1, :, 2] = 0.0).
    TVM 0.27's attributes have no axis_separators (index_map and pad_value only); an
    index map printed with keyword arguments is refused. An int pad_value on a float tensor
    is converted as TVM's `relax.op.layout_transform` does; a fractional one on an int
    tensor, and padding a bool tensor, are refused. Finding: LegalizeOps of a bool
    layout_transform fails even for a bijective map (topi's transform_layout fills with
    T.float32(0.0), which the schedule refuses for a bool buffer). Maps TVM's inference
    accepts but its legalization cannot lower (the stride `(n * 2, c)`: "scale must be 1")
    are encoded all the same (rows 2n hold x[n], the others pad_value)."""
    x = tensor_arg(args, 0, call)
    n_in, exprs = parse_index_map(call.attrs.get("index_map"))
    if n_in != x.ndim:
        raise Unsupported(f"{LT}: index map of {n_in} variables on a tensor of rank {x.ndim}")
    if x.numel == 0:
        raise Unsupported(f"{LT} of an empty tensor")
    ty = out_type(call)
    if ty.dtype != x.dtype or len(ty.shape) != len(exprs):
        raise Unsupported(f"{LT}: TVM inferred {ty} for {len(exprs)} coordinates of {x.dtype}")
    for j, e in enumerate(exprs):   # every input element must land inside TVM's output shape
        lo, hi = _interval(e, x.shape)
        if lo < 0 or hi >= ty.shape[j]:
            raise Unsupported(f"{LT}: coordinate {j} of the map spans [{lo}, {hi}], "
                              f"outside TVM's inferred dimension {ty.shape[j]}")
    inverse = _inverse(n_in, exprs, x.shape)
    padded = math.prod(ty.shape) != x.numel   # injective: equal sizes means bijective
    pad = _pad_value(ctx, call, x.dtype) if padded else None

    def elem(o: list[Index]) -> z3.ExprRef:
        wide = [_wide(v) for v in o]
        src = inverse(wide)
        read = x.at_multi([z3.simplify(z3.Extract(INDEX_BITS - 1, 0, s)) for s in src])
        if pad is None:
            return read
        mapped = zf.And(*[z3.ULT(s, _wide(d)) for s, d in zip(src, x.shape)],
                        *[_forward(e, src) == w for e, w in zip(exprs, wide)])
        return zf.If(mapped, read, pad)
    return Tensor.from_fn(ty.shape, ty.dtype, elem)


def _pad_value(ctx: EncodeContext, call: OpCall, dtype: str) -> z3.ExprRef:
    value = call.attrs.get("pad_value")
    if value is None:
        raise Unsupported(f"{LT} with padding and pad_value None (the doc allows any value there)")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise Unsupported(f"{LT}: pad_value {value!r}")
    if dtype in INT_FORMATS:
        if not float(value).is_integer():
            raise Unsupported(f"{LT}: pad_value {value!r} for {dtype}")
        value = int(value)
    elif dtype.startswith(("float", "bfloat")):
        value = float(value)
    else:
        raise Unsupported(f"{LT} with padding of dtype {dtype}")
    return ctx.dom(dtype).const(value)


# ------------------------------------------------------------------------------------------------
# reverse_sequence
# ------------------------------------------------------------------------------------------------
@register("relax.reverse_sequence")
def encode_reverse_sequence(ctx: EncodeContext, call: OpCall, args: list) -> Tensor:
    """reverse_sequence is ONNX ReverseSequence / tf.reverse_sequence: with L = seq_lengths[ix[batch_axis]], out[ix] = x[ix with ix[seq_axis] := L - 1 - ix[seq_axis]] where ix[seq_axis] < L, else x[ix]; a length outside [0, dim(seq_axis)] is UB; any data dtype, int32/int64 lengths; batch_axis == seq_axis is Unsupported.

    Details. The Relax doc only says "reverses variable length slices"; ONNX names the
    op, and TensorFlow requires seq_lengths[i] <= input.dims[seq_axis] (ONNX is silent):
    so lengths in [0, n] are defined (0 and 1 leave the slice unchanged) and others are
    UB. Measured on the VM (TVM 0.27, topi.reverse_sequence, whose doc says it clamps):
    a length above n reverses the whole slice (5 on n = 4: [7, 6, 5, 4]), a negative one
    leaves it unchanged (-2: [8, 9, 10, 11]); both inside the UB. TVM's inference accepts
    batch_axis == seq_axis, which ONNX and TensorFlow forbid: refused."""
    op = call.op
    x, lens = tensor_arg(args, 0, call), tensor_arg(args, 1, call)
    if lens.dtype not in ("int32", "int64") or lens.ndim != 1:
        raise Unsupported(f"{op}: seq_lengths {lens.shape} of dtype {lens.dtype}")
    if x.ndim < 2:
        raise Unsupported(f"{op} of a tensor of rank {x.ndim}")
    s = literal_axis(call.attrs.get("seq_axis", 1), x.ndim, call, "seq_axis")
    b = literal_axis(call.attrs.get("batch_axis", 0), x.ndim, call, "batch_axis")
    if s == b:
        raise Unsupported(f"{op} with seq_axis == batch_axis ({s})")
    if lens.shape[0] != x.shape[b]:
        raise Unsupported(f"{op}: {lens.shape[0]} lengths for a batch of {x.shape[b]}")
    ty = checked_type(call, x.shape, x.dtype)
    n = x.shape[s]
    zero, top = z3.BitVecVal(0, 65), z3.BitVecVal(n, 65)

    def length(k: Index) -> z3.BitVecRef:
        return index_value(lens.at(k), lens.dtype, op)

    add_index_ub(ctx, lens, lambda k: zf.Or(length(k) < zero, length(k) > top),
                  f"reverse_sequence with a length outside [0, {n}]", "reverse_sequence_k")

    def elem(ix: list[Index]) -> z3.ExprRef:
        L = length(ix[b])
        i = z3.ZeroExt(65 - INDEX_BITS, ix[s])
        src = list(ix)
        src[s] = zf.If(i < L, z3.Extract(INDEX_BITS - 1, 0, L - 1 - i), ix[s])
        return x.at_multi(src)
    return Tensor.from_fn(ty.shape, ty.dtype, elem)


# ------------------------------------------------------------------------------------------------
# meshgrid
# ------------------------------------------------------------------------------------------------
@register("relax.meshgrid")
def encode_meshgrid(ctx: EncodeContext, call: OpCall, args: list) -> tuple:
    """meshgrid is numpy.meshgrid of k 1-D tensors: a tuple of k tensors of shape (n_0, ..., n_k-1), out_j[ix] = x_j[ix[j]]; indexing "xy" (with k >= 2) swaps the first two output axes (out_j[ix] = x_j[ix[a]], a = 1, 0, 2, ... for j = 0, 1, 2, ...); indexing None is the documented default "ij"; any dtype (all alike, TVM's inference).

    Details. Inputs of rank other than 1 are refused by TVM's inference (the doc mentions
    scalars promoted to 1-D, which TVM 0.27 rejects), as are mixed dtypes. Findings,
    measured on TVM 0.27: (1) for "xy" its type inference gives the "ij" shape
    ((2,), (3,) -> (2, 3)) while its legalization and VM compute numpy's (3, 2) grids, so a
    function typed (2, 3) returns (3, 2) tensors; the encoder follows numpy and refuses
    the disagreeing type (Unsupported), so only "xy" with n_0 == n_1 is checked. (2) With
    one input the op is typed as a 1-tuple, but LegalizeOps emits one call_tir output and
    retypes `main` to return the bare tensor (the VM returns a Tensor): the refinement
    check compares the results' nesting and reports a shape counterexample."""
    op = call.op
    xs = tensor_fields(args[0], call)
    if not xs:
        raise Unsupported(f"{op} of an empty tuple")
    if any(t.ndim != 1 for t in xs) or any(t.dtype != xs[0].dtype for t in xs):
        raise Unsupported(f"{op} of {[(t.shape, t.dtype) for t in xs]}")
    indexing = call.attrs.get("indexing") or "ij"
    if indexing not in ("ij", "xy"):
        raise Unsupported(f"{op} with indexing {indexing!r}")
    axis_of = list(range(len(xs)))
    if indexing == "xy" and len(xs) >= 2:
        axis_of[0], axis_of[1] = 1, 0
    shape = [0] * len(xs)
    for j, t in enumerate(xs):
        shape[axis_of[j]] = t.shape[0]
    if not isinstance(call.ty, TupleType) or len(call.ty.fields) != len(xs):
        raise Unsupported(f"{op} with result type {call.ty}")
    for f in call.ty.fields:
        if not isinstance(f, TensorType) or tuple(f.shape) != tuple(shape) or f.dtype != xs[0].dtype:
            raise Unsupported(f"{op}: TVM inferred {call.ty} but numpy's {indexing} grid is "
                              f"{tuple(shape)} of {xs[0].dtype}")
    return tuple(Tensor.from_fn(shape, t.dtype, lambda ix, t=t, a=axis_of[j]: t.at(ix[a]))
                 for j, t in enumerate(xs))
