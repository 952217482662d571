"""A zero term changes no float sum (`tvtv.absfp.reductions`: h(-0.0) = h(+0.0) = 0).

The rule lets a loop that sums padding zeros, or products 0 * w of a dilated input (TVM's
conv_transpose legalization), meet a specification that sums only the real terms. It rests
on a claim about IEEE sums from +0.0 that the first test checks by brute force."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from tvm import relax
from tvm.script import ir as I
from tvm.script import relax as R

import tvtv
from tvtv.ir import tvm_bridge

F = np.float32
MAX = float(np.finfo(F).max)
POOL = [0.0, -0.0, 1.0, -1.0, 3.0, MAX, -MAX, float("inf"), float("-inf"), float("nan"), 1e-45]


def _trees(leaves: tuple[float, ...]):
    """The value of every bracketing of `leaves` in this order (float32 additions)."""
    if len(leaves) == 1:
        yield F(leaves[0])
        return
    for cut in range(1, len(leaves)):
        for a in _trees(leaves[:cut]):
            for b in _trees(leaves[cut:]):
                yield F(a + b)


def _values(terms: tuple[float, ...]) -> set[bytes]:
    """Every value a sum of `terms` from +0.0 takes over all orders and bracketings, as bit
    patterns (every NaN as one)."""
    out: set[bytes] = set()
    for order in set(itertools.permutations((0.0,) + terms)):
        for v in _trees(order):
            out.add(b"nan" if np.isnan(v) else v.tobytes())
    return out


@pytest.mark.parametrize("zero", [0.0, -0.0], ids=["+0", "-0"])
def test_a_zero_term_changes_no_sum_from_plus_zero(zero):
    """Over every order and bracketing, the sums from +0.0 of a multiset and of the multiset
    with one more zero take the same set of values (so F(h-sum) may ignore the zero)."""
    with np.errstate(all="ignore"):
        for terms in itertools.combinations_with_replacement(POOL, 2):
            assert _values(terms) == _values(terms + (zero,)), terms
        # and a spot check with three terms (5 leaves: 14 bracketings of 120 orders)
        for terms in [(1.0, -1.0, -0.0), (MAX, MAX, -MAX), (-0.0, -0.0, -0.0), (1e-45, -1e-45, 3.0)]:
            assert _values(terms) == _values(terms + (zero,)), terms


@I.ir_module
class Sum:
    @R.function
    def main(x: R.Tensor((2, 12), "float32")) -> R.Tensor((2,), "float32"):
        z = R.sum(x, axis=[1])
        return z


def _padded(value: str):
    """Sum's legalization with its loop running over 16 terms, the last 4 being `value`."""
    text = relax.transform.LegalizeOps()(Sum).script()
    old_grid, old_term = "T.grid(T.int64(2), T.int64(12))", "+ x[v_ax0, v_k1]"
    assert old_grid in text and old_term in text, text
    text = text.replace(old_grid, "T.grid(T.int64(2), T.int64(16))").replace(
        old_term, f"+ T.if_then_else(v_k1 < T.int64(12), x[v_ax0, v_k1], {value})")
    return tvm_bridge.parse_script(text)


@pytest.mark.parametrize("value", ["T.float32(0.0)", "T.float32(-0.0)"])
def test_sum_with_padding_zeros_is_proved_at_the_first_level(value):
    """16 terms (above the unrolling bound), 4 of them zeros: proved by the hashed multisets
    themselves, with no climb to a finer level."""
    (r,) = tvtv.verify(Sum, _padded(value), timeout=20).results
    assert r.verdict == "proved", r.to_dict()
    assert not any("refining" in lv for lv in r.levels), r.levels


def test_sum_with_padding_ones_is_refuted():
    """Twin: the padding is 1.0, not a zero: the sum changes, and the VM shows it."""
    (r,) = tvtv.verify(Sum, _padded("T.float32(1.0)"), timeout=20).results
    assert r.verdict == "counterexample", r.to_dict()
    assert r.confirmed is True, r.to_dict()


@I.ir_module
class GroupedConvTranspose:
    @R.function
    def main(x: R.Tensor((1, 4, 2, 2), "float32"), w: R.Tensor((4, 1, 5, 1), "float32")
             ) -> R.Tensor((1, 2, 5, 3), "float32"):
        z = R.nn.conv2d_transpose(x, w, strides=(2, 2), padding=(1, 0, 1, 1), groups=2,
                                  output_padding=(0, 1))
        return z


def test_conv_transpose_zero_products_are_no_terms_under_the_assumptions():
    """TVM dilates and pads the input with zeros and sums 0 * w products the specification
    does not have. With finite weights they are zeros, which change no sum: proved under
    no-nan and no-inf (this row of docs/legalize.md was unknown before the rule)."""
    legal = relax.transform.LegalizeOps()(GroupedConvTranspose)
    (r,) = tvtv.verify(GroupedConvTranspose, legal, timeout=10,
                       assume=["no-nan", "no-inf", "no-signed-zeros"]).results
    assert r.verdict == "proved", r.to_dict()


def test_conv_transpose_zero_products_differ_with_an_infinite_weight():
    """Twin, without assumptions: 0 * inf is NaN where the specification has no such term."""
    legal = relax.transform.LegalizeOps()(GroupedConvTranspose)
    (r,) = tvtv.verify(GroupedConvTranspose, legal, timeout=10).results
    assert r.verdict == "counterexample", r.to_dict()
    assert r.confirmed is True, r.to_dict()
