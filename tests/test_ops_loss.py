"""Conformance of the loss encoders (tvtv/encode/ops/loss.py) with numpy references.

Semantics checked (see loss.py): nll_loss is PyTorch's NLLLoss as Relax documents it,
l = -p[n, t, ..] * w[t], +0.0 for an ignored target, "sum" = sum(l), "mean" = sum(l) /
sum(w[t] of the non-ignored targets) (0/0 = NaN when all are ignored), a target outside
[0, C) other than ignore_index is UB; cross_entropy_with_logits = -sum(x * y) / N (N the
batch for ndim >= 2); dropout is its inference semantics (data, ones).
Sums are uninterpreted: `eval_folded` against a left-fold reference, numpy's float64 result
admitted with `exact=False`, `exact=True` where the result is fixed. The references are
checked against the TVM VM, and the encoders against TVM's LegalizeOps through `tvtv.verify`
(with TVM's findings pinned: the legalized nll_loss reads predictions[n, ignore_index] out
of bounds, and computes (0 - p) * w, so a zero loss element is +0.0 where -p * w is -0.0).
"""
from __future__ import annotations

import numpy as np
import pytest
import z3

import tvtv
import tvtv.encode.ops.loss  # noqa: F401  (registers the encoders)
from tests.test_ops_linalg import (DENORM, FMAX, INF, NAN, abstract, call_module, eval_folded,
                                   fold, rand, run_tvm, run_vm, special, tvm_call,
                                   typed_module)
from tvtv.encode.evaluate import agrees, arrays_match, encode_op, eval_op
from tvtv.errors import Unsupported
from tvtv.ir import tvm_bridge
from tvtv.ir.program import TensorType, TupleType

f32, f16 = np.float32, np.float16
SPECIALS = [0.0, -0.0, INF, -INF, NAN, FMAX, -FMAX, DENORM, 1.5, -2.0]


def O():
    from tvm.relax import op
    return op


# -- nll_loss ---------------------------------------------------------------------------------

def nll_make(weighted: bool, **attrs):
    if weighted:
        return lambda x, t, w: O().nn.nll_loss(x, t, w, **attrs)
    return lambda x, t: O().nn.nll_loss(x, t, **attrs)


def nll_type(x: np.ndarray, t: np.ndarray, w: np.ndarray | None, **attrs):
    tys = [(x.shape, str(x.dtype)), (t.shape, str(t.dtype))]
    if w is not None:
        tys.append((w.shape, str(w.dtype)))
    return tvm_call(nll_make(w is not None, **attrs), *tys)


def nll_terms(x: np.ndarray, t: np.ndarray, w: np.ndarray | None, ignore: int):
    """(loss terms, weight terms) in the targets' row-major order, in x's dtype."""
    typ = x.dtype.type
    loss, wts = [], []
    for ix in np.ndindex(*t.shape):
        c = int(t[ix])
        if c == ignore:
            loss.append(typ(0.0))
            wts.append(typ(0.0))
            continue
        wc = typ(1.0) if w is None else w[c]
        p = x[c] if x.ndim == 1 else x[(ix[0], c) + ix[1:]]
        with np.errstate(all="ignore"):
            loss.append(typ(typ(-p) * wc))
        wts.append(wc)
    return loss, wts


def ref_nll(x, t, w=None, reduction="mean", ignore_index=-100) -> np.ndarray:
    """PyTorch's NLLLoss: -p * w per element (+0.0 where ignored), left-fold sums."""
    typ = x.dtype.type
    loss, wts = nll_terms(x, t, w, ignore_index)
    if reduction == "none":
        return np.array(loss, dtype=x.dtype).reshape(t.shape)
    total = fold(loss, x.dtype)
    if reduction == "mean":
        with np.errstate(all="ignore"):
            total = typ(total / fold(wts, x.dtype))
    return np.array(total, dtype=x.dtype)


def ref_nll_f64(x, t, w=None, reduction="mean", ignore_index=-100) -> np.ndarray:
    """The same in float64, rounded once at the end (numpy's/PyTorch's precise result)."""
    out = ref_nll(x.astype(np.float64), t, None if w is None else w.astype(np.float64),
                  reduction, ignore_index)
    return out.astype(x.dtype)


def targets(shape, C, seed, ignore=None, dtype="int64"):
    rng = np.random.default_rng(seed)
    t = rng.integers(0, C, size=shape)
    if ignore is not None and t.size:
        t.reshape(-1)[rng.random(t.size) < 0.4] = ignore
    return np.asarray(t, dtype=dtype)


NLL_SHAPES = [((3, 4), (3,)), ((4,), ()), ((2, 3, 2), (2, 2)), ((2, 3, 2, 2), (2, 2, 2)),
              ((1, 1), (1,))]


def nll_data(xs, ts, seed, weighted, ignore, dtype=f32, tdtype="int64", values=None):
    C = xs[0] if len(xs) == 1 else xs[1]
    x = rand(xs, seed, dtype) if values is None else special(xs, seed, values).astype(dtype)
    t = targets(ts, C, seed, ignore, tdtype)
    w = (np.abs(rand((C,), seed + 7, dtype)) + dtype(0.25)).astype(dtype) if weighted else None
    return x, t, w


@pytest.mark.parametrize("xs,ts", NLL_SHAPES)
@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
@pytest.mark.parametrize("weighted", [False, True])
def test_nll_loss_folded(xs, ts, reduction, weighted):
    for seed, ignore in ((0, None), (1, -100), (2, 1)):
        attrs = {"reduction": reduction} | ({} if ignore is None else {"ignore_index": ignore})
        x, t, w = nll_data(xs, ts, seed, weighted, ignore)
        args = [x, t] + ([w] if weighted else [])
        ty, tattrs = nll_type(x, t, w, **attrs)
        want = ref_nll(x, t, w, reduction, tattrs["ignore_index"])
        if reduction == "mean" and ignore is not None and np.all(t == ignore):
            assert np.isnan(want)
        assert arrays_match(eval_folded("relax.nn.nll_loss", args, ty, tattrs), want), (x, t, w)


@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
@pytest.mark.parametrize("weighted", [False, True])
def test_nll_loss_specials_folded(reduction, weighted):
    for seed in range(4):
        x, t, w = nll_data((3, 4, 2), (3, 2), seed, weighted, -100, values=SPECIALS)
        if weighted:
            w = special((4,), seed + 3, SPECIALS)
        args = [x, t] + ([w] if weighted else [])
        ty, attrs = nll_type(x, t, w, reduction=reduction)
        want = ref_nll(x, t, w, reduction)
        assert arrays_match(eval_folded("relax.nn.nll_loss", args, ty, attrs), want)


def test_nll_loss_none_is_exact_on_specials():
    """No sum: every element is forced, in the IEEE and the abstract model; -p * w keeps the
    sign of a zero (p = +0.0, w = 1 gives -0.0) and an ignored element is +0.0 even where
    the prediction there is NaN."""
    x = np.array([[0.0, -0.0, NAN], [INF, FMAX, 1.5], [NAN, NAN, NAN]], f32)
    t = np.array([0, 1, -100])
    ty, attrs = nll_type(x, t, None, reduction="none")
    want = np.array([-0.0, -FMAX, 0.0], f32)
    assert arrays_match(ref_nll(x, t, None, "none"), want)
    for model in (None, abstract()):
        assert agrees("relax.nn.nll_loss", [x, t], ty, [want], attrs, model=model, exact=True)
    assert not agrees("relax.nn.nll_loss", [x, t], ty, [np.abs(want)], attrs, exact=False)
    w = np.array([INF, 0.0, 2.0], f32)
    tyw, attrsw = nll_type(x, t, w, reduction="none")
    wantw = np.array([NAN, -0.0, 0.0], f32)          # -0.0 * inf = NaN; -FMAX * 0 = -0.0
    assert arrays_match(ref_nll(x, t, w, "none"), wantw)
    assert agrees("relax.nn.nll_loss", [x, t, w], tyw, [wantw], attrsw, exact=True)


@pytest.mark.parametrize("weighted", [False, True])
def test_nll_loss_all_ignored_mean_is_nan(weighted):
    """Every target ignored: "mean" is 0/0 = NaN (PyTorch; TVM's VM too), "sum" is +0.0."""
    x = rand((3, 4), 5)
    t = np.full((3,), -100)
    w = np.ones(4, f32) if weighted else None
    args = [x, t] + ([w] if weighted else [])
    for reduction, want in (("mean", NAN), ("sum", 0.0)):
        ty, attrs = nll_type(x, t, w, reduction=reduction)
        want = np.array(want, f32)
        for model in (None, abstract()):
            assert agrees("relax.nn.nll_loss", args, ty, [want], attrs, model=model, exact=True)
        assert arrays_match(run_tvm(nll_make(weighted, reduction=reduction), *args), want)
    ty, attrs = nll_type(x, t, w, reduction="mean")
    assert not agrees("relax.nn.nll_loss", args, ty, [np.array(0.0, f32)], attrs, exact=False)


@pytest.mark.parametrize("xs,ts", [((3, 4), (3,)), ((2, 3, 2), (2, 2)), ((5,), ())])
@pytest.mark.parametrize("reduction", ["sum", "mean"])
@pytest.mark.parametrize("weighted", [False, True])
def test_nll_loss_admits_numpy_and_rejects_wrong(xs, ts, reduction, weighted):
    """numpy's float64 result (rounded) is one value the unordered sums may take. A sum of
    ordinary terms is uninterpreted (any finite value is admitted), so wrong expectations are
    rejected through the folded evaluation (wrong class, wrong divisor, sign) and where the
    result is fixed (a NaN selected prediction)."""
    x, t, w = nll_data(xs, ts, 3, weighted, -100)
    if np.all(t == -100):
        t.reshape(-1)[0] = 0
    args = [x, t] + ([w] if weighted else [])
    ty, attrs = nll_type(x, t, w, reduction=reduction)
    want = ref_nll_f64(x, t, w, reduction)
    for model in (None, abstract()):
        # 60 s: what is asserted is that the value is admitted, not how fast. The IEEE query
        # of the (3, 4) mean case took 0.8, 1.4 and 7.2 s in one process alone and passed the
        # 20 s default once under CI's load (unknown, so False; 2026-11-29)
        assert agrees("relax.nn.nll_loss", args, ty, [want], attrs, model=model, exact=False,
                      timeout_ms=60000)
    got = eval_folded("relax.nn.nll_loss", args, ty, attrs)
    assert arrays_match(got, ref_nll(x, t, w, reduction))
    C = xs[0] if len(xs) == 1 else xs[1]
    t2 = np.where(t == -100, t, (t + 1) % C)
    wrongs = [ref_nll(x, t2, w, reduction), -ref_nll(x, t, w, reduction)]
    if reduction == "mean":
        wrongs.append(ref_nll(x, t, w, "sum"))
    for wrong in wrongs:
        if not np.isclose(wrong, got):
            assert not arrays_match(got, wrong)
    # a NaN selected prediction fixes the result to NaN
    k = next(ix for ix in np.ndindex(*t.shape) if t[ix] != -100)
    xi = x.copy()
    xi[(t[k],) if x.ndim == 1 else (k[0], int(t[k])) + k[1:]] = NAN
    argsi = [xi, t] + ([w] if weighted else [])
    assert agrees("relax.nn.nll_loss", argsi, ty, [np.array(NAN, f32)], attrs, exact=True)
    for model in (None, abstract()):
        assert not agrees("relax.nn.nll_loss", argsi, ty, [want], attrs, model=model,
                          exact=False)


def test_nll_loss_float16_and_int32_targets():
    x, t, w = nll_data((3, 5), (3,), 4, True, 2, dtype=f16, tdtype="int32")
    for reduction in ("none", "sum", "mean"):
        ty, attrs = nll_type(x, t, w, reduction=reduction, ignore_index=2)
        assert ty.dtype == "float16"
        want = ref_nll(x, t, w, reduction, 2)
        got = eval_folded("relax.nn.nll_loss", [x, t, w], ty, attrs)
        assert arrays_match(got, want)
        vm = run_tvm(nll_make(True, reduction=reduction, ignore_index=2), x, t, w)
        assert np.allclose(vm, want, rtol=2e-3, atol=1e-3, equal_nan=True)


def test_nll_loss_out_of_range_target_is_ub():
    """A target outside [0, C) that is not ignore_index is UB (PyTorch raises; TVM's VM
    reads out of bounds and returned 0.0 for targets 5, -1 and 4 with C = 4)."""
    x = rand((3, 4), 0)
    ty, attrs = nll_type(x, np.zeros(3, np.int64), None, reduction="sum")
    for t, ub in (([0, 3, -100], False), ([4, 0, 1], True), ([-1, 0, 1], True),
                  ([0, -100, 5], True), ([-100, -100, -100], False)):
        _, ctx = encode_op("relax.nn.nll_loss", [x, np.array(t, np.int64)], ty, attrs)
        defined = z3.simplify(ctx.well_defined())
        assert z3.is_false(defined) if ub else z3.is_true(defined), t
    # ignore_index = 2 (in range) is ignored; -100 is then out of range
    ty2, attrs2 = nll_type(x, np.zeros(3, np.int64), None, reduction="sum", ignore_index=2)
    _, ctx = encode_op("relax.nn.nll_loss", [x, np.array([2, 2, 0])], ty2, attrs2)
    assert z3.is_true(z3.simplify(ctx.well_defined()))
    _, ctx = encode_op("relax.nn.nll_loss", [x, np.array([-100, 2, 0])], ty2, attrs2)
    assert z3.is_false(z3.simplify(ctx.well_defined()))


@pytest.mark.parametrize("xs,ts", NLL_SHAPES)
@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
@pytest.mark.parametrize("weighted", [False, True])
def test_nll_loss_reference_matches_tvm_vm(xs, ts, reduction, weighted):
    """The reference reads the attributes as TVM does (values agree within rounding; zero
    signs are compared separately below)."""
    for seed, ignore in ((0, None), (1, -100), (2, 1)):
        attrs = {"reduction": reduction} | ({} if ignore is None else {"ignore_index": ignore})
        x, t, w = nll_data(xs, ts, seed, weighted, ignore)
        args = [x, t] + ([w] if weighted else [])
        vm = run_tvm(nll_make(weighted, **attrs), *args)
        want = ref_nll(x, t, w, reduction, -100 if ignore is None else ignore)
        assert vm.shape == want.shape
        assert np.allclose(vm, want, rtol=1e-5, atol=1e-6, equal_nan=True), (vm, want)


def test_nll_loss_tvm_zero_sign_differs():
    """Finding: TVM computes the loss term as (0.0 - p) * w, so p = +0.0 gives +0.0 on the
    VM where the documented -p * w (and PyTorch) give -0.0."""
    x = np.array([[0.0, 1.0], [2.0, -0.0]], f32)
    t = np.array([0, 1])
    vm = run_tvm(nll_make(False, reduction="none"), x, t)
    want = ref_nll(x, t, None, "none")
    assert arrays_match(want, np.array([-0.0, 0.0], f32))
    assert arrays_match(vm, np.array([0.0, 0.0], f32))
    ty, attrs = nll_type(x, t, None, reduction="none")
    assert agrees("relax.nn.nll_loss", [x, t], ty, [want], attrs, exact=True)
    assert not agrees("relax.nn.nll_loss", [x, t], ty, [vm], attrs, exact=False)


def test_nll_loss_unsupported():
    x = rand((3, 4), 0)
    ty, attrs = nll_type(x, np.zeros(3, np.int64), None, reduction="sum")
    with pytest.raises(Unsupported, match="nll_loss"):
        encode_op("relax.nn.nll_loss", [x, np.zeros(3, np.int64)], ty,
                  attrs | {"reduction": "batchmean"})
    with pytest.raises(Unsupported, match="nll_loss"):
        encode_op("relax.nn.nll_loss", [x, np.zeros(2, np.int64)], ty, attrs)
    with pytest.raises(Unsupported, match="nll_loss"):
        encode_op("relax.nn.nll_loss", [x.astype(np.int32), np.zeros(3, np.int64)], ty, attrs)


# -- cross_entropy_with_logits ----------------------------------------------------------------

def ce_type(shape, dtype="float32"):
    return tvm_call(lambda x, y: O().nn.cross_entropy_with_logits(x, y),
                    (shape, dtype), (shape, dtype))


def ref_ce(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """-(left fold of x * y) / N in x's dtype (N = batch for ndim >= 2)."""
    typ = x.dtype.type
    with np.errstate(all="ignore"):
        prods = [typ(a * b) for a, b in zip(x.reshape(-1), y.reshape(-1))]
        total = typ(-fold(prods, x.dtype))
        if x.ndim >= 2:
            total = typ(total / typ(x.shape[0]))
    return np.array(total, dtype=x.dtype)


CE_SHAPES = [(2, 3), (4,), (1, 5), (2, 2, 3), (3, 1)]


@pytest.mark.parametrize("shape", CE_SHAPES)
def test_cross_entropy_folded_and_vm(shape):
    for seed in range(3):
        x, y = rand(shape, seed), rand(shape, seed + 10)
        ty, attrs = ce_type(shape)
        assert ty == TensorType((), "float32")
        want = ref_ce(x, y)
        assert arrays_match(eval_folded("relax.nn.cross_entropy_with_logits", [x, y], ty, attrs),
                            want)
        vm = run_tvm(lambda a, b: O().nn.cross_entropy_with_logits(a, b), x, y)
        assert np.allclose(vm, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("shape", [(2, 3), (5,)])
def test_cross_entropy_specials_folded(shape):
    for seed in range(5):
        x, y = special(shape, seed, SPECIALS), special(shape, seed + 20, SPECIALS)
        ty, attrs = ce_type(shape)
        assert arrays_match(eval_folded("relax.nn.cross_entropy_with_logits", [x, y], ty, attrs),
                            ref_ce(x, y))


@pytest.mark.parametrize("shape", [(2, 3), (4,), (2, 2, 2)])
def test_cross_entropy_admits_numpy_and_rejects_wrong(shape):
    """numpy's float64 result is admitted; the folded evaluation rejects the formula without
    the negation or the division by N; a NaN term fixes the result to NaN."""
    x, y = rand(shape, 1), rand(shape, 2)
    ty, attrs = ce_type(shape)
    x64, y64 = x.astype(np.float64), y.astype(np.float64)
    want = np.array(-np.sum(x64 * y64) / (shape[0] if len(shape) >= 2 else 1), f32)
    for model in (None, abstract()):
        assert agrees("relax.nn.cross_entropy_with_logits", [x, y], ty, [want], attrs,
                      model=model, exact=False)
    got = eval_folded("relax.nn.cross_entropy_with_logits", [x, y], ty, attrs)
    ref = ref_ce(x, y)
    assert arrays_match(got, ref)
    assert not arrays_match(got, -ref)
    if len(shape) >= 2:
        assert not arrays_match(got, np.array(ref * f32(shape[0]), f32))
    xn = x.copy()
    xn.reshape(-1)[0] = NAN
    for model in (None, abstract()):
        assert not agrees("relax.nn.cross_entropy_with_logits", [xn, y], ty, [want], attrs,
                          model=model, exact=False)


def test_cross_entropy_fixed_results_exact():
    """NaN terms, inf * 0 and +inf with -inf fix the sum (a lone inf does not: finite
    terms may overflow to the other infinity first in some order); all-zero products give -(+0.0) = -0.0 (the negated sum,
    as TVM computes it: measured -0.0 on the VM)."""
    cases = [
        (np.array([[1.0, NAN], [2.0, 3.0]], f32), np.ones((2, 2), f32), NAN),
        (np.array([[INF, -INF], [2.0, 3.0]], f32), np.ones((2, 2), f32), NAN),
        (np.array([[INF, 1.0], [2.0, 3.0]], f32), np.array([[0.0, 1.0], [1.0, 1.0]], f32), NAN),
        (rand((2, 2), 0), np.zeros((2, 2), f32), -0.0),
    ]
    for x, y, want in cases:
        ty, attrs = ce_type(x.shape)
        want = np.array(want, f32)
        for model in (None, abstract()):
            assert agrees("relax.nn.cross_entropy_with_logits", [x, y], ty, [want], attrs,
                          model=model, exact=True), (x, y)
        vm = run_tvm(lambda a, b: O().nn.cross_entropy_with_logits(a, b), x, y)
        assert arrays_match(vm, want), (vm, want)
    x, y = rand((2, 2), 0), np.zeros((2, 2), f32)
    ty, attrs = ce_type((2, 2))
    assert not agrees("relax.nn.cross_entropy_with_logits", [x, y], ty, [np.array(0.0, f32)],
                      attrs, exact=False)


def test_cross_entropy_float16():
    x, y = rand((2, 4), 3, f16), rand((2, 4), 4, f16)
    ty, attrs = ce_type((2, 4), "float16")
    assert ty == TensorType((), "float16")
    want = ref_ce(x, y)
    assert arrays_match(eval_folded("relax.nn.cross_entropy_with_logits", [x, y], ty, attrs), want)
    vm = run_tvm(lambda a, b: O().nn.cross_entropy_with_logits(a, b), x, y)
    assert np.allclose(vm, want, rtol=2e-3, atol=1e-3)


def test_cross_entropy_unsupported():
    ty, attrs = ce_type((2, 3))
    with pytest.raises(Unsupported, match="cross_entropy_with_logits"):
        encode_op("relax.nn.cross_entropy_with_logits", [rand((2, 3), 0), rand((3, 2), 0)], ty, attrs)
    with pytest.raises(Unsupported, match="cross_entropy_with_logits"):
        encode_op("relax.nn.cross_entropy_with_logits",
                  [np.ones((2, 3), np.int32), np.ones((2, 3), np.int32)], ty, attrs)


# -- dropout ----------------------------------------------------------------------------------

def dropout_type(shape, dtype="float32", rate=0.5):
    from tvm import relax

    from tvtv.ir.relax_reader import convert_attrs, convert_type
    p = relax.Var("p0", relax.TensorType(list(shape), dtype))
    bb = relax.BlockBuilder()
    with bb.function("main", [p]):
        call = bb.normalize(O().nn.dropout(p, rate))
        ty, attrs = convert_type(call.ty), convert_attrs(call.attrs)
        bb.emit_func_output(p)
    assert isinstance(ty, TupleType), ty
    return ty, attrs


def run_tvm_tuple(make, *arrays):
    return [r.numpy() for r in run_vm(call_module(make, *arrays), *arrays)]


@pytest.mark.parametrize("shape,dtype,rate", [((2, 3), "float32", 0.5), ((4,), "float16", 0.1),
                                               ((1, 2, 2), "float32", 0.0),
                                               ((3, 2), "float32", 0.9)])
def test_dropout_is_inference_identity(shape, dtype, rate):
    np_dt = np.dtype(dtype)
    with np.errstate(over="ignore"):
        xs = [rand(shape, 0, np_dt), special(shape, 1, SPECIALS).astype(np_dt)]
    for x in xs:
        ty, attrs = dropout_type(shape, dtype, rate)
        want = [x, np.ones(shape, np_dt)]
        got = eval_op("relax.nn.dropout", [x], ty, attrs)
        assert all(arrays_match(g, w) for g, w in zip(got, want))
        for model in (None, abstract()):
            assert agrees("relax.nn.dropout", [x], ty, want, attrs, model=model, exact=True)
        vm = run_tvm_tuple(lambda a: O().nn.dropout(a, rate), x)
        assert all(arrays_match(g, w) for g, w in zip(vm, want)), vm
        # broken twins: a dropped mask, and the training scaling 1 / (1 - rate)
        assert not agrees("relax.nn.dropout", [x], ty, [x, np.zeros(shape, np_dt)], attrs,
                          exact=False)
        with np.errstate(over="ignore"):
            scaled = (x.astype(np.float64) / (1 - rate) if rate else x + 1).astype(np_dt)
        if not arrays_match(scaled, x):
            assert not agrees("relax.nn.dropout", [x], ty, [scaled, want[1]], attrs, exact=False)


# -- refinement through TVM's LegalizeOps -----------------------------------------------------

module = typed_module


def legalized(mod):
    from tvm import relax
    return relax.transform.LegalizeOps()(mod)


X23, T2, W3 = ((2, 3), "float32"), ((2,), "int64"), ((3,), "float32")
PROVED = {
    "nll sum, ignore_index in range": (nll_make(False, reduction="sum", ignore_index=1), X23, T2),
    "nll mean weighted, ignore_index in range":
        (nll_make(True, reduction="mean", ignore_index=0), X23, T2, W3),
    "nll mean 1-D": (nll_make(False, reduction="mean", ignore_index=2), ((3,), "float32"),
                     ((), "int64")),
    "cross_entropy 2-D": (lambda x, y: O().nn.cross_entropy_with_logits(x, y), X23, X23),
    "cross_entropy 1-D": (lambda x, y: O().nn.cross_entropy_with_logits(x, y),
                          ((3,), "float32"), ((3,), "float32")),
    "cross_entropy f16": (lambda x, y: O().nn.cross_entropy_with_logits(x, y),
                          ((2, 2), "float16"), ((2, 2), "float16")),
    "dropout": (lambda x: O().nn.dropout(x, 0.3), X23),
    "dropout f16": (lambda x: O().nn.dropout(x, 0.5), ((2, 2), "float16")),
}


@pytest.mark.parametrize("name", sorted(PROVED))
def test_legalize_refines_spec(name):
    make, *tys = PROVED[name]
    mod = module(make, *tys)
    (r,) = tvtv.verify(mod, legalized(mod), timeout=20).results
    assert r.verdict == "proved", r.to_dict()


@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
def test_legalized_nll_loss_reads_out_of_bounds_for_ignored_targets(reduction):
    """Finding: TVM's legalized nll_loss computes
    `Select(t != ignore_index, (0 - p[n, t]) * w[t], 0)`; TIR's Select evaluates both
    operands, so an ignored target (default ignore_index = -100) loads p[n, -100] and
    w[-100] out of bounds, where the specification is defined (+0.0)."""
    mod = module(nll_make(True, reduction=reduction), X23, T2, W3)
    (r,) = tvtv.verify(mod, legalized(mod), timeout=20, confirm_vm=False).results
    assert r.verdict == "counterexample", r.to_dict()
    assert r.counterexample.kind == "ub" and "out of bounds" in r.reason, r.to_dict()
    assert -100 in r.to_dict()["inputs"]["p1"]


def test_legalized_nll_loss_none_zero_sign():
    """Finding: with an in-range ignore_index (no out-of-bounds read), reduction "none"
    still differs: TVM's (0.0 - p) * w is +0.0 where -p * w is -0.0 (p = +0.0)."""
    mod = module(nll_make(False, reduction="none", ignore_index=1), X23, T2)
    (r,) = tvtv.verify(mod, legalized(mod), timeout=20, confirm_vm=False).results
    assert r.verdict == "counterexample", r.to_dict()
    cex = r.counterexample
    assert cex.kind == "value"
    assert str(cex.source_value) == "-0.0" and str(cex.target_value) == "0.0", r.to_dict()


MUTATIONS = {
    "nll: 0 - p becomes 1 - p": ("nll sum, ignore_index in range",
                                 "(T.float32(0.0) - p0", "(T.float32(1.0) - p0"),
    "nll: ignored weight 0 becomes 1": ("nll mean weighted, ignore_index in range",
                                        "T.int64(0), p2[p1[v_ax0]], T.float32(0.0))",
                                        "T.int64(0), p2[p1[v_ax0]], T.float32(1.0))"),
    "nll: mean divides by the sum": ("nll mean weighted, ignore_index in range",
                                     "nll_loss_red[()] / nll_loss_red_1[()]",
                                     "nll_loss_red[()] * nll_loss_red_1[()]"),
    "cross_entropy: negation dropped": ("cross_entropy 2-D", "T.float32(-1.0)", "T.float32(1.0)"),
    "cross_entropy: wrong batch": ("cross_entropy 2-D", "/ T.float32(2.0)", "/ T.float32(3.0)"),
    "dropout: mask of zeros": ("dropout", "= T.float32(1.0)", "= T.float32(0.0)"),
    "dropout: scaled output": ("dropout", "compute[v_i0, v_i1] = p0[v_i0, v_i1]",
                               "compute[v_i0, v_i1] = p0[v_i0, v_i1] * T.float32(2.0)"),
}


@pytest.mark.parametrize("name", sorted(MUTATIONS))
def test_broken_legalized_loss_is_refuted(name):
    case, old, new = MUTATIONS[name]
    make, *tys = PROVED[case]
    mod = module(make, *tys)
    text = legalized(mod).script()
    assert text.count(old) == 1, f"mutation {name!r} does not apply:\n{text}"
    broken = tvm_bridge.parse_script(text.replace(old, new))
    (r,) = tvtv.verify(mod, broken, timeout=20).results
    assert r.verdict == "counterexample", r.to_dict()
