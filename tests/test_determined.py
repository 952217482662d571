"""Values of the specifications' uninterpreted functions that every reading of the
specification gives (`tvtv.encode.determined`), against numpy and against the correctly
rounded exact value, and what they let confirmation show."""
from __future__ import annotations

import math
from decimal import Decimal, getcontext

import ml_dtypes
import numpy as np
import pytest
from tvm import relax

from tvtv import confirm
from tvtv.absfp.dtypes import FLOAT_FORMATS
from tvtv.encode import evaluate as E
from tvtv.encode.determined import log_add_exp
from tvtv.report import Counterexample

_NP = {"float16": np.float16, "bfloat16": ml_dtypes.bfloat16, "float32": np.float32,
       "float64": np.float64}


def _exact_log_add_exp(a: float, b: float, dtype: str) -> float:
    """log(e^a + e^b) to 80 digits, rounded to the dtype (round to nearest, from a value far
    more precise than the dtype: a double rounding that can only matter at a midpoint, which
    `log_add_exp` never answers for)."""
    getcontext().prec = 80
    top, low = max(a, b), min(a, b)
    exact = Decimal(top) + (Decimal(1) + (Decimal(low) - Decimal(top)).exp()).ln()
    return float(_NP[dtype](float(exact)))


def _numpy(a: float, b: float, dtype: str) -> float:
    kind = np.float64 if dtype == "float64" else np.float32
    return float(_NP[dtype](np.logaddexp(kind(a), kind(b))))


def _pairs(dtype: str, n: int, seed: int) -> list[tuple[float, float]]:
    """Operand pairs of the dtype, spread over magnitudes and distances, with ±max among
    them."""
    rng = np.random.default_rng(seed)
    top = FLOAT_FORMATS[dtype].max_value
    mags = 10.0 ** rng.uniform(-3, math.log10(top) - 0.01, size=(n, 2))
    vals = (mags * rng.choice([-1.0, 1.0], size=(n, 2))).astype(_NP[dtype]).astype(np.float64)
    vals[:8] = [[top, -top], [-top, top], [top, 0.5], [-top, 1.0], [1000.0, -1000.0],
                [0.0, 100.0], [100.0, 0.0], [-3.0, 40.0]]
    return [(float(a), float(b)) for a, b in vals]


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
def test_log_add_exp_value_is_numpys_and_the_correctly_rounded_one(dtype):
    """Wherever a value is given, numpy.logaddexp (the specification's reference) and the
    correctly rounded log(e^a + e^b) are that value; about half the pairs get one."""
    given = 0
    for a, b in _pairs(dtype, 400, seed=len(dtype)):
        v = log_add_exp([a, b], dtype)
        if v is None:
            continue
        given += 1
        assert v == max(a, b), (a, b, v)
        assert v == _numpy(a, b, dtype) == _exact_log_add_exp(a, b, dtype), (a, b, v)
    assert given > 100, given


@pytest.mark.parametrize("dtype,a,b", [
    ("float32", 0.0, 1.0),          # close: the correction shows
    ("float32", 100.0, 90.0),       # e^-10 is above half an ulp of 100
    ("float32", 0.0, -1000.0),      # a zero max: a faithful exp may give a subnormal
    ("float32", -0.0, -200.0),
    ("float32", 3.0, 3.0),          # equal, infinite and NaN operands are the
    ("float32", math.inf, 1.0),     # specification's own cases
    ("float32", math.nan, 1.0),
    ("float16", 8.0, 0.0),
])
def test_log_add_exp_stays_open_where_readings_may_differ(dtype, a, b):
    assert log_add_exp([a, b], dtype) is None


def test_log_add_exp_far_apart_is_as_close_as_the_bound_allows():
    """float32 100 has floats 2^-17 apart above it: the correction e^-d rounds away once
    2 e^-d < 2^-18, d > 13.2 (the bound's margin), and not at d = 12."""
    assert log_add_exp([100.0, 86.0], "float32") == 100.0
    assert log_add_exp([100.0, 88.0], "float32") is None


def _zero_log_add_exp_matmul() -> relax.IRModule:
    """cos(log_add_exp(0, x) @ wᵀ): log_add_exp's operands are never equal where x ≠ 0, so
    the specification's own cases do not give its value."""
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType((2, 3), "float32"))
    w = relax.Var("w", relax.TensorType((4, 3), "float32"))
    with bb.function("main", [x, w]):
        z = bb.emit(relax.op.zeros_like(x))
        lae = bb.emit(relax.op.log_add_exp(z, x))
        bb.emit_func_output(bb.emit(relax.op.cos(relax.op.matmul(lae, relax.op.permute_dims(w)))))
    return bb.get()


def test_log_add_exp_overflow_through_later_ops_is_confirmed():
    """TVM's log(exp(0) + exp(x)) is inf for x = 100 where the specification is 100; behind
    a matmul and cos the difference is NaN against a number. With the determined value the
    specification's evaluation has a value there and confirms it (it stayed open before:
    GenCoG seed-0 graph 1 under LegalizeOps was an unconfirmed counterexample, 268 s)."""
    src = _zero_log_add_exp_matmul()
    legal = relax.transform.LegalizeOps()(src)
    zeros = {"x": np.zeros((2, 3), "float32"), "w": np.ones((4, 3), "float32")}
    cex = Counterexample("value", "output 0 differs at index (0, 0)", zeros, 0, (0, 0))
    c = confirm.confirm_case(src, legal, "main", ["x", "w"], cex)
    assert (c.confirmed, c.by) == (True, "ieee-spec-cpu"), c
    spec, tgt = cex.executed_values
    assert math.isfinite(spec) and math.isnan(tgt)
    assert np.abs(cex.inputs["x"]).max() >= 100


def _stable_log_add_exp_matmul() -> relax.IRModule:
    """`_zero_log_add_exp_matmul` with log_add_exp as max(a, b) + log(1 + exp(-|a - b|)),
    legalized: no overflow."""
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType((2, 3), "float32"))
    w = relax.Var("w", relax.TensorType((4, 3), "float32"))
    O = relax.op
    with bb.function("main", [x, w]):
        z = bb.emit(O.zeros_like(x))
        corr = bb.emit(O.log(O.add(relax.const(1.0, "float32"),
                                   O.exp(O.negative(O.abs(O.subtract(z, x)))))))
        lae = bb.emit(O.add(O.maximum(z, x), corr))
        bb.emit_func_output(bb.emit(O.cos(O.matmul(lae, O.permute_dims(w)))))
    return relax.transform.LegalizeOps()(bb.get())


@pytest.mark.parametrize("target", ["legalized", "stable"])
def test_determined_values_confirm_the_overflow_and_not_a_stable_formula(target):
    """On large operands (every log_add_exp value determined) the specification's
    evaluation shows the legalization's overflow, and the twin, a stable formula, agrees with
    it element for element: nothing is confirmed against it."""
    src = _zero_log_add_exp_matmul()
    tgt = relax.transform.LegalizeOps()(src) if target == "legalized" else _stable_log_add_exp_matmul()
    args = {"x": np.array([[100, 1000, 100], [1000, 100, 1000]], "float32"),
            "w": np.array([[1, 1, 1], [1, -1, 1], [2, 1, 1], [1, 1, -3]], "float32")}
    spec = confirm._cpu_outputs(src, "main", args)
    assert spec is not None and None not in spec[0][2]        # every element has a value
    from tvtv.ir import tvm_bridge
    ran = tvm_bridge.run_vm_isolated({"target": tgt}, "main", [list(args.values())])["target"]
    cex = Counterexample("value", "output 0 differs at index (0, 0)", args, 0, (0, 0))
    found = confirm._spec_vs_cpu_run(src, tgt, "main", ["x", "w"], [list(args.values())],
                                     ran, (), cex)
    if target == "legalized":
        assert found is not None and found.confirmed, found
        assert math.isnan(cex.executed_values[1])
    else:
        assert found is None, found


def test_exact_value_uses_determined_values():
    """`exact_value` (the specification's value on every run) resolves a far-apart
    log_add_exp and leaves a close one open."""
    from tvtv.ir import program as P
    spec, _ = E.encode_op("relax.log_add_exp", [np.array([0.0, 0.0], "float32"),
                                                np.array([100.0, 1.0], "float32")],
                          P.TensorType((2,), "float32"))
    assert E.exact_value(spec.at(0), "float32") == 100.0
    assert E.exact_value(spec.at(1), "float32") is None
