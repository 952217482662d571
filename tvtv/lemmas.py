"""Operator lemmas: the LegalizeOps check, one operator at a time first.

LegalizeOps replaces each Relax operator call by a `call_tir` of a PrimFunc that depends only
on the operator, its attributes and its arguments' types. Checked on a whole graph, the
operators' specifications and their loops meet only at the outputs, where a deep graph's
terms no longer line up (measured on the zero pipeline: minutes per graph, mostly timeouts).

So, as mlir-tv checks a rewrite with the equalities it has proved, each distinct call is first
checked alone: `main(x0, x1, ...) = op(x0, x1, ...)` against its own legalization, in IEEE
semantics *without* the user's assumptions (no-nan and friends hold only at a graph's outputs:
a lemma proved under them would not compose). A proved lemma says: for all inputs of those
types, `call_tir(P, x)` equals `op(x)` and is defined wherever `op(x)` is. The whole-graph check
then encodes a target `call_tir` whose PrimFunc is structurally P (same structural hash, same
argument and output types) as `op` itself (`tvtv.encode.function`); the precise PrimFunc body
is used for every call without a proved lemma. That substitution is sound: it changes the
target's encoding only by something proved equal to it for every input, and where `op` is
undefined the target is taken as undefined, which can only make the proof harder.

Lemma results are cached per process, keyed by the single-operator module's structural hash
and the options that shape a proof, so the same operator on the same types is proved once per
run.
"""
from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from typing import Any

from tvtv.errors import TvtvError
from tvtv.ir import program as P
from tvtv.ir import relax_reader, tvm_bridge
from tvtv.report import PROVED

# seconds per solver query of a lemma (an operator alone is small; a lemma that needs longer
# is left to the whole-graph check, which encodes that call's PrimFunc body)
LEMMA_TIMEOUT = 2.0
# seconds for one lemma in all (its ladder, the IEEE re-check of a spurious counterexample)
LEMMA_BUDGET = 6.0

Key = tuple[int, tuple[P.Type, ...], P.Type]


@dataclass(frozen=True)
class Lemma:
    """`call_tir(PrimFunc with hash key[0], args of types key[1]) : key[2]` equals `function`
    of `program` (the operator alone) on every input."""

    op: str
    program: P.Program
    function: P.Function


@dataclass
class LemmaSet:
    """The lemmas proved for a module, and what was tried."""

    by_key: dict[Key, Lemma] = field(default_factory=dict)
    proved: list[str] = field(default_factory=list)       # operator names, one per distinct call
    not_proved: list[str] = field(default_factory=list)   # "op: verdict (reason)"
    seconds: float = 0.0

    def lookup(self, prim_hash: int, arg_types: tuple[P.Type, ...], out_ty: P.Type) -> Lemma | None:
        return self.by_key.get((prim_hash, arg_types, out_ty))

    def describe(self) -> str:
        """One line for a verdict's `levels`."""
        text = (f"operator lemmas: {len(self.proved)} of {len(self.proved) + len(self.not_proved)} "
                f"distinct operator calls proved equal to their legalization alone (IEEE, no "
                f"assumptions; {self.seconds:.1f} s) and encoded as the operator")
        if self.not_proved:
            text += "; PrimFunc bodies for " + ", ".join(sorted(set(
                n.split(":")[0] for n in self.not_proved)))
        return text


@dataclass(frozen=True)
class _Outcome:
    key: Key | None
    lemma: Lemma | None
    why: str


_CACHE: dict[tuple[int, tuple[Any, ...]], _Outcome] = {}


def _lemma_options(options: Any) -> Any:
    """The options a lemma is proved with: the user's float model, solver and reduction
    semantics, no assumptions, a short timeout and a budget for the whole lemma (a lemma
    left unproved only leaves that call to its PrimFunc body)."""
    return dataclasses.replace(options, assume=(), timeout=min(options.timeout, LEMMA_TIMEOUT),
                               budget=LEMMA_BUDGET)


def _options_key(options: Any) -> tuple[Any, ...]:
    return (options.fp, options.timeout, options.mag_bits, options.solver, options.reassociate,
            options.tir, options.refine_to_ieee, options.confirm, options.budget)


def _legalized_call(program: P.Program) -> tuple[P.CallTIR, P.Function] | None:
    """The single `call_tir(P, (x0, x1, ...))` a legalized single-operator `main` returns,
    with its arguments exactly the parameters in order; None for any other shape."""
    fn = program.functions.get("main")
    if fn is None:
        return None
    values = {b.vid: b.value for b in fn.body.bindings}
    e: P.Expr = fn.body.result
    while isinstance(e, P.VarRef) and e.vid in values:
        e = values[e.vid]
    if not isinstance(e, P.CallTIR):
        return None
    if e.args != tuple(P.VarRef(p.vid) for p in fn.params):
        return None
    return e, fn


def _prove_one(op: str, single: Any, options: Any) -> _Outcome:
    from tvtv.refinement import check_function
    try:
        legalized = tvm_bridge.apply(tvm_bridge.relax_pass("LegalizeOps"), single)
        src = relax_reader.read_module(single)
        tgt = relax_reader.read_module(legalized)
    except TvtvError as err:
        return _Outcome(None, None, f"{op}: cannot read ({err})")
    except Exception as err:   # TVM rejected the operator alone
        return _Outcome(None, None, f"{op}: LegalizeOps failed ({type(err).__name__})")
    found = _legalized_call(tgt)
    if found is None:
        return _Outcome(None, None, f"{op}: not legalized to one call_tir")
    call, fn = found
    info = tgt.prim_funcs.get(call.prim)
    if info is None or info.tir is None:
        return _Outcome(None, None, f"{op}: PrimFunc unreadable")
    result = check_function(src, tgt, "main", options, "LegalizeOps", f"lemma {op}")
    if result.verdict != PROVED:
        return _Outcome(None, None, f"{op}: {result.verdict}")
    key: Key = (call.prim_hash, tuple(p.ty for p in fn.params), call.ty)
    return _Outcome(key, Lemma(op, src, src.functions["main"]), "")


def prove_lemmas(module: Any, options: Any) -> LemmaSet:
    """The operator lemmas of `module`'s Relax operator calls (see the module doc), proved
    with `_lemma_options(options)`."""
    from tvtv.encode.function import operator_lemmas
    from tvtv.refinement import _RUN
    start = time.perf_counter()
    opts = _lemma_options(options)
    okey = _options_key(opts)
    token = _RUN.set(opts)       # check_function sets it too; restored below for the caller
    lemmas = LemmaSet()
    try:
        for op, single in tvm_bridge.single_op_modules(module):
            ckey = (tvm_bridge.structural_hash(single), okey)
            if ckey not in _CACHE:
                with operator_lemmas(None):     # a lemma is proved from the bodies alone
                    _CACHE[ckey] = _prove_one(op, single, opts)
            outcome = _CACHE[ckey]
            if outcome.lemma is not None and outcome.key is not None:
                lemmas.by_key[outcome.key] = outcome.lemma
                lemmas.proved.append(op)
            else:
                lemmas.not_proved.append(outcome.why)
    finally:
        _RUN.reset(token)
    lemmas.seconds = time.perf_counter() - start
    return lemmas
