"""The abstract magnitude width (mlir-tv, section 4.3).

With k magnitude bits the abstract domain has 2^k - 4 ordinary magnitudes (besides 0,
FLT_MAX, inf and NaN). A counterexample in IEEE arithmetic observes at most N distinct float
values: the inputs' elements, every intermediate tensor's elements and the constants. If
2^k - 4 ≥ N, any IEEE counterexample maps order-preservingly into the domain, so a proof in
the abstract domain is a proof for IEEE floats; choosing the smallest such k keeps the SMT
problem small. mlir-tv caps k (its bit-vectors have at most 32 bits); so does tvtv, at
`MAX_BITS`, beyond which the guarantee is the paper's, not a strict one (the verdict says so).
"""
from __future__ import annotations

import math
from typing import Iterable

from tvtv.absfp.dtypes import is_float
from tvtv.ir import program as P

MIN_BITS = 4
MAX_BITS = 31
# Constants the encoders introduce themselves (1.0, 0.5, pi/2, n for means, ...).
ENCODER_CONSTANTS = 32


def _type_count(ty: P.Type) -> int:
    if isinstance(ty, P.TensorType):
        return math.prod(ty.shape) if is_float(ty.dtype) else 0
    if isinstance(ty, P.TupleType):
        return sum(_type_count(f) for f in ty.fields)
    return 0


def _body_count(body: P.Body) -> int:
    n = 0
    for b in body.bindings:
        n += _type_count(b.ty)
        v = b.value
        if isinstance(v, P.IfExpr):
            n += _body_count(v.then_body) + _body_count(v.else_body)
        if isinstance(v, P.FuncExpr):
            n += _function_count(v.func)
        if isinstance(v, P.OpCall):
            n += sum(c.value.size for c in v.args if isinstance(c, P.Const))
    return n


def _function_count(fn: P.Function) -> int:
    return sum(_type_count(p.ty) for p in fn.params) + _body_count(fn.body)


def _type_dtypes(ty: P.Type, out: set[str]) -> None:
    if isinstance(ty, P.TensorType) and is_float(ty.dtype):
        out.add(ty.dtype)
    elif isinstance(ty, P.TupleType):
        for f in ty.fields:
            _type_dtypes(f, out)


def _body_dtypes(body: P.Body, out: set[str]) -> None:
    for b in body.bindings:
        _type_dtypes(b.ty, out)
        v = b.value
        if isinstance(v, P.IfExpr):
            _body_dtypes(v.then_body, out)
            _body_dtypes(v.else_body, out)
        if isinstance(v, P.FuncExpr):
            _function_dtypes(v.func, out)
        if isinstance(v, P.OpCall):
            for c in v.args:
                if isinstance(c, P.Const) and is_float(c.dtype):
                    out.add(c.dtype)


def _function_dtypes(fn: P.Function, out: set[str]) -> None:
    for p in fn.params:
        _type_dtypes(p.ty, out)
    _body_dtypes(fn.body, out)


def float_dtypes(programs: Iterable[P.Program]) -> list[str]:
    """The float dtypes the programs' Relax values have (sorted): they decide the cast chain,
    with those an encoding finds it needs besides (`WiderDtypeNeeded`)."""
    out: set[str] = set()
    for prog in programs:
        for f in prog.functions.values():
            _function_dtypes(f, out)
    return sorted(out)


def count_values(programs: Iterable[P.Program]) -> int:
    """An upper bound on the distinct float values the programs can observe."""
    return sum(_function_count(f) for prog in programs for f in prog.functions.values())


def magnitude_bits(programs: Iterable[P.Program], extra_dtypes: Iterable[str] = ()
                   ) -> tuple[int, bool]:
    """(k, exact): the smallest sound width, and whether it had to be capped; the float
    dtypes are the programs' and `extra_dtypes` (`WiderDtypeNeeded`)."""
    programs = list(programs)
    n = count_values(programs) + ENCODER_CONSTANTS
    if len(set(float_dtypes(programs)) | set(extra_dtypes)) > 1:
        n *= 2   # casts observe one more value each: the narrow value below the wide one
    k = max(MIN_BITS, math.ceil(math.log2(n + 4)))
    return min(k, MAX_BITS), k <= MAX_BITS


class WiderDtypeNeeded(Exception):
    """Raised by the abstract model when an encoding applies a float function in a wider
    dtype than the programs' values have (`special.COMPUTED_IN`: float16 erf is float32 erf
    rounded) and that dtype is not on the model's cast chain: the encoding starts again
    with `dtype` on it (`tvtv.refinement._encode`). On the chain the casts around the
    function keep its bound (|erf| <= 1 stays finite in float16); off it a cast's magnitude
    is uninterpreted, and `isinf(erf(x))` on float16 was no longer proved
    (tests/test_tir_ranges.py). Found while encoding, this covers every encoder that applies
    such a function (relax.erf, gelu, a PrimFunc's float16 T.erf) without a table of them."""

    def __init__(self, dtype: str) -> None:
        super().__init__(f"the encoding computes in {dtype}, which is not on the cast chain")
        self.dtype = dtype
