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


def _z3py_outermost(term, value_of):
    """The z3py walk `z3raw.outermost_applications` replaced (`evaluate._outermost` before)."""
    from tvtv.encode.evaluate import _outermost_where
    return _outermost_where(term, lambda t: value_of(t) if z3.is_app(t) and t.num_args()
                            and t.decl().kind() == z3.Z3_OP_UNINTERPRETED else None)


def test_outermost_applications_are_the_z3py_walks():
    """The raw walk finds the same (application, value) pairs as the z3py walk: the
    outermost applications of uninterpreted functions that the valuation accepts, through
    interpreted operators and shared subterms, not into quantifiers, and nothing inside an
    application that was valued. Its twin: a valuation that refuses the outer application
    makes the walk look inside and find the inner ones."""
    f = z3.Function("f", ELEM, ELEM)
    g = z3.Function("g", ELEM, ELEM, ELEM)
    a, b, k = (z3.BitVec(n, 17) for n in "abk")
    one = z3.BitVecVal(1, 17)
    inner = f(one)
    shared = g(inner, a)
    term = z3.And(shared + shared == f(b), z3.ULT(f(inner), 7),
                  z3.ForAll([k], f(k) == k), g(a, b) == a)
    def every(t):
        return z3.BitVecVal(0, 17) if t.decl().name() in ("f", "g") else None
    def only_f_of_numerals(t):
        ok = t.decl().name() == "f" and all(z3.is_bv_value(c) for c in t.children())
        return z3.BitVecVal(2, 17) if ok else None
    for value_of in (every, only_f_of_numerals):
        got = z3raw.outermost_applications(term, value_of)
        want = _z3py_outermost(term, value_of)
        key = lambda pairs: sorted((p.sexpr(), v.sexpr()) for p, v in pairs)
        assert key(got) == key(want), (got, want)
        assert len(got) == len({p.get_id() for p, _ in got})    # shared: once each
    names = lambda pairs: sorted(p.sexpr() for p, _ in pairs)
    assert names(z3raw.outermost_applications(term, every)) == sorted(
        [shared.sexpr(), f(b).sexpr(), f(inner).sexpr(), g(a, b).sexpr()])
    # f(k) under the quantifier is not reached; f(1) is, inside g and inside f
    assert names(z3raw.outermost_applications(term, only_f_of_numerals)) == [inner.sexpr()]
