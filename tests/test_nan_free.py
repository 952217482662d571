"""Whether a value can be NaN, or is a zero, decides many generated graphs' outputs
(`isnan`, `x == x`, cosh of a product of zeros). The float functions' NaN-freeness in their
domain (`special.UnaryRule.nan_free`) and a float product's special cases
(`reduction._product_specials`) prove them. Each proof has a broken twin that is refuted
and confirmed on the VM."""
from __future__ import annotations

import numpy as np
import pytest
from tvm import relax

import tvtv

O = relax.op


def _module(chain) -> relax.IRModule:
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType((2, 3), "float32"))
    with bb.function("main", [x]):
        bb.emit_func_output(bb.emit(chain(x)))
    return bb.get()


def _verdict(src, tgt):
    return tvtv.verify(src, tgt, timeout=30).results[0]


@pytest.mark.parametrize("chain", [
    lambda x: O.isnan(O.log_add_exp(x, x)),
    lambda x: O.isnan(O.log_add_exp(O.log(O.cosh(x)), O.log(O.cosh(x)))),
], ids=["log_add_exp", "through_log_cosh"])
def test_log_add_exp_under_isnan_is_proved_legalized(chain):
    """log(exp(a) + exp(a)) is NaN exactly where a is: exp of a number is no NaN and at
    least 0, and log of a sum of two such is no NaN. GenCoG seed-0 graph 7 (LegalizeOps)
    asks this; both models let the functions be NaN anywhere before, and it was an
    unconfirmed counterexample after 67 s."""
    src = _module(chain)
    r = _verdict(src, relax.transform.LegalizeOps()(src))
    assert r.verdict == "proved", r.to_dict()


def _log_cosh_nan(x):
    return O.isnan(O.log(O.cosh(x)))


@pytest.mark.parametrize("source,target,want", [
    (_log_cosh_nan, O.isnan, "proved"),              # cosh(x) ≥ 1: log of it is no NaN
    (_log_cosh_nan, lambda x: O.zeros_like(O.isnan(x)), "counterexample"),  # x = NaN
    (lambda x: O.isnan(O.log(O.sinh(x))), O.isnan, "counterexample"),      # x < 0
], ids=["log_cosh", "broken_constant", "broken_sinh"])
def test_nan_of_a_log_is_decided_both_ways(source, target, want):
    src = relax.transform.LegalizeOps()(_module(source))
    tgt = relax.transform.LegalizeOps()(_module(target))
    r = _verdict(src, tgt)
    assert r.verdict == want, r.to_dict()
    if want == "counterexample":
        cex = r.counterexample
        assert cex.confirmed_by is not None and cex.confirmed_by.startswith("vm"), r.to_dict()
        x = np.asarray(cex.inputs["x"])[tuple(cex.index)]
        assert np.isnan(x) if target is not O.isnan else x < 0, (x, r.to_dict())


@pytest.mark.parametrize("outer,want", [(O.cosh, "proved"), (lambda v: v, "counterexample")],
                         ids=["cosh", "bare"])
def test_a_product_of_zeros_is_a_zero(outer, want):
    """floor_mod(x, x) is ±0 for a finite nonzero x: numpy's rule gives the divisor's sign,
    TIR's x - floor(x / x) * x gives +0. A product of such zeros is a zero in every order
    (`reduction._product_specials`), so cosh of it is 1 on both sides and proved (GenCoG
    seed-0 graph 7: unrelated product values before, an unconfirmed counterexample). The
    twin, the bare product, differs in the zero's sign (a signed-zero finding of
    LegalizeOps, docs/findings.md): refuted and confirmed."""
    src = _module(lambda x: outer(O.prod(O.floor_mod(x, x), axis=[0])))
    r = _verdict(src, relax.transform.LegalizeOps()(src))
    assert r.verdict == want, r.to_dict()
    if want == "counterexample":
        assert r.counterexample.confirmed_by is not None, r.to_dict()
        s, t = r.counterexample.source_value, r.counterexample.target_value
        assert s == 0 and t == 0 and np.signbit(s) != np.signbit(t), (s, t)
