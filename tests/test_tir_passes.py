"""Passes validated through PrimFunc bodies (LegalizeOps, AnnotateTIROpPattern, FuseTIR, the
`zero` pipeline, FuseTransposeMatmul, RewriteDataflowReshape): a correct pair is proved, a
broken twin refuted with inputs that really separate the two; FastMathTransform (an
approximation) is refuted. The same checks as tests/test_passes.py, on TIR_PASS_CASES."""
from __future__ import annotations

import math

import pytest

import tvtv
from tvm.script import ir as I
from tvm.script import relax as R
from tests.conftest import mutate
from tests.pass_cases import TIR_PASS_CASES
from tvtv import passes
from tvtv.ir import tvm_bridge

CASES = {c.pass_name: c for c in TIR_PASS_CASES}


def test_every_tir_validated_pass_has_a_case():
    tir = [n for n, s in passes.PASSES.items() if s.support == passes.TIR_VALIDATED]
    assert sorted(set(tir) - {"FastMathTransform"}) == sorted(CASES)


@pytest.mark.parametrize("name", sorted(CASES))
def test_pass_is_proved_and_changes_the_module(name):
    case = CASES[name]
    spec = passes.get(name)
    source = passes.prepare(spec, case.before)
    target = tvm_bridge.apply(spec.make(), source)
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
    assert result.counterexample.confirmed_ieee or result.confirmed, result.to_dict()


@I.ir_module
class Exp:
    @R.function
    def main(x: R.Tensor((64,), "float32")) -> R.Tensor((64,), "float32"):
        y = R.exp(x)
        return y


def test_fast_math_transform_is_refuted_by_the_approximation():
    """fast_exp's polynomial (reinterpret, shifts: IEEE model) differs from exp: the VM shows
    it on ordinary inputs (the source's exp is libm's, the target's the polynomial)."""
    (r,) = tvtv.check_pass("FastMathTransform", Exp).results
    assert r.verdict == "counterexample", r.to_dict()
    assert any("reinterpret" in lv for lv in r.levels)       # climbed to the IEEE model
    assert r.confirmed, r.to_dict()
    src, tgt = r.to_dict()["counterexample"]["executed_values"]
    assert math.isfinite(src) and math.isfinite(tgt) and src != tgt
    assert abs(src - tgt) <= 1e-5 * abs(src)                    # an approximation, close
