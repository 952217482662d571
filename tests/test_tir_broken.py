"""Deliberately broken TIR is refuted: the legalized module (source) against its TVMScript
text with one mutation (target). Both sides are encoded through their PrimFunc bodies."""
from __future__ import annotations

import pytest
from tvm import relax
from tvm.script import ir as I
from tvm.script import relax as R

import tvtv
from tvtv.ir import tvm_bridge


@I.ir_module
class Add:
    @R.function
    def main(x: R.Tensor((2, 3), "float32"), y: R.Tensor((2, 3), "float32")) -> R.Tensor((2, 3), "float32"):
        z = R.add(x, y)
        return z


@I.ir_module
class Sum:
    @R.function
    def main(x: R.Tensor((2, 3), "float32")) -> R.Tensor((2,), "float32"):
        z = R.sum(x, axis=[1])
        return z


@I.ir_module
class Max:
    @R.function
    def main(x: R.Tensor((2, 3), "float32")) -> R.Tensor((2,), "float32"):
        z = R.max(x, axis=[1])
        return z


@I.ir_module
class Matmul:
    @R.function
    def main(x: R.Tensor((3, 3), "float32"), w: R.Tensor((3, 3), "float32")) -> R.Tensor((3, 3), "float32"):
        z = R.matmul(x, w)
        return z


@I.ir_module
class Pool:
    @R.function
    def main(x: R.Tensor((1, 1, 3, 3), "float32")) -> R.Tensor((1, 1, 3, 3), "float32"):
        z = R.nn.max_pool2d(x, pool_size=(2, 2), padding=(0, 0, 1, 1))
        return z


@I.ir_module
class TakeWrap:
    @R.function
    def main(x: R.Tensor((1, 3, 2), "float32"), i: R.Tensor((2, 3), "int64")) -> R.Tensor((1, 2, 3, 2), "float32"):
        z = R.take(x, i, axis=1, mode="wrap")
        return z


WRAP = "T.truncmod(T.truncmod(i[v_ax1, v_ax2], T.int64(3)) + T.int64(3), T.int64(3))"
FLT_MAX = "T.float32(-340282346638528859811704183484516925440.0)"
MUTATIONS = {
    "loop extent off by one": (Add, "T.grid(T.int64(2), T.int64(3))", "T.grid(T.int64(2), T.int64(2))"),
    "loop extent one too many": (Add, "T.grid(T.int64(2), T.int64(3))", "T.grid(T.int64(2), T.int64(4))"),
    "wrong init value": (Sum, "= T.float32(0.0)", "= T.float32(1.0)"),
    "swapped indices": (Matmul, "w[v_k, v_i1]", "w[v_i1, v_k]"),
    "max exchanged for min": (Max, "T.max(", "T.min("),
    "+ exchanged for * in a reduction": (Sum, "x_red[v_ax0] + x[", "x_red[v_ax0] * x["),
    "changed padding value": (Pool, f"], {FLT_MAX})", "], T.float32(0.0))"),
    # take's "wrap" mode is read as one index term (TIR interpreter `wrapped_mod`); a
    # changed modulus or a dropped `+ n` must not be read as it
    "wrap modulus changed": (TakeWrap, WRAP, WRAP.replace("T.int64(3)) +", "T.int64(2)) +")),
    "wrap without + n": (TakeWrap, WRAP, "T.truncmod(i[v_ax1, v_ax2], T.int64(3))"),
}


def _legalized(mod):
    return relax.transform.LegalizeOps()(mod)


@pytest.mark.parametrize("name", sorted(MUTATIONS))
def test_broken_tir_is_refuted(name):
    mod, old, new = MUTATIONS[name]
    source = _legalized(mod)
    text = source.script()
    assert old in text and new != old, f"mutation {name!r} does not apply:\n{text}"
    broken = tvm_bridge.parse_script(text.replace(old, new))
    (r,) = tvtv.verify(source, broken, timeout=20).results
    assert r.verdict == "counterexample", r.to_dict()
    assert any("PrimFunc bodies" in lv for lv in r.levels), r.levels
    # the unmutated text is proved (so the mutation is what the check refutes)
    (ok,) = tvtv.verify(source, tvm_bridge.parse_script(text), timeout=20).results
    assert ok.verdict == "proved", ok.to_dict()
