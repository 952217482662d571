"""Float sums the specification leaves in any order get a value when every order gives the
same one (`tvtv.encode.evaluate.order_free_sum`), so a counterexample through a sum can be
confirmed against the specification (before, such an element was skipped as unknown)."""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from tvm.script import ir as I
from tvm.script import relax as R

import tvtv
from tvtv.confirm import ieee_element
from tvtv.encode.evaluate import order_free_sum

F = float(np.finfo(np.float32).max)


def _left_folds(vals: list[float]) -> set[bytes]:
    """Every permutation's left-to-right float32 sum (some of the summation trees)."""
    out = set()
    with np.errstate(all="ignore"):
        for perm in itertools.permutations(vals):
            acc = np.float32(perm[0])
            for v in perm[1:]:
                acc = acc + np.float32(v)
            out.add(b"nan" if np.isnan(acc) else acc.tobytes())
    return out


@pytest.mark.parametrize("vals,want", [
    ([1.625, -0.25, -0.5, -F], -F),          # the small terms are absorbed in every order
    ([0.5, 0.25, 0.125], 0.875),
    ([-0.0, -0.0], -0.0), ([1.0, -1.0], 0.0), ([0.0, -0.0], 0.0),   # IEEE 754 §6.3
    ([float("nan"), 1.0], float("nan")),
    ([-F, -F, -F, -F], -math.inf),            # overflows in every order
    ([1.0] * 10, 10.0), ([-0.0] * 9, -0.0),   # beyond the trees: exact in every order
    ([0.5, 0.25, -0.0] * 4, 3.0),
])
def test_sums_every_order_agrees_on(vals, want):
    got = order_free_sum(vals, "float32")
    assert got is not None and (math.isnan(want) and math.isnan(got) or
                                (got == want and math.copysign(1, got) == math.copysign(1, want)))


@pytest.mark.parametrize("vals", [
    [1.0, 1e-8, -1.0],                        # (1 + 1e-8) - 1 = 0, (1 - 1) + 1e-8 = 1e-8
    [F, F, -F],                               # F + F overflows, F - F does not
    [1.0] * 8 + [2.0 ** -30],                 # beyond the trees, not exact: not told
    [16777216.0] * 8 + [1.0],                 # 2^24 + 1 rounds: inexact
])
def test_sums_whose_orders_differ_or_cannot_be_told_get_no_value(vals):
    assert order_free_sum(vals, "float32") is None


def test_a_value_is_what_every_order_gives_on_random_terms():
    rng = np.random.default_rng(0)
    told = 0
    for _ in range(300):
        n = int(rng.integers(1, 6))
        pool = [0.0, -0.0, 1.0, -1.0, 0.5, 3.0, 1e-8, -2.5, F, -F, 1e30, -1e30, 7.25]
        vals = [float(np.float32(pool[int(i)])) for i in rng.integers(0, len(pool), n)]
        got = order_free_sum(vals, "float32")
        folds = _left_folds(vals)
        if got is not None:
            told += 1
            assert folds == {b"nan" if math.isnan(got) else np.float32(got).tobytes()}, vals
        elif len(folds) == 1:
            pass                       # the left folds agree, but some other tree differs
    assert told > 100


def test_exact_path_agrees_with_every_order_on_integers():
    rng = np.random.default_rng(1)
    for _ in range(50):
        vals = [float(v) for v in rng.integers(-1000, 1000, size=12)]
        got = order_free_sum(vals, "float32")
        assert got == sum(vals)
        perm = rng.permutation(vals)
        acc = np.float32(0)
        for v in perm:
            acc = acc + np.float32(v)
        assert float(acc) == got


@I.ir_module
class ArgmaxOfRowSums:
    @R.function
    def main(x: R.Tensor((3, 4), dtype="float32")) -> R.Tensor((), dtype="int64"):
        with R.dataflow():
            s = R.sum(x, axis=[1])
            a = R.argmax(s, axis=None)
            R.output(a)
        return a


def test_specification_through_a_sum_is_evaluated_where_every_order_agrees():
    x = np.array([[1.625, -0.25, -0.5, -F], [-F, 0.0, 0.0, 0.0], [-F, 1.0, 2.0, 3.0]], dtype="float32")
    assert ieee_element(ArgmaxOfRowSums, "main", {"x": x}, 0, ()) == (True, 0)
    # the twin: row 0's sum depends on the order (1 + 1e-8 - 1), so argmax is not told
    y = np.array([[1.0, 1e-8, -1.0, 0.0], [0.0, 0.0, 0.0, -1.0], [0.0, -1.0, 0.0, 0.0]], dtype="float32")
    assert ieee_element(ArgmaxOfRowSums, "main", {"x": y}, 0, ())[0] is False


def test_argmax_of_sums_finding_is_confirmed_against_the_specification():
    """TVM's argmax gives -1 when every row sum is -inf (argmax starts from -FLT_MAX with a
    strict comparison); the VM legalizes the source too, so only the specification shows it,
    and it needs the sums' value. Since execution comes before the IEEE model's search
    (`refinement.executing`), the finding is shown on seeded inputs whose row sums overflow
    ("ieee-spec-cpu": the specification, with TVM's own functions, against the target's run)
    where the IEEE model's counterexample was shown at its own inputs ("ieee-spec")."""
    (r,) = tvtv.check_pass("LegalizeOps", ArgmaxOfRowSums, assume=["no-nan", "no-inf"]).results
    assert r.verdict == "counterexample" and r.confirmed is True
    assert r.counterexample.confirmed_by in ("ieee-spec", "ieee-spec-cpu")
    assert r.counterexample.executed_values == (0, -1)
    with np.errstate(over="ignore"):
        sums = np.asarray(r.counterexample.inputs["x"], "float32").sum(axis=1, dtype="float32")
    assert np.isneginf(sums).all(), sums


def test_half_precision_sums_are_told_only_when_exact():
    """float16 and bfloat16 adds round twice in numpy (through float32), so their trees are
    not evaluated: only sums exact in every order get a value."""
    assert order_free_sum([1.0, 2.0, -0.5], "bfloat16") == 2.5
    assert order_free_sum([1.0, 2.0 ** -7], "bfloat16") == 1.0078125    # 8 significand bits
    assert order_free_sum([1.0, 2.0 ** -8], "bfloat16") is None         # rounds
    assert order_free_sum([1.0, 2.0 ** -10], "float16") == 1.0009765625
    assert order_free_sum([1.0, 2.0 ** -11], "float16") is None
    assert order_free_sum([65504.0, 65504.0], "float16") is None       # beyond the largest


def test_absorbed_sums_agree_with_every_tree():
    """One term absorbing the others (`_absorbed_sum`) gives what every summation tree
    gives, where the trees can still be evaluated (up to 7 terms), on random sums of one
    large term and small ones of both signs, subnormals and powers of two included."""
    from tvtv.encode.evaluate import _absorbed_sum, _every_tree

    rng = np.random.default_rng(2)
    told = 0
    for _ in range(400):
        n = int(rng.integers(2, 8))
        big = float(np.float32(rng.choice([1.0, 1.5, -F, F / 2, -2.0 ** -126, 2.0 ** 20, 3e-38])))
        scale = abs(big) * float(rng.choice([2.0 ** -22, 2.0 ** -24, 2.0 ** -26, 2.0 ** -30]))
        small = [float(np.float32(x)) for x in rng.uniform(-scale, scale, n - 1)]
        vals = [big] + small
        got = _absorbed_sum(vals, "float32")
        if got is not None:
            told += 1
            assert got == big and _every_tree(vals, np.float32) == big, vals
    assert told > 100


def test_a_dominant_term_beyond_the_trees_is_the_sum():
    """Twelve terms, too many for the trees: the largest absorbs the rest in every order
    (checked on random permutations); a rest worth half a spacing, or a tie for the
    largest, gets no value."""
    vals = [-F / 2] + [-1.0] * 7 + [3e29, -1e30, 0.0, -0.0]
    assert order_free_sum(vals, "float32") == np.float32(-F / 2)
    rng = np.random.default_rng(3)
    for _ in range(50):
        acc = np.float32(0.0)
        for v in rng.permutation(vals):
            acc = acc + np.float32(v)
        assert acc == np.float32(-F / 2)
    assert order_free_sum([1.5] + [2.0 ** -30] * 11, "float32") == 1.5
    assert order_free_sum([1.0] + [-2.0 ** -26] * 11, "float32") is None     # 11/4 spacings
    assert order_free_sum([F / 2, -F / 2] + [1.0] * 10, "float32") is None  # two largest


@pytest.mark.parametrize("vals,want", [
    ([-math.inf] * 4 + [0.0] * 6, -math.inf),            # conv products beside padding zeros
    ([math.inf] + [1.0, -2.0] * 5, math.inf),
    ([-math.inf] + [F / 20] * 9, -math.inf),              # the finite terms cannot overflow
])
def test_sums_with_infinities_of_one_sign_are_that_infinity(vals, want):
    assert order_free_sum(vals, "float32") == want


@pytest.mark.parametrize("vals", [
    [-math.inf] + [F] * 9,                                # F + F = inf meets -inf: NaN
    [-math.inf, math.inf] + [0.0] * 8,
    [-math.inf, math.nan] + [0.0] * 8,
])
def test_sums_with_infinities_that_may_meet_the_other_get_no_value(vals):
    got = order_free_sum(vals, "float32")
    assert got is None or math.isnan(got)


def test_infinite_sum_rule_agrees_with_every_order():
    """`_infinite_sum`, tried on small multisets every tree can be evaluated for: where it
    gives a value, every summation order gives it (float32, and float16 added as numpy
    does, through float32: the double rounding the rule's bound covers)."""
    from tvtv.encode.evaluate import _every_tree, _infinite_sum
    rng = np.random.default_rng(3)
    told = 0
    for dtype in ("float32", "float16"):
        top = float(np.finfo(dtype).max)
        pool = [math.inf, -math.inf, 0.0, -0.0, 1.0, -2.5, top, -top, top / 2, top / 8, -top / 8]
        for _ in range(400):
            vals = [pool[int(i)] for i in rng.integers(0, len(pool), int(rng.integers(2, 7)))]
            got = _infinite_sum(vals, dtype)
            if got is not None:
                told += 1
                assert _every_tree(vals, getattr(np, dtype)) == got, (dtype, vals)
    assert told > 100


@I.ir_module
class MaxOfMatmul:
    @R.function
    def main(x: R.Tensor((2, 8), dtype="float32"), w: R.Tensor((8, 3), dtype="float32")) -> R.Tensor((), dtype="float32"):
        with R.dataflow():
            y = R.matmul(x, w)
            m = R.max(y, axis=None)
            R.output(m)
        return m


def test_overflowing_inputs_confirm_max_starting_from_flt_max():
    """A matmul whose products all overflow to -inf: the specification's max is -inf, TIR's
    max reduction starts from -FLT_MAX and gives -FLT_MAX. The counterexample's own inputs
    (zeros) show nothing; the overflowing drawn set does, with the sums of 8 infinite terms
    valued by `order_free_sum`."""
    from tvtv import passes
    from tvtv.confirm import confirm_case
    from tvtv.ir import tvm_bridge
    from tvtv.report import Counterexample

    target = tvm_bridge.apply(passes.get("LegalizeOps").make(), MaxOfMatmul)
    zeros = {"x": np.zeros((2, 8), "float32"), "w": np.zeros((8, 3), "float32")}
    cex = Counterexample("value", "output 0 differs", zeros, output=0, index=())
    c = confirm_case(MaxOfMatmul, target, "main", ["x", "w"], cex, ("no-nan",))
    assert c.confirmed is True and c.by == "ieee-spec-cpu", c
    assert cex.executed_values == (-math.inf, -F)
    assert np.all(np.abs(cex.inputs["x"]) >= F / 4)     # the overflowing set's inputs


def _product_trees(vals: list[float]) -> set[bytes]:
    """Every multiplication order and bracketing of float32 `vals` (n ≤ 4), as bytes (NaN
    as one value)."""
    def trees(xs: tuple[np.float32, ...]) -> set[bytes]:
        if len(xs) == 1:
            return {xs[0].tobytes()}
        out = set()
        idx = range(len(xs))
        for k in range(1, len(xs)):
            for left in itertools.combinations(idx, k):
                if 0 not in left:          # each split once
                    continue
                right = tuple(xs[i] for i in idx if i not in left)
                for a in trees(tuple(xs[i] for i in left)):
                    for b in trees(right):
                        with np.errstate(all="ignore"):
                            p = np.frombuffer(a, np.float32)[0] * np.frombuffer(b, np.float32)[0]
                        out.add(np.float32(np.nan).tobytes() if np.isnan(p) else p.tobytes())
        return out
    return trees(tuple(np.float32(v) for v in vals))


def test_product_specials_admit_every_order_and_fix_what_every_order_gives():
    """`reduction._product_specials` in the IEEE model, against every multiplication order
    of float32 terms drawn from a pool of zeros, infinities, NaN, ±FLT_MAX, tiny and plain
    values: every value some order gives is admitted (some value of the uninterpreted
    product gives it), and where the encoding fixes one value, every order gives it."""
    import z3
    from tvtv.absfp.ieee import IEEEModel, fp_value
    from tvtv.encode import reduction
    dom = IEEEModel().domain("float32")
    pool = [0.0, -0.0, math.inf, -math.inf, math.nan, F, -F, 1e-30, -1e-30, 2.0, -3.0]
    rng = np.random.default_rng(3)
    fixed = 0
    for _ in range(150):
        vals = [float(v) for v in rng.choice(pool, size=int(rng.integers(2, 5)))]
        terms = [dom.const(v) for v in vals]
        g = z3.FP("g", dom.sort)
        enc = reduction._product_specials(
            dom, terms, g, z3.Or(*[dom.is_nan(t) for t in terms]),
            z3.Or(*[dom.is_inf(t) for t in terms]))
        actual = _product_trees(vals)
        for r in actual:
            value = np.frombuffer(r, np.float32)[0]
            s = z3.Solver()
            s.add(dom.same(enc, dom.const(float(value))))
            assert s.check() == z3.sat, (vals, value)
        simple = z3.simplify(enc)
        if z3.is_fp_value(simple):
            fixed += 1
            got = np.float32(fp_value(simple, "float32"))
            want = np.float32(np.nan).tobytes() if np.isnan(got) else got.tobytes()
            assert actual == {want}, (vals, got, actual)
    assert fixed > 30, fixed
