"""UB in TIR is guarded by the path under which the operation runs (the UB guard rule of
`tvtv/encode/tir/interpreter.py`).

Regression (`tvtv check --pass zero --seed 0`, graph0_1): a producer inlined into a consumer
that reads it only under the padding guard (`pad_temp = if_then_else(h >= 1, t[h - 1], 0)`)
was evaluated at the out-of-range index h - 1 = -1 with its UB unguarded; with a
data-dependent load inside the producer (take's `x[i[h - 1]]`), the garbage element i[-1]
made the side look undefined where it is not: a spurious "target is undefined" verdict, and
on the source side a vacuous proof.
"""
from __future__ import annotations

import pytest
import z3
from tvm import relax
from tvm.script import ir as I
from tvm.script import relax as R

import tvtv
from tvtv import refinement as RF
from tvtv.encode.abstraction import Abstraction, abstraction_level
from tvtv.ir import tvm_bridge
from tvtv.ir.relax_reader import read_module


@I.ir_module
class TakeConv:
    @R.function
    def main(x: R.Tensor((1, 2, 4, 3), "float32"), i: R.Tensor((3,), "int64"),
             w: R.Tensor((2, 2, 3, 3), "float32")) -> R.Tensor((1, 2, 3, 3), "float32"):
        t = R.take(x, i, axis=2, mode="fast")
        y = R.nn.conv2d(t, w, padding=(1, 1))
        return y


@I.ir_module
class TakePool:
    @R.function
    def main(x: R.Tensor((1, 1, 4, 3), "float32"), i: R.Tensor((3,), "int64")) -> R.Tensor((1, 1, 3, 3), "float32"):
        t = R.take(x, i, axis=2, mode="fast")
        y = R.nn.avg_pool2d(t, pool_size=(3, 3), padding=(1, 1, 1, 1))
        return y


@I.ir_module
class ClipTakeConv:
    """TakeConv with take's clip mode: defined for every index."""

    @R.function
    def main(x: R.Tensor((1, 2, 4, 3), "float32"), i: R.Tensor((3,), "int64"),
             w: R.Tensor((2, 2, 3, 3), "float32")) -> R.Tensor((1, 2, 3, 3), "float32"):
        t = R.take(x, i, axis=2, mode="clip")
        y = R.nn.conv2d(t, w, padding=(1, 1))
        return y


@I.ir_module
class Conv:
    @R.function
    def main(x: R.Tensor((1, 2, 4, 4), "float32"), w: R.Tensor((2, 2, 3, 3), "float32")) -> R.Tensor((1, 2, 4, 4), "float32"):
        y = R.nn.conv2d(x, w, padding=(1, 1))
        return y


@I.ir_module
class Add:
    @R.function
    def main(x: R.Tensor((4,), "float32"), y: R.Tensor((4,), "float32")) -> R.Tensor((4,), "float32"):
        z = R.add(x, y)
        return z


def _legal(mod):
    return relax.transform.LegalizeOps()(mod)


def _fused(mod):
    legal = _legal(mod)
    return relax.transform.FuseTIR()(relax.transform.FuseOps()(
        relax.transform.AnnotateTIROpPattern()(legal)))


def _encoded(src_mod, tgt_mod):
    sp, tp = read_module(src_mod), read_module(tgt_mod)
    with abstraction_level(Abstraction("body", "uf")):
        return RF._encode(sp, sp.functions["main"], tp, tp.functions["main"], "abstract", None)


def _sat(*facts) -> bool:
    s = z3.Solver()
    s.set("timeout", 120000)   # a budget against load, not the expected time (well under 1 s)
    s.add(*facts)
    r = s.check()
    assert r != z3.unknown, s.reason_unknown()
    return r == z3.sat


@pytest.mark.parametrize("make", [_legal, _fused], ids=["LegalizeOps", "FuseTIR"])
@pytest.mark.parametrize("mod", [TakeConv, TakePool], ids=["conv2d", "avg_pool2d"])
def test_producer_read_under_padding_guard_has_no_spurious_ub(mod, make):
    target = make(mod)
    enc = _encoded(mod, target)
    pre = RF._preconditions(enc)
    # the target is undefined exactly where the source is (take's index out of range):
    # nowhere else, whatever the inputs' unused elements hold
    assert not _sat(*pre, enc.src.ctx.well_defined(), z3.Not(enc.tgt.ctx.well_defined()))
    assert not _sat(*pre, enc.tgt.ctx.well_defined(), z3.Not(enc.src.ctx.well_defined()))
    (r,) = tvtv.verify(mod, target, timeout=30).results
    assert r.verdict == "proved", r.to_dict()


def test_padded_conv2d_legalization_is_always_defined():
    enc = _encoded(Conv, _fused(Conv))
    pre = RF._preconditions(enc)
    assert enc.tgt.ctx.ub, "the pad block's guarded loads record (guarded) UB conditions"
    assert not _sat(*pre, z3.Not(enc.src.ctx.well_defined()))
    assert not _sat(*pre, z3.Not(enc.tgt.ctx.well_defined()))


def test_real_ub_of_a_guarded_read_producer_is_kept():
    """Guarding is not dropping: the producer (take, fast mode) runs over all its elements,
    so an index out of range is UB even though conv2d reads some of them under a guard."""
    (r,) = tvtv.verify(ClipTakeConv, _legal(TakeConv), timeout=30).results
    assert r.verdict == "counterexample", r.to_dict()
    assert r.reason.startswith("target is undefined where the source is defined"), r.reason
    assert "load from x out of bounds" in r.reason, r.reason


def test_unguarded_read_past_the_end_is_ub():
    source = _legal(Add)
    text = source.script()
    old = "T_add[v_ax0] = x[v_ax0] + y[v_ax0]"
    assert old in text, text
    broken = tvm_bridge.parse_script(text.replace(old, "T_add[v_ax0] = x[v_ax0 + T.int64(1)] + y[v_ax0]"))
    (r,) = tvtv.verify(source, broken, timeout=20).results
    assert r.verdict == "counterexample", r.to_dict()
    # (the VM confirmation may replace the inputs by ones whose garbage read differs: the
    # reason stays the solver's)
    assert r.reason.startswith("target is undefined where the source is defined"), r.reason
    # every UB condition carries its reason (an empty list was a bug: see refinement.py)
    assert "load from x out of bounds in dimension 0" in r.reason, r.reason


def test_read_past_the_end_under_a_guard_that_does_not_exclude_it_is_ub():
    source = _legal(Add)
    text = source.script()
    old = "T_add[v_ax0] = x[v_ax0] + y[v_ax0]"
    new = ("T_add[v_ax0] = T.if_then_else(v_ax0 < T.int64(4), x[v_ax0 + T.int64(1)], "
           "x[v_ax0]) + y[v_ax0]")
    broken = tvm_bridge.parse_script(text.replace(old, new))
    (r,) = tvtv.verify(source, broken, timeout=20).results
    assert r.verdict == "counterexample", r.to_dict()
    assert r.reason.startswith("target is undefined where the source is defined"), r.reason
    # the same read under a guard that excludes it is no UB: a value counterexample
    safe = ("T_add[v_ax0] = T.if_then_else(v_ax0 < T.int64(3), x[v_ax0 + T.int64(1)], "
            "x[v_ax0]) + y[v_ax0]")
    (r2,) = tvtv.verify(source, tvm_bridge.parse_script(text.replace(old, safe)), timeout=20).results
    assert r2.verdict == "counterexample", r2.to_dict()
    assert not r2.reason.startswith("target is undefined"), r2.reason
