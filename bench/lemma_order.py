"""Benchmark: the order in which an operator's lemmas are tried under per-operation.

`tvtv.lemmas.FINITE_FIRST` lists the operators whose finite-values lemma is tried before the
exact one. This script proves the operator lemmas of the zero-pipeline graphs twice, once
with that table and once with only `--base` in it (exact attempt first for the rest), in
one run and interleaved graph by graph (the machines are shared and noisy, so only the
ratio is meaningful), each with an empty lemma cache, and prints the seconds per graph, the
lemmas proved each way and the ratio of the totals.

    .venv/bin/python bench/lemma_order.py [--graphs 30] [--base relax.nn.softmax,relax.nn.log_softmax]

The options are those of `tvtv check --pass zero --case-timeout 300 --assume
no-nan,no-inf,no-signed-zeros,per-operation,op-rounding`.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tvtv import lemmas  # noqa: E402
from tvtv.refinement import Options  # noqa: E402

ASSUME = ("no-nan", "no-inf", "no-signed-zeros", "per-operation", "op-rounding")


def timed(module, options: Options, table: dict[str, str]) -> tuple[float, int]:
    """Seconds to prove `module`'s lemmas with `table` as FINITE_FIRST, and how many were
    proved (exactly, on finite values or up to rounding)."""
    saved = lemmas.FINITE_FIRST
    lemmas.FINITE_FIRST = table
    lemmas._CACHE.clear()
    try:
        start = time.perf_counter()
        found = lemmas.prove_lemmas(module, options)
        return time.perf_counter() - start, len(found.by_key) + len(found.conditional)
    finally:
        lemmas.FINITE_FIRST = saved


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--graphs", type=int, default=30)
    ap.add_argument("--base", default="relax.nn.softmax,relax.nn.log_softmax",
                    help="the FINITE_FIRST operators of the comparison run")
    args = ap.parse_args()
    import generators
    options = Options(timeout=30.0, assume=ASSUME, budget=100.0)
    table = dict(lemmas.FINITE_FIRST)
    base = {op: table.get(op, "") for op in args.base.split(",") if op}
    totals = {"table": 0.0, "base": 0.0}
    print(f"{'graph':>5} {'table s':>8} {'base s':>8} {'proved (table/base)':>20}")
    for k in range(args.graphs):
        module = generators.generate_module("simple", 0, k, 10, 30)
        t, n = timed(module, options, table)
        b, m = timed(module, options, base)
        totals["table"] += t
        totals["base"] += b
        print(f"{k:5d} {t:8.2f} {b:8.2f} {n:>10d}/{m:<9d}", flush=True)
    print(f"total: table {totals['table']:.1f} s, base {totals['base']:.1f} s, "
          f"table/base {totals['table'] / totals['base']:.2f}")


if __name__ == "__main__":
    main()
