"""Integer index arithmetic of TIR (int64 loop variables, floordiv/floormod) with ranges.

TIR computes indices in int64. tvtv evaluates an index expression in the encoder's 32-bit
index sort (`tvtv.encode.tensor.INDEX`) together with its exact range [lo, hi], computed by
interval arithmetic from the loop ranges; an expression whose range does not fit in a signed
32-bit integer is `Unsupported`, so 32-bit arithmetic gives exactly TIR's int64 result.

Non-negative operands use the unsigned operations (`UDiv`, `URem`, `ULT`) that the Relax
encoders use for their indices, so a Relax op and its legalization build identical index
terms; possibly negative ones use signed floor semantics (TIR's floordiv/floormod round
toward -inf: floordiv(-1, 2) = -1, floormod(-1, 2) = 1).
"""
from __future__ import annotations

from dataclasses import dataclass

import z3

from tvtv import z3fast as zf
from tvtv.encode.tensor import INDEX_BITS, idx
from tvtv.errors import Unsupported

LIMIT = 1 << (INDEX_BITS - 1)


@dataclass(frozen=True)
class Ix:
    """An exact integer value: `term` (32-bit) always lies in [lo, hi]."""

    term: z3.BitVecRef
    lo: int
    hi: int

    @property
    def const(self) -> int | None:
        if self.lo != self.hi:
            return None
        # (a numeral made by z3py is a BitVecNumRef; the class test spares is_bv_value's
        # several C calls, asked for every index the TIR interpreter folds)
        t = self.term
        return self.lo if type(t) is z3.BitVecNumRef or z3.is_bv_value(t) else None

    @property
    def nonneg(self) -> bool:
        return self.lo >= 0


def constant(v: int) -> Ix:
    _fits(v, v, "constant")
    return Ix(idx(v % (1 << INDEX_BITS)), v, v)


def _fits(lo: int, hi: int, what: str) -> None:
    if lo < -LIMIT or hi >= LIMIT:
        raise Unsupported(f"TIR index expression {what} with range [{lo}, {hi}] beyond 32 bits")


def _mk(term: z3.BitVecRef, lo: int, hi: int, what: str) -> Ix:
    _fits(lo, hi, what)
    if lo == hi:
        return constant(lo)
    return Ix(term, lo, hi)


def add(a: Ix, b: Ix) -> Ix:
    if b.const == 0:
        return a
    if a.const == 0:
        return b
    return _mk(a.term + b.term, a.lo + b.lo, a.hi + b.hi, "a + b")


def sub(a: Ix, b: Ix) -> Ix:
    if b.const == 0:
        return a
    return _mk(a.term - b.term, a.lo - b.hi, a.hi - b.lo, "a - b")


def mul(a: Ix, b: Ix) -> Ix:
    if b.const == 1:
        return a
    if a.const == 1:
        return b
    corners = [a.lo * b.lo, a.lo * b.hi, a.hi * b.lo, a.hi * b.hi]
    return _mk(a.term * b.term, min(corners), max(corners), "a * b")


def _divisor(b: Ix, op: str) -> int:
    if b.const is None or b.const <= 0:
        raise Unsupported(f"TIR index {op} by a non-constant or non-positive divisor")
    return b.const


def floordiv(a: Ix, b: Ix) -> Ix:
    d = _divisor(b, "floordiv")
    if d == 1:
        return a
    if a.nonneg:
        return _mk(z3.UDiv(a.term, idx(d)), a.lo // d, a.hi // d, "floordiv")
    q = a.term / idx(d)                               # bvsdiv truncates toward zero
    t = zf.If(zf.And(z3.SRem(a.term, idx(d)) != 0, a.term < 0), q - 1, q)
    return _mk(t, a.lo // d, a.hi // d, "floordiv")


def floormod(a: Ix, b: Ix) -> Ix:
    d = _divisor(b, "floormod")
    if a.nonneg and a.hi < d:
        return a
    if a.nonneg:
        return _mk(z3.URem(a.term, idx(d)), 0, min(d - 1, a.hi), "floormod")
    r = z3.SRem(a.term, idx(d))
    return _mk(zf.If(r < 0, r + idx(d), r), 0, d - 1, "floormod")


def truncdiv(a: Ix, b: Ix) -> Ix:
    if a.nonneg:
        return floordiv(a, b)
    d = _divisor(b, "division")
    lo, hi = int(a.lo / d), int(a.hi / d)
    return _mk(a.term / idx(d), lo, hi, "division")


def truncmod(a: Ix, b: Ix) -> Ix:
    if a.nonneg:
        return floormod(a, b)
    d = _divisor(b, "modulo")
    return _mk(z3.SRem(a.term, idx(d)), -(d - 1), d - 1, "modulo")


def minimum(a: Ix, b: Ix) -> Ix:
    if a.hi <= b.lo:
        return a
    if b.hi <= a.lo:
        return b
    return _mk(zf.If(lt(a, b), a.term, b.term), min(a.lo, b.lo), min(a.hi, b.hi), "min")


def maximum(a: Ix, b: Ix) -> Ix:
    if a.lo >= b.hi:
        return a
    if b.lo >= a.hi:
        return b
    return _mk(zf.If(lt(b, a), a.term, b.term), max(a.lo, b.lo), max(a.hi, b.hi), "max")


def select(c: z3.BoolRef, a: Ix, b: Ix) -> Ix:
    if z3.is_true(c):
        return a
    if z3.is_false(c):
        return b
    return _mk(zf.If(c, a.term, b.term), min(a.lo, b.lo), max(a.hi, b.hi), "select")


def lt(a: Ix, b: Ix) -> z3.BoolRef:
    if a.hi < b.lo:
        return z3.BoolVal(True)
    if a.lo >= b.hi:
        return z3.BoolVal(False)
    return z3.ULT(a.term, b.term) if a.nonneg and b.nonneg else a.term < b.term


def le(a: Ix, b: Ix) -> z3.BoolRef:
    if a.hi <= b.lo:
        return z3.BoolVal(True)
    if a.lo > b.hi:
        return z3.BoolVal(False)
    return z3.ULE(a.term, b.term) if a.nonneg and b.nonneg else a.term <= b.term


def eq(a: Ix, b: Ix) -> z3.BoolRef:
    if a.const is not None and b.const is not None:
        return z3.BoolVal(a.const == b.const)
    if a.hi < b.lo or b.hi < a.lo:
        return z3.BoolVal(False)
    return a.term == b.term


COMPARE = {
    "lt": lt, "le": le, "eq": eq,
    "gt": lambda a, b: lt(b, a), "ge": lambda a, b: le(b, a),
    "ne": lambda a, b: zf.Not(eq(a, b)),
}
def _trunc_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


_FOLD = {
    "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
    "floordiv": lambda a, b: a // b, "floormod": lambda a, b: a % b,
    "div": _trunc_div, "mod": lambda a, b: a - b * _trunc_div(a, b),
    "min": min, "max": max,
}


def _folding(op: str, fn):
    """`fn`, computed exactly on two constants (TIR's int64 semantics; a zero divisor is
    left to `fn`, which rejects it)."""
    def apply(a: Ix, b: Ix) -> Ix:
        if a.const is not None and b.const is not None and not (
                op in ("floordiv", "floormod", "div", "mod") and b.const == 0):
            return _mk(idx(_FOLD[op](a.const, b.const) % (1 << INDEX_BITS)),
                       _FOLD[op](a.const, b.const), _FOLD[op](a.const, b.const), op)
        return fn(a, b)
    return apply


BINARY = {op: _folding(op, fn) for op, fn in {
    "add": add, "sub": sub, "mul": mul, "floordiv": floordiv, "floormod": floormod,
    "div": truncdiv, "mod": truncmod, "min": minimum, "max": maximum,
}.items()}


def to_int(a: Ix, bits: int) -> z3.BitVecRef:
    """The value as a `bits`-wide two's-complement integer (e.g. an int64 data value)."""
    if bits == INDEX_BITS:
        return a.term
    if bits > INDEX_BITS:
        return z3.SignExt(bits - INDEX_BITS, a.term)
    return z3.Extract(bits - 1, 0, a.term)
