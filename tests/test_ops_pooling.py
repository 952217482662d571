"""Conformance of the pooling encoders (tvtv/encode/ops/pooling.py) with numpy.

Semantics checked (PyTorch conventions, see pooling.py): max pooling pads with -inf, which
never wins (TVM's legalization uses -FLT_MAX: an all -inf window must come out -inf, not
-FLT_MAX); average pooling sums the zero-padded window and divides by the number of taps
in the input (count_include_pad=False) or in the padded input (True), never counting
ceil_mode overhang; adaptive average pooling averages [floor(i*L/O), ceil((i+1)*L/O)).
Max pooling is exact, so the IEEE encoding is evaluated directly and both models must force
numpy's result. Average pooling contains uninterpreted sums: `eval_folded` (see
test_ops_linalg.py) against a left-fold reference, `exact=True` where the result is fixed,
numpy's (float64, rounded) result admitted on random values in the IEEE and the abstract
model, and wrong expectations.
Result types and normalized attributes come from TVM.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

import tvtv.encode.ops.pooling  # noqa: F401  (registers the encoders)
from tests.test_ops_linalg import (DENORM, FMAX, INF, NAN, abstract, eval_folded, fold, rand,
                                   run_tvm, special, tvm_call)
from tvtv.encode.evaluate import agrees, arrays_match, eval_op
from tvtv.errors import Unsupported
from tvtv.ir.program import TensorType

f32 = np.float32
SPECIALS_POOL = [0.0, -0.0, INF, -INF, NAN, FMAX, -FMAX, DENORM, 1.5, -2.0]


def pool_type(op: str, xs, dtype="float32", **attrs) -> tuple[TensorType, dict]:
    from tvm.relax import op as O
    fn = getattr(O.nn, op)
    return tvm_call(lambda x: fn(x, **attrs), (xs, dtype))


def from_canonical(a: np.ndarray, layout: str, canonical: str) -> np.ndarray:
    return np.transpose(a, [canonical.index(c) for c in layout])


def windows(x: np.ndarray, out_shape, attrs: dict):
    """For each canonical output index: the window's taps in row-major order, each as
    (in_input, in_padded, value)."""
    nd = x.ndim - 2
    k, s, d = attrs["pool_size"], attrs["strides"], attrs["dilation"]
    lo, hi = attrs["padding"][:nd], attrs["padding"][nd:]
    in_sz = x.shape[2:]
    for ix in np.ndindex(*out_shape):
        nb, c, *o = ix
        taps = []
        for kk in np.ndindex(*k):
            p = [oo * ss + t * dd - a for oo, ss, t, dd, a in zip(o, s, kk, d, lo)]
            inside = all(0 <= pp < i for pp, i in zip(p, in_sz))
            padded = all(-a <= pp < i + b for pp, a, i, b in zip(p, lo, in_sz, hi))
            taps.append((inside, padded, x[(nb, c, *p)] if inside else None))
        yield ix, taps


def ref_max_pool(x: np.ndarray, out_shape, attrs: dict) -> np.ndarray:
    """Left fold of numpy.maximum over the window, padding = -inf (integers: the minimum)."""
    low = -np.inf if np.issubdtype(x.dtype, np.floating) else np.iinfo(x.dtype).min
    out = np.zeros(out_shape, x.dtype)
    for ix, taps in windows(x, out_shape, attrs):
        vals = [v if inside else x.dtype.type(low) for inside, _, v in taps]
        acc = vals[0]
        for v in vals[1:]:
            acc = np.maximum(acc, v)
        out[ix] = acc
    return out


def ref_avg_pool(x: np.ndarray, out_shape, attrs: dict) -> np.ndarray:
    """Left fold from +0.0 over the zero-padded window, divided by the count (NaN if 0)."""
    t = x.dtype.type
    out = np.zeros(out_shape, x.dtype)
    include = attrs["count_include_pad"]
    for ix, taps in windows(x, out_shape, attrs):
        total = fold([v if inside else t(0.0) for inside, _, v in taps], x.dtype)
        count = sum(padded if include else inside for inside, padded, _ in taps)
        with np.errstate(all="ignore"):
            out[ix] = t(total / t(count)) if count else t(NAN)
    return out


def adaptive_windows(length: int, out: int) -> list[range]:
    return [range(i * length // out, -(-(i + 1) * length // out)) for i in range(out)]


def adaptive_terms(x: np.ndarray, out_sz):
    """For each output index of adaptive pooling to `out_sz`: its window's elements in
    row-major order."""
    wins = [adaptive_windows(i, o) for i, o in zip(x.shape[2:], out_sz)]
    for nb, c, *o in np.ndindex(*x.shape[:2], *out_sz):
        rngs = [w[oo] for w, oo in zip(wins, o)]
        yield (nb, c, *o), [x[(nb, c, *p)] for p in np.ndindex(*[len(r) for r in rngs])
                            for p in [tuple(r[q] for r, q in zip(rngs, p))]]


def ref_adaptive_avg(x: np.ndarray, out_sz) -> np.ndarray:
    t = x.dtype.type
    out = np.zeros(x.shape[:2] + tuple(out_sz), x.dtype)
    for ix, terms in adaptive_terms(x, out_sz):
        with np.errstate(all="ignore"):
            out[ix] = t(fold(terms, x.dtype) / t(len(terms)))
    return out


# -- max pooling: exact ------------------------------------------------------------------------

MAX_CASES = [
    ("max_pool2d", (1, 2, 4, 4), dict(pool_size=2)),
    ("max_pool2d", (1, 1, 5, 5), dict(pool_size=3, strides=2, padding=1)),
    ("max_pool2d", (1, 1, 5, 4), dict(pool_size=(2, 3), strides=2, padding=(0, 1, 1, 0), ceil_mode=True)),
    ("max_pool2d", (2, 1, 5, 5), dict(pool_size=2, dilation=2, padding=(1, 1))),
    ("max_pool2d", (1, 1, 2, 2), dict(pool_size=2, padding=2)),             # all-padding windows
    ("max_pool1d", (1, 2, 6), dict(pool_size=3, strides=2, padding=1, ceil_mode=True)),
    ("max_pool3d", (1, 1, 3, 3, 2), dict(pool_size=2, padding=(1, 0, 0, 0, 1, 1))),
]


@pytest.mark.parametrize("op,xs,kw", MAX_CASES)
@pytest.mark.parametrize("values", ["random", "special"])
def test_max_pool_exact(op, xs, kw, values):
    ty, attrs = pool_type(op, xs, **kw)
    x = rand(xs, 1) if values == "random" else special(xs, 2, SPECIALS_POOL)
    want = ref_max_pool(x, ty.shape, attrs)
    got = eval_op(f"relax.nn.{op}", [x], ty, attrs)[0]
    assert arrays_match(got, want)
    for model in (None, abstract()):
        assert agrees(f"relax.nn.{op}", [x], ty, [want], attrs, model=model, exact=True)
    bad = want.copy()
    flat = bad.reshape(-1)
    flat[0] = 1.0 if math.isnan(flat[0]) else NAN
    assert not agrees(f"relax.nn.{op}", [x], ty, [bad], attrs, model=abstract(), exact=False)


def test_max_pool_padding_never_wins():
    """An all -inf window (with padding) is -inf, not TVM's -FLT_MAX; NaN propagates."""
    x = np.array([[[[-INF, -INF, 1.0], [-INF, -INF, NAN], [2.0, -FMAX, 3.0]]]], f32)
    ty, attrs = pool_type("max_pool2d", x.shape, pool_size=2, strides=2, padding=1)
    want = np.array([[[[-INF, 1.0], [2.0, NAN]]]], f32)
    assert arrays_match(eval_op("relax.nn.max_pool2d", [x], ty, attrs)[0], want)
    for model in (None, abstract()):
        assert agrees("relax.nn.max_pool2d", [x], ty, [want], attrs, model=model, exact=True)
        tvm_like = want.copy()
        tvm_like[0, 0, 0, 0] = -FMAX
        assert not agrees("relax.nn.max_pool2d", [x], ty, [tvm_like], attrs, model=model, exact=False)


def test_max_pool_signed_zero_tie_follows_numpy_fold():
    """Ties keep the later element (numpy.maximum's fold, reduction.reduce_fold)."""
    x = np.array([[[[0.0, -0.0], [-0.0, 0.0]]]], f32)
    ty, attrs = pool_type("max_pool2d", x.shape, pool_size=(1, 2))
    want = np.array([[[[-0.0], [0.0]]]], f32)
    assert arrays_match(eval_op("relax.nn.max_pool2d", [x], ty, attrs)[0], want)
    assert not agrees("relax.nn.max_pool2d", [x], ty, [-want], attrs, exact=False)


def test_max_pool_nhwc_and_int8():
    xc = np.random.default_rng(0).integers(-128, 128, (1, 3, 4, 4)).astype(np.int8)
    x = np.ascontiguousarray(from_canonical(xc, "NHWC", "NCHW"))
    ty, attrs = pool_type("max_pool2d", x.shape, "int8", pool_size=3, strides=2, padding=1,
                          layout="NHWC")
    out_c = [ty.shape[0], ty.shape[3], ty.shape[1], ty.shape[2]]
    want = from_canonical(ref_max_pool(xc, out_c, attrs), "NHWC", "NCHW")
    got = eval_op("relax.nn.max_pool2d", [x], ty, attrs, ["int8"])[0]
    assert np.array_equal(got, want) and got.dtype == np.int8
    assert agrees("relax.nn.max_pool2d", [x], ty, [want], attrs, model=abstract(), exact=True,
                  arg_dtypes=["int8"])
    # integer padding is the dtype's minimum, so it never wins (zero padding would give 0)
    xm = np.full((1, 1, 1, 1), -100, np.int8)
    ty2, attrs2 = pool_type("max_pool2d", xm.shape, "int8", pool_size=2, padding=1)
    want2 = np.full((1, 1, 2, 2), -100, np.int8)
    assert arrays_match(eval_op("relax.nn.max_pool2d", [xm], ty2, attrs2, ["int8"])[0], want2)
    assert not agrees("relax.nn.max_pool2d", [xm], ty2, [np.zeros_like(want2)], attrs2,
                      exact=False, arg_dtypes=["int8"])


# -- average pooling -------------------------------------------------------------------------

AVG_CASES = [
    ("avg_pool2d", (1, 2, 4, 4), dict(pool_size=2)),
    ("avg_pool2d", (1, 1, 5, 5), dict(pool_size=3, strides=2, padding=1, count_include_pad=False)),
    ("avg_pool2d", (1, 1, 5, 5), dict(pool_size=3, strides=2, padding=1, count_include_pad=True)),
    ("avg_pool2d", (1, 1, 4, 4), dict(pool_size=3, strides=2, padding=1, ceil_mode=True, count_include_pad=True)),
    ("avg_pool2d", (1, 1, 4, 5), dict(pool_size=(2, 3), strides=(2, 1), padding=(1, 0, 0, 2), dilation=(1, 2),
                                      ceil_mode=True)),
    ("avg_pool2d", (1, 1, 2, 2), dict(pool_size=2, padding=2, count_include_pad=False)),  # empty windows
    ("avg_pool2d", (1, 1, 2, 2), dict(pool_size=2, padding=2, count_include_pad=True)),
    ("avg_pool1d", (1, 2, 6), dict(pool_size=3, strides=2, padding=1)),            # default: include pad
    ("avg_pool1d", (1, 1, 4), dict(pool_size=3, strides=2, padding=1, ceil_mode=True, count_include_pad=False)),
    ("avg_pool3d", (1, 1, 3, 3, 2), dict(pool_size=2, padding=(1, 0, 0, 0, 1, 1))),
]


@pytest.mark.parametrize("op,xs,kw", AVG_CASES)
@pytest.mark.parametrize("values", ["random", "special"])
def test_avg_pool_folded(op, xs, kw, values):
    ty, attrs = pool_type(op, xs, **kw)
    x = rand(xs, 1) if values == "random" else special(xs, 2, SPECIALS_POOL)
    want = ref_avg_pool(x, ty.shape, attrs)
    got = eval_folded(f"relax.nn.{op}", [x], ty, attrs)
    assert arrays_match(got, want)


def test_avg_pool_count_include_pad_matters():
    x = rand((1, 1, 3, 3), 4)
    for include in (False, True):
        ty, attrs = pool_type("avg_pool2d", x.shape, pool_size=2, padding=1, count_include_pad=include)
        got = eval_folded("relax.nn.avg_pool2d", [x], ty, attrs)
        other = ref_avg_pool(x, ty.shape, {**attrs, "count_include_pad": not include})
        assert arrays_match(got, ref_avg_pool(x, ty.shape, attrs))
        assert not arrays_match(got, other)


def test_avg_pool_fixed_results_exact():
    """pool_size 1 (x / 1 after +0.0 + x), NaN and inf windows and empty windows
    (count_include_pad=False: 0/0 = NaN) are fixed."""
    x = np.array([[[[NAN, 1.0, INF], [-INF, 2.0, -0.0], [INF, -INF, -INF]]]], f32)
    cases = [dict(pool_size=1, strides=1),
             dict(pool_size=2, strides=2, padding=(0, 0, 1, 1), ceil_mode=False)]
    wants = [np.where(x == 0, f32(0.0), x).astype(f32),     # -0.0 becomes +0.0
             np.array([[[[NAN, INF], [NAN, -INF]]]], f32)]
    # windows with one infinity among finite terms give that infinity or NaN (an overflow
    # first, in some summation order): admitted, not forced; NaN windows are forced
    for kw, want, exact in zip(cases, wants, (True, False)):
        ty, attrs = pool_type("avg_pool2d", x.shape, **kw)
        assert arrays_match(ref_avg_pool(x, ty.shape, attrs), want)
        for model in (None, abstract()):
            assert agrees("relax.nn.avg_pool2d", [x], ty, [want], attrs, model=model, exact=exact)
            bad = want.copy()
            bad[0, 0, 0, 1] = -bad[0, 0, 0, 1]
            assert not agrees("relax.nn.avg_pool2d", [x], ty, [bad], attrs, model=model, exact=False)
    xe = rand((1, 1, 1, 1), 5)
    ty, attrs = pool_type("avg_pool2d", xe.shape, pool_size=2, padding=2, count_include_pad=False)
    want = ref_avg_pool(xe, ty.shape, attrs)
    assert np.isnan(want[0, 0, 0, 0]) and not np.isnan(want[0, 0, 2, 2])
    nan_only = np.isnan(want)
    assert agrees("relax.nn.avg_pool2d", [xe], ty, [want], attrs, model=abstract(), exact=False)
    bad = want.copy()
    bad[nan_only] = 0.0                          # an empty window is NaN, not 0
    assert not agrees("relax.nn.avg_pool2d", [xe], ty, [bad], attrs, exact=False)


@pytest.mark.parametrize("op,xs,kw", [
    ("avg_pool2d", (1, 1, 3, 3), dict(pool_size=2, strides=2, padding=(0, 0, 1, 1), count_include_pad=False)),
    ("avg_pool1d", (1, 2, 4), dict(pool_size=3, strides=2, padding=1, ceil_mode=True)),
    ("adaptive_avg_pool2d", (1, 1, 3, 3), dict(output_size=(2, 1))),
])
@pytest.mark.parametrize("model", ["ieee", "abstract"])
def test_avg_pool_admits_numpy(op, xs, kw, model):
    """The float64 reference rounded to float32 is one value the unordered sums admit."""
    x = rand(xs, 6)
    ty, attrs = pool_type(op, xs, **kw)
    x64 = x.astype(np.float64)
    ref = ref_adaptive_avg(x64, ty.shape[2:]) if op.startswith("adaptive") else \
        ref_avg_pool(x64, ty.shape, attrs)
    want = ref.astype(f32)
    m = abstract() if model == "abstract" else None
    assert agrees(f"relax.nn.{op}", [x], ty, [want], attrs, model=m, exact=False)
    x[(0,) * x.ndim] = NAN
    assert not agrees(f"relax.nn.{op}", [x], ty, [want], attrs, model=m, exact=False)


# -- integer average pooling: relax.mean's semantics --------------------------------------------

I32_EXTREMES = [2**31 - 1, -2**31, 0, 1, -1, 3, -8, 2**30]


def ref_int_average(terms: list[int], count: int, dtype: np.dtype) -> int:
    """The sum wrapped to `dtype` (two's complement), divided truncating toward zero."""
    info = np.iinfo(dtype)
    total = (sum(int(t) for t in terms) - info.min) % (1 << info.bits) + info.min
    q = abs(total) // count
    return q if total >= 0 else -q


def ref_int_avg_pool(x: np.ndarray, out_shape, attrs: dict) -> np.ndarray:
    out = np.zeros(out_shape, x.dtype)
    include = attrs["count_include_pad"]
    for ix, taps in windows(x, out_shape, attrs):
        count = sum(padded if include else inside for inside, padded, _ in taps)
        out[ix] = ref_int_average([v for inside, _, v in taps if inside], count, x.dtype)
    return out


def ref_int_adaptive_avg(x: np.ndarray, out_sz) -> np.ndarray:
    out = np.zeros(x.shape[:2] + tuple(out_sz), x.dtype)
    for ix, terms in adaptive_terms(x, out_sz):
        out[ix] = ref_int_average(terms, len(terms), x.dtype)
    return out


INT_CASES = [
    ("avg_pool2d", (1, 1, 3, 3), dict(pool_size=2, padding=1, count_include_pad=False)),
    ("avg_pool2d", (1, 2, 4, 4), dict(pool_size=3, strides=2, padding=1, ceil_mode=True,
                                      count_include_pad=True)),
    ("avg_pool1d", (1, 1, 5), dict(pool_size=3, strides=2, padding=1)),
    ("avg_pool3d", (1, 1, 2, 3, 2), dict(pool_size=2, padding=(0, 1, 0, 1, 0, 1))),
    ("adaptive_avg_pool2d", (1, 3, 1, 4), dict(output_size=(1, 3))),
    ("adaptive_avg_pool1d", (1, 2, 7), dict(output_size=(3,))),
    ("adaptive_avg_pool3d", (1, 1, 3, 2, 3), dict(output_size=(2, 1, 2))),
]


def _int_input(shape, seed: int, values: str) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if values == "extremes":   # sums that wrap around int32
        return rng.choice(np.array(I32_EXTREMES, np.int64), size=shape).astype(np.int32)
    return rng.integers(-50, 50, size=shape).astype(np.int32)


@pytest.mark.parametrize("op,xs,kw", INT_CASES)
@pytest.mark.parametrize("values", ["small", "extremes"])
def test_int_average_pooling_matches_reference_and_tvm(op, xs, kw, values):
    """Integer averages wrap and truncate (relax.mean): forced on small and wrapping sums;
    TVM's compiled op gives the same values (its avg_pool returns them as int64: a finding,
    docs/findings.md); means off by one are rejected."""
    from tvm.relax import op as O
    x = _int_input(xs, 3, values)
    ty, attrs = pool_type(op, xs, "int32", **kw)
    assert ty.dtype == "int32"
    want = ref_int_adaptive_avg(x, ty.shape[2:]) if op.startswith("adaptive") else \
        ref_int_avg_pool(x, ty.shape, attrs)
    assert agrees(f"relax.nn.{op}", [x], ty, [want], attrs, exact=True, arg_dtypes=["int32"])
    got = run_tvm(lambda a: getattr(O.nn, op)(a, **kw), x)
    assert np.array_equal(got.astype(np.int64), want.astype(np.int64))
    assert (got.dtype == np.int64) == (not op.startswith("adaptive"))
    # the broken twin: every negative mean one lower (as a floor division would give
    # them), or else the first mean off by one
    bad = np.where(want < 0, want - 1, want).astype(np.int32)
    if not (want < 0).any():
        bad.reshape(-1)[0] ^= 1
    assert not agrees(f"relax.nn.{op}", [x], ty, [bad], attrs, exact=False, arg_dtypes=["int32"])


def test_int_average_truncates_toward_zero():
    """mean([3, -8]) = -2 (truncation), as TVM measures; -3 (floor) is rejected."""
    x = np.array([[[3, -8]]], np.int32)
    ty, attrs = pool_type("adaptive_avg_pool1d", x.shape, "int32", output_size=(1,))
    assert agrees("relax.nn.adaptive_avg_pool1d", [x], ty, [np.array([[[-2]]], np.int32)], attrs,
                  exact=True, arg_dtypes=["int32"])
    assert not agrees("relax.nn.adaptive_avg_pool1d", [x], ty, [np.array([[[-3]]], np.int32)],
                      attrs, exact=False, arg_dtypes=["int32"])


def test_int_average_pool_unsupported_cases():
    """bool has no average."""
    ty, attrs = pool_type("avg_pool2d", (1, 1, 2, 2), "bool", pool_size=2)
    with pytest.raises(Unsupported, match="bool"):
        eval_op("relax.nn.avg_pool2d", [np.ones((1, 1, 2, 2), bool)], ty, attrs, ["bool"])


@pytest.mark.parametrize("dtype", ["int64", "int32"])
def test_int_window_of_only_padding_averages_to_zero_as_on_the_vm(dtype):
    """An integer window holding only padding (count_include_pad=False) averages to 0: TVM
    divides the sum by max(count, 1) (measured here on the VM). The encoder gives those
    values; for int64 the legalization is proved and a twin whose sums start from 3 is
    refuted (for int32 TVM's legalization returns int64, the dtype finding of docs/legalize.md)."""
    import tvtv
    from tests.conftest import mutate
    from tests.test_ops_linalg import run_vm, typed_module
    from tvm import relax
    x = np.array([[[[5, -7], [3, 9]]]], dtype)
    make = lambda p: relax.op.nn.avg_pool2d(p, pool_size=(2, 2), strides=(2, 2),
                                            padding=(2, 2, 0, 0), count_include_pad=False)
    src = typed_module(make, (x.shape, dtype))
    on_vm = run_vm(src, x).numpy()
    assert on_vm.tolist() == [[[[0, 0], [0, 2]]]], on_vm
    ty, attrs = pool_type("avg_pool2d", x.shape, dtype, pool_size=2, strides=2,
                          padding=(2, 2, 0, 0), count_include_pad=False)
    (got,) = eval_op("relax.nn.avg_pool2d", [x], ty, attrs, [dtype])
    assert np.asarray(got).tolist() == on_vm.tolist()
    if dtype == "int64":
        tgt = relax.transform.LegalizeOps()(src)
        (r,) = tvtv.verify(src, tgt, timeout=20).results
        assert r.verdict == "proved", r.to_dict()
        # the sum starting from 3: an empty window averages to 3 / max(0, 1) = 3
        (bad,) = tvtv.verify(src, mutate(tgt, "v_ax3] = T.int64(0)", "v_ax3] = T.int64(3)"),
                             timeout=20).results
        assert bad.verdict == "counterexample" and bad.confirmed, bad.to_dict()


# -- adaptive average pooling ----------------------------------------------------------------

ADAPTIVE_CASES = [
    ("adaptive_avg_pool2d", (1, 2, 5, 5), (3, 3)),
    ("adaptive_avg_pool2d", (1, 1, 2, 2), (3, 3)),          # overlapping (upsampling) windows
    ("adaptive_avg_pool2d", (1, 1, 4, 6), (2, 3)),          # uniform windows
    ("adaptive_avg_pool2d", (1, 1, 3, 2), None),            # output size = input size
    ("adaptive_avg_pool1d", (1, 2, 7), (3,)),
    ("adaptive_avg_pool3d", (1, 1, 3, 2, 3), (2, 1, 2)),
]


@pytest.mark.parametrize("op,xs,osz", ADAPTIVE_CASES)
@pytest.mark.parametrize("values", ["random", "special"])
def test_adaptive_avg_pool_folded(op, xs, osz, values):
    kw = {} if osz is None else {"output_size": osz}
    ty, attrs = pool_type(op, xs, **kw)
    x = rand(xs, 1) if values == "random" else special(xs, 2, SPECIALS_POOL)
    want = ref_adaptive_avg(x, ty.shape[2:])
    got = eval_folded(f"relax.nn.{op}", [x], ty, attrs)
    assert arrays_match(got, want)


def test_adaptive_avg_pool_nhwc():
    xc = rand((1, 2, 5, 4), 3)
    x = np.ascontiguousarray(from_canonical(xc, "NHWC", "NCHW"))
    ty, attrs = pool_type("adaptive_avg_pool2d", x.shape, output_size=(2, 3), layout="NHWC")
    want = from_canonical(ref_adaptive_avg(xc, (2, 3)), "NHWC", "NCHW")
    assert arrays_match(eval_folded("relax.nn.adaptive_avg_pool2d", [x], ty, attrs), want)


def test_adaptive_avg_pool_single_element_windows_exact():
    x = special((1, 1, 2, 3), 7, SPECIALS_POOL)
    ty, attrs = pool_type("adaptive_avg_pool2d", x.shape)     # windows of one element
    want = np.where(x == 0, f32(0.0), x).astype(f32)
    assert agrees("relax.nn.adaptive_avg_pool2d", [x], ty, [want], attrs, exact=True)
    # the abstract model leaves x / 1.0 uninterpreted for ordinary x: it only admits
    assert agrees("relax.nn.adaptive_avg_pool2d", [x], ty, [want], attrs, model=abstract(), exact=False)
    bad = want.copy()
    bad.reshape(-1)[0] = 1.0 if math.isnan(want.reshape(-1)[0]) else NAN
    assert not agrees("relax.nn.adaptive_avg_pool2d", [x], ty, [bad], attrs, exact=False)


# -- the references read the attributes as TVM does ------------------------------------------

@pytest.mark.parametrize("op,xs,kw", [
    ("max_pool2d", (1, 1, 7, 7), dict(pool_size=2, strides=2, padding=(1, 0, 0, 1), ceil_mode=True, dilation=(2, 1))),
    ("avg_pool2d", (1, 1, 4, 5), dict(pool_size=(2, 3), strides=(2, 1), padding=(1, 0, 0, 2), dilation=(1, 2),
                                      ceil_mode=True, count_include_pad=True)),
    ("avg_pool2d", (1, 1, 4, 4), dict(pool_size=3, strides=2, padding=1, ceil_mode=True, count_include_pad=False)),
    ("avg_pool1d", (1, 1, 7), dict(pool_size=2, strides=3, padding=(0, 2), ceil_mode=True, count_include_pad=True)),
    ("avg_pool2d", (1, 1, 2, 2), dict(pool_size=2, padding=2, count_include_pad=False)),
    ("adaptive_avg_pool2d", (1, 1, 7, 4), dict(output_size=(3, 3))),
    ("adaptive_avg_pool2d", (1, 1, 2, 2), dict(output_size=(3, 3))),
])
def test_reference_matches_tvm_execution(op, xs, kw):
    """Random values, float64 reference vs TVM's compiled op within rounding. The one
    intended difference: a window without counted taps is NaN here (0/0), 0 in TVM."""
    from tvm.relax import op as O
    x = rand(xs, 1)
    ty, attrs = pool_type(op, xs, **kw)
    x64 = x.astype(np.float64)
    if op.startswith("adaptive"):
        ref = ref_adaptive_avg(x64, ty.shape[2:])
    else:
        ref = (ref_max_pool if op.startswith("max") else ref_avg_pool)(x64, ty.shape, attrs)
    got = run_tvm(lambda a: getattr(O.nn, op)(a, **kw), x)
    assert got.shape == ref.shape
    empty = np.isnan(ref)
    assert np.allclose(got[~empty], ref[~empty], rtol=1e-5, atol=1e-6)
    assert np.all(got[empty] == 0)     # measured: TVM's legalization divides 0 by max(count, 1)


def test_int_adaptive_pool_legalization_proved_and_floor_division_refuted():
    """LegalizeOps of an int32 adaptive_avg_pool1d refines the specification; the same
    TIR with `T.Div` (truncating) replaced by `T.floordiv` is refuted, shown on the VM."""
    from tvm import relax
    from tvm.relax import op as O

    import tvtv
    from tvtv.ir import tvm_bridge
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType([1, 2, 5], "int32"))
    with bb.function("main", [x]):
        bb.emit_func_output(bb.emit(O.nn.adaptive_avg_pool1d(x, output_size=[2])))
    source = bb.get()
    legalized = relax.transform.LegalizeOps()(source)
    (ok,) = tvtv.verify(source, legalized, timeout=20).results
    assert ok.verdict == "proved", ok.to_dict()
    text = legalized.script()
    assert text.count("T.Div(") == 1, text
    broken = tvm_bridge.parse_script(text.replace("T.Div(", "T.floordiv("))
    (r,) = tvtv.verify(source, broken, timeout=20).results
    assert r.verdict == "counterexample" and r.confirmed is True, r.to_dict()
