"""Checking a pass through intermediate modules: refinement is transitive.

A pass that is a pipeline of others (the `zero` pipeline: LegalizeOps, AnnotateTIROpPattern,
FoldConstant, FuseOps, FuseTIR) is checked as `source ⊑ M1 ⊑ target`, where M1 is the source
after the pass's `via` passes (`tvtv.passes.PassSpec.via`), computed here by running them
again. Any module both steps go through will do: the proof needs M1 to exist, not to be the
pipeline's own. Each step gets the check that suits it: LegalizeOps its operator lemmas
(`tvtv.lemmas`), the rest compares TIR with TIR as the FuseTIR check does. Checked whole,
the Relax specifications and the fused loops meet only at the outputs of a deep graph, where
the terms no longer line up.

Why a chain of proofs is a proof, assumptions included: refinement (`tvtv.refinement`) says
that for every input meeting the input assumptions, the source is undefined, or the target is
defined and each output element is poison in the source (NaN under no-nan, ±inf under no-inf)
or equal to it (±0 equal under no-signed-zeros). If M0's element is not poison and M1's
equals it, M1's element is not poison either (equality up to the sign of zero keeps a value
finite or not, NaN or not), so M2's equals M1's, hence M0's; and M0 defined makes M1 defined.

Verdicts, per function:
- every step proved: `proved`, with each step's levels;
- a step's counterexample: its inputs are checked end to end, source against final target
  (the IEEE model on both programs, execution on the VM, the IEEE specification). Shown:
  `counterexample`. Not shown, but a real difference of the step (the IEEE model separates
  the step's modules: a later pass may undo it): the source is checked directly against the
  target, as for any pass. Not shown anywhere: `unknown`, an unconfirmed counterexample;
- a step's `unknown`: `unknown`, naming the step.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

from tvtv.report import COUNTEREXAMPLE, PROVED, UNKNOWN, Report, Result

TRANSITIVE = "checked through {chain}: each step refines the one before, and refinement is transitive"

# verify(before, after, pass_name, label) -> Report, without execution on the VM
StepCheck = Callable[[Any, Any, str, str], Report]
# shown(before, after, function index, counterexample): sets the counterexample's
# `confirmed_ieee` (the IEEE model separates `before` and `after` on its inputs) and returns
# whether execution on the VM or the IEEE specification shows it (None: not run)
EndToEnd = Callable[[Any, Any, int, Any], "bool | None"]


def verify_through(before: Any, after: Any, via: Sequence[tuple[str, Any]], pass_name: str,
                   label: str | None, step_check: StepCheck, shown: EndToEnd,
                   direct: Callable[[], Report]) -> Report:
    """The verdicts of `after` refining `before` through the modules `via` (name, module)
    (see the module doc). `direct()` is the plain check, used when a step's counterexample is
    not shown end to end."""
    chain = [("source", before), *via, (pass_name, after)]
    names = [name for name, _ in chain[1:]]
    steps: list[tuple[str, list[Result]]] = []
    for k in range(1, len(chain)):
        step = names[k - 1] if k < len(chain) - 1 else f"{pass_name} after {names[k - 2]}"
        report = step_check(chain[k - 1][1], chain[k][1], step, label or pass_name)
        steps.append((step, report.results))
        if any(r.verdict != PROVED for r in report.results):
            break
    counts = {len(rs) for _, rs in steps}
    if len(counts) != 1:
        return direct()   # the steps do not see the same functions: no chain to follow
    merged: list[Result] = []
    redo_direct = False
    chain_text = " -> ".join(["source", *names[:-1], pass_name])
    for j in range(counts.pop()):
        per_step = [(step, rs[j]) for step, rs in steps]
        levels = [TRANSITIVE.format(chain=chain_text)]
        for step, r in per_step:
            levels.extend(f"{step}: {lv}" for lv in r.levels)
        seconds = sum(r.seconds for _, r in per_step)
        first = per_step[0][1]
        bad = next(((step, r) for step, r in per_step if r.verdict != PROVED), None)
        if bad is None:
            merged.append(Result(first.name, pass_name, PROVED, seconds, fp_model=first.fp_model,
                                 levels=levels, assumptions=first.assumptions))
            continue
        step, r = bad
        if r.verdict == COUNTEREXAMPLE and r.counterexample is not None:
            cex = r.counterexample
            real_at_step = cex.confirmed_ieee is True
            cex.confirmed_ieee = None       # it separated the step's modules, not these
            executed = shown(before, after, j, cex)
            if executed is True or cex.confirmed_ieee is True:
                merged.append(Result(first.name, pass_name, COUNTEREXAMPLE, seconds,
                                     f"{cex.message} (found at the {step} step, shown end to end)",
                                     cex, r.fp_model, levels, first.assumptions, confirmed=executed))
                continue
            if real_at_step:   # a real difference of the step that later passes may undo
                redo_direct = True
                break
            # not even the step's modules are shown to differ: the abstraction may have
            # invented it (as `tvtv.api` treats an unconfirmed counterexample)
            merged.append(Result(first.name, pass_name, UNKNOWN, seconds,
                                 f"{step} step: unconfirmed counterexample ({cex.message}): "
                                 f"neither that step's IEEE evaluation nor the final target shows it",
                                 None, r.fp_model, levels + ["counterexample unconfirmed: unknown"],
                                 first.assumptions))
            continue
        merged.append(Result(first.name, pass_name, UNKNOWN, seconds,
                             f"{step} step: {r.reason}", None, r.fp_model, levels, first.assumptions))
    if redo_direct:
        report = direct()
        for r in report.results:
            r.levels.insert(0, "a step's counterexample was not shown end to end: checked directly")
        return report
    return Report(merged)
