"""Pipelines: every pass application of a pipeline validated through a PassInstrument."""
from __future__ import annotations

import json

import numpy as np
import pytest
import tvm
from tvm import relax

import tvtv
from tvtv import passes, pipeline
from tvtv.errors import InputError
from tvtv.ir import tvm_bridge

MODULE = '''# from tvm.script import ir as I
# from tvm.script import relax as R

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((2, 3), dtype="float32"), y: R.Tensor((2, 3), dtype="float32")) -> R.Tensor((2, 3), dtype="float32"):
        with R.dataflow():
            a: R.Tensor((2, 3), dtype="float32") = R.add(x, y)
            b: R.Tensor((2, 3), dtype="float32") = a
            c: R.Tensor((2, 3), dtype="float32") = R.multiply(b, x)
            d: R.Tensor((2, 3), dtype="float32") = R.exp(x)
            R.output(c)
        return c
'''

# A pipeline file as a user writes it: a Sequential named `pipeline` with one broken pass
# (every add becomes a subtract) between two correct ones.
BROKEN_PIPELINE = '''
import tvm
from tvm import relax
from tvtv.ir import tvm_bridge

@tvm.transform.module_pass(opt_level=0, name="AddToSubtract")
def add_to_subtract(mod, ctx):
    script, consts = tvm_bridge.module_to_script(mod)
    return tvm_bridge.parse_script(script.replace("R.add(", "R.subtract("), consts)

pipeline = tvm.transform.Sequential([relax.transform.CanonicalizeBindings(), add_to_subtract,
                                     relax.transform.DeadCodeElimination()])
'''


@tvm.transform.module_pass(opt_level=0, name="AddToSubtract")
def add_to_subtract(mod, ctx):
    script, consts = tvm_bridge.module_to_script(mod)
    return tvm_bridge.parse_script(script.replace("R.add(", "R.subtract("), consts)


@pytest.fixture
def module():
    return tvm_bridge.parse_script(MODULE)


def test_zero_pipeline_gives_one_result_per_pass(module):
    report = tvtv.api.check_pipeline("zero", module, label="m", timeout=10)
    names = [r.name for r in report.results]
    assert names == ["m:LegalizeOps#1", "m:AnnotateTIROpPattern#1", "m:FoldConstant#1",
                     "m:FuseOps#1", "m:FuseTIR#1"]
    by = {r.pass_name: r for r in report.results}
    assert by["FuseOps"].verdict == "proved"
    for r in report.results:   # passes tvtv does not validate (yet) are unknown, with the reason
        spec = passes.PASSES.get(r.pass_name)
        if spec is not None and not spec.support.startswith(passes.VALIDATED):
            assert r.verdict == "unknown" and "not validated" in r.reason, r


def test_pass_not_validated_is_unknown_never_dropped(module, monkeypatch):
    spec = passes.PassSpec("DeadCodeElimination", lambda: relax.transform.DeadCodeElimination(),
                           support=passes.NOT_YET)
    monkeypatch.setitem(passes.PASSES, "DeadCodeElimination", spec)
    seq = tvm.transform.Sequential([relax.transform.DeadCodeElimination(),
                                    relax.transform.DeadCodeElimination()])
    report = tvtv.api.check_pipeline(seq, module, label="m", timeout=10)
    first, second = report.results
    assert first.verdict == "unknown" and "not validated by tvtv yet" in first.reason
    assert passes.NOT_YET in first.reason
    # the second application changes nothing: proved by structural equality, whatever the pass
    assert second.verdict == "proved" and second.levels == [pipeline.STRUCTURAL_LEVEL]


def test_broken_pass_is_refuted_at_that_pass_only(module):
    seq = tvm.transform.Sequential([relax.transform.CanonicalizeBindings(), add_to_subtract,
                                    relax.transform.DeadCodeElimination()])
    report = tvtv.api.check_pipeline(seq, module, label="m", timeout=10)
    verdicts = {r.name: r.verdict for r in report.results}
    assert verdicts == {"m:CanonicalizeBindings#1": "proved", "m:AddToSubtract#1": "counterexample",
                        "m:DeadCodeElimination#1": "proved"}
    (bad,) = [r for r in report.results if r.verdict == "counterexample"]
    assert bad.confirmed is True   # the VM runs both modules and sees the difference
    # DCE removed the unused exp: a real change, proved by the refinement check itself
    dce = report.results[-1]
    assert dce.levels != [pipeline.STRUCTURAL_LEVEL]


def test_repeated_pass_is_numbered(module):
    seq = tvm.transform.Sequential([relax.transform.CanonicalizeBindings(),
                                    relax.transform.CanonicalizeBindings()])
    report = tvtv.api.check_pipeline(seq, module, label="m", timeout=10)
    assert [r.name for r in report.results] == ["m:CanonicalizeBindings#1", "m:CanonicalizeBindings#2"]
    # the second application has nothing left to do
    assert report.results[1].levels == [pipeline.STRUCTURAL_LEVEL]


def test_failing_pipeline_is_unknown_with_the_failing_pass(module):
    @tvm.transform.module_pass(opt_level=0, name="Explode")
    def explode(mod, ctx):
        raise ValueError("boom")

    seq = tvm.transform.Sequential([relax.transform.CanonicalizeBindings(), explode])
    report = tvtv.api.check_pipeline(seq, module, label="m", timeout=10)
    assert [r.verdict for r in report.results] == ["proved", "unknown"]
    assert "Explode" in report.results[1].reason and "boom" in report.results[1].reason


def test_json_pipeline_and_bad_pipelines(tmp_path):
    good = tmp_path / "p.json"
    good.write_text(json.dumps(["CanonicalizeBindings", "EliminateCommonSubexpr", "FoldConstant"]))
    name, seq = pipeline.load_pipeline(str(good))
    assert name == "p.json" and tvm_bridge.is_pass(seq)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(["CanonicalizeBindings", "NoSuchPass"]))
    with pytest.raises(InputError, match="unknown pass 'NoSuchPass'"):
        pipeline.load_pipeline(str(bad))
    with pytest.raises(InputError, match="unknown pipeline 'nope'"):
        pipeline.load_pipeline("nope")
    nopipe = tmp_path / "nopipe.py"
    nopipe.write_text("x = 1\n")
    with pytest.raises(InputError, match="defines no `pipeline`"):
        pipeline.load_pipeline(str(nopipe))


def test_cli_pipeline_file_refutes_the_broken_pass(tmp_path):
    mod = tmp_path / "m.py"
    mod.write_text(MODULE)
    pl = tmp_path / "broken_pipeline.py"
    pl.write_text(BROKEN_PIPELINE)
    out = tmp_path / "out"
    from typer.testing import CliRunner

    from tvtv.cli import app
    res = CliRunner().invoke(app, ["check", "--pipeline", str(pl), "--module", str(mod), "--out", str(out),
                                   "--no-minimize", "--timeout", "10"])
    assert res.exit_code == 1, res.output
    data = json.loads((out / "report.json").read_text())
    verdicts = {r["name"]: r["verdict"] for r in data["results"]}
    assert verdicts == {"m:CanonicalizeBindings#1": "proved", "m:AddToSubtract#1": "counterexample",
                        "m:DeadCodeElimination#1": "proved"}
    case = out / "cases" / "m:AddToSubtract#1"
    assert "R.add(" in (case / "before.py").read_text()
    assert "R.subtract(" in (case / "after.py").read_text()
    with np.load(case / "inputs.npz") as inputs:
        assert sorted(inputs.files) == ["x", "y"] and inputs["x"].dtype == np.float32
