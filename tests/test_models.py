"""Float models (abstract, ieee, real), arithmetic settings, assumptions and solvers, end to end
through `tvtv.verify`: what each proves and refutes, and that every choice is printed."""
from __future__ import annotations

import math

import numpy as np
import pytest
import z3
from tvm.script import ir as I
from tvm.script import relax as R

import tvtv
from tests.conftest import mutate
from tvtv.absfp.real import RealModel
from tvtv.refinement import Options
from tvtv.solvers import Query, to_smtlib


def verdict(before, after, **kw):
    kw.setdefault("confirm_vm", False)
    (r,) = tvtv.verify(before, after, **kw).results
    return r


@I.ir_module
class SumLeft:
    @R.function
    def main(x: R.Tensor((4,), "float32"), y: R.Tensor((4,), "float32"), z: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
        a = R.add(x, y)
        b = R.add(a, z)
        return b


@I.ir_module
class SumRight:
    @R.function
    def main(x: R.Tensor((4,), "float32"), y: R.Tensor((4,), "float32"), z: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
        a = R.add(y, z)
        b = R.add(x, a)
        return b


@I.ir_module
class Identity:
    @R.function
    def main(x: R.Tensor((4,), "float32"), y: R.Tensor((4,), "float32"), z: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
        return x


@I.ir_module
class AddZero:
    @R.function
    def main(x: R.Tensor((4,), "float32"), y: R.Tensor((4,), "float32"), z: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
        a = R.add(x, R.const(0.0, "float32"))
        return a


@I.ir_module
class TimesZero:
    @R.function
    def main(x: R.Tensor((4,), "float32"), y: R.Tensor((4,), "float32"), z: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
        a = R.multiply(x, R.const(0.0, "float32"))
        b = R.multiply(a, a)
        return b


@I.ir_module
class Zero:
    @R.function
    def main(x: R.Tensor((4,), "float32"), y: R.Tensor((4,), "float32"), z: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
        return R.const(np.zeros((4,), "float32"))


@I.ir_module
class ReduceRows:
    @R.function
    def main(x: R.Tensor((4, 3), "float32")) -> R.Tensor((3,), "float32"):
        s = R.sum(x, axis=[0])
        return s


@I.ir_module
class ReduceFlippedRows:
    @R.function
    def main(x: R.Tensor((4, 3), "float32")) -> R.Tensor((3,), "float32"):
        f = R.flip(x, axis=0)
        s = R.sum(f, axis=[0])
        return s


@I.ir_module
class RoundTripF16:
    @R.function
    def main(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
        a = R.astype(x, "float16")
        b = R.astype(a, "float32")
        return b


@I.ir_module
class IdentityF32:
    @R.function
    def main(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
        return x


@I.ir_module
class ToF16:
    @R.function
    def main(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float16"):
        a = R.astype(x, "float16")
        return a


@I.ir_module
class WidenNarrow:
    @R.function
    def main(x: R.Tensor((4,), "float16")) -> R.Tensor((4,), "float16"):
        a = R.astype(x, "float64")
        b = R.astype(a, "float32")
        c = R.astype(b, "float16")
        return c


@I.ir_module
class IdentityF16:
    @R.function
    def main(x: R.Tensor((4,), "float16")) -> R.Tensor((4,), "float16"):
        return x


# ---------------------------------------------------------------------------------------------
# options
# ---------------------------------------------------------------------------------------------
def test_options_validate_with_one_line_errors():
    for kw, allowed in [({"fp": "double"}, "abstract, ieee, real"), ({"solver": "yices"}, "z3, cvc5, both"),
                        ({"assume": ("fast",)}, "no-nan, no-inf, no-signed-zeros")]:
        with pytest.raises(ValueError) as err:
            Options(**kw)
        assert allowed in str(err.value) and "\n" not in str(err.value)
    assert Options(assume=("no-inf", "no-nan", "no-inf")).assume == ("no-inf", "no-nan")


# ---------------------------------------------------------------------------------------------
# models: what each proves
# ---------------------------------------------------------------------------------------------
def test_real_model_proves_reassociation_ieee_refutes_it():
    r = verdict(SumLeft, SumRight, fp="real")
    assert r.verdict == "proved"
    assert "fp: real (correct up to rounding only)" in r.levels and r.fp_model == "real"
    # bit-exact float32 search: 11 s alone on 2026-11-29, over the default 30 s per query
    # beside a CI run, so a longer timeout (what is asserted is the verdict, not its speed)
    r = verdict(SumLeft, SumRight, fp="ieee", timeout=120)
    assert r.verdict == "counterexample" and r.counterexample.confirmed_ieee, r.to_dict()
    r = verdict(SumLeft, SumRight, timeout=120)   # default: abstract, then IEEE confirms
    assert r.verdict == "counterexample" and r.counterexample.confirmed_ieee, r.to_dict()


def test_real_model_still_refutes_wrong_algebra():
    r = verdict(SumLeft, Identity, fp="real")
    assert r.verdict == "counterexample"
    x, y, z = (r.counterexample.inputs[n] for n in "xyz")
    i = r.counterexample.index
    assert float(x[i]) + float(y[i]) + float(z[i]) != float(x[i])


def test_real_model_keeps_nan_and_inf():
    """x * 0 is not 0 when x is NaN or inf, in the real model too."""
    assert verdict(Zero, TimesZero, fp="real").verdict == "counterexample"
    assert verdict(Zero, TimesZero, fp="real", assume=["no-nan", "no-inf"]).verdict == "proved"


def test_precision_change_refuted_in_default_model_and_proved_in_real():
    r = verdict(IdentityF32, RoundTripF16)
    assert r.verdict == "counterexample"
    assert r.counterexample.confirmed_ieee is True
    x = r.counterexample.inputs["x"][r.counterexample.index]
    with np.errstate(over="ignore"):   # the solver may pick an x beyond float16's range
        assert float(np.float32(x).astype(np.float16)) != float(x)
    assert verdict(IdentityF32, RoundTripF16, fp="real").verdict == "proved"


def test_dtype_change_refuted():
    r = verdict(IdentityF32, ToF16)
    assert r.verdict == "counterexample" and r.counterexample.kind == "dtype"


def test_widening_then_narrowing_is_identity_in_every_model():
    for fp in ("abstract", "ieee", "real"):
        r = verdict(IdentityF16, WidenNarrow, fp=fp)
        assert r.verdict == "proved", (fp, r.to_dict())
    assert any("casts split along float16" in lv for lv in verdict(IdentityF16, WidenNarrow).levels)


# ---------------------------------------------------------------------------------------------
# arithmetic settings
# ---------------------------------------------------------------------------------------------
def test_reassociation_of_reductions_is_a_printed_choice():
    r = verdict(ReduceRows, ReduceFlippedRows)
    assert r.verdict == "proved"
    assert any(lv.startswith("reductions: reassociate") for lv in r.levels)
    r = verdict(ReduceRows, ReduceFlippedRows, reassociate=False, refine_to_ieee=False)
    assert r.verdict == "counterexample"
    assert any(lv.startswith("reductions: fixed order") for lv in r.levels)


# ---------------------------------------------------------------------------------------------
# assumptions
# ---------------------------------------------------------------------------------------------
def test_no_signed_zeros():
    assert verdict(Identity, AddZero).verdict == "counterexample"
    r = verdict(Identity, AddZero, assume=["no-signed-zeros"])
    assert r.verdict == "proved"
    assert r.assumptions == ["no-signed-zeros: outputs are compared modulo the sign of zero"]
    assert r.to_dict()["assumptions"] == r.assumptions


def test_no_nan_no_inf_constrain_inputs():
    assert verdict(Zero, TimesZero).verdict == "counterexample"
    r = verdict(Zero, TimesZero, assume=["no-nan"])
    assert r.verdict == "counterexample"          # inf * 0 is NaN still
    x = r.counterexample.inputs["x"][r.counterexample.index]
    assert math.isinf(x)
    r = verdict(Zero, TimesZero, assume=["no-nan", "no-inf"])
    # (x * 0)^2 = +0 for finite x: the sign of x * 0 squares away
    assert r.verdict == "proved", r.to_dict()
    assert len(r.assumptions) == 2


@I.ir_module
class DoubleDiff:
    @R.function
    def main(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
        a = R.multiply(x, R.const(2.0, "float32"))
        b = R.subtract(a, a)
        return b


@I.ir_module
class Zeros4:
    @R.function
    def main(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
        return R.const(np.zeros((4,), "float32"))


@I.ir_module
class Ones4:
    @R.function
    def main(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
        return R.const(np.ones((4,), "float32"))


@I.ir_module
class Doubled:
    @R.function
    def main(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
        a = R.multiply(x, R.const(2.0, "float32"))
        return a


@I.ir_module
class DoubledClamped:
    @R.function
    def main(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
        a = R.multiply(x, R.const(2.0, "float32"))
        b = R.minimum(a, R.const(np.finfo(np.float32).max, "float32"))
        return b


def test_no_nan_makes_a_computed_nan_poison():
    # 2x - 2x is NaN when 2x overflows (finite x = 2^127) or x is inf: nnan makes that poison
    r = verdict(DoubleDiff, Zeros4)
    assert r.verdict == "counterexample"
    # no-inf alone: a NaN input, or a finite x whose double overflows, gives a NaN output
    assert verdict(DoubleDiff, Zeros4, assume=["no-inf"]).verdict == "counterexample"
    assert verdict(DoubleDiff, Zeros4, assume=["no-nan"]).verdict == "proved"
    # twin: where the source is a number (0), the target must still equal it
    assert verdict(DoubleDiff, Ones4, assume=["no-nan"]).verdict == "counterexample"


def test_no_inf_makes_a_computed_infinity_poison():
    # clamping 2x at FLT_MAX differs from 2x only where 2x overflowed to +inf
    r = verdict(Doubled, DoubledClamped, assume=["no-nan"])
    assert r.verdict == "counterexample"
    assert r.counterexample.source_value == math.inf
    r = verdict(Doubled, DoubledClamped, assume=["no-inf"])
    assert r.verdict == "proved", r.to_dict()
    assert any("ninf" in a for a in r.assumptions)
    assert verdict(Doubled, Zeros4, assume=["no-nan", "no-inf"]).verdict == "counterexample"


def test_assumptions_reach_the_cli_options_via_api():
    report = tvtv.verify(Zero, TimesZero, assume="no-nan,no-inf", confirm_vm=False)
    assert report.results[0].verdict == "proved"


# ---------------------------------------------------------------------------------------------
# solvers
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("solver", ["cvc5", "both"])
def test_cvc5_proves_and_refutes(solver):
    r = verdict(SumLeft, SumLeft, solver=solver)
    assert r.verdict == "proved" and f"solver: {solver}" in r.levels
    r = verdict(SumLeft, SumRight, solver=solver, fp="real")
    assert r.verdict == "proved"
    r = verdict(Identity, AddZero, solver=solver)
    assert r.verdict == "counterexample"
    assert r.counterexample.inputs["x"][r.counterexample.index] == 0.0


def test_cvc5_reads_lambdas_arrays_bv_fp_datatypes():
    i = z3.BitVec("i!0", 32)
    fp = z3.FPSort(8, 24)
    x = z3.Array("x", z3.BitVecSort(32), fp)
    lam = z3.Lambda([i], z3.fpAdd(z3.RNE(), x[i], x[i]))
    f = z3.Function("f", z3.ArraySort(z3.BitVecSort(32), fp), fp)
    text = to_smtlib([f(lam) != f(x)])
    assert "lambda" not in text and "forall" in text
    q = Query("cvc5", 10)
    q.add(f(lam) != f(z3.Lambda([i], z3.fpMul(z3.RNE(), x[i], z3.FPVal(2.0, fp)))))
    assert q.check() == z3.unsat          # x+x = 2x elementwise, so the arrays are equal
    rf = RealModel().domain("float32")
    q = Query("both", 10)
    a = rf.var("a")
    q.add(z3.Not(rf.same(rf.add(a, rf.const(1.0)), rf.add(rf.const(1.0), a))))
    assert q.check() == z3.unsat and q.answers == {"cvc5": "unsat", "z3": "unsat"}


@I.ir_module
class DivSqrt:
    @R.function
    def main(x: R.Tensor((3,), "float32"), v: R.Tensor((3,), "float32")) -> R.Tensor((3,), "float32"):
        s = R.sqrt(v)
        o = R.divide(x, s)
        return o


@I.ir_module
class MulRsqrt:
    @R.function
    def main(x: R.Tensor((3,), "float32"), v: R.Tensor((3,), "float32")) -> R.Tensor((3,), "float32"):
        r = R.rsqrt(v)
        o = R.multiply(x, r)
        return o


def test_real_model_takes_rsqrt_as_one_over_sqrt():
    """x / sqrt(v) and x * rsqrt(v) differ by rounding only: the real model proves it (the
    IEEE model cannot: rsqrt is uninterpreted there); x * sqrt(v) is still refuted."""
    assert verdict(DivSqrt, MulRsqrt, fp="real").verdict == "proved"
    assert verdict(DivSqrt, MulRsqrt, fp="ieee", timeout=1).verdict != "proved"
    broken = mutate(MulRsqrt, "R.rsqrt(v)", "R.sqrt(v)")
    assert verdict(DivSqrt, broken, fp="real").verdict == "counterexample"


def _real_floats():
    return RealModel().domain("float32")


def test_real_model_multiplying_by_a_reciprocal_is_dividing_on_every_value():
    """`mul(d, 1 / s)` is built as `d / s` (so layer_norm's `* rsqrt` meets its specification's
    `/ sqrt` as one term): the rewrite must be an identity of the real model for every d and
    s, NaN, ±inf and 0 included. Checked on the model's own unrewritten multiply."""
    dom = _real_floats()
    d, s = z3.Const("d", dom.sort), z3.Const("s", dom.sort)
    claim = dom._mul(d, dom._div(dom.const(1.0), s)) == dom._div(d, s)
    solver = z3.Solver()
    solver.add(z3.Not(claim))
    assert solver.check() == z3.unsat
    assert z3.eq(dom.mul(d, dom.div(dom.const(1.0), s)), dom.div(d, s))
    assert z3.eq(dom.mul(dom.div(dom.const(1.0), s), d), dom.div(d, s))


def test_real_model_multiplying_by_another_quotient_is_not_rewritten():
    """The twin: 2 / s is no reciprocal; `d * (2 / s)` stays a product, and the claim that it
    is `d / s` is refuted."""
    dom = _real_floats()
    d, s = z3.Const("d", dom.sort), z3.Const("s", dom.sort)
    two_over = dom.div(dom.const(2.0), s)
    assert not z3.eq(dom.mul(d, two_over), dom.div(d, s))
    solver = z3.Solver()
    solver.add(dom.mul(d, two_over) != dom.div(d, s))
    assert solver.check() == z3.sat


@pytest.mark.parametrize("n", [2, 3, 4])
def test_real_model_flat_sum_and_product_are_the_folds_on_every_value(n):
    """`RealFloats.sum`/`prod` state a reduction flat (one case split on the terms' kinds):
    for every n terms, NaN, ±inf and 0 included, they equal the left folds from 0 of `add`
    and from 1 of the model's own multiply, which define them."""
    dom = _real_floats()
    ts = [z3.Const(f"t{k}", dom.sort) for k in range(n)]
    acc_s, acc_p = dom.const(0.0), dom.const(1.0)
    for t in ts:
        acc_s, acc_p = dom.add(acc_s, t), dom._mul(acc_p, t)
    for flat, fold in ((dom.sum(ts), acc_s), (dom.prod(ts), acc_p)):
        solver = z3.Solver()
        solver.add(flat != fold)
        assert solver.check() == z3.unsat


def test_real_model_flat_sum_twin_a_dropped_term_is_refuted():
    dom = _real_floats()
    ts = [z3.Const(f"t{k}", dom.sort) for k in range(3)]
    solver = z3.Solver()
    solver.add(dom.sum(ts) != dom.add(dom.add(dom.const(0.0), ts[0]), ts[1]))
    assert solver.check() == z3.sat
    solver = z3.Solver()     # and a product that ignores a term's sign
    solver.add(dom.prod(ts) != dom._mul(dom._mul(ts[0], ts[1]), dom.abs(ts[2])))
    assert solver.check() == z3.sat


def test_real_model_builds_finite_inputs_under_no_nan_and_no_inf():
    """Under no-nan and no-inf the real model's inputs are reals wrapped as finite values
    (`RealFloats.finite_element`): the same verdicts as the assumptions' input facts give,
    and what holds only on finite values is proved, what fails on them still refuted."""
    assert verdict(Zero, TimesZero, fp="real").verdict == "counterexample"          # inf * 0
    assert verdict(Zero, TimesZero, fp="real", assume=["no-nan"]).verdict == "counterexample"
    r = verdict(Zero, TimesZero, fp="real", assume=["no-nan", "no-inf"])
    assert r.verdict == "proved", r.to_dict()
    assert verdict(Doubled, Zeros4, fp="real", assume=["no-nan", "no-inf"]).verdict == "counterexample"
    # the representation itself: an input element's NaN test is false by construction
    from tvtv.encode.tensor import Tensor, idx
    model = RealModel()
    model.finite_inputs = True
    dom = model.domain("float32")
    x = Tensor.variable("x", (4,), "float32", dom)
    assert z3.is_false(z3.simplify(dom.is_nan(x.at(idx(2)))))
    model.finite_inputs = False
    y = Tensor.variable("y", (4,), "float32", dom)
    assert not z3.is_false(z3.simplify(dom.is_nan(y.at(idx(2)))))
