"""The abstraction ladder and what a verdict may claim (tvtv/refinement.py, tvtv/api.py).

- A timeout or an unconfirmed counterexample climbs to the first later rung that makes precise
  something the current rung abstracted, even two rungs up (opaque call_tir with dot
  functions -> PrimFunc bodies with dot functions -> sums of products).
- Parts proved at a coarser rung stay proved (every rung is a sound abstraction).
- An abstract counterexample that the IEEE model could not decide and that nothing confirms is
  `unknown`, never a counterexample.
"""
from __future__ import annotations

import numpy as np
import tvm
from tvm.script import ir as I
from tvm.script import relax as R

import tvtv
from tvtv.api import IEEE_TIMED_OUT, _demote_unshown
from tvtv.encode.abstraction import LADDERS, OPAQUE_NOTE, worth_climbing, worth_refining
from tvtv.encode.reduction import DOT_NOTE
from tvtv.report import Counterexample, Result


def test_a_dot_timeout_at_the_opaque_rung_reaches_sum_of_products():
    opaque_uf, common_uf, body_uf, body_sum = LADDERS["auto"][:4]
    assert (opaque_uf.tir, common_uf.tir, body_uf.tir) == ("opaque", "common", "body")
    assert not worth_refining(opaque_uf, body_uf, {DOT_NOTE})     # one rung up: nothing new
    assert worth_climbing(opaque_uf, [common_uf, body_uf, body_sum], {DOT_NOTE})
    assert not worth_climbing(opaque_uf, [common_uf, body_uf, body_sum], set())
    assert not worth_climbing(body_sum, [], {DOT_NOTE})


def test_an_opaque_call_climbs_through_the_common_rung_to_bodies():
    """Opaque call_tir -> opaque only where both sides call the PrimFunc -> bodies: each
    step makes precise what an opaque call abstracted, and only that."""
    opaque_uf, common_uf, body_uf = LADDERS["auto"][:3]
    assert worth_refining(opaque_uf, common_uf, {OPAQUE_NOTE})
    assert worth_refining(common_uf, body_uf, {OPAQUE_NOTE})
    assert not worth_refining(common_uf, body_uf, {DOT_NOTE})
    assert not worth_refining(common_uf, opaque_uf, {OPAQUE_NOTE})


@I.ir_module
class MatmulAndDouble:
    @R.function
    def main(x: R.Tensor((2, 3), "float32"), y: R.Tensor((3, 4), "float32"),
             z: R.Tensor((2, 3), "float32")):
        a = R.add(z, z)
        b = R.matmul(x, y)
        return (a, b)


@I.ir_module
class ExpandedMatmul:
    @R.function
    def main(x: R.Tensor((2, 3), "float32"), y: R.Tensor((3, 4), "float32"),
             z: R.Tensor((2, 3), "float32")):
        a = R.permute_dims(R.permute_dims(R.add(z, z), [1, 0]), [1, 0])
        p = R.multiply(R.expand_dims(x, 2), R.expand_dims(y, 0))
        b = R.sum(p, axis=[1])
        return (a, b)


@I.ir_module
class ExpandedMatmulBroken:
    @R.function
    def main(x: R.Tensor((2, 3), "float32"), y: R.Tensor((3, 4), "float32"),
             z: R.Tensor((2, 3), "float32")):
        a = R.permute_dims(R.permute_dims(R.add(z, z), [1, 0]), [1, 0])
        p = R.multiply(R.expand_dims(x, 2), R.expand_dims(y, 0))
        b = R.max(p, axis=[1])
        return (a, b)


def test_ladder_climbs_past_a_rung_and_keeps_what_it_proved():
    (r,) = tvtv.verify(MatmulAndDouble, ExpandedMatmul, confirm_vm=False).results
    assert r.verdict == "proved", r.to_dict()
    levels = [lv for lv in r.levels if lv.startswith("level: ")]
    assert levels[0] == "level: call_tir: opaque, dot: function"
    assert "dot: sum of products" in levels[-1]
    # output 0 (the double transpose) was proved at the first rung and not asked again
    assert "proved at a coarser level: output 0" in r.levels


def test_broken_twin_of_the_climb_is_refuted():
    (r,) = tvtv.verify(MatmulAndDouble, ExpandedMatmulBroken, confirm_vm=False).results
    assert r.verdict == "counterexample"
    assert r.counterexample.output == 1


def _abstract_cex_result(levels: list[str]) -> Result:
    cex = Counterexample("value", "output 0 differs at index (3,)", {"x": np.zeros(4, "float32")},
                         output=0, index=(3,), source_value=1.0, target_value=2.0)
    return Result("main", "zero", "counterexample", 1.0, "output 0 differs at index (3,)", cex,
                  levels=levels)


def test_unconfirmed_abstract_counterexample_after_ieee_timeout_is_unknown():
    r = _abstract_cex_result(["fp: abstract, 12 magnitude bits", IEEE_TIMED_OUT])
    r.confirmed = False
    _demote_unshown(r)
    assert r.verdict == "unknown" and r.counterexample is None
    assert "unconfirmed counterexample" in r.reason and "timed out" in r.reason


def test_a_counterexample_that_could_not_be_run_says_why():
    r = _abstract_cex_result(["fp: abstract, 12 magnitude bits", IEEE_TIMED_OUT])
    r.counterexample.not_run_detail = "the source does not run on the VM: out of memory"
    r.confirmed = None
    _demote_unshown(r)
    assert r.verdict == "unknown"
    assert r.reason.endswith("it could not be run on the VM (the source does not run on the "
                             "VM: out of memory)")


def test_confirmed_or_ieee_decided_counterexamples_stand():
    r = _abstract_cex_result(["fp: abstract, 12 magnitude bits", IEEE_TIMED_OUT])
    r.confirmed = True                       # the VM shows it
    _demote_unshown(r)
    assert r.verdict == "counterexample"
    r = _abstract_cex_result(["fp: abstract, 12 magnitude bits", "fp: ieee (bit-exact)"])
    r.counterexample.confirmed_ieee = True   # separated in IEEE for every UF interpretation
    r.confirmed = False
    _demote_unshown(r)
    assert r.verdict == "counterexample"


def test_a_difference_only_some_uninterpreted_function_makes_is_unknown():
    # e.g. gelu's two formulas "differ for some erf": the IEEE model does not separate them
    # for every erf, and neither the VM nor the specification shows it
    r = _abstract_cex_result(["fp: abstract, 12 magnitude bits", "fp: ieee (bit-exact)"])
    r.confirmed = False
    _demote_unshown(r)
    assert r.verdict == "unknown" and "uninterpreted functions" in r.reason


def test_climbing_after_a_timeout_looks_at_the_undecided_terms():
    import z3

    from tvtv.encode.abstraction import OPAQUE_NOTE, abstractions_in
    x = z3.BitVec("x", 8)
    arr = z3.Array("a", z3.BitVecSort(32), z3.BitVecSort(8))
    dot = z3.Function("dot_float32_3", arr.sort(), arr.sort(), z3.BitVecSort(8))
    opaque = z3.Function("tir_1f2e_0", arr.sort(), z3.BitVecSort(32), z3.BitVecSort(8))
    red = z3.Function("tir_add_float32_100", z3.BitVecSort(8), arr.sort(), z3.BitVecSort(8))
    assert abstractions_in([x + 1 == x * 3]) == set()
    assert abstractions_in([z3.If(x == 0, dot(arr, arr), x) == 1]) == {DOT_NOTE}
    assert abstractions_in([opaque(arr, z3.BitVecVal(0, 32)) == red(x, arr)]) == {OPAQUE_NOTE}
    i = z3.BitVec("i", 32)
    lam = z3.Lambda([i], dot(arr, arr))                # inside a lambda's body too
    assert abstractions_in([z3.Select(lam, z3.BitVecVal(0, 32)) == x]) == {DOT_NOTE}
    # nothing to refine: a timeout there is final, not a climb
    opaque_uf, body_uf, body_sum, unrolled = LADDERS["auto"][:4]
    assert not worth_climbing(body_uf, [body_sum, unrolled], abstractions_in([x * x == 2]))


def test_a_spent_budget_ends_the_ladder():
    """Once the check's budget is spent every later rung would time out too: the check stops
    at the rung where it ran out (unknown, with the reason), instead of encoding the rest
    (the same pair climbs three rungs with time to spare: the test above)."""
    (r,) = tvtv.verify(MatmulAndDouble, ExpandedMatmul, budget=1e-6, confirm_vm=False).results
    assert r.verdict == "unknown" and "budget" in r.reason, r.to_dict()
    assert sum(lv.startswith("level: ") for lv in r.levels) == 1, r.levels


@I.ir_module
class TwoOutputs:
    @R.function
    def main(z: R.Tensor((2, 3), "float32")):
        return (R.add(z, z), R.multiply(z, z))


@I.ir_module
class TwoOutputsSecondBroken:
    @R.function
    def main(z: R.Tensor((2, 3), "float32")):
        return (R.multiply(z, R.const(2.0, "float32")), R.add(z, z))


@I.ir_module
class TwoOutputsSecondKept:
    @R.function
    def main(z: R.Tensor((2, 3), "float32")):
        return (R.multiply(z, R.const(2.0, "float32")), R.multiply(z, z))


def test_an_undecided_output_does_not_hide_a_later_difference(monkeypatch):
    """Output 0's query is made to time out (whatever Z3 would say): output 1's difference is
    still found. The twin: with output 1 equal, the verdict is unknown, never proved."""
    from tvtv import refinement
    real = refinement._differing_index

    def output0_undecided(enc, pre, wd_src, wd_tgt, k, *rest):
        if k == 0:
            raise refinement._Timeout("timeout (forced for output 0)")
        return real(enc, pre, wd_src, wd_tgt, k, *rest)

    monkeypatch.setattr(refinement, "_differing_index", output0_undecided)
    (r,) = tvtv.verify(TwoOutputs, TwoOutputsSecondBroken, confirm_vm=False).results
    assert r.verdict == "counterexample" and r.counterexample.output == 1, r.to_dict()
    (r,) = tvtv.verify(TwoOutputs, TwoOutputsSecondKept, confirm_vm=False).results
    assert r.verdict == "unknown" and "forced for output 0" in r.reason, r.to_dict()


@I.ir_module
class ExpReshapeSin:
    @R.function
    def main(x: R.Tensor((2, 3), "float32")):
        with R.dataflow():
            a = R.exp(x)
            b = R.reshape(a, (3, 2))
            c = R.sin(b)
            R.output(c)
        return c


def _rewritten() -> tuple:
    """ExpReshapeSin legalized, and after RewriteDataflowReshape (the legalized reshape
    becomes R.reshape; exp and sin stay the same call_tirs; the reshape PrimFunc stays in
    the module, uncalled)."""
    from tvm import relax
    src = relax.transform.LegalizeOps()(ExpReshapeSin)
    tgt = relax.transform.RewriteDataflowReshape()(src)
    assert "R.reshape(" in tgt.script() and "R.reshape(" not in src.script()
    assert any(gv.name_hint == "reshape" for gv in tgt.functions)
    return src, tgt


def test_called_prim_funcs_leave_out_what_no_function_calls():
    from tvtv.encode.function import called_prim_funcs
    from tvtv.ir.relax_reader import read_module
    src, tgt = _rewritten()
    s, t = read_module(src), read_module(tgt)
    hashes = {p.name: p.structural_hash for p in t.prim_funcs.values()}
    assert called_prim_funcs(t) == {hashes["tir_exp"], hashes["tir_sin"]}
    assert called_prim_funcs(s) == {hashes["tir_exp"], hashes["tir_sin"], hashes["reshape"]}


def test_a_rewritten_reshape_is_proved_at_the_common_rung():
    """RewriteDataflowReshape: exp and sin, called on both sides, stay opaque; the reshape's
    body is a row-major copy, the very array R.reshape gives, so sin's call has one argument
    on both sides and every output element is one term: proved without PrimFunc bodies for
    the rest (what took 96 s on the `default` pipeline's seed-0 graph 0, now 7 s)."""
    src, tgt = _rewritten()
    (r,) = tvtv.verify(src, tgt, timeout=20).results
    assert r.verdict == "proved", r.to_dict()
    rungs = [lv for lv in r.levels if lv.startswith("level: call_tir:")]
    assert rungs[-1].startswith("level: call_tir: opaque where both sides call"), r.levels
    assert "canonical forms differ: refining" not in r.levels, r.levels


def test_a_broken_rewrite_climbs_past_the_common_rung_and_is_refuted():
    """The twin: R.reshape replaced by R.permute_dims to the same shape. The target calls
    exp and sin, the source also the reshape: the opaque rung is skipped (it could only
    find a difference of uninterpreted functions) and the check starts at the common rung.
    There the sin calls' arguments differ, so canonical forms do not decide it and the
    ladder climbs without a solver query; the bodies refute it, confirmed on the VM."""
    from tvtv.ir import tvm_bridge
    src, tgt = _rewritten()
    text = tgt.script()
    line = next(ln for ln in text.splitlines() if "R.reshape(" in ln)
    var = line.split("R.reshape(")[1].split(",")[0]
    broken_line = line.split("R.reshape(")[0] + f"R.permute_dims({var}, axes=[1, 0])"
    broken = tvm_bridge.parse_script(text.replace(line, broken_line))
    (r,) = tvtv.verify(src, broken, timeout=20).results
    assert r.verdict == "counterexample" and r.confirmed is True, r.to_dict()
    assert "canonical forms differ: refining" in r.levels, r.levels
    rungs = [lv for lv in r.levels if lv.startswith("level: call_tir:")]
    assert rungs[0].startswith("level: call_tir: opaque where both sides call"), r.levels
    assert rungs[-1].startswith("level: call_tir: PrimFunc bodies"), r.levels


def test_the_common_rung_is_left_out_where_the_target_calls_new_prim_funcs():
    """FuseTIR's target calls fused PrimFuncs the source lacks: its results reach kept calls
    as other terms, so the common rung would only cost an encoding; the check starts at the
    bodies, as before the rung existed."""
    import generators
    from tvtv import api
    _, src, tgt, _ = api.run_pass("FuseTIR", generators.generate_module("simple", 0, 1))
    (r,) = tvtv.verify(src, tgt, timeout=20).results
    assert r.verdict == "proved", r.to_dict()
    rungs = [lv for lv in r.levels if lv.startswith("level: call_tir:")]
    assert rungs, r.levels
    assert all(lv.startswith("level: call_tir: PrimFunc bodies") for lv in rungs), r.levels
