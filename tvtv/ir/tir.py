"""tvtv's own picture of a TIR PrimFunc (s_tir, as LegalizeOps and FuseTIR print it).

Plain Python data, no TVM objects: `tvtv/ir/tir_reader.py` builds it, `tvtv/encode/tir/`
encodes it. Every variable and buffer has a unique id (`name%k`), since TIR allows the same
name twice; the name before `%` is kept for messages.

Only what legalized and fused PrimFuncs use is represented: loops, SBlocks with spatial and
reduction iter vars (and their init statement), buffer stores and loads, the scalar
arithmetic of prim expressions (int64 indices included), Select, if_then_else, Cast and
intrinsic calls, and the scalar statements of IR-builder TIR (local allocations, `while`,
`if`, `T.let`). Anything else is rejected by the reader with `Unsupported`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Union

from tvtv.ir.nodes import walk


@dataclass(frozen=True)
class Buffer:
    """A buffer (a PrimFunc parameter or a block's allocated intermediate)."""

    id: str
    shape: tuple[int, ...]
    dtype: str

    @property
    def name(self) -> str:
        return self.id.split("%")[0]


# -- expressions -------------------------------------------------------------------------------
@dataclass(frozen=True)
class Var:
    id: str
    dtype: str


@dataclass(frozen=True)
class IntImm:
    value: int
    dtype: str


@dataclass(frozen=True)
class FloatImm:
    value: float
    dtype: str


@dataclass(frozen=True)
class Load:
    buffer: str            # Buffer.id
    indices: tuple["Expr", ...]
    dtype: str


@dataclass(frozen=True)
class Binary:
    """`op` is one of add, sub, mul, div, mod, floordiv, floormod, min, max."""

    op: str
    a: "Expr"
    b: "Expr"
    dtype: str


@dataclass(frozen=True)
class Compare:
    """`op` is one of eq, ne, lt, le, gt, ge; the result is bool."""

    op: str
    a: "Expr"
    b: "Expr"


@dataclass(frozen=True)
class Logic:
    """`op` is and / or (two args) or not (one)."""

    op: str
    args: tuple["Expr", ...]


@dataclass(frozen=True)
class Select:
    """`T.Select(c, t, f)`: both branches are evaluated (eager)."""

    cond: "Expr"
    true_value: "Expr"
    false_value: "Expr"
    dtype: str


@dataclass(frozen=True)
class IfThenElse:
    """`T.if_then_else(c, t, f)`: only the taken branch is evaluated (lazy)."""

    cond: "Expr"
    true_value: "Expr"
    false_value: "Expr"
    dtype: str


@dataclass(frozen=True)
class Cast:
    dtype: str
    value: "Expr"


@dataclass(frozen=True)
class Call:
    """An intrinsic call, `name` without the `tirx.` prefix (exp, tanh, sigmoid, pow, ...)."""

    name: str
    args: tuple["Expr", ...]
    dtype: str


Expr = Union[Var, IntImm, FloatImm, Load, Binary, Compare, Logic, Select, IfThenElse, Cast, Call]


# -- statements --------------------------------------------------------------------------------
@dataclass(frozen=True)
class For:
    var: Var
    min: Expr
    extent: Expr
    body: "Stmt"


@dataclass(frozen=True)
class Seq:
    stmts: tuple["Stmt", ...]


@dataclass(frozen=True)
class IterVar:
    var: Var
    min: Expr
    extent: Expr
    kind: str              # "S" (data parallel) or "R" (commutative reduction)


@dataclass(frozen=True)
class Block:
    """An SBlockRealize with its SBlock: iter vars bound to `iter_values`, run when
    `predicate` holds; `init` (reduction blocks) runs on the first reduction iteration."""

    name: str
    iter_vars: tuple[IterVar, ...]
    iter_values: tuple[Expr, ...]
    predicate: Expr
    init: "Stmt | None"
    body: "Stmt"
    alloc: tuple[Buffer, ...]


@dataclass(frozen=True)
class Store:
    buffer: str            # Buffer.id
    indices: tuple[Expr, ...]
    value: Expr


@dataclass(frozen=True)
class IfStmt:
    cond: Expr
    then_case: "Stmt"
    else_case: "Stmt | None"


@dataclass(frozen=True)
class Let:
    """`T.let` / TVM's `Bind` statement: `var` holds `value` for the rest of the sequence."""

    var: Var
    value: Expr


@dataclass(frozen=True)
class Alloc:
    """A buffer allocated for the rest of the enclosing sequence (`T.alloc_local`, TVM's flat
    `AllocBuffer` statement): its elements are arbitrary until stored."""

    buffer: Buffer


@dataclass(frozen=True)
class While:
    """`while cond: body`, the condition evaluated before every round."""

    cond: Expr
    body: "Stmt"


@dataclass(frozen=True)
class Nop:
    """`T.evaluate(0)` and friends."""


@dataclass(frozen=True)
class ExternSort:
    """`T.call_packed("tvm.contrib.sort.argsort" or "tvm.contrib.sort.sort", data, out, axis,
    is_ascend)`: the CPU kernels of topi.argsort and of relax.build's DispatchSortScan (compiled
    C++, not TIR) writing, for every row of `data` along `axis`, the row's positions in sorted
    order (argsort) or its sorted values (`values`: sort) into `out` (buffer ids, both of the
    same shape)."""

    data: str
    out: str
    axis: int
    ascending: bool
    values: bool = False


@dataclass(frozen=True)
class ExternTopK:
    """`T.call_packed("tvm.contrib.sort.topk", data, [values], [indices], k, axis, ret_type,
    is_ascend)`: the CPU kernel of relax.build's DispatchSortScan for topk (compiled C++),
    writing, for every row of `data` along `axis`, the first `k` (the whole row when k < 1)
    elements of the row's order, as values into `values` and as positions into `indices`
    (buffer ids; None where `ret_type` leaves that output out)."""

    data: str
    values: str | None
    indices: str | None
    k: int
    axis: int
    ascending: bool


Stmt = Union[For, Seq, Block, Store, IfStmt, Let, Alloc, While, Nop, ExternSort, ExternTopK]


@dataclass(frozen=True)
class PrimFunc:
    """A PrimFunc in destination-passing style: `call_tir` passes the inputs first and the
    outputs last, in `params` order."""

    name: str
    params: tuple[Buffer, ...]
    body: Stmt


def written_buffers(node: object) -> set[str]:
    """The ids of the buffers some statement of `node` writes (stores, a sort kernel's output)."""
    found: set[str] = set()
    for n in walk(node):
        if isinstance(n, Store):
            found.add(n.buffer)
        elif isinstance(n, ExternSort):
            found.add(n.out)
        elif isinstance(n, ExternTopK):
            found.update(b for b in (n.values, n.indices) if b is not None)
    return found
