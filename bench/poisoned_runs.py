"""Benchmark: a counterexample whose run is poison in the model that found it, checked at once
on the runs without NaN/inf inside, against climbing the abstraction ladder with it.

Under per-operation a run that computes a NaN or an infinity inside the source is poison.
`tvtv.refinement._poisoned_in_model` evaluates that in the solver's model of a counterexample
(the abstraction's exp may be inf where the true exp is finite, so exp(x) - exp(x) is NaN
there); such a check ends `unknown` at once and `tvtv.api` checks it again on the runs
without NaN/inf inside (`Options.finite_runs`). The other way turns that test off: the
counterexample goes to the IEEE model (a 10 s query) and up the ladder, as before 2026-12-03.
Zero-pipeline graphs, each checked both ways in fresh processes, interleaved graph by graph
in one run (`bench/zero_pairs.py`; the machines are shared and noisy, so only the ratios are
meaningful). Seed-0 graphs 12 and 19 meet such a counterexample.

    .venv/bin/python bench/poisoned_runs.py [--graphs 20] [--timeout 300]
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import zero_pairs  # noqa: E402  (bench/ is not a package)


def climb_way() -> None:
    """Never tell a counterexample's run poison in its model: climb as before."""
    from tvtv import refinement
    refinement._poisoned_in_model = lambda enc, m: None


if __name__ == "__main__":
    zero_pairs.main(__file__, {"finite-now": None, "climb": climb_way})
