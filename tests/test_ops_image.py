"""Conformance of the resize2d encoder (tvtv/encode/ops/image.py) with a numpy reference and
with TVM's VM, broken twins, and refinement against TVM's legalization.

The reference below re-derives the coordinates with its own float32 formulas (ONNX Resize as
TVM's topi computes it): it shares no code with the encoder.
"""
from __future__ import annotations


import numpy as np
import pytest

import tvtv.encode.ops.image  # noqa: F401  (registers the encoder)
from tests.test_ops_linalg import FMAX, INF, NAN, rand, run_tvm, special, tvm_call
from tvtv.encode.evaluate import agrees, arrays_match, eval_op
from tvtv.errors import Unsupported

f32 = np.float32
SPECIALS_IMG = [0.0, -0.0, INF, -INF, NAN, FMAX, -FMAX, 1.5, -2.0, 3.25]


def _coord(o: int, n_in: int, n_out: int, mode: str) -> np.float32:
    s = np.float32(n_in) / np.float32(n_out)
    if mode == "half_pixel" or (mode == "pytorch_half_pixel" and n_out > 1):
        return np.float32(np.float32(np.float32(o) + np.float32(0.5)) * s) - np.float32(0.5)
    if mode == "pytorch_half_pixel":
        return np.float32(0.0)
    if mode == "align_corners":
        return np.float32(np.float32(n_in - 1) / np.float32(n_out - 1)) * np.float32(o)
    if mode == "asymmetric":
        return s * np.float32(o)
    if mode == "tf_half_pixel_for_nn":
        return np.float32(np.float32(o) + np.float32(0.5)) * s
    raise AssertionError(mode)


def _nearest(o: int, n_in: int, n_out: int, mode: str, rnd: str) -> int:
    if rnd == "":
        rnd = "round" if mode == "align_corners" else "floor"
    if mode == "asymmetric" and rnd == "floor" and n_out % n_in == 0:
        i = o // (n_out // n_in)                    # TVM's integer-division path
    else:
        c = _coord(o, n_in, n_out, mode)
        e = np.float32(1e-5)
        i = int({"round": lambda: np.round(c),      # half to even
                 "round_prefer_floor": lambda: np.ceil(c - np.float32(0.5)),
                 "round_prefer_ceil": lambda: np.floor(c + np.float32(0.5)),
                 "floor": lambda: np.floor(c + e),
                 "ceil": lambda: np.ceil(c - e)}[rnd]())
    return min(max(i, 0), n_in - 1)


def ref_resize(x: np.ndarray, size, layout: str, method: str, mode: str, rnd: str = "") -> np.ndarray:
    """numpy reference in canonical NCHW, transposed from/to `layout`."""
    xc = x if layout == "NCHW" else np.transpose(x, (0, 3, 1, 2))
    n, c, h, w = xc.shape
    oh, ow = size
    out = np.zeros((n, c, oh, ow), x.dtype)
    xf = xc.astype(f32)
    with np.errstate(all="ignore"):
        for i in range(oh):
            for j in range(ow):
                if method == "nearest_neighbor":
                    out[:, :, i, j] = xc[:, :, _nearest(i, h, oh, mode, rnd), _nearest(j, w, ow, mode, rnd)]
                    continue
                cy, cx = _coord(i, h, oh, mode), _coord(j, w, ow, mode)
                fy, fx = int(np.floor(cy)), int(np.floor(cx))
                ty, tx = cy - np.float32(fy), cx - np.float32(fx)
                cl = lambda v, m: min(max(v, 0), m - 1)  # noqa: E731
                p = [[xf[:, :, cl(fy + a, h), cl(fx + b, w)] for b in (0, 1)] for a in (0, 1)]
                lerp = lambda A, B, t: A * (np.float32(1.0) - t) + B * t  # noqa: E731
                top, bot = lerp(p[0][0], p[0][1], tx), lerp(p[1][0], p[1][1], tx)
                out[:, :, i, j] = lerp(top, bot, ty).astype(x.dtype)
    return out if layout == "NCHW" else np.transpose(out, (0, 2, 3, 1))


def _make(size, **attrs):
    from tvm.relax import op as O
    return lambda v: O.image.resize2d(v, size, **attrs)


def _check(x: np.ndarray, size, layout, method, mode, rnd="", vm=True) -> None:
    attrs = dict(layout=layout, method=method, coordinate_transformation_mode=mode,
                 rounding_method=rnd)
    ty, norm = tvm_call(_make(size, **attrs), (x.shape, str(x.dtype)))
    want = ref_resize(x, size, layout, method, mode, rnd)
    args = [x, ("shape", list(size))]
    dts = [str(x.dtype), "int64"]
    got = eval_op("relax.image.resize2d", args, ty, norm, arg_dtypes=dts)[0]
    assert arrays_match(got, want), (got, want)
    assert agrees("relax.image.resize2d", args, ty, [want], norm, exact=True, arg_dtypes=dts)
    if vm:
        assert arrays_match(run_tvm(_make(size, **attrs), x), want)


SIZES = [((1, 2, 3, 4), (5, 7)), ((1, 1, 5, 6), (3, 4)), ((2, 1, 4, 3), (8, 6)),
         ((1, 2, 3, 3), (3, 3)), ((1, 1, 7, 5), (2, 9))]
NEAREST = [(m, r) for m in ("asymmetric", "half_pixel", "align_corners")
           for r in ("", "round", "floor", "ceil", "round_prefer_floor", "round_prefer_ceil")]
LINEAR = ["half_pixel", "align_corners", "asymmetric", "pytorch_half_pixel"]


@pytest.mark.parametrize("mode,rnd", NEAREST)
@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_nearest_random_and_vm(mode, rnd, layout):
    for k, (shape, size) in enumerate(SIZES):
        x = rand(shape, seed=k)
        if layout == "NHWC":
            x = np.ascontiguousarray(np.transpose(x, (0, 2, 3, 1)))
        _check(x, size, layout, "nearest_neighbor", mode, rnd, vm=(k < 3))


@pytest.mark.parametrize("mode", LINEAR)
@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_linear_random_and_vm(mode, layout):
    for k, (shape, size) in enumerate(SIZES):
        x = rand(shape, seed=k)
        if layout == "NHWC":
            x = np.ascontiguousarray(np.transpose(x, (0, 2, 3, 1)))
        _check(x, size, layout, "linear", mode)


@pytest.mark.parametrize("method,mode", [("linear", m) for m in LINEAR] +
                         [("nearest_neighbor", m) for m in ("half_pixel", "asymmetric", "align_corners")])
def test_specials_and_vm(method, mode):
    for seed in range(2):
        x = special((1, 2, 3, 4), seed=seed, pool=SPECIALS_IMG)
        _check(x, (5, 6), "NCHW", method, mode, "round" if method == "nearest_neighbor" else "")


@pytest.mark.parametrize("rnd", ["", "round", "floor", "ceil"])
def test_nearest_tf_half_pixel_for_nn(rnd):
    for k, (shape, size) in enumerate(SIZES):
        _check(rand(shape, seed=k), size, "NCHW", "nearest_neighbor", "tf_half_pixel_for_nn", rnd,
               vm=(k < 2))


def test_round_is_half_to_even_measured():
    """Asymmetric 2 -> 8: coordinates k * 0.25; 0.5 rounds to 0, 1.5 to 2 (nearbyint)."""
    x = rand((1, 1, 1, 4), seed=3)
    _check(x, (1, 8), "NCHW", "nearest_neighbor", "asymmetric", "round")
    idx = [_nearest(o, 4, 8, "asymmetric", "round") for o in range(8)]
    assert idx == [0, 0, 1, 2, 2, 2, 3, 4 - 1]


@pytest.mark.parametrize("method", ["nearest_neighbor", "linear"])
def test_float16(method):
    x = rand((1, 2, 3, 4), seed=5, dtype=np.float16)
    _check(x, (5, 7), "NCHW", method, "half_pixel", "round" if method == "nearest_neighbor" else "")
    pool = [0.0, -0.0, INF, -INF, NAN, 65504.0, -65504.0, 1.5, -2.0, 6e-8]
    y = special((1, 2, 3, 4), seed=6, pool=pool).astype(np.float16)
    _check(y, (5, 7), "NCHW", method, "half_pixel", "round" if method == "nearest_neighbor" else "")


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16"])
def test_nearest_small_integers(dtype):
    x = np.random.default_rng(1).integers(-100 if dtype != "uint8" else 0, 100,
                                          (1, 2, 3, 4)).astype(dtype)
    _check(x, (5, 7), "NCHW", "nearest_neighbor", "asymmetric", "floor")


def test_broken_twins():
    x = rand((1, 1, 3, 4), seed=7)
    for method, mode, rnd in [("linear", "half_pixel", ""), ("nearest_neighbor", "asymmetric", "round"),
                              ("linear", "align_corners", "")]:
        attrs = dict(method=method, coordinate_transformation_mode=mode, rounding_method=rnd)
        ty, norm = tvm_call(_make((5, 6), **attrs), (x.shape, "float32"))
        want = ref_resize(x, (5, 6), "NCHW", method, mode, rnd)
        args, dts = [x, ("shape", [5, 6])], ["float32", "int64"]
        bad = want.copy()
        bad[0, 0, 2, 3] = np.nextafter(bad[0, 0, 2, 3], f32(INF))
        assert not agrees("relax.image.resize2d", args, ty, [bad], norm, exact=False, arg_dtypes=dts)
        # another mode's result is not this one's
        other = ref_resize(x, (5, 6), "NCHW", method, "asymmetric" if mode != "asymmetric" else "half_pixel",
                           rnd)
        assert not agrees("relax.image.resize2d", args, ty, [other], norm, exact=False, arg_dtypes=dts)


@pytest.mark.parametrize("attrs", [dict(method="cubic"),
                                   dict(coordinate_transformation_mode="tf_crop_and_resize"),
                                   dict(out_dtype="float16")])
def test_unsupported(attrs):
    x = rand((1, 1, 3, 4))
    ty, norm = tvm_call(_make((5, 6), **attrs), (x.shape, "float32"))
    with pytest.raises(Unsupported):
        eval_op("relax.image.resize2d", [x, ("shape", [5, 6])], ty, norm,
                arg_dtypes=["float32", "int64"])


# -- refinement through TVM's legalization ---------------------------------------------------

def _module(shape, size, dtype="float32", **attrs):
    from tvm import relax
    from tvm.relax import op as O
    x = relax.Var("x", relax.TensorType(list(shape), dtype))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            out = bb.emit_output(bb.emit(O.image.resize2d(x, size, **attrs)))
        bb.emit_func_output(out)
    return bb.get()


VERIFY = [((1, 1, 3, 4), (5, 6), "float32", "NCHW", "nearest_neighbor", m, r)
          for m, r in [("asymmetric", ""), ("asymmetric", "round"), ("half_pixel", "round"),
                       ("half_pixel", "floor"), ("half_pixel", "ceil"),
                       ("align_corners", ""), ("align_corners", "round_prefer_floor"),
                       ("asymmetric", "round_prefer_ceil")]] + [
    ((1, 1, 3, 4), (6, 8), "float32", "NCHW", "nearest_neighbor", "asymmetric", "floor"),  # x // 2
    ((1, 5, 4, 2), (3, 3), "float32", "NHWC", "nearest_neighbor", "half_pixel", ""),
] + [((1, 1, 3, 4), (5, 6), "float32", "NCHW", "linear", m, "") for m in LINEAR] + [
    ((1, 1, 5, 4), (2, 7), "float32", "NCHW", "linear", "half_pixel", ""),
    ((1, 3, 4, 2), (3, 3), "float32", "NHWC", "linear", "align_corners", ""),
    ((1, 1, 3, 4), (5, 6), "float16", "NCHW", "linear", "half_pixel", ""),
]


@pytest.mark.parametrize("shape,size,dtype,layout,method,mode,rnd", VERIFY)
def test_legalize_is_proved(shape, size, dtype, layout, method, mode, rnd):
    from tvm import relax

    import tvtv
    mod = _module(shape, size, dtype, layout=layout, method=method,
                  coordinate_transformation_mode=mode, rounding_method=rnd)
    (r,) = tvtv.verify(mod, relax.transform.LegalizeOps()(mod), timeout=20).results
    assert r.verdict == "proved", r.to_dict()


LIN = dict(method="linear", coordinate_transformation_mode="half_pixel")
NEAR = dict(method="nearest_neighbor", coordinate_transformation_mode="half_pixel",
            rounding_method="round")
MUTATIONS = {
    "floor exchanged for ceil": (LIN, "T.floor(", "T.ceil("),
    "1 - t exchanged for 1 + t": (LIN, "T.float32(1.0) - (", "T.float32(1.0) + ("),
    "half pixel offset changed": (LIN, "+ T.float32(0.5))", "+ T.float32(0.25))"),
    "clamp bound off by one": (LIN, "T.int64(3)), T.int64(0))", "T.int64(2)), T.int64(0))"),
    "round exchanged for floor": (NEAR, "T.round(", "T.floor("),
    # 0.6 -> 0.5 moves output row 3 from input row 2 to row 1 (a nearby float32 scale
    # would select the same rows: an equivalent mutation)
    "scale changed": (NEAR, "T.float32(0.60000002384185791)", "T.float32(0.5)"),
    "lower clamp changed": (NEAR, "T.int64(2)), T.int64(0))", "T.int64(2)), T.int64(1))"),
}


# each about 36 s: the IEEE model times out and the VM's random inputs show the difference
SLOW_MUTATIONS = {"floor exchanged for ceil", "half pixel offset changed", "clamp bound off by one"}


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n in SLOW_MUTATIONS
                                  else n for n in sorted(MUTATIONS)])
def test_broken_legalization_is_refuted(name):
    from tvm import relax

    import tvtv
    from tvtv.ir import tvm_bridge
    attrs, old, new = MUTATIONS[name]
    source = relax.transform.LegalizeOps()(_module((1, 1, 3, 4), (5, 6), **attrs))
    text = source.script()
    assert old in text, f"mutation {name!r} does not apply:\n{text}"
    broken = tvm_bridge.parse_script(text.replace(old, new, 1))
    (r,) = tvtv.verify(source, broken, timeout=20).results
    assert r.verdict == "counterexample", r.to_dict()


def test_legalize_int8_nearest_is_unknown():
    """Pinned: int8 nearest legalizes to `T.Cast("int8", T.Cast("float32", x[...]))` with the
    source indices `T.Cast("int64", T.round(<float32 coordinate of v_i2/v_i3>))`. With int8
    data the checker's abstract model (6 magnitude bits) cannot exclude that the coordinate
    cast float32->int64 is of NaN/inf/out of range (undefined), and the IEEE model times out
    (also with timeout=120: the IEEE sub-check stops at ~10 s), so the verdict is `unknown`,
    not a confirmed counterexample. The same module on float32 data is proved in 0.2 s; the
    encoder's int8 result agrees with the VM (test_nearest_small_integers)."""
    from tvm import relax

    import tvtv
    mod = _module((1, 1, 3, 4), (5, 6), "int8", method="nearest_neighbor",
                  coordinate_transformation_mode="half_pixel", rounding_method="round")
    (r,) = tvtv.verify(mod, relax.transform.LegalizeOps()(mod), timeout=20).results
    assert r.verdict == "unknown", r.to_dict()
    assert "astype float32->int64" in (r.reason or ""), r.reason
