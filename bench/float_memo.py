"""Benchmark: the abstract float domain's memo of its operations (`absfp.abstract._memoized`).

Each zero-pipeline graph is checked twice, once as tvtv runs it and once with every domain's
memo forgetting what it built (so each add, mul, div, lt and function application builds its
term again), interleaved graph by graph in one run (the machines are shared and noisy, so
only the ratio is meaningful; which way goes first alternates). Each check runs in a process
of its own, as a run's worker checks its first case: in one process the checks before
change Z3's term ids and with them its search (a graph once stuck for ten minutes in
`Z3_solver_assert` after twenty checks of both kinds, and took 2.6 s alone).

It prints the seconds per graph (the check alone, without starting Python and TVM), both
verdicts (they must agree: the memo returns the term Z3 would hash-cons anyway), the ratio of
the totals and the geometric mean of the per-graph ratios (less swayed by a graph whose Z3
search is long one way by chance: graph 6 takes 5-90 s).

    .venv/bin/python bench/float_memo.py [--graphs 12] [--timeout 300]

The options are those of `tvtv check --pass zero --case-timeout 300 --assume
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

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

ASSUME = "no-nan,no-inf,no-signed-zeros,per-operation,op-rounding"


class Forgetful(dict):
    """A memo that never holds anything."""

    def get(self, key, default=None):
        return default

    def __setitem__(self, key, value) -> None:
        pass


def one(index: int, memo: bool) -> dict:
    """Check graph `index` in this process: {"seconds", "verdict"}."""
    from tvtv import cli, runner
    from tvtv.absfp import abstract
    if not memo:
        init = abstract.AbstractFloats.__init__

        def forgetful_init(self, *args, **kwargs) -> None:
            init(self, *args, **kwargs)
            self._memo = Forgetful()
        abstract.AbstractFloats.__init__ = forgetful_init
    options = cli._float_options(None, [ASSUME])
    options["budget"] = 100.0
    config = runner.RunConfig(pass_name="zero", generator="simple", seed=0, min_ops=10,
                              max_ops=30, float_options=options)
    case = runner.generated_cases(config, index + 1)[index]
    start = time.perf_counter()
    results = runner.run_case_in_worker(case, config, None)
    return {"seconds": time.perf_counter() - start,
            "verdict": "/".join(r.verdict for r in results)}


def child(index: int, memo: bool, timeout: float) -> tuple[float, str]:
    """(seconds, verdict) of graph `index` checked in a fresh process; a check that outlives
    `timeout` counts as `timeout` seconds, verdict "timeout"."""
    cmd = [sys.executable, __file__, "--one", str(index), "--way", "memo" if memo else "none"]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=ROOT)
    except subprocess.TimeoutExpired:
        return timeout, "timeout"
    lines = [ln for ln in out.stdout.splitlines() if ln.startswith("{")]
    if out.returncode != 0 or not lines:
        raise SystemExit(f"graph {index} ({'memo' if memo else 'none'}) failed:\n{out.stderr[-2000:]}")
    found = json.loads(lines[-1])
    return found["seconds"], found["verdict"]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--graphs", type=int, default=12)
    ap.add_argument("--timeout", type=float, default=300.0)
    ap.add_argument("--one", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--way", choices=["memo", "none"], help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one is not None:
        print(json.dumps(one(args.one, args.way == "memo")))
        return
    totals = {"memo": 0.0, "none": 0.0}
    ratios: list[float] = []
    differ = 0
    print(f"{'graph':>6} {'memo s':>8} {'none s':>8}  verdicts (memo / none)")
    for k in range(args.graphs):
        if k % 2:
            u, w = child(k, False, args.timeout)
            t, v = child(k, True, args.timeout)
        else:
            t, v = child(k, True, args.timeout)
            u, w = child(k, False, args.timeout)
        totals["memo"] += t
        totals["none"] += u
        ratios.append(t / u)
        differ += v != w
        print(f"{k:>6} {t:8.2f} {u:8.2f}  {v} / {w}", flush=True)
    print(f"total: memo {totals['memo']:.1f} s, none {totals['none']:.1f} s; "
          f"memo / none = {totals['memo'] / totals['none']:.2f}; geometric mean of the "
          f"per-graph ratios {math.exp(sum(map(math.log, ratios)) / len(ratios)):.2f}; "
          f"verdicts differing: {differ}")


if __name__ == "__main__":
    main()
