"""Benchmark: output elements proved a group at a time (tvtv/symmetry.py,
`refinement._prove_groups`) against one query per element, on LegalizeOps of single ops whose
elements read their own rows or channels alike.

Each case is checked twice in one run, with grouping on and off (`GROUPING_WORK` 0 makes
every element a group of its own), alternating which goes first. The machine is shared and
noisy, so only the verdicts and the ratio within one run are meaningful. Timeouts are 10 s
per query, as in the LegalizeOps table (docs/legalize.md).

    .venv/bin/python bench/symmetry.py
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tvm import relax  # noqa: E402

import tvtv  # noqa: E402
from tests.test_canonical import _single  # noqa: E402
from tvtv import refinement  # noqa: E402


def cases():
    O = relax.op
    return {
        "softmax (4,4)": _single(O.nn.softmax, [(4, 4)], axis=-1)(),
        "softmax (4,1,1,4,4)": _single(O.nn.softmax, [(4, 1, 1, 4, 4)], axis=-1)(),
        "log_softmax (4,1,1,4,4)": _single(O.nn.log_softmax, [(4, 1, 1, 4, 4)], axis=-1)(),
    }


def run(mod, grouping: bool) -> tuple[str, float]:
    saved = refinement.GROUPING_WORK
    refinement.GROUPING_WORK = saved if grouping else 0
    try:
        start = time.perf_counter()
        (r,) = tvtv.verify(mod, relax.transform.LegalizeOps()(mod), timeout=10.0,
                           confirm_vm=False).results
        return r.verdict, time.perf_counter() - start
    finally:
        refinement.GROUPING_WORK = saved


def main() -> None:
    print(f"{'case':<26} {'groups':>18} {'one by one':>18} {'ratio':>6}")
    for k, (name, mod) in enumerate(cases().items()):
        order = (True, False) if k % 2 == 0 else (False, True)
        got = {g: run(mod, g) for g in order}
        (vg, tg), (ve, te) = got[True], got[False]
        print(f"{name:<26} {vg:>10} {tg:6.1f} s {ve:>10} {te:6.1f} s {te / tg:5.1f}x", flush=True)


if __name__ == "__main__":
    main()
