"""How much Z3 queries slow down in a process that has run a check (why a worker retires
past `tvtv.runner.RECYCLE_Z3`), as ratios taken in one run: 200 trivial solver checks timed
in a fresh process, then after a `zero` check of generated graph 0 (seed 0, the graph of the
zero measurement), with what Z3's allocator holds each time.

    python bench/z3_context.py [--budget SECONDS]

Measured (2026-11-22, 2 shared cores): 0.29 s fresh, 2.07 s after the check (7.2x, with
tests running alongside), 1.6 GB held by Z3; in a quieter run of the same steps 0.31 s and
3.9 s (12x), with 17 terms held by Python. Building and dropping 1.5 million plain terms
instead gives only 1.2x: what slows queries is what a check leaves in the context, not
the allocator's size alone.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))   # the repository's generators

import z3  # noqa: E402
from z3 import z3core  # noqa: E402


def trivial_checks(tag: str, n: int = 200) -> float:
    start = time.perf_counter()
    for k in range(n):
        s = z3.Solver()
        s.add(z3.Int(f"{tag}_{k}") > 3)
        s.check()
    return time.perf_counter() - start


def held() -> int:
    return int(z3core.Z3_get_estimated_alloc_size()) >> 20


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--budget", type=float, default=60.0, help="seconds for the zero check")
    args = ap.parse_args()
    from generators import generate_module
    from tvtv import api
    base = trivial_checks("fresh")
    print(f"fresh process:       {base:.2f} s   (Z3 holds {held()} MiB)")
    module = generate_module("simple", 0, 0)
    start = time.perf_counter()
    api.check_pass("zero", module, assume="no-nan,no-inf,no-signed-zeros,per-operation",
                   budget=args.budget)
    print(f"zero check of graph 0: {time.perf_counter() - start:.0f} s")
    after = trivial_checks("after")
    print(f"after the check:     {after:.2f} s   (Z3 holds {held()} MiB): {after / base:.1f}x slower")
    from tvtv import z3context
    z3context.fresh()       # what a worker does around each case (runner.run_case_in_worker)
    renewed = trivial_checks("renewed")
    print(f"in a fresh context:  {renewed:.2f} s   (Z3 holds {held()} MiB): {renewed / base:.1f}x")


if __name__ == "__main__":
    main()
