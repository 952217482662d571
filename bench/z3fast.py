"""Benchmark: z3py's term constructors against tvtv's (`tvtv/z3fast.py`).

First each constructor alone (z3py's call against z3fast's, same arguments, many times), then
zero-pipeline graphs checked twice, once as tvtv runs them and once with every z3fast
function replaced by the z3py function it stands for (`zf.And = z3.And`, ...), interleaved
graph by graph in one run (the machines are shared and noisy, so only the ratios are
meaningful; which way goes first alternates). Each check runs in a process of its own, as
`bench/float_memo.py` explains. Both ways build the same terms, so the verdicts must agree.

    .venv/bin/python bench/z3fast.py [--graphs 12] [--timeout 300]

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
import timeit
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

ASSUME = "no-nan,no-inf,no-signed-zeros,per-operation,op-rounding"


def z3py_way() -> None:
    """Make every z3fast function the z3py function (or operator) it stands for."""
    import z3

    from tvtv import z3fast as zf
    for name in ("And", "Or", "Not", "If", "Select", "Store", "Extract", "Concat", "ULT", "ULE",
                 "UGT", "UGE", "fpIsNaN", "fpIsInf", "fpIsZero", "fpIsNegative", "fpIsPositive",
                 "fpLT", "fpLEQ", "fpGT", "fpGEQ", "fpEQ"):
        setattr(zf, name, getattr(z3, name))
    zf.Eq = zf.EqNumeral = lambda a, b: a == b
    zf.Ne = lambda a, b: a != b
    zf.batch = lambda name, terms: z3.Function(
        name, *[t.sort() for t in terms], z3.BoolSort())(*list(terms))


def constructors(number: int = 20000) -> None:
    """Microseconds per call of each constructor both ways, and their ratio."""
    import z3

    from tvtv import z3fast as zf
    a, b, c = z3.Bools("a b c")
    x, y = z3.BitVecs("x y", 17)
    f, g = z3.FPs("f g", z3.Float32())
    arr = z3.Array("arr", z3.BitVecSort(32), z3.BitVecSort(17))
    k = z3.BitVec("k", 32)
    four = z3.BitVecVal(4, 17)
    cases = [("And(a, b, c)", lambda: z3.And(a, b, c), lambda: zf.And(a, b, c)),
             ("Or(a, b)", lambda: z3.Or(a, b), lambda: zf.Or(a, b)),
             ("If(a, x, y)", lambda: z3.If(a, x, y), lambda: zf.If(a, x, y)),
             ("Select(arr, k)", lambda: z3.Select(arr, k), lambda: zf.Select(arr, k)),
             ("Store(arr, k, x)", lambda: z3.Store(arr, k, x), lambda: zf.Store(arr, k, x)),
             ("x == 4", lambda: x == 4, lambda: zf.EqNumeral(x, four)),
             ("Extract(15, 0, x)", lambda: z3.Extract(15, 0, x), lambda: zf.Extract(15, 0, x)),
             ("ULE(x, y)", lambda: z3.ULE(x, y), lambda: zf.ULE(x, y)),
             ("fpLT(f, g)", lambda: z3.fpLT(f, g), lambda: zf.fpLT(f, g))]
    print(f"{'constructor':>18} {'z3py us':>8} {'z3fast us':>9} {'ratio':>6}")
    for label, slow, fast in cases:
        s = timeit.timeit(slow, number=number) / number * 1e6
        t = timeit.timeit(fast, number=number) / number * 1e6
        print(f"{label:>18} {s:8.2f} {t:9.2f} {t / s:6.2f}")


def one(index: int, fast: bool) -> dict:
    """Check graph `index` in this process: {"seconds", "verdict"}."""
    from tvtv import cli, runner
    if not fast:
        z3py_way()
    options = cli._float_options(None, [ASSUME])
    options["budget"] = 100.0
    config = runner.RunConfig(pass_name="zero", generator="simple", seed=0, min_ops=10,
                              max_ops=30, float_options=options)
    case = runner.generated_cases(config, index + 1)[index]
    start = time.perf_counter()
    results = runner.run_case_in_worker(case, config, None)
    return {"seconds": time.perf_counter() - start,
            "verdict": "/".join(r.verdict for r in results)}


def child(index: int, fast: bool, timeout: float) -> tuple[float, str]:
    """(seconds, verdict) of graph `index` checked in a fresh process; a check that outlives
    `timeout` counts as `timeout` seconds, verdict "timeout"."""
    way = "z3fast" if fast else "z3py"
    cmd = [sys.executable, __file__, "--one", str(index), "--way", way]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=ROOT)
    except subprocess.TimeoutExpired:
        return timeout, "timeout"
    lines = [ln for ln in out.stdout.splitlines() if ln.startswith("{")]
    if out.returncode != 0 or not lines:
        raise SystemExit(f"graph {index} ({way}) failed:\n{out.stderr[-2000:]}")
    found = json.loads(lines[-1])
    return found["seconds"], found["verdict"]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--graphs", type=int, default=12)
    ap.add_argument("--timeout", type=float, default=300.0)
    ap.add_argument("--one", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--way", choices=["z3fast", "z3py"], help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one is not None:
        print(json.dumps(one(args.one, args.way == "z3fast")))
        return
    constructors()
    totals = {"z3fast": 0.0, "z3py": 0.0}
    ratios: list[float] = []
    differ = 0
    print(f"\n{'graph':>6} {'z3fast s':>9} {'z3py s':>8}  verdicts (z3fast / z3py)")
    for k in range(args.graphs):
        if k % 2:
            u, w = child(k, False, args.timeout)
            t, v = child(k, True, args.timeout)
        else:
            t, v = child(k, True, args.timeout)
            u, w = child(k, False, args.timeout)
        totals["z3fast"] += t
        totals["z3py"] += u
        ratios.append(t / u)
        differ += v != w
        print(f"{k:>6} {t:9.2f} {u:8.2f}  {v} / {w}", flush=True)
    print(f"total: z3fast {totals['z3fast']:.1f} s, z3py {totals['z3py']:.1f} s; "
          f"z3fast / z3py = {totals['z3fast'] / totals['z3py']:.2f}; geometric mean of the "
          f"per-graph ratios {math.exp(sum(map(math.log, ratios)) / len(ratios)):.2f}; "
          f"verdicts differing: {differ}")


if __name__ == "__main__":
    main()
