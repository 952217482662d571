"""End to end: `tvtv check --pass FuseOps --graphs 50 --seed 0` (the README's main job).

Marked slow (about 10-20 s here); its budget is enforced by pytest-timeout."""
from __future__ import annotations

import json
import statistics
import subprocess
import sys

import pytest


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_fuseops_on_50_generated_graphs(tmp_path):
    out = tmp_path / "fuseops.json"
    p = subprocess.run([sys.executable, "-m", "tvtv", "check", "--pass", "FuseOps", "--graphs", "50",
                        "--seed", "0", "--json", str(out)], capture_output=True, text=True, timeout=280)
    data = json.loads(out.read_text())
    s = data["summary"]
    assert len(data["results"]) == 50
    assert s["counterexample"] == 0, p.stdout
    assert s["proved"] >= 49, p.stdout          # at least 98% proved
    assert statistics.median(r["seconds"] for r in data["results"]) <= 1.0
    assert p.returncode == (0 if s["unknown"] == 0 else 2)


@pytest.mark.slow
@pytest.mark.timeout(450)
def test_broken_fuseops_is_caught_on_generated_graphs():
    """A FuseOps output whose fused functions receive their arguments swapped is not
    proved, unless the swap changes nothing: then execution on the VM must agree."""
    import generators
    import numpy as np
    import tvtv
    from tests.conftest import mutate_re
    from tvtv import passes
    from tvtv.confirm import first_difference
    from tvtv.errors import InputError
    from tvtv.ir import tvm_bridge

    specials = np.array([0.0, -0.0, 1.0, -1.5, np.inf, -np.inf, np.nan], "float32")

    def changes_outputs(a, b) -> bool:
        """Do `a` and `b` differ on the VM on standard-normal inputs or on float inputs
        drawn from special values (a swapped `minimum` differs only on ±0)?"""
        rng = np.random.default_rng(0)
        shapes = [([int(d) for d in p.ty.shape], str(p.ty.dtype)) for p in a["main"].params]
        sets = [[rng.standard_normal(sh).astype(dt) for sh, dt in shapes],
                [rng.choice(specials, sh).astype(dt) if dt.startswith("float")
                 else rng.standard_normal(sh).astype(dt) for sh, dt in shapes]]
        runs = tvm_bridge.run_vm_isolated({"a": a, "b": b}, "main", sets)
        for (sa, outs_a), (sb, outs_b) in zip(runs["a"], runs["b"]):
            assert sa == "ok" and sb == "ok", (sa, sb)
            if first_difference(outs_a, outs_b) is not None:   # NaN = NaN, +0 ≠ -0
                return True
        return False

    spec = passes.get("FuseOps")
    caught = harmless = 0

    def enough() -> bool:
        """At least one swap caught, and three graphs decided in all."""
        return caught >= 1 and caught + harmless >= 3

    for k in range(8):
        src = passes.prepare(spec, generators.generate_module("simple", 0, k))
        tgt = tvm_bridge.apply(spec.make(), src)
        try:
            script, _ = tvm_bridge.module_to_script(tgt)
        except InputError:   # constants the script cannot carry back (tvm_bridge.module_to_script)
            continue
        import re
        # the first call whose swap type-checks
        for m in re.finditer(r"R\.call_tir\(cls\.\w+, \((\w+), (\w+)\)", script):
            if m.group(1) == m.group(2):
                continue
            try:   # swapping arguments of different shapes does not type-check: skip those
                broken = mutate_re(tgt, re.escape(m.group(0)), m.group(0).replace(
                    f"({m.group(1)}, {m.group(2)})", f"({m.group(2)}, {m.group(1)})"))
            except InputError:
                continue
            break
        else:
            continue
        # a budget per check keeps the test within its timeout on a slow machine (8 graphs
        # with only a per-query timeout took over 300 s on 2026-11-29 beside a CI run)
        (r,) = tvtv.verify(src, broken, timeout=10, budget=40, confirm_vm=False).results
        if r.verdict == "proved":
            # a swap may change nothing (graph 2: the operands of a 1x1x1 matmul, one
            # product); a proof that execution contradicts would be unsound
            assert not changes_outputs(tgt, broken), (k, m.group(0), script)
            harmless += 1
        else:   # a counterexample, or unknown when the solver runs out of time
            caught += 1
        if enough():
            break   # what the assertion below asks already holds
    assert enough(), (caught, harmless)


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_fusetir_on_30_generated_graphs(tmp_path):
    """Issue #4's FuseTIR figure, `tvtv check --pass FuseTIR --graphs 30 --seed 0` (PrimFunc
    bodies encoded). Under no-nan, no-inf, per-operation: at least 95% proved and no
    counterexample (30 / 0 / 0 and 51 s of wall time alone on 2026-12-04). Without
    assumptions every graph not proved must be a counterexample confirmed by execution on
    the VM (TVM's simplifier folding `x - x` in fused code, docs/findings.md): never an
    unconfirmed one, and never a proof of a graph whose runs differ."""
    def run(name: str, *assume: str) -> dict:
        out = tmp_path / f"{name}.json"
        subprocess.run([sys.executable, "-m", "tvtv", "check", "--pass", "FuseTIR",
                        "--graphs", "30", "--seed", "0", "--jobs", "2", "--case-timeout", "300",
                        "--no-minimize", "--json", str(out), *assume],
                       capture_output=True, text=True, timeout=420)
        return json.loads(out.read_text())

    assumed = run("assumed", "--assume", "no-nan,no-inf,per-operation")
    s = assumed["summary"]
    assert len(assumed["results"]) == 30
    assert s["counterexample"] == 0 and s["proved"] >= 29, s
    assert all(r["assumptions"] for r in assumed["results"])
    plain = run("plain")
    assert len(plain["results"]) == 30
    refuted = [r for r in plain["results"] if r["verdict"] == "counterexample"]
    assert refuted, plain["summary"]          # the finding stands (6 of 30 on 2026-12-04)
    for r in refuted:
        assert r["confirmed"] is True and r["confirmed_by"].startswith("vm"), r
    assert plain["summary"]["proved"] >= 22, plain["summary"]
