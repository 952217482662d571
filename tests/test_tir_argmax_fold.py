"""argmax/argmin over more than 64 elements (issue 4): LegalizeOps' two-accumulator reduction
block is an uninterpreted fold of its step (`tvtv/encode/tir/fold.py`), stated through the
specification's argmax where no NaN is folded (`reduction.tir_arg_loop`). A fused copy of the
block is proved; a broken step, init value or extent is refuted; TVM's -1 on a row of
-FLT_MAX is shown against the specification; a block that visits the elements in another
order is not proved."""
from __future__ import annotations

import numpy as np
import pytest
from tvm import relax
from tvm.script import ir as I
from tvm.script import relax as R

import tvtv
from tvtv.encode import reduction
from tvtv.encode.tir import fold
from tvtv.ir import tvm_bridge


@I.ir_module
class Argmax:
    @R.function
    def main(x: R.Tensor((2, 100), "float32")) -> R.Tensor((2,), "int64"):
        z = R.argmax(x, axis=1)
        return z


@I.ir_module
class FusedArgmin:
    @R.function
    def main(x: R.Tensor((4, 7, 7), "float32")) -> R.Tensor((1, 1, 1), "int64"):
        with R.dataflow():
            y = R.exp(x)
            w = R.add(y, y)
            z = R.argmin(w, axis=None, keepdims=True)
            R.output(z)
        return z


def _legalized(mod):
    return relax.transform.AnnotateTIROpPattern()(relax.transform.LegalizeOps()(mod))


def test_argmin_over_196_elements_after_fusion_is_proved():
    """FuseTIR merges exp and add (not argmin, an opaque pattern), so the target has a
    PrimFunc the source lacks and argmin's body is read on both sides."""
    source = _legalized(FusedArgmin)
    target = relax.transform.FuseTIR()(relax.transform.FuseOps()(source))
    assert "fused_tir_exp_add" in [gv.name_hint for gv in target.functions], target
    (r,) = tvtv.verify(source, target, timeout=30).results
    assert r.verdict == "proved", r.to_dict()
    assert any(fold.NOTE in lv for lv in r.levels), r.levels


FLT_MAX = "340282346638528859811704183484516925440.0"
STEP = "x_red_temp_v1[v_ax0] > x[v_ax0, v_k1]"
MUTATIONS = {
    "max exchanged for min": (STEP, STEP.replace(">", "<")),
    "wrong init value": (f"T.float32(-{FLT_MAX})", f"T.float32({FLT_MAX})"),
    "reduction extent off by one": ("T.grid(T.int64(2), T.int64(100))",
                                    "T.grid(T.int64(2), T.int64(99))"),
}


@pytest.mark.parametrize("name", sorted(MUTATIONS))
def test_broken_argmax_over_100_elements_is_refuted(name):
    source = _legalized(Argmax)
    text = source.script()
    old, new = MUTATIONS[name]
    assert old in text, f"mutation {name!r} does not apply:\n{text}"
    broken = tvm_bridge.parse_script(text.replace(old, new))
    (r,) = tvtv.verify(source, broken, timeout=30).results
    assert r.verdict == "counterexample", r.to_dict()
    assert any(fold.NOTE in lv for lv in r.levels), r.levels
    # the unmutated text is proved
    (ok,) = tvtv.verify(source, tvm_bridge.parse_script(text), timeout=30).results
    assert ok.verdict == "proved", ok.to_dict()


def test_legalized_argmax_over_100_elements_shows_tvms_minus_one():
    """LegalizeOps' argmax loop is stated through the specification's argmax
    (`reduction.tir_arg_loop`), so above 64 elements, where that argmax is an uninterpreted
    function, the check still ends in TVM's -1 on a row of -FLT_MAX (docs/findings.md),
    confirmed, and without climbing: the counterexample's inputs are concrete, and there the
    argmax is the exact fold (`EncodeContext.exact_arg_folds`). Before, `unknown`."""
    source = Argmax
    target = relax.transform.LegalizeOps()(source)
    (r,) = tvtv.verify(source, target, timeout=30, assume=("no-nan", "no-inf")).results
    assert r.verdict == "counterexample", r.to_dict()
    assert r.confirmed, r.to_dict()
    assert not any("unconfirmed" in lv for lv in r.levels), r.levels
    assert any(reduction.ARG_LOOP_NOTE in lv for lv in r.levels), r.levels
    row = r.counterexample.inputs["x"][r.counterexample.index[0]]
    assert (row == -np.finfo(np.float32).max).all(), row


def test_an_argmax_step_with_another_tie_rule_is_not_stated():
    """`i > k` in place of `i < k` (keep the last of equal elements): not TVM's argmax step,
    so the loop stays its own fold and nothing is claimed through the specification's."""
    from tvtv.ir import tir as TT
    i, v = TT.Load("a%0", (), "int64"), TT.Load("a%1", (), "float32")
    x, k = TT.Load("x%0", (TT.Var("k%0", "int64"),), "float32"), TT.Var("k%0", "int64")

    def stores(tie: str):
        keep = TT.Logic("or", (TT.Compare("gt", v, x),
                               TT.Logic("and", (TT.Compare("eq", v, x), TT.Compare(tie, i, k)))))
        return [TT.Store("a%0", (), TT.Select(keep, i, k, "int64")),
                TT.Store("a%1", (), TT.Select(TT.Compare("gt", v, x), v, x, "float32"))]

    found = fold.arg_reduction(stores("lt"), ["int64", "float32"])
    assert found is not None and found.kind == "max" and found.index == k and found.value == x
    assert fold.arg_reduction(stores("gt"), ["int64", "float32"]) is None


def test_another_visiting_order_is_not_proved():
    """The same step over the row backwards (element 99 - k, index 99 - k): the first-index
    tie rule still holds, but a NaN is kept only when it comes last, so the order matters
    and the fold's arguments include it."""
    source = _legalized(Argmax)
    text = source.script()
    backwards = text.replace("x[v_ax0, v_k1]", "x[v_ax0, T.int64(99) - v_k1]") \
        .replace("< v_k1, x_red_temp_v0[v_ax0], v_k1)",
                 "< T.int64(99) - v_k1, x_red_temp_v0[v_ax0], T.int64(99) - v_k1)")
    assert backwards.count("T.int64(99) - v_k1") >= 4, backwards
    (r,) = tvtv.verify(source, tvm_bridge.parse_script(backwards), timeout=5).results
    assert r.verdict != "proved", r.to_dict()


def test_skeleton_names_the_step_not_the_buffers():
    from tvtv.ir import tir as TT
    acc0, acc1, x = "a%0", "a%1", "x%0"
    k = TT.Var("k%0", "int64")
    i = TT.Var("i%0", "int64")

    def stores(a0, a1, xb, cmp="gt"):
        v1 = TT.Load(a1, (i,), "float32")
        e = TT.Load(xb, (i, k), "float32")
        return [TT.Store(a0, (i,), TT.Select(TT.Compare(cmp, v1, e), TT.Load(a0, (i,), "int64"), k, "int64")),
                TT.Store(a1, (i,), TT.Select(TT.Compare(cmp, v1, e), v1, e, "float32"))]

    name, parts = fold.skeleton(stores(acc0, acc1, x), ["int64", "float32"], 100)
    assert [type(p).__name__ for p in parts] == ["Load", "Var"]   # x[i, k], then k
    renamed, _ = fold.skeleton(stores("b%3", "b%4", "y%7"), ["int64", "float32"], 100)
    assert renamed == name
    assert fold.skeleton(stores(acc0, acc1, x, "lt"), ["int64", "float32"], 100)[0] != name
    assert fold.skeleton(stores(acc0, acc1, x), ["int64", "float32"], 99)[0] != name
    elsewhere = stores(acc0, acc1, x)
    elsewhere[1] = TT.Store(acc1, (i,), TT.Load(acc1, (k,), "float32"))
    with pytest.raises(fold.NotAFold):
        fold.skeleton(elsewhere, ["int64", "float32"], 100)
