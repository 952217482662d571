"""The float-model-dependent passes on their hand-written cases (tests/fp_pass_cases.py).

For each case: the pass changes the module; its output gets the expected verdict in the default
(abstract) model and in the real model (`--fp real`: correct up to rounding); a broken twin of
the output is refuted, with inputs that separate source and target in exact IEEE evaluation or
on the TVM VM. The IEEE column of the table in docs/float-models.md comes from
`bench/float_models_table.py` (too slow for the unit tests on a shared machine).
"""
from __future__ import annotations

import numpy as np
import pytest

import tvtv
from tests.conftest import mutate
from tests.fp_pass_cases import CASES, CEX, PROVED
from tvtv import passes
from tvtv.ir import tvm_bridge

IDS = [f"{c.pass_name}-{c.label}" for c in CASES]


def _run(case):
    src = case.build()
    return src, tvm_bridge.apply(passes.get(case.pass_name).make(), src)


def test_every_float_pass_is_registered_and_has_a_case():
    names = {c.pass_name for c in CASES}
    for n in names:
        assert n in passes.PASSES
    assert {"FoldConstant", "ToMixedPrecision", "ConvertLayout", "AdjustMatmulOrder",
            "ExpandMatmulOfSum", "FoldBatchnormToConv2D", "ReorderTakeAfterMatmul",
            "CombineParallelMatmul", "DecomposeOpsForInference"} <= names
    settings = {c.label for c in CASES if c.pass_name == "DecomposeOpsForInference"}
    assert len(settings) == 8     # center x scale x axis


# 30 s per query: every expected verdict here is decisive, so a generous limit costs time only
# where the solver is slow. At 10 s, AdjustMatmulOrder's abstract check (its last rung, small
# sums unrolled) timed out on a slower machine (2026-11-29: 74 s and `unknown` alone, 144 s
# and the counterexample at 30 s)
SOLVER_TIMEOUT = 30


@pytest.mark.slow   # about 3 min for the 17 cases on a shared machine, 5 min on a slower one
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_pass_output_verdict_in_default_and_real_model(case):
    src, tgt = _run(case)
    assert not tvm_bridge.structural_equal(src, tgt), f"{case.pass_name} did nothing"
    for fp in ("abstract", "real"):
        assume = list(case.real_assume) if fp == "real" else []
        r = tvtv.verify(src, tgt, fp=fp, timeout=SOLVER_TIMEOUT, confirm_vm=(fp == "abstract"),
                        assume=assume).results[0]
        assert r.verdict == case.expect[fp], (fp, r.to_dict())
        if fp == "real":
            assert "fp: real (correct up to rounding only)" in r.levels
        if fp == "real" and r.verdict == PROVED and case.real_assume:
            # the twin: the same assumptions do not make a broken target pass
            broken = mutate(tgt, case.old, case.new)
            rb = tvtv.verify(src, broken, fp=fp, timeout=SOLVER_TIMEOUT, confirm_vm=False,
                             assume=assume).results[0]
            assert rb.verdict == CEX, ("real twin", rb.to_dict())
        if r.verdict == CEX and fp == "abstract":
            # the default model's counterexample is a real difference: exact IEEE evaluation
            # or execution on the TVM VM shows it
            assert r.counterexample.confirmed_ieee or r.confirmed, r.to_dict()


@pytest.mark.slow
@pytest.mark.parametrize("case", [c for c in CASES if c.expect["abstract"] == PROVED], ids=lambda c: f"{c.pass_name}-{c.label}")
def test_broken_twin_refuted(case):
    src, tgt = _run(case)
    broken = mutate(tgt, case.old, case.new)
    r = tvtv.verify(src, broken, timeout=20).results[0]
    assert r.verdict == CEX, r.to_dict()
    assert r.counterexample.confirmed_ieee or r.confirmed, r.to_dict()


def test_mixed_precision_refuted_in_default_model_proved_in_real():
    """A pass that changes a value's precision is refuted in the default model, with inputs
    the TVM VM confirms; the real model proves it correct up to rounding."""
    case = next(c for c in CASES if c.pass_name == "ToMixedPrecision")
    src, tgt = _run(case)
    r = tvtv.verify(src, tgt, timeout=10).results[0]
    assert r.verdict == CEX and (r.counterexample.confirmed_ieee or r.confirmed), r.to_dict()
    r = tvtv.verify(src, tgt, fp="real", timeout=10, confirm_vm=False).results[0]
    assert r.verdict == PROVED and "fp: real (correct up to rounding only)" in r.levels


def test_fold_constant_checked_against_ieee_evaluation():
    """A folded constant one ulp off is refuted; the right fold is proved."""
    case = next(c for c in CASES if c.label == "inexact fold")
    src, tgt = _run(case)
    script, consts = tvm_bridge.module_to_script(tgt)
    assert len(consts) == 1
    off = consts[0].copy()
    off.flat[0] = np.nextafter(off.flat[0], np.float32(np.inf))
    broken = tvm_bridge.parse_script(script, [off])
    r = tvtv.verify(src, broken, timeout=20, confirm_vm=False).results[0]
    assert r.verdict == CEX and r.counterexample.confirmed_ieee, r.to_dict()
    assert r.counterexample.source_value != r.counterexample.target_value
