"""Broken twins of the new ops' LegalizeOps refinement proofs: each proved case (the Relax
call as source, `LegalizeOps()(source)` as target; see tests/test_ops_gradients.py and
tests/test_ops_window.py) is re-checked against its legalized TVMScript text with one token
changed, and the change must be refuted: a value counterexample (confirmed on the VM), or a
UB counterexample where the change makes the target undefined. The unmutated text, parsed
back, is proved (one guard per case), so the mutation is what the check refutes.

Ops and shapes (all proved unmutated, measured 0.1-0.3 s each):
  * relax.grad.take_backward: g (3,) f32, x (4,) f32, indices (3,) int32, axis None;
  * relax.grad.avg_pool2d_backward: g (1,1,2,2) f32, x (1,1,4,4) f32, pool (2,2), strides (2,2);
  * relax.grad.nll_loss_backward: reduction "sum", ignore_index 0, weights (3,), target int64;
    proved under no-nan, no-inf, no-signed-zeros (TVM writes 0 * -1.0 * q at the ignored
    class, -0.0 / NaN where PyTorch leaves +0.0: a finding pinned in test_ops_gradients);
  * relax.hamming_window(6, periodic False, 0.54, 0.46, float32);
  * relax.grad.no_grad / start_checkpoint / end_checkpoint: LegalizeOps leaves Relax's
    identity binding (`lv = p0`, no PrimFunc); the broken twin binds `R.negative(p0)` or
    `p0 + 1` instead.

One mutation is kept as a control that must NOT be refuted: a second avg-pool window tap
(`wh` extent 1 -> 2) is guarded out by TVM's own `if_then_else` range test for every output
element, and adding the guard's `+0.0` to an accumulator initialised with +0.0 changes no
value (not even a sign of zero), so the verdict is `proved` and the VM agrees.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import pytest
from tvm import relax

import tvtv
from tests.test_ops_linalg import FMAX, INF, NAN, run_vm, typed_module
from tvtv.ir import tvm_bridge

G = relax.op.grad
f32 = "float32"
NO_SPECIALS = ["no-nan", "no-inf", "no-signed-zeros"]


@dataclass(frozen=True)
class Case:
    """A proved LegalizeOps case: `make(*params)` on parameters of `types`."""
    make: Callable
    types: tuple
    assume: tuple = ()
    timeout: float = 20.0     # per-query budget for tvtv.verify

    def source(self) -> Any:
        return typed_module(self.make, *self.types)

    def text(self) -> str:
        return relax.transform.LegalizeOps()(self.source()).script()

    def verify(self, target: Any, **kw: Any) -> Any:
        (r,) = tvtv.verify(self.source(), target, timeout=self.timeout,
                           assume=list(self.assume) or None, **kw).results
        return r


CASES = {
    "take_backward": Case(lambda g, x, i: G.take_backward(g, x, i, None),
                          (((3,), f32), ((4,), f32), ((3,), "int32"))),
    "avg_pool2d_backward": Case(
        lambda g, x: G.avg_pool2d_backward(g, x, (2, 2), (2, 2), (0, 0, 0, 0), (1, 1), False, False),
        (((1, 1, 2, 2), f32), ((1, 1, 4, 4), f32))),
    "nll_loss_backward": Case(lambda g, p, t, w: G.nll_loss_backward(g, p, t, w, "sum", 0),
                              (((), f32), ((2, 3), f32), ((2,), "int64"), ((3,), f32)),
                              assume=tuple(NO_SPECIALS)),
    # (the abstract model's counterexample names an element whose difference hangs on
    # cos/sin of a constant; refinement.separated_by_evaluation moves it to one the
    # special-value rules fix, cos(+0) = 1: ~1.6 s with the VM run, where the IEEE
    # re-check alone had run 10 s undecided and the budget was kept at 1 s)
    "hamming_window": Case(lambda: relax.op.hamming_window(6, False, 0.54, 0.46, f32), ()),
    "no_grad": Case(G.no_grad, (((2, 3), f32),)),
    "start_checkpoint": Case(G.start_checkpoint, (((2, 2), "int32"),)),
    "end_checkpoint": Case(G.end_checkpoint, (((3,), f32),)),
}

AVG_LOAD = "p0[v_ax0, v_ax1, T.Div(v_ax2, T.int64(2)) - v_wh, T.Div(v_ax3, T.int64(2)) - v_ww] /"
AVG_COUNT = "* T.int64(2) + T.int64(2)) * (T.min"
AVG_GRID = "T.grid(T.int64(1), T.int64(1), T.int64(4), T.int64(4), T.int64(1), T.int64(1))"
NLL_GRAD = "T.Select(v_i1 == p2[v_i0], all_weights[v_i0] * T.float32(-1.0)"

# name -> (case, old, new, expected counterexample kind, slow). Kinds: "value" (confirmed on
# the VM), "ub" (the target undefined), "unwritten" (a value counterexample at an output
# element the target never writes: tvtv reads it as arbitrary; the VM returns whatever the
# memory held, so confirmation is not asserted)
MUTATIONS: dict[str, tuple[str, str, str, str, bool]] = {
    # take_backward: `out_buf[v] = 0.0` then `out_buf[p2[v]] = out_buf[p2[v]] + p0[v]`
    "take: zero init 0.0 -> 1.0": ("take_backward", "out_buf[v] = T.float32(0.0)",
                                   "out_buf[v] = T.float32(1.0)", "value", False),
    "take: + exchanged for *": ("take_backward", "out_buf[p2[v]] + p0[v]",
                                "out_buf[p2[v]] * p0[v]", "value", False),
    "take: wrong buffer read (x for g)": ("take_backward", "+ p0[v]", "+ p1[v]", "value", False),
    "take: read index shifted": ("take_backward", "+ p0[v]", "+ p0[v + T.int64(1)]", "ub", False),
    "take: store index shifted": ("take_backward", "out_buf[p2[v]] = ", "out_buf[p2[v] + 1] = ",
                                  "ub", False),
    # avg_pool2d_backward: one reduction block, g / count under an in-window guard
    "avg: window count 2 -> 3 (divisor 4 -> 6)": (
        "avg_pool2d_backward", AVG_COUNT, AVG_COUNT.replace("+ T.int64(2))", "+ T.int64(3))"),
        "value", False),
    "avg: loop extent 4 -> 3": ("avg_pool2d_backward", AVG_GRID,
                                AVG_GRID.replace("T.int64(4), T.int64(4)", "T.int64(4), T.int64(3)"),
                                "unwritten", False),
    "avg: row/column indices swapped": (
        "avg_pool2d_backward", AVG_LOAD,
        "p0[v_ax0, v_ax1, T.Div(v_ax3, T.int64(2)) - v_ww, T.Div(v_ax2, T.int64(2)) - v_wh] /",
        "value", False),
    # nll_loss_backward: Select(class == target, w[t] * -1.0 * g, 0.0), w[ignore_index] := 0
    "nll: sign -1.0 -> 1.0": ("nll_loss_backward", NLL_GRAD, NLL_GRAD.replace("-1.0", "1.0"),
                              "value", False),
    "nll: compared class index v_i1 -> v_i0": ("nll_loss_backward", NLL_GRAD,
                                               NLL_GRAD.replace("v_i1 ==", "v_i0 =="), "value", False),
    "nll: ignored class 0 -> 1": ("nll_loss_backward", "T.Select(v_i == T.int64(0),",
                                  "T.Select(v_i == T.int64(1),", "value", False),
    # hamming_window: 0.54 - 0.46 * cos(fl(2 pi * n) / (M - 1))
    "hamming: alpha 0.54 -> 0.55": ("hamming_window", "T.float64(0.54000000000000004)",
                                    "T.float64(0.55000000000000004)", "value", False),
    "hamming: cos -> sin": ("hamming_window", "T.cos(", "T.sin(", "value", False),
    # (the divisor M - 1 -> M is tests/test_ops_window.py's "divisor" twin)
    # the identity markers: Relax `lv = p0` (no PrimFunc) -> another Relax expression
    "no_grad: identity -> negative": ("no_grad", 'dtype="float32") = p0\n',
                                      'dtype="float32") = R.negative(p0)\n', "value", False),
    "start_checkpoint: identity -> x + 1": ("start_checkpoint", 'dtype="int32") = p0\n',
                                            'dtype="int32") = R.add(p0, R.const(1, "int32"))\n',
                                            "value", False),
    "end_checkpoint: identity -> x * 2": ("end_checkpoint", 'dtype="float32") = p0\n',
                                          'dtype="float32") = R.multiply(p0, R.const(2.0, "float32"))\n',
                                          "value", False),
}


def mutated(case: Case, old: str, new: str) -> Any:
    text = case.text()
    assert text.count(old) == 1, f"mutation {old!r} applies {text.count(old)} times:\n{text}"
    assert new != old
    return tvm_bridge.parse_script(text.replace(old, new))


@pytest.mark.parametrize("name", sorted(CASES))
def test_unmutated_legalization_is_proved(name: str) -> None:
    """The guard, once per case: the legalized text, parsed back, is proved."""
    case = CASES[name]
    r = case.verify(tvm_bridge.parse_script(case.text()))
    assert r.verdict == "proved", r.to_dict()


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if MUTATIONS[n][4] else n
                                  for n in sorted(MUTATIONS)])
def test_broken_legalization_is_refuted(name: str) -> None:
    case_name, old, new, kind, _ = MUTATIONS[name]
    case = CASES[case_name]
    broken = mutated(case, old, new)
    r = case.verify(broken, confirm_vm=(kind == "value"))
    d = r.to_dict()
    assert r.verdict == "counterexample", d
    if kind == "ub":
        assert r.counterexample.kind == "ub", d
        assert "target is undefined" in r.reason and "out of bounds" in r.reason, d
    else:
        assert r.counterexample.kind == "value", d
    if kind == "value":
        assert r.confirmed is True, d
    if kind == "unwritten":     # the dropped last column
        assert r.counterexample.index[-1] == 3, d


def test_guarded_extra_window_tap_is_equivalent() -> None:
    """The control: `wh` extent 1 -> 2 adds, for every output element, a tap whose range
    test `max(0, (h - 2) // 2 + 1) <= h // 2 - 1` is false, i.e. `+ 0.0` to an accumulator
    that starts at +0.0; no value changes, so tvtv proves it, and the VM agrees on special
    values (-0.0 included)."""
    case = CASES["avg_pool2d_backward"]
    tap = AVG_GRID.replace("T.int64(1), T.int64(1))", "T.int64(2), T.int64(1))")
    broken = mutated(case, AVG_GRID, tap)
    assert case.verify(broken).verdict == "proved"
    g = np.array([[[[-0.0, INF], [NAN, -FMAX]]]], np.float32)
    x = np.zeros((1, 1, 4, 4), np.float32)
    want = run_vm(relax.transform.LegalizeOps()(case.source()), g, x).numpy()
    got = run_vm(broken, g, x).numpy()
    assert np.array_equal(np.signbit(got), np.signbit(want))
    np.testing.assert_array_equal(got, want)
