"""tvtv/z3fast.py builds the very terms z3py builds, of the same Python classes, and hands
everything it does not take itself to z3py (so errors are z3py's)."""
from __future__ import annotations

import pytest
import z3

from tvtv import z3fast as zf

# module-level z3 objects: these tests run in the shared context (tests/conftest.py)
pytestmark = pytest.mark.shared_z3


def same(fast, slow) -> None:
    assert type(fast) is type(slow), (type(fast), type(slow))
    assert fast.eq(slow), (fast, slow)     # one term: Z3 hash-conses, eq is identity


a, b, c = z3.Bools("a b c")
x, y = z3.BitVecs("x y", 16)
w = z3.BitVec("w", 8)
f, g = z3.FPs("f g", z3.Float32())
i, r = z3.Int("i"), z3.Real("r")
arr = z3.Array("arr", z3.BitVecSort(32), z3.BitVecSort(16))
farr = z3.Array("farr", z3.BitVecSort(32), z3.Float32())
barr = z3.Array("barr", z3.BitVecSort(32), z3.BoolSort())
k = z3.BitVec("k", 32)
lam = z3.Lambda([k], z3.If(z3.ULT(k, 4), arr[k], x))
forall = z3.ForAll([x], z3.ULE(x, x))


@pytest.mark.parametrize("args", [
    (a, b), (a, b, c), (a,), (), ([a, b, c],), ((a, b),), (a, True), (False, b), (a, forall),
])
def test_and_or_are_z3pys(args):
    same(zf.And(*args), z3.And(*args))
    same(zf.Or(*args), z3.Or(*args))


@pytest.mark.parametrize("t", [a, forall, z3.BoolVal(True)])
def test_not_is_z3pys(t):
    same(zf.Not(t), z3.Not(t))


@pytest.mark.parametrize("cond,t,e", [
    (a, x, y), (a, x, z3.BitVecVal(3, 16)), (a, z3.BitVecVal(1, 16), z3.BitVecVal(2, 16)),
    (a, b, c), (a, f, g), (a, f, z3.FPVal(1.5, z3.Float32())), (a, arr, z3.K(z3.BitVecSort(32), x)),
    (a, x, 7), (True, x, y), (a, i, r), (a, i, 3), (a, lam, arr), (forall, x, y), (a, 1, 2),
])
def test_if_is_z3pys(cond, t, e):
    same(zf.If(cond, t, e), z3.If(cond, t, e))


@pytest.mark.parametrize("array,index", [
    (arr, k), (arr, z3.BitVecVal(5, 32)), (farr, k), (barr, k), (lam, k), (lam, z3.BitVecVal(2, 32)),
    (arr, 7),
])
def test_select_is_z3pys(array, index):
    for _ in range(2):      # the first call learns the element class, the second uses it
        same(zf.Select(array, index), z3.Select(array, index))


@pytest.mark.parametrize("array,index,value", [
    (arr, k, x), (arr, z3.BitVecVal(1, 32), z3.BitVecVal(9, 16)), (farr, k, f), (barr, k, a),
    (arr, 3, x), (arr, k, 5), (lam, k, x),
])
def test_store_is_z3pys(array, index, value):
    same(zf.Store(array, index, value), z3.Store(array, index, value))


def test_sort_mismatches_raise_as_z3py_does():
    with pytest.raises(z3.Z3Exception):
        zf.If(a, x, w)
    with pytest.raises(z3.Z3Exception):
        zf.Select(arr, w)
    with pytest.raises(z3.Z3Exception):
        zf.Store(arr, k, w)


def test_terms_of_another_context_go_to_z3py():
    other = z3.Context()
    p, q = z3.Bool("p", other), z3.Bool("q", other)
    same(zf.And(p, q), z3.And(p, q))
    with pytest.raises(z3.Z3Exception):
        zf.And(a, p)
    other_arr = z3.Array("arr", z3.BitVecSort(32, other), z3.BitVecSort(16, other))
    same(zf.Select(other_arr, z3.BitVec("k", 32, other)), z3.Select(other_arr, z3.BitVec("k", 32, other)))


def test_a_freed_array_sorts_id_is_not_taken_for_another_sort():
    """Z3 gives the ids of freed sorts to new ones: the element class learnt for one array
    sort must not be used for a sort made later with its id."""
    for width in range(3, 40):
        a1 = z3.Array(f"a{width}", z3.BitVecSort(32), z3.BitVecSort(width))
        same(zf.Select(a1, k), z3.Select(a1, k))
        del a1
        a2 = z3.Array(f"f{width}", z3.BitVecSort(32), z3.FPSort(5, width))
        same(zf.Select(a2, k), z3.Select(a2, k))
        same(zf.Select(a2, k), z3.Select(a2, k))


@pytest.mark.parametrize("p,q", [
    (x, y), (x, z3.BitVecVal(4, 16)), (z3.BitVecVal(4, 16), z3.BitVecVal(4, 16)), (a, b), (f, g),
    (arr, z3.K(z3.BitVecSort(32), x)), (x, 3), (i, r), (i, 2), (lam, arr),
])
def test_eq_and_ne_are_z3pys(p, q):
    same(zf.Eq(p, q), p == q)
    same(zf.Ne(p, q), p != q)


@pytest.mark.parametrize("p,q", [(x, y), (x, z3.BitVecVal(4, 16)), (x, 3), (5, y)])
def test_unsigned_comparisons_are_z3pys(p, q):
    for fast, slow in ((zf.ULT, z3.ULT), (zf.ULE, z3.ULE), (zf.UGT, z3.UGT), (zf.UGE, z3.UGE)):
        same(fast(p, q), slow(p, q))


@pytest.mark.parametrize("t", [x, z3.BitVecVal(300, 16), x + y])
def test_extract_and_concat_are_z3pys(t):
    same(zf.Extract(7, 0, t), z3.Extract(7, 0, t))
    same(zf.Extract(15, 15, t), z3.Extract(15, 15, t))
    same(zf.Concat(w, t), z3.Concat(w, t))
    same(zf.Concat(t, z3.BitVecVal(1, 1)), z3.Concat(t, z3.BitVecVal(1, 1)))


def test_mismatched_widths_raise_as_z3py_does():
    for fn in (zf.Eq, zf.ULT, zf.Concat):
        if fn is zf.Concat:
            continue
        with pytest.raises(z3.Z3Exception):
            fn(x, w)
    with pytest.raises(z3.Z3Exception):
        zf.Extract(20, 0, x)


@pytest.mark.parametrize("t", [f, z3.FPVal(-0.0, z3.Float32()), z3.fpPlusInfinity(z3.Float32()), z3.fpNaN(z3.Float16())])
def test_float_predicates_are_z3pys(t):
    for fast, slow in ((zf.fpIsNaN, z3.fpIsNaN), (zf.fpIsInf, z3.fpIsInf), (zf.fpIsZero, z3.fpIsZero),
                       (zf.fpIsNegative, z3.fpIsNegative), (zf.fpIsPositive, z3.fpIsPositive)):
        same(fast(t), slow(t))


@pytest.mark.parametrize("p,q", [(f, g), (f, z3.FPVal(1.0, z3.Float32())), (f, 2.0), (1.5, g)])
def test_float_comparisons_are_z3pys(p, q):
    for fast, slow in ((zf.fpLT, z3.fpLT), (zf.fpLEQ, z3.fpLEQ), (zf.fpGT, z3.fpGT),
                       (zf.fpGEQ, z3.fpGEQ), (zf.fpEQ, z3.fpEQ)):
        same(fast(p, q), slow(p, q))
    with pytest.raises(z3.Z3Exception):
        zf.fpLT(f, z3.FP("h", z3.Float16()))


def test_a_batch_is_z3pys_application():
    terms = [x, f, a, arr, z3.BitVecVal(3, 16), lam, i]
    slow = z3.Function("batch", *[t.sort() for t in terms], z3.BoolSort())(*terms)
    same(zf.batch("batch", terms), slow)
    same(zf.batch("batch", iter(terms)), slow)
    assert [zf.batch("batch", terms).arg(k).eq(t) for k, t in enumerate(terms)] == [True] * len(terms)


def test_substitute_all_is_z3pys_substitute():
    c1, c2 = z3.BitVec("c1", 16), z3.FP("c2", z3.Float32())
    terms = [x + y == c1, z3.fpLT(f, g), z3.If(a, x, y), arr[k] == x, lam, a]
    pairs = [(x, c1), (f, c2), (a, z3.BoolVal(False))]
    for fast, t in zip(zf.substitute_all(terms, pairs), terms):
        same(fast, z3.substitute(t, *pairs))
    assert all(p.eq(t) for p, t in zip(zf.substitute_all(terms, []), terms))
    assert zf.substitute_all([], pairs) == []
    with pytest.raises(z3.Z3Exception):
        zf.substitute_all(terms, [(x, w)])        # 16 bits by 8: z3py's error


def test_simplify_all_is_z3pys_simplify_up_to_argument_order():
    from tvtv.encode.canonical import Canonicalizer
    shared = z3.If(a, x + y, y * x)
    terms = [shared + 0 == x, z3.Or(b, z3.Not(b), c), z3.And(a, shared == y), shared, x]
    canon = Canonicalizer()
    for fast, t in zip(zf.simplify_all(terms), terms):
        assert canon(fast).eq(canon(z3.simplify(t))), (fast, t)
    assert len(zf.simplify_all(terms)) == len(terms)
    assert zf.simplify_all([]) == []
    same(zf.simplify_all([x + 0])[0], z3.simplify(x + 0))
