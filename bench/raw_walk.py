"""Benchmark: the raw walk that finds the function applications an IEEE evaluation values
(`z3raw.outermost_applications`, behind `evaluate._outermost`) against the z3py walk it
replaced (`evaluate._outermost_where`, every subterm a z3py object).

Confirmation and testing evaluate the source's specification and the target with TVM's
own exp, erf, ... values on each input set (`confirm._cpu_outputs_now`); testing an
undecided check evaluates as many sets as 30 s allow, so this time decides how many sets it
reaches (HIRGen seed-23 graph 2 under FastMathTransform needs about 35). The first drawn
sets of each graph are evaluated with both walks, interleaved set by set in one run (the
machines are shared and noisy: only the ratio means anything), and the values must be the
same, bit for bit.

    .venv/bin/python bench/raw_walk.py [--sets 4]
"""
from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import z3

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import generators  # noqa: E402  (the repository's generators package)
from tvtv import api, confirm  # noqa: E402
from tvtv.encode import evaluate  # noqa: E402
from tvtv.ir import relax_reader  # noqa: E402

# (generator, seed, graph index, pass): graphs whose confirmation or testing evaluates sets
CASES = [("hirgen", 23, 2, "FastMathTransform"), ("isra", 23, 7, "FastMathTransform"),
         ("gencog", 0, 0, "LegalizeOps"), ("gencog", 0, 4, "LegalizeOps")]


def z3py_outermost(term: z3.ExprRef, value_of: Any) -> list[tuple[z3.ExprRef, Any]]:
    """The walk `evaluate._outermost` made before: every subterm a z3py object."""
    return evaluate._outermost_where(term, lambda t: value_of(t) if z3.is_app(t) and t.num_args()
                                     else None)


def timed(walk: Any, module: Any, args: dict[str, Any]) -> tuple[float, Any]:
    """(seconds, outputs) of `confirm._cpu_outputs_now` with `walk` as `evaluate._outermost`."""
    raw = evaluate._outermost
    evaluate._outermost = walk
    try:
        start = time.perf_counter()
        out = confirm._cpu_outputs_now(module, "main", args)
        return time.perf_counter() - start, out
    finally:
        evaluate._outermost = raw


def same(a: Any, b: Any) -> bool:
    """The same outputs, values compared as refinement does (NaN alike, -0 apart from +0)."""
    if a is None or b is None:
        return a is b
    return len(a) == len(b) and all(
        da == db and sa == sb and [evaluate._value_key(x) for x in va] == [evaluate._value_key(x) for x in vb]
        for (da, sa, va), (db, sb, vb) in zip(a, b))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sets", type=int, default=4, help="drawn sets per graph")
    args = ap.parse_args()
    ratios = []
    for gen, seed, index, pass_name in CASES:
        mod = generators.generate_module(gen, seed, index)
        _, before, after, _ = api.run_pass(pass_name, mod)
        fn = relax_reader.read_module(before).functions["main"]
        params = [(p.name, p.ty.shape, p.ty.dtype) for p in fn.params]
        like = [np.zeros(s, confirm.numpy_dtype(d)) for _, s, d in params]
        sets = confirm.input_sets(like, (), by_round=True, draws=confirm.testing_draws(like))
        t_raw = t_py = 0.0
        for inputs in sets[:args.sets]:
            named = dict(zip([n for n, _, _ in params], inputs))
            for module in (before, after):
                a, out_raw = timed(evaluate._outermost, module, named)
                b, out_py = timed(z3py_outermost, module, named)
                assert same(out_raw, out_py), f"{gen} {seed}/{index}: the walks' values differ"
                t_raw, t_py = t_raw + a, t_py + b
        ratios.append(t_raw / t_py)
        print(f"{gen:7} seed {seed:2} graph {index} ({pass_name}): raw {t_raw:6.2f} s, "
              f"z3py {t_py:6.2f} s, ratio {t_raw / t_py:.2f}", flush=True)
    gm = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
    print(f"geometric mean of the ratios (raw / z3py): {gm:.2f}")


if __name__ == "__main__":
    main()
