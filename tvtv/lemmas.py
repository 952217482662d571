"""Operator lemmas: the LegalizeOps check, one operator at a time first.

LegalizeOps replaces each Relax operator call by a `call_tir` of a PrimFunc that depends only
on the operator, its attributes and its arguments' types. Checked on a whole graph, the
operators' specifications and their loops meet only at the outputs, where a deep graph's
terms no longer line up (measured on the zero pipeline: minutes per graph, mostly timeouts).

So, as mlir-tv checks a rewrite with the equalities it has proved, each distinct call is first
checked alone: `main(x0, x1, ...) = op(x0, x1, ...)` against its own legalization, in the
user's float model *without* the user's assumptions (no-nan and friends hold only at a graph's outputs:
a lemma proved under them would not compose). A proved lemma says: for all inputs of those
types, `call_tir(P, x)` equals `op(x)` and is defined wherever `op(x)` is. The whole-graph check
then encodes a target `call_tir` whose PrimFunc is structurally P (same structural hash, same
argument and output types) as `op` itself (`tvtv.encode.function`); the precise PrimFunc body
is used for every call without a proved lemma. That substitution is sound: it changes the
target's encoding only by something proved equal to it for every input, and where `op` is
undefined the target is taken as undefined, which can only make the proof harder.

Conditional lemmas (only under the `per-operation` assumption,
`tvtv.absfp.assumptions`): a call whose lemma fails only on NaN or infinite values (relu,
max, clip, max_pool2d: TVM's loops drop a NaN the specification keeps) is checked again under
the user's no-nan/no-inf, for the operator alone: for every input without NaN/inf on which the
operator's result has none, `call_tir(P, x)` equals `op(x)` (zero signs exact). It stands for a
target call only if the source itself computes `op` on the very same argument terms, in its
own body and with a result its outputs are computed from (`EncodeContext.op_calls`). On a run
where those arguments or that result hold a NaN/inf, per-operation makes the run poison; on
any other run the call's value is `op(x)`, and the arguments are the same terms on both sides.

Under per-operation with no-signed-zeros the specification of tanh and atanh drops the
argument's zero sign on both sides, as TVM's code does (`Options.zero_signs_free`,
`tvtv.encode.ops.elementwise.ZERO_SIGN_DROPPED`): their lemmas are then exact equalities,
proved without assumptions like any other.

Under the `op-rounding` assumption a call without an exact lemma is tried again in the real
model (`_attempts`): a lemma proved there says `call_tir(P, x)` equals `op(x)` in exact real
arithmetic (IEEE's NaN and infinities kept, one zero), i.e. up to rounding. Standing for the
call, it makes the check's verdict "correct given that these operators may be legalized up to
rounding", and the verdict lists them (`LemmaSet.up_to_rounding`).

Lemma results are cached per process, keyed by the single-operator module's structural hash
and the options that shape a proof, so the same operator on the same types is proved once per
run.
"""
from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np
import z3

from tvtv import z3fast as zf
from tvtv.absfp import assumptions
from tvtv.encode.canonical import Canonicalizer
from tvtv.encode.tensor import idx
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
    of `program` (the operator alone) on every input (`conditional`: on every input and
    result without NaN/inf). `call` is the operator call's `call_key`."""

    op: str
    program: P.Program
    function: P.Function
    call: Any = None
    conditional: bool = False


# Up to this many elements a conditional lemma's arguments are compared element by element.
SAME_ELEMENTS_BOUND = 4096


def _same_tensor(a: z3.ExprRef, b: z3.ExprRef, numel: int | None, canon: Canonicalizer) -> bool:
    """Are the source's and the target's argument arrays the same tensor: the same term, or
    elements 0..numel-1 the same in canonical form (one side may read a constant from a
    constant array where a PrimFunc inlined it as a literal, or order a commutative
    operation's arguments otherwise)? Either way the same values on every input."""
    if z3.eq(a, b):
        return True
    if numel is None or numel > SAME_ELEMENTS_BOUND:
        return False
    return all(z3.eq(canon(zf.Select(a, idx(k))), canon(zf.Select(b, idx(k)))) for k in range(numel))


def scalar_const(a: P.Expr) -> bool:
    """A 0-d constant argument: LegalizeOps folds it into the PrimFunc where the operator
    allows, so a lemma's single-operator module keeps it (`tvm_bridge.single_op_modules`)."""
    return isinstance(a, P.Const) and np.ndim(a.value) == 0


def _arg_form(a: P.Expr, scalar_consts: bool) -> Any:
    if scalar_consts and scalar_const(a):
        assert isinstance(a, P.Const)
        return ("const", a.dtype, repr(np.asarray(a.value).item()))
    if isinstance(a, (P.VarRef, P.Const)):
        return "tensor"
    if isinstance(a, P.TupleExpr):
        return tuple(_arg_form(f, scalar_consts) for f in a.fields)
    return repr(a)


def call_key(e: P.OpCall, tensor_types: tuple[P.Type, ...], scalar_consts: bool = True) -> tuple[Any, ...]:
    """What identifies an operator call up to its tensor arguments: operator, attributes,
    non-tensor arguments, the tensor arguments' types and the result type. With
    `scalar_consts`, 0-d constants are identified by their value (and are not among the
    tensor arguments); otherwise they count as tensor arguments."""
    return (e.op, repr(sorted(e.attrs.items())), tuple(_arg_form(a, scalar_consts) for a in e.args),
            tensor_types, e.ty)


@dataclass
class LemmaSet:
    """The lemmas proved for a module, and what was tried."""

    by_key: dict[Key, Lemma] = field(default_factory=dict)
    conditional: dict[Key, Lemma] = field(default_factory=dict)
    proved: list[str] = field(default_factory=list)       # operator names, one per distinct call
    proved_finite: list[str] = field(default_factory=list)  # ... with a conditional lemma
    up_to_rounding: list[str] = field(default_factory=list)  # ... proved in the real model
    not_proved: list[str] = field(default_factory=list)   # "op: verdict (reason)"
    # single-operator module hash -> (operator, inputs of a counterexample on finite values,
    # the input elements its differing element reads or None, `preimage.read_elements`)
    # (under per-operation; candidates for `tvtv.lift`)
    refuted_finite: dict[int, tuple[str, dict[str, Any], dict[str, list[int]] | None]] = \
        field(default_factory=dict)
    seconds: float = 0.0
    fp: str = "abstract"                # the float model the lemmas were proved in
    zero_signs_free: bool = False       # tanh/atanh's specification drops a zero's sign

    def lookup(self, prim_hash: int, arg_types: tuple[P.Type, ...], out_ty: P.Type,
               args: Sequence[z3.ExprRef] = (), source_calls: dict | None = None) -> Lemma | None:
        """The lemma a target `call_tir` may be encoded by: an unconditional one, or a
        conditional one whose call the source computes on these very argument terms."""
        key = (prim_hash, arg_types, out_ty)
        if key in self.by_key:
            return self.by_key[key]
        lemma = self.conditional.get(key)
        if lemma is None or not source_calls:
            return None
        sizes = [math.prod(t.shape) if isinstance(t, P.TensorType) else None for t in arg_types]
        if len(sizes) != len(args):
            sizes = [None] * len(args)
        canon = Canonicalizer()
        for recorded in source_calls.get(lemma.call, ()):
            if len(recorded) == len(args) and all(
                    _same_tensor(a, b, n, canon) for a, b, n in zip(recorded, args, sizes)):
                return lemma
        return None

    def describe(self) -> str:
        """One line for a verdict's `levels`."""
        total = (len(self.proved) + len(self.proved_finite) + len(self.up_to_rounding)
                 + len(self.not_proved))
        text = (f"operator lemmas: {len(self.proved)} of {total} distinct operator calls proved "
                f"equal to their legalization alone ({self.fp} model, no assumptions; "
                f"{self.seconds:.1f} s) and encoded as the operator")
        if self.zero_signs_free:
            text += (" (per-operation no-signed-zeros: tanh and atanh drop their argument's "
                     "zero sign, as TVM's code does)")
        if self.proved_finite:
            text += (f"; {len(self.proved_finite)} equal on finite values only (per-operation: "
                     f"used where the source computes them on the same arguments): "
                     + ", ".join(sorted(set(self.proved_finite))))
        if self.up_to_rounding:
            text += (f"; {len(self.up_to_rounding)} equal up to rounding only (op-rounding: "
                     f"proved in the real model, correct up to rounding, signed zeros not "
                     f"distinguished): " + ", ".join(sorted(set(self.up_to_rounding))))
        if self.not_proved:
            text += "; PrimFunc bodies for " + ", ".join(sorted(set(
                n.split(":")[0] for n in self.not_proved)))
        return text


@dataclass(frozen=True)
class _Outcome:
    key: Key | None
    lemma: Lemma | None
    why: str
    # a counterexample's inputs (parameter name -> array) when the first single-operator
    # module (`tvm_bridge.single_op_modules`) was refuted
    inputs: dict[str, Any] | None = None
    # the input elements its differing element reads (`preimage.read_elements`), or None
    reads: dict[str, list[int]] | None = None


_CACHE: dict[tuple[Any, ...], _Outcome] = {}


def _lemma_options(options: Any) -> Any:
    """The options a lemma is proved with: the user's float model, solver and reduction
    semantics, no assumptions and no input class (an operator's arguments are any values the
    graph computes, not the graph's inputs), a short timeout and a budget for the whole lemma
    (a lemma left unproved only leaves that call to its PrimFunc body)."""
    return dataclasses.replace(options, assume=(), input_class=(),
                               timeout=min(options.timeout, LEMMA_TIMEOUT),
                               budget=LEMMA_BUDGET, probe_elements=True)


def output_elements(ty: P.Type) -> int:
    """How many elements a value of type `ty` holds (0 for what is not a tensor)."""
    if isinstance(ty, P.TensorType):
        return math.prod(ty.shape)
    if isinstance(ty, P.TupleType):
        return sum(output_elements(f) for f in ty.fields)
    return 0


# Seconds per ELEMENT_SPLIT_BOUND output elements by which a large output's lemma budget grows
# beyond LEMMA_BUDGET (`_sized_options`). Canonicalizing such an output is mostly
# `z3.simplify` and runs against the check's budget: a (3, 5, 7, 11) softmax's 1,155
# elements took 1.3-1.9 s per 256 on the 2026-11-29 machine (8.8 s before any solving, more
# than 6 s * 1155 / 1024), where an earlier machine needed 2.6-3.0 s for 1,512.
LARGE_OUTPUT_BUDGET = 2 * LEMMA_BUDGET


def _sized_options(opts: Any, single: Any) -> Any:
    """`opts` with the lemma budget grown in proportion to the operator's output beyond
    `ELEMENT_SPLIT_BOUND` elements, up to `CANONICAL_BOUND` (`tvtv.refinement`): such an
    output is compared one canonical term per element (measured: a (9, 7, 6, 4) softmax
    2.6-3.0 s and a (6, 4, 4, 21) layer_norm 5.6 s to compare, both then proved, where one
    query over a symbolic index timed out), and that work grows with the elements, not with
    how hard the lemma is (`LARGE_OUTPUT_BUDGET` per 1,024 elements)."""
    from tvtv.refinement import CANONICAL_BOUND, ELEMENT_SPLIT_BOUND
    n = output_elements(relax_reader.convert_type(single["main"].ret_ty))
    if opts.budget is None or n <= ELEMENT_SPLIT_BOUND:
        return opts
    grown = max(opts.budget, LARGE_OUTPUT_BUDGET) * min(n, CANONICAL_BOUND) / ELEMENT_SPLIT_BOUND
    return dataclasses.replace(opts, budget=grown)


def _finite_attempts(options: Any) -> list[Any]:
    """The option sets a conditional lemma is tried with, in order: from the abstract model,
    IEEE first, then the abstract model itself. A lemma proved in IEEE is a fact about the
    values TVM computes, which the abstract model over-approximates, so it serves that check
    too; the abstract model's magnitudes can hide what no-nan/no-inf decide bit by bit
    (measured on zero graphs 7, 11 and 16: log_softmax 2.5 s in IEEE against 4-6 s abstract,
    adaptive_avg_pool2d 0.6 s in IEEE against unknown after 7 s abstract). Tried only after
    an undecided attempt: a counterexample ends the search."""
    if options.fp == "abstract":
        return [dataclasses.replace(options, fp="ieee"), options]
    return [options]


# Under per-operation, the budget (seconds) of a call's first attempt, the exact one, when
# attempts on finite values follow it. Exact lemmas that hold are mostly proved in well under
# a second; where the exact proof is slow the finite one is usually quick (measured on the zero
# graphs: softmax's and log_softmax's exact lemmas hold but took 11-14 s for 2x3 in the
# abstract model and timed out at 6 s on the graphs, their finite lemmas 0.1-2.6 s; eight
# graphs' lemmas took 117 s with the full 6 s first, 55 s with this and IEEE first).
EXACT_FIRST_BUDGET = 1.5


def _options_key(options: Any) -> tuple[Any, ...]:
    return (options.fp, options.timeout, options.mag_bits, options.solver, options.reassociate,
            options.tir, options.refine_to_ieee, options.confirm, options.budget,
            options.zero_signs_free, options.probe_elements, options.input_class)


def _returned_expr(fn: P.Function) -> P.Expr:
    """The expression `fn` returns, through variable aliases (`gv = lv`)."""
    values = {b.vid: b.value for b in fn.body.bindings}
    e: P.Expr = fn.body.result
    while isinstance(e, P.VarRef) and e.vid in values:
        e = values[e.vid]
    return e


def _legalized_call(program: P.Program) -> tuple[P.CallTIR, P.Function] | None:
    """The single `call_tir(P, (x0, x1, ...))` a legalized single-operator `main` returns,
    with its arguments exactly the parameters in order; None for any other shape."""
    fn = program.functions.get("main")
    if fn is None:
        return None
    e = _returned_expr(fn)
    if not isinstance(e, P.CallTIR):
        return None
    if e.args != tuple(P.VarRef(p.vid) for p in fn.params):
        return None
    return e, fn


def _legalize_one(op: str, variants: Sequence[Any]
                  ) -> tuple[P.Program, P.Program, P.CallTIR, P.Function, int] | _Outcome:
    """(source, legalized target, its call_tir, its main, the variant's index) of the first of a call's
    single-operator modules (`tvm_bridge.single_op_modules`) that LegalizeOps turns into one
    `call_tir` on exactly its parameters, the form a graph's `call_tir` is matched against;
    why not, for the last one, when none does."""
    failed = _Outcome(None, None, f"{op}: no module")
    for index, single in enumerate(variants):
        try:
            legalized = tvm_bridge.apply(tvm_bridge.relax_pass("LegalizeOps"), single)
            src = relax_reader.read_module(single)
            tgt = relax_reader.read_module(legalized)
        except TvtvError as err:
            failed = _Outcome(None, None, f"{op}: cannot read ({err})")
            continue
        except Exception as err:   # TVM rejected the operator alone
            failed = _Outcome(None, None, f"{op}: LegalizeOps failed ({type(err).__name__})")
            continue
        found = _legalized_call(tgt)
        if found is None:
            failed = _Outcome(None, None, f"{op}: not legalized to one call_tir")
            continue
        return src, tgt, *found, index
    return failed


def _prove_one(op: str, variants: Sequence[Any], options: Any, conditional: bool = False) -> _Outcome:
    from tvtv.refinement import check_function
    legal = _legalize_one(op, variants)
    if isinstance(legal, _Outcome):
        return legal
    src, tgt, call, fn, index = legal
    info = tgt.prim_funcs.get(call.prim)
    if info is None or info.tir is None:
        return _Outcome(None, None, f"{op}: PrimFunc unreadable")
    result = check_function(src, tgt, "main", options, "LegalizeOps", f"lemma {op}")
    if result.verdict != PROVED:
        cex = result.counterexample
        if cex is None or index != 0:
            return _Outcome(None, None, f"{op}: {result.verdict}")
        reads = None
        if conditional and cex.kind == "value" and cex.output is not None and cex.index is not None:
            from tvtv.preimage import read_elements
            reads = read_elements(src, "main", cex.output, cex.index)
        return _Outcome(None, None, f"{op}: {result.verdict}", cex.inputs, reads)
    key: Key = (call.prim_hash, tuple(p.ty for p in fn.params), call.ty)
    main = src.functions["main"]
    e = _returned_expr(main)
    if not isinstance(e, P.OpCall):
        return _Outcome(None, None, f"{op}: not one operator call")
    return _Outcome(key, Lemma(op, src, main, call_key(e, tuple(p.ty for p in main.params)),
                               conditional), "")


# Operators whose TVM 0.27 legalization computes their formula with other roundings, so that
# no exact lemma holds for them (docs/findings.md; `tests/test_op_rounding.py` checks that the
# exact attempts indeed fail): under op-rounding their real-model attempts come first, saving
# the exact ones' budgets (measured: 13-30 s per layer_norm call on the zero graphs).
ROUNDED_LEGALIZATIONS = {
    "relax.nn.gelu": "x * (0.5 + erf(x * 0.7071) * 0.5) for 0.5 * x * (1 + erf(x * 0.7071))",
    "relax.nn.layer_norm": "multiplies by rsqrt(var + eps) where the formula divides by sqrt",
}


# Operators whose finite-values lemma is tried before the exact one under per-operation:
# - their exact lemma is almost always false, since TVM's max and min (`T.max`/`T.min`, max
#   reductions from -FLT_MAX) drop a NaN the specification keeps (docs/findings.md), so the
#   exact attempt only spends time finding that counterexample (measured on the 30 zero
#   graphs: 96 exact attempts, 20 s; 88 refuted, 5 out of time at 1.5 s, 3 proved, for
#   maximum and minimum, which now get the finite-values lemma there instead);
# - or their exact lemma holds but is slow to prove at graph shapes, while the finite one is
#   quick (measured on the 30 zero graphs: softmax's exact attempts ran out of their 1.5 s 6
#   times of 6, log_softmax's 9 times of 11, proved only at 1-3 elements, 11-14 s for 2x3;
#   conv2d 9.9 s -> 4.7 s, variance 6.4 s -> 3.3 s, batch_norm 6.1 s -> 2.2 s in all;
#   adaptive_avg_pool2d 8.8 s -> 2.4 s once IEEE division by 1 folds, `canonical._BY_ONE`).
# Re-measure with `bench/lemma_order.py`.
FINITE_FIRST = {
    **{op: "exact lemma false where NaN reaches TVM's max/min, which drop it" for op in (
        "relax.max", "relax.min", "relax.maximum", "relax.minimum", "relax.clip",
        "relax.nn.relu", "relax.nn.max_pool2d", "relax.argmax")},
    "relax.nn.softmax": "exact lemma 11.5 s for 2x3 in the abstract model",
    "relax.nn.log_softmax": "exact lemma 14 s for 2x3 in the abstract model",
    "relax.nn.conv2d": "exact attempts out of time at 1.5 s on larger windows",
    "relax.nn.batch_norm": "exact attempts out of time at 1.5 s 3 times of 6",
    "relax.variance": "exact lemma 0.8 s on average, the finite one 0.4 s",
    "relax.nn.adaptive_avg_pool2d": "exact attempts out of time at 1.5 s or refuted 4 times "
                                    "of 14; the finite ones 2.4 s for all 14",
}


def _attempts(options: Any, opts: Any, op: str = "") -> list[tuple[Any, bool, int, bool]]:
    """(lemma options, conditional, group, up to rounding) for each way a call's lemma is
    tried, in order, until one is proved: exact in the user's float model; under
    per-operation, on finite values (`_finite_attempts`), the exact attempt then cut to
    `EXACT_FIRST_BUDGET`; under op-rounding, both again in
    the real model (correct up to rounding), first for the `ROUNDED_LEGALIZATIONS`. A
    counterexample on finite values ends its group's finite attempts, as in
    `_finite_attempts`. For the `FINITE_FIRST` operators the finite attempts precede the
    exact one."""
    finite = assumptions.per_operation(options.assume)
    models = [(opts, False)]
    if assumptions.OP_ROUNDING in options.assume and opts.fp != "real":
        real = (dataclasses.replace(opts, fp="real"), True)
        models = [real, *models] if op in ROUNDED_LEGALIZATIONS else [*models, real]
    out: list[tuple[Any, bool, int, bool]] = []
    for group, (m, rounded) in enumerate(models):
        if not finite:
            out.append((m, False, group, rounded))
            continue
        # the finite attempts follow: a slow exact proof need not be waited for
        short = min(m.budget or EXACT_FIRST_BUDGET, EXACT_FIRST_BUDGET)
        exact = [(dataclasses.replace(m, budget=short, timeout=min(m.timeout, short)),
                  False, group, rounded)]
        conditional = [(f, True, group, rounded)
                       for f in _finite_attempts(dataclasses.replace(m, assume=finite))]
        out += conditional + exact if op in FINITE_FIRST else exact + conditional
    return out


def prove_lemmas(module: Any, options: Any) -> LemmaSet:
    """The operator lemmas of `module`'s Relax operator calls (see the module doc), proved
    with `_lemma_options(options)`, then as `_attempts` allows."""
    from tvtv.encode.function import operator_lemmas
    from tvtv.refinement import _RUN
    start = time.perf_counter()
    opts = _lemma_options(options)
    token = _RUN.set(opts)       # check_function sets it too; restored below for the caller
    lemmas = LemmaSet(fp=opts.fp, zero_signs_free=opts.zero_signs_free)
    try:
        for op, variants in tvm_bridge.single_op_modules(module):
            mhash = tvm_bridge.structural_hash(variants[0])
            op_opts = _sized_options(opts, variants[0])
            first: _Outcome | None = None
            found: _Outcome | None = None
            rounded = False      # found in the real model under op-rounding
            refuted: set[int] = set()
            # inputs on which a finite exact attempt was refuted (a `tvtv.lift` candidate)
            candidate: dict[str, Any] | None = None
            candidate_reads: dict[str, list[int]] | None = None
            for aopts, conditional, group, up_to_rounding in _attempts(options, op_opts, op):
                if group in refuted:
                    # refuted on finite values: the group's exact lemma, which implies the
                    # finite one, is false too (it only follows for FINITE_FIRST operators)
                    continue
                ckey = (mhash, _options_key(aopts), aopts.assume)
                if ckey not in _CACHE:
                    with operator_lemmas(None):     # a lemma is proved from the bodies alone
                        _CACHE[ckey] = _prove_one(op, variants, aopts, conditional=conditional)
                outcome = _CACHE[ckey]
                first = first or outcome
                if outcome.lemma is not None and outcome.key is not None:
                    found, rounded = outcome, up_to_rounding
                    break
                if conditional and not outcome.why.endswith(": unknown"):
                    refuted.add(group)
                    if candidate is None and not up_to_rounding:
                        candidate, candidate_reads = outcome.inputs, outcome.reads
            # proved up to rounding, the exact group's counterexample is rounding, which
            # op-rounding allows: no candidate then (measured: rms_norm (1, 2) was refuted
            # exactly, then proved in the real model)
            if candidate is not None and not rounded:
                lemmas.refuted_finite[mhash] = (op, candidate, candidate_reads)
            if found is None or found.lemma is None or found.key is None:
                assert first is not None
                lemmas.not_proved.append(first.why)
                continue
            if found.lemma.conditional:
                lemmas.conditional[found.key] = found.lemma
            else:
                lemmas.by_key[found.key] = found.lemma
            if rounded:
                lemmas.up_to_rounding.append(op + (" (on finite values)" if found.lemma.conditional else ""))
            else:
                (lemmas.proved_finite if found.lemma.conditional else lemmas.proved).append(op)
    finally:
        _RUN.reset(token)
    lemmas.seconds = time.perf_counter() - start
    return lemmas
