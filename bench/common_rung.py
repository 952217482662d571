"""Benchmark: the ladder's "common" rung against the ladder without it, on the `default`
pipeline's RewriteDataflowReshape.

RewriteDataflowReshape turns a legalized reshape's `call_tir` into `R.reshape` and keeps
every other call. With the common rung (`tvtv.encode.abstraction`), the check starts there,
since the target stopped calling a PrimFunc the source calls: the PrimFuncs both sides call
are uninterpreted functions, the reshape's body is a row-major copy of its input, and the
outputs are one term on both sides. Without it (as before 2026-12-06), the opaque rung runs
first, finds a difference of uninterpreted functions, runs it on the VM to be sure (most of
the check's time), and climbs to every PrimFunc's body.

"Without" is emulated by making `called_prim_funcs` empty: no PrimFunc is then common, so the
common rung is skipped and the opaque rung is tried whenever the target's PrimFuncs are all
the source's (the old rule). Each application is checked both ways in this process, in
turns (the machines are shared and noisy: compare within one run); printed per graph:
verdicts and seconds both ways and the ratio, then their geometric mean.

    .venv/bin/python bench/common_rung.py [--generator simple --seed 0 --graphs 3]
"""
from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from generated import generated_graphs  # noqa: E402  (bench/generated.py)

PASS = "RewriteDataflowReshape"


def timed(before, after, common: bool) -> tuple[str, float]:
    import tvtv
    from tvtv import refinement
    real = refinement.called_prim_funcs
    if not common:
        refinement.called_prim_funcs = lambda program: frozenset()
    try:
        start = time.perf_counter()
        results = tvtv.verify(before, after, pass_name=PASS).results
        return ", ".join(r.verdict for r in results), time.perf_counter() - start
    finally:
        refinement.called_prim_funcs = real


def main() -> None:
    from tvtv import pipeline as pl
    from tvtv.ir import tvm_bridge
    ap = argparse.ArgumentParser()
    ap.add_argument("--generator", default="simple")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--graphs", type=int, default=3)
    args = ap.parse_args()
    ratios: list[float] = []
    with generated_graphs(args.generator, args.seed, args.graphs) as graph:
        for k in range(args.graphs):
            _, pipeline = pl.load_pipeline("default")
            apps, _ = pl.run_recorded(pipeline, tvm_bridge.load_module(graph(k)))
            app = next((a for a in apps if a.pass_name == PASS), None)
            if app is None or tvm_bridge.structural_equal(app.before, app.after):
                print(f"graph {k:2} {PASS} left the module unchanged", flush=True)
                continue
            ways = (True, False) if len(ratios) % 2 == 0 else (False, True)
            got = {way: timed(app.before, app.after, way) for way in ways}
            ratio = got[True][1] / got[False][1]
            ratios.append(ratio)
            print(f"graph {k:2} common rung: {got[True][0]:9} {got[True][1]:7.2f} s   without: "
                  f"{got[False][0]:9} {got[False][1]:7.2f} s   ratio {ratio:.4f}", flush=True)
    if ratios:
        geo = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
        print(f"geometric mean of the time ratios (common rung / without): {geo:.4f}")


if __name__ == "__main__":
    main()
