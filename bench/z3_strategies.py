"""Benchmark: Z3 asked in stages (default solver, then the qfufbv tactic) against Z3's default
solver alone (`tvtv.solvers.Z3_STRATEGIES`).

Cases, each checked both ways, interleaved (the machines are shared and noisy, so only the
ratios of one run mean something):
- the pass cases of the test suite and their broken twins (`bench/bitwidth.py`'s pairs), in
  the abstract model;
- LegalizeOps of tests/test_lemmas.py's `Graph` under no-nan (relu's NaN difference leaves
  four matmul elements to the solver: the case the stages are for);
- LegalizeOps of the first `--graphs` generated graphs (simple generator, seed 0) under no-nan.

A case whose verdicts differ between the two ways is flagged; a case where either took less
than 0.05 s is left out of the ratios.

    .venv/bin/python bench/z3_strategies.py [--graphs 10] [--timeout 30]
"""
from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable, Iterator

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.append(str(Path(__file__).resolve().parent))   # after the root: bench/generators.py

from tvtv import passes, solvers  # noqa: E402
from tvtv.ir import tvm_bridge  # noqa: E402
from tvtv.refinement import Options, check_programs  # noqa: E402

WAYS: dict[str, tuple[str, ...]] = {"default": ("smt",), "staged": ("smt", "qfufbv")}


def cases(graphs: int, timeout: float) -> Iterator[tuple[str, Callable[[], str]]]:
    """(name, run): `run` checks the case and returns its verdicts."""
    import generators
    from bitwidth import pairs
    from tests.test_lemmas import Graph
    from tvtv.ir import relax_reader

    def pair_run(a: Any, b: Any) -> Callable[[], str]:
        options = Options(fp="abstract", timeout=timeout, refine_to_ieee=False, confirm=False)
        return lambda: ",".join(r.verdict for r in check_programs(a, b, options))

    def legalize_run(module: Any) -> Callable[[], str]:
        target = tvm_bridge.apply(passes.get("LegalizeOps").make(), module)
        a, b = relax_reader.read_module(module), relax_reader.read_module(target)
        options = Options(timeout=timeout, assume=("no-nan",), confirm=False)
        return lambda: ",".join(r.verdict for r in check_programs(a, b, options))

    yield "LegalizeOps: test_lemmas Graph, no-nan", legalize_run(Graph)
    for k in range(graphs):
        module = generators.generate_module("simple", 0, k, 10, 30)
        yield f"LegalizeOps: simple graph {k}, no-nan", legalize_run(module)
    for name, src, tgt in pairs():
        yield name, pair_run(relax_reader.read_module(src), relax_reader.read_module(tgt))


def timed(run: Callable[[], str], strategies: tuple[str, ...]) -> tuple[float, str]:
    saved = solvers.Z3_STRATEGIES
    solvers.Z3_STRATEGIES = strategies
    try:
        start = time.perf_counter()
        verdicts = run()
        return time.perf_counter() - start, verdicts
    finally:
        solvers.Z3_STRATEGIES = saved


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--graphs", type=int, default=10)
    ap.add_argument("--timeout", type=float, default=30.0)
    args = ap.parse_args()
    ratios: list[float] = []
    totals = {way: 0.0 for way in WAYS}
    print(f"{'case':58s} {'default s':>9s} {'staged s':>9s} {'ratio':>6s}  verdicts")
    for name, run in cases(args.graphs, args.timeout):
        (d, vd), (s, vs) = (timed(run, WAYS[w]) for w in ("default", "staged"))
        totals["default"] += d
        totals["staged"] += s
        flag = "" if vd == vs else "  <- verdicts differ"
        if min(d, s) >= 0.05:
            ratios.append(s / d)
        print(f"{name[:58]:58s} {d:9.2f} {s:9.2f} {s / d:6.2f}  {vd} / {vs}{flag}", flush=True)
    gm = math.exp(sum(math.log(r) for r in ratios) / len(ratios)) if ratios else float("nan")
    print(f"{len(ratios)} cases: staged / default time geometric mean {gm:.2f}x, median "
          f"{statistics.median(ratios) if ratios else float('nan'):.2f}x, totals "
          f"{totals['staged']:.1f} s / {totals['default']:.1f} s = "
          f"{totals['staged'] / max(totals['default'], 1e-9):.2f}x")


if __name__ == "__main__":
    main()
