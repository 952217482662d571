"""`tvtv generate` for every generator, and HIRGen's disruptive mode through the CLI."""
from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from tvtv.cli import app

runner = CliRunner()


@pytest.mark.parametrize("generator", ["simple", "isra", "hirgen", "gencog", "typed"])
def test_generate_writes_modules_that_read_back(tmp_path, generator):
    from tvtv.ir import tvm_bridge
    res = runner.invoke(app, ["generate", "--generator", generator, "-n", "2", "--seed", "3",
                              "--min-ops", "3", "--max-ops", "6", "--out", str(tmp_path)])
    assert res.exit_code == 0, res.output
    files = sorted(tmp_path.glob(f"{generator}_3_*.py"))
    assert len(files) == 2
    for f in files:
        assert tvm_bridge.is_well_formed(tvm_bridge.load_module(f))


def test_graphs_is_the_count_as_in_check(tmp_path):
    """`--graphs N` (check's spelling) and `-n N` write the same graphs."""
    args = ["generate", "--generator", "simple", "--seed", "4", "--min-ops", "3", "--max-ops", "5"]
    for flag, folder in (("--graphs", tmp_path / "a"), ("-n", tmp_path / "b")):
        res = runner.invoke(app, [*args, flag, "3", "--out", str(folder)])
        assert res.exit_code == 0, res.output
    written = sorted(p.name for p in (tmp_path / "a").glob("*.py"))
    assert written == [f"simple_4_{k}.py" for k in range(3)]
    assert all((tmp_path / "a" / n).read_text() == (tmp_path / "b" / n).read_text() for n in written)


def test_disruptive_files_are_rejected_by_tvm(tmp_path):
    from generators.hirgen import crash_oracle
    res = runner.invoke(app, ["generate", "--generator", "hirgen", "--mode", "disruptive",
                              "-n", "3", "--seed", "0", "--out", str(tmp_path)])
    assert res.exit_code == 0, res.output
    for k in range(3):
        text = (tmp_path / f"hirgen_0_{k}.py").read_text()
        violation = json.loads((tmp_path / f"hirgen_0_{k}.violation.json").read_text())
        assert violation and violation["kind"]
        outcome = crash_oracle(text)
        assert outcome.verdict == "rejected", (violation, outcome)


def test_disruptive_needs_hirgen(tmp_path):
    res = runner.invoke(app, ["generate", "--generator", "simple", "--mode", "disruptive",
                              "--out", str(tmp_path)])
    assert res.exit_code == 3
    assert "needs --generator hirgen" in res.output
