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


def count_values(programs: Iterable[P.Program]) -> int:
    """An upper bound on the distinct float values the programs can observe."""
    return sum(_function_count(f) for prog in programs for f in prog.functions.values())


def magnitude_bits(programs: Iterable[P.Program]) -> tuple[int, bool]:
    """(k, exact): the smallest sound width, and whether it had to be capped."""
    n = count_values(programs) + ENCODER_CONSTANTS
    k = max(MIN_BITS, math.ceil(math.log2(n + 4)))
    return min(k, MAX_BITS), k <= MAX_BITS
