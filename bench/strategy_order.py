"""Benchmark: Z3's strategies in the order a check learns, against the fixed order.

A query asks Z3 in stages (`tvtv.solvers.z3_slices`): the default solver for 1 s, then the
`qfufbv` tactic, then the default solver again. Within one check the queries are alike (an
output's elements one by one), so when a later stage answers, the check's next queries ask
that strategy first (`tvtv.refinement._check`). The other way keeps the fixed order.
Zero-pipeline graphs, each checked both ways in fresh processes, interleaved graph by graph
in one run (`bench/zero_pairs.py`; the machines are shared and noisy, so only the ratios are
meaningful). Seed-0 graph 6 asks some 50 element queries that the default solver leaves
undecided for its whole slice and qfufbv proves in 0.1-0.2 s.

    .venv/bin/python bench/strategy_order.py [--graphs 20] [--timeout 300]
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import zero_pairs  # noqa: E402  (bench/ is not a package)


def fixed_way() -> None:
    """Restore the check's strategy order after every query: nothing is learnt."""
    from tvtv import refinement
    learning = refinement._check

    def check(s, kind=""):
        orders = refinement._ORDER.get()
        saved = {k: list(v) for k, v in orders.items()} if orders is not None else None
        try:
            return learning(s, kind)
        finally:
            if saved is not None:
                orders.clear()
                orders.update(saved)
    refinement._check = check


if __name__ == "__main__":
    zero_pairs.main(__file__, {"learnt": None, "fixed": fixed_way})
