"""The pytest plugin, its fixture and `tvtv.testing`: a separate small project
(tests/plugin_project, no conftest.py) that only has tvtv installed runs pytest with the
plugin; it passes with a correct pass and fails with a readable report with a broken one."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from tvm.script import ir as I
from tvm.script import relax as R

from tvtv.ir import tvm_bridge
from tvtv.testing import assert_pass_refines, assert_refines

PROJECT = Path(__file__).parent / "plugin_project"
sys.path.insert(0, str(PROJECT))
from demo_passes import add_to_subtract  # noqa: E402

# small graphs of adds only: every graph meets the broken pass's mistranslation
GRAPHS = ["--tvtv-graphs", "2", "--tvtv-min-ops", "2", "--tvtv-max-ops", "3", "--tvtv-ops", "add"]


def run_project(tmp_path: Path, *args: str, env: dict[str, str] | None = None
                ) -> subprocess.CompletedProcess:
    """pytest in a copy of the demo project, with the installed tvtv (entry-point plugin)."""
    proj = tmp_path / "project"
    if not proj.exists():
        shutil.copytree(PROJECT, proj, ignore=shutil.ignore_patterns("__pycache__"))
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-rN", *args], cwd=proj,
                          capture_output=True, text=True, timeout=600, env=env)


def test_project_passes_with_a_correct_pass(tmp_path):
    proc = run_project(tmp_path, "--tvtv-pass", "demo_passes:cleanup", *GRAPHS)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "4 passed" in proc.stdout    # 2 generated graphs + the project's 2 tests


def test_project_fails_with_a_readable_report_on_a_broken_pass(tmp_path):
    proc = run_project(tmp_path, "--tvtv-pass", "demo_passes:add_to_subtract", *GRAPHS)
    out = proc.stdout
    assert proc.returncode == 1, out + proc.stderr
    # one item per generated graph, and the fixture test of the project, fail
    assert "tvtv[demo_passes:add_to_subtract-simple-seed0-graph0]" in out
    assert "tvtv[demo_passes:add_to_subtract-simple-seed0-graph1]" in out
    assert "test_pass_preserves_model" in out and "3 failed, 1 passed" in out
    # the report: verdict, first difference, source and target values, inputs, the module
    assert "tvtv: counterexample" in out
    assert "first difference: output" in out and "on the TVM VM: source" in out
    assert "inputs:" in out and "module before the pass:" in out
    assert "Traceback" not in out       # the report, not a stack trace


def test_assumptions_are_checked_first_and_printed_with_the_verdict(tmp_path):
    proc = run_project(tmp_path, "--tvtv-pass", "demo_passes:add_to_subtract", *GRAPHS,
                       "--tvtv-assume", "no-nan,no-such-thing")
    assert proc.returncode == 4, proc.stdout + proc.stderr      # pytest's usage error
    assert "--tvtv-assume no-nan,no-such-thing" in proc.stderr and "no-such-thing" in proc.stderr
    assert "Traceback" not in proc.stderr
    proc = run_project(tmp_path, "--tvtv-pass", "demo_passes:add_to_subtract", *GRAPHS,
                       "--tvtv-assume", "no-nan,no-inf")
    out = proc.stdout
    assert proc.returncode == 1, out + proc.stderr
    # x + y against x - y differs on finite inputs too: refuted under the assumptions, and
    # the report says which were in force
    assert "tvtv: counterexample" in out and "3 failed, 1 passed" in out
    assumptions = [ln for ln in out.splitlines() if ln.strip().startswith("assumptions:")]
    assert len(assumptions) == 2    # each graph item's report (the fixture's is indented)
    assert all("no-nan: no input element is NaN" in ln and "no-inf:" in ln for ln in assumptions)


def test_an_input_class_is_checked_first_and_printed_with_the_verdict(tmp_path):
    proc = run_project(tmp_path, "--tvtv-pass", "demo_passes:add_to_subtract", *GRAPHS,
                       "--tvtv-inputs", "normal")
    assert proc.returncode == 4, proc.stdout + proc.stderr      # pytest's usage error
    assert "--tvtv-inputs normal" in proc.stderr and "unknown input class" in proc.stderr
    proc = run_project(tmp_path, "--tvtv-pass", "demo_passes:add_to_subtract", *GRAPHS,
                       "--tvtv-inputs", "finite")
    out = proc.stdout
    assert proc.returncode == 1 and "3 failed, 1 passed" in out, out + proc.stderr
    assumptions = [ln for ln in out.splitlines() if ln.strip().startswith("assumptions:")]
    assert len(assumptions) == 2 and all("inputs: no NaN or ±inf elements" in ln for ln in assumptions)


def test_a_graph_that_hangs_is_unknown_and_the_session_goes_on(tmp_path):
    """A check that never ends (the runner's test hook makes graph 0's sleep) is killed at
    the case timeout and skipped with the reason; graph 1 gets a new worker and passes.
    Strict mode fails it instead. With the timeout 0 the graphs run in pytest's process."""
    env = {**os.environ, "TVTV_TEST_HANG_CASE": "graph0_0"}
    args = ("--tvtv-pass", "demo_passes:cleanup", *GRAPHS, "--tvtv-case-timeout", "5")
    proc = run_project(tmp_path, *args, "-rs", env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "3 passed, 1 skipped" in proc.stdout
    assert "case timeout after 5 s" in proc.stdout
    proc = run_project(tmp_path, *args, "--tvtv-strict", env=env)
    assert proc.returncode == 1 and "1 failed, 3 passed" in proc.stdout, proc.stdout
    proc = run_project(tmp_path, "--tvtv-pass", "demo_passes:cleanup", *GRAPHS,
                       "--tvtv-case-timeout", "0")
    assert proc.returncode == 0 and "4 passed" in proc.stdout, proc.stdout + proc.stderr


def test_plugin_is_registered_through_the_entry_point():
    from importlib.metadata import entry_points
    eps = {ep.name: ep.value for ep in entry_points(group="pytest11")}
    assert eps.get("tvtv") == "tvtv.pytest_plugin"


@I.ir_module
class Before:
    @R.function
    def main(x: R.Tensor((2, 3), dtype="float32")) -> R.Tensor((2, 3), dtype="float32"):
        with R.dataflow():
            a = R.add(x, x)
            b = R.add(x, x)
            c = R.multiply(a, b)
            R.output(c)
        return c


@I.ir_module
class Unsupported:   # relax.ewise_fma is not encoded (R.ones, then R.median were, now are)
    @R.function
    def main(x: R.Tensor((2, 2), dtype="float32")) -> R.Tensor((2, 2), dtype="float32"):
        with R.dataflow():
            y = R.ewise_fma(x, x, x)
            R.output(y)
        return y


def test_assert_refines_passes_on_a_correct_rewrite():
    after = tvm_bridge.apply(tvm_bridge.relax_pass("EliminateCommonSubexpr", call_only=False), Before)
    report = assert_refines(Before, after)
    assert report.verdict == "proved"
    assert assert_pass_refines("CanonicalizeBindings", Before).verdict == "proved"


def test_assert_refines_raises_with_the_report_on_a_counterexample():
    after = tvm_bridge.apply(add_to_subtract, Before)
    with pytest.raises(AssertionError) as info:
        assert_refines(Before, after)
    text = str(info.value)
    assert "does not refine" in text and "tvtv: counterexample" in text
    assert "first difference: output 0" in text and "inputs:" in text and "x: float32[2, 3]" in text
    with pytest.raises(AssertionError, match="counterexample"):
        assert_pass_refines(add_to_subtract, Before)


def test_assert_refines_on_unknown_raises_unless_allowed():
    with pytest.raises(AssertionError, match="could not decide"):
        assert_refines(Unsupported, Unsupported)
    assert assert_refines(Unsupported, Unsupported, allow_unknown=True).verdict == "unknown"
