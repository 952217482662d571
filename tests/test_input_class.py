"""Input classes (`Options.input_class`): the inputs a check looks at are restricted, as
no-nan / no-inf restrict them, but a NaN or infinity the source computes still counts (the
assumptions make it poison). The minimizer keeps a finding's class with it."""
from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
from tvm.script import ir as I
from tvm.script import relax as R

from tvtv.api import check_pass
from tvtv.ir import tvm_bridge
from tvtv.refinement import Options

INPUT_CLASS_LINE = "inputs: no NaN or ±inf elements"


@I.ir_module
class SqrtMax:
    """TIR's max drops a NaN operand (docs/findings.md); sqrt makes one of a finite input."""

    @R.function
    def main(x: R.Tensor((2, 3), "float32"), y: R.Tensor((2, 3), "float32")) -> R.Tensor((2, 3), "float32"):
        with R.dataflow():
            s = R.sqrt(x)
            m = R.maximum(s, y)
            R.output(m)
        return m


@I.ir_module
class Max:
    """The same max on the inputs themselves: it drops only a NaN input."""

    @R.function
    def main(x: R.Tensor((2, 3), "float32"), y: R.Tensor((2, 3), "float32")) -> R.Tensor((2, 3), "float32"):
        with R.dataflow():
            m = R.maximum(x, y)
            R.output(m)
        return m


FINITE = ("no-nan", "no-inf")


def _finite(inputs: dict) -> bool:
    return all(np.isfinite(np.asarray(v, "float64")).all() for v in inputs.values())


def test_a_computed_nan_counts_on_finite_inputs():
    """Finite inputs, and the legalized max drops sqrt(-x)'s NaN: a counterexample, confirmed,
    with finite inputs, and the class printed with the verdict."""
    (r,) = check_pass("LegalizeOps", SqrtMax, input_class=FINITE).results
    assert r.verdict == "counterexample" and r.confirmed is True, r.reason
    assert _finite(r.counterexample.inputs), r.counterexample.inputs
    assert any(line.startswith(INPUT_CLASS_LINE) for line in r.assumptions), r.assumptions


def test_the_assumptions_make_that_nan_poison():
    """The twin: under no-nan, no-inf the computed NaN is poison, and the same pass is proved."""
    (r,) = check_pass("LegalizeOps", SqrtMax, assume=list(FINITE)).results
    assert r.verdict == "proved", r.reason


def test_an_input_class_restricts_the_inputs():
    """The legalized max on the inputs differs only on a NaN input: proved on finite inputs,
    refuted (with a NaN input) without the class."""
    (r,) = check_pass("LegalizeOps", Max, input_class=FINITE).results
    assert r.verdict == "proved", r.reason
    (r,) = check_pass("LegalizeOps", Max).results
    assert r.verdict == "counterexample" and r.confirmed is True
    assert not _finite(r.counterexample.inputs)


def test_an_input_class_names_no_nan_or_no_inf_only():
    assert Options(input_class=("no-inf", "no-nan", "no-nan")).input_class == FINITE
    with pytest.raises(ValueError, match="unknown input class 'no-signed-zeros'"):
        Options(input_class=("no-signed-zeros",))


def test_lemmas_are_proved_without_the_input_class():
    """An operator's arguments are values the graph computes, not its inputs: its lemma
    must not take the graph's input class (`tvtv.lemmas._lemma_options`)."""
    from tvtv.lemmas import _lemma_options
    opts = _lemma_options(Options(input_class=FINITE, assume=("no-nan",)))
    assert opts.input_class == () and opts.assume == ()


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tvtv", *args], capture_output=True, text=True,
                          timeout=300)


def test_check_inputs_finite_and_assumptions_are_printed_with_the_verdict(tmp_path):
    """`--inputs finite` refutes what `--assume no-nan,no-inf` proves, and each verdict prints
    what was in force, as the JSON records it."""
    src = tvm_bridge.save_module(SqrtMax, tmp_path / "sqrtmax.py")
    out = tmp_path / "r.json"
    proc = _cli("check", "--pass", "LegalizeOps", "--module", str(src), "--inputs", "finite",
                "--json", str(out))
    assert proc.returncode == 1, proc.stderr
    printed = [ln for ln in proc.stdout.splitlines() if ln.strip().startswith("assumptions:")]
    assert len(printed) == 1 and INPUT_CLASS_LINE in printed[0], proc.stdout
    (r,) = json.loads(out.read_text())["results"]
    assert r["verdict"] == "counterexample" and r["assumptions"][0].startswith(INPUT_CLASS_LINE)
    proc = _cli("check", "--pass", "LegalizeOps", "--module", str(src), "--assume", "no-nan,no-inf")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "assumptions: no-inf: no input element is +inf" in " ".join(proc.stdout.split())


def test_unknown_input_class_is_one_line_exit_3(tmp_path):
    src = tvm_bridge.save_module(SqrtMax, tmp_path / "sqrtmax.py")
    proc = _cli("check", "--pass", "LegalizeOps", "--module", str(src), "--inputs", "normal")
    assert proc.returncode == 3
    assert proc.stderr.count("\n") == 1 and "unknown input class 'normal'" in proc.stderr


def test_minimize_takes_the_assumptions_and_the_input_class_of_the_check(tmp_path):
    """`tvtv minimize` under `--assume no-nan,no-inf` finds nothing to minimize (the computed
    NaN is poison), under `--inputs finite` it keeps sqrt and max on finite inputs."""
    src = tvm_bridge.save_module(SqrtMax, tmp_path / "sqrtmax.py")
    proc = _cli("minimize", str(src), "--pass", "LegalizeOps", "--assume", "no-nan,no-inf")
    assert proc.returncode == 3 and "no counterexample" in proc.stderr, proc.stdout + proc.stderr
    proc = _cli("minimize", str(src), "--pass", "LegalizeOps", "--inputs", "finite",
                "--out", str(tmp_path / "min"))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "witness: finite" in proc.stdout and "R.sqrt" in (tmp_path / "min" / "input.py").read_text()
    proc = _cli("minimize", str(src), "--pass", "LegalizeOps", "--inputs", "normal")
    assert proc.returncode == 3 and proc.stderr.count("\n") == 1


def test_check_out_minimizes_as_the_run_checked(tmp_path):
    """`check --out`'s minimization keeps the run's float model, assumptions and input class
    (it used to minimize every finding in the abstract model without assumptions)."""
    src = tvm_bridge.save_module(SqrtMax, tmp_path / "sqrtmax.py")
    out = tmp_path / "run"
    proc = _cli("check", "--pass", "LegalizeOps", "--module", str(src), "--fp", "ieee",
                "--assume", "no-signed-zeros", "--inputs", "finite", "--out", str(out))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    result = json.loads((out / "cases" / "sqrtmax" / "minimized" / "result.json").read_text())
    assert result["fp_model"] == "ieee" and result["ops"] == 2
    assert any(a.startswith(INPUT_CLASS_LINE) for a in result["assumptions"])
    assert any(a.startswith("no-signed-zeros") for a in result["assumptions"])
    # `tvtv report DIR --minimize` later minimizes as the stored run checked, too
    (out / "cases" / "sqrtmax" / "minimized" / "result.json").unlink()
    proc = _cli("report", str(out), "--minimize")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    result = json.loads((out / "cases" / "sqrtmax" / "minimized" / "result.json").read_text())
    assert result["fp_model"] == "ieee" and any(a.startswith(INPUT_CLASS_LINE) for a in result["assumptions"])


def test_stored_check_options_of_a_missing_or_foreign_file_are_none(tmp_path):
    from tvtv.runner import stored_check_options
    assert stored_check_options(tmp_path / "none.sqlite") == {}
    (tmp_path / "junk.sqlite").write_text("not a database")
    assert stored_check_options(tmp_path / "junk.sqlite") == {}
