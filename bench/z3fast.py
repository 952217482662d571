"""Benchmark: z3py's term constructors against tvtv's (`tvtv/z3fast.py`).

First each constructor alone (z3py's call against z3fast's, same arguments, many times), then
zero-pipeline graphs checked twice, once as tvtv runs them and once with every z3fast
function replaced by the z3py function it stands for (`zf.And = z3.And`, ...), interleaved
graph by graph in one run (the machines are shared and noisy, so only the ratios are
meaningful; `bench/zero_pairs.py` runs them). Both ways build the same terms, so the
verdicts must agree.

    .venv/bin/python bench/z3fast.py [--graphs 12] [--timeout 300]
"""
from __future__ import annotations

import sys
import timeit
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import zero_pairs  # noqa: E402  (bench/ is not a package)


def z3py_way() -> None:
    """Make every z3fast function the z3py function (or operator) it stands for."""
    import z3

    from tvtv import z3fast as zf
    for name in ("And", "Or", "Not", "If", "Select", "Store", "Extract", "Concat", "ULT", "ULE",
                 "UGT", "UGE", "fpIsNaN", "fpIsInf", "fpIsZero", "fpIsNegative", "fpIsPositive",
                 "fpLT", "fpLEQ", "fpGT", "fpGEQ", "fpEQ"):
        setattr(zf, name, getattr(z3, name))
    zf.Eq = zf.EqNumeral = lambda a, b: a == b
    zf.Ne = lambda a, b: a != b
    zf.batch = lambda name, terms: z3.Function(
        name, *[t.sort() for t in terms], z3.BoolSort())(*list(terms))


def constructors(number: int = 20000) -> None:
    """Microseconds per call of each constructor both ways, and their ratio."""
    import z3

    from tvtv import z3fast as zf
    a, b, c = z3.Bools("a b c")
    x, y = z3.BitVecs("x y", 17)
    f, g = z3.FPs("f g", z3.Float32())
    arr = z3.Array("arr", z3.BitVecSort(32), z3.BitVecSort(17))
    k = z3.BitVec("k", 32)
    four = z3.BitVecVal(4, 17)
    cases = [("And(a, b, c)", lambda: z3.And(a, b, c), lambda: zf.And(a, b, c)),
             ("Or(a, b)", lambda: z3.Or(a, b), lambda: zf.Or(a, b)),
             ("If(a, x, y)", lambda: z3.If(a, x, y), lambda: zf.If(a, x, y)),
             ("Select(arr, k)", lambda: z3.Select(arr, k), lambda: zf.Select(arr, k)),
             ("Store(arr, k, x)", lambda: z3.Store(arr, k, x), lambda: zf.Store(arr, k, x)),
             ("x == 4", lambda: x == 4, lambda: zf.EqNumeral(x, four)),
             ("Extract(15, 0, x)", lambda: z3.Extract(15, 0, x), lambda: zf.Extract(15, 0, x)),
             ("ULE(x, y)", lambda: z3.ULE(x, y), lambda: zf.ULE(x, y)),
             ("fpLT(f, g)", lambda: z3.fpLT(f, g), lambda: zf.fpLT(f, g))]
    print(f"{'constructor':>18} {'z3py us':>8} {'z3fast us':>9} {'ratio':>6}")
    for label, slow, fast in cases:
        s = timeit.timeit(slow, number=number) / number * 1e6
        t = timeit.timeit(fast, number=number) / number * 1e6
        print(f"{label:>18} {s:8.2f} {t:9.2f} {t / s:6.2f}")


if __name__ == "__main__":
    zero_pairs.main(__file__, {"z3fast": None, "z3py": z3py_way}, before=constructors)
