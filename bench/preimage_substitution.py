"""Benchmark: building a pre-image query (`tvtv.preimage._query`, what `tvtv.lift` asks
cvc5 to solve) with one substitution for all facts (`z3fast.substitute_all`) against
z3py's `substitute` once per fact, which checks every (input element, constant) pair's sorts
again for every fact.

For every operator call of the generated graphs that reads computed values (the sites
`tvtv.lift` solves for), the query is built with all-ones targets (what is timed does not
depend on the values). Each graph is built both ways, each in a process of its own and in
alternating order (the machines are shared and noisy, so only the ratios mean something);
both ways must give the same facts up to the order of commutative arguments (the sum of
the structural hashes of their canonical forms, `tvtv.encode.canonical`: one substitution
for all creates the new terms in another order, and `z3.simplify` orders an `or` by term
ids).
Measured first on a py-spy profile of a `zero` check of typed seed-5 graph 4, where z3py's
substitute was 43% of 180 s.

    .venv/bin/python bench/preimage_substitution.py [--generator typed] [--seed 5] [--graphs 2]

(about 12 minutes for the default two graphs, nearly all of it z3py's way).
"""
from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

WAYS = ("substitute_all", "z3py")


def z3py_way() -> None:
    """`zf.substitute_all` as it was: z3py's substitute, term by term."""
    import z3

    from tvtv import z3fast as zf
    zf.substitute_all = lambda terms, pairs: [z3.substitute(t, *pairs) for t in terms]


def build_queries(generator: str, seed: int, index: int) -> dict:
    """Build the pre-image query of every computed-argument operator call of one graph:
    {"seconds", "sites", "fingerprint"}."""
    import numpy as np

    import generators
    from tvtv import preimage
    from tvtv.encode.canonical import Canonicalizer
    from tvtv.ir import relax_reader, tvm_bridge
    mod = generators.generate_module(generator, seed, index, 10, 30)
    prog = relax_reader.read_module(mod)
    seconds, sites, fingerprint = 0.0, 0, 0
    for site in tvm_bridge.operator_call_sites(mod):
        if all(site.params) or None in site.vars:
            continue
        fn = prog.functions[site.function]
        cut = preimage.prefix(fn, site.vars)
        if cut is None:
            continue
        targets = [np.ones(ty.shape, "float32") for ty in cut.ret_ty.fields]
        start = time.perf_counter()
        query = preimage._query(prog, cut, targets)
        seconds += time.perf_counter() - start
        if query is None:
            continue
        sites += 1
        canonical = Canonicalizer().many(query[0])
        fingerprint = (fingerprint + sum(f.hash() for f in canonical)) % (1 << 61)
    return {"seconds": seconds, "sites": sites, "fingerprint": fingerprint}


def _child(args: argparse.Namespace, index: int, way: str) -> dict:
    cmd = [sys.executable, __file__, "--one", str(index), "--way", way, "--generator",
           args.generator, "--seed", str(args.seed)]
    out = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    lines = [ln for ln in out.stdout.splitlines() if ln.startswith("{")]
    if out.returncode != 0 or not lines:
        raise SystemExit(f"graph {index} ({way}) failed:\n{out.stderr[-2000:]}")
    return json.loads(lines[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--generator", default="typed")
    ap.add_argument("--seed", type=int, default=5)
    ap.add_argument("--graphs", type=int, default=2)
    ap.add_argument("--one", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--way", choices=WAYS, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one is not None:
        if args.way == "z3py":
            z3py_way()
        print(json.dumps(build_queries(args.generator, args.seed, args.one)))
        return
    totals = dict.fromkeys(WAYS, 0.0)
    ratios: list[float] = []
    differ = 0
    print(f"{'graph':>6} {'sites':>6} {'substitute_all s':>17} {'z3py s':>8}")
    for k in range(args.graphs):
        order = WAYS if k % 2 == 0 else WAYS[::-1]
        got = {way: _child(args, k, way) for way in order}
        new, old = got["substitute_all"], got["z3py"]
        differ += new["fingerprint"] != old["fingerprint"] or new["sites"] != old["sites"]
        totals["substitute_all"] += new["seconds"]
        totals["z3py"] += old["seconds"]
        if new["sites"]:
            ratios.append(new["seconds"] / old["seconds"])
        print(f"{k:>6} {new['sites']:>6} {new['seconds']:17.2f} {old['seconds']:8.2f}", flush=True)
    geo = math.exp(sum(map(math.log, ratios)) / len(ratios)) if ratios else float("nan")
    print(f"total: substitute_all {totals['substitute_all']:.1f} s, z3py {totals['z3py']:.1f} s; "
          f"ratio {totals['substitute_all'] / max(totals['z3py'], 1e-9):.2f}; geometric mean of "
          f"the per-graph ratios {geo:.2f}; queries differing: {differ}")


if __name__ == "__main__":
    main()
