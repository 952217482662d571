"""Benchmark: minimizing a counterexample only testing found (`tvtv.minimize`, testing mode).

A check the solver leaves undecided is tested on drawn inputs (`tvtv.api._test_undecided`);
minimization checks its candidates without the VM, so before testing mode such a finding
could not be reduced. Each graph's counterexample is found once, by `tvtv.check_pass` as
`tvtv check` runs it (`--timeout 30`), then minimized twice in this process, in turns:

- **testing**: as tvtv does, each candidate tested on drawn inputs of the original inputs'
  class (finite, no NaN, any);
- **solver**: `found_by_testing` answered False, so each candidate goes to the solver as
  before (`confirm_vm=False`, the reduction's 120 s budget).

Printed per graph: ops before and after, checks, seconds, the witness and the minimized ops.
The machines are shared and noisy: compare the two ways within one run.

    .venv/bin/python bench/minimize_testing.py [--generator gencog --seed 23 --graphs 7]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from generated import generated_graphs  # noqa: E402  (bench/generated.py)


def minimize_both(path: Path, pass_name: str) -> None:
    import tvtv.minimize as minimize
    from tvtv.api import check_pass
    from tvtv.ir import tvm_bridge
    module = tvm_bridge.load_module(path)
    start = time.perf_counter()
    (r,) = check_pass(pass_name, module, timeout=30.0).results
    found = time.perf_counter() - start
    print(f"{path.stem}: {r.verdict} in {found:.1f} s; found by testing: "
          f"{minimize.found_by_testing(r)}", flush=True)
    if r.verdict != "counterexample" or not minimize.found_by_testing(r):
        return
    real = minimize.found_by_testing
    for way in ("testing", "solver"):
        minimize.found_by_testing = real if way == "testing" else (lambda result: False)
        try:
            start = time.perf_counter()
            m = minimize.minimize_case(module, pass_name, r)
            seconds = time.perf_counter() - start
        finally:
            minimize.found_by_testing = real
        ops = ", ".join(n.op.removeprefix("relax.") for n in m.graph.nodes)
        print(f"  {way:8} {m.original_ops} -> {m.ops} ops, {m.checks} checks, {seconds:.1f} s, "
              f"witness {m.witness}: {ops}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--generator", default="gencog")
    ap.add_argument("--seed", type=int, default=23)
    ap.add_argument("--graphs", default="7", help="graph indices, comma-separated")
    ap.add_argument("--pass", dest="pass_name", default="LegalizeOps")
    args = ap.parse_args()
    indices = [int(k) for k in args.graphs.split(",")]
    with generated_graphs(args.generator, args.seed, max(indices) + 1) as graph:
        for k in indices:
            minimize_both(graph(k), args.pass_name)


if __name__ == "__main__":
    main()
