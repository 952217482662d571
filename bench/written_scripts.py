"""Benchmark: `tvm_bridge.module_to_script`'s memo (the scripts of the last modules written).

A counterexample case writes its source and target many times: for each VM run of
confirmation, as the case's files, as the report's text, in the reproducer; and a module
with tensor constants is parsed back each time to check the order of its constants
(TVMScript's parser takes about a second for a fused graph of 24 ops). The report loads the
case files again, and a loaded module is written as the text it was read from.

Each FuseTIR seed-0 graph (no assumptions: the counterexample cases) runs as
`tvtv check --pass FuseTIR --module GRAPH --jobs 0 --out DIR --no-minimize` twice, once as
tvtv runs it and once with the memo off (`KEEP_SCRIPTS = 0`), each in a fresh process,
interleaved graph by graph in one run (the machines are shared and noisy, so only the ratios
mean something; which way goes first alternates). The time is the command's, from the
command line's start to its end (the check, confirmation and the report), without starting
Python and importing TVM. Verdicts must agree.

    .venv/bin/python bench/written_scripts.py [--graphs 0,6,7,...] [--timeout 300]
"""
from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from generated import generated_graphs  # noqa: E402  (bench/generated.py)

# the seed-0 graphs FuseTIR without assumptions shows a counterexample on (2026-12-04, at ba055c5 and after)
DEFAULT_GRAPHS = "6,12,19,20,25,27"


def one(graph: Path, out: Path, remembered: bool) -> dict:
    """Run the check of `graph` in this process: {"seconds", "verdict"}."""
    from tvtv import cli
    from tvtv.ir import tvm_bridge
    if not remembered:
        tvm_bridge.KEEP_SCRIPTS = 0
    argv = ["tvtv", "check", "--pass", "FuseTIR", "--module", str(graph), "--jobs", "0",
            "--out", str(out), "--no-minimize", "--json", str(out / "r.json")]
    sys.argv = argv
    start = time.perf_counter()
    try:
        cli.main()
    except SystemExit:
        pass
    seconds = time.perf_counter() - start
    report = json.loads((out / "r.json").read_text())
    verdicts = "/".join(r["verdict"] for r in report["results"])
    return {"seconds": seconds, "verdict": verdicts}


def _child(graph: Path, remembered: bool, timeout: float) -> tuple[float, str]:
    with tempfile.TemporaryDirectory(prefix="tvtv-bench-") as tmp:
        cmd = [sys.executable, __file__, "--one", str(graph), "--out", tmp,
               "--way", "memo" if remembered else "none"]
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=ROOT)
        except subprocess.TimeoutExpired:
            return timeout, "timeout"
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{\"seconds\"")]
    if not lines:
        raise SystemExit(f"{graph.name} failed:\n{p.stderr[-2000:]}")
    found = json.loads(lines[-1])
    return found["seconds"], found["verdict"]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--graphs", default=DEFAULT_GRAPHS, help="seed-0 graph indices, comma-separated")
    ap.add_argument("--timeout", type=float, default=300.0)
    ap.add_argument("--one", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    ap.add_argument("--way", choices=["memo", "none"], help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one is not None:
        print(json.dumps(one(Path(args.one), Path(args.out), args.way == "memo")))
        return
    indices = [int(k) for k in args.graphs.split(",")]
    with generated_graphs("simple", 0, max(indices) + 1) as path_of:
        totals = {"memo": 0.0, "none": 0.0}
        ratios: list[float] = []
        differ = 0
        print(f"\n{'graph':>6} {'memo s':>9} {'none s':>9}  verdicts (memo / none)")
        for n, k in enumerate(indices):
            graph = path_of(k)
            if n % 2:
                u, w = _child(graph, False, args.timeout)
                t, v = _child(graph, True, args.timeout)
            else:
                t, v = _child(graph, True, args.timeout)
                u, w = _child(graph, False, args.timeout)
            totals["memo"] += t
            totals["none"] += u
            ratios.append(t / u)
            differ += v != w
            print(f"{k:>6} {t:9.2f} {u:9.2f}  {v} / {w}", flush=True)
    print(f"total: memo {totals['memo']:.1f} s, none {totals['none']:.1f} s; memo / none = "
          f"{totals['memo'] / totals['none']:.2f}; geometric mean of the per-graph ratios "
          f"{math.exp(sum(map(math.log, ratios)) / len(ratios)):.2f}; verdicts differing: {differ}")


if __name__ == "__main__":
    main()
