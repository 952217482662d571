"""Zero-pipeline graphs checked two ways, interleaved graph by graph in one run: the shared
part of `bench/float_memo.py` and `bench/z3fast.py` (not a benchmark itself).

Each check runs in a process of its own, as a run's worker checks its first case: in one
process the checks before change Z3's term ids and with them its search (a graph once stuck
for ten minutes in `Z3_solver_assert` after twenty checks of both kinds, and took 2.6 s
alone). Which way goes first alternates. It prints the seconds per graph (the check alone,
without starting Python and TVM), both verdicts, the ratio of the totals and the geometric
mean of the per-graph ratios (less swayed by a graph whose Z3 search is long one way by
chance). The options are those of `tvtv check --pass zero --case-timeout 300 --assume
no-nan,no-inf,no-signed-zeros,per-operation,op-rounding`.
"""
from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

ASSUME = "no-nan,no-inf,no-signed-zeros,per-operation,op-rounding"

# a way's name -> what to do in the checking process before the check (None: nothing)
Ways = dict[str, "Callable[[], None] | None"]


def check_graph(index: int) -> dict:
    """Check seed-0 zero graph `index` in this process: {"seconds", "verdict"}."""
    from tvtv import cli, runner
    options = cli._float_options(None, [ASSUME])
    options["budget"] = 100.0
    config = runner.RunConfig(pass_name="zero", generator="simple", seed=0, min_ops=10,
                              max_ops=30, float_options=options)
    case = runner.generated_cases(config, index + 1)[index]
    start = time.perf_counter()
    results = runner.run_case_in_worker(case, config, None)
    return {"seconds": time.perf_counter() - start,
            "verdict": "/".join(r.verdict for r in results)}


def _child(script: str, index: int, way: str, timeout: float) -> tuple[float, str]:
    """(seconds, verdict) of graph `index` checked `way` in a fresh process running
    `script`; a check that outlives `timeout` counts as `timeout` seconds, verdict
    "timeout"."""
    cmd = [sys.executable, script, "--one", str(index), "--way", way]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=ROOT)
    except subprocess.TimeoutExpired:
        return timeout, "timeout"
    lines = [ln for ln in out.stdout.splitlines() if ln.startswith("{")]
    if out.returncode != 0 or not lines:
        raise SystemExit(f"graph {index} ({way}) failed:\n{out.stderr[-2000:]}")
    found = json.loads(lines[-1])
    return found["seconds"], found["verdict"]


def without_drawn_set(name: str) -> Callable[[], None]:
    """A way's setup: confirmation and testing draw their input sets without
    `tvtv.confirm.<name>` (one of `confirm.DRAWN_SETS`), as tvtv did before it was added."""
    def setup() -> None:
        from tvtv import confirm
        dropped = getattr(confirm, name)
        confirm.DRAWN_SETS = tuple(s for s in confirm.DRAWN_SETS if s is not dropped)
    return setup


def main(script: str, ways: Ways, before: Callable[[], None] | None = None) -> None:
    """The command line of a two-way benchmark `script`: `--graphs N --timeout S`, or (in
    the checking process) `--one K --way NAME`. `before` runs first in the parent."""
    first, second = ways
    ap = argparse.ArgumentParser()
    ap.add_argument("--graphs", type=int, default=12)
    ap.add_argument("--timeout", type=float, default=300.0)
    ap.add_argument("--one", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--way", choices=list(ways), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one is not None:
        setup = ways[args.way]
        if setup is not None:
            setup()
        print(json.dumps(check_graph(args.one)))
        return
    if before is not None:
        before()
    totals = {first: 0.0, second: 0.0}
    ratios: list[float] = []
    differ = 0
    print(f"\n{'graph':>6} {first + ' s':>9} {second + ' s':>9}  verdicts ({first} / {second})")
    for k in range(args.graphs):
        if k % 2:
            u, w = _child(script, k, second, args.timeout)
            t, v = _child(script, k, first, args.timeout)
        else:
            t, v = _child(script, k, first, args.timeout)
            u, w = _child(script, k, second, args.timeout)
        totals[first] += t
        totals[second] += u
        ratios.append(t / u)
        differ += v != w
        print(f"{k:>6} {t:9.2f} {u:9.2f}  {v} / {w}", flush=True)
    print(f"total: {first} {totals[first]:.1f} s, {second} {totals[second]:.1f} s; "
          f"{first} / {second} = {totals[first] / totals[second]:.2f}; geometric mean of the "
          f"per-graph ratios {math.exp(sum(map(math.log, ratios)) / len(ratios)):.2f}; "
          f"verdicts differing: {differ}")
