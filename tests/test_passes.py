"""Every pass tvtv validates: a hand-written correct pair is proved, a broken twin refuted,
and the refuting inputs really separate source and target (IEEE evaluation or the TVM VM)."""
from __future__ import annotations

import pytest

import tvtv
from tests.conftest import mutate
from tests.pass_cases import PASS_CASES
from tvtv import passes
from tvtv.ir import tvm_bridge

CASES = {c.pass_name: c for c in PASS_CASES}


def test_every_validated_pass_has_a_case():
    validated = [n for n, s in passes.PASSES.items() if s.support == passes.VALIDATED]
    assert sorted(validated) == sorted(CASES)


def test_every_pass_marked_validated_is_tested_somewhere():
    """Relax-level cases here, TIR cases in tests/test_tir_passes.py, float-model cases in
    tests/test_passes_fp.py, the memory model's in tests/test_memory.py; FastMathTransform is
    only ever refuted (test_tir_passes.py)."""
    from tests.fp_pass_cases import CASES as FP_CASES
    from tests.pass_cases import TIR_PASS_CASES
    from tests.test_memory import MEMORY_PASSES
    covered = set(CASES) | {c.pass_name for c in TIR_PASS_CASES} | {c.pass_name for c in FP_CASES}
    covered |= set(MEMORY_PASSES)
    covered.add("FastMathTransform")
    marked = {n for n, s in passes.PASSES.items() if s.support.startswith("validated")}
    assert marked <= covered, sorted(marked - covered)


@pytest.mark.parametrize("name", sorted(CASES))
def test_pass_is_proved_and_changes_the_module(name):
    case = CASES[name]
    spec = passes.get(name)
    source = passes.prepare(spec, case.before)
    target = tvm_bridge.apply(spec.make(), source)
    # the case must exercise the pass, or the proof says nothing
    assert not tvm_bridge.structural_equal(source, target), f"{name} did nothing on its case"
    report = tvtv.check_pass(name, case.before)
    assert [r.verdict for r in report.results] == ["proved"], report.to_dict()


@pytest.mark.parametrize("name", sorted(CASES))
def test_broken_twin_is_refuted(name):
    case = CASES[name]
    spec = passes.get(name)
    source = passes.prepare(spec, case.before)
    target = tvm_bridge.apply(spec.make(), source)
    broken = mutate(target, case.old, case.new)
    report = tvtv.verify(source, broken)
    (result,) = report.results
    assert result.verdict == "counterexample", result.to_dict()
    cex = result.counterexample
    # the inputs must really separate the two: in exact IEEE evaluation, or by execution
    assert cex.confirmed_ieee or result.confirmed, result.to_dict()
    assert report.exit_code() == 1
