"""Benchmark: FastMathTransform checks with and without the TIR range proofs.

`tvtv.encode.tir.ranges` bounds the values FastMathTransform's clamped polynomials
(fast_erf, fast_tanh) store, and the abstract model clamps them to that bound; without it the
uninterpreted `+ * /` may give inf or NaN, and a check that depends on the result being
finite ends `unknown` after the whole ladder. Each module is checked twice in this process,
in turns (the machines are shared and noisy: compare within one run):

- **ranges**: as tvtv does;
- **none**: `ranges.expr_range` answers "nothing known" for every store.

Modules: `isinf(op(x))` for erf (float16, float32) and tanh (float32), and generated graphs
(GenCoG seed 23 graph 1 by default, where `isinf(erf(...))` feeds an output); and under
FuseTIR, `m - m` of a mean of clipped values (`tests/test_reduction_ranges.py`: TVM folds the
fused `m - m` to 0, right because the clip's range reaches the mean's sum through call_tir).
Printed per module: verdict and seconds both ways, and the ratio of the times.

    .venv/bin/python bench/tir_ranges.py [--timeout 30] [--generator gencog --seed 23 --graphs 1]
        [--no-isinf] [--no-mean]
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

TEMPLATE = """
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((3,), "{dtype}")) -> R.Tensor((3,), "bool"):
        with R.dataflow():
            y = R.{op}(x)
            z = R.isinf(y)
            R.output(z)
        return z
"""


def check_both(label: str, module, timeout: float, none_first: bool,
               pass_name: str = "FastMathTransform") -> float:
    """Check `module` under the pass with and without ranges (in the order asked: modules
    alternate, so that warming up favours neither way); the time ratio."""
    from tvtv.api import check_pass
    from tvtv.encode.tir import ranges
    real = ranges.expr_range
    seconds = {}
    verdicts = {}
    for way in (("none", "ranges") if none_first else ("ranges", "none")):
        ranges.expr_range = real if way == "ranges" else (lambda e, buffer_range: ranges.TOP)
        try:
            start = time.perf_counter()
            results = check_pass(pass_name, module, timeout=timeout).results
            seconds[way] = time.perf_counter() - start
        finally:
            ranges.expr_range = real
        verdicts[way] = ", ".join(r.verdict for r in results)
    ratio = seconds["ranges"] / seconds["none"]
    print(f"{label:24} ranges: {verdicts['ranges']:14} {seconds['ranges']:7.2f} s   "
          f"none: {verdicts['none']:14} {seconds['none']:7.2f} s   ratio {ratio:.3f}", flush=True)
    return ratio


def main() -> None:
    import tvm

    from tvtv.ir import tvm_bridge
    ap = argparse.ArgumentParser()
    ap.add_argument("--timeout", type=float, default=30.0)
    ap.add_argument("--generator", default="gencog")
    ap.add_argument("--seed", type=int, default=23)
    ap.add_argument("--graphs", default="1", help="graph indices, comma-separated ('' for none)")
    ap.add_argument("--no-isinf", action="store_true", help="no isinf(op(x)) modules")
    ap.add_argument("--no-mean", action="store_true", help="no FuseTIR clipped-mean module")
    args = ap.parse_args()
    ratios: list[float] = []
    for op, dtype in () if args.no_isinf else (("erf", "float16"), ("erf", "float32"),
                                                ("tanh", "float32")):
        module = tvm.script.from_source(TEMPLATE.format(op=op, dtype=dtype))
        ratios.append(check_both(f"isinf({op}) {dtype}", module, args.timeout, len(ratios) % 2 == 1))
    if not args.no_mean:
        sys.path.insert(0, str(ROOT))
        from tests.test_reduction_ranges import _clipped_mean_self_difference
        ratios.append(check_both("FuseTIR clipped mean", _clipped_mean_self_difference("1.0"),
                                 args.timeout, len(ratios) % 2 == 1, "FuseTIR"))
    indices = [int(k) for k in args.graphs.split(",") if k]
    if indices:
        with generated_graphs(args.generator, args.seed, max(indices) + 1) as graph:
            for k in indices:
                ratios.append(check_both(graph(k).stem, tvm_bridge.load_module(graph(k)),
                                         args.timeout, len(ratios) % 2 == 1))
    geo = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
    print(f"geometric mean of the time ratios (ranges / none): {geo:.3f}")


if __name__ == "__main__":
    main()
