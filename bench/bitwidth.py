"""Benchmark: the abstract magnitude width computed as mlir-tv §4.3 does, against a fixed
32-bit magnitude, on the same pairs.

mlir-tv reports that shrinking the width brought a 2.2x speed-up over 32 bits (CAV'22, §7).
Each pair is checked in the abstract model only (no IEEE refinement, no confirmation), with
`mag_bits=None` (the computed width) and `mag_bits=32`, interleaved (the machine is shared
and noisy: only the ratio is meaningful). Pairs whose check needs no solving (source and
target become identical terms) are listed but left out of the ratio.

    .venv/bin/python bench/bitwidth.py [--repeat 3]

Pairs: the hand-written cases of tests/pass_cases.py and tests/fp_pass_cases.py (pass output
and broken twin).
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
from tvtv.absfp.width import magnitude_bits  # noqa: E402
from tvtv.ir import relax_reader, tvm_bridge  # noqa: E402
from tvtv.refinement import Options, check_programs  # noqa: E402


def pairs():
    from tests.conftest import mutate
    from tests.fp_pass_cases import CASES
    from tests.pass_cases import PASS_CASES
    for case in PASS_CASES:
        if case.pass_name in ("FuseOps",):
            continue
        spec = passes.get(case.pass_name)
        src = passes.prepare(spec, case.before)
        tgt = tvm_bridge.apply(spec.make(), src)
        yield case.pass_name, src, tgt
        yield f"{case.pass_name} (broken)", src, mutate(tgt, case.old, case.new)
    for case in CASES:
        src = case.build()
        tgt = tvm_bridge.apply(passes.get(case.pass_name).make(), src)
        yield f"{case.pass_name}: {case.label}", src, tgt
        yield f"{case.pass_name}: {case.label} (broken)", src, mutate(tgt, case.old, case.new)


def timed(a, b, mag_bits: int | None, timeout: float) -> tuple[float, str]:
    start = time.perf_counter()
    results = check_programs(a, b, Options(fp="abstract", timeout=timeout, mag_bits=mag_bits,
                                           refine_to_ieee=False, confirm=False))
    return time.perf_counter() - start, ",".join(r.verdict for r in results)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--timeout", type=float, default=30.0)
    args = ap.parse_args()
    ratios = []
    print(f"{'pair':58s} {'k':>3s} {'computed s':>10s} {'32 bits s':>10s} {'ratio':>7s}  verdicts")
    for name, src, tgt in pairs():
        a, b = relax_reader.read_module(src), relax_reader.read_module(tgt)
        k = magnitude_bits([a, b])[0]
        tk, t32 = [], []
        for _ in range(args.repeat):
            t, vk = timed(a, b, None, args.timeout)
            tk.append(t)
            t, v32 = timed(a, b, 32, args.timeout)
            t32.append(t)
        x, y = statistics.median(tk), statistics.median(t32)
        solved = x > 0.02 and vk == v32 and "unknown" not in vk
        if solved:
            ratios.append(y / x)
        print(f"{name:58s} {k:3d} {x:10.4f} {y:10.4f} {y / x:7.2f}  {vk} / {v32}"
              + ("" if solved else "  (not in the ratio)"), flush=True)
    gm = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
    print(f"\n{len(ratios)} pairs: 32-bit / computed-width time, geometric mean {gm:.2f}x, "
          f"median {statistics.median(ratios):.2f}x, max {max(ratios):.2f}x (mlir-tv: 2.2x)")


if __name__ == "__main__":
    main()
