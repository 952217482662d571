"""Benchmark: building a pre-image query (`tvtv.preimage._query`, what `tvtv.lift` asks
cvc5 to solve) with one substitution and one simplification for all facts
(`z3fast.substitute_all`, `z3fast.simplify_all`) against a call per fact, as before: z3py's
`substitute` checks every (input element, constant) pair's sorts again for every fact, and
Z3's simplifier keeps no cache between calls, so the subterms facts share are simplified
again for each.

For every operator call of the generated graphs that reads computed values (the sites
`tvtv.lift` solves for), the query is built with all-ones targets (what is timed does not
depend on the values). Each graph is built both ways, each in a process of its own and in
alternating order (the machines are shared and noisy, so only the ratios mean something);
"same facts" compares the sum of the structural hashes of their canonical forms
(`tvtv.encode.canonical`: one substitution for all creates the new terms in another order,
and `z3.simplify` orders an `or` by term ids). Both ways simplify the same facts, so they
mean the same; one simplifier call may still leave a larger query in another form (measured:
typed seed-5 graph 0, `False` there; graph 1 `True`).

Found on py-spy profiles: z3py's substitute was 43% of a 180 s `zero` check of typed
seed-5 graph 4, and simplifying fact by fact 99% of building graph 0's queries once the
substitution was batched.

    .venv/bin/python bench/preimage_query.py [--generator typed] [--seed 5] [--graphs 2]

(about 13 minutes for the default two graphs, nearly all of it the way per fact).
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

WAYS = ("batched", "per_fact")


def per_fact_way() -> None:
    """`zf.substitute_all` and `zf.simplify_all` as the pre-image query did it before: z3py's
    substitute and simplify, fact by fact."""
    import z3

    from tvtv import z3fast as zf
    zf.substitute_all = lambda terms, pairs: [z3.substitute(t, *pairs) for t in terms]
    zf.simplify_all = lambda terms: [z3.simplify(t) for t in terms]


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
        if args.way == "per_fact":
            per_fact_way()
        print(json.dumps(build_queries(args.generator, args.seed, args.one)))
        return
    totals = dict.fromkeys(WAYS, 0.0)
    ratios: list[float] = []
    differ = 0
    print(f"{'graph':>6} {'sites':>6} {'batched s':>10} {'per fact s':>11}  same facts")
    for k in range(args.graphs):
        order = WAYS if k % 2 == 0 else WAYS[::-1]
        got = {way: _child(args, k, way) for way in order}
        new, old = got["batched"], got["per_fact"]
        same = new["fingerprint"] == old["fingerprint"] and new["sites"] == old["sites"]
        differ += not same
        totals["batched"] += new["seconds"]
        totals["per_fact"] += old["seconds"]
        if new["sites"]:
            ratios.append(new["seconds"] / old["seconds"])
        print(f"{k:>6} {new['sites']:>6} {new['seconds']:10.2f} {old['seconds']:11.2f}  {same}",
              flush=True)
    geo = math.exp(sum(map(math.log, ratios)) / len(ratios)) if ratios else float("nan")
    print(f"total: batched {totals['batched']:.1f} s, per fact {totals['per_fact']:.1f} s; "
          f"ratio {totals['batched'] / max(totals['per_fact'], 1e-9):.2f}; geometric mean of "
          f"the per-graph ratios {geo:.2f}; queries differing: {differ}")


if __name__ == "__main__":
    main()
