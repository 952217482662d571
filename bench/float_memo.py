"""Benchmark: the abstract float domain's memo of its operations (`absfp.abstract._memoized`).

Each zero-pipeline graph is checked twice, once as tvtv runs it and once with every domain's
memo forgetting what it built (so each add, mul, div, lt and function application builds its
term again), interleaved graph by graph in one run (the machines are shared and noisy, so
only the ratio is meaningful; `bench/zero_pairs.py` runs them, each check in a fresh
process). The verdicts must agree: the memo returns the term Z3 would hash-cons anyway
(graph 6 takes 5-90 s either way, by Z3's search).

    .venv/bin/python bench/float_memo.py [--graphs 12] [--timeout 300]
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import zero_pairs  # noqa: E402  (bench/ is not a package)


class Forgetful(dict):
    """A memo that never holds anything."""

    def get(self, key, default=None):
        return default

    def __setitem__(self, key, value) -> None:
        pass


def forget() -> None:
    """Make every abstract domain's memo forget what it built."""
    from tvtv.absfp import abstract
    init = abstract.AbstractFloats.__init__

    def forgetful_init(self, *args, **kwargs) -> None:
        init(self, *args, **kwargs)
        self._memo = Forgetful()
    abstract.AbstractFloats.__init__ = forgetful_init


if __name__ == "__main__":
    zero_pairs.main(__file__, {"memo": None, "none": forget})
