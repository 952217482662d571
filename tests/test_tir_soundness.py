"""Soundness regressions of the TIR encoder: a legalized module evaluated by the encoder (IEEE
model, concrete inputs) gives what the TVM VM computes, and a correct lowering is proved.

graph0_4 of `tvtv check --pass FuseTIR --seed 0` (before the fix): a squeeze that keeps the
flat layout builds the *same* SMT array as its input, and the cross-call_tir reader table,
keyed by the array alone, handed the 3-d squeeze's reader to a 4-d consumer of the input:
that consumer read the wrong elements (avg_pool2d(max_pool2d(x)) gave 0 where x had inf).
"""
from __future__ import annotations

import numpy as np
import tvm
import z3
from tvm import relax
from tvm.script import ir as I
from tvm.script import relax as R

import tvtv
from tvtv import refinement as RF
from tvtv.absfp.ieee import fp_value
from tvtv.encode.abstraction import Abstraction, abstraction_level
from tvtv.ir.relax_reader import read_module


@I.ir_module
class SqueezeThenOther:
    @R.function
    def main(x: R.Tensor((2, 1, 3), "float32")) -> R.Tuple(R.Tensor((2, 3), "float32"), R.Tensor((2, 1, 3), "float32")):
        y = R.add(x, x)
        s = R.squeeze(y, axis=[1])
        n = R.negative(y)
        return (s, n)


def evaluate(mod, inputs: dict) -> list[np.ndarray]:
    """The encoder's value of `main`'s outputs on concrete inputs (IEEE model, PrimFunc bodies)."""
    p = read_module(mod)
    fn = p.functions["main"]
    with abstraction_level(Abstraction("body", "sum", unroll=True)):   # sums exact (n <= 10)
        enc = RF._encode(p, fn, p, fn, "ieee", None, inputs)
    outs = []
    for t in enc.src.outputs:
        vals = [fp_value(z3.simplify(t.at(k)), t.dtype) for k in range(t.numel)]
        outs.append(np.array(vals, dtype=t.dtype).reshape(t.shape))
    return outs


def vm_run(mod, inputs: list[np.ndarray]) -> list[np.ndarray]:
    vm = relax.VirtualMachine(relax.build(mod, target="llvm"), tvm.cpu())
    out = vm["main"](*[tvm.runtime.tensor(a) for a in inputs])
    return [out[k].numpy() for k in range(len(out))]


def test_reader_table_distinguishes_shapes():
    legal = relax.transform.LegalizeOps()(SqueezeThenOther)
    x = np.arange(6, dtype="float32").reshape(2, 1, 3) - 2.0
    x[1, 0, 2] = np.inf
    got = evaluate(legal, {"x": x})
    want = vm_run(legal, [x])
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


def test_squeeze_then_other_consumer_proved():
    (r,) = tvtv.verify(SqueezeThenOther, relax.transform.LegalizeOps()(SqueezeThenOther),
                       timeout=20).results
    assert r.verdict == "proved", r.to_dict()
