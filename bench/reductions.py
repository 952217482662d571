"""Sums of permuted terms: the hash-based encoding against a multiset (bag) encoding, on
growing sizes, as mlir-tv's figures 3 and 4 compare its encodings.

For each n, the source sums x_0..x_{n-1} in index order and the target sums the same
terms transposed (a layout change); the query "the two sums differ" must be unsat.
- hash (mlir-tv §5.3, tvtv's `reassociate`): sum = F(h(t_1) + ... + h(t_n)), integer sum;
- multiset: sum = G(bag) with bag: Array(term -> Int) counting each term (a store chain);
- array (tvtv's bijection check, `tvtv/encode/bijection.py`): when the terms are all
  elements of one array in some order, the sum is a function of that array; the cost is
  recognizing the permutation (numpy over all n indices) and one trivial query.
Times are seconds of CPU in this process (the machine may be shared: compare the columns
of one run, not runs). Usage: .venv/bin/python bench/reductions.py [--max-log2 16] [--timeout 60]
"""
from __future__ import annotations

import argparse
import time

import numpy as np
import z3

from tvtv.encode.bijection import all_elements
from tvtv.encode.tensor import INDEX, idx, ravel, unravel

ELEM = z3.BitVecSort(16)


def _solve(claim: z3.BoolRef, timeout: float) -> str:
    s = z3.Solver()
    s.set("timeout", int(timeout * 1000))
    s.add(claim)
    return str(s.check())


def hash_encoding(terms_a, terms_b, timeout):
    h = z3.Function("h", ELEM, z3.IntSort())
    f = z3.Function("F", z3.IntSort(), ELEM)
    sa = f(z3.Sum([h(t) for t in terms_a]))
    sb = f(z3.Sum([h(t) for t in terms_b]))
    return _solve(sa != sb, timeout)


def multiset_encoding(terms_a, terms_b, timeout):
    g = z3.Function("G", z3.ArraySort(ELEM, z3.IntSort()), ELEM)

    def bag(ts):
        b = z3.K(ELEM, z3.IntVal(0))
        for t in ts:
            b = z3.Store(b, t, z3.Select(b, t) + 1)
        return b
    return _solve(g(bag(terms_a)) != g(bag(terms_b)), timeout)


def array_encoding(arr, shape, n, timeout):
    pa = all_elements(lambda r: z3.Select(arr, r), n, INDEX)
    # the transposed order as the index term a layout change builds
    pb = all_elements(lambda r: z3.Select(arr, ravel(list(reversed(unravel(r, shape))),
                                                     list(reversed(shape)))), n, INDEX)
    if pa is None or pb is None:
        return "not recognized"
    u = z3.Function("U", arr.sort(), ELEM)
    return _solve(u(pa) != u(pb), timeout)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--max-log2", type=int, default=14)
    ap.add_argument("--timeout", type=float, default=60.0)
    args = ap.parse_args()
    print("| n | hash (s) | multiset (s) | array (s) |")
    print("|---|---|---|---|")
    skip = set()
    for lg in range(2, args.max_log2 + 1, 2):
        n = 1 << lg
        arr = z3.Array("x", INDEX, ELEM)
        terms = [z3.Select(arr, idx(k)) for k in range(n)]
        # the permutation: a transpose of an (2^(lg/2), 2^(lg/2)) matrix, as a layout change
        shape = [1 << (lg // 2), 1 << (lg - lg // 2)]
        perm = np.arange(n).reshape(shape).T.reshape(-1)
        permuted = [terms[int(p)] for p in perm]
        cells = []
        for name, run in [("hash", lambda: hash_encoding(terms, permuted, args.timeout)),
                          ("multiset", lambda: multiset_encoding(terms, permuted, args.timeout)),
                          ("array", lambda: array_encoding(arr, shape, n, args.timeout))]:
            if name in skip:
                cells.append("skipped (timed out at a smaller n)")
                continue
            start = time.process_time()
            verdict = run()
            t = time.process_time() - start
            if verdict not in ("unsat", "not recognized"):
                skip.add(name)
            cells.append(f"{t:.2f}" + ("" if verdict == "unsat" else f" ({verdict})"))
        print(f"| {n} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
