"""Counterexamples of the real model (`--fp real`) are shown in exact real arithmetic.

That model claims a rewrite is correct up to rounding, so a difference of the last bit on
the VM is no evidence against it: exp(a + b) -> exp(a) * exp(b) is an identity of the reals
that every run rounds differently. Before these tests, such a rewrite was reported as a
counterexample "confirmed" by the VM. `tvtv.encode.enclosures` and
`confirm._confirm_in_real` are what changed; the twins are real differences, which must still
be confirmed.
"""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
import z3
from tvm import relax

import tvtv
from tvtv import confirm
from tvtv.encode.enclosures import REL_MARGIN, enclosures
from tvtv.ir import tvm_bridge
from tvtv.report import Counterexample

R = relax.op


def _module(body, n: int = 4):
    """main(a, b) of two float32 vectors of `n` elements returning `body(bb, a, b)`."""
    bb = relax.BlockBuilder()
    a = relax.Var("a", relax.TensorType((n,), "float32"))
    b = relax.Var("b", relax.TensorType((n,), "float32"))
    with bb.function("main", [a, b]):
        bb.emit_func_output(bb.emit(body(bb, a, b)))
    return bb.get()


def exp_of_sum(bb, a, b):
    return R.exp(bb.emit(R.add(a, b)))


def product_of_exps(bb, a, b):
    return R.multiply(bb.emit(R.exp(a)), bb.emit(R.exp(b)))


def tanh_of_sum(bb, a, b):
    return R.tanh(bb.emit(R.add(a, b)))


def exp_of_shifted_sum(bb, a, b):
    return R.exp(bb.emit(R.add(bb.emit(R.add(a, b)), relax.const(1e-3, "float32"))))


def exp_plus(bb, a, b):
    return R.add(bb.emit(R.exp(a)), b)


def exp_plus_twice(bb, a, b):
    return R.add(bb.emit(R.exp(a)), bb.emit(R.multiply(b, relax.const(2.0, "float32"))))


def _rational(q: Fraction) -> z3.ArithRef:
    return z3.RealVal(f"{q.numerator}/{q.denominator}")


def test_enclosures_hold_the_functions_true_values_and_little_else():
    """An application to a number a double holds gets [v - r, v + r] around the C library's
    value v: the double exp(0.5) is inside, a value 2^-30 off (far more than any libm's
    error, far less than the differences tests refute) is not. Applications to other
    numbers, to open terms and of functions without a reference stay open."""
    exp = z3.Function("real_exp", z3.RealSort(), z3.RealSort())
    app = exp(z3.RealVal("1/2"))
    (fact,) = enclosures(app + 1)
    v = Fraction(math.exp(0.5))
    for value, inside in ((v, True), (v * (1 + Fraction(2) ** -30), False),
                          (v * (1 - Fraction(2) ** -30), False)):
        s = z3.Solver()
        s.add(fact, app == _rational(value))
        assert (s.check() == z3.sat) is inside, value
    pow_ = z3.Function("real_pow", z3.RealSort(), z3.RealSort(), z3.RealSort())
    assert len(enclosures(pow_(z3.RealVal(2), z3.RealVal("1/2")))) == 1
    x = z3.Real("x")
    foo = z3.Function("real_foo", z3.RealSort(), z3.RealSort())
    assert enclosures(exp(z3.RealVal("1/3"))) == []          # no double is 1/3
    assert enclosures(exp(x)) == []                          # an open argument
    assert enclosures(exp(exp(x))) == []
    assert enclosures(foo(z3.RealVal(1))) == []              # no reference for it
    assert REL_MARGIN < 2.0 ** -30


def test_a_rewrite_correct_up_to_rounding_is_no_counterexample_in_the_real_model():
    """exp(a + b) -> exp(a) * exp(b): the solver finds a difference (exp is open in the real
    model) and the VM shows one on the seeded inputs (rounding: checked below, so the test
    could fail the old way), but exact real evaluation does not separate the two: the
    verdict is `unknown`, with that reason."""
    src, tgt = _module(exp_of_sum), _module(product_of_exps)
    sets = confirm.input_sets([np.zeros(4, "float32")] * 2)
    runs = tvm_bridge.run_vm_isolated({"source": src, "target": tgt}, "main", sets)
    assert any(confirm.first_difference(s[1], t[1]) is not None
               for s, t in zip(runs["source"], runs["target"]) if s[0] == t[0] == "ok")
    r = tvtv.verify(src, tgt, fp="real", timeout=30).results[0]
    assert r.verdict == "unknown", r.to_dict()
    assert "exact real evaluation does not separate" in r.reason, r.reason
    # in the default model the same rewrite is a difference (IEEE rounds exp(a) * exp(b)
    # otherwise), shown on the VM
    r = tvtv.verify(src, tgt, timeout=30).results[0]
    assert r.verdict == "counterexample" and r.confirmed is True, r.to_dict()


@pytest.mark.parametrize("broken", [tanh_of_sum, exp_of_shifted_sum], ids=lambda f: f.__name__)
def test_a_real_difference_is_confirmed_in_the_real_model(broken):
    """The twins: exp replaced by tanh, and exp's argument shifted by 1e-3, are differences
    of the reals. Exact real evaluation separates them for every exp and tanh within the
    enclosures, and the reported values are the VM's (the solver's are any values of the
    open functions)."""
    src, tgt = _module(exp_of_sum), _module(broken)
    r = tvtv.verify(src, tgt, fp="real", timeout=30).results[0]
    assert r.verdict == "counterexample" and r.confirmed is True, r.to_dict()
    cex = r.counterexample
    assert cex.confirmed_by == "real", cex.confirmed_by
    a, b = cex.inputs["a"], cex.inputs["b"]
    (s,) = tvm_bridge.run_vm(src, "main", [a, b])
    (t,) = tvm_bridge.run_vm(tgt, "main", [a, b])
    assert (cex.source_value, cex.target_value) == (float(s[cex.index]), float(t[cex.index]))


@pytest.mark.parametrize("old,new,shown", [("T.exp(", "T.tanh(", True),
                                            ("T.exp(gv[v_i0])", "T.exp(gv[v_i0]) * T.float32(1.0)",
                                             False)],
                         ids=["exp->tanh", "times one"])
def test_legalized_code_is_read_when_a_real_counterexample_is_confirmed(old, new, shown):
    """A LegalizeOps target: the VM legalizes the source too, so only the PrimFunc's body,
    evaluated in the real model, can show that its exp became tanh. The twin multiplies by
    one, which no real evaluation separates (nor does the VM: it is exact)."""
    from tests.conftest import mutate
    src = _module(exp_of_sum)
    tgt = mutate(relax.transform.LegalizeOps()(src), old, new)
    cex = Counterexample("value", "output 0 differs at index (0,)",
                         {"a": np.array([0.5, -1.0, 2.0, 0.25], "float32"),
                          "b": np.ones(4, "float32")}, 0, (0,))
    got = confirm.confirm_case(src, tgt, "main", ["a", "b"], cex, fp="real")
    assert got.confirmed is shown and got.by == ("real" if shown else "none"), got


def test_seeded_inputs_show_a_real_difference_the_solvers_inputs_miss():
    """`_confirm_in_real` on a counterexample whose inputs show nothing (b = 0, where
    exp(a) + b and exp(a) + 2b agree) finds a seeded set whose VM runs differ and which
    exact real evaluation separates; its inputs replace the counterexample's. The twin: the
    identity of the reals exp(a + b) = exp(a) * exp(b), whose VM runs differ on those sets
    too, is shown by none of them."""
    a = np.array([0.5, -1.0, 2.0, 0.25], "float32")
    cex = Counterexample("value", "output 0 differs at index (0,)",
                         {"a": a, "b": np.zeros(4, "float32")}, 0, (0,))
    got = confirm.confirm_case(_module(exp_plus), _module(exp_plus_twice), "main", ["a", "b"],
                               cex, fp="real")
    assert got.confirmed is True and got.by == "real-random-inputs", got
    assert cex.inputs["b"][cex.index] != 0
    twin = Counterexample("value", "output 0 differs at index (0,)",
                          {"a": a, "b": np.ones(4, "float32")}, 0, (0,))
    got = confirm.confirm_case(_module(exp_of_sum), _module(product_of_exps), "main",
                               ["a", "b"], twin, fp="real")
    assert got.confirmed is False and got.by == "none", got


def test_largest_differences_come_first():
    """NaN against a number first, then the largest relative difference; equal elements
    (NaN = NaN included) and outputs of different shapes are left out."""
    src = [np.array([1.0, 2.0, np.nan, 4.0, np.nan], "float32"), np.zeros(2, "float32")]
    tgt = [np.array([1.0, 2.5, 3.0, 4.0001, np.nan], "float32"), np.zeros(3, "float32")]
    got = confirm.largest_differences(src, tgt, 3)
    assert [(k, i) for k, i, _, _ in got] == [(0, (2,)), (0, (1,)), (0, (3,))]
    assert confirm.largest_differences(src, tgt, 1)[0][3] == 3.0


def test_a_pipeline_checked_through_its_steps_confirms_in_the_real_model():
    """The `zero` pipeline is checked through the module after LegalizeOps (`via`, with the
    same model-aware confirmation): it proves the plain pipeline, refutes a target whose
    exp became tanh with a counterexample shown in exact real arithmetic, and gives no
    counterexample for exp(a + b) -> exp(a) * exp(b), which only rounding separates."""
    from tests.conftest import mutate
    src = _module(exp_of_sum)
    (r,) = tvtv.check_pass("zero", src, fp="real", timeout=30).results
    assert r.verdict == "proved", r.to_dict()
    zero = tvm_bridge.pipeline("zero")
    broken = mutate(zero(src), "T.exp(", "T.tanh(")
    (r,) = tvtv.verify(src, broken, fp="real", timeout=30, pass_name="zero").results
    assert r.verdict == "counterexample" and r.confirmed is True, r.to_dict()
    assert r.counterexample.confirmed_by == "real", r.to_dict()
    (r,) = tvtv.verify(src, zero(_module(product_of_exps)), fp="real", timeout=30,
                       pass_name="zero").results
    assert r.verdict == "unknown", r.to_dict()
