"""Long runs: isolated workers (crash, hang), the SQLite store, --resume, --out.

The runs use tvtv's documented test hooks (tvtv/runner.py): TVTV_TEST_CRASH_CASE makes the
worker SIGKILL itself on a case, TVTV_TEST_HANG_CASE makes it sleep forever, and
TVTV_TEST_STOP_AFTER makes the whole `tvtv check` process SIGKILL itself after k stored cases.
"""
from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tvtv import runner
from tvtv.errors import InputError
from tvtv.report import Counterexample, Result

TVTV = [sys.executable, "-m", "tvtv"]
SMALL = ["--pass", "FuseOps", "--min-ops", "3", "--max-ops", "5"]


def run(*args, env=None, timeout=240):
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("TVTV_TEST_")}
    full_env.update(env or {})
    return subprocess.run(TVTV + list(args), capture_output=True, text=True, timeout=timeout, env=full_env)


def invoke(*args):
    """The CLI in this process (no TVM start-up per call)."""
    from typer.testing import CliRunner

    from tvtv.cli import app
    return CliRunner().invoke(app, list(args))


def stored_cases(db: Path) -> dict[str, float]:
    with sqlite3.connect(db) as con:
        return dict(con.execute("SELECT label, finished FROM cases"))


def test_killed_worker_and_hang_stay_confined_to_their_case(tmp_path, monkeypatch):
    """Graph 1's worker is SIGKILLed, graph 2's hangs, graph 3's segfaults: each is unknown
    with the reason, graph 0 is proved, and the run finishes."""
    monkeypatch.setenv("TVTV_TEST_CRASH_CASE", "graph0_1")
    monkeypatch.setenv("TVTV_TEST_HANG_CASE", "graph0_2")
    monkeypatch.setenv("TVTV_TEST_SEGFAULT_CASE", "graph0_3")
    out = tmp_path / "r.json"
    res = invoke("check", *SMALL, "--graphs", "4", "--jobs", "2", "--case-timeout", "3", "--json", str(out),
                 "--db", str(tmp_path / "run.sqlite"))
    assert res.exit_code == 2, res.output
    results = {r["name"]: r for r in json.loads(out.read_text())["results"]}
    assert list(results) == ["graph0_0", "graph0_1", "graph0_2", "graph0_3"]   # case order
    assert results["graph0_1"]["verdict"] == "unknown"
    assert results["graph0_1"]["reason"] == "worker crashed: signal 9 (SIGKILL)"
    assert results["graph0_2"]["verdict"] == "unknown"
    assert results["graph0_2"]["reason"] == "case timeout after 3 s"
    assert 3 <= results["graph0_2"]["seconds"] < 30
    assert results["graph0_3"]["verdict"] == "unknown"
    assert results["graph0_3"]["reason"] == "worker crashed: signal 11 (SIGSEGV)"
    assert results["graph0_0"]["verdict"] == "proved"
    assert "worker crashed: signal 9" in res.stdout and "case timeout after 3 s" in res.stdout
    # crashes and timeouts are results too: stored, not redone on --resume
    assert sorted(stored_cases(tmp_path / "run.sqlite")) == ["graph0_0", "graph0_1", "graph0_2", "graph0_3"]


def test_a_case_over_the_memory_limit_is_unknown_and_the_run_goes_on(tmp_path, monkeypatch):
    """Graph 1's worker holds 1 GiB (over a 512 MiB limit): the parent kills it, the case is
    unknown with the reason, and the other cases are still checked."""
    monkeypatch.setenv("TVTV_TEST_MEMORY_CASE", "graph0_1")
    monkeypatch.setenv("TVTV_CASE_MEMORY_MB", "512")
    out = tmp_path / "r.json"
    res = invoke("check", *SMALL, "--graphs", "3", "--jobs", "1", "--case-timeout", "120",
                 "--json", str(out), "--db", str(tmp_path / "run.sqlite"))
    results = {r["name"]: r for r in json.loads(out.read_text())["results"]}
    assert results["graph0_1"]["verdict"] == "unknown"
    assert results["graph0_1"]["reason"] == "memory limit: the check held more than 512 MiB"
    assert results["graph0_1"]["seconds"] < 60
    assert results["graph0_0"]["verdict"] == results["graph0_2"]["verdict"] == "proved", res.output


def test_a_retiring_worker_is_given_no_further_case(tmp_path, monkeypatch):
    """With TVTV_RECYCLE_MB=1 every worker retires after its case: each case still gets a
    verdict from a fresh worker, none is lost as "exited without a result" (seen on a zero
    run when the parent handed the next case to a worker that was exiting)."""
    monkeypatch.setenv("TVTV_RECYCLE_MB", "1")
    out = tmp_path / "r.json"
    res = invoke("check", *SMALL, "--graphs", "4", "--jobs", "1", "--case-timeout", "120",
                 "--json", str(out))
    results = json.loads(out.read_text())["results"]
    assert [r["verdict"] for r in results] == ["proved"] * 4, res.output


def test_z3_bytes_sees_what_z3_keeps():
    """The recycle size for Z3 is read from Z3's own allocator: terms built raise it."""
    import z3
    before = runner.z3_bytes()
    x = z3.BitVec("tvtv_test_x", 32)
    terms = [x * z3.BitVecVal(k, 32) + x for k in range(100_000)]
    assert runner.z3_bytes() > before + (4 << 20), (before, runner.z3_bytes())
    assert len(terms) == 100_000
    assert runner.RECYCLE_Z3 < runner.RECYCLE_RSS


def test_memory_limit_shares_the_machine():
    assert runner.case_memory_limit(1) > runner.case_memory_limit(2) >= 2 << 30
    assert runner.rss_bytes(os.getpid()) > 10 << 20       # this process: tens of MiB at least
    assert runner.rss_bytes(2 ** 22 + 12345) == 0          # no such process


def test_interrupted_run_resumes_without_redoing_cases(tmp_path, monkeypatch):
    db = tmp_path / "run.sqlite"
    args = ["check", *SMALL, "--graphs", "4", "--db", str(db)]
    # the run kills itself (SIGKILL, no cleanup) once two cases are stored
    p = run(*args, env={"TVTV_TEST_STOP_AFTER": "2"})
    assert p.returncode == -signal.SIGKILL, p.stdout + p.stderr
    first = stored_cases(db)
    assert sorted(first) == ["graph0_0", "graph0_1"]

    # resuming with other options is refused (one line, exit 3) and keeps what was stored
    res = invoke(*args, "--resume", "--fp", "ieee")
    assert res.exit_code == 3 and len(res.stderr.strip().splitlines()) == 1, res.stderr
    assert "cannot resume" in res.stderr and "fp" in res.stderr
    assert stored_cases(db) == first

    # resume: a finished case is not run again (if it were, the crash hook would make it unknown)
    out = tmp_path / "r.json"
    monkeypatch.setenv("TVTV_TEST_CRASH_CASE", "graph0_0,graph0_1")
    res = invoke(*args, "--resume", "--json", str(out))
    assert res.exit_code == 0, res.output
    assert "2 of 4 cases already done" in res.stdout
    data = json.loads(out.read_text())
    assert [r["name"] for r in data["results"]] == ["graph0_0", "graph0_1", "graph0_2", "graph0_3"]
    assert data["summary"]["proved"] == 4
    after = stored_cases(db)
    assert len(after) == 4
    assert {k: after[k] for k in first} == first   # the first two were not redone

    # a larger --graphs extends the stored run by the new graphs only
    res = invoke(*args[:-4], "--graphs", "5", "--db", str(db), "--resume", "--jobs", "0")
    assert res.exit_code == 0, res.output
    again = stored_cases(db)
    assert len(again) == 5 and {k: again[k] for k in after} == after


def test_store_round_trip_keeps_counterexample_inputs(tmp_path):
    config = runner.RunConfig(pass_name="FuseOps", generator="simple", seed=0, min_ops=3, max_ops=5)
    (case,) = runner.generated_cases(config, 1)
    cex = Counterexample("value", "output 0 differs at index (1,)",
                         {"x": np.array([1.5, -0.0, np.nan], np.float32),
                          "t": (np.array([1, 2], np.int8), np.array(True))},
                         output=0, index=(1,), source_value=-0.0, target_value=0.0, confirmed_ieee=True)
    r = Result("graph0_0", "FuseOps", "counterexample", 0.5, "differs", cex, levels=["fp: ieee"],
               confirmed=True)
    store = runner.ResultStore(tmp_path / "db.sqlite", config, resume=False)
    store.put(case, [r])
    store.close()
    store = runner.ResultStore(tmp_path / "db.sqlite", config, resume=True)
    assert store.finished() == {case.key}
    (back,) = store.results(case.key)
    assert back.to_dict() == r.to_dict()
    x = back.counterexample.inputs["x"]
    assert x.dtype == np.float32 and np.signbit(x[1]) and np.isnan(x[2])
    t = back.counterexample.inputs["t"]
    assert isinstance(t, tuple) and t[0].dtype == np.int8 and t[1].dtype == np.bool_
    other = runner.RunConfig(pass_name="FuseOps", generator="simple", seed=1, min_ops=3, max_ops=5)
    with pytest.raises(InputError, match=r"cannot resume.*seed: 0 then, 1 now"):
        runner.ResultStore(tmp_path / "db.sqlite", other, resume=True)
    # without --resume the place is reused for a new run
    fresh = runner.ResultStore(tmp_path / "db.sqlite", other, resume=False)
    assert fresh.replaced == 1 and fresh.count() == 0


def test_case_keys_name_pass_generator_seed_index_and_options():
    a = runner.RunConfig(pass_name="FuseOps", generator="simple", seed=0, min_ops=3, max_ops=5)
    b = runner.RunConfig(pass_name="FuseOps", generator="simple", seed=0, min_ops=3, max_ops=5, fp="ieee")
    ka = [c.key for c in runner.generated_cases(a, 3)]
    assert len(set(ka)) == 3 and all("FuseOps" in k and "simple:0:" in k for k in ka)
    assert ka == [c.key for c in runner.generated_cases(a, 3)]            # stable
    assert not set(ka) & {c.key for c in runner.generated_cases(b, 3)}   # options are part of it


def test_crash_reasons():
    assert runner.crash_reason(-11) == "worker crashed: signal 11 (SIGSEGV)"
    assert runner.crash_reason(3) == "worker crashed: exit status 3"


def test_jobs_0_runs_in_process_and_finalize_is_called(tmp_path, monkeypatch):
    """`--jobs 0` (no isolation), `--out`: report.json and tvtv.reports.finalize(out, report,
    pass, minimize, options=the run's check options) at the end (recorded by a stand-in for
    finalize)."""
    from typer.testing import CliRunner

    import tvtv.reports
    from tvtv.cli import app
    calls = []
    monkeypatch.setattr(tvtv.reports, "finalize", lambda out_dir, report, pass_name, minimize, options: calls.append(
        (out_dir, len(report.results), pass_name, minimize, options)))
    out = tmp_path / "out"
    res = CliRunner().invoke(app, ["check", *SMALL, "--graphs", "2", "--jobs", "0", "--out", str(out),
                                   "--no-minimize", "--assume", "no-nan", "--inputs", "finite"])
    assert res.exit_code == 0, res.output
    assert calls == [(out, 2, "FuseOps", False,
                      {"fp": "abstract", "assume": ("no-nan",), "input_class": ["no-nan", "no-inf"]})]
    assert json.loads((out / "report.json").read_text())["summary"]["proved"] == 2
    assert len(stored_cases(out / "run.sqlite")) == 2
    # --case-timeout needs workers
    res = CliRunner().invoke(app, ["check", *SMALL, "--graphs", "1", "--jobs", "0", "--case-timeout", "5"])
    assert res.exit_code == 3


def test_bad_input_is_one_line_exit_3(tmp_path):
    for args, text in [
        (["check", "--pass", "FuseOps", "--generator", "nope", "--graphs", "1"], "unknown generator 'nope'"),
        (["check", "--pass", "FuseOps", "--module", str(tmp_path / "missing.py")], "cannot read"),
        (["check", "--graphs", "1"], "exactly one of --pass"),
        (["check", "--pass", "FuseOps", "--graphs", "1", "--resume"], "--resume needs"),
        (["check", "--pipeline", "nope", "--graphs", "1"], "unknown pipeline 'nope'"),
    ]:
        res = invoke(*args)
        assert res.exit_code == 3, (args, res.output)
        assert len(res.stderr.strip().splitlines()) == 1 and text in res.stderr, res.stderr


def test_float_model_options_pass_through():
    """--solver/--assume go to Options when it has those fields; a default value is accepted
    either way, anything else is bad input until the field exists."""
    import dataclasses

    from tvtv.api import float_options
    from tvtv.refinement import Options
    have = {f.name for f in dataclasses.fields(Options)}
    assert float_options("z3", None) == ({"solver": "z3"} if "solver" in have else {})
    if "assume" in have:
        assert float_options(None, ["no-nan,no-inf", "no-nan"]) == {"assume": ("no-nan", "no-inf")}
    else:
        with pytest.raises(InputError, match="--assume no-nan"):
            float_options(None, ["no-nan"])


def test_malformed_module_in_a_folder_stops_the_run_keeping_finished_cases(tmp_path):
    from tests.test_io_cli import GOOD
    folder = tmp_path / "mods"
    folder.mkdir()
    (folder / "a.py").write_text(GOOD)
    (folder / "b.py").write_text(GOOD.replace("R.add(x, y)", "R.add(x, y", 1))
    (folder / "c.py").write_text(GOOD)
    db = tmp_path / "run.sqlite"
    res = invoke("check", "--pass", "EliminateCommonSubexpr", "--module", str(folder), "--db", str(db))
    assert res.exit_code == 3, res.output
    assert len(res.stderr.strip().splitlines()) == 1 and "b.py" in res.stderr, res.stderr
    assert list(stored_cases(db)) == ["a"]


def test_check_passes_float_model_options_to_the_check(tmp_path):
    import dataclasses

    from tests.test_io_cli import GOOD
    from tvtv.refinement import Options
    if not {"solver", "assume"} <= {f.name for f in dataclasses.fields(Options)}:
        pytest.skip("Options has no solver/assume fields yet")
    (tmp_path / "m.py").write_text(GOOD)
    out = tmp_path / "r.json"
    res = invoke("check", "--pass", "EliminateCommonSubexpr", "--module", str(tmp_path / "m.py"), "--jobs", "0",
                 "--fp", "real", "--solver", "both", "--assume", "no-nan,no-inf", "--assume", "no-nan",
                 "--json", str(out))
    assert res.exit_code == 0, res.output
    (r,) = json.loads(out.read_text())["results"]
    assert r["fp_model"] == "real"
    assert sorted(a.split(":")[0] for a in r["assumptions"]) == ["no-inf", "no-nan"]
    assert any("both" in level for level in r["levels"])
    res = invoke("check", "--pass", "EliminateCommonSubexpr", "--module", str(tmp_path / "m.py"),
                 "--solver", "yices")
    assert res.exit_code == 3 and "yices" in res.stderr
