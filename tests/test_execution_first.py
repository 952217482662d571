"""A counterexample that evaluation in the IEEE model does not show is run on the VM before the
IEEE model is asked (`refinement.executing`, set by `tvtv.api` when it confirms on the VM).

ExpSource (`exp(x) - exp(x) == itself`) against AllTrue: without per-operation exp's overflow
is a real difference, which the VM shows (false against true where exp(x) is inf), while the
IEEE evaluation of the abstract counterexample's inputs cannot (its exp is uninterpreted).
"""
from __future__ import annotations

import numpy as np

import tvtv
from tvtv import refinement
from tvtv.refinement import SHOWN_BY_EXECUTION

from tests.per_operation_cases import AllFalse, AllTrue, ExpSource

FINITE_INPUTS = ["no-nan", "no-inf"]


def test_a_counterexample_execution_shows_is_the_verdict_at_once():
    r = tvtv.verify(ExpSource, AllTrue, timeout=30, assume=FINITE_INPUTS).results[0]
    assert r.verdict == "counterexample" and r.confirmed is True, r.to_dict()
    assert SHOWN_BY_EXECUTION in r.levels, r.levels
    # the IEEE model was not asked and no level was climbed
    assert not any(lv.startswith("fp: ieee") or "refining" in lv for lv in r.levels), r.levels
    with np.errstate(over="ignore"):
        assert np.isinf(np.exp(np.float32(r.counterexample.inputs["x"]))).any()


def test_without_confirmation_on_the_vm_nothing_is_run_first(monkeypatch):
    """`confirm_vm=False`: no execution hook, so the check goes on as the solver decides
    (the IEEE model is asked about the abstract counterexample), and never claims to be
    confirmed."""
    calls: list[str] = []
    real = refinement.executing

    def spy(run):
        calls.append("set" if run is not None else "none")
        return real(run)
    monkeypatch.setattr("tvtv.api.executing", spy)
    r = tvtv.verify(ExpSource, AllTrue, timeout=30, assume=FINITE_INPUTS,
                    confirm_vm=False).results[0]
    assert calls == ["none"], calls
    assert SHOWN_BY_EXECUTION not in r.levels, r.levels
    assert r.confirmed is not True, r.to_dict()


def test_a_counterexample_execution_does_not_show_goes_up_the_ladder(monkeypatch):
    """The twin: under per-operation, with the poison test turned off, the abstraction's
    counterexample (its exp inf where the true exp is finite) is run, not shown (the VM's
    exp is finite there, and drawn inputs whose run overflows are poison), and the check
    goes on; on the runs without NaN/inf inside it is proved. Each input set is run once
    per check."""
    monkeypatch.setattr(refinement, "_poisoned_in_model", lambda enc, m: None)
    runs: list[bool | None] = []
    real = refinement.executing

    def spy(run):
        def counted(fname, cex):
            runs.append(run(fname, cex))
            return runs[-1]
        return real(counted if run is not None else None)
    monkeypatch.setattr("tvtv.api.executing", spy)
    r = tvtv.verify(ExpSource, AllTrue, timeout=30,
                    assume=["no-nan", "no-inf", "per-operation"]).results[0]
    assert r.verdict == "proved", r.to_dict()
    assert runs and not any(runs), runs
    assert SHOWN_BY_EXECUTION not in r.levels, r.levels


def test_a_real_difference_on_finite_runs_is_still_found_and_confirmed():
    """AllFalse differs from ExpSource on every run: a counterexample, confirmed, whichever
    way (the IEEE evaluation shows this one without the VM)."""
    r = tvtv.verify(ExpSource, AllFalse, timeout=30, assume=FINITE_INPUTS).results[0]
    assert r.verdict == "counterexample" and r.confirmed is True, r.to_dict()
