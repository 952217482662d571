"""Benchmark: canonical forms through Z3's C API (tvtv/encode/canonical.py) against the same
walk through z3py objects (the first implementation, kept as the oracle
`tests.test_canonical.ReferenceCanonicalizer`), on the same simplified terms.

Canonical forms decide which output elements need the solver; before this change they were
most of a zero-pipeline check's time (cProfile of generated graph 3: 87 of 114 s). The terms
are every output element of single-operator modules and their legalized loops, encoded in
the abstract model with PrimFunc bodies. Each repeat runs both walks on fresh canonicalizers
(no memo carried over), alternating which goes first; the machine is shared and noisy, so
only the ratio within one run is meaningful. The two must build the very same terms.

    .venv/bin/python bench/canonical.py [--repeat 3]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import z3  # noqa: E402

from tests.test_canonical import (ReferenceCanonicalizer, _single,  # noqa: E402
                                  legalized_elements)
from tvtv.encode.canonical import Canonicalizer  # noqa: E402


def cases():
    from tvm import relax
    O = relax.op
    return {
        "softmax (4,16)": _single(O.nn.softmax, [(4, 16)]),
        "layer_norm (4,16)": _single(O.nn.layer_norm, [(4, 16), (16,), (16,)], axes=[-1]),
        "conv2d (1,2,6,6)*(2,2,3,3)": _single(O.nn.conv2d, [(1, 2, 6, 6), (2, 2, 3, 3)], padding=[1, 1]),
        "avg_pool2d (1,2,6,6)": _single(O.nn.avg_pool2d, [(1, 2, 6, 6)], pool_size=[3, 3], padding=[1, 1, 1, 1]),
    }


def timed(canon, terms) -> tuple[float, list[z3.ExprRef]]:
    start = time.perf_counter()
    out = [canon._canon(t) for t in terms]
    return time.perf_counter() - start, out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    ratios = []
    print(f"{'case':30} {'terms':>6} {'z3py s':>8} {'C API s':>8} {'ratio':>6}")
    for name, build in cases().items():
        terms = [z3.simplify(t) for t in legalized_elements(build)]
        old_t, new_t = [], []
        for r in range(args.repeat):
            order = [(ReferenceCanonicalizer, old_t), (Canonicalizer, new_t)]
            if r % 2:
                order.reverse()
            results = []
            for cls, acc in order:
                seconds, out = timed(cls(), terms)
                acc.append(seconds)
                results.append(out)
            assert all(z3.eq(a, b) for a, b in zip(*results)), name
        old, new = statistics.median(old_t), statistics.median(new_t)
        ratios.append(old / new)
        print(f"{name:30} {len(terms):>6} {old:>8.2f} {new:>8.2f} {old / new:>6.1f}")
    print(f"geometric mean ratio (z3py / C API): {statistics.geometric_mean(ratios):.1f}x")


if __name__ == "__main__":
    main()
