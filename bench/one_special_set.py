"""Benchmark: the drawn input set with one planted NaN, +inf or -inf per float tensor
(`tvtv.confirm._one_special_like`) against the drawn sets without it.

It is one more drawn set for every confirmation, execution-first run and testing of an
undecided check, so it costs time wherever those run. It shows what the dense special set
cannot (GenCoG seed-0 graph 0 under LegalizeOps: TIR's argmin on a row made NaN by one inf,
found by testing in 11 s, where the other sets tested for 30 s and found nothing,
tests/test_confirm_cpu.py). Under the zero pipeline's assumptions its planted values are
replaced like any other draw's, so there it is one more set of normal values: this measures
that cost. Zero-pipeline graphs, each checked both ways in fresh processes, interleaved
graph by graph in one run (`bench/zero_pairs.py`; the machines are shared and noisy, so
only the ratios mean something), with `tvtv check --pass zero`'s assumptions.

    .venv/bin/python bench/one_special_set.py [--graphs 12] [--timeout 300]
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import zero_pairs  # noqa: E402  (bench/ is not a package)


if __name__ == "__main__":
    zero_pairs.main(__file__, {"with": None,
                              "without": zero_pairs.without_drawn_set("_one_special_like")})
