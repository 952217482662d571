"""Benchmark: Z3 against cvc5 on the same refinement queries.

Each pair is checked with `solver="z3"` and `solver="cvc5"` (cvc5 reads the query as SMT-LIB,
with array lambdas lifted to quantified definitions; see tvtv/solvers.py), in the abstract,
IEEE and real models, interleaved. Only ratios from one run are meaningful on a shared
machine. A pair where the verdicts differ is flagged (an unknown from one solver is not a
disagreement; opposite sat/unsat answers would make the verdict unknown and are listed).

    .venv/bin/python bench/solvers.py [--repeat 1] [--timeout 20]
"""
from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tvtv.ir import relax_reader  # noqa: E402
from tvtv.refinement import Options, check_programs  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bitwidth import pairs  # noqa: E402


def timed(a, b, fp: str, solver: str, timeout: float) -> tuple[float, str]:
    start = time.perf_counter()
    results = check_programs(a, b, Options(fp=fp, solver=solver, timeout=timeout,
                                           refine_to_ieee=False, confirm=False))
    return time.perf_counter() - start, ",".join(r.verdict for r in results)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=20.0)
    ap.add_argument("--models", default="abstract,ieee,real")
    args = ap.parse_args()
    ratios: dict[str, list[float]] = {}
    print(f"{'pair':58s} {'model':8s} {'z3 s':>8s} {'cvc5 s':>8s} {'cvc5/z3':>8s}  verdicts")
    for name, src, tgt in pairs():
        a, b = relax_reader.read_module(src), relax_reader.read_module(tgt)
        for fp in args.models.split(","):
            tz, tc = [], []
            for _ in range(args.repeat):
                t, vz = timed(a, b, fp, "z3", args.timeout)
                tz.append(t)
                t, vc = timed(a, b, fp, "cvc5", args.timeout)
                tc.append(t)
            x, y = statistics.median(tz), statistics.median(tc)
            flag = "" if vz == vc else "  <- verdicts differ"
            if vz == vc and "unknown" not in vz and x > 0.02:
                ratios.setdefault(fp, []).append(y / x)
            print(f"{name:58s} {fp:8s} {x:8.3f} {y:8.3f} {y / x:8.2f}  {vz} / {vc}{flag}", flush=True)
    for fp, rs in ratios.items():
        gm = math.exp(sum(math.log(r) for r in rs) / len(rs))
        print(f"{fp}: {len(rs)} pairs decided alike, cvc5 / z3 time geometric mean {gm:.2f}x, "
              f"median {statistics.median(rs):.2f}x")


if __name__ == "__main__":
    main()
