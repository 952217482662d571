"""Reports: grouping by cause, the HTML page (rendered in headless Chromium, user content
escaped), standalone reproducer scripts, the terminal summary."""
from __future__ import annotations

import io
import json
import shutil
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console
from tvm.script import ir as I
from tvm.script import relax as R

import generators
from generators.emit import emit
from tvtv.api import check_pass
from tvtv.confirm import confirm_case
from tvtv.ir import tvm_bridge
from tvtv.report import Counterexample, Report, Result
from tvtv.reports import finalize
from tvtv.reports.cases import save_case
from tvtv.reports.finalize import print_groups, render_html
from tvtv.reports.repro import reproducer_source, safe_name
from tvtv.reports.grouping import Finding, group_findings, value_class, witness_kind

DEMO = Path(__file__).parent / "plugin_project"
sys.path.insert(0, str(DEMO))
from demo_passes import add_to_subtract  # noqa: E402  (the demo project's broken pass)

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
EVIL = "<script>alert('tvtv')</script>"


@I.ir_module
class Small:
    @R.function
    def main(x: R.Tensor((2, 3), dtype="float32"), y: R.Tensor((2, 3), dtype="float32")) -> R.Tensor((2, 3), dtype="float32"):
        with R.dataflow():
            a = R.multiply(x, y)
            b = R.add(a, x)
            c = R.nn.relu(b)
            R.output(c)
        return c


@I.ir_module
class Evil:
    @R.function
    def main(x: R.Tensor((2,), dtype="float32")) -> R.Tensor((2,), dtype="float32"):
        R.func_attr({"note": "<script>alert('tvtv')</script>"})
        with R.dataflow():
            a = R.add(x, x)
            R.output(a)
        return a


@I.ir_module
class Relu:
    @R.function
    def main(x: R.Tensor((2,), dtype="float32")) -> R.Tensor((2,), dtype="float32"):
        with R.dataflow():
            y = R.nn.relu(x)
            R.output(y)
        return y


def run_case(out: Path, mod, label: str) -> Result:
    """Check the broken pass on `mod` and save the case as `tvtv check --out` does."""
    r = check_pass(add_to_subtract, mod, label=label, timeout=10, confirm_vm=False).results[0]
    assert r.verdict == "counterexample"
    save_case(out, r, mod, tvm_bridge.apply(add_to_subtract, mod))
    return r


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    """A finalized run of the broken pass: two minimized findings, one of whose label and
    module carry markup, a proved case and an unknown one whose reason carries markup."""
    out = tmp_path_factory.mktemp("run")
    report = Report([run_case(out, Small, "small"), run_case(out, Evil, f"evil{EVIL}")])
    report.results.append(Result("fine", "AddToSubtract", "proved", 0.1))
    report.results.append(Result("undecided", "AddToSubtract", "unknown", 0.1, f"unsupported: {EVIL}"))
    buf = io.StringIO()
    groups = finalize(out, report, "AddToSubtract", True, pass_obj=add_to_subtract,
                      console=Console(file=buf, width=160))
    return out, groups, buf.getvalue()


def test_finalize_writes_page_groups_and_reproducers(run_dir):
    out, groups, terminal = run_dir
    assert (out / "report.html").exists() and (out / "groups.json").exists()
    data = json.loads((out / "groups.json").read_text())
    assert sum(len(g["findings"]) for g in data["groups"]) == 2
    small = [g for g in groups if any(f.label == "small" for f in g.findings)][0]
    f = [f for f in small.findings if f.label == "small"][0]
    assert f.minimized is not None and f.num_ops == 1 and f.ops == ("relax.add",)
    assert (out / "cases" / "small" / "minimized" / "after.py").exists()
    assert f.result.confirmed is True
    assert sorted(p.name for p in out.glob("repro_*.py")) == [f"repro_{safe_name('evil' + EVIL)}.py",
                                                              "repro_small.py"]
    assert "<" not in safe_name("evil" + EVIL)
    # the terminal summary names the group and its smallest example
    assert "2 counterexamples, 1 distinct cause" in terminal
    assert f"{groups[0].example.label} (1 ops)" in terminal


def test_findings_of_one_bug_share_a_cause(run_dir):
    _, groups, _ = run_dir
    # both cases minimize to one add on finite inputs: one cause
    assert len(groups) == 1
    cause = groups[0].cause
    assert cause.ops == ("relax.add",) and cause.producer == "relax.add" and cause.witness == "finite"
    assert groups[0].example.num_ops == 1


def _png_pixels(path: Path) -> bytes:
    """The decompressed image data of a PNG (filter bytes included): enough to tell a blank
    page from a rendered one without an imaging library."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat = 8, b""
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        kind = data[pos + 4:pos + 8]
        if kind == b"IDAT":
            idat += data[pos + 8:pos + 8 + length]
        pos += 12 + length
    return zlib.decompress(idat)


@pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="Debian's chromium is not installed")
def test_report_renders_in_headless_chromium(run_dir, tmp_path):
    out, _, _ = run_dir
    shot = tmp_path / "report.png"
    proc = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
                           "--disable-background-networking", "--disable-component-update",
                           "--disable-sync", "--no-first-run", f"--user-data-dir={tmp_path / 'profile'}",
                           f"--screenshot={shot}", "--window-size=1200,900",
                           (out / "report.html").resolve().as_uri()],
                          capture_output=True, text=True, timeout=120)
    assert shot.exists(), proc.stderr
    assert shot.stat().st_size > 20_000          # a blank 1200x900 page is a few kB
    pixels = _png_pixels(shot)
    assert len(pixels) >= 1200 * 900 * 3
    assert len(set(pixels)) > 64                 # many colours: text, tables, badges
    assert pixels.count(255) / len(pixels) < 0.97   # not (nearly) all white


def test_user_content_is_escaped(run_dir):
    out, _, _ = run_dir
    html = (out / "report.html").read_text()
    assert "<script" not in html                 # neither the label, the attribute nor the reason
    assert "&lt;script&gt;alert(" in html        # ... but they are shown, escaped
    assert "By cause: 1 not supported by the encoder yet." in html
    assert "note" in html                        # the function attribute is in the module text
    # self-contained: no external resources
    assert "http://" not in html and "https://" not in html and "<link" not in html


def test_each_reproducer_runs_on_its_own_and_shows_the_difference(run_dir, tmp_path):
    out, _, _ = run_dir
    scripts = sorted(out.glob("repro_*.py"))
    assert scripts
    for script in scripts:
        text = script.read_text()
        assert "tvtv" not in "\n".join(l for l in text.splitlines() if l.startswith(("import", "from")))
        alone = tmp_path / script.name       # run from elsewhere: the script carries everything
        alone.write_text(text)
        proc = subprocess.run([sys.executable, str(alone)], capture_output=True, text=True,
                              cwd=tmp_path, timeout=300)
        assert proc.returncode == 1, proc.stdout + proc.stderr
        assert "DIFFERENCE: output 0 at index" in proc.stdout
        assert "source" in proc.stdout and "target" in proc.stdout


def test_a_reproducer_of_a_module_with_a_local_function_runs(tmp_path):
    """relax.build rejects local functions: the script lambda-lifts the modules first."""
    from tests.test_vm_server import LocalFunction
    text, consts = tvm_bridge.module_to_script(LocalFunction)
    broken = tvm_bridge.parse_script(text.replace("R.add(", "R.subtract("), consts)
    x = np.array([1.0, 2.0, 3.0], dtype="float32")
    script = tmp_path / "repro_local.py"
    script.write_text(reproducer_source(LocalFunction, broken, "main", [x], "add to subtract",
                                        "Broken"))
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "DIFFERENCE: output 0 at index (0,)" in proc.stdout


def test_vm_blind_difference_is_confirmed_by_the_specification(tmp_path):
    """LegalizeOps of relu on NaN: the VM legalizes the source too, so both sides agree on
    the VM; the IEEE evaluation of relu's specification (NaN propagates) differs from the
    target's TIR, which computes max(x, 0) = 0."""
    after = tvm_bridge.apply(tvm_bridge.relax_pass("LegalizeOps"), Relu)
    cex = Counterexample("value", "output 0 differs at index (0,)",
                         {"x": np.array([np.nan, 1.0], dtype="float32")}, 0, (0,), float("nan"), 0.0)
    c = confirm_case(Relu, after, "main", ["x"], cex)
    assert c.confirmed is True and c.by == "ieee-spec"
    assert cex.executed_values[1] == 0.0 and np.isnan(cex.executed_values[0])
    # a difference only the abstraction shows (opaque PrimFunc): neither the VM, random
    # inputs nor the specification shows it: unconfirmed (under no-nan: relu's NaN
    # difference is real, and the special input set, NaN among its values, shows it)
    spurious = Counterexample("value", "", {"x": np.array([1.0, -2.0], dtype="float32")}, 0, (0,), 1.0, 2.0)
    u = confirm_case(Relu, after, "main", ["x"], spurious, ("no-nan",))
    assert u.confirmed is False and u.by == "none"
    r = Result("relu", "LegalizeOps", "counterexample", 0.1, cex.message, cex, confirmed=c.confirmed)
    cex.confirmed_by = c.by
    assert r.to_dict()["confirmed_by"] == "ieee-spec"
    # the reproducer carries the specification's value, and shows the target departs from it
    script = tmp_path / "repro_relu.py"
    script.write_text(reproducer_source(Relu, after, "main", [cex.inputs["x"]], "relu on NaN",
                                        "LegalizeOps", spec=(0, [0], float("nan"))))
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "DIFFERENCE from the specification" in proc.stdout and "nan" in proc.stdout
    html = render_html(Report([r]), group_findings([Finding("relu", r)], "LegalizeOps"), "LegalizeOps")
    assert "IEEE evaluation of the specification" in html


def test_witness_classes():
    assert [value_class(v) for v in (float("nan"), float("inf"), -float("inf"), 0.0, -0.0, 1.5, 3, True, None)] == \
        ["nan", "+inf", "-inf", "+0", "-0", "finite", "int", "bool", "none"]
    cex = Counterexample("value", "", {}, 0, (0,), float("nan"), -0.0)
    assert witness_kind(cex) == "nan -> -0"
    assert witness_kind(Counterexample("ub", "", {})) == "ub"


def test_grouping_by_cause_and_smallest_example():
    def finding(label, producer, src, n_ops):
        r = Result(label, "P", "counterexample", 0.0, "", Counterexample("value", "", {}, 0, (0,), src, 0.0))
        return Finding(label, r, producer=producer, num_ops=n_ops)
    fs = [finding("g1", "relax.add", 1.0, 7), finding("g2", "relax.add", 2.0, 3),
          finding("g3", "relax.add", float("nan"), 2), finding("g4", "relax.exp", 1.0, 1)]
    groups = group_findings(fs, "P")
    assert [len(g.findings) for g in groups] == [2, 1, 1]
    assert groups[0].example.label == "g2"   # fewest ops
    buf = io.StringIO()
    print_groups(groups, Console(file=buf, width=200))
    assert "4 counterexamples, 3 distinct causes" in buf.getvalue()
    assert "g2 (3 ops)" in buf.getvalue()


@pytest.mark.slow
def test_broken_pass_on_generated_graphs_groups_into_few_minimized_causes(tmp_path):
    """A broken pass on 10 generated graphs: the failing graphs come down to one or two
    causes, each with a minimized example of at most three ops."""
    ops = ["add", "multiply", "subtract", "nn.relu", "maximum", "negative", "permute_dims", "reshape"]
    report = Report()
    for k, g in enumerate(generators.generate_graphs("simple", 10, 0, 3, 8, ops=ops)):
        mod = emit(g)
        r = check_pass(add_to_subtract, mod, label=f"graph{k}", timeout=10).results[0]
        report.results.append(r)
        if r.verdict == "counterexample":
            save_case(tmp_path, r, mod, tvm_bridge.apply(add_to_subtract, mod))
    failing = report.summary()["counterexample"]
    assert failing >= 4
    groups = finalize(tmp_path, report, "AddToSubtract", True, pass_obj=add_to_subtract,
                      console=Console(file=io.StringIO()))
    assert sum(len(g.findings) for g in groups) == failing
    assert len(groups) <= 2
    for g in groups:
        assert "relax.add" in g.cause.ops
        assert g.example.minimized is not None and g.example.num_ops <= 3
        assert g.example.result.confirmed is True


@pytest.mark.slow
def test_check_out_dir_with_a_broken_pass_in_a_pipeline(tmp_path):
    """`tvtv check --pipeline FILE --module M --out DIR`: the check command saves the case and
    calls `finalize`, which finds the user's pass inside the pipeline to minimize with."""
    pipeline = tmp_path / "broken_pipeline.py"
    pipeline.write_text(f"import sys\nsys.path.insert(0, {str(DEMO)!r})\n"
                        "from demo_passes import add_to_subtract, cleanup\n"
                        "pipeline = [cleanup(), add_to_subtract]\n")
    module = tvm_bridge.save_module(Small, tmp_path / "m.py")
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, "-m", "tvtv", "check", "--pipeline", str(pipeline),
                           "--module", str(module), "--out", str(out)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "1 counterexample, 1 distinct cause" in proc.stdout + proc.stderr
    groups = json.loads((out / "groups.json").read_text())["groups"]
    assert len(groups) == 1 and groups[0]["example_ops"] == 1 and groups[0]["example_minimized"]
    assert groups[0]["cause"]["ops"] == ["relax.add"]
    script = out / groups[0]["reproducer"]
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert run.returncode == 1 and "DIFFERENCE" in run.stdout
