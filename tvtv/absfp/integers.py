"""Exact bit-vector semantics for integer and bool dtypes, shared by every float model.

Integer arithmetic wraps (two's complement, as numpy and TVM's LLVM code do). Division and
modulo by zero are UB, as is INT_MIN / -1 (C semantics, which TVM's codegen inherits).
"""
from __future__ import annotations

from typing import Any

import z3

from tvtv import z3fast as zf
from tvtv.absfp.dtypes import INT_FORMATS
from tvtv.absfp.interface import ScalarDomain, UBCallback
from tvtv.errors import Unsupported


class IntDomain(ScalarDomain):
    def __init__(self, dtype: str, on_ub: UBCallback) -> None:
        self.dtype = dtype
        self.bits, self.signed = INT_FORMATS[dtype]
        self.sort = z3.BitVecSort(self.bits)
        self._ub = on_ub

    def const(self, value: Any) -> z3.ExprRef:
        return z3.BitVecVal(int(value) % (1 << self.bits), self.bits)

    def add(self, a, b):
        return a + b

    def sub(self, a, b):
        return a - b

    def mul(self, a, b):
        return a * b

    def _check_div(self, a, b, op: str) -> None:
        self._ub(b == 0, f"integer {op} by zero")
        if self.signed:
            int_min = z3.BitVecVal(1 << (self.bits - 1), self.bits)
            self._ub(zf.And(a == int_min, b == -1), f"integer {op} overflow (INT_MIN / -1)")

    def div(self, a, b):
        """Truncating division (C, TVM's `/` on ints)."""
        self._check_div(a, b, "division")
        return a / b if self.signed else z3.UDiv(a, b)

    def floor_div(self, a, b):
        self._check_div(a, b, "division")
        if not self.signed:
            return z3.UDiv(a, b)
        q = a / b
        r = z3.SRem(a, b)
        # round toward -inf when the remainder is nonzero and the signs differ
        return zf.If(zf.And(r != 0, (r < 0) != (b < 0)), q - 1, q)

    def trunc_mod(self, a, b):
        self._check_div(a, b, "modulo")
        return z3.SRem(a, b) if self.signed else z3.URem(a, b)

    def floor_mod(self, a, b):
        self._check_div(a, b, "modulo")
        if not self.signed:
            return z3.URem(a, b)
        r = z3.SRem(a, b)
        return zf.If(zf.And(r != 0, (r < 0) != (b < 0)), r + b, r)

    def neg(self, a):
        return -a

    def abs(self, a):
        return zf.If(a < 0, -a, a) if self.signed else a

    def maximum(self, a, b):
        return zf.If(self.gt(a, b), a, b)

    def minimum(self, a, b):
        return zf.If(self.lt(a, b), a, b)

    def lt(self, a, b):
        return a < b if self.signed else z3.ULT(a, b)

    def le(self, a, b):
        return a <= b if self.signed else z3.ULE(a, b)

    def eq(self, a, b):
        return a == b

    def truthy(self, a):
        return a != 0

    def unary(self, fname: str, a):
        if fname in ("floor", "ceil", "trunc", "round"):
            return a
        raise Unsupported(f"{fname} on {self.dtype}")


class BoolDomain(ScalarDomain):
    dtype = "bool"

    def __init__(self) -> None:
        self.sort = z3.BoolSort()

    def const(self, value: Any) -> z3.ExprRef:
        return z3.BoolVal(bool(value))

    def _no_arith(self, what: str):
        raise Unsupported(f"arithmetic {what} on bool")

    def add(self, a, b):
        return zf.Or(a, b)  # numpy: True + True = True for bool arrays

    def sub(self, a, b):
        self._no_arith("subtract")

    def mul(self, a, b):
        return zf.And(a, b)

    def div(self, a, b):
        self._no_arith("divide")

    def neg(self, a):
        self._no_arith("negative")

    def abs(self, a):
        return a

    def maximum(self, a, b):
        return zf.Or(a, b)

    def minimum(self, a, b):
        return zf.And(a, b)

    def lt(self, a, b):
        return zf.And(zf.Not(a), b)

    def eq(self, a, b):
        return a == b

    def truthy(self, a):
        return a

    def from_bool(self, b):
        return b
