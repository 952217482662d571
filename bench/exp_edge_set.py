"""Benchmark: the drawn input set at exp's regime changes (`tvtv.confirm._exp_edge_like`:
arguments just below and above ln of the largest finite value, around ln of the smallest
normal and subnormal) against the drawn sets without it.

It is one more drawn set for every confirmation, execution-first run and testing of an
undecided check, so it costs time wherever those run; it shows differences no other set
shows (FastMathTransform's fast_exp is inf from 88.3763 on, float32 exp only above 88.7228).
Zero-pipeline graphs, each checked both ways in fresh processes, interleaved graph by graph
in one run (`bench/zero_pairs.py`; the machines are shared and noisy, so only the ratios
mean something), with `tvtv check --pass zero`'s assumptions.

    .venv/bin/python bench/exp_edge_set.py [--graphs 20] [--timeout 300]
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import zero_pairs  # noqa: E402  (bench/ is not a package)


if __name__ == "__main__":
    zero_pairs.main(__file__, {"edges": None,
                              "without": zero_pairs.without_drawn_set("_exp_edge_like")})
