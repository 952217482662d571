"""Benchmark: the abstract float model against the IEEE model on the same pairs.

mlir-tv reports its abstract encoding 13.6 times faster than IEEE floats (CAV'22, §7).
This script checks the same (source, target) pairs in both models, in one run and
interleaved (the machines are shared and noisy, so only the ratio is meaningful), and prints
the per-pair times and the geometric mean of the speed-up.

    .venv/bin/python bench/abstract_vs_ieee.py [--repeat 3] [--graphs 10]

Pairs: every hand-written pass case of tests/pass_cases.py (pass output, and its broken
twin) plus FuseOps on generated graphs.
"""
from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tvtv import passes  # noqa: E402
from tvtv.ir import relax_reader, tvm_bridge  # noqa: E402
from tvtv.refinement import Options, check_programs  # noqa: E402


def pairs(graphs: int):
    from tests.conftest import mutate
    from tests.pass_cases import PASS_CASES
    for case in PASS_CASES:
        spec = passes.get(case.pass_name)
        src = passes.prepare(spec, case.before)
        tgt = tvm_bridge.apply(spec.make(), src)
        yield f"{case.pass_name}", src, tgt
        yield f"{case.pass_name} (broken)", src, mutate(tgt, case.old, case.new)
    try:
        import generators
    except ImportError:
        return
    spec = passes.get("FuseOps")
    for k in range(graphs):
        mod = generators.generate_module("simple", 0, k, 10, 30)
        src = passes.prepare(spec, mod)
        yield f"FuseOps graph {k}", src, tvm_bridge.apply(spec.make(), src)


def timed(src, tgt, fp: str) -> tuple[float, str]:
    a, b = relax_reader.read_module(src), relax_reader.read_module(tgt)
    start = time.perf_counter()
    results = check_programs(a, b, Options(fp=fp, timeout=20, refine_to_ieee=False, confirm=False))
    return time.perf_counter() - start, ",".join(r.verdict for r in results)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--graphs", type=int, default=10)
    args = ap.parse_args()
    ratios = []
    print(f"{'pair':45s} {'abstract s':>10s} {'ieee s':>10s} {'ratio':>7s}  verdicts")
    for name, src, tgt in pairs(args.graphs):
        ta, tb = [], []
        for _ in range(args.repeat):          # interleaved, so load affects both alike
            t, va = timed(src, tgt, "abstract")
            ta.append(t)
            t, vb = timed(src, tgt, "ieee")
            tb.append(t)
        a, b = statistics.median(ta), statistics.median(tb)
        ratios.append(b / a)
        print(f"{name:45s} {a:10.4f} {b:10.4f} {b / a:7.2f}  {va} / {vb}")
    gm = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
    print(f"\n{len(ratios)} pairs: IEEE / abstract time, geometric mean {gm:.2f}x, "
          f"median {statistics.median(ratios):.2f}x, max {max(ratios):.2f}x")


if __name__ == "__main__":
    main()
