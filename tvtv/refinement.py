"""The refinement check: does the target function refine the source function?

Target refines source when, for every input, the source is undefined, or the target is
defined and every output element of the target equals the source's (NaN = NaN; +0 ≠ -0),
with the same output shapes and dtypes. As in mlir-tv (vcgen.cpp) it is asked as separate
queries: first UB (`src defined ∧ tgt undefined`), then one query per output tensor
(`∃ i < numel: ¬same(src[i], tgt[i])`). A satisfiable query is a counterexample, turned into
concrete inputs by the float model's `decode`.

Abstraction ladder for this level of the encoder: the abstract float model first; when it
reports a counterexample that the IEEE evaluation of the same inputs does not confirm, the
check is repeated in the IEEE model (`levels` in the result records what was used).
"""
from __future__ import annotations

import contextvars
import math
import time
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterator, Sequence

import numpy as np
import z3

from tvtv import numeral_cases
from tvtv import solvers as solvers_mod
from tvtv import symmetry
from tvtv import z3fast as zf
from tvtv.absfp import assumptions as assume_mod
from tvtv.absfp import reductions
from tvtv.absfp.abstract import AbstractModel
from tvtv.absfp.dtypes import is_float, numpy_dtype
from tvtv.absfp.ieee import IEEEModel
from tvtv.absfp.interface import FloatModel
from tvtv.absfp.real import RealModel
from tvtv.absfp.width import WiderDtypeNeeded, float_dtypes, magnitude_bits
from tvtv.encode.canonical import Canonicalizer
from tvtv.encode.context import EncodeContext
from tvtv.encode.enclosures import enclosures
from tvtv.encode.abstraction import (OPAQUE_NOTE, Abstraction, abstraction_level,
                                     abstractions_in, ladder, set_common_prim_funcs,
                                     worth_climbing, worth_refining)
from tvtv.encode.function import (FunctionEncoder, called_prim_funcs, concrete_value,
                                  input_value, note_lines, opaque_can_prove)
from tvtv.encode.evaluate import libm_truth
from tvtv.encode.probe import constant_difference, holds, probe
from tvtv.encode.tensor import INDEX_BITS, Tensor, idx
from tvtv.encode.values import Value, describe_structure, flatten, structure
from tvtv.errors import Unsupported
from tvtv.ir import program as P
from tvtv.report import COUNTEREXAMPLE, PROVED, UNKNOWN, Counterexample, Result
from tvtv.solvers import CVC5_FIRST_SECONDS, PORTFOLIO, SOLVERS, Query

FP_MODELS = ("abstract", "ieee", "real")
# in `levels` when the IEEE model could not decide an abstract counterexample (it then stands,
# unconfirmed; `tvtv.api` makes it unknown unless execution shows it)
IEEE_TIMED_OUT = "fp: ieee timed out"
# the reason of an `unknown` whose counterexample's run is poison in the float model that found
# it (`_poisoned_in_model`): `tvtv.api` checks such a function again on the runs without
# NaN/inf inside (`Options.finite_runs`)
POISONED_RUN = "the counterexample's run computes a NaN or an infinity inside, as the model that found it computes"
# in `levels` when execution showed a counterexample the IEEE evaluation did not (`executing`)
SHOWN_BY_EXECUTION = "counterexample shown by execution before the IEEE model was asked"


@dataclass
class Options:
    """How to check. `timeout` is seconds per solver query.

    fp: "abstract" (mlir-tv's domain, then IEEE to confirm), "ieee" (bit-exact) or "real"
    (correct up to rounding only). solver: "z3", "cvc5" or "both" (a disagreement makes the
    verdict unknown, with both answers). assume: "no-nan", "no-inf", "no-signed-zeros",
    "per-operation", "op-rounding" (`tvtv.absfp.assumptions`).
    reassociate: a float reduction is a function of the multiset of its terms (Relax leaves
    the summation order unspecified); False fixes the order. See docs/float-models.md."""

    fp: str = "abstract"
    timeout: float = 30.0
    mag_bits: int | None = None
    refine_to_ieee: bool = True
    confirm: bool = True
    solver: str = "z3"
    assume: tuple[str, ...] = ()
    reassociate: bool = True
    # abstraction ladder (tvtv.encode.abstraction.LADDERS): "auto" = opaque call_tir and dot
    # functions first, then PrimFunc bodies, sums of products, unrolled small sums
    tir: str = "auto"
    # seconds for the whole check of one function (every query, rung and float model), or
    # None for no bound beyond `timeout` per query; a spent budget makes the verdict unknown
    budget: float | None = None
    # per-operation no-signed-zeros (set from `assume`, kept by an operator lemma, which is
    # proved without the user's assumptions): tanh and atanh of the specification drop their
    # argument's zero sign, as TVM's code does (`tvtv.encode.ops.elementwise.ZERO_SIGN_DROPPED`)
    zero_signs_free: bool = False
    # per-operation: take as premises that the source computes no NaN (no-nan) / inf (no-inf)
    # in its live tensors, i.e. check the runs that are not poison only (used to look again
    # for a counterexample after one whose run was poison: `tvtv.api`)
    finite_runs: bool = False
    # ask a few differing output elements alone before the symbolic-index query, and the
    # rest alone too when those are cheap (`_differing_index`): set for operator lemmas,
    # whose elements are computed alike (a whole graph's are not: zero graph 3's second step
    # went from 5 s to unknown with probes)
    probe_elements: bool = False
    # the inputs looked at: no-nan / no-inf restrict the input elements only, never making a
    # NaN or infinity the source computes poison (`tvtv.absfp.assumptions.INPUT_CLASSES`);
    # printed with the verdict (`--inputs`; the minimizer keeps a finding's input class)
    input_class: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.fp not in FP_MODELS:
            raise ValueError(f"unknown float model {self.fp!r} (choose from {', '.join(FP_MODELS)})")
        if self.solver not in SOLVERS:
            raise ValueError(f"unknown solver {self.solver!r} (choose from {', '.join(SOLVERS)})")
        if isinstance(self.assume, str):
            self.assume = (self.assume,)
        self.assume = assume_mod.validate(self.assume)
        self.input_class = assume_mod.validate_input_class(self.input_class)
        if assume_mod.zero_signs_free(self.assume):
            self.zero_signs_free = True
        if not isinstance(self.reassociate, bool):
            raise ValueError(f"reassociate must be True or False, not {self.reassociate!r}")

    def restricting(self) -> tuple[str, ...]:
        """What restricts the input elements: the assumptions and the input class."""
        return assume_mod.restricting(self.assume, self.input_class)

    def described(self) -> list[str]:
        """The assumptions and the input class, one printable line each (`Result.assumptions`)."""
        return assume_mod.describe(self.assume, self.input_class)

    def settings(self) -> list[str]:
        """The arithmetic choices in force, printed with the verdict."""
        sums = ("reductions: reassociate (a sum is a function of the multiset of its terms)"
                if self.reassociate else "reductions: fixed order (sums of permuted terms differ)")
        if self.fp == "real":
            sums = "reductions: exact real sums"
        return [sums, f"solver: {self.solver}"]


# The options of the check in progress, for the helpers below (set by `check_function`).
_RUN: contextvars.ContextVar[Options] = contextvars.ContextVar("tvtv_run_options", default=Options())


class _Timeout(Exception):
    """A query was undecided. `terms`: the output elements it was about, when known (the
    ladder then climbs only for an abstraction those terms use)."""

    def __init__(self, reason: str = "", terms: Sequence[z3.ExprRef] | None = None) -> None:
        super().__init__(reason)
        self.terms = terms


@dataclass
class _Side:
    ctx: EncodeContext
    outputs: list[Tensor]
    value: Value


@dataclass
class _Encoded:
    model: FloatModel
    inputs: list[tuple[str, P.Type, Value]]
    src: _Side
    tgt: _Side
    level: str
    notes: set[str] = field(default_factory=set)
    assume_facts: list[z3.BoolRef] = field(default_factory=list)
    options: Options = field(default_factory=Options)
    # the input atoms the assumptions decide (`assume_mod.atom_facts`), computed when needed
    atoms: dict[int, tuple[z3.ExprRef, z3.ExprRef]] | None = None
    # what `_prove_groups` proved a group at a time, for the verdict's levels
    symmetric: list[str] = field(default_factory=list)
    # per-operation's runs without NaN/inf inside: what the premised live tensors
    # (`_run_facts`) give the canonicalizer (`assume_mod.live_facts`), built once per encoding
    premises: list[tuple[z3.ExprRef, z3.ExprRef]] = field(default_factory=list)
    # per-operation's runs without NaN/inf inside: the run facts among `assume_facts` of each
    # source binding (`_run_facts`), for the output queries that need only some (`_sliced`)
    run_facts_of: dict[str, list[z3.BoolRef]] = field(default_factory=dict)
    # per-operation, all runs: does the run of the last counterexample decoded from the
    # solver's model (`_decode_inputs`) compute a NaN/inf inside the source, in this model
    # (`_poisoned_in_model`)? None when not asked or too large to tell
    poisoned_run: bool | None = None


def _make_model(fp: str, programs: Sequence[P.Program], mag_bits: int | None,
                extra_dtypes: Sequence[str] = ()) -> tuple[FloatModel, str]:
    """The float model `fp` for a check of `programs` and its level; the abstract model's
    cast chain has the programs' float dtypes and `extra_dtypes` (`WiderDtypeNeeded`)."""
    if fp == "ieee":
        return IEEEModel(), "fp: ieee (bit-exact)"
    if fp == "real":
        return RealModel(), "fp: real (correct up to rounding only)"
    k, exact = (mag_bits, True) if mag_bits else magnitude_bits(programs, extra_dtypes)
    model = AbstractModel(k, sorted(set(float_dtypes(programs)) | set(extra_dtypes)))
    note = f"fp: abstract, {k} magnitude bits" + ("" if exact else " (capped)")
    if len(model.chain) > 1:
        note += "; casts split along " + " < ".join(f"{d} ({model.width(d)} bits)" for d in model.chain)
    return model, note


class _ModelContext(EncodeContext):
    """An encode context whose uninterpreted reductions the float model may interpret
    (exact real sums, or sums of a multiset of terms: `tvtv.absfp.reductions`)."""

    reassociate: bool = True

    def uf(self, name: str, *sorts: z3.SortRef) -> z3.FuncDeclRef:
        f = reductions.interpret(self.model, name, sorts, self.reassociate)
        return f if f is not None else super().uf(name, *sorts)  # type: ignore[return-value]


def _encode_side(program: P.Program, fn: P.Function, args: list[Value], model: FloatModel,
                 side: str, source: "_Side | None" = None, concrete: bool = False) -> _Side:
    """One side of a check encoded in `model` on `args` (`concrete`: they are constants)."""
    ctx = _ModelContext(model, side)
    # on concrete inputs an argmax's exact fold is a numeral, its function an unknown
    # (measured: LegalizeOps of argmax over 2x186, a row of -FLT_MAX, was left unconfirmed
    # at the first rung and climbed, 43 s; confirmed there, 15 s)
    ctx.exact_arg_folds = concrete
    if source is not None:
        ctx.source_calls = source.ctx.op_calls
    ctx.reassociate = _RUN.get().reassociate
    ctx.zero_signs_free = _RUN.get().zero_signs_free
    if side == "src" and assume_mod.per_operation(_RUN.get().assume):
        # the live tensors: premises on the runs without NaN/inf inside (finite_runs), else
        # only to tell whether a counterexample's run is poison (`_poisoned_in_model`)
        ctx.live_values = []
    model.on_ub = ctx.add_ub
    value = FunctionEncoder(program, ctx).call(fn, args)
    return _Side(ctx, flatten(value), value)


def _run_facts(assume: Sequence[str], model: FloatModel, ctx: EncodeContext
               ) -> tuple[list[z3.BoolRef], list[Tensor], dict[str, list[z3.BoolRef]]]:
    """Under per-operation: `assume_mod.run_facts` of the source's live tensors, then of the
    live tensors inside the functions they call (`EncodeContext.inner_live_values`: a fused
    group's intermediates) as far as `assume_mod.RUN_FACTS_BOUND` allows. The checked
    function's own tensors keep the all-or-nothing rule they had alone. Returned: the facts,
    the tensors they cover, and the facts again by the checked function's binding they
    belong to (`_sliced`).

    Before, a group's NaN hidden by a later operation (`==`, a clip through TIR's max/min)
    counted as a difference on a poison run (tests/test_per_operation_inner.py). FuseTIR's
    graph 19 of seed 0 has such a case (`v - v` of a group's variance, clipped): it gets the
    facts (5,557 instead of 1,315), and the tensors they cover (returned beside them) give the
    canonicalizer its premises too (`assumptions.live_facts`: unknown after 303 s, then proved
    in 20 s, 2026-11-29)."""
    # the checked function's own tensors: all of their facts or none
    live = ctx.live_values or []
    outer = live if assume_mod.run_facts_fit(assume, live) else []
    room = assume_mod.RUN_FACTS_BOUND - assume_mod.float_elements(outer)
    inner: list[Tensor] = []
    for t in ctx.inner_live_values if assume_mod.per_operation(assume) else []:
        if not is_float(t.dtype):
            continue
        if t.numel > room:
            break
        room -= t.numel
        inner.append(t)
    # the tensors whose facts are premises: what the canonicalizer may rely on too
    premised = list(outer) + inner
    # each tensor's facts apart, by the binding it belongs to (the same terms as a whole)
    by_binding: dict[str, list[z3.BoolRef]] = {}
    facts: list[z3.BoolRef] = []
    for t in premised:
        mine = assume_mod.run_facts(assume, model, [t])
        facts += mine
        by_binding.setdefault(ctx.live_binding.get(id(t), ""), []).extend(mine)
    return facts, premised, by_binding


def _encode(src_prog: P.Program, src_fn: P.Function, tgt_prog: P.Program, tgt_fn: P.Function,
            fp: str, mag_bits: int | None, concrete: dict[str, Any] | None = None) -> _Encoded:
    """Source and target encoded in one float model `fp`; started again with a wider dtype
    on the abstract model's cast chain when the encoding asks for one (`WiderDtypeNeeded`:
    float16 erf computes in float32)."""
    extra: list[str] = []
    while True:
        model, level = _make_model(fp, [src_prog, tgt_prog], mag_bits, extra)
        try:
            return _encode_in(model, level, src_prog, src_fn, tgt_prog, tgt_fn, concrete)
        except WiderDtypeNeeded as wider:
            if wider.dtype in extra:    # (the model has it: cannot happen twice)
                raise
            extra.append(wider.dtype)


def _encode_in(model: FloatModel, level: str, src_prog: P.Program, src_fn: P.Function,
               tgt_prog: P.Program, tgt_fn: P.Function,
               concrete: dict[str, Any] | None) -> _Encoded:
    """`_encode` in `model`."""
    options = _RUN.get()
    if isinstance(model, RealModel) and concrete is None:
        # the assumptions say the inputs are finite: build them so (`RealFloats.finite_element`)
        model.finite_inputs = {assume_mod.NO_NAN, assume_mod.NO_INF} <= set(options.restricting())
    ctx0 = _ModelContext(model)
    ctx0.reassociate = options.reassociate
    inputs = []
    for p in src_fn.params:
        if concrete is not None:
            v = concrete_value(concrete[p.name], p.ty, ctx0)
        else:
            v = input_value(p.name, p.ty, ctx0)
        inputs.append((p.name, p.ty, v))
    args = [v for _, _, v in inputs]
    src = _encode_side(src_prog, src_fn, args, model, "src", concrete=concrete is not None)
    tgt = _encode_side(tgt_prog, tgt_fn, args, model, "tgt", src, concrete=concrete is not None)
    facts = assume_mod.input_facts(options.restricting(), model, [t for _, _, v in inputs for t in flatten(v)]) \
        if concrete is None else []
    premises: list[tuple[z3.ExprRef, z3.ExprRef]] = []
    run_facts_of: dict[str, list[z3.BoolRef]] = {}
    if concrete is None and options.finite_runs and src.ctx.live_values is not None:
        run, premised, run_facts_of = _run_facts(options.assume, model, src.ctx)
        facts += run
        premises = assume_mod.live_facts(options.assume, model, premised)
    notes = src.ctx.notes | tgt.ctx.notes
    if model.hash_facts:
        notes.add("sums: hashed multisets of terms (reassociation)")
    return _Encoded(model, inputs, src, tgt, level, notes, facts, options, premises=premises,
                    run_facts_of=run_facts_of)


# perf_counter() time when the check in progress must stop (Options.budget), or None
_DEADLINE: contextvars.ContextVar[float | None] = contextvars.ContextVar("tvtv_deadline", default=None)


# Z3's strategies in the order the check in progress asks each kind of alike queries ("element":
# an output's elements one by one, "group": its groups of symmetric elements), as `_check`
# learns it; None outside a check
_ORDER: contextvars.ContextVar[dict[str, list[str]] | None] = \
    contextvars.ContextVar("tvtv_order", default=None)


# within `_find_counterexample` in the IEEE model with the "z3+cvc5" solver: every query is
# asked of cvc5 first, briefly (`Query.cvc5_first`), and the ones it proved are counted here;
# None elsewhere. cvc5 bit-blasts floating point differently: FastMathTransform's fast_softmax
# over an axis of size 1 (x - max(-FLT_MAX, x) into fast_exp's polynomial) was proved by cvc5
# in 3.4 s, where Z3 timed out after 30 s (Isra seed 23, graphs 0 and 6, reduced to a (2, 1)
# softmax; those graphs stay undecided either way). Not the default solver: see
# `solvers.CVC5_FIRST_SECONDS`.
_CVC5_PROOFS: contextvars.ContextVar[list[int] | None] = \
    contextvars.ContextVar("tvtv_cvc5_proofs", default=None)
CVC5_PROVED = "solver: cvc5 proved"


def _solver(timeout: float, backend: str | None = None, kind: str = "") -> Query:
    """A query of at most `timeout` seconds, and no longer than the check's budget allows;
    one of `kind` (see `_ORDER`) asks Z3's strategies in the order the check has learnt for
    that kind (`_check`), any other in the fixed order."""
    deadline = _DEADLINE.get()
    if deadline is not None:
        left = deadline - time.perf_counter()
        if left <= 0:
            raise _Timeout("the check's time budget is spent")
        timeout = min(timeout, left)
    if _CANONICAL_ONLY.get():
        raise _Timeout(CANONICAL_ONLY_STOP)
    orders = _ORDER.get()
    order = orders.get(kind) if orders is not None and kind else None
    backend = backend or _RUN.get().solver
    return Query("z3" if backend == PORTFOLIO else backend, timeout, tuple(order) if order else (),
                 cvc5_first=backend == PORTFOLIO and _CVC5_PROOFS.get() is not None,
                 deadline=deadline)


# Set while the "common" rung is checked: it is decided by canonical forms alone (every
# output element the same term on both sides), and any query a solver would get ends it
# (`_solver`), so the ladder climbs to PrimFunc bodies at once. The rung saves encoding the
# PrimFuncs both sides call alike, which helps when the rewritten calls meet term for term
# (RewriteDataflowReshape); where they do not, a solver query over opaque calls would mostly
# find an unconfirmed counterexample, which costs a confirmation attempt and then climbs.
_CANONICAL_ONLY: contextvars.ContextVar[bool] = contextvars.ContextVar("tvtv_canonical_only",
                                                                       default=False)
CANONICAL_ONLY_STOP = "canonical forms differ: refining"


def _budget_spent() -> bool:
    """Is the check's time budget (`Options.budget`) spent?"""
    deadline = _DEADLINE.get()
    return deadline is not None and time.perf_counter() >= deadline


# tests the named function on drawn inputs (`testing_when_undecided`): the counterexample
# shown so (or None) and the level that says what testing showed
_TEST: contextvars.ContextVar[Callable[[str], tuple[Counterexample | None, str]] | None] = \
    contextvars.ContextVar("tvtv_test", default=None)


# within a level's `_find_counterexample`: called when an output is first left undecided
# (`_check_function`'s `test_now`, which tests once per check and raises `_ShownByTesting`)
_ON_UNDECIDED: contextvars.ContextVar[Callable[[], None] | None] = \
    contextvars.ContextVar("tvtv_on_undecided", default=None)


class _ShownByTesting(Exception):
    """Testing on drawn inputs showed a difference while a level was still asking about its
    other outputs: `cex`, confirmed as testing confirms (`ieee-spec-cpu`)."""

    def __init__(self, cex: Counterexample) -> None:
        super().__init__(cex.message)
        self.cex = cex


@contextmanager
def testing_when_undecided(test: Callable[[str], tuple[Counterexample | None, str]] | None
                           ) -> Iterator[None]:
    """Within: the first time a check's query times out and the ladder is about to climb,
    the function is tested on drawn inputs (`test(function name)`, `tvtv.api`:
    `confirm.search_by_testing`), once per check; a difference found is the verdict,
    confirmed, and the level says what testing showed either way (a check tested so is not
    tested again after the ladder). The solver spent the rest of its budget on the finer
    levels otherwise, and testing came only after them: GenCoG seed-0 graph 0 under
    LegalizeOps was found by testing after 226 s of its 240 s, where testing needed 14 s."""
    token = _TEST.set(test)
    try:
        yield
    finally:
        _TEST.reset(token)


# runs a counterexample of the named function on the VM (True: execution shows it; it may
# replace the inputs by drawn ones that show a difference), or None: `executing`
_EXECUTE: contextvars.ContextVar[Callable[[str, Counterexample], bool | None] | None] = \
    contextvars.ContextVar("tvtv_execute", default=None)


@contextmanager
def executing(run: Callable[[str, Counterexample], bool | None] | None) -> Iterator[None]:
    """Within: a counterexample that evaluation in the IEEE model does not show is run first
    (`run(function name, counterexample)`, `tvtv.api`: `confirm.confirm` on the VM) and,
    shown, is the verdict at once, confirmed; only then is the IEEE model asked (a solver
    query of up to 10 s, which mostly times out on a whole graph's TIR) and the ladder
    climbed. FuseTIR's seed-0 graph 19: two such queries, 20 s, before the last rung's
    counterexample was shown on the VM."""
    token = _EXECUTE.set(run)
    try:
        yield
    finally:
        _EXECUTE.reset(token)


def _check(s: Query, kind: str = "") -> z3.CheckSatResult:
    """`s`'s answer (a timeout raises `_Timeout`); for a query of `kind` (`_solver`), the
    order of that kind's next queries learnt from it."""
    s.facts = numeral_cases.fold(s.facts)
    r = s.check()
    orders = _ORDER.get()
    if kind and orders is not None and s.strategy:
        order = orders.setdefault(kind, list(s.strategies or solvers_mod.Z3_STRATEGIES))
        if s.strategy != order[0]:
            # the first strategy ran out of its slice and a later one answered: the queries of
            # a kind are alike, so the next ones ask that one first (zero seed-0 graph 6: 50
            # element queries, each 1 s undecided in the default solver, then proved in
            # 0.1-0.2 s by qfufbv). It moves back when the other answers. Kinds are kept
            # apart: a group query (a skeleton over renamed inputs) is not like the others.
            order.remove(s.strategy)
            order.insert(0, s.strategy)
    if s.disagreement is not None:
        _DISAGREEMENTS.get().append(s.disagreement)
    proofs = _CVC5_PROOFS.get()
    if s.decided_by == "cvc5" and proofs is not None:
        proofs[0] += 1
    if r == z3.unknown:
        raise _Timeout(s.reason_unknown())
    return r


_DISAGREEMENTS: contextvars.ContextVar[list[str]] = contextvars.ContextVar("tvtv_disagreements")


def _preconditions(enc: _Encoded) -> list[z3.BoolRef]:
    """The model's facts (constant order, hash units) and the user's assumptions."""
    return enc.model.preconditions() + list(enc.model.hash_facts.values()) + enc.assume_facts


def _decode_inputs(enc: _Encoded, m: z3.ModelRef, extra: Sequence[tuple[z3.ExprRef, str]] = ()
                   ) -> tuple[dict[str, Any], list[Any]]:
    """Concrete inputs (numpy arrays) and the values of `extra` terms, decoded together so
    abstract magnitudes map to one consistent set of reals."""
    terms: list[tuple[z3.ExprRef, str]] = []

    def collect(v: Value) -> Any:
        if isinstance(v, tuple):
            return tuple(collect(x) for x in v)
        start = len(terms)
        terms.extend((v.at(k), v.dtype) for k in range(v.numel))
        return (start, v.shape, v.dtype)

    shapes = {name: collect(v) for name, _, v in enc.inputs}
    n_in = len(terms)
    values = enc.model.decode(m, terms + list(extra))
    enc.poisoned_run = _poisoned_in_model(enc, m)

    def build(spec: Any) -> Any:
        if isinstance(spec, tuple) and spec and isinstance(spec[0], tuple):
            return tuple(build(s) for s in spec)
        if isinstance(spec, tuple) and len(spec) == 3 and isinstance(spec[1], tuple):
            start, shape, dtype = spec
            n = math.prod(shape)
            return np.array(values[start:start + n], dtype=numpy_dtype(dtype)).reshape(shape)
        return tuple(build(s) for s in spec)

    return {name: build(spec) for name, spec in shapes.items()}, values[n_in:]


def _poisoned_in_model(enc: _Encoded, m: z3.ModelRef) -> bool | None:
    """Under per-operation, on all runs (not `Options.finite_runs`): does the source's run
    that model `m` describes compute a NaN (no-nan) or an infinity (no-inf) in a live tensor
    (the checked function's or a called group's, as `_run_facts` gathers them), as this
    float model computes it? Such a run is poison, no counterexample, even where the IEEE
    evaluation of its inputs has none: the abstraction's exp may be inf where the true exp is
    finite, and exp(x) - exp(x) NaN (zero seed-0 graph 19). None when not per-operation, on
    the finite runs, without float live tensors, or beyond `assume_mod.RUN_FACTS_BOUND`
    elements (`assume_mod.run_facts`)."""
    live = enc.src.ctx.live_values
    if enc.options.finite_runs or live is None:
        return None
    # the run is poison exactly where the finite runs' premises fail
    facts = assume_mod.run_facts(enc.options.assume, enc.model,
                                 [*live, *enc.src.ctx.inner_live_values])
    if not facts:
        return None
    return z3.is_false(m.eval(zf.And(*facts), model_completion=True))


def _static_mismatch(source: _Side, target: _Side) -> tuple[str, str, int | None] | None:
    """(kind, message, output) of a difference in the results' types: their nesting (a
    1-tuple against its tensor: LegalizeOps of a one-input meshgrid returns the bare
    tensor), the number of tensors, a tensor's shape or dtype; None when they agree."""
    ss, ts = structure(source.value), structure(target.value)
    if ss != ts:
        return ("shape", f"source returns {describe_structure(ss)}, target "
                f"{describe_structure(ts)}", None)
    src, tgt = source.outputs, target.outputs
    if len(src) != len(tgt):
        return "shape", f"source returns {len(src)} tensors, target {len(tgt)}", None
    for k, (a, b) in enumerate(zip(src, tgt)):
        if a.shape != b.shape:
            return "shape", f"output {k}: source shape {a.shape}, target shape {b.shape}", k
        if a.dtype != b.dtype:
            return "dtype", f"output {k}: source dtype {a.dtype}, target dtype {b.dtype}", k
    return None


def _find_counterexample(enc: _Encoded, timeout: float, done: set | None = None) -> Counterexample | None:
    """None when refinement holds; raises _Timeout when a query is undecided.

    `done` holds the parts ("ub", output numbers) already proved at a coarser level of the
    ladder or in another float model; they are skipped, and parts proved here are added.
    Every level is a sound abstraction, so a part proved at one level holds at all.

    With the "z3+cvc5" solver, in the IEEE model each query is asked of cvc5 first, briefly
    (`_CVC5_PROOFS`); the levels then say how many it proved."""
    if enc.model.name != "ieee" or _RUN.get().solver != PORTFOLIO:
        return _find_counterexample_in(enc, timeout, done)
    proofs = [0]
    token = _CVC5_PROOFS.set(proofs)
    try:
        return _find_counterexample_in(enc, timeout, done)
    finally:
        _CVC5_PROOFS.reset(token)
        if proofs[0]:
            enc.symmetric.append(f"{CVC5_PROVED}: {proofs[0]} quer{'y' if proofs[0] == 1 else 'ies'}"
                                 f" (asked of cvc5 before Z3, up to {CVC5_FIRST_SECONDS:g} s each)")


def _find_counterexample_in(enc: _Encoded, timeout: float, done: set | None = None
                            ) -> Counterexample | None:
    """`_find_counterexample`'s queries."""
    done = set() if done is None else done
    pre = _preconditions(enc)
    wd_src, wd_tgt = enc.src.ctx.well_defined(), enc.tgt.ctx.well_defined()

    static = _static_mismatch(enc.src, enc.tgt)
    if static is not None:
        kind, message, k = static
        s = _solver(timeout)
        s.add(*pre, wd_src)
        if _check(s) == z3.unsat:
            return None  # the source is always undefined: anything refines it
        inputs, _ = _decode_inputs(enc, s.model())
        return Counterexample(kind, message, inputs, output=k)

    # 0. In the IEEE model, first a cheap concrete probe on special-valued inputs
    # (tvtv/encode/probe.py): big FP circuits (FastMathTransform's) solve slowly.
    # (Tuple inputs are not probed: the probe's inputs are whole tensors.)
    if enc.model.name == "ieee" and all(isinstance(v, Tensor) for _, _, v in enc.inputs):
        found = probe([(n, v) for n, _, v in enc.inputs],
                      list(zip(enc.src.outputs, enc.tgt.outputs)), [*pre, wd_src, wd_tgt],
                      enc.model.domain,
                      lambda dom, x, y: assume_mod.same_output(enc.options.assume, dom, x, y))
        if found is not None:
            inputs, k, flat, x, y = found
            a = enc.src.outputs[k]
            index = tuple(int(q) for q in np.unravel_index(flat, a.shape)) if a.shape else ()
            return Counterexample("value", f"output {k} differs at index {index}", inputs,
                                  output=k, index=index, source_value=_ieee_value(x, a.dtype),
                                  target_value=_ieee_value(y, a.dtype))
    # 1. UB: the target is undefined where the source is defined.
    if enc.tgt.ctx.ub and "ub" not in done:
        # one Boolean per UB condition, implying it: a flag the model sets names a condition
        # that holds (evaluating a condition itself may not reduce to true or false: the
        # existentials over indices). Implication, not equality: an equality would put each
        # existential under a negation too (a universal: slow).
        flags = [z3.Bool(f"tvtv_ub_{k}") for k in range(len(enc.tgt.ctx.ub))]
        s = _solver(timeout)
        s.add(*pre, wd_src, *[z3.Implies(f, c) for f, (c, _) in zip(flags, enc.tgt.ctx.ub)],
              zf.Or(*flags))
        if _check(s) == z3.sat:
            m = s.model()
            reasons = [why for f, (_, why) in zip(flags, enc.tgt.ctx.ub)
                       if z3.is_true(m.eval(f, model_completion=True))]
            inputs, _ = _decode_inputs(enc, m)
            return Counterexample("ub", "target is undefined where the source is defined: "
                                  + "; ".join(sorted(set(reasons))), inputs)
        done.add("ub")

    # 2. Each output: some element differs. An output left undecided does not stop the
    # others: a difference found in a later one is a counterexample all the same (a training
    # batch_norm's moving mean differs at once where its normalized output times out). The
    # level ends undecided anyway, so the later outputs get a short budget (an easy
    # difference, or an easy proof that the next level need not repeat).
    undecided: list[_Timeout] = []
    for k, (a, b) in enumerate(zip(enc.src.outputs, enc.tgt.outputs)):
        if k in done or a.numel == 0 or z3.eq(a.arr, b.arr):
            continue  # proved before, or the same SMT term: equal by construction
        dom = enc.model.domain(a.dtype)
        budget = min(timeout, AFTER_UNDECIDED_BUDGET) if undecided else timeout
        try:
            mine = _sliced(enc, pre, k)
            flat = _differing_index(enc, mine, wd_src, wd_tgt, k, dom, a, b, budget)
            if flat is not None and mine is not pre:
                # a difference on runs the other outputs' facts may exclude: asked again
                # with every premise, as before slicing
                flat = _differing_index(enc, pre, wd_src, wd_tgt, k, dom, a, b, budget)
        except _Timeout as err:
            undecided.append(err)
            if _budget_spent():
                break
            hook = _ON_UNDECIDED.get()
            if hook is not None:
                # the level ends undecided whatever the other outputs give, unless one shows
                # a difference: testing now (once per check) may show it before they spend
                # the budget (FuseTIR seed-3 graph 24: found by testing after 275 s, the
                # solver's element loops over its other outputs first)
                hook()
            continue
        if flat is not None:
            m, flat = flat
            inputs, (sv, tv) = _decode_inputs(enc, m, [(a.at(flat), a.dtype), (b.at(flat), b.dtype)])
            index = tuple(int(x) for x in np.unravel_index(flat, a.shape)) if a.shape else ()
            return Counterexample("value", f"output {k} differs at index {index}", inputs,
                                  output=k, index=index, source_value=sv, target_value=tv)
        done.add(k)
    if undecided:
        # the terms of every undecided output (None, "all abstractions", if one is unknown)
        terms = None if any(e.terms is None for e in undecided) else \
            [t for e in undecided for t in e.terms]
        raise _Timeout(str(undecided[0]), terms)
    return None


def _sliced(enc: _Encoded, pre: list[z3.BoolRef], k: int) -> list[z3.BoolRef]:
    """`pre` for the queries of output k: without the run facts (per-operation's premises)
    of the source's bindings that output is not computed from. Fewer premises only make a
    proof stronger; a difference found without them is asked again with all of them
    (`_find_counterexample_in`). Zero seed-5 graph 22: output 0's element queries carried
    the facts of all four outputs' 1,666 live elements (2,284 premises, 168 MB as text) and
    timed out; with its own cone's 650-925 premises it is proved in 82 s (2026-12-07)."""
    cones = enc.src.ctx.output_cones
    if not enc.run_facts_of or cones is None or k >= len(cones):
        return pre
    kept = {f.get_id() for vid, facts in enc.run_facts_of.items() if vid in cones[k]
            for f in facts}
    dropped = {f.get_id() for facts in enc.run_facts_of.values() for f in facts} - kept
    return [f for f in pre if f.get_id() not in dropped] if dropped else pre


def _ieee_value(x: z3.ExprRef, dtype: str) -> Any:
    """A probed output element as a Python number (IEEE numerals; ints; bools)."""
    from tvtv.absfp.ieee import fp_value
    if z3.is_fp_value(x):
        return fp_value(x, dtype)
    if z3.is_bv_value(x):
        return x.as_signed_long()
    if z3.is_bool(x) and (z3.is_true(x) or z3.is_false(x)):
        return bool(z3.is_true(x))
    return None   # left open by the encoding (an uninterpreted function's value)


# Outputs with at most this many elements are compared element by element (concrete indices).
ELEMENT_SPLIT_BOUND = 1024
# Larger outputs, up to this many elements, are compared as canonical terms first, and element
# by element while at most LARGE_DIFFERING of them are different terms; beyond, or larger,
# one query over a symbolic index.
CANONICAL_BOUND = 4096
LARGE_DIFFERING = 64
# Seconds for the first symbolic-index query of a small output, and the least an element's
# own query gets.
SYMBOLIC_FIRST_BUDGET = 2.0
MIN_ELEMENT_BUDGET = 1.0
# Under `Options.probe_elements`: elements asked alone before that symbolic query (first,
# middle, last), each with at most this budget.
PROBES = 3
PROBE_BUDGET = 0.25
# Seconds per query for the outputs after one left undecided (`_find_counterexample`).
AFTER_UNDECIDED_BUDGET = 2.0


def _differing_index(enc: _Encoded, pre: list, wd_src: z3.BoolRef, wd_tgt: z3.BoolRef, k: int,
                     dom: Any, a: Tensor, b: Tensor, timeout: float) -> tuple[z3.ModelRef, int] | None:
    """(model, flat index) of an element where output k differs, or None if none can.

    A large output gets one query over a symbolic index (see CANONICAL_BOUND for the
    ones compared as terms first). A small one (at most
    ELEMENT_SPLIT_BOUND elements) is compared element by element first: with a concrete
    index, index arithmetic and selects of lambdas fold away, so most elements of a layout
    change, a fusion or a permuted reduction become identical terms that need no solving
    (a symbolic index keeps Z3 in bit-vector division and modulo, where it is slow: measured
    on the zero pipeline, 5 s timeouts where the element query took 0.2 s). The rest get one
    query of their own, sharing the budget; the undecided ones finally one query together."""
    def ask(facts: list, budget: float, kind: str = "") -> z3.ModelRef | None:
        q = _solver(budget, kind=kind)
        q.add(*pre, wd_src, wd_tgt, *facts)
        return q.model() if _check(q, kind) == z3.sat else None

    i = z3.BitVec(f"tvtv_out{k}_index", INDEX_BITS)
    same = assume_mod.same_output(enc.options.assume, dom, a.at(i), b.at(i))
    symbolic = [z3.ULT(i, idx(a.numel)), zf.Not(same)]

    def ask_symbolic(budget: float) -> tuple[z3.ModelRef, int] | None:
        try:
            m = ask(symbolic, budget)
        except _Timeout as err:
            raise _Timeout(str(err), [a.at(i), b.at(i)]) from None
        return None if m is None else (m, m.eval(i, model_completion=True).as_long())

    if a.numel > CANONICAL_BOUND:
        return ask_symbolic(timeout)
    # a large output is compared term by term only while few of its elements differ: an
    # operator lemma's softmax or layer_norm over 1,512-2,016 elements is one term per element
    # on both sides (each row's query over a symbolic index timed out), a whole graph whose
    # outputs differ everywhere is left to the symbolic query at once
    large = a.numel > ELEMENT_SPLIT_BOUND
    differing = _differing_elements(enc, dom, a, b, give_up=LARGE_DIFFERING if large else None)
    if differing is None:
        return ask_symbolic(timeout)
    if not differing:
        return None          # every element is the same term on both sides
    differing = _prove_groups(enc, [*pre, wd_src, wd_tgt], differing, timeout)
    if not differing:
        return None          # every element proved equal, a group at a time
    # Under `probe_elements`, a few elements alone first, briefly: when each is decided at
    # once and all of them one by one fit in the budget the loop below has, the rest are
    # asked alone without the symbolic query (a log_softmax lemma's ~100 differing elements:
    # 20-30 ms each with the solver's set-up, where the symbolic query timed out after 2 s;
    # 3.1 s -> 0.9 s).
    quick = False
    if _RUN.get().probe_elements and len(differing) > PROBES:
        quick, probed, spent = True, set(), time.perf_counter()
        for j, c in differing[::(len(differing) - 1) // (PROBES - 1)][:PROBES]:
            try:
                m = ask([zf.Not(c)], min(timeout, PROBE_BUDGET), "element")
            except _Timeout:
                quick = False
                break
            if m is not None:
                return m, j
            probed.add(j)
        differing = [(j, c) for j, c in differing if j not in probed]
        each = (time.perf_counter() - spent) / PROBES
        quick = quick and each * len(differing) <= 2 * timeout
    # Else a short symbolic query first: when all elements are computed alike it decides
    # them at once (a matmul's 48 dot products: 0.4 s symbolic, a 30 s timeout together).
    if not quick:
        try:
            return ask_symbolic(min(timeout, SYMBOLIC_FIRST_BUDGET))
        except _Timeout:
            pass
    # Then each element alone, sharing twice the budget (a max_pool's 336 elements: 0.07 s in
    # all; a fused conv's elements 0.1-0.2 s each)
    deadline = time.perf_counter() + 2 * timeout
    open_elems = []
    for pos, (j, c) in enumerate(differing):
        left = deadline - time.perf_counter()
        if left <= 0:
            open_elems.extend(differing[pos:])   # the budget is spent: the rest together
            break
        share = max(left / (len(differing) - pos), MIN_ELEMENT_BUDGET)
        try:
            m = ask([zf.Not(c)], share, "element")
        except _Timeout:
            open_elems.append((j, c))
            continue
        if m is not None:
            return m, j
    if not open_elems:
        return None          # every element proved equal
    # the undecided ones together, with the whole budget: one Boolean per element implying
    # "it differs", so a flag the model sets names a differing element (evaluating an
    # element's condition itself may not reduce to false)
    flags = [z3.Bool(f"tvtv_differs_{k}_{j}") for j, _ in open_elems]
    try:
        m = ask([*[z3.Implies(f, zf.Not(c)) for f, (_, c) in zip(flags, open_elems)],
                 zf.Or(*flags)], timeout)
    except _Timeout as err:
        raise _Timeout(str(err), [c for _, c in open_elems]) from None
    if m is None:
        return None
    return m, next((j for f, (j, _) in zip(flags, open_elems)
                    if z3.is_true(m.eval(f, model_completion=True))), open_elems[0][0])


# Terms walked in grouping one output's differing elements (`symmetry.groups`), at most;
# past it, the rest are asked one by one as before. Grouping costs 20-31 us per term walked
# (measured on LegalizeOps of softmax and log_softmax (4, 4), (8, 16) and (2, 3, 5): 16
# elements of 1,000-1,400 terms in 0.4-0.7 s, 128 of 3,700-3,900 in 9.4-10.5 s), so this
# is about the 2 s the grouping had as a deadline before, counted so that runs agree.
GROUPING_WORK = 80_000
# group queries of one output, at most, in units of the per-query timeout
GROUP_QUERIES = 4


def _prove_groups(enc: _Encoded, premises: list, differing: list[tuple[int, z3.BoolRef]],
                  timeout: float) -> list[tuple[int, z3.BoolRef]]:
    """`differing` without the elements of groups proved at once: elements whose conditions
    are one formula up to renaming input elements (a softmax's rows) are asked once, over
    fresh variables (`tvtv/symmetry.py`, which argues soundness). A group whose query is not
    unsat decides nothing: its elements stay for the element-by-element queries."""
    if len(differing) < 2:
        return differing
    arrays = [t.arr for _, _, v in enc.inputs for t in flatten(v)]
    found = symmetry.groups(differing, arrays, GROUPING_WORK)
    multi = [g for g in found if len(g.members) > 1]
    proved: set[int] = set()
    # each group query stands for several element queries, so it gets a query's whole
    # `timeout` (a softmax position's 16 elements: 2.8-3.8 s alone; with 5 s each, a table
    # run beside the test suite left softmax (4,1,1,4,4) unknown), at most four times
    # that in all; the first that times out ends the groups (the others are alike, as hard)
    deadline = time.perf_counter() + GROUP_QUERIES * timeout
    for group in multi:
        left = deadline - time.perf_counter()
        if left <= 0 or _budget_spent():
            break
        q = _solver(min(timeout, max(left, MIN_ELEMENT_BUDGET)), kind="group")
        q.add(*symmetry.general_premises(group, premises), zf.Not(group.skeleton))
        try:
            if _check(q, "group") == z3.unsat:
                proved.update(j for j, _ in group.members)
        except _Timeout:
            break
    if proved:
        queries = sum(1 for g in multi if g.members[0][0] in proved)
        enc.symmetric.append(f"symmetric elements: {len(proved)} proved in {queries} "
                             f"quer{'y' if queries == 1 else 'ies'} over renamed inputs")
    return [(j, c) for j, c in differing if j not in proved]


# Elements compared in one batch of canonical forms (`Canonicalizer.many`): larger batches share
# more, but Z3's simplifier slows on very large terms (measured on a (6, 4, 4, 21) layer_norm
# in the real model: 13.2 s at 256 and 13.6 s at 64 elements, 16.7 s at 1024, 18.1 s at 8192).
CANON_CHUNK = 256


def _differing_elements(enc: _Encoded, dom: Any, a: Tensor, b: Tensor,
                        give_up: int | None = None) -> list[tuple[int, z3.BoolRef]] | None:
    """(index, "element equal" condition) for the elements of two outputs that are not the
    same term after simplification and sorting the arguments of commutative operators
    (`tvtv/encode/canonical.py`). None once more than `give_up` elements differ (the caller
    then asks one query over a symbolic index instead)."""
    out: list[tuple[int, z3.BoolRef]] = []
    if enc.atoms is None:
        # the input atoms the assumptions decide, and the abstract constants' special-value
        # tests, which the model's preconditions decide (they stayed in zero graph 6's terms)
        enc.atoms = {**assume_mod.atom_facts(enc.options.restricting(), enc.model,
                                             [t for _, _, v in enc.inputs for t in flatten(v)]),
                     **assume_mod.false_atom_facts(enc.model.false_atoms())}
    # per-operation's runs without NaN/inf inside: the live values' premises too
    canon = Canonicalizer(enc.atoms, enc.premises)
    deadline = _DEADLINE.get()
    for start in range(0, a.numel, CANON_CHUNK):
        # elements built a chunk at a time (a large output may be given up after one); pairs
        # that are one term (Z3 shares equal terms) are equal by construction
        chunk = [(j, x, y) for j in range(start, min(start + CANON_CHUNK, a.numel))
                 for x, y in [(a.at(j), b.at(j))] if not z3.eq(x, y)]
        if not chunk:
            continue
        # canonical forms only save solver calls: with the check's budget spent, the rest
        # go to the solver as they are (whose queries then end the check as a timeout)
        if deadline is None or time.perf_counter() < deadline:
            forms = canon.pairs([x for _, x, _ in chunk], [y for _, _, y in chunk])
            chunk = [(j, x, y) for (j, _, _), (x, y) in zip(chunk, forms)]
        out += [(j, assume_mod.same_output(enc.options.assume, dom, x, y))
                for j, x, y in chunk if not z3.eq(x, y)]
        if give_up is not None and len(out) > give_up:
            return None
    return out


def _encoded_at(src_prog: P.Program, src_fn: P.Function, tgt_prog: P.Program,
                tgt_fn: P.Function, inputs: dict[str, Any], fp: str = "ieee") -> _Encoded | None:
    """Source and target in the IEEE model (or the real one, `fp`) with `inputs` as
    constants; None when a part of them is Unsupported. `separated_by_evaluation` and
    `separates` share one such encoding."""
    try:
        return _encode(src_prog, src_fn, tgt_prog, tgt_fn, fp, None, inputs)
    except Unsupported:
        return None


def separated_by_evaluation(src_prog: P.Program, src_fn: P.Function, tgt_prog: P.Program,
                            tgt_fn: P.Function, cex: Counterexample,
                            enc: _Encoded | None = None) -> Counterexample | None:
    """`cex` (a value counterexample) as shown by evaluation alone: its inputs, in the IEEE
    model, make both sides defined and some output element two different constants after
    simplification (no uninterpreted function left in it, so every interpretation separates).
    The named element is tried first; when another one separates instead, the counterexample
    returned names that one. None when no element simplifies so: `separates` asks the solver.

    The abstract model may name an element whose difference hangs on a function's value
    (hamming_window's cos(1.2566) against a broken sin(1.2566): the solver's IEEE query ran
    10 s undecided) where the next element is fixed by the special-value rules (cos(+0) = 1,
    sin(+0) = +0). `enc`: `_encoded_at` of `cex.inputs`, when the caller has it."""
    if cex.kind != "value" or cex.output is None:
        return None
    enc = enc or _encoded_at(src_prog, src_fn, tgt_prog, tgt_fn, cex.inputs)
    if enc is None:
        return None
    if not holds([*_preconditions(enc), enc.src.ctx.well_defined(), enc.tgt.ctx.well_defined()]):
        return None
    outputs = list(zip(enc.src.outputs, enc.tgt.outputs))
    a = outputs[cex.output][0]
    first = (cex.output, int(np.ravel_multi_index(cex.index, a.shape)) if a.shape else 0)
    found = constant_difference(
        outputs, enc.model.domain,
        lambda dom, x, y: assume_mod.same_output(enc.options.assume, dom, x, y), first=first)
    if found is None:
        return None
    k, flat, x, y = found
    a = outputs[k][0]
    index = tuple(int(q) for q in np.unravel_index(flat, a.shape)) if a.shape else ()
    return replace(cex, message=f"output {k} differs at index {index}", output=k,
                   index=index, source_value=_ieee_value(x, a.dtype),
                   target_value=_ieee_value(y, a.dtype), confirmed_ieee=True)


def _same_place(a: Counterexample, b: Counterexample) -> bool:
    """Do two counterexamples name the same inputs and the same output element?"""
    return (a.kind, a.output, a.index) == (b.kind, b.output, b.index) \
        and a.inputs.keys() == b.inputs.keys() \
        and all(_same_input(a.inputs[n], b.inputs[n]) for n in a.inputs)


def _same_input(x: Any, y: Any) -> bool:
    if isinstance(x, (tuple, list)) or isinstance(y, (tuple, list)):
        return isinstance(x, (tuple, list)) and isinstance(y, (tuple, list)) and len(x) == len(y) \
            and all(_same_input(p, q) for p, q in zip(x, y))
    x, y = np.asarray(x), np.asarray(y)
    return x.dtype == y.dtype and x.shape == y.shape \
        and x.tobytes() == y.tobytes()   # bit patterns: -0.0 is not +0.0, NaN is NaN


def separates(src_prog: P.Program, src_fn: P.Function, tgt_prog: P.Program, tgt_fn: P.Function,
              cex: Counterexample, timeout: float = 10.0,
              enc: _Encoded | None = None, fp: str = "ieee") -> bool | None:
    """Do `cex.inputs`, evaluated in the IEEE model, separate source and target for every
    interpretation of the uninterpreted functions? None when undecided. `enc`: `_encoded_at`
    of `cex.inputs`, when the caller has it.

    With `fp` "real", evaluated in the real model instead (a difference in exact real
    arithmetic: what a counterexample of `--fp real` claims), and the interpretations are
    those within the enclosures of the functions' true values at numbers
    (`tvtv.encode.enclosures`): exp(a + b) and exp(a) * exp(b) are then not separated, exp(x)
    and a broken tanh(x) are."""
    enc = enc or _encoded_at(src_prog, src_fn, tgt_prog, tgt_fn, cex.inputs, fp)
    if enc is None:
        return None
    real = enc.model.name == "real"
    wd_src, wd_tgt = enc.src.ctx.well_defined(), enc.tgt.ctx.well_defined()
    facts = _preconditions(enc)
    if cex.kind in ("shape", "dtype"):
        facts.append(zf.Not(wd_src))
    elif cex.kind == "ub":
        facts.append(zf.Not(zf.And(wd_src, zf.Not(wd_tgt))))
    else:
        a, b = enc.src.outputs[cex.output], enc.tgt.outputs[cex.output]
        flat = int(np.ravel_multi_index(cex.index, a.shape)) if a.shape else 0
        dom = enc.model.domain(a.dtype)
        facts += [wd_src, wd_tgt,
                  assume_mod.same_output(enc.options.assume, dom, a.at(flat), b.at(flat))]
    # A module without inputs: the C library's function values are one interpretation; when
    # source and target agree under it, they are not separated for every interpretation (a
    # float16 hamming_window whose float32 angles differ by an ulp: the solver's query ran
    # its 10 s undecided). (Only there: elsewhere an element's whole history would be
    # evaluated, unmeasured on large graphs.)
    if not real and not enc.inputs and libm_truth(zf.And(*facts)) is True:
        return False
    if real:
        facts = [z3.simplify(zf.And(*facts))]    # the functions' arguments become numbers
        facts += enclosures(facts[0])
    try:
        s = _solver(timeout, "z3")
    except _Timeout:
        return None
    s.add(*facts)
    r = s.check()
    return None if r == z3.unknown else r == z3.unsat


def check_function(src_prog: P.Program, tgt_prog: P.Program, name: str, options: Options,
                   pass_name: str | None = None, label: str | None = None) -> Result:
    """Check that `tgt_prog[name]` refines `src_prog[name]`."""
    start = time.perf_counter()
    # the budget's deadline holds for this check only (a stale one would cut whatever the
    # caller encodes or compares next)
    token = _DEADLINE.set(None if options.budget is None else start + options.budget)
    order = _ORDER.set({})     # learnt anew for each check
    try:
        with numeral_cases.shared():
            return _check_function(src_prog, tgt_prog, name, options, pass_name, label, start)
    finally:
        _ORDER.reset(order)
        _DEADLINE.reset(token)


# The IEEE re-check of an abstract counterexample gets this share of the check's per-query
# limit, and at least REFINE_MIN_SECONDS (`refine_timeout`)
REFINE_SHARE = 1 / 3
REFINE_MIN_SECONDS = 10.0


def refine_timeout(timeout: float) -> float:
    """The per-query limit of the questions asked once the abstract model has found a
    counterexample (the IEEE model's search, `separates`, here and for a pass's chain of
    steps in `tvtv.api`): a third of the check's limit `timeout`, at least 10 s and never
    more than `timeout`. The default 30 s gives 10 s, so a
    real difference that the IEEE model cannot decide still ends soon; a user who allows
    longer queries gets longer ones here too (a float16 sort's IEEE proof took 17 s on one
    machine and over 30 s on a slower one)."""
    return min(timeout, max(REFINE_MIN_SECONDS, timeout * REFINE_SHARE))


def _check_function(src_prog: P.Program, tgt_prog: P.Program, name: str, options: Options,
                    pass_name: str | None, label: str | None, start: float) -> Result:
    label = label or name
    _RUN.set(options)
    disagreements: list[str] = []
    _DISAGREEMENTS.set(disagreements)

    def result(verdict: str, reason: str | None = None, cex: Counterexample | None = None,
               levels: list[str] | None = None) -> Result:
        levels = list(levels or []) + options.settings()
        if disagreements:   # never trust either answer when the solvers disagree
            levels.append("solvers disagree: " + "; ".join(disagreements))
            verdict, reason, cex = UNKNOWN, "z3 and cvc5 disagree: " + "; ".join(disagreements), None
        return Result(label, pass_name, verdict, time.perf_counter() - start, reason, cex,
                      options.fp, levels, options.described())

    src_fn, tgt_fn = src_prog.functions.get(name), tgt_prog.functions.get(name)
    if src_fn is None:
        return result(UNKNOWN, f"function {name} not in the source")
    if tgt_fn is None:
        return result(UNKNOWN, f"function {name} not in the target")
    if [p.ty for p in src_fn.params] != [p.ty for p in tgt_fn.params]:
        return result(UNKNOWN, f"function {name}: the signature changed: "
                      f"({', '.join(str(p.ty) for p in src_fn.params)}) -> "
                      f"({', '.join(str(p.ty) for p in tgt_fn.params)})")

    levels: list[str] = []
    proved_parts: set = set()   # "ub" and output numbers proved so far (at any level)
    # the last counterexample a level could not confirm before climbing: an undecided
    # verdict carries it (`Result.candidate`), for execution to try
    climbed_past: Counterexample | None = None

    def undecided(reason: str) -> Result:
        r = result(UNKNOWN, reason, levels=levels)
        r.candidate = climbed_past
        return r

    execute = _EXECUTE.get()
    executed: set[bytes] = set()     # the inputs run so far (`executing`), each once
    # (`testing_when_undecided`: once, when an output is first undecided or on the first
    # climb, whichever comes first)
    test = _TEST.get()

    def test_now() -> Counterexample | None:
        """Test on drawn inputs now, unless done: the difference shown, if any."""
        nonlocal test
        if test is None:
            return None
        shown, level = test(name)
        test = None
        levels.append(level)
        return shown

    def on_undecided() -> None:
        """`_ON_UNDECIDED`: a difference testing shows ends the check."""
        shown = test_now()
        if shown is not None:
            raise _ShownByTesting(shown)

    def shown_by_testing(cex: Counterexample) -> Result:
        r = result(COUNTEREXAMPLE, cex.message, cex, levels)
        r.confirmed = True
        return r

    def shown_by_execution(cex: Counterexample) -> bool:
        if execute is None or cex.kind not in ("value", "ub"):
            return False
        key = b"".join(np.ascontiguousarray(v).tobytes() for v in cex.inputs.values()
                       if not isinstance(v, tuple))
        if key in executed:
            return False
        executed.add(key)
        return execute(name, cex) is True
    rungs = ladder(options.tir)
    # the PrimFuncs both sides call, opaque at the "common" rung
    src_calls, tgt_calls = called_prim_funcs(src_prog), called_prim_funcs(tgt_prog)
    common = src_calls & tgt_calls
    set_common_prim_funcs(common)
    # The opaque rung cannot prove a target that stopped calling a PrimFunc the source calls
    # (unless the call was dead, which the common rung proves as well): its counterexample
    # is a difference of uninterpreted functions, and running it on the VM to be sure took
    # most of a check (RewriteDataflowReshape in the `default` pipeline, seed 1 graph 0:
    # 50 of 54 s). Such a check starts at the common rung.
    opaque_useful = opaque_can_prove(src_prog, tgt_prog) and src_calls <= tgt_calls
    # The common rung, for a target that calls some of the source's PrimFuncs and no new
    # one. Where the target calls new ones (FuseTIR's fused functions), their results reach
    # the kept calls as other terms than the source's, canonical forms never decided it, and
    # the rung cost an encoding per check (FuseTIR seed 0: median 0.47 -> 0.61 s).
    common_useful = bool(common) and tgt_calls < src_calls
    # the rung climbed from and what its encoding abstracted (see the skip below)
    climbed_from: tuple[Abstraction, set[str]] | None = None
    for rung_no, rung in enumerate(rungs):
        # abstraction ladder (mlir-tv §6.3): climb on an unconfirmed counterexample or a
        # timeout when the next rung makes precise what this one abstracted
        nxt = rungs[rung_no + 1] if rung_no + 1 < len(rungs) else None
        if rung.tir == "opaque" and nxt is not None and not opaque_useful:
            continue
        if rung.tir == "common" and (not common_useful or nxt is None):
            continue
        if climbed_from is not None and not worth_refining(climbed_from[0], rung, climbed_from[1]) \
                and worth_climbing(climbed_from[0], rungs[rung_no + 1:], climbed_from[1]):
            # this rung encodes alike what the last one abstracted (no dot product: "dot:
            # sum of products" changes nothing), a later one refines it: go there
            continue
        levels.append("level: " + ", ".join(rung.describe()))
        if proved_parts:
            levels.append("proved at a coarser level: " + ", ".join(
                sorted(p if isinstance(p, str) else f"output {p}" for p in proved_parts)))
        with abstraction_level(rung):
            fp = options.fp
            abstract_cex: Counterexample | None = None
            enc = None
            while True:
                timeout = options.timeout if abstract_cex is None else refine_timeout(options.timeout)
                canonical_only = False
                try:
                    enc = _encode(src_prog, src_fn, tgt_prog, tgt_fn, fp, options.mag_bits)
                    levels.append(enc.level)
                    levels.extend(note_lines(enc.notes))
                    # (a "common" rung that called nothing opaquely is the next rung's
                    # encoding: checked as that one, which is then skipped)
                    canonical_only = rung.tir == "common" and OPAQUE_NOTE in enc.notes
                    token = _CANONICAL_ONLY.set(canonical_only)
                    # (not at the canonical-only rung, whose timeouts are expected: it
                    # decides little)
                    hook = _ON_UNDECIDED.set(None if canonical_only else on_undecided)
                    try:
                        cex = _find_counterexample(enc, timeout, proved_parts)
                    finally:
                        _ON_UNDECIDED.reset(hook)
                        _CANONICAL_ONLY.reset(token)
                        levels.extend(enc.symmetric)
                except _ShownByTesting as shown:
                    return shown_by_testing(shown.cex)
                except Unsupported as err:
                    if getattr(err, "ieee_only", False) and fp == "abstract":
                        levels.append(f"fp: ieee ({err})")   # e.g. TIR reinterpret: bits
                        fp = "ieee"
                        continue
                    return result(UNKNOWN, f"unsupported: {err}", levels=levels)
                except _Timeout as err:
                    if canonical_only and not _budget_spent():
                        levels.append(CANONICAL_ONLY_STOP)
                        climbed_from = (rung, set(enc.notes))
                        break
                    # climb for what the undecided elements abstract (all of the encoding's
                    # abstractions when the query was not about elements)
                    # (none once the budget is spent: every later query would time out too)
                    used = set() if enc is None or _budget_spent() else (
                        enc.notes if err.terms is None else abstractions_in(err.terms))
                    if worth_climbing(rung, rungs[rung_no + 1:], used):
                        shown = test_now()
                        if shown is not None:
                            return shown_by_testing(shown)
                        levels.append("timed out: refining")
                        climbed_from = (rung, used)
                        break
                    if abstract_cex is not None:
                        # the IEEE model could not decide: the abstract counterexample stands
                        # (unconfirmed by the abstraction; execution may still confirm it)
                        levels.append(IEEE_TIMED_OUT)
                        return result(COUNTEREXAMPLE, abstract_cex.message, abstract_cex, levels)
                    if str(err).startswith(solvers_mod.NOT_A_TIMEOUT):
                        # cvc5 rejected the query, or tvtv could not write it for cvc5:
                        # no time limit was reached
                        return undecided(f"undecided: {err}")
                    return undecided(f"timeout after {timeout:g} s per query ({err})")
                if cex is None:
                    return result(PROVED, levels=levels)
                # (not in the real model: an IEEE difference may be rounding, which that
                # model allows; there exact real evaluation decides whether to climb, and
                # `confirm.confirm_case` asks it again for the verdict)
                real_shown = options.confirm and fp == "real" and separates(
                    src_prog, src_fn, tgt_prog, tgt_fn, cex,
                    timeout=refine_timeout(options.timeout), fp="real") is True
                if options.confirm and fp != "real":
                    # evaluation first (no solver), which may name another element; both
                    # questions use one encoding at the counterexample's inputs
                    at = _encoded_at(src_prog, src_fn, tgt_prog, tgt_fn, cex.inputs)
                    if at is not None:
                        cex = separated_by_evaluation(src_prog, src_fn, tgt_prog, tgt_fn, cex,
                                                      enc=at) or cex
                    if cex.confirmed_ieee is None and enc.poisoned_run:
                        # not a counterexample under per-operation, and asking the IEEE
                        # model or climbing finds more such runs (zero seed-0 graph 19: 80 s,
                        # then proved in 10 s on the finite runs): those are checked instead
                        levels.append(f"per-operation: {POISONED_RUN}")
                        climbed_past = cex
                        return undecided(f"{POISONED_RUN} ({fp} model: {cex.message})")
                    if cex.confirmed_ieee is None and shown_by_execution(cex):
                        levels.append(SHOWN_BY_EXECUTION)
                        r = result(COUNTEREXAMPLE, cex.message, cex, levels)
                        r.confirmed = True
                        return r
                    if cex.confirmed_ieee is None and abstract_cex is not None \
                            and _same_place(cex, abstract_cex):
                        # the IEEE model found the abstract model's counterexample again (a
                        # module without inputs): the question was asked at this level already
                        cex.confirmed_ieee = abstract_cex.confirmed_ieee
                    elif cex.confirmed_ieee is None and at is not None:
                        cex.confirmed_ieee = separates(src_prog, src_fn, tgt_prog, tgt_fn, cex,
                                                       timeout=refine_timeout(options.timeout), enc=at)
                if cex.confirmed_ieee is not True and not real_shown \
                        and worth_climbing(rung, rungs[rung_no + 1:], enc.notes):
                    levels.append("counterexample unconfirmed: refining")
                    climbed_past = cex
                    climbed_from = (rung, set(enc.notes))
                    break
                if fp == "abstract" and options.refine_to_ieee and cex.confirmed_ieee is not True:
                    fp = "ieee"   # the abstraction may have invented this difference: refine
                    abstract_cex = cex
                    continue
                return result(COUNTEREXAMPLE, cex.message, cex, levels)
    return undecided("no abstraction level decided")


def result_label(src: P.Program, fname: str, label: str | None) -> str:
    """The name of function `fname`'s result: `label` when the source has one public
    function, `label:fname` when it has more, the function's name without a label."""
    if label is None:
        return fname
    return label if len(src.public_functions()) == 1 else f"{label}:{fname}"


def check_programs(src: P.Program, tgt: P.Program, options: Options, pass_name: str | None = None,
                   label: str | None = None) -> list[Result]:
    """Check every public function of the source against the target's function of that name."""
    results = []
    for fn in src.public_functions():
        results.append(check_function(src, tgt, fn.name, options, pass_name,
                                      result_label(src, fn.name, label)))
    if not results:
        results.append(Result(label or "<module>", pass_name, UNKNOWN, 0.0,
                              "the source module has no public Relax function"))
    return results
