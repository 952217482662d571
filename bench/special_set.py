"""Benchmark: confirmation's special input set (NaN, ±inf, ±0, ±the largest finite value
among normal values, `tvtv.confirm._special_like`) against the drawn sets without it.

The special set is one more drawn set for every confirmation, execution-first run and
testing of an undecided check, so it costs time wherever those run; it shows differences no
finite set shows (TIR's max dropping a NaN first operand). Zero-pipeline graphs, each
checked both ways in fresh processes, interleaved graph by graph in one run
(`bench/zero_pairs.py`; the machines are shared and noisy, so only the ratios mean
something), with `tvtv check --pass zero`'s assumptions (under no-nan and no-inf the special
set keeps ±0 and ±the largest finite value only).

    .venv/bin/python bench/special_set.py [--graphs 20] [--timeout 300]
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import zero_pairs  # noqa: E402  (bench/ is not a package)


if __name__ == "__main__":
    zero_pairs.main(__file__, {"special": None,
                              "without": zero_pairs.without_drawn_set("_special_like")})
