"""Benchmark: queries folded on their few cases (`tvtv.numeral_cases.fold`, applied to every
query in `refinement._check`) against the same queries unfolded.

Two kinds of checks, each run both ways in this process, in turns (the machines are shared
and noisy: compare within one run; the short ones twice, in the order folded, unfolded,
unfolded, folded, and their times summed):
- where the fold decides: FastMathTransform on a softmax over an axis of one element (the
  pattern of Isra seed-23 graphs 0 and 6) and on Isra seed-23 graph 6 itself;
- where it has nothing to fold and only costs its walk: FuseTIR and `zero` (under `zero`'s
  assumptions) on the first seed-0 graphs of the default generator.
"Unfolded" replaces `numeral_cases.fold` by the identity; the float models' own rules
(`difference_from_guarded`, x + (-x), functions lifted over cases) stay, as they shape
the terms and not the queries. Printed per check: verdicts and seconds both ways and the
ratio, then the geometric mean of each group's ratios.

    .venv/bin/python bench/numeral_cases.py [--graphs 4] [--timeout 30] [--budget 120]
"""
from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

ZERO_ASSUME = ("no-nan", "no-inf", "no-signed-zeros", "per-operation", "op-rounding")


def timed(mod, pass_name: str, folded: bool, timeout: float, budget: float,
          assume=()) -> tuple[str, float]:
    import tvtv
    from tvtv import lemmas, numeral_cases, z3context
    real = numeral_cases.fold
    if not folded:
        numeral_cases.fold = lambda facts: list(facts)
    # each run starts alike: no operator lemma proved by the other way's run (`zero` proves
    # them per operator and keeps them for the process), a fresh Z3 context
    lemmas._CACHE.clear()
    try:
        with z3context.scope():
            start = time.perf_counter()
            results = tvtv.check_pass(pass_name, mod, timeout=timeout, assume=assume,
                                      budget=budget).results
            return ", ".join(r.verdict for r in results), time.perf_counter() - start
    finally:
        numeral_cases.fold = real


def main() -> None:
    import generators
    from tests.test_numeral_cases import SoftmaxOfOne
    ap = argparse.ArgumentParser()
    ap.add_argument("--graphs", type=int, default=4, help="seed-0 graphs for FuseTIR and zero")
    ap.add_argument("--timeout", type=float, default=30.0, help="seconds per query")
    ap.add_argument("--budget", type=float, default=120.0,
                    help="seconds per check (as the CLI's --case-timeout 120)")
    args = ap.parse_args()
    cases = [("decides", "softmax over one element", SoftmaxOfOne, "FastMathTransform", ()),
             ("decides", "isra seed 23 graph 6", generators.generate_module("isra", 23, 6),
              "FastMathTransform", ())]
    for k in range(args.graphs):
        mod = generators.generate_module("simple", 0, k)
        cases.append(("walks", f"simple seed 0 graph {k}", mod, "FuseTIR", ()))
        cases.append(("walks", f"simple seed 0 graph {k}", mod, "zero", ZERO_ASSUME))
    ratios: dict[str, list[float]] = {}
    for group, name, mod, pass_name, assume in cases:
        # folded, unfolded, then (for the short checks) unfolded, folded: a process's first
        # run of a pass pays for more than its check, and the order would show as a ratio
        order = (True, False, False, True) if group == "walks" else (True, False)
        got: dict[bool, tuple[str, float]] = {}
        for way in order:
            verdicts, seconds = timed(mod, pass_name, way, args.timeout, args.budget, assume)
            if way in got and got[way][0] != verdicts:
                verdicts = f"{got[way][0]} / {verdicts}"
            got[way] = (verdicts, got.get(way, ("", 0.0))[1] + seconds)
        ratio = got[True][1] / got[False][1]
        ratios.setdefault(group, []).append(ratio)
        print(f"{pass_name:17} {name:26} folded: {got[True][0]:14} {got[True][1]:7.2f} s   "
              f"unfolded: {got[False][0]:14} {got[False][1]:7.2f} s   ratio {ratio:.3f}", flush=True)
    for group, rs in ratios.items():
        geo = math.exp(sum(math.log(r) for r in rs) / len(rs))
        print(f"geometric mean of the time ratios (folded / unfolded) where the fold {group}: {geo:.3f}")


if __name__ == "__main__":
    main()
