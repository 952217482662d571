"""Conformance of the convolution encoders (tvtv/encode/ops/convolution.py) with numpy.

Semantics checked (PyTorch conventions): the data is zero-padded, so a padded tap is the
product 0 * w (NaN for an inf weight); the sum over (input channel of the group, kernel
positions) is `dot`; transposed convolutions sum only the products that reach an output
position (no 0 * w terms). Result types and normalized attributes come from TVM.
Method (see test_ops_linalg.py): `eval_folded` (uninterpreted sums read as left folds, bit
for bit against a loop reference folding in the same order) on random and special values;
`agrees(exact=True)` on inputs whose result is fixed and `agrees(exact=False)` (numpy's
float64 result rounded is admitted) on random values, in the IEEE and the abstract model;
wrong expectations must be rejected.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

import tvtv.encode.ops.convolution  # noqa: F401  (registers the encoders)
from tests.test_ops_linalg import (DENORM, FMAX, INF, NAN, abstract, eval_folded, fold, mul,
                                   rand, run_tvm, special, tvm_call)
from tvtv.encode.evaluate import agrees, arrays_match, eval_op
from tvtv.errors import Unsupported
from tvtv.ir.program import TensorType

f32, f16 = np.float32, np.float16
SP = {1: "W", 2: "HW", 3: "DHW"}


def conv_type(nd: int, xs, ws, dtype="float32", transpose=False, **attrs) -> tuple[TensorType, dict]:
    from tvm.relax import op as O
    name = f"conv{nd}d" + ("_transpose" if transpose else "")
    fn = getattr(O.nn, name)
    return tvm_call(lambda x, w: fn(x, w, **attrs), (xs, dtype), (ws, dtype))


def to_canonical(a: np.ndarray, layout: str, canonical: str) -> np.ndarray:
    return np.transpose(a, [layout.index(c) for c in canonical])


def from_canonical(a: np.ndarray, layout: str, canonical: str) -> np.ndarray:
    return np.transpose(a, [canonical.index(c) for c in layout])


def ref_conv(x: np.ndarray, w: np.ndarray, attrs: dict, dtype: Any = f32) -> np.ndarray:
    """Canonical-layout conv (NC..., OI...): padded taps are 0 * w, each element the left
    fold over (input channel, kernel positions) of the products, in `dtype`."""
    nd = x.ndim - 2
    s, d, g = attrs["strides"], attrs["dilation"], attrs["groups"]
    lo, hi = attrs["padding"][:nd], attrs["padding"][nd:]
    n_b, c_in = x.shape[:2]
    c_out, c_grp = w.shape[:2]
    in_sz, k_sz = x.shape[2:], w.shape[2:]
    out_sz = [(i + a + b - dd * (k - 1) - 1) // ss + 1
              for i, a, b, dd, k, ss in zip(in_sz, lo, hi, d, k_sz, s)]
    out = np.zeros((n_b, c_out, *out_sz), dtype)
    zero = np.dtype(dtype).type(0)
    for nb, oc, *o in np.ndindex(*out.shape):
        gi = oc // (c_out // g)
        terms = []
        for ic in range(c_grp):
            for k in np.ndindex(*k_sz):
                p = [oo * ss + kk * dd - a for oo, ss, kk, dd, a in zip(o, s, k, d, lo)]
                inside = all(0 <= pp < i for pp, i in zip(p, in_sz))
                xv = x[(nb, gi * c_grp + ic, *p)] if inside else zero
                terms.append(mul(xv, w[(oc, ic, *k)], dtype))
        out[(nb, oc, *o)] = fold(terms, dtype)
    return out


def ref_conv_transpose(x: np.ndarray, w: np.ndarray, attrs: dict, dtype: Any = f32) -> np.ndarray:
    """Canonical conv_transpose (NC..., IO...): the left fold of only the products x * w
    with i * stride + k * dilation = o + pad_before (scatter semantics, PyTorch)."""
    nd = x.ndim - 2
    s, d, g = attrs["strides"], attrs["dilation"], attrs["groups"]
    lo, hi = attrs["padding"][:nd], attrs["padding"][nd:]
    op = attrs["output_padding"]
    n_b, c_in = x.shape[:2]
    o_grp = w.shape[1]
    in_sz, k_sz = x.shape[2:], w.shape[2:]
    c_grp = c_in // g
    out_sz = [(i - 1) * ss - a - b + dd * (k - 1) + p + 1
              for i, ss, a, b, dd, k, p in zip(in_sz, s, lo, hi, d, k_sz, op)]
    out = np.zeros((n_b, o_grp * g, *out_sz), dtype)
    for nb, oc, *o in np.ndindex(*out.shape):
        gi, ocl = divmod(oc, o_grp)
        terms = []
        for ic in range(c_grp):
            ch = gi * c_grp + ic
            for k in np.ndindex(*k_sz):
                qs = [oo + a - kk * dd for oo, a, kk, dd in zip(o, lo, k, d)]
                if all(q >= 0 and q % ss == 0 and q // ss < i for q, ss, i in zip(qs, s, in_sz)):
                    pos = [q // ss for q, ss in zip(qs, s)]
                    terms.append(mul(x[(nb, ch, *pos)], w[(ch, ocl, *k)], dtype))
        out[(nb, oc, *o)] = fold(terms, dtype)
    return out


# -- forward convolutions on random and special values ---------------------------------------

CONV_CASES = [
    # nd, data shape, weight shape, attrs
    (2, (1, 2, 4, 4), (3, 2, 3, 3), dict(padding=1)),
    (2, (1, 2, 5, 5), (2, 2, 2, 3), dict(strides=2, padding=(1, 0, 0, 2))),
    (2, (1, 1, 6, 6), (2, 1, 3, 2), dict(dilation=(2, 1), padding=(2, 1))),
    (2, (2, 4, 3, 3), (4, 2, 2, 2), dict(groups=2, padding=1, strides=(1, 2))),
    (2, (1, 3, 3, 3), (3, 1, 3, 3), dict(groups=3, padding=1)),                   # depthwise
    (2, (1, 1, 2, 2), (1, 1, 2, 2), dict(padding=3)),                          # all-padding windows
    (1, (1, 2, 5), (3, 2, 2), dict()),
    (1, (2, 4, 6), (2, 2, 3), dict(strides=2, padding=(2, 1), dilation=2, groups=2)),
    (3, (1, 1, 3, 3, 2), (2, 1, 2, 2, 2), dict(padding=(1, 0, 1, 0, 1, 0), strides=(2, 1, 1))),
]


@pytest.mark.parametrize("nd,xs,ws,kw", CONV_CASES)
@pytest.mark.parametrize("values", ["random", "special"])
def test_conv_folded(nd, xs, ws, kw, values):
    ty, attrs = conv_type(nd, xs, ws, **kw)
    if values == "random":
        x, w = rand(xs, 1), rand(ws, 2)
    else:
        x, w = special(xs, 1), special(ws, 2)
    want = ref_conv(x, w, attrs)
    assert tuple(ty.shape) == want.shape
    got = eval_folded(f"relax.nn.conv{nd}d", [x, w], ty, attrs)
    assert arrays_match(got, want)


@pytest.mark.parametrize("data_layout,kernel_layout,out_layout", [
    ("NHWC", "HWIO", None), ("NHWC", "OHWI", "NCHW"), ("NCHW", "HWIO", "NHWC"), ("HWCN", "IHWO", None)])
def test_conv2d_layouts(data_layout, kernel_layout, out_layout):
    xc, wc = rand((2, 2, 4, 3), 3), rand((3, 2, 2, 2), 4)
    xs = from_canonical(xc, data_layout, "NCHW")
    ws = from_canonical(wc, kernel_layout, "OIHW")
    kw = dict(padding=(1, 0, 0, 1), strides=(1, 2), data_layout=data_layout,
              kernel_layout=kernel_layout)
    if out_layout:
        kw["out_layout"] = out_layout
    ty, attrs = conv_type(2, xs.shape, ws.shape, **kw)
    ol = out_layout or data_layout
    want = from_canonical(ref_conv(xc, wc, attrs), ol, "NCHW")
    assert tuple(ty.shape) == want.shape
    got = eval_folded("relax.nn.conv2d", [np.ascontiguousarray(xs), np.ascontiguousarray(ws)], ty, attrs)
    assert arrays_match(got, want)


def test_conv2d_out_dtype_float16_to_float32():
    x, w = rand((1, 2, 3, 3), 5, f16), rand((2, 2, 2, 2), 6, f16)
    ty, attrs = conv_type(2, x.shape, w.shape, "float16", padding=1, out_dtype="float32")
    assert ty.dtype == "float32"
    got = eval_folded("relax.nn.conv2d", [x, w], ty, attrs, ["float16", "float16"])
    assert arrays_match(got, ref_conv(x.astype(f32), w.astype(f32), attrs, f32))


@pytest.mark.parametrize("out_dtype", ["int32", None])
def test_conv2d_int8_exact(out_dtype):
    rng = np.random.default_rng(0)
    x = rng.integers(-128, 128, (1, 2, 3, 3)).astype(np.int8)
    w = rng.integers(-128, 128, (2, 2, 2, 2)).astype(np.int8)
    kw = dict(padding=1) if out_dtype is None else dict(padding=1, out_dtype=out_dtype)
    ty, attrs = conv_type(2, x.shape, w.shape, "int8", **kw)
    odt = np.dtype(out_dtype or "int8")
    want = ref_conv(x.astype(np.int64), w.astype(np.int64), attrs, np.int64).astype(odt)  # wraps
    got = eval_op("relax.nn.conv2d", [x, w], ty, attrs, ["int8", "int8"])[0]
    assert got.dtype == odt and np.array_equal(got, want)
    assert agrees("relax.nn.conv2d", [x, w], ty, [want], attrs, model=abstract(), exact=True,
                  arg_dtypes=["int8", "int8"])
    bad = want.copy()
    bad[0, 1, 2, 0] += 1
    assert not agrees("relax.nn.conv2d", [x, w], ty, [bad], attrs, exact=False,
                      arg_dtypes=["int8", "int8"])


# -- results fixed by the specification --------------------------------------------------------

FIXED = [0.0, -0.0, INF, -INF, NAN]


@pytest.mark.parametrize("seed", range(2))
def test_conv_1x1_single_channel_is_exact(seed):
    """One input channel and a 1x1 kernel: each element is +0.0 + x * w, fixed."""
    for pool, models in ((FIXED, (None, abstract())), (FIXED + [FMAX, -FMAX, DENORM, 1.5, -2.0], (None,))):
        x, w = special((1, 1, 2, 3), seed, pool), special((3, 1, 1, 1), seed + 5, pool)
        ty, attrs = conv_type(2, x.shape, w.shape, strides=(1, 2))
        want = ref_conv(x, w, attrs)
        assert arrays_match(eval_op("relax.nn.conv2d", [x, w], ty, attrs)[0], want)
        for model in models:
            assert agrees("relax.nn.conv2d", [x, w], ty, [want], attrs, model=model, exact=True)
            bad = want.copy()
            bad[0, 0, 0, 0] = 1.0 if math.isnan(want[0, 0, 0, 0]) else NAN
            assert not agrees("relax.nn.conv2d", [x, w], ty, [bad], attrs, model=model, exact=False)


def test_conv_zero_padding_times_inf_weight_is_nan():
    """Zero padding makes the term 0 * inf = NaN at every border position (PyTorch); the
    other positions get x * inf = ±inf. Leaving padded taps out would give ±inf there."""
    x = rand((1, 1, 3, 3), 7)
    w = rand((1, 1, 3, 3), 8)
    w[0, 0, 0, 0] = INF
    ty, attrs = conv_type(2, x.shape, w.shape, padding=1)
    want = np.full((1, 1, 3, 3), NAN, f32)
    want[0, 0, 1:, 1:] = np.where(x[0, 0, :2, :2] > 0, INF, -INF)
    assert arrays_match(ref_conv(x, w, attrs), want)
    got = eval_op("relax.nn.conv2d", [x, w], ty, attrs)[0]
    # the border NaN is fixed in every summation order; x * inf among finite terms is ±inf,
    # or NaN if finite terms overflowed first (order unspecified), so only admitted there
    for k, v in enumerate(want.reshape(-1)):
        if np.isnan(v):
            assert got[k] is not None and np.isnan(got[k])
    assert agrees("relax.nn.conv2d", [x, w], ty, [want], attrs, exact=False)
    # the abstract model does not fix finite products (x * w may overflow to inf there), so
    # it only admits the result; the border NaN is forced in both models
    assert agrees("relax.nn.conv2d", [x, w], ty, [want], attrs, model=abstract(), exact=False)
    for model in (None, abstract()):
        left_out = want.copy()     # leaving the padded tap out would give a finite value
        left_out[0, 0, 0, 0] = 0.5
        assert not agrees("relax.nn.conv2d", [x, w], ty, [left_out], attrs, model=model, exact=False)


@pytest.mark.parametrize("nd,xs,ws,kw,transpose", [
    (2, (1, 2, 3, 3), (2, 2, 2, 2), dict(padding=(1, 0, 0, 1)), False),
    (1, (1, 2, 5), (2, 1, 2), dict(strides=2, groups=2, dilation=2), False),
    (2, (1, 2, 2, 2), (2, 1, 2, 2), dict(strides=2, padding=1, output_padding=1), True),
])
@pytest.mark.parametrize("model", ["ieee", "abstract"])
def test_conv_admits_numpy(nd, xs, ws, kw, transpose, model):
    """numpy's float64 result rounded to float32 is one value the unordered sums may take."""
    x, w = rand(xs, 11), rand(ws, 12)
    ty, attrs = conv_type(nd, xs, ws, transpose=transpose, **kw)
    ref = ref_conv_transpose if transpose else ref_conv
    want = ref(x.astype(np.float64), w.astype(np.float64), attrs, np.float64).astype(f32)
    assert tuple(ty.shape) == want.shape
    op = f"relax.nn.conv{nd}d" + ("_transpose" if transpose else "")
    m = abstract() if model == "abstract" else None
    assert agrees(op, [x, w], ty, [want], attrs, model=m, exact=False)
    x[(0,) * x.ndim] = NAN              # now some elements are forced to NaN
    assert not agrees(op, [x, w], ty, [want], attrs, model=m, exact=False)


# -- transposed convolutions -----------------------------------------------------------------

CONVT_CASES = [
    (2, (1, 2, 3, 3), (2, 3, 3, 3), dict()),
    (2, (1, 4, 3, 3), (4, 1, 3, 3), dict(strides=2, padding=1, output_padding=1, dilation=2, groups=2)),
    (2, (1, 1, 2, 3), (1, 2, 2, 1), dict(strides=(3, 2), padding=(0, 1, 1, 0))),
    (1, (1, 4, 5), (4, 3, 3), dict(strides=2, padding=(1, 0), output_padding=1, groups=2)),
    (1, (2, 1, 3), (1, 1, 2), dict(strides=2, dilation=2)),
    (3, (1, 2, 2, 1, 2), (2, 1, 2, 1, 2), dict(strides=(1, 2, 2), padding=(0, 0, 1, 1, 0, 0), groups=2)),
]


@pytest.mark.parametrize("nd,xs,ws,kw", CONVT_CASES)
@pytest.mark.parametrize("values", ["random", "special"])
def test_conv_transpose_folded(nd, xs, ws, kw, values):
    ty, attrs = conv_type(nd, xs, ws, transpose=True, **kw)
    x, w = (rand(xs, 1), rand(ws, 2)) if values == "random" else (special(xs, 3), special(ws, 4))
    want = ref_conv_transpose(x, w, attrs)
    assert tuple(ty.shape) == want.shape
    got = eval_folded(f"relax.nn.conv{nd}d_transpose", [x, w], ty, attrs)
    assert arrays_match(got, want)


def test_conv_transpose_inf_weight_does_not_reach_gaps():
    """stride 2, kernel 1: odd outputs receive no product and are +0.0 even with an inf
    weight (scatter semantics); TVM's legalization (zero-dilated data) gives NaN there."""
    x = np.array([[[1.5, -2.0, 0.25]]], f32)
    w = np.array([[[INF]]], f32)
    ty, attrs = conv_type(1, x.shape, w.shape, transpose=True, strides=2, output_padding=1)
    want = np.array([[[INF, 0.0, -INF, 0.0, INF, 0.0]]], f32)
    assert tuple(ty.shape) == want.shape
    assert arrays_match(eval_op("relax.nn.conv1d_transpose", [x, w], ty, attrs)[0], want)
    for model in (None, abstract()):
        assert agrees("relax.nn.conv1d_transpose", [x, w], ty, [want], attrs, model=model, exact=True)
        gaps_nan = want.copy()
        gaps_nan[0, 0, 1::2] = NAN
        assert not agrees("relax.nn.conv1d_transpose", [x, w], ty, [gaps_nan], attrs, model=model,
                          exact=False)


# -- the references read the attributes as TVM does ------------------------------------------

@pytest.mark.parametrize("nd,xs,ws,kw,transpose", [
    (2, (1, 4, 6, 5), (4, 2, 3, 2), dict(strides=(2, 1), padding=(1, 0, 2, 1), dilation=(1, 2), groups=2), False),
    (1, (1, 2, 7), (2, 2, 3), dict(strides=2, padding=(2, 0), dilation=2), False),
    (2, (1, 4, 3, 3), (4, 1, 3, 2), dict(strides=(2, 3), padding=(1, 0, 0, 1), output_padding=(1, 2),
                                         dilation=(2, 1), groups=2), True),
    (1, (1, 4, 5), (4, 3, 3), dict(strides=2, padding=(1, 0), output_padding=1, groups=2), True),
    (3, (1, 2, 2, 2, 2), (2, 1, 2, 1, 2), dict(strides=(1, 2, 2), padding=(0, 0, 1, 1, 0, 0), groups=2), True),
    (3, (1, 1, 3, 3, 2), (2, 1, 2, 2, 2), dict(padding=(1, 0, 1, 0, 1, 0), strides=(2, 1, 1)), False),
])
def test_reference_matches_tvm_execution(nd, xs, ws, kw, transpose):
    """Random values, float64 reference vs TVM's compiled op within rounding."""
    from tvm.relax import op as O
    fn = getattr(O.nn, f"conv{nd}d" + ("_transpose" if transpose else ""))
    x, w = rand(xs, 1), rand(ws, 2)
    ty, attrs = conv_type(nd, xs, ws, transpose=transpose, **kw)
    ref = (ref_conv_transpose if transpose else ref_conv)(
        x.astype(np.float64), w.astype(np.float64), attrs, np.float64)
    got = run_tvm(lambda a, b: fn(a, b, **kw), x, w)
    assert got.shape == ref.shape == tuple(ty.shape)
    assert np.allclose(got, ref, rtol=1e-5, atol=1e-5)


# -- what is not supported ---------------------------------------------------------------------

def test_packed_layout_unsupported():
    ty, attrs = conv_type(2, (1, 1, 5, 5, 4), (3, 4, 3, 3), data_layout="NCHW4c")
    with pytest.raises(Unsupported):
        eval_op("relax.nn.conv2d", [rand((1, 1, 5, 5, 4)), rand((3, 4, 3, 3))], ty, attrs)


def test_wrong_result_type_unsupported():
    ty, attrs = conv_type(2, (1, 1, 3, 3), (1, 1, 2, 2))
    with pytest.raises(Unsupported):
        eval_op("relax.nn.conv2d", [rand((1, 1, 3, 3)), rand((1, 1, 2, 2))],
                TensorType((1, 1, 3, 3), "float32"), attrs)
