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
@pytest.mark.timeout(300)
def test_broken_fuseops_is_caught_on_generated_graphs():
    """A FuseOps output whose fused functions receive their arguments swapped is refuted."""
    import generators
    import tvtv
    from tests.conftest import mutate_re
    from tvtv import passes
    from tvtv.errors import InputError
    from tvtv.ir import tvm_bridge

    spec = passes.get("FuseOps")
    checked = 0
    for k in range(8):
        src = passes.prepare(spec, generators.generate_module("simple", 0, k))
        tgt = tvm_bridge.apply(spec.make(), src)
        try:
            script, _ = tvm_bridge.module_to_script(tgt)
        except InputError:   # known limit: constants inside fused functions (see README)
            continue
        import re
        m = re.search(r"R\.call_tir\(cls\.\w+, \((\w+), (\w+)\)", script)
        if not m or m.group(1) == m.group(2):
            continue
        try:   # swapping arguments of different shapes does not type-check: skip those
            broken = mutate_re(tgt, re.escape(m.group(0)), m.group(0).replace(
                f"({m.group(1)}, {m.group(2)})", f"({m.group(2)}, {m.group(1)})"))
        except InputError:
            continue
        (r,) = tvtv.verify(src, broken, timeout=10, confirm_vm=False).results
        # never proved; a counterexample, or unknown when the solver runs out of time
        assert r.verdict != "proved", (k, script)
        checked += 1
    assert checked >= 1
