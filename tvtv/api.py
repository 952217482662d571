"""tvtv's Python API: `verify`, `check_pass`, `registered_passes`."""
from __future__ import annotations

import dataclasses
import os
import re
import time
from typing import Any

from tvtv import compose, confirm, lift, passes
from tvtv.absfp import assumptions as assume_mod
from tvtv import lemmas as lemma_mod
from tvtv.encode.function import operator_lemmas
from tvtv.errors import InputError, TvtvError, failure_reason
from tvtv.ir import program as P
from tvtv.ir import relax_reader, tvm_bridge
from tvtv.refinement import (IEEE_TIMED_OUT, POISONED_RUN, Options, check_programs, executing,
                             refine_timeout, result_label, separates, testing_when_undecided)
from tvtv.report import COUNTEREXAMPLE, UNKNOWN, Report, Result


def _as_module(m: Any, what: str) -> Any:
    if isinstance(m, (str, os.PathLike)):
        return tvm_bridge.load_module(m)
    if isinstance(m, tvm_bridge.IRModule):
        return m
    raise InputError(f"{what}: expected an IRModule or a path, got {type(m).__name__}")


def float_options(solver: str | None = None, assume: Any = None, inputs: str = "any") -> dict[str, Any]:
    """The `Options` fields for a solver choice, assumptions (no-nan, no-inf,
    no-signed-zeros) and a named input class (`inputs`: any, finite, no-nan; ValueError for
    another name), given as far as this tvtv's `Options` has them: a value left at its
    default (None, "z3", no assumption) is dropped when `Options` lacks the field; asking for
    anything else then is bad input."""
    have = {f.name for f in dataclasses.fields(Options)}
    if isinstance(assume, str):
        assume = [assume]
    if assume is not None:   # "no-nan,no-inf" and repeated values alike; order kept, no repeats
        assume = tuple(dict.fromkeys(a.strip() for item in assume for a in str(item).split(",") if a.strip()))
    given: dict[str, Any] = {}
    for name, value, default in (("solver", solver, "z3"), ("assume", assume, ())):
        if value is None:
            continue
        if name in have:
            given[name] = value
        elif value != default:
            raise InputError(f"this tvtv cannot use --{name} {value if isinstance(value, str) else ','.join(value)} "
                             f"yet (tvtv.refinement.Options has no '{name}')")
    if assume_mod.input_class_named(inputs):
        given["input_class"] = list(assume_mod.input_class_named(inputs))
    return given


# the reason of a check whose target TVM's well-formedness check rejects
ILL_FORMED = "the pass's output is ill-formed"


def verify(before: Any, after: Any, fp: str = "abstract", timeout: float = 30.0,
           pass_name: str | None = None, label: str | None = None, solver: str | None = None,
           assume: Any = None, **options: Any) -> Report:
    """Check that `after` refines `before` (IRModules or TVMScript paths), function by function.
    `solver` ("z3", "cvc5", "both") and `assume` (e.g. ["no-nan", "no-inf"]) go to `Options`."""
    confirm_vm = options.pop("confirm_vm", True)
    options.update(float_options(solver, assume))
    opts = Options(fp=fp, timeout=timeout, **options)
    before_mod, after_mod = _as_module(before, "before"), _as_module(after, "after")
    broken = tvm_bridge.ill_formed(after_mod)
    if broken is not None and tvm_bridge.ill_formed(before_mod) is None:
        # a pass that breaks TVM's own invariants (StaticPlanBlockMemory leaking a local
        # function's storage into the caller, docs/findings.md): say that, not what the
        # encoder trips over first
        src = relax_reader.read_module(before_mod)
        return Report([Result(result_label(src, fn.name, label), pass_name, UNKNOWN, 0.0,
                              f"{ILL_FORMED}: {broken}", fp_model=fp)
                       for fn in src.public_functions()])
    spec = passes.PASSES.get(pass_name) if pass_name else None
    if spec is not None and spec.via:
        return _verify_through(before_mod, after_mod, spec, opts, label, confirm_vm)
    return _verify_direct(before_mod, after_mod, pass_name, label, opts, confirm_vm,
                          lemmas=spec is not None and spec.lemmas)


def _verify_through(before: Any, after: Any, spec: passes.PassSpec, opts: Options,
                    label: str | None, confirm_vm: bool) -> Report:
    """`after` refines `before` through the modules after `spec.via` (`tvtv.compose`)."""
    via: list[tuple[str, Any]] = []
    mod = before
    try:
        for name in spec.via:
            mod = tvm_bridge.apply(passes.get(name).make(), mod)
            via.append((name, mod))
    except Exception:   # TVM rejected the module in a step alone: no chain, check directly
        via = []

    def direct() -> Report:
        return _verify_direct(before, after, spec.name, label, opts, confirm_vm)

    if not via:
        return direct()

    def step_check(a: Any, b: Any, step: str, step_label: str) -> Report:
        return verify(a, b, pass_name=step, label=step_label, confirm_vm=False,
                      **dataclasses.asdict(opts))

    src_prog, tgt_prog = relax_reader.read_module(before), relax_reader.read_module(after)

    def shown(a: Any, b: Any, j: int, cex: Any) -> bool | None:
        fn = src_prog.public_functions()[j]
        executed = _confirm_on_vm(a, b, fn, cex, opts) if confirm_vm else None
        # the IEEE model's word is asked only when execution does not show the difference
        # (it took its full 10 s, undecided, on zero graph 29's argmax finding that
        # execution shows in 3 s); not in the real model, where a bit of rounding is none
        if executed is not True and fn.name in tgt_prog.functions and opts.fp != "real":
            cex.confirmed_ieee = separates(src_prog, fn, tgt_prog, tgt_prog.functions[fn.name], cex,
                                           timeout=refine_timeout(opts.timeout))
        return executed

    report = compose.verify_through(before, after, via, spec.name, label, step_check, shown, direct)
    for r, fn in zip(report.results, src_prog.public_functions()):
        if confirm_vm:   # a step left undecided: the whole pass is tested end to end
            _test_undecided(r, before, after, fn, opts)
        _demote_poisoned(r, _run_poisoned(r, before, fn.name, opts), opts)
    return report


def _confirm_on_vm(before: Any, after: Any, fn: Any, cex: Any, opts: Options) -> bool | None:
    """`confirm.confirm` of `cex`, a counterexample of Relax function `fn` (its parameters
    name the inputs), under the check's assumptions and float model."""
    return confirm.confirm(before, after, fn.name, [p.name for p in fn.params], cex,
                           tuple(opts.assume), opts.fp, opts.input_class)


def _verify_direct(before: Any, after: Any, pass_name: str | None, label: str | None,
                   opts: Options, confirm_vm: bool, lemmas: bool = False,
                   tested: frozenset[int] = frozenset()) -> Report:
    """`verify` of `after` against `before` themselves (no chain of `via` modules); with
    `lemmas`, the source's operators are first proved alone (`tvtv.lemmas`). The public
    functions whose indices are in `tested` were already tested on drawn inputs in vain
    (`_test_undecided`, a retry's first check): not again."""
    src, tgt = relax_reader.read_module(before), relax_reader.read_module(after)
    proved = lemma_mod.prove_lemmas(before, opts) if lemmas else None
    lifted = _lifted(before, after, src, proved, opts, pass_name, label) if proved else None
    # counterexamples the check ran on the VM already (`run`): id -> (it, the answer)
    ran: dict[int, tuple[Any, bool | None]] = {}
    if lifted is not None:
        results = lifted
    else:
        def run(fname: str, cex: Any) -> bool | None:
            """`cex` of function `fname` confirmed on the VM during the check (`executing`),
            its answer kept for the confirmation below."""
            ran[id(cex)] = (cex, _confirm_on_vm(before, after, src.functions[fname], cex, opts))
            return ran[id(cex)][1]
        done = {fn.name for k, fn in enumerate(src.public_functions()) if k in tested}

        def test(fname: str) -> tuple[Any, str]:
            """`fname` tested on drawn inputs when its check first times out
            (`refinement.testing_when_undecided`), unless it was tested in vain already."""
            if fname in done:
                return None, NOTHING_SHOWN
            return _tested_early(before, after, src.functions[fname], opts)
        early = test if confirm_vm and opts.fp != "real" else None
        with operator_lemmas(proved), executing(run if confirm_vm else None), \
                testing_when_undecided(early):
            results = check_programs(src, tgt, opts, pass_name, label)
    if proved is not None:   # the lemmas are part of the check: their time counts
        for r in results:
            r.levels.insert(0, proved.describe())
            r.seconds += proved.seconds
    if confirm_vm:
        for k, (r, fn) in enumerate(zip(results, src.public_functions())):
            if r.counterexample is not None and r.confirmed is not True:
                # one the check ran and execution did not show (the abstract counterexample
                # that stood when the IEEE model timed out) is not run again
                cex, answer = ran.get(id(r.counterexample), (None, None))
                r.confirmed = answer if cex is r.counterexample else \
                    _confirm_on_vm(before, after, fn, r.counterexample, opts)
                # confirmation may replace the counterexample by one that execution shows
                r.reason = r.counterexample.message
                _demote_unshown(r, opts.fp)
            _confirm_candidate(r, before, after, fn, opts, ran)
            if k not in tested:
                _test_undecided(r, before, after, fn, opts)
    fns = src.public_functions()
    poisoned = [_run_poisoned(r, before, fn.name, opts) for r, fn in zip(results, fns)]
    why = [_finite_retry_reason(r, p, opts, confirm_vm) for r, p in zip(results, poisoned)]
    if any(why):
        # look again among the runs that are not poison, which is what per-operation asks
        # about (the retry's own results are already judged by the same rule)
        retry = _verify_direct(before, after, pass_name, label,
                               dataclasses.replace(opts, finite_runs=True), confirm_vm, lemmas,
                               tested=frozenset(k for k, r in enumerate(results)
                                                if why[k] and NOTHING_SHOWN in r.levels))
        for k, r in enumerate(results):
            if why[k]:
                again = retry.results[k]
                again.seconds += r.seconds
                again.levels[:0] = [*r.levels, f"per-operation: {why[k]}; checked again on runs "
                                               f"without NaN/inf inside"]
                results[k] = again
    for k, (r, p, retried, fn) in enumerate(zip(results, poisoned, why, fns)):
        if not retried and _demote_poisoned(r, p, opts) and opts.finite_runs and confirm_vm \
                and k not in tested:
            # on the runs without NaN/inf inside, a counterexample whose IEEE run is poison
            # all the same says nothing about those runs (the abstract model's sums may stay
            # finite where IEEE's overflow; which model Z3 picks depends on the terms earlier
            # checks in the process made: in a full-suite run from a clean clone
            # tests/test_lemmas.py's relu twin ended `unknown` in 0.4 s, where it passes
            # alone). So it is tested on drawn inputs, as an undecided check is; under
            # per-operation testing counts only runs without NaN/inf inside.
            _test_on_drawn_inputs(r, before, after, fn, opts, "a poisoned run")
    return Report(results)


def _lifted(before: Any, after: Any, src: Any, lemmas: Any, opts: Options, pass_name: str | None,
            label: str | None) -> list[Result] | None:
    """Under per-operation, when an operator lemma was refuted on finite values: for each
    public function a counterexample lifted from it (`tvtv.lift`), confirmed by the
    specification against the VM; None unless every function has one (then the whole-graph
    check runs as usual). Not in the real model: the lift's evidence compares IEEE values
    with the VM's bit for bit, and that model allows rounding."""
    if not lemmas.refuted_finite or opts.fp == "real":
        return None
    fns = src.public_functions()
    results = []
    for fn in fns:
        start = time.perf_counter()
        found = lift.lift(before, after, fn.name, [p.name for p in fn.params],
                          lemmas.refuted_finite, opts.assume)
        if found is None:
            return None
        cex, op, how = found
        name = fn.name if label is None else (label if len(fns) == 1 else f"{label}:{fn.name}")
        levels = [f"counterexample lifted from the {op} lemma refuted on finite values: {how}; "
                  f"the source's specification (IEEE) and the target's execution on the VM "
                  f"differ, on a run without NaN/inf inside", *opts.settings()]
        results.append(Result(name, pass_name, COUNTEREXAMPLE, time.perf_counter() - start,
                              cex.message, cex, opts.fp, levels,
                              opts.described(), confirmed=True))
    return results


def _per_operation_cex(r: Result, opts: Options) -> bool:
    return (r.verdict == COUNTEREXAMPLE and r.counterexample is not None
            and assume_mod.PER_OPERATION in opts.assume)


def _finite_retry_reason(r: Result, poisoned: bool | None, opts: Options,
                         confirm_vm: bool) -> str | None:
    """Under per-operation, why `r` is checked again on the runs without NaN/inf inside
    (`Options.finite_runs`), or None. The poisoned runs, which per-operation excludes, may be
    all that stood in the way:
    - a counterexample whose run is poison (`poisoned`, `_run_poisoned`);
    - a check the solver left undecided: zero seed-0 graph 19's step after LegalizeOps (a
      clipped variance's v - v, which TVM folds to 0) timed out on all runs, and the whole
      check was proved in 173 s on the runs without NaN/inf inside (2026-11-30);
    - a counterexample that nothing shows (`_demote_unshown`; in a chain's step, which is not
      confirmed on the VM, one the IEEE model does not separate): the abstraction's exp may
      be inf where the true exp is finite, so exp(x) - exp(x) may be NaN there, a run that
      IEEE evaluation finds without poison; on the runs without it the difference is +0."""
    if not assume_mod.per_operation(opts.assume) or opts.finite_runs:
        return None
    if poisoned is True:
        return f"the counterexample's run is poison ({r.counterexample.message})"
    if _solver_undecided(r):
        return f"undecided ({r.reason})"
    if r.verdict == UNKNOWN and (r.reason or "").startswith(POISONED_RUN):
        return r.reason
    if confirm_vm and r.verdict == UNKNOWN and UNCONFIRMED in r.levels:
        return r.reason
    # (a lifted counterexample is confirmed already: the VM against the specification)
    if not confirm_vm and r.verdict == COUNTEREXAMPLE and poisoned is False \
            and r.confirmed is not True and r.counterexample.confirmed_ieee is not True:
        return (f"counterexample not separated by the IEEE model on its inputs "
                f"({r.counterexample.message})")
    return None


def _run_poisoned(r: Result, before: Any, fname: str, opts: Options) -> bool | None:
    """For a counterexample under per-operation: does the source, evaluated on its inputs
    (`confirm.poisoned_inside`), compute a NaN/inf in a tensor its outputs are computed from
    (None: cannot tell)? False for any other result."""
    if not _per_operation_cex(r, opts):
        return False
    return confirm.poisoned_inside(before, fname, r.counterexample.inputs, opts.assume)


def _demote_poisoned(r: Result, poisoned: bool | None, opts: Options) -> bool:
    """Under per-operation a counterexample must be a run in which the source computes no
    NaN/inf in a tensor its outputs are computed from (such a run is poison as a whole);
    `poisoned` is `_run_poisoned(r, ...)`. A poisoned or undecidable run makes the verdict
    `unknown`, with the reason; True when it did."""
    cex = r.counterexample
    if not _per_operation_cex(r, opts) or cex is None:
        return False
    if poisoned is False:
        r.levels.append("per-operation: the counterexample's run computes no NaN/inf inside")
        return False
    why = ("the source computes a NaN or an infinity inside on its inputs (per-operation: the "
           "run is poison)" if poisoned else "whether the source computes a NaN or an infinity "
           "inside on its inputs cannot be evaluated (an opaque function)")
    r.verdict, r.reason = UNKNOWN, f"counterexample not valid under per-operation ({cex.message}): {why}"
    r.levels.append("per-operation: counterexample not valid: unknown")
    r.counterexample, r.confirmed = None, None
    return True


NOTHING_SHOWN = "testing on drawn inputs: no difference shown"
# part of the level `_test_undecided` adds when testing shows the difference
TESTING_FOUND = "testing on drawn inputs found the difference"
# the level `_demote_unshown` adds
UNCONFIRMED = "counterexample unconfirmed: unknown"
# the reason of an `unknown` the solver left undecided (`refinement._check_function`), also
# as a step's reason in a chain (`compose.verify_through`: "LegalizeOps step: timeout ...")
_UNDECIDED = re.compile(r"^(?:[\w ]+ step: )?(?:timeout after|no abstraction level decided)")


def _solver_undecided(r: Result) -> bool:
    """Is `r` an `unknown` because the solver did not decide (`_UNDECIDED`)?"""
    return r.verdict == UNKNOWN and _UNDECIDED.match(r.reason or "") is not None


def _confirm_candidate(r: Result, before: Any, after: Any, fn: Any, opts: Options,
                       ran: dict[int, tuple[Any, bool | None]] | None = None) -> None:
    """A check the solver left undecided after a coarser level found a counterexample it
    could not confirm (`Result.candidate`): that counterexample is run as any other is
    (`confirm.confirm`: the VM on its inputs and on seeded random ones, then the IEEE
    specification; in the real model, exact real evaluation). Shown, it is the verdict, and
    the levels say that the solver did not decide; not shown, the verdict stays `unknown`
    with its reason (under op-rounding `confirm.confirm_case` leaves out the comparisons
    that rounding alone could pass).

    Measured (2026-11-29): AdjustMatmulOrder's x@(a@b) -> (x@a)@b timed out on the last rung
    (small sums unrolled) in one CI run, after three levels had each found an unconfirmed
    counterexample; the VM shows the difference on random inputs at once."""
    cex, r.candidate = r.candidate, None
    if cex is None or not _solver_undecided(r):
        return
    # one the check ran already (`executing`: climbed past because execution did not show
    # it) is not run again; confirmation is seeded, and the second run gave the same answer
    # in the same time (GenCoG seed-0 graph 5 under LegalizeOps: 211 s, then 219 s)
    done, answer = (ran or {}).get(id(cex), (None, None))
    if done is cex:
        shown = answer
    else:
        start = time.perf_counter()
        shown = _confirm_on_vm(before, after, fn, cex, opts)
        r.seconds += time.perf_counter() - start
    if shown is not True:
        return
    r.levels.append(f"undecided by the solver ({r.reason}); a coarser level's counterexample, "
                    f"unconfirmed there, is shown: {confirm.HOW.get(cex.confirmed_by, cex.confirmed_by)}")
    r.verdict, r.reason, r.counterexample, r.confirmed = COUNTEREXAMPLE, cex.message, cex, True


def _test_undecided(r: Result, before: Any, after: Any, fn: Any, opts: Options) -> None:
    """A check the solver left undecided is tested on drawn inputs
    (`confirm.search_by_testing`): a difference it finds is a counterexample, confirmed as
    found, and the levels say that the solver did not decide. Otherwise the verdict stays
    `unknown`, with its reason. A result already tested is left alone (a chain that falls
    back to the direct check gets that check's results, tested there). Not in the real
    model: testing compares IEEE values bit for bit, and that model allows rounding."""
    if _solver_undecided(r):
        _test_on_drawn_inputs(r, before, after, fn, opts, "undecided by the solver")


def drawn_input_difference(before: Any, after: Any, fn: Any, assume: tuple[str, ...],
                           budget: float = confirm.TESTING_BUDGET,
                           input_class: tuple[str, ...] = ()) -> Any:
    """`confirm.search_by_testing` of Relax function `fn` (tvtv's reading of `before`'s) on
    inputs of `input_class`: (counterexample, how) or None, also when a parameter is not a
    tensor (testing draws tensors only)."""
    if not all(isinstance(p.ty, P.TensorType) for p in fn.params):
        return None
    params = [(p.name, p.ty.shape, p.ty.dtype) for p in fn.params]
    return confirm.search_by_testing(before, after, fn.name, params, assume, budget, input_class)


# the start of the level of a check decided by testing when it first timed out
TESTED_BEFORE_CLIMBING = "timed out before refining"


def _tested_early(before: Any, after: Any, fn: Any, opts: Options) -> tuple[Any, str]:
    """Relax function `fn` tested on drawn inputs (`drawn_input_difference`, the whole
    `confirm.TESTING_BUDGET`) when its check's first query timed out, before the ladder
    climbs: (the counterexample or None, the level saying what testing showed). Nothing
    shown is `NOTHING_SHOWN`, so the check is not tested again after the ladder (the sets are
    seeded: it would evaluate the same ones). Only called where `_test_on_drawn_inputs` would
    test (confirmation on, not the real model)."""
    found = drawn_input_difference(before, after, fn, tuple(opts.assume),
                                   input_class=opts.input_class)
    if found is None:
        return None, NOTHING_SHOWN
    cex, how = found
    return cex, f"{TESTED_BEFORE_CLIMBING}; {TESTING_FOUND}: {how.detail}"


def _test_on_drawn_inputs(r: Result, before: Any, after: Any, fn: Any, opts: Options,
                          what: str) -> None:
    """`confirm.search_by_testing` for `r`, an `unknown` (`what` says why): a difference it
    finds makes `r` that counterexample; otherwise the levels say nothing was shown. Not in
    the real model (testing compares IEEE values bit for bit, and that model allows
    rounding), nor twice for one result."""
    if opts.fp == "real" or NOTHING_SHOWN in r.levels:
        return
    start = time.perf_counter()
    found = drawn_input_difference(before, after, fn, tuple(opts.assume), input_class=opts.input_class)
    r.seconds += time.perf_counter() - start
    if found is None:
        r.levels.append(NOTHING_SHOWN)
        return
    cex, how = found
    r.levels.append(f"{what} ({r.reason}); {TESTING_FOUND}: {how.detail}")
    r.verdict, r.reason, r.counterexample, r.confirmed = COUNTEREXAMPLE, cex.message, cex, True


def _demote_unshown(r: Result, fp: str = "abstract") -> None:
    """A counterexample that nothing shows is not evidence that the pass changed anything.

    It is shown when the IEEE model separates source and target on its inputs for every
    interpretation of the uninterpreted functions (`confirmed_ieee`), or when execution or
    the IEEE specification shows it (`confirmed`). Otherwise the difference may exist only in
    the abstraction: the IEEE model timed out, or the values depend on an uninterpreted
    function (erf, exp: "for some erf they differ" is no bug), or two uninterpreted
    functions stand for one operation. As Alive2 does when approximations were made, the
    verdict is then `unknown`, with the reason."""
    cex = r.counterexample
    if r.verdict != COUNTEREXAMPLE or cex is None or r.confirmed is True or cex.confirmed_ieee is True:
        return
    why = "the IEEE model timed out" if IEEE_TIMED_OUT in r.levels else \
        "the IEEE model does not separate source and target on its inputs for every value of " \
        "the uninterpreted functions"
    shown = "neither execution on the VM nor the IEEE specification shows it" \
        if r.confirmed is False else "it could not be run on the VM" + \
        (f" ({cex.not_run_detail})" if cex.not_run_detail else "")
    if fp == "real":    # (`confirm._confirm_in_real`: the VM's values are not compared)
        why = ("exact real evaluation does not separate source and target on its inputs (nor on "
               "seeded random ones) for every value of exp, erf, ... near their true values")
        shown = "no VM run fails or changes a type" if r.confirmed is False else shown
    r.verdict = UNKNOWN
    r.reason = f"unconfirmed counterexample ({cex.message}): {why}, and {shown}"
    r.levels.append(UNCONFIRMED)
    r.counterexample, r.confirmed = None, None


def resolve_pass(pass_or_name: Any) -> tuple[str, list[Any], Any]:
    """(name, prerequisite passes, pass object) for a registered name or a TVM pass."""
    if isinstance(pass_or_name, str):
        spec = passes.get(pass_or_name)
        return spec.name, [passes.get(p).make() for p in spec.prerequisites], spec.make()
    if tvm_bridge.is_pass(pass_or_name):
        name = tvm_bridge.pass_name(pass_or_name)
        spec = passes.PASSES.get(name)
        pre = [passes.get(p).make() for p in spec.prerequisites] if spec else []
        return name, pre, pass_or_name
    raise InputError(f"expected a pass name or a tvm.transform.Pass, got {type(pass_or_name).__name__}")


class PassFailed(Exception):
    """TVM rejected the module in the pass or a prerequisite, or crashed on it: `reason` says
    which, with TVM's last line (`errors.failure_reason`)."""

    def __init__(self, name: str, reason: str, seconds: float) -> None:
        super().__init__(reason)
        self.name, self.reason, self.seconds = name, reason, seconds

    def result(self, label: str, fp: str = "abstract") -> Result:
        return Result(label, self.name, UNKNOWN, self.seconds, self.reason, fp_model=fp)


def run_pass(pass_or_name: Any, mod: Any) -> tuple[str, Any, Any, float]:
    """(pass name, source, target, seconds): the source is `mod` after the pass's
    prerequisites, the target that module after the pass. Raises PassFailed when TVM rejects
    the module."""
    name, pre, pass_obj = resolve_pass(pass_or_name)
    start = time.perf_counter()
    try:
        for p in pre:
            mod = tvm_bridge.apply(p, mod)
        after = tvm_bridge.apply(pass_obj, mod)
    except TvtvError:
        raise
    except Exception as err:  # TVM errors: the pass (or a prerequisite) rejected the module
        raise PassFailed(name, failure_reason("the pass", err), time.perf_counter() - start) from None
    return name, mod, after, time.perf_counter() - start


def check_pass(pass_or_name: Any, module: Any, fp: str = "abstract", timeout: float = 30.0,
               label: str | None = None, **options: Any) -> Report:
    """Run the pass (after its prerequisites) on `module` and check the result refines its
    input. A pass that crashes makes the verdict `unknown` with TVM's message."""
    mod = _as_module(module, "module")
    try:
        name, source, target, pass_seconds = run_pass(pass_or_name, mod)
    except PassFailed as failed:
        return Report([failed.result(label or failed.name, fp)])
    label = label or name
    report = verify(source, target, fp=fp, timeout=timeout, pass_name=name, label=label, **options)
    for r in report.results:   # a result's time is the whole case: the pass and the check
        r.seconds += pass_seconds
    return report


def registered_passes() -> list[str]:
    return passes.registered_passes()


def check_pipeline(pipeline: Any, module: Any, fp: str = "abstract", timeout: float = 30.0,
                   label: str | None = None, **options: Any) -> Report:
    """Run a pipeline (a name such as "zero", a .py/.json file, or a tvm.transform.Pass) on
    `module` and validate each pass application (see `tvtv.pipeline`): one result per
    application, labelled `LABEL:PASS#k`."""
    from tvtv import pipeline as pl
    pass_obj = pl.load_pipeline(pipeline)[1] if isinstance(pipeline, str) else pipeline
    if not tvm_bridge.is_pass(pass_obj):
        raise InputError(f"expected a pipeline name, file or tvm.transform.Pass, got {type(pipeline).__name__}")

    def run_verify(before: Any, after: Any, pass_name: str | None, label: str) -> Report:
        return verify(before, after, fp=fp, timeout=timeout, pass_name=pass_name, label=label,
                      **options)
    pairs = pl.check_pipeline(pass_obj, _as_module(module, "module"), label or "module", run_verify)
    return Report([r for _, r in pairs])
