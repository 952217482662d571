"""`tvtv.z3raw`'s builders make exactly the terms z3py's constructors make (a builder that
built another term would change what every hashed reduction means)."""
from __future__ import annotations

import pytest
import z3

from tvtv import z3raw

# module-level z3 objects: these tests run in the shared context (tests/conftest.py)
pytestmark = pytest.mark.shared_z3

INDEX = z3.BitVecSort(32)
ELEM = z3.BitVecSort(17)


def arrays() -> list[z3.ExprRef]:
    r = z3.BitVec("r", 32)
    x = z3.Array("x", INDEX, ELEM)
    lam = z3.Lambda([r], z3.If(z3.ULT(r, 5), x[r] + 1, z3.BitVecVal(0, 17)))
    chain = z3.K(INDEX, z3.BitVecVal(0, 17))
    for k in range(7):
        chain = z3.Store(chain, z3.BitVecVal(k, 32), z3.BitVec(f"e{k}", 17))
    return [x, lam, chain]


@pytest.mark.parametrize("which", range(3))
@pytest.mark.parametrize("n", [0, 1, 2, 40])
def test_selects_are_z3py_selects(which, n):
    arr = arrays()[which]
    got = z3raw.selects(arr, n)
    want = [z3.Select(arr, z3.BitVecVal(k, 32)) for k in range(n)]
    assert len(got) == n and all(z3.eq(a, b) for a, b in zip(got, want))
    assert all(type(a) is type(b) for a, b in zip(got, want))


@pytest.mark.parametrize("n", [0, 1, 2, 40])
def test_sum_of_applications_is_z3py_sum(n):
    h = z3.Function("h", ELEM, z3.IntSort())
    terms = z3raw.selects(arrays()[1], n)
    got, want = z3raw.sum_of_applications(h, terms), z3.Sum([h(t) for t in terms])
    assert got == want if n == 0 else z3.eq(got, want)


def test_a_builder_that_drops_a_term_would_be_caught():
    """The twin: a sum over one term fewer is another term."""
    h = z3.Function("h", ELEM, z3.IntSort())
    terms = z3raw.selects(arrays()[1], 5)
    assert not z3.eq(z3raw.sum_of_applications(h, terms[:4]), z3.Sum([h(t) for t in terms]))
