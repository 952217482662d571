"""The abstraction ladder (mlir-tv §6.3): the rungs a check climbs, coarse to precise, and
what tells it a climb can help.

An encoder that abstracts something records a note in `EncodeContext.notes` (an opaque
`call_tir`, a dot product or sum as a function, a TIR value range not stated); a rung is
worth trying when it makes precise something the rung below noted (`worth_refining`). After
a timeout only the undecided terms count (`abstractions_in`). The rung being encoded is
`EncodeContext.abstraction`, set by `tvtv.encode.function.FunctionEncoder` from
`abstraction_level`.
"""
from __future__ import annotations

import re
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Iterator, Sequence

import z3

from tvtv import z3raw
from tvtv.encode.reduction import ARG_NOTES, DOT_NOTE, SUM_NOTE
from tvtv.encode.tir.ranges import RANGES_NOTE

OPAQUE_NOTE = "call_tir opaque"


@dataclass(frozen=True)
class Abstraction:
    """One rung of the abstraction ladder (mlir-tv §6.3), coarse to precise:
    `tir`: "opaque" (call_tir as an uninterpreted function), "common" (opaque for the
    PrimFuncs both sides call, `set_common_prim_funcs`, bodies for the rest; a rung that only
    canonical forms decide, see `tvtv.refinement`) or "body" (the PrimFunc's body);
    `dot`: "uf" (a dot product as its own commutative function) or "sum" (sum of products);
    `unroll`: small float sums unrolled into chains of additions (the loop's order), and
    argmax/argmin up to `reduction.MAXMIN_FOLD_BOUND` elements as exact folds (above
    `reduction.FOLD_BOUND` they are uninterpreted below this rung);
    `ranges`: the ranges the TIR proves for stored values (`tvtv.encode.tir.ranges`) stated
    in the abstract model. Last, because a stated range changes the target's term where the
    source builds the same value without one (a clamp fused into arithmetic by FuseTIR):
    measured on FuseTIR seed 0 with ranges on every rung, one graph timed out that is proved
    in under a second without."""

    tir: str = "body"
    dot: str = "sum"
    unroll: bool = False
    ranges: bool = False

    def describe(self) -> list[str]:
        tir = {"opaque": "opaque", "common": COMMON_DESCRIPTION}.get(self.tir, "PrimFunc bodies")
        out = [f"call_tir: {tir}", f"dot: {'function' if self.dot == 'uf' else 'sum of products'}"]
        if self.unroll:
            out.append("small sums: unrolled")
            out.append("argmax/argmin: unrolled up to 512 elements")
        if self.ranges:
            out.append("TIR value ranges: stated")
        return out


COMMON_DESCRIPTION = "opaque where both sides call the PrimFunc, bodies elsewhere"

LADDERS: dict[str, tuple[Abstraction, ...]] = {
    # mlir-tv's lock-step order: opaque PrimFuncs and dot functions first, then bodies, then
    # sums of products, then unrolled small sums. Between the first two, the PrimFuncs only
    # one side has by their bodies, the others opaque: a pass that rewrites a few calls and
    # keeps the rest (RewriteDataflowReshape: a legalized reshape becomes R.reshape) is then
    # proved without encoding every other PrimFunc's body
    "auto": (Abstraction("opaque", "uf"), Abstraction("common", "uf"), Abstraction("body", "uf"),
             Abstraction("body", "sum"),
             Abstraction("body", "sum", unroll=True),
             Abstraction("body", "sum", unroll=True, ranges=True)),
    "opaque": (Abstraction("opaque", "sum"),),
    "body": (Abstraction("body", "uf"), Abstraction("body", "sum"),
             Abstraction("body", "sum", unroll=True),
             Abstraction("body", "sum", unroll=True, ranges=True)),
}


def ladder(name: str) -> tuple[Abstraction, ...]:
    if name not in LADDERS:
        raise ValueError(f"unknown abstraction ladder {name!r} (choose from {', '.join(LADDERS)})")
    return LADDERS[name]


# how much of call_tir each `Abstraction.tir` encodes by bodies, coarse to precise
_TIR_ORDER = {"opaque": 0, "common": 1, "body": 2}


def worth_refining(level: Abstraction, nxt: Abstraction, notes: set[str]) -> bool:
    """Does the next rung make precise something this rung's encoding abstracted?"""
    return ((OPAQUE_NOTE in notes and _TIR_ORDER[level.tir] < _TIR_ORDER[nxt.tir])
            or (DOT_NOTE in notes and level.dot == "uf" and nxt.dot == "sum")
            or ((SUM_NOTE in notes or any(a in notes for a in ARG_NOTES))
                and not level.unroll and nxt.unroll)
            or (RANGES_NOTE in notes and not level.ranges and nxt.ranges))


def worth_climbing(level: Abstraction, later: Sequence[Abstraction], notes: set[str]) -> bool:
    """Does any later rung make precise something this rung abstracted? (A timeout at
    "opaque call_tir, dot: function" must still reach "dot: sum of products" two rungs up.)"""
    return any(worth_refining(level, nxt, notes) for nxt in later)


_LEVEL: ContextVar[Abstraction] = ContextVar("tvtv_abstraction", default=Abstraction("opaque"))


@contextmanager
def abstraction_level(level: Abstraction) -> Iterator[None]:
    """Encode with `level` inside the block (the refinement ladder sets it per rung)."""
    token = _LEVEL.set(level)
    try:
        yield
    finally:
        _LEVEL.reset(token)


def current_level() -> Abstraction:
    """The rung `abstraction_level` set (outside one: opaque call_tir, sums of products)."""
    return _LEVEL.get()


_COMMON: ContextVar[frozenset[int]] = ContextVar("tvtv_common_prim_funcs", default=frozenset())


def set_common_prim_funcs(hashes: frozenset[int]) -> None:
    """From here on (a check, `tvtv.refinement`): the structural hashes of the PrimFuncs
    both sides of the check call, which the "common" rung encodes opaquely."""
    _COMMON.set(hashes)


def opaque_here(level: Abstraction, prim_hash: int) -> bool:
    """Is a call of the PrimFunc of this structural hash an uninterpreted function at
    `level`? (At "common": when both sides call it. Sound at any rung: a PrimFunc computes
    the same outputs from the same inputs, so one function stands for it on both sides.)"""
    return level.tir == "opaque" or (level.tir == "common" and prim_hash in _COMMON.get())


def opaque_uf_name(prim_hash: int, k: int) -> str:
    """The uninterpreted function of output k of an opaque call_tir."""
    return f"tir_{prim_hash:x}_{k}"


_OPAQUE_UF = re.compile(r"^tir_[0-9a-f]+_\d+$")     # the names `opaque_uf_name` makes


def _note_of_uf(name: str) -> str | None:
    """The ladder note of the abstraction an uninterpreted function stands for, if any:
    a dot product (`reduction.dot`), a sum (`reduction.reduce_sum`, or the float model's
    hashed sums), an opaque PrimFunc."""
    if name.startswith("dot_"):
        return DOT_NOTE
    if "sum_" in name:
        return SUM_NOTE
    if _OPAQUE_UF.match(name):
        return OPAQUE_NOTE
    return None


def abstractions_in(terms: Sequence[z3.ExprRef]) -> set[str]:
    """The ladder notes (`worth_refining`) of the abstractions `terms` use, so that a
    timeout climbs only for what the undecided terms abstract.

    The walk uses Z3's C API on raw term pointers (`z3raw.uninterpreted_names`), as
    `tvtv.encode.canonical` does: through z3py objects it cost 4.9 of a lemma's 7.2 s
    (adaptive_avg_pool2d over 672 elements, zero graph 16)."""
    notes = (_note_of_uf(name) for name in z3raw.uninterpreted_names(terms))
    return {note for note in notes if note is not None}
