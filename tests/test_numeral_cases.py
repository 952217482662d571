"""Folding operations on a few cases (`tvtv.numeral_cases`), and the float models' rules that
give `x - max` over one element as such cases (`ScalarDomain.difference_from_guarded`,
`IEEEFloats.add` on `x + (-x)`).

FastMathTransform's softmax over an axis of one element computes fast_exp(x - max(-FLT_MAX, x)):
Z3 had no answer after 30 s per query on it (`tests/test_cvc5_first.py` needed cvc5); folded,
each query is decided in milliseconds. Every fold is checked against the unfolded term on
special and random values, and the proof has its twin, a changed max init, refuted.
"""
from __future__ import annotations

import math

import numpy as np
import z3
from tvm.script import ir as I
from tvm.script import relax as R

import tvtv
from tvtv import numeral_cases
from tvtv.absfp.abstract import AbstractModel
from tvtv.absfp.ieee import IEEEModel, fp_value
from tvtv.encode.tir.intrinsics import tir_max

from tests.conftest import mutate

SPECIALS = [math.nan, math.inf, -math.inf, 0.0, -0.0, 3.4028234663852886e38,
            -3.4028234663852886e38, 1.0, -1.5, 1e-45]


def _values() -> list[float]:
    rng = np.random.default_rng(7)
    randoms = rng.integers(0, 1 << 32, 40, dtype=np.uint64).astype(np.uint32).view(np.float32)
    return SPECIALS + [float(v) for v in randoms]


def _at(term: z3.ExprRef, x: z3.ExprRef, value: float) -> z3.ExprRef:
    return z3.simplify(z3.substitute(term, (x, z3.FPVal(value, None, z3.Float32()) if not math.isnan(value)
                                            else z3.fpNaN(z3.Float32()))))


def _same(a: z3.ExprRef, b: z3.ExprRef) -> bool:
    """The same closed value: identical numerals (NaN alike), or the same truth."""
    if z3.is_fp_value(a) and z3.is_fp_value(b):
        va, vb = fp_value(a, "float32"), fp_value(b, "float32")
        return (math.isnan(va) and math.isnan(vb)) or (va == vb and math.copysign(1, va) == math.copysign(1, vb))
    return a.eq(b)


def _assert_equal_everywhere(term: z3.ExprRef, folded: z3.ExprRef, x: z3.ExprRef) -> None:
    for v in _values():
        a, b = _at(term, x, v), _at(folded, x, v)
        assert _same(a, b), (v, a, b)


def _fast_exp_like(d: z3.ExprRef, clamp: bool = True) -> z3.ExprRef:
    """fast_exp's integer part (before its int32 conversion): clamp, scale, floor, + 127."""
    k = lambda v: z3.FPVal(v, None, z3.Float32())                       # noqa: E731
    c = d
    if clamp:
        c = z3.If(z3.fpLT(c, k(88.3762626647950)), c, k(88.3762626647950))
        c = z3.If(z3.fpGT(c, k(-88.3762626647949)), c, k(-88.3762626647949))
    n = z3.fpRoundToIntegral(z3.RTN(), z3.fpAdd(z3.RNE(), z3.fpMul(z3.RNE(), c, k(1.44269504)), k(0.5)))
    return z3.fpAdd(z3.RNE(), n, k(127.0))


def test_x_minus_max_of_one_element_is_three_numerals():
    """IEEE `x - T.max(-FLT_MAX, x)` is -inf at x = -inf, NaN at NaN and +inf, +0 else: the
    same values as the subtraction, on special and random x."""
    dom = IEEEModel().domain("float32")
    x = z3.FP("x", z3.Float32())
    split = dom.sub(x, tir_max(dom, dom.const(-3.4028234663852886e38), x))
    found = numeral_cases.cases(split)
    assert found is not None and len(found) == 3, split
    plain = z3.fpSub(z3.RNE(), x, tir_max(dom, dom.const(-3.4028234663852886e38), x))
    _assert_equal_everywhere(plain, split, x)


def test_abstract_model_splits_alike():
    """The abstract model's `x - T.max(-FLT_MAX, x)`: the split term equals its general
    subtraction for every x (a solver proof: the model has no concrete evaluation)."""
    dom = AbstractModel().domain("float32")
    x = z3.Const("x", dom.sort)
    low = dom.const(-3.4028234663852886e38)
    b = tir_max(dom, low, x)
    split = dom.sub(x, b)
    general = dom.add(x, dom.neg(b))
    s = z3.Solver()
    s.set("timeout", 20000)
    s.add(z3.Not(dom.same(split, general)))
    assert s.check() == z3.unsat


def test_x_plus_minus_x_is_self_difference():
    dom = IEEEModel().domain("float32")
    x = z3.FP("x", z3.Float32())
    t = dom.add(x, z3.fpNeg(x))
    assert numeral_cases.cases(t) is not None
    _assert_equal_everywhere(z3.fpAdd(z3.RNE(), x, z3.fpNeg(x)), t, x)


def test_fold_decides_the_int32_conversion_of_fast_exp():
    """Whether fast_exp's int32 conversion can be out of range for some x, on x - max over one
    element as the IEEE model builds it: folded, it is false; the fold equals the plain
    subtraction's term on special and random x."""
    dom = IEEEModel().domain("float32")
    x = z3.FP("x", z3.Float32())
    low = dom.const(-3.4028234663852886e38)
    bound = z3.FPVal(2.0 ** 31, None, z3.Float32())

    def out_of_range(d: z3.ExprRef, clamp: bool = True) -> z3.BoolRef:
        n = _fast_exp_like(d, clamp)
        return z3.Or(z3.fpIsNaN(n), z3.fpIsInf(n), z3.fpGEQ(n, bound), z3.fpLT(n, -bound))

    fact = out_of_range(dom.sub(x, tir_max(dom, low, x)))
    (folded,) = numeral_cases.fold([fact])
    # the fold alone decides it, where Z3's simplifier does not (8 such elements in one
    # disjunction: Z3 2 s unfolded, 0.2 ms folded)
    assert z3.is_false(folded) and not z3.is_false(z3.simplify(fact)), folded
    plain = out_of_range(z3.fpSub(z3.RNE(), x, tir_max(dom, low, x)))
    _assert_equal_everywhere(plain, folded, x)
    # the twin, without the clamp: x - max is -inf at x = -inf, and so is the conversion's
    # argument; folded, the query must stay satisfiable
    twin = out_of_range(dom.sub(x, tir_max(dom, low, x)), clamp=False)
    (folded_twin,) = numeral_cases.fold([twin])
    assert not folded_twin.eq(twin)
    s = z3.Solver()
    s.add(folded_twin)
    assert s.check() == z3.sat
    _assert_equal_everywhere(twin, folded_twin, x)


def test_fold_keeps_what_has_no_cases():
    """Terms without if-then-else of closed terms come back as the same objects."""
    x, y = z3.FPs("x y", z3.Float32())
    facts = [z3.fpLT(z3.fpAdd(z3.RNE(), x, y), x), z3.Or(z3.fpIsNaN(x), z3.fpEQ(x, y))]
    out = numeral_cases.fold(facts)
    assert all(a is b for a, b in zip(out, facts))


def test_fold_reads_a_condition_thousands_of_connectives_deep():
    """A case condition that is a chain of 3,000 nested and/or over three tests of x (FuseTIR's
    seed-2 graph 25 passed Python's recursion limit in `_condition`, an internal error) is
    read over its atoms, and the choice it makes folds to the same values."""
    x = z3.FP("x", z3.Float32())
    k = lambda v: z3.FPVal(v, None, z3.Float32())                       # noqa: E731
    a, b = z3.fpGT(x, k(1.0)), z3.fpIsInf(x)
    c = z3.fpIsNaN(x)
    for i in range(3000):
        c = z3.Or(z3.And(c, a), b) if i % 2 else z3.And(z3.Or(c, b), z3.Not(a))
    term = z3.fpAdd(z3.RNE(), z3.If(c, k(1.0), k(2.0)), k(3.0))
    (folded,) = numeral_cases.fold([term == k(4.0)])
    assert not folded.eq(term == k(4.0))       # the sum folded over the condition's atoms
    _assert_equal_everywhere(term == k(4.0), folded, x)


def test_fold_under_toward_negative_keeps_the_sum():
    """x + (-x) is -0 rounding toward negative (IEEE 754 §6.3): not the self-difference."""
    x = z3.FP("x", z3.Float32())
    t = z3.fpAdd(z3.RTN(), x, z3.fpNeg(x))
    fact = z3.fpIsNegative(t)
    (out,) = numeral_cases.fold([fact])
    assert out is fact
    s = z3.Solver()
    s.add(out, z3.Not(z3.fpIsNaN(x)), z3.Not(z3.fpIsInf(x)))
    assert s.check() == z3.sat


def test_unary_function_of_cases_folds_its_special_values():
    """exp(x - x) in the IEEE model is 1 for finite x and NaN else: its uninterpreted exp is
    reached by no case."""
    dom = IEEEModel().domain("float32")
    x = z3.FP("x", z3.Float32())
    e = dom.unary("exp", dom.sub(x, x))
    assert "ieee_exp" not in e.sexpr(), e
    for v in SPECIALS:
        got = fp_value(_at(e, x, v), "float32")
        want = 1.0 if math.isfinite(v) else math.nan
        assert (math.isnan(got) and math.isnan(want)) or got == want, (v, got)


@I.ir_module
class SoftmaxOfOne:
    @R.function
    def main(x: R.Tensor((2, 4, 1), "float32")) -> R.Tensor((2, 4, 1), "float32"):
        with R.dataflow():
            y = R.nn.softmax(x, axis=2)
            R.output(y)
        return y


def test_fast_softmax_over_one_element_is_proved_by_z3():
    """Isra seed 23's pattern (graphs 0 and 6): `unknown` after 44 s before, proved now."""
    (r,) = tvtv.check_pass("FastMathTransform", SoftmaxOfOne, timeout=30).results
    assert r.verdict == "proved", r.to_dict()
    assert "fp: ieee (bit-exact)" in r.levels, r.levels


def test_its_twin_with_max_init_zero_is_refuted():
    """The twin: the maximum starts at 0, so x - max is x for x < 0 and fast_exp(x) is 0
    below -88.38: 0 / 0 is NaN where softmax gives 1."""
    import tvm
    target = tvm.relax.transform.FastMathTransform()(SoftmaxOfOne)
    broken = mutate(target, "T.float32(-340282346638528859811704183484516925440.0)",
                    "T.float32(0.0)")
    (r,) = tvtv.verify(SoftmaxOfOne, broken, timeout=30).results
    assert r.verdict == "counterexample" and r.confirmed is True, r.to_dict()


def _random_term(rng: np.random.Generator, x: z3.ExprRef, depth: int) -> z3.ExprRef:
    """A random float32 term over x mixing cases (x - x, guarded maxima, clamps, selects on
    comparisons) with IEEE arithmetic, rounding and conversions."""
    f = z3.Float32()
    k = lambda: z3.FPVal(float(rng.choice([0.5, -2.0, 88.0, 1e38, -1e-40, 3.0])), None, f)  # noqa: E731
    if depth == 0:
        return [x, k(), z3.fpSub(z3.RNE(), x, x)][int(rng.integers(3))]
    a, b = _random_term(rng, x, depth - 1), _random_term(rng, x, depth - 1)
    choice = int(rng.integers(9))
    if choice == 0:
        return z3.fpAdd(z3.RNE(), a, b)
    if choice == 1:
        return z3.fpMul(z3.RNE(), a, k())
    if choice == 2:
        return z3.fpDiv(z3.RNE(), a, b)
    if choice == 3:
        return z3.If(z3.fpLT(a, b), a, b)
    if choice == 4:
        return z3.If(z3.Or(z3.fpIsNaN(a), z3.fpIsInf(a)), k(), a)
    if choice == 5:
        return z3.fpRoundToIntegral(z3.RTN(), a)
    if choice == 6:       # through int32 and back, as fast_exp's exponent
        return z3.fpSignedToFP(z3.RNE(), z3.fpToSBV(z3.RTZ(), a, z3.BitVecSort(32)), f)
    if choice == 7:
        return z3.fpAdd(z3.RNE(), a, z3.fpNeg(a))
    return z3.fpAbs(z3.fpNeg(a))


def test_fold_keeps_the_value_of_random_terms():
    """Soundness: 300 random terms (of which the fold changes many) against their folds, each
    on special and random values of x, and each comparison a fact folded alongside."""
    rng = np.random.default_rng(11)
    x = z3.FP("x", z3.Float32())
    changed = 0
    for _ in range(300):
        t = _random_term(rng, x, int(rng.integers(1, 4)))
        fact = z3.fpLT(t, z3.FPVal(1.0, None, z3.Float32()))
        (fact2,) = numeral_cases.fold([fact])
        ft = z3.z3._to_expr_ref(numeral_cases._Folder(x.ctx).fold(t.as_ast()), x.ctx)
        changed += not ft.eq(t)
        for v in SPECIALS + [float(rng.standard_normal() * 100)]:
            a, b = _at(t, x, v), _at(ft, x, v)
            if z3.is_fp_value(a) and z3.is_fp_value(b):
                assert _same(a, b), (t, ft, v, a, b)
            else:
                # an unspecified conversion (fp.to_sbv of NaN) stays a closed term: the two
                # must be equal however SMT-LIB's unspecified value is chosen
                s = z3.Solver()
                s.add(z3.Not(z3.Or(a == b, z3.And(z3.fpIsNaN(a), z3.fpIsNaN(b)))))
                assert s.check() == z3.unsat, (t, ft, v, a, b)
            fa, fb = _at(fact, x, v), _at(fact2, x, v)
            s = z3.Solver()
            s.add(fa != fb)
            assert s.check() == z3.unsat, (fact, fact2, v)
    assert changed > 50, changed
