"""Counterexamples lifted from a refuted operator lemma (tvtv/lift.py), and the concrete
evaluation they rest on (materialized bindings, `libm_truth`).

TVM's argmax gives -1 for a row of -FLT_MAX (docs/findings.md): its lemma is refuted on finite
values, and where argmax reads a graph parameter the graph shows it on the lemma's inputs;
where it reads a computed value, on inputs solved for (tvtv/preimage.py). The twins: argmax of
tanh is not lifted (no input reaches -FLT_MAX: nothing claimed, the ordinary check runs), and
a run whose other parameters make a NaN inside is not taken."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import z3
from tvm.script import ir as I
from tvm.script import relax as R

import tvtv
from tvtv import lemmas, lift, passes
from tvtv.absfp.ieee import IEEEModel
from tvtv.confirm import _ieee_run, poisoned_inside
from tvtv.encode.evaluate import (element_value, encode_op, exact_value, libm_truth, libm_value,
                                  values_of)
from tvtv.ir import program as P
from tvtv.ir import tvm_bridge
from tvtv.refinement import Options

PER_OP = ("no-nan", "no-inf", "per-operation")
FLT_MAX = float(np.finfo(np.float32).max)


@I.ir_module
class ArgmaxOfInput:
    @R.function
    def main(x: R.Tensor((2, 3), "float32"), y: R.Tensor((3,), "float32")):
        with R.dataflow():
            a = R.argmax(x, axis=1, keepdims=False)
            e = R.exp(y)
            R.output(a, e)
        return (a, e)


@I.ir_module
class ArgmaxOfTanh:
    @R.function
    def main(x: R.Tensor((2, 3), "float32")):
        with R.dataflow():
            t = R.tanh(x)
            a = R.argmax(t, axis=1, keepdims=False)
            R.output(a)
        return a


def _legalized(mod):
    return tvm_bridge.apply(passes.get("LegalizeOps").make(), mod)


def test_argmax_lemma_refuted_on_finite_values_is_lifted_to_the_graph():
    found = lemmas.prove_lemmas(ArgmaxOfInput, Options(assume=PER_OP))
    assert [op for op, *_ in found.refuted_finite.values()] == ["relax.argmax"]
    (r,) = tvtv.verify(ArgmaxOfInput, _legalized(ArgmaxOfInput), pass_name="LegalizeOps",
                       assume=list(PER_OP)).results
    assert r.verdict == "counterexample" and r.confirmed, r.to_dict()
    cex = r.counterexample
    assert "lifted from the refuted relax.argmax lemma" in cex.message
    assert cex.confirmed_by == "spec-vs-vm" and cex.output == 0
    assert cex.executed_values == (0, -1)          # the specification's 0, TVM's -1
    row = cex.inputs["x"][cex.index[0]]
    assert (row == -FLT_MAX).all()
    assert np.isfinite(cex.inputs["y"]).all()
    assert poisoned_inside(ArgmaxOfInput, "main", cex.inputs, PER_OP) is False


def test_a_lifted_counterexample_at_a_chain_step_is_not_checked_again():
    """Through `zero` the argmax finding is lifted at the LegalizeOps step, where nothing is
    run on the VM; it is confirmed already (the specification against the VM), so the
    per-operation retry on runs without NaN/inf inside, meant for counterexamples nothing
    shows, is not asked (it doubled the time of zero's seed-0 graphs 0, 20, 27, 29 once)."""
    (r,) = tvtv.check_pass("zero", ArgmaxOfInput, assume=list(PER_OP)).results
    assert r.verdict == "counterexample" and r.confirmed, r.to_dict()
    assert "lifted from the refuted relax.argmax lemma" in r.reason
    assert not any("checked again" in lv for lv in r.levels), r.levels


def test_argmax_of_tanh_is_not_lifted():
    """The pre-image is sought, but no input makes tanh -FLT_MAX (its range fact)."""
    found = lemmas.prove_lemmas(ArgmaxOfTanh, Options(assume=PER_OP))
    assert found.refuted_finite        # the lemma is refuted ...
    assert lift.lift(ArgmaxOfTanh, _legalized(ArgmaxOfTanh), "main", ["x"],
                     found.refuted_finite, PER_OP) is None   # ... but no x reaches it


@I.ir_module
class ArgmaxOfMatmul:
    """Zero graph 29's shape: argmax over 2 * (exp(x) @ wᵀ)."""
    @R.function
    def main(x: R.Tensor((8,), "float32"), w: R.Tensor((4, 8), "float32"),
             z: R.Tensor((3,), "float32")):
        with R.dataflow():
            e = R.exp(x)
            wt = R.permute_dims(w, axes=[1, 0])
            m = R.matmul(e, wt)
            s = R.add(m, m)
            a = R.argmax(s, axis=None, keepdims=False)
            t = R.multiply(z, z)
            R.output(a, t)
        return (a, t)


def test_argmax_of_a_computed_value_is_lifted_through_its_preimage():
    """The argmax reads 2 * (exp(x) @ wᵀ): inputs are solved for so that it gets a row of
    -FLT_MAX, and execution shows TVM's -1 against the specification's 0."""
    (r,) = tvtv.verify(ArgmaxOfMatmul, _legalized(ArgmaxOfMatmul), pass_name="LegalizeOps",
                       assume=list(PER_OP)).results
    assert r.verdict == "counterexample" and r.confirmed, r.to_dict()
    cex = r.counterexample
    assert "solved for so that the refuted relax.argmax lemma's inputs reach it" in cex.message
    assert any(lift.PREIMAGE in line for line in r.levels)
    assert cex.confirmed_by == "spec-vs-vm" and cex.executed_values == (0, -1)
    x, w = cex.inputs["x"], cex.inputs["w"]
    m = np.exp(x.astype(np.float64)).astype(np.float32) @ w.T
    assert ((m + m) == -FLT_MAX).all()
    assert np.isfinite(cex.inputs["z"]).all()        # a seeded filling: not read by argmax
    assert poisoned_inside(ArgmaxOfMatmul, "main", cex.inputs, PER_OP) is False


@I.ir_module
class ArgmaxOfBroadcast:
    """Zero seed-5 graph 4's shape: argmax over one row of inputs broadcast to two rows."""
    @R.function
    def main(x: R.Tensor((4,), "float32"), y: R.Tensor((2,), "float32")):
        with R.dataflow():
            c = R.concat((x, y), axis=0)
            b = R.broadcast_to(c, R.shape([2, 6]))
            a = R.argmax(b, axis=1, keepdims=False)
            R.output(a)
        return a


def test_only_the_elements_the_differing_element_reads_are_reached():
    """The argmax lemma's counterexample over (2, 6) shows TVM's -1 in one row. A broadcast
    row makes both rows equal, so where the lemma's other row differs no input gives its
    values; the pre-image then asks only for the row its differing element reads
    (`preimage.read_elements`). The twin, every element pinned, finds nothing."""
    found = lemmas.prove_lemmas(ArgmaxOfBroadcast, Options(assume=PER_OP))
    ((mhash, (op, _, reads)),) = found.refuted_finite.items()
    assert op == "relax.argmax" and reads is not None
    assert reads["x0"] in (list(range(6)), list(range(6, 12))), reads
    row = reads["x0"][0] // 6
    x0 = np.ones((2, 6), np.float32)
    x0[row] = -FLT_MAX                      # the other row: values no broadcast row has
    legal = _legalized(ArgmaxOfBroadcast)
    got = lift.lift(ArgmaxOfBroadcast, legal, "main", ["x", "y"],
                    {mhash: (op, {"x0": x0}, reads)}, PER_OP)
    assert got is not None
    cex, _, how = got
    assert how == lift.PREIMAGE and cex.executed_values == (0, -1), cex
    assert (cex.inputs["x"] == -FLT_MAX).all() and (cex.inputs["y"] == -FLT_MAX).all()
    assert lift.lift(ArgmaxOfBroadcast, legal, "main", ["x", "y"],
                     {mhash: (op, {"x0": x0}, None)}, PER_OP) is None


def test_a_candidate_whose_run_is_poison_is_not_taken():
    """exp(y) overflows to inf for y = 100: the run is poison under per-operation."""
    legal = _legalized(ArgmaxOfInput)
    row = np.full((2, 3), -FLT_MAX, dtype=np.float32)
    clean = {"x": row, "y": np.zeros(3, np.float32)}
    poison = {"x": row, "y": np.full(3, 100.0, np.float32)}
    assert lift._shown(ArgmaxOfInput, legal, "main", ["x", "y"], clean, PER_OP) is not None
    assert lift._shown(ArgmaxOfInput, legal, "main", ["x", "y"], poison, PER_OP) is None


def test_materialized_run_has_the_values_of_the_symbolic_one():
    """A run evaluated binding by binding (constants in between) gives the values of the run
    evaluated as one term, on special values too."""
    x = np.array([[0.0, -0.0, np.inf], [-np.inf, np.nan, FLT_MAX]], dtype=np.float32)
    y = np.array([1.5, -FLT_MAX, -0.0], dtype=np.float32)
    whole, _ = _ieee_run(ArgmaxOfInput, "main", {"x": x, "y": y})
    step, _ = _ieee_run(ArgmaxOfInput, "main", {"x": x, "y": y}, value_of=element_value)
    for a, b in zip(whole, step):
        va = [element_value(a.at(k), a.dtype) for k in range(a.numel)]
        vb = [element_value(b.at(k), b.dtype) for k in range(b.numel)]
        assert repr(va) == repr(vb)


def test_bundled_values_are_the_element_by_element_values():
    """`values_of` resolves terms together; each value is the one its evaluator gives the
    term alone (special values included), and an open term (exp under `exact_value`) makes
    all-or-nothing None and is None in a partial answer."""
    x = np.array([[0.0, -0.0, 3.5], [-np.inf, np.nan, FLT_MAX], [1e-40, -2.0, 7.0]], np.float32)
    ln, _ = encode_op("relax.nn.layer_norm", [x, np.ones(3, np.float32), np.zeros(3, np.float32)],
                      P.TensorType((3, 3), "float32"),
                      {"axes": [1], "epsilon": 1e-5, "center": True, "scale": True})
    ex, _ = encode_op("relax.exp", [x], P.TensorType((3, 3), "float32"))
    for t in (ln, ex):
        terms = [t.at(k) for k in range(t.numel)]
        for value_of in (element_value, exact_value, libm_value):
            alone = [value_of(term, "float32") for term in terms]
            together = values_of(terms, "float32", value_of, partial=True)
            assert repr(together) == repr(alone), value_of.__name__
            whole = values_of(terms, "float32", value_of)
            assert whole is None if None in alone else repr(whole) == repr(alone)
    opened = values_of([ex.at(2), ex.at(0)], "float32", exact_value, partial=True)
    assert opened[0] is None and opened[1] == 1.0        # exp(3.5) open, exp(0) = 1
    assert values_of([ex.at(0), ex.at(2)], "float32", exact_value) is None


def test_libm_value_evaluates_a_sum_over_a_lambda():
    """Sums above the store-chain bound reduce an array built as a lambda (480 terms)."""
    x = np.random.default_rng(0).standard_normal((8, 5, 3, 4)).astype(np.float32)
    v, _ = encode_op("relax.mean", [x], P.TensorType((), "float32"), {"axis": None, "keepdims": False})
    got = libm_value(v.at(0), "float32")
    assert got is not None and abs(got - float(x.astype(np.float64).mean())) < 1e-6


def test_libm_truth_decides_or_stays_open():
    dom = IEEEModel().domain("float32")
    one = dom.const(1.0)
    assert libm_truth(dom.is_nan(dom.sub(one, one))) is False
    assert libm_truth(z3.Or(dom.is_inf(dom.mul(dom.const(FLT_MAX), dom.const(2.0))),
                            dom.is_nan(one))) is True
    opaque = z3.FP("opaque", z3.Float32())
    assert libm_truth(dom.is_nan(dom.add(opaque, one))) is None


@I.ir_module
class ArgmaxBeside16Bit:
    @R.function
    def main(x: R.Tensor((2, 3), "float32"), h: R.Tensor((3,), "bfloat16")):
        with R.dataflow():
            a = R.argmax(x, axis=1, keepdims=False)
            b = R.add(h, h)
            R.output(a, b)
        return (a, b)


def test_a_bfloat16_parameter_is_filled_and_run_on_the_vm():
    """A parameter numpy knows only through ml_dtypes is filled with bfloat16 values, and the
    VM's child process reads them back as bfloat16 (`tvtv.ir.npz`; before, it got `|V2`
    records and nothing could be claimed): the argmax finding is lifted and confirmed."""
    found = lemmas.prove_lemmas(ArgmaxBeside16Bit, Options(assume=PER_OP))
    assert found.refuted_finite
    lifted = lift.lift(ArgmaxBeside16Bit, _legalized(ArgmaxBeside16Bit), "main", ["x", "h"],
                       found.refuted_finite, PER_OP)
    assert lifted is not None
    cex, op, how = lifted
    assert op == "relax.argmax" and cex.confirmed_by == "spec-vs-vm" and how == lift.PARAMETERS
    assert cex.inputs["h"].dtype == ml_dtypes.bfloat16
    assert cex.executed_values == (0, -1)