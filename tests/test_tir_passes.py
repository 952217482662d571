"""Passes validated through PrimFunc bodies (LegalizeOps, AnnotateTIROpPattern, FuseTIR, the
`zero` pipeline, FuseTransposeMatmul, RewriteDataflowReshape): a correct pair is proved, a
broken twin refuted with inputs that really separate the two; FastMathTransform (an
approximation) is refuted. The same checks as tests/test_passes.py, on TIR_PASS_CASES."""
from __future__ import annotations

import math

import numpy as np
import pytest
from tvm import relax

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


@I.ir_module
class ExpIsInf:
    @R.function
    def main(x: R.Tensor((3,), "float32")) -> R.Tensor((3,), "bool"):
        with R.dataflow():
            y = R.exp(x)
            z = R.isinf(y)
            R.output(z)
        return z


def test_fast_exp_overflows_before_exp_found_by_testing():
    """fast_exp clamps x to 88.3763 and is inf from there on (its 2^n reaches 2^128), where
    float32 exp is finite up to 88.7228: `isinf(exp(x))` changes. The IEEE solver does not
    decide the polynomial; testing finds it with the exp-edge input set (x = 88.70284:
    source False, target True), shown on the VM (docs/findings.md)."""
    (r,) = tvtv.check_pass("FastMathTransform", ExpIsInf, timeout=5).results
    assert r.verdict == "counterexample" and r.confirmed, r.to_dict()
    x = np.asarray(r.counterexample.inputs["x"], np.float32)
    k = r.counterexample.index[0]
    assert 88.3763 <= x[k] <= 88.7228 and np.isfinite(np.exp(x[k]))
    mod = tvm_bridge.apply(relax.transform.FastMathTransform(), ExpIsInf)
    (out,) = tvm_bridge.run_vm(mod, "main", [np.array([88.3, 88.4, 88.7], np.float32)])
    np.testing.assert_array_equal(out, [False, True, True])


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
def test_exp_edges_straddle_exp_overflow_and_underflow(dtype):
    """The exp-edge set's values are where exp changes regime in their dtype (exp computed in
    float64 and rounded to it): finite just below ln(max), inf above it, normal just above
    ln(smallest normal), subnormal just below it and near the smallest subnormal."""
    import ml_dtypes

    from tvtv.absfp.dtypes import numpy_dtype
    from tvtv.confirm import exp_edges
    nd = numpy_dtype(dtype)
    tiny = float((ml_dtypes.finfo(nd) if dtype == "bfloat16" else np.finfo(nd)).tiny)
    xs = exp_edges(dtype).astype(nd).astype(np.float64)
    with np.errstate(all="ignore"):
        ys = np.exp(xs).astype(nd).astype(np.float64)
    assert np.isfinite(ys[:2]).all() and np.isinf(ys[2]), ys
    assert ys[3] >= tiny and 0 < ys[4] < tiny and 0 < ys[5] < tiny, (ys, tiny)
