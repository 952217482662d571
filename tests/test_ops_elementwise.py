"""Conformance of the elementwise Relax op encoders (tvtv/encode/ops/elementwise.py) to numpy.

For every op, on random values and on special values (±0, ±inf, NaN, ±FLT_MAX, a denormal):
- the IEEE model's encoding, evaluated on concrete inputs, equals numpy's result wherever it
  is determined; where it contains uninterpreted functions (exp, erf, pow ...), it equals
  numpy's result once those functions are interpreted by numpy (so the formula around them
  is numpy's, rounding step by rounding step); on the inputs where the value is fixed
  (special values) it is determined;
- the abstract model admits numpy's result everywhere and forces it on the fixed inputs
  (everywhere for the ops it models exactly: comparisons, max/min, abs, neg, select, ints);
- a deliberately wrong expectation is rejected (at least one per family).
Also: the special-value table of tvtv/absfp/special.py against numpy, integer UB, broadcasting,
scalar operands, and the dtype combinations that must raise Unsupported.
The references follow each op's documented formula in the op's dtype, step by step, with
the transcendental parts computed by numpy/math and rounded to the dtype.
"""
from __future__ import annotations

import math
from typing import Any, Callable, Sequence

import numpy as np
import pytest
import z3

from tvtv.absfp import special
from tvtv.absfp.abstract import AbstractModel
from tvtv.absfp.ieee import IEEEModel
from tvtv.encode.evaluate import agrees, arrays_match, encode_op, eval_op, same_value
from tvtv.encode.registry import supported_ops
from tvtv.errors import Unsupported
from tvtv.ir.program import TensorType

f32, f16, f64 = np.float32, np.float16, np.float64
INF, NAN = math.inf, math.nan
FMAX = float(np.finfo(f32).max)
DENORM = float(f32(1e-45))

# Special values of one operand; the first five are the IEEE special values.
SPECIALS = [0.0, -0.0, INF, -INF, NAN, 1.0, -1.0, FMAX, -FMAX, DENORM, -DENORM, 0.5, -2.5, 3.0]
FIXED5 = [0.0, -0.0, INF, -INF, NAN]
# Operand values for binary ops: every pair is tested.
PAIR_VALUES = [0.0, -0.0, INF, -INF, NAN, 1.0, -1.0, 2.5, -3.0, FMAX, DENORM]


def _is_special(v: float) -> bool:
    return v == 0 or math.isinf(v) or math.isnan(v)


def rand(shape: tuple[int, ...], dtype: Any = f32, seed: int = 0, scale: float = 3.0) -> np.ndarray:
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(dtype)


def arr(values: Sequence[float], dtype: Any = f32) -> np.ndarray:
    with np.errstate(over="ignore"):     # FLT_MAX overflows to inf in float16
        return np.array(values, dtype=dtype)


def pairs(values: Sequence[float], keep: Callable[[float, float], bool] = lambda a, b: True,
          dtype: Any = f32) -> tuple[np.ndarray, np.ndarray]:
    ab = [(a, b) for a in values for b in values if keep(a, b)]
    return arr([a for a, _ in ab], dtype), arr([b for _, b in ab], dtype)


def tt(a: np.ndarray, dtype: str | None = None) -> TensorType:
    return TensorType(tuple(a.shape), dtype or str(a.dtype))


ABSTRACT_BITS = 8


# -------------------------------------------------------------------------------------------
# generic checks
# -------------------------------------------------------------------------------------------
def check_ieee(op: str, args: list, want: np.ndarray, *, exact: bool, attrs: dict | None = None,
               dtypes: Sequence[str] | None = None, out_dtype: str | None = None) -> None:
    """IEEE model vs numpy. exact: every element determined by the encoding and equal to
    numpy's. Otherwise the determined elements equal numpy's, and the whole result equals
    numpy's once the uninterpreted functions (exp, erf, pow ...) are interpreted by numpy
    (`eval_interpreted`): the encoding is numpy's formula, step by step, around them."""
    want = np.asarray(want)
    ty = tt(want, out_dtype)
    got = eval_op(op, args, ty, attrs, dtypes)[0]
    if isinstance(got, np.ndarray):
        assert arrays_match(got, want), f"{op}: got {got}, numpy {want}"
        return
    assert not exact, f"{op}: IEEE encoding not determined on {args}: {got}"
    for g, w in zip(got, want.reshape(-1).tolist()):
        if g is not None:
            assert same_value(g, w), f"{op}: determined element {g} != numpy {w}"
    interpreted = eval_interpreted(op, args, ty, attrs, dtypes)
    assert arrays_match(interpreted, want), f"{op}: interpreted {interpreted}, numpy {want}"


# numpy interpretations of the IEEE model's uninterpreted functions, by name
NUMPY_BINARY: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "pow": np.power, "atan2": np.arctan2, "log_add_exp": np.logaddexp, "fmod": np.fmod,
}


def _interpret_ufs(term: z3.ExprRef) -> list[tuple[z3.ExprRef, z3.ExprRef]]:
    """Substitutions (f(c...), numpy's f(c...)) for the IEEE-model function applications in
    `term` whose arguments are numerals."""
    from tvtv.absfp.ieee import fp_value
    subs: dict[int, tuple[z3.ExprRef, z3.ExprRef]] = {}
    seen: set[int] = set()
    todo = [term]
    while todo:
        e = todo.pop()
        if e.get_id() in seen or not z3.is_app(e):
            continue
        seen.add(e.get_id())
        todo.extend(e.children())
        d = e.decl()
        if d.kind() != z3.Z3_OP_UNINTERPRETED or e.num_args() == 0:
            continue
        name = d.name()
        assert name.startswith("ieee_"), name
        fname, dtype = name[len("ieee_"):].rsplit("_", 1)
        if not all(z3.is_fp_value(a) for a in e.children()):
            continue
        from tvtv.absfp.dtypes import numpy_dtype
        xs = [np.array([fp_value(a, dtype)], numpy_dtype(dtype)) for a in e.children()]
        fn = NUMPY_UNARY[fname] if len(xs) == 1 else NUMPY_BINARY[fname]
        value = float(np_call(fn, *xs)[0])
        subs[e.get_id()] = (e, IEEEModel().domain(dtype).const(value))
    return list(subs.values())


def eval_interpreted(op: str, args: list, ty: TensorType, attrs: dict | None,
                     dtypes: Sequence[str] | None) -> np.ndarray:
    """The IEEE encoding on concrete inputs with every uninterpreted function replaced by
    numpy's function (evaluated on the function's concrete arguments, innermost first)."""
    from tvtv.absfp.dtypes import numpy_dtype
    from tvtv.encode.evaluate import element_value
    from tvtv.encode.values import flatten
    value, _ = encode_op(op, args, ty, attrs, IEEEModel(), dtypes)
    t = flatten(value)[0]
    out = []
    for k in range(t.numel):
        e = z3.simplify(t.at(k))
        for _ in range(8):
            subs = _interpret_ufs(e)
            if not subs:
                break
            e = z3.simplify(z3.substitute(e, *subs))
        v = element_value(e, t.dtype)
        assert v is not None, f"{op}: element {k} still symbolic: {e}"
        out.append(v)
    return np.array(out, numpy_dtype(t.dtype)).reshape(t.shape)


def check_abstract(op: str, args: list, want: np.ndarray, *, exact: bool,
                   attrs: dict | None = None, dtypes: Sequence[str] | None = None,
                   out_dtype: str | None = None) -> None:
    want = np.asarray(want)
    ok = agrees(op, args, tt(want, out_dtype), [want], attrs, AbstractModel(ABSTRACT_BITS),
                exact=exact, arg_dtypes=dtypes)
    assert ok, f"{op}: abstract model does not {'force' if exact else 'admit'} numpy's {want}"


def check_rejects(op: str, args: list, wrong: np.ndarray, *, attrs: dict | None = None,
                  dtypes: Sequence[str] | None = None, out_dtype: str | None = None,
                  abstract: bool = True) -> None:
    """A wrong expected result is admitted by neither model (by the IEEE model only, when
    the abstract model cannot tell it from the right one)."""
    wrong = np.asarray(wrong)
    models = [IEEEModel()] + ([AbstractModel(ABSTRACT_BITS)] if abstract else [])
    for model in models:
        assert not agrees(op, args, tt(wrong, out_dtype), [wrong], attrs, model, exact=False,
                          arg_dtypes=dtypes), f"{op}: {model.name} admits a wrong result {wrong}"


def ub_of(op: str, args: list, out_ty: TensorType, dtypes: Sequence[str] | None = None,
          attrs: dict | None = None) -> bool:
    """Is the op undefined on these concrete inputs (IEEE model)?"""
    _, ctx = encode_op(op, args, out_ty, attrs, IEEEModel(), dtypes)
    s = z3.Solver()
    s.add(ctx.well_defined())
    return s.check() == z3.unsat


def np_call(fn: Callable, *xs: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        return fn(*xs)


# -------------------------------------------------------------------------------------------
# references
# -------------------------------------------------------------------------------------------
def rounded(fn: Callable[[float], float], dtype: Any = f32) -> Callable[[np.ndarray], np.ndarray]:
    """A float64 function applied elementwise and rounded to `dtype`."""
    def run(x: np.ndarray) -> np.ndarray:
        out = []
        for v in np.asarray(x, dtype=f64).reshape(-1).tolist():
            try:
                out.append(fn(v))
            except (ValueError, OverflowError):
                out.append(NAN)
        with np.errstate(all="ignore"):
            return np.array(out, dtype=f64).astype(dtype).reshape(np.shape(x))
    return run


def _sigmoid64(v: float) -> float:
    if math.isnan(v):
        return NAN
    return 1.0 / (1.0 + math.exp(-v)) if v > -700 else 0.0


def np_sigmoid(x: np.ndarray) -> np.ndarray:
    return rounded(_sigmoid64, x.dtype)(x)


def np_erf(x: np.ndarray) -> np.ndarray:
    return rounded(math.erf, x.dtype)(x)


def np_rsqrt(x: np.ndarray) -> np.ndarray:
    return np_call(lambda v: (x.dtype.type(1) / np.sqrt(v)).astype(x.dtype), x)


NUMPY_UNARY: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "exp": np.exp, "log": np.log, "sqrt": np.sqrt, "rsqrt": np_rsqrt, "tanh": np.tanh,
    "sigmoid": np_sigmoid, "erf": np_erf, "sin": np.sin, "cos": np.cos, "tan": np.tan,
    "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan, "sinh": np.sinh, "cosh": np.cosh,
    "asinh": np.arcsinh, "acosh": np.arccosh, "atanh": np.arctanh, "floor": np.floor,
    "ceil": np.ceil, "trunc": np.trunc, "round": np.rint,
}

SPECIAL_KEYS = {"nan": NAN, "+inf": INF, "-inf": -INF, "+0": 0.0, "-0": -0.0, "+1": 1.0, "-1": -1.0}


def gelu_ref(x: np.ndarray) -> np.ndarray:
    t = x.dtype.type
    with np.errstate(all="ignore"):
        e = np_erf(x * t(0.5 ** 0.5))
        return (t(0.5) * x) * (t(1) + e)


def gelu_tanh_ref(x: np.ndarray) -> np.ndarray:
    t = x.dtype.type
    with np.errstate(all="ignore"):
        inner = t(math.sqrt(2 / math.pi)) * (x + t(0.044715) * ((x * x) * x))
        return (t(0.5) * x) * (t(1) + np.tanh(inner))


def silu_ref(x: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        return x * np_sigmoid(x)


def selu_ref(x: np.ndarray) -> np.ndarray:
    t = x.dtype.type
    alpha, scale = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946
    with np.errstate(all="ignore"):
        neg = t(alpha) * (np.exp(x) - t(1))
        return t(scale) * np.where(x > 0, x, neg)


def softplus_ref(beta: float, threshold: float) -> Callable[[np.ndarray], np.ndarray]:
    def run(x: np.ndarray) -> np.ndarray:
        t = x.dtype.type
        with np.errstate(all="ignore"):
            bx = t(beta) * x
            smooth = (t(1) / t(beta)) * np.log(t(1) + np.exp(bx))
            return np.where(bx > t(threshold), x, smooth)
    return run


def leaky_ref(alpha: float) -> Callable[[np.ndarray], np.ndarray]:
    def run(x: np.ndarray) -> np.ndarray:
        with np.errstate(all="ignore"):
            return np.where(x > 0, x, x.dtype.type(alpha) * x)
    return run


def np_sign(x: np.ndarray) -> np.ndarray:
    return np.sign(x)


# -------------------------------------------------------------------------------------------
# the special-value table itself
# -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("fname", sorted(special.UNARY_RULES))
def test_special_table_matches_numpy(fname: str) -> None:
    """Every special value of UNARY_RULES is numpy's float32 result (±0 sign included), and
    the structural facts (odd, nonneg, NaN below zero) hold on numpy's results."""
    rule = special.UNARY_RULES[fname]
    ref = NUMPY_UNARY[fname]
    for key, out in rule.specials.items():
        x = SPECIAL_KEYS[key]
        got = float(np_call(ref, arr([x]))[0])
        want = x if out == "x" else float(f32(out))
        assert same_value(got, want), f"{fname}({key}): table {out}, numpy {got}"
    xs = np.concatenate([rand((24,), seed=1), rand((8,), seed=2, scale=0.3),
                         arr([DENORM, FMAX, 0.75, 1.5, 40.0])])
    pos = np.abs(xs)
    ys = np_call(ref, pos)
    if rule.odd:
        assert arrays_match(np_call(ref, -pos), -ys), f"{fname} is not odd in numpy"
    if rule.nonneg:
        vals = np_call(ref, xs)
        assert all(math.isnan(v) or v >= 0 and math.copysign(1, v) > 0 for v in vals.tolist())
    if rule.nan_below_zero:
        neg = -pos[pos > 0]
        assert np.all(np.isnan(np_call(ref, neg))), f"{fname} is not NaN below zero in numpy"
    else:   # the flag is not set where numpy gives numbers below zero
        assert not np.all(np.isnan(np_call(ref, -pos[pos > 0])))


def test_every_registered_elementwise_op_is_tested() -> None:
    """The op lists below cover everything elementwise.py registers."""
    import tvtv.encode.ops.elementwise as ew
    from tvtv.encode.registry import OP_ENCODERS
    supported_ops()
    mine = {name for name, fn in OP_ENCODERS.items() if fn.__module__ == ew.__name__}
    assert mine == TESTED_OPS, f"untested: {mine - TESTED_OPS}, unknown: {TESTED_OPS - mine}"
    for name in mine:
        doc = OP_ENCODERS[name].__doc__
        assert doc and doc.strip().splitlines()[0], f"{name} has no semantic first line"


# -------------------------------------------------------------------------------------------
# unary float ops
# -------------------------------------------------------------------------------------------
# (op, numpy reference, attrs, IEEE exact everywhere, abstract exact everywhere,
#  inputs fixed in IEEE, inputs fixed in the abstract model)
UnaryCase = tuple[str, Callable, dict, bool, bool, list, list]


def _table_case(fname: str) -> UnaryCase:
    fixed = [SPECIAL_KEYS[k] for k in special.UNARY_RULES[fname].specials]
    rounding = fname in ("floor", "ceil", "trunc", "round")
    return (f"relax.{fname}", NUMPY_UNARY[fname], {}, fname == "sqrt" or rounding, False,
            SPECIALS if fname == "sqrt" or rounding else fixed, fixed)


UNARY_FLOAT: list[UnaryCase] = [_table_case(f) for f in sorted(special.UNARY_RULES)] + [
    ("relax.abs", np.abs, {}, True, True, SPECIALS, SPECIALS),
    ("relax.negative", np.negative, {}, True, True, SPECIALS, SPECIALS),
    ("relax.square", np.square, {}, True, False, SPECIALS, FIXED5 + [1.0, -1.0]),
    ("relax.sign", np_sign, {}, True, True, SPECIALS, SPECIALS),
    ("relax.isnan", np.isnan, {}, True, True, SPECIALS, SPECIALS),
    ("relax.isinf", np.isinf, {}, True, True, SPECIALS, SPECIALS),
    ("relax.isfinite", np.isfinite, {}, True, True, SPECIALS, SPECIALS),
    ("relax.nn.relu", lambda x: np.maximum(x, x.dtype.type(0)), {}, True, True, SPECIALS, SPECIALS),
    ("relax.nn.leakyrelu", leaky_ref(0.2), {"alpha": 0.2}, True, False, SPECIALS,
     FIXED5 + [1.0, FMAX, DENORM, 3.0]),
    ("relax.nn.leakyrelu", leaky_ref(-0.5), {"alpha": -0.5}, True, False, SPECIALS,
     FIXED5 + [1.0, FMAX, DENORM, 3.0]),
    ("relax.nn.gelu", gelu_ref, {}, False, False, FIXED5, [0.0, -0.0, -INF, NAN]),
    ("relax.nn.gelu_tanh", gelu_tanh_ref, {}, False, False, FIXED5, [0.0, -0.0, -INF, NAN]),
    ("relax.nn.silu", silu_ref, {}, False, False, FIXED5, FIXED5),
    ("relax.nn.selu", selu_ref, {}, False, False, FIXED5, [0.0, -0.0, INF, NAN]),
    ("relax.nn.softplus", softplus_ref(1.0, 20.0), {}, False, False,
     [INF, -INF, NAN, FMAX, 25.0], [INF, -INF, NAN, FMAX, 25.0]),
    ("relax.nn.softplus", softplus_ref(2.0, 3.0), {"beta": 2.0, "threshold": 3.0}, False, False,
     [INF, -INF, NAN, 1.6, FMAX], [INF, NAN]),
]


# Odd functions need not keep the argument's sign (sin(6.1) < 0): a regression test for an
# abstract model that forced f(x) to have x's sign.
@pytest.mark.parametrize("op", ["relax.sin", "relax.tan"])
def test_abstract_odd_functions_may_change_sign(op: str) -> None:
    x = arr([6.1, 2.0])            # sin(6.1) < 0, tan(2.0) < 0
    want = np_call(NUMPY_UNARY[op.split(".")[-1]], x)
    assert (want < 0).any()
    check_abstract(op, [x], want, exact=False)


def _bool_out(op: str) -> bool:
    return op in ("relax.isnan", "relax.isinf", "relax.isfinite")


@pytest.mark.parametrize("case", UNARY_FLOAT, ids=lambda c: c[0].split(".")[-1] + str(c[2] or ""))
def test_unary_float32(case: UnaryCase) -> None:
    op, ref, attrs, ieee_exact, abs_exact, ieee_fixed, abs_fixed = case
    out = "bool" if _bool_out(op) else None
    for x in (rand((2, 3), seed=3), arr(SPECIALS)):
        want = np_call(ref, x)
        check_ieee(op, [x], want, exact=ieee_exact, attrs=attrs, out_dtype=out)
        check_abstract(op, [x], want, exact=abs_exact, attrs=attrs, out_dtype=out)
    x = arr(ieee_fixed)
    check_ieee(op, [x], np_call(ref, x), exact=True, attrs=attrs, out_dtype=out)
    x = arr(abs_fixed)
    check_abstract(op, [x], np_call(ref, x), exact=True, attrs=attrs, out_dtype=out)


def via_f32(fn: Callable[..., np.ndarray]) -> Callable[..., np.ndarray]:
    """fn computed in float32 and rounded back. numpy's float16 maximum/minimum break ties
    (+0 vs -0) the other way round from its float32 and float64 loops (measured: float16
    maximum(-0., 0.) = -0., float32 gives 0.); tvtv uses the float32 rule for every dtype."""
    def run(*xs: np.ndarray) -> np.ndarray:
        return fn(*(x.astype(f32) for x in xs)).astype(xs[0].dtype)
    return run


@pytest.mark.parametrize("op,ref,fixed", [
    ("relax.exp", np.exp, FIXED5), ("relax.sqrt", np.sqrt, SPECIALS),
    ("relax.nn.relu", via_f32(lambda x: np.maximum(x, f32(0))), SPECIALS),
    ("relax.floor", np.floor, SPECIALS), ("relax.negative", np.negative, SPECIALS),
    ("relax.nn.silu", silu_ref, FIXED5),
])
def test_unary_float16(op: str, ref: Callable, fixed: list) -> None:
    x = arr(fixed, f16)
    want = np_call(ref, x)
    check_ieee(op, [x], want, exact=True)
    check_abstract(op, [x], want, exact=op in ("relax.nn.relu", "relax.negative") or fixed == FIXED5)
    x = rand((5,), f16, seed=4)
    want = np_call(ref, x)
    check_ieee(op, [x], want, exact=op not in ("relax.exp", "relax.nn.silu"))
    check_abstract(op, [x], want, exact=False)


def test_softplus_threshold_is_strict() -> None:
    """beta * x == threshold takes the smooth branch (PyTorch: linear when beta * x > threshold)."""
    x = arr([1.5, 1.5000001])
    attrs = {"beta": 2.0, "threshold": 3.0}
    want = softplus_ref(2.0, 3.0)(x)
    assert want[0] != x[0] and want[1] == x[1]
    check_ieee("relax.nn.softplus", [x], want, exact=False, attrs=attrs)


def test_unary_wrong_expectations() -> None:
    x = arr([0.0, -0.0, INF, NAN])
    # table function: exp(-0) = 1, claim 0.5
    check_rejects("relax.exp", [x], arr([1.0, 0.5, INF, NAN]))
    # rounding keeps the sign of zero: floor(-0.) = -0., claim +0.
    check_rejects("relax.floor", [x], arr([0.0, 0.0, INF, NAN]))
    # relu(NaN) = NaN (numpy), not 0 (TVM's lowering)
    check_rejects("relax.nn.relu", [x], arr([0.0, 0.0, INF, 0.0]))
    # sign(NaN) = NaN, not 0
    check_rejects("relax.sign", [x], arr([0.0, 0.0, 1.0, 0.0]))
    # gelu(-0.) = -0.
    check_rejects("relax.nn.gelu", [x], arr([0.0, 0.0, INF, NAN]))
    check_rejects("relax.isfinite", [x], arr([True, True, True, True], bool), out_dtype="bool")
    # leakyrelu(-0.) = -0.: the doc's max(x, 0) + a*min(x, 0) would give +0.
    check_rejects("relax.nn.leakyrelu", [x], arr([0.0, 0.0, INF, NAN]), attrs={"alpha": 0.1})


# -------------------------------------------------------------------------------------------
# unary ops on ints and bool
# -------------------------------------------------------------------------------------------
I32 = np.array([-7, 7, 0, 3, -3, 2**31 - 1, -2**31, 1, -1, 100], np.int32)
U8 = np.array([0, 1, 7, 128, 255], np.uint8)
BOOLS = np.array([True, False, True], bool)


@pytest.mark.parametrize("op,ref", [
    ("relax.abs", np.abs), ("relax.negative", np.negative), ("relax.square", np.square),
    ("relax.sign", np.sign), ("relax.bitwise_not", np.invert),
    ("relax.floor", lambda x: x), ("relax.ceil", lambda x: x), ("relax.round", lambda x: x),
    ("relax.trunc", lambda x: x), ("relax.nn.relu", lambda x: np.maximum(x, 0).astype(x.dtype)),
    ("relax.isnan", np.isnan), ("relax.isinf", np.isinf), ("relax.isfinite", np.isfinite),
])
@pytest.mark.parametrize("x", [I32, U8], ids=["int32", "uint8"])
def test_unary_int(op: str, ref: Callable, x: np.ndarray) -> None:
    want = np_call(ref, x)
    out = "bool" if _bool_out(op) else None
    check_ieee(op, [x], want, exact=True, out_dtype=out)
    check_abstract(op, [x], want, exact=True, out_dtype=out)


@pytest.mark.parametrize("op,ref", [
    ("relax.logical_not", np.logical_not), ("relax.bitwise_not", np.invert),
    ("relax.floor", lambda x: x), ("relax.round", lambda x: x),
    ("relax.isnan", np.isnan), ("relax.isfinite", np.isfinite),
])
def test_unary_bool(op: str, ref: Callable) -> None:
    want = ref(BOOLS)
    check_ieee(op, [BOOLS], want, exact=True, out_dtype="bool")
    check_abstract(op, [BOOLS], want, exact=True, out_dtype="bool")


def test_unary_int_wrong_expectations() -> None:
    check_rejects("relax.abs", [I32], np.abs(I32.astype(np.int64)).clip(max=2**31 - 1).astype(np.int32))
    check_rejects("relax.sign", [U8], np.array([0, 1, 1, 1, 0], np.uint8))
    check_rejects("relax.logical_not", [BOOLS], BOOLS, out_dtype="bool")


# -------------------------------------------------------------------------------------------
# binary float ops
# -------------------------------------------------------------------------------------------
def _any_special(a: float, b: float) -> bool:
    return _is_special(a) or _is_special(b)


def _pow_abs_fixed(a: float, b: float) -> bool:
    """Pairs whose pow value the abstract model fixes: not those needing an odd-integer test
    of a finite exponent (its floor is uninterpreted)."""
    if (a == -INF or (a == 0 and math.copysign(1, a) < 0)) and not _is_special(b):
        return False
    return _any_special(a, b)


def _lae_abs_fixed(a: float, b: float) -> bool:
    return any(math.isnan(v) or math.isinf(v) for v in (a, b))


# (op, numpy reference, IEEE exact, abstract exact, pairs fixed in IEEE, pairs fixed in abstract)
BinaryCase = tuple[str, Callable, bool, bool, Callable, Callable]
ALL = lambda a, b: True  # noqa: E731
NONE = lambda a, b: False  # noqa: E731

BINARY_FLOAT: list[BinaryCase] = [
    ("relax.add", np.add, True, False, ALL, _any_special),
    ("relax.subtract", np.subtract, True, False, ALL, _any_special),
    ("relax.multiply", np.multiply, True, False, ALL, _any_special),
    ("relax.divide", np.divide, True, False, ALL, _any_special),
    ("relax.maximum", np.maximum, True, True, ALL, ALL),
    ("relax.minimum", np.minimum, True, True, ALL, ALL),
    ("relax.equal", np.equal, True, True, ALL, ALL),
    ("relax.not_equal", np.not_equal, True, True, ALL, ALL),
    ("relax.less", np.less, True, True, ALL, ALL),
    ("relax.less_equal", np.less_equal, True, True, ALL, ALL),
    ("relax.greater", np.greater, True, True, ALL, ALL),
    ("relax.greater_equal", np.greater_equal, True, True, ALL, ALL),
    ("relax.floor_divide", np.floor_divide, True, False, ALL, _any_special),
    ("relax.floor_mod", np.remainder, True, False, ALL, _any_special),
    ("relax.mod", np.fmod, True, False, ALL, _any_special),
    ("relax.power", np.power, False, False, _any_special, _pow_abs_fixed),
    ("relax.atan2", np.arctan2, False, False, _any_special, _any_special),
    ("relax.log_add_exp", np.logaddexp, False, False,
     lambda a, b: _lae_abs_fixed(a, b) or a == b, _lae_abs_fixed),
]
_COMPARISONS = {"relax.equal", "relax.not_equal", "relax.less", "relax.less_equal",
                "relax.greater", "relax.greater_equal"}


@pytest.mark.parametrize("case", BINARY_FLOAT, ids=lambda c: c[0].split(".")[-1])
def test_binary_float32(case: BinaryCase) -> None:
    op, ref, ieee_exact, abs_exact, ieee_fixed, abs_fixed = case
    out = "bool" if op in _COMPARISONS else None
    a, b = rand((2, 3), seed=5), rand((2, 3), seed=6)
    if op == "relax.power":
        a = np.abs(a)                       # numbers rather than NaN
    want = np_call(ref, a, b)
    check_ieee(op, [a, b], want, exact=ieee_exact, out_dtype=out)
    check_abstract(op, [a, b], want, exact=abs_exact, out_dtype=out)
    a, b = pairs(PAIR_VALUES)
    want = np_call(ref, a, b)
    check_ieee(op, [a, b], want, exact=ieee_exact, out_dtype=out)
    check_abstract(op, [a, b], want, exact=abs_exact, out_dtype=out)
    if not ieee_exact:
        a, b = pairs(PAIR_VALUES, ieee_fixed)
        check_ieee(op, [a, b], np_call(ref, a, b), exact=True, out_dtype=out)
    if not abs_exact:
        a, b = pairs(PAIR_VALUES, abs_fixed)
        check_abstract(op, [a, b], np_call(ref, a, b), exact=True, out_dtype=out)


def test_floor_ops_inexact_quotients() -> None:
    """numpy's floor_divide/remainder use the exact quotient (1 // 0.1f = 9, not floor(1/0.1f)
    = 10), on values where floor(a / b) would differ."""
    # the last three need numpy's snap of (a - mod) / b to the nearest integer (1982.9999 -> 1983)
    a = arr([1.0, -1.0, 7.0, -7.5, 1e30, 3.0, 0.3, -85673.0, 0.37170118, 0.38919622])
    b = arr([0.1, 0.1, -0.7, 2.0, 3.0, 1e-30, -0.1, -43.18456, -0.024800904, 0.025659665])
    for op, ref in (("relax.floor_divide", np.floor_divide), ("relax.floor_mod", np.remainder),
                    ("relax.mod", np.fmod)):
        check_ieee(op, [a, b], np_call(ref, a, b), exact=True)
    assert np_call(np.floor_divide, a, b)[0] == 9.0
    wrong = np.floor(np_call(np.divide, a, b))
    check_rejects("relax.floor_divide", [a, b], wrong, abstract=False)


@pytest.mark.parametrize("op,ref", [
    ("relax.add", np.add), ("relax.multiply", np.multiply), ("relax.divide", np.divide),
    ("relax.maximum", via_f32(np.maximum)), ("relax.less", np.less),
    ("relax.floor_divide", np.floor_divide),
    ("relax.mod", np.fmod),
])
def test_binary_float16(op: str, ref: Callable) -> None:
    out = "bool" if op in _COMPARISONS else None
    a, b = pairs([0.0, -0.0, INF, NAN, 1.0, -2.5, 65504.0, 6e-8], dtype=f16)
    want = np_call(ref, a, b)
    check_ieee(op, [a, b], want, exact=True, out_dtype=out)
    check_abstract(op, [a, b], want, exact=op in ("relax.maximum", "relax.less"), out_dtype=out)
    a, b = rand((5,), f16, seed=7), rand((5,), f16, seed=8)
    check_ieee(op, [a, b], np_call(ref, a, b), exact=True, out_dtype=out)


@pytest.mark.parametrize("op,ref", [("relax.add", np.add), ("relax.floor_divide", np.floor_divide),
                                    ("relax.floor_mod", np.remainder), ("relax.mod", np.fmod)])
def test_binary_bfloat16(op: str, ref: Callable) -> None:
    import ml_dtypes
    bf = ml_dtypes.bfloat16
    a = np.concatenate([rand((6,), seed=13, scale=100.0), arr([0.0, -0.0, INF, 1.0, -1.0])]).astype(bf)
    b = np.concatenate([rand((6,), seed=14, scale=0.3), arr([-1.0, 1.0, 1.0, INF, INF])]).astype(bf)
    dts = ["bfloat16", "bfloat16"]
    check_ieee(op, [a, b], np_call(ref, a, b), exact=True, dtypes=dts, out_dtype="bfloat16")


def test_float16_floor_divide_is_computed_in_float32() -> None:
    """numpy computes float16 divmod in float32: computing it in float16 would give -603 and
    -3568 here (found by search)."""
    a, b = arr([0.1295, -4708.0], f16), arr([-0.0002154, 1.32], f16)
    want = np.floor_divide(a, b)
    assert want.tolist() == [-602.0, -3566.0]
    check_ieee("relax.floor_divide", [a, b], want, exact=True)


@pytest.mark.parametrize("op,ref", [("relax.add", np.add), ("relax.floor_mod", np.remainder),
                                    ("relax.minimum", np.minimum)])
def test_binary_float64(op: str, ref: Callable) -> None:
    a, b = pairs([0.0, -0.0, INF, NAN, 1.0, -2.5, 1e300, 5e-324], dtype=f64)
    want = np_call(ref, a, b)
    check_ieee(op, [a, b], want, exact=True)
    check_abstract(op, [a, b], want, exact=op == "relax.minimum")


def test_scalar_operands() -> None:
    """A PrimValue operand (FoldBatchnormToConv2D emits R.add(c, T.float32(1e-05))) is a
    scalar of the tensor's dtype; a literal of another dtype is converted like TVM does."""
    x = arr([1.0, -0.0, NAN])
    want = x + f32(1e-5)
    check_ieee("relax.add", [x, ("prim", 1e-5)], want, exact=True, dtypes=["float32", "float32"])
    check_ieee("relax.multiply", [("prim", 2), x], x * f32(2), exact=True,
               dtypes=["int64", "float32"])
    check_abstract("relax.maximum", [x, ("prim", 0)], np.maximum(x, f32(0)), exact=True,
                   dtypes=["float32", "int64"])
    i = np.array([3, -4], np.int32)
    check_ieee("relax.floor_divide", [i, ("prim", 2)], i // 2, exact=True,
               dtypes=["int32", "int64"])
    with pytest.raises(Unsupported):
        encode_op("relax.add", [i, ("prim", 2.5)], tt(i), arg_dtypes=["int32", "float64"])


def test_binary_float_wrong_expectations() -> None:
    a, b = arr([-0.0, 1.0, INF, NAN]), arr([0.0, -0.0, -INF, 1.0])
    check_rejects("relax.add", [a, b], arr([-0.0, 1.0, NAN, NAN]))          # -0 + 0 = +0
    check_rejects("relax.maximum", [a, b], arr([0.0, 1.0, INF, 1.0]))       # NaN propagates
    check_rejects("relax.less_equal", [a, b], arr([True, False, False, True], bool),
                  out_dtype="bool")                                          # NaN <= 1 is False
    check_rejects("relax.floor_mod", [a, b], arr([-0.0, NAN, NAN, NAN]))   # x % ±0 = NaN
    check_rejects("relax.mod", [arr([-1.0]), arr([INF])], arr([INF]))       # fmod(-1, inf) = -1
    check_rejects("relax.atan2", [arr([0.0]), arr([-0.0])], arr([0.0]))     # atan2(0, -0) = pi
    check_rejects("relax.power", [arr([NAN]), arr([0.0])], arr([NAN]))      # pow(NaN, 0) = 1
    check_rejects("relax.log_add_exp", [arr([-0.0]), arr([-INF])], arr([-0.0]))  # gives +0


# -------------------------------------------------------------------------------------------
# binary ops on ints and bool
# -------------------------------------------------------------------------------------------
def _trunc_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    q = np.abs(a.astype(np.int64)) // np.abs(b.astype(np.int64))
    return (q * np.sign(a) * np.sign(b)).astype(a.dtype)


IA = np.array([-7, 7, 0, 3, -3, 2**31 - 1, -2**31, 100, -1, 5], np.int32)
IB = np.array([2, -2, 3, 1, 40, 2, 3, -3, 31, 5], np.int32)
SH = np.array([0, 1, 31, 4, 5, 1, 3, 2, 30, 16], np.int32)
INT_BINARY: list[tuple[str, Callable, np.ndarray]] = [
    ("relax.add", np.add, IB), ("relax.subtract", np.subtract, IB),
    ("relax.multiply", np.multiply, IB), ("relax.divide", _trunc_div, IB),
    ("relax.floor_divide", np.floor_divide, IB), ("relax.floor_mod", np.remainder, IB),
    ("relax.mod", np.fmod, IB), ("relax.maximum", np.maximum, IB),
    ("relax.minimum", np.minimum, IB), ("relax.equal", np.equal, IB),
    ("relax.not_equal", np.not_equal, IB), ("relax.less", np.less, IB),
    ("relax.less_equal", np.less_equal, IB), ("relax.greater", np.greater, IB),
    ("relax.greater_equal", np.greater_equal, IB), ("relax.bitwise_and", np.bitwise_and, IB),
    ("relax.bitwise_or", np.bitwise_or, IB), ("relax.bitwise_xor", np.bitwise_xor, IB),
    ("relax.left_shift", np.left_shift, SH), ("relax.right_shift", np.right_shift, SH),
]


@pytest.mark.parametrize("op,ref,b", INT_BINARY, ids=[c[0].split(".")[-1] for c in INT_BINARY])
def test_binary_int32(op: str, ref: Callable, b: np.ndarray) -> None:
    out = "bool" if op in _COMPARISONS else None
    want = np_call(ref, IA, b)
    check_ieee(op, [IA, b], want, exact=True, out_dtype=out)
    check_abstract(op, [IA, b], want, exact=True, out_dtype=out)


@pytest.mark.parametrize("op,ref", [
    ("relax.divide", lambda a, b: a // b), ("relax.floor_mod", np.remainder),
    ("relax.mod", np.fmod), ("relax.right_shift", np.right_shift), ("relax.less", np.less),
    ("relax.subtract", np.subtract),
])
def test_binary_uint8(op: str, ref: Callable) -> None:
    a = np.array([0, 1, 200, 255, 7, 128], np.uint8)
    b = np.array([1, 3, 7, 2, 7, 7], np.uint8)
    out = "bool" if op in _COMPARISONS else None
    want = np_call(ref, a, b)
    check_ieee(op, [a, b], want, exact=True, out_dtype=out)
    check_abstract(op, [a, b], want, exact=True, out_dtype=out)


BOOL_A, BOOL_B = np.array([True, True, False, False]), np.array([True, False, True, False])


@pytest.mark.parametrize("op,ref", [
    ("relax.logical_and", np.logical_and), ("relax.logical_or", np.logical_or),
    ("relax.logical_xor", np.logical_xor), ("relax.bitwise_and", np.bitwise_and),
    ("relax.bitwise_or", np.bitwise_or), ("relax.bitwise_xor", np.bitwise_xor),
    ("relax.add", np.add), ("relax.multiply", np.multiply), ("relax.maximum", np.maximum),
    ("relax.minimum", np.minimum), ("relax.equal", np.equal), ("relax.less", np.less),
    ("relax.greater_equal", np.greater_equal),
])
def test_binary_bool(op: str, ref: Callable) -> None:
    want = ref(BOOL_A, BOOL_B)
    check_ieee(op, [BOOL_A, BOOL_B], want, exact=True, out_dtype="bool")
    check_abstract(op, [BOOL_A, BOOL_B], want, exact=True, out_dtype="bool")


@pytest.mark.parametrize("dtype", ["int32", "int8", "uint8"])
def test_logical_xor_of_ints_is_bitwise_as_on_the_vm(dtype: str) -> None:
    """Relax keeps an int operand's dtype and TVM computes `x ^ y` (measured here on the
    VM): 2 xor 3 is 1, not numpy's logical False. The encoder gives those bits, LegalizeOps
    is proved, and a broken twin (`^` exchanged for `|`) is refuted."""
    import tvtv
    from tests.conftest import mutate
    from tests.test_ops_linalg import run_vm, typed_module
    from tvm import relax
    a = np.array([0, 1, 2, 3, -1, 5, 127, -128]).astype(dtype)
    b = np.array([0, 0, 3, 1, 1, 5, -1, 1]).astype(dtype)
    src = typed_module(relax.op.logical_xor, ((8,), dtype), ((8,), dtype))
    on_vm = run_vm(src, a, b).numpy()
    assert on_vm.dtype == np.dtype(dtype) and on_vm.tolist() == np.bitwise_xor(a, b).tolist()
    check_ieee("relax.logical_xor", [a, b], on_vm, exact=True)
    check_abstract("relax.logical_xor", [a, b], on_vm, exact=True)
    tgt = relax.transform.LegalizeOps()(src)
    (r,) = tvtv.verify(src, tgt, timeout=20).results
    assert r.verdict == "proved", r.to_dict()
    (bad,) = tvtv.verify(src, mutate(tgt, " ^ ", " | "), timeout=20).results
    assert bad.verdict == "counterexample" and bad.confirmed, bad.to_dict()


MIXED_PAIRS = [("int32", "float16"), ("float16", "int32"), ("float16", "float32"),
               ("int32", "int64"), ("int8", "int32"), ("bool", "int32"), ("uint8", "int8"),
               ("int64", "float32"), ("uint8", "int32"), ("bool", "float32")]


@pytest.mark.parametrize("a,b", MIXED_PAIRS)
def test_comparison_of_mixed_dtypes_is_legalized_as_encoded(a: str, b: str) -> None:
    """Relax's type inference accepts comparison operands of different dtypes (DeclGen
    writes them); LegalizeOps casts both to one dtype (`compared_dtype`) and the check of
    its legalization is proved for every pair."""
    import tvtv
    from tests.test_ops_linalg import typed_module
    from tvm import relax
    src = typed_module(relax.op.greater_equal, ((4,), a), ((4,), b))
    (r,) = tvtv.check_pass("LegalizeOps", src, timeout=20).results
    assert r.verdict == "proved", r.to_dict()


def test_int_compared_with_float16_is_rounded_to_float16_as_on_the_vm() -> None:
    """int32 against float16 compares in float16 (measured here on the VM): 70000 is +inf,
    65505 is 65504. The twin comparing both in float32 is refuted."""
    import tvtv
    from tests.conftest import mutate
    from tests.test_ops_linalg import run_vm, typed_module
    from tvm import relax
    x = np.array([1, 2, 65505, 70000], np.int32)
    y = np.array([1.5, 2, 65504, np.inf], np.float16)
    src = typed_module(relax.op.equal, ((4,), "int32"), ((4,), "float16"))
    on_vm = run_vm(src, x, y).numpy()
    assert on_vm.tolist() == [False, True, True, True]
    check_ieee("relax.equal", [x, y], on_vm, exact=True)
    tgt = relax.transform.LegalizeOps()(src)
    cast = 'T.Cast("float16", p0[v_ax0]) == p1[v_ax0]'
    wide = 'T.Cast("float32", p0[v_ax0]) == T.Cast("float32", p1[v_ax0])'
    (bad,) = tvtv.verify(src, mutate(tgt, cast, wide), timeout=20).results
    assert bad.verdict == "counterexample" and bad.confirmed, bad.to_dict()


def test_binary_int_wrong_expectations() -> None:
    a, b = np.array([-7, 7], np.int32), np.array([2, -2], np.int32)
    check_rejects("relax.divide", [a, b], np.array([-4, -4], np.int32))      # truncating
    check_rejects("relax.floor_mod", [a, b], np.fmod(a, b))                  # floored
    check_rejects("relax.right_shift", [a, np.array([1, 1], np.int32)],
                  np.array([2**31 - 4, 3], np.int32))                        # arithmetic shift
    check_rejects("relax.logical_xor", [BOOL_A, BOOL_B], np.logical_or(BOOL_A, BOOL_B),
                  out_dtype="bool")


@pytest.mark.parametrize("op,bad_a,bad_b,dtype", [
    ("relax.divide", 5, 0, "int32"),
    ("relax.divide", -2**31, -1, "int32"),
    ("relax.floor_divide", 4, 0, "int32"),
    ("relax.floor_mod", 5, 0, "int32"),
    ("relax.mod", 4, 0, "int32"),
    ("relax.mod", 4, 0, "uint8"),
    ("relax.left_shift", 1, 32, "int32"),
    ("relax.left_shift", 1, -1, "int32"),
    ("relax.right_shift", 1, 8, "uint8"),
])
def test_integer_ub(op: str, bad_a: int, bad_b: int, dtype: str) -> None:
    """Division/modulo by zero, INT_MIN / -1 and out-of-range shifts are UB, for the tensor
    (not only for one element the solver picks); fine operands are not."""
    x, y = np.array([4, bad_a], dtype), np.array([1, bad_b], dtype)
    ok = np.array([1, 2], dtype)
    assert ub_of(op, [x, y], tt(x))
    assert not ub_of(op, [x, ok], tt(x))
    # a large tensor (UB quantified with Exists) with one bad element
    big_a, big_b = np.full((9, 9), 4, dtype), np.full((9, 9), 1, dtype)
    assert not ub_of(op, [big_a, big_b], tt(big_a))
    big_a[4, 5], big_b[4, 5] = bad_a, bad_b
    assert ub_of(op, [big_a, big_b], tt(big_a))


# -------------------------------------------------------------------------------------------
# broadcasting
# -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("op,ref,sa,sb", [
    ("relax.add", np.add, (2, 3), (3,)),
    ("relax.maximum", np.maximum, (2, 1), (1, 3)),
    ("relax.less", np.less, (), (2, 2)),
    ("relax.floor_mod", np.remainder, (3, 1), (2,)),
    ("relax.power", np.power, (1, 2), (2, 1)),
])
def test_broadcast(op: str, ref: Callable, sa: tuple, sb: tuple) -> None:
    a, b = rand(sa, seed=9), rand(sb, seed=10)
    if op == "relax.power":
        a, b = np.abs(a), np.array([[0.0], [INF]], f32)   # fixed values: pow(x, 0), pow(x, inf)
    want = np_call(ref, a, b)
    out = "bool" if op in _COMPARISONS else None
    check_ieee(op, [a, b], want, exact=True, out_dtype=out)
    check_abstract(op, [a, b], want, exact=op in ("relax.maximum", "relax.less", "relax.power"),
                   out_dtype=out)
    wrong = want.copy()
    wrong.reshape(-1)[-1] = not wrong.reshape(-1)[-1] if out else 12345.0
    check_rejects(op, [a, b], wrong, out_dtype=out)


def test_where() -> None:
    cond = np.array([[True], [False]])
    x1 = arr([1.0, -0.0, NAN])
    x2 = arr([[0.0, 0.0, 2.0], [INF, 5.0, -1.0]])
    want = np.where(cond, x1, x2)
    check_ieee("relax.where", [cond, x1, x2], want, exact=True)
    check_abstract("relax.where", [cond, x1, x2], want, exact=True)
    check_rejects("relax.where", [cond, x1, x2], np.where(~cond, x1, x2))
    ci = np.array([True, False, True])
    ia, ib = np.array([1, 2, 3], np.int32), np.array([7], np.int32)
    check_ieee("relax.where", [ci, ia, ib], np.where(ci, ia, ib), exact=True)


# -------------------------------------------------------------------------------------------
# clip and astype
# -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("lo,hi,lo_dt", [(0, 6, "int64"), (-1.5, 2.25, "float64"),
                                          (0.0, 0.0, "float64"), (-0.0, -0.0, "float64"),
                                          (6, 3, "int64"), (-INF, 1.0, "float64")])
def test_clip_float(lo: float, hi: float, lo_dt: str) -> None:
    """numpy.clip semantics: clip(-0., 0, 6) = -0., clip(NaN) = NaN, lo > hi gives hi."""
    x = np.concatenate([arr(SPECIALS), rand((4,), seed=11)])
    want = np.clip(x, f32(lo), f32(hi))
    args = [x, ("prim", lo), ("prim", hi)]
    dts = ["float32", lo_dt, lo_dt]
    check_ieee("relax.clip", args, want, exact=True, dtypes=dts)
    check_abstract("relax.clip", args, want, exact=True, dtypes=dts)


def test_clip_int_and_wrong() -> None:
    x = np.array([-128, -5, 0, 3, 7, 127], np.int8)
    for lo, hi in ((0, 6), (-1000, 5), (-3, 1000)):
        want = np.clip(x.astype(np.int64), lo, hi).astype(np.int8)
        args, dts = [x, ("prim", lo), ("prim", hi)], ["int8", "int64", "int64"]
        check_ieee("relax.clip", args, want, exact=True, dtypes=dts)
        check_abstract("relax.clip", args, want, exact=True, dtypes=dts)
    with pytest.raises(Unsupported):
        encode_op("relax.clip", [x, ("prim", 0.5), ("prim", 6)], tt(x), arg_dtypes=["int8", "float64", "int64"])
    # TVM's lowering gives clip(NaN, 0, 6) = 6 and clip(-0., 0, 6) = +0.: rejected
    y = arr([NAN, -0.0])
    check_rejects("relax.clip", [y, ("prim", 0), ("prim", 6)], arr([6.0, 0.0]),
                  dtypes=["float32", "int64", "int64"])


@pytest.mark.parametrize("src,dst", [
    ("float32", "float16"), ("float16", "float32"), ("float32", "bfloat16"),
    ("bfloat16", "float32"), ("float64", "float32"), ("float32", "float64"),
    ("float32", "bool"), ("bool", "float32"), ("int32", "int8"), ("int8", "int32"),
    ("uint8", "int32"), ("int32", "float32"), ("float32", "int32"), ("int32", "bool"),
    ("bool", "int32"),
])
def test_astype(src: str, dst: str) -> None:
    from tvtv.absfp.dtypes import numpy_dtype
    sdt, ddt = numpy_dtype(src), numpy_dtype(dst)
    if src == "bool":
        x = np.array([True, False])
    elif src.startswith(("int", "uint")):
        info = np.iinfo(sdt)
        x = np.array([info.min, -3 if info.min < 0 else 3, 0, 1, 77, info.max], sdt)
    elif dst.startswith("int"):
        x = np.array([2.7, -2.7, 0.0, -0.0, 1e6, -0.5], sdt)   # in range: no UB
    else:
        with np.errstate(over="ignore"):
            x = np.concatenate([np.array(SPECIALS, f64), [1e-3, 3.3, 70000.0, 1e-40]]).astype(sdt)
    with np.errstate(all="ignore"):
        want = x.astype(ddt)
    attrs = {"dtype": dst}
    check_ieee("relax.astype", [x], want, exact=True, attrs=attrs, dtypes=[src], out_dtype=dst)
    float_to_float = src.startswith(("float", "bfloat")) and dst.startswith(("float", "bfloat"))
    exact_abs = not (src.startswith(("float", "bfloat")) and dst.startswith(("int", "uint"))) \
        and not (src.startswith(("int", "uint")) and dst.startswith(("float", "bfloat"))) \
        and not float_to_float
    check_abstract("relax.astype", [x], want, exact=exact_abs, attrs=attrs, dtypes=[src], out_dtype=dst)
    if float_to_float:      # special values are fixed by the abstract cast
        xs = np.array(FIXED5, f64).astype(sdt)
        check_abstract("relax.astype", [xs], xs.astype(ddt), exact=True, attrs=attrs,
                       dtypes=[src], out_dtype=dst)


def test_astype_wrong_and_ub() -> None:
    x = arr([70000.0, -0.0, NAN])
    # overflow gives inf, not 65504 (the abstract cast cannot tell them apart) ...
    check_rejects("relax.astype", [x], np.array([65504.0, -0.0, NAN], f16), abstract=False,
                  attrs={"dtype": "float16"}, dtypes=["float32"], out_dtype="float16")
    # ... the sign of zero is kept (both models)
    check_rejects("relax.astype", [x], np.array([INF, 0.0, NAN], f16),
                  attrs={"dtype": "float16"}, dtypes=["float32"], out_dtype="float16")
    assert ub_of("relax.astype", [arr([1.0, NAN])], TensorType((2,), "int32"),
                 dtypes=["float32"], attrs={"dtype": "int32"})
    assert not ub_of("relax.astype", [arr([1.0, -7.9])], TensorType((2,), "int32"),
                     dtypes=["float32"], attrs={"dtype": "int32"})


# -------------------------------------------------------------------------------------------
# prelu
# -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("shape,axis,alpha", [((2, 3), 1, [0.25, -0.5, 2.0]),
                                               ((3, 2), 0, [0.25, 1.0, 0.0]),
                                               ((2, 2, 2), -1, [0.1])])
def test_prelu(shape: tuple, axis: int, alpha: list) -> None:
    x = rand(shape, seed=12)
    x.reshape(-1)[:4] = [-0.0, NAN, -INF, 0.0]
    a = arr(alpha)
    ax = axis % len(shape)
    bshape = [1] * len(shape)
    bshape[ax] = len(alpha)
    with np.errstate(all="ignore"):
        want = np.where(x > 0, x, a.reshape(bshape) * x)
    attrs = {"axis": axis}
    check_ieee("relax.nn.prelu", [x, a], want, exact=True, attrs=attrs)
    check_abstract("relax.nn.prelu", [x, a], want, exact=False, attrs=attrs)
    check_rejects("relax.nn.prelu", [x, a], np.where(x > 0, x, -x), attrs=attrs)


# -------------------------------------------------------------------------------------------
# unsupported combinations raise Unsupported
# -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("op,dtype,n", [
    ("relax.logical_and", "float32", 2), ("relax.logical_not", "int32", 1),
    ("relax.logical_and", "int32", 2), ("relax.logical_xor", "float32", 2),
    ("relax.bitwise_and", "float32", 2), ("relax.bitwise_not", "float32", 1),
    ("relax.power", "int32", 2), ("relax.atan2", "int32", 2), ("relax.log_add_exp", "int32", 2),
    ("relax.left_shift", "float32", 2), ("relax.negative", "bool", 1), ("relax.abs", "bool", 1),
    ("relax.exp", "int32", 1), ("relax.nn.gelu", "int32", 1), ("relax.floor_divide", "bool", 2),
    ("relax.subtract", "bool", 2), ("relax.sign", "bool", 1), ("relax.square", "bool", 1),
])
def test_unsupported(op: str, dtype: str, n: int) -> None:
    from tvtv.absfp.dtypes import numpy_dtype
    x = np.zeros((2,), numpy_dtype(dtype))
    with pytest.raises(Unsupported):
        encode_op(op, [x] * n, tt(x), arg_dtypes=[dtype] * n)


TESTED_OPS = (
    {c[0] for c in UNARY_FLOAT} | {c[0] for c in BINARY_FLOAT} | {c[0] for c in INT_BINARY}
    | {"relax.logical_and", "relax.logical_or", "relax.logical_xor", "relax.logical_not",
       "relax.bitwise_not", "relax.where", "relax.clip", "relax.astype", "relax.nn.prelu"}
)
