"""Benchmark: the memory passes checked with opaque PrimFunc calls first, against PrimFunc
bodies from the start.

At the ladder's opaque rung a destination-passing call into fresh tensors is the
uninterpreted function its `call_tir` was (`tvtv.encode.memory._opaque_call`), so
CallTIRRewrite and the passes after it meet the source in identical terms without encoding
a PrimFunc body. The other way, `tir="body"`, encodes every body on both sides. Each graph
is checked both ways in this process, in turns (the machines are shared and noisy: compare
within one run); printed per graph and pass: verdicts and seconds both ways and the ratio.

    .venv/bin/python bench/memory_opaque.py [--generator simple --seed 0 --graphs 10]
        [--passes CallTIRRewrite,StaticPlanBlockMemory,VMShapeLower]
"""
from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from generated import generated_graphs  # noqa: E402  (bench/generated.py)


def timed(name: str, module, tir: str) -> tuple[str, float]:
    from tvtv.api import check_pass
    start = time.perf_counter()
    results = check_pass(name, module, tir=tir).results
    return ", ".join(r.verdict for r in results), time.perf_counter() - start


def main() -> None:
    from tvtv.ir import tvm_bridge
    ap = argparse.ArgumentParser()
    ap.add_argument("--generator", default="simple")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--graphs", type=int, default=10)
    ap.add_argument("--passes", default="CallTIRRewrite,StaticPlanBlockMemory,VMShapeLower")
    args = ap.parse_args()
    ratios: list[float] = []
    with generated_graphs(args.generator, args.seed, args.graphs) as graph:
        for k in range(args.graphs):
            module = tvm_bridge.load_module(graph(k))
            for name in args.passes.split(","):
                ways = ("auto", "body") if len(ratios) % 2 == 0 else ("body", "auto")
                got = {way: timed(name, module, way) for way in ways}
                ratio = got["auto"][1] / got["body"][1]
                ratios.append(ratio)
                print(f"graph {k:2} {name:22} opaque first: {got['auto'][0]:9} {got['auto'][1]:7.3f} s"
                      f"   bodies: {got['body'][0]:9} {got['body'][1]:7.3f} s   ratio {ratio:.3f}",
                      flush=True)
    geo = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
    print(f"geometric mean of the time ratios (opaque first / bodies): {geo:.3f}")


if __name__ == "__main__":
    main()
