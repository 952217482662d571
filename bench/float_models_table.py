"""The verdict table of docs/float-models.md: every float-model-dependent pass, under each float
model and arithmetic setting, on the hand-written cases (tests/fp_pass_cases.py) and on
generated graphs (`generators.generate_module("simple", seed, i)`).

    .venv/bin/python bench/float_models_table.py [--graphs 4] [--timeout 10] [--out docs/float-models.md]

writes the two tables between the `<!-- table:... -->` markers of the docs page (or prints them
with `--out -`). Timings are noisy on a shared machine; verdicts are what the table is for.
"""
from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import tvtv  # noqa: E402
from tests.fp_pass_cases import CASES  # noqa: E402
from tvtv import passes  # noqa: E402
from tvtv.ir import tvm_bridge  # noqa: E402

SETTINGS = [("abstract", True), ("abstract", False), ("ieee", True), ("ieee", False), ("real", True)]
PASSES = ["FoldConstant", "ToMixedPrecision", "ConvertLayout", "AdjustMatmulOrder",
          "ExpandMatmulOfSum", "FoldBatchnormToConv2D", "ReorderTakeAfterMatmul",
          "CombineParallelMatmul", "DecomposeOpsForInference"]
SHORT = {"proved": "proved", "counterexample": "cex", "unknown": "unknown"}


def header() -> str:
    cols = [f"{fp}{'' if fp == 'real' else (' reassoc' if re_ else ' fixed')}" for fp, re_ in SETTINGS]
    return "| pass | case | " + " | ".join(cols) + " |\n|" + "---|" * (len(cols) + 2) + "\n"


def check(src, tgt, fp: str, reassociate: bool, timeout: float, assume=()) -> str:
    start = time.perf_counter()
    r = tvtv.verify(src, tgt, fp=fp, reassociate=reassociate, timeout=timeout,
                    confirm_vm=False, assume=list(assume)).results[0]
    cell = SHORT[r.verdict]
    if r.verdict == "counterexample" and r.counterexample is not None:
        cell += " (IEEE-confirmed)" if r.counterexample.confirmed_ieee else " (unconfirmed)"
    if r.verdict == "unknown":
        cell += " (timeout)" if "timeout" in (r.reason or "") else " (unsupported)"
    if assume:
        cell += " [assume " + ", ".join(assume) + "]"
    return f"{cell} {time.perf_counter() - start:.1f}s"


def hand_written(timeout: float) -> str:
    rows = header()
    for case in CASES:
        src = case.build()
        tgt = tvm_bridge.apply(passes.get(case.pass_name).make(), src)
        cells = [check(src, tgt, fp, re_, timeout, case.real_assume if fp == "real" else ())
                 for fp, re_ in SETTINGS]
        rows += f"| {case.pass_name} | {case.label} | " + " | ".join(cells) + " |\n"
        print(rows.splitlines()[-1], flush=True)
    return rows


def generated(n: int, timeout: float) -> str:
    import generators
    rows = "| pass | graphs changed by the pass | " + " | ".join(
        f"{fp}{'' if fp == 'real' else (' reassoc' if re_ else ' fixed')}" for fp, re_ in SETTINGS) \
        + " |\n|" + "---|" * (len(SETTINGS) + 2) + "\n"
    modules = [generators.generate_module("simple", 0, i, min_ops=4, max_ops=8) for i in range(n)]
    for name in PASSES:
        counts = [{"proved": 0, "cex": 0, "unknown": 0} for _ in SETTINGS]
        changed = 0
        for mod in modules:
            try:
                tgt = tvm_bridge.apply(passes.get(name).make(), mod)
            except Exception:   # the pass rejects the graph: not a validation question
                continue
            if tvm_bridge.structural_equal(mod, tgt):
                continue
            changed += 1
            for k, (fp, re_) in enumerate(SETTINGS):
                counts[k][check(mod, tgt, fp, re_, timeout).split(" ")[0]] += 1
        cells = [f"{c['proved']}/{c['cex']}/{c['unknown']}" for c in counts]
        rows += f"| {name} | {changed} of {len(modules)} | " + " | ".join(cells) + " |\n"
        print(rows.splitlines()[-1], flush=True)
    return rows


def replace_block(text: str, name: str, table: str) -> str:
    pattern = re.compile(rf"(<!-- table:{name} -->\n).*?(<!-- /table:{name} -->)", re.S)
    return pattern.sub(lambda m: m.group(1) + table + m.group(2), text)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--graphs", type=int, default=4)
    ap.add_argument("--timeout", type=float, default=10.0)
    ap.add_argument("--out", default="docs/float-models.md")
    args = ap.parse_args()
    hand = hand_written(args.timeout)
    gen = generated(args.graphs, args.timeout)
    if args.out == "-":
        print(hand + "\n" + gen)
        return
    p = Path(args.out)
    text = replace_block(replace_block(p.read_text(), "hand", hand), "generated", gen)
    p.write_text(text)


if __name__ == "__main__":
    main()
