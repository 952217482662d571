"""Conformance of the resize2d encoder (tvtv/encode/ops/image.py) with a numpy reference and
with TVM's VM, broken twins, and refinement against TVM's legalization.

The reference below re-derives the coordinates with its own float32 formulas (ONNX Resize as
TVM's topi computes it): it shares no code with the encoder.
"""
from __future__ import annotations

import re

import numpy as np
import z3
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


@pytest.mark.parametrize("attrs", [dict(coordinate_transformation_mode="tf_crop_and_resize"),
                                   dict(out_dtype="float16"),
                                   dict(method="cubic", out_dtype="float16")])
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
    data the checker's abstract model (6 magnitude bits) cannot exclude that a cast from
    float32 is of NaN/inf/out of range (undefined): the coordinate's cast to int64, or the
    data's cast back to int8 (never out of range in fact, since it holds an int8). Which of
    the two the solver names depends on the query's term order (Python's hash seed; CI on
    4ec24ed named the int8 one). The IEEE model times out (also with timeout=120 when its
    IEEE sub-check stopped at 10 s; now `refine_timeout` gives it 40 s there, not
    re-measured), so the verdict is `unknown`, not a confirmed counterexample. The same
    module on float32 data is proved in 0.2 s; the encoder's int8 result agrees with the VM
    (test_nearest_small_integers)."""
    from tvm import relax

    import tvtv
    mod = _module((1, 1, 3, 4), (5, 6), "int8", method="nearest_neighbor",
                  coordinate_transformation_mode="half_pixel", rounding_method="round")
    (r,) = tvtv.verify(mod, relax.transform.LegalizeOps()(mod), timeout=20).results
    assert r.verdict == "unknown", r.to_dict()
    assert re.search(r"undefined where the source is defined: astype float32->int(8|64) of NaN",
                     r.reason or ""), r.reason


# == resize3d ==================================================================================

def _nearest3(o: int, n_in: int, n_out: int, mode: str, rnd: str) -> int:
    """topi's resize3d: no integer-division path (floor(c + 1e-5) also for asymmetric)."""
    if rnd == "":
        rnd = "round" if mode == "align_corners" else "floor"
    c = _coord(o, n_in, n_out, mode)
    e = np.float32(1e-5)
    i = int({"round": lambda: np.round(c),
             "round_prefer_floor": lambda: np.ceil(c - np.float32(0.5)),
             "round_prefer_ceil": lambda: np.floor(c + np.float32(0.5)),
             "floor": lambda: np.floor(c + e),
             "ceil": lambda: np.ceil(c - e)}[rnd]())
    return min(max(i, 0), n_in - 1)


def ref_resize3d(x: np.ndarray, size, layout: str, method: str, mode: str, rnd: str = "") -> np.ndarray:
    """numpy reference in canonical NCDHW: trilinear = lerp over w, then h, then d."""
    xc = x if layout == "NCDHW" else np.transpose(x, (0, 4, 1, 2, 3))
    n, c, d, h, w = xc.shape
    od, oh, ow = size
    out = np.zeros((n, c, od, oh, ow), x.dtype)
    xf = xc.astype(f32)
    cl = lambda v, m: min(max(v, 0), m - 1)  # noqa: E731
    lerp = lambda A, B, t: A * (np.float32(1.0) - t) + B * t  # noqa: E731
    with np.errstate(all="ignore"):
        for k in range(od):
            for i in range(oh):
                for j in range(ow):
                    if method == "nearest_neighbor":
                        out[:, :, k, i, j] = xc[:, :, _nearest3(k, d, od, mode, rnd),
                                                _nearest3(i, h, oh, mode, rnd),
                                                _nearest3(j, w, ow, mode, rnd)]
                        continue
                    cz, cy, cx = _coord(k, d, od, mode), _coord(i, h, oh, mode), _coord(j, w, ow, mode)
                    fz, fy, fx = int(np.floor(cz)), int(np.floor(cy)), int(np.floor(cx))
                    tz, ty, tx = cz - f32(fz), cy - f32(fy), cx - f32(fx)
                    p = lambda a, b, e: xf[:, :, cl(fz + a, d), cl(fy + b, h), cl(fx + e, w)]  # noqa: E731
                    planes = [lerp(lerp(p(a, 0, 0), p(a, 0, 1), tx), lerp(p(a, 1, 0), p(a, 1, 1), tx), ty)
                              for a in (0, 1)]
                    out[:, :, k, i, j] = lerp(planes[0], planes[1], tz).astype(x.dtype)
    return out if layout == "NCDHW" else np.transpose(out, (0, 2, 3, 4, 1))


def _make3(size, **attrs):
    from tvm.relax import op as O
    return lambda v: O.image.resize3d(v, size, **attrs)


def _check3(x: np.ndarray, size, layout, method, mode, rnd="", vm=True) -> None:
    attrs = dict(layout=layout, method=method, coordinate_transformation_mode=mode,
                 rounding_method=rnd)
    ty, norm = tvm_call(_make3(size, **attrs), (x.shape, str(x.dtype)))
    want = ref_resize3d(x, size, layout, method, mode, rnd)
    args, dts = [x, ("shape", list(size))], [str(x.dtype), "int64"]
    got = eval_op("relax.image.resize3d", args, ty, norm, arg_dtypes=dts)[0]
    assert arrays_match(got, want), (got, want)
    assert agrees("relax.image.resize3d", args, ty, [want], norm, exact=True, arg_dtypes=dts)
    if vm:
        assert arrays_match(run_tvm(_make3(size, **attrs), x), want)


SIZES3 = [((1, 2, 2, 3, 4), (3, 5, 3)), ((1, 1, 4, 3, 2), (2, 2, 5)), ((2, 1, 3, 2, 2), (6, 4, 4))]
NEAREST3 = [(m, r) for m in ("asymmetric", "half_pixel", "align_corners", "tf_half_pixel_for_nn")
            for r in ("", "round", "floor", "ceil", "round_prefer_floor", "round_prefer_ceil")]


def _to_layout3(x: np.ndarray, layout: str) -> np.ndarray:
    return x if layout == "NCDHW" else np.ascontiguousarray(np.transpose(x, (0, 2, 3, 4, 1)))


@pytest.mark.parametrize("mode,rnd", NEAREST3)
@pytest.mark.parametrize("layout", ["NCDHW", "NDHWC"])
def test_resize3d_nearest_random_and_vm(mode, rnd, layout):
    for k, (shape, size) in enumerate(SIZES3):
        _check3(_to_layout3(rand(shape, seed=k), layout), size, layout, "nearest_neighbor", mode, rnd,
                vm=(k < 2))


@pytest.mark.parametrize("mode", LINEAR)
@pytest.mark.parametrize("layout", ["NCDHW", "NDHWC"])
def test_resize3d_linear_random_and_vm(mode, layout):
    for k, (shape, size) in enumerate(SIZES3):
        _check3(_to_layout3(rand(shape, seed=k), layout), size, layout, "linear", mode)


@pytest.mark.parametrize("method,mode", [("linear", m) for m in LINEAR] +
                         [("nearest_neighbor", m) for m in ("half_pixel", "asymmetric", "align_corners")])
def test_resize3d_specials_and_vm(method, mode):
    for seed in range(2):
        x = special((1, 2, 2, 3, 2), seed=seed, pool=SPECIALS_IMG)
        _check3(x, (3, 4, 3), "NCDHW", method, mode, "round" if method == "nearest_neighbor" else "")


def test_resize3d_asymmetric_floor_has_no_integer_division():
    """topi's resize3d computes floor(c + 1e-5) where resize2d uses x // k; on 3 -> 9 both give
    the same indices, and the VM agrees with the floor formula."""
    x = rand((1, 1, 3, 1, 3), seed=4)
    _check3(x, (9, 2, 9), "NCDHW", "nearest_neighbor", "asymmetric", "floor")
    assert [_nearest3(o, 3, 9, "asymmetric", "floor") for o in range(9)] == [o // 3 for o in range(9)]


@pytest.mark.parametrize("method", ["nearest_neighbor", "linear"])
def test_resize3d_float16(method):
    rnd = "round" if method == "nearest_neighbor" else ""
    _check3(rand((1, 2, 2, 3, 2), seed=5, dtype=np.float16), (3, 4, 3), "NCDHW", method, "half_pixel", rnd)
    pool = [0.0, -0.0, INF, -INF, NAN, 65504.0, -65504.0, 1.5, -2.0, 6e-8]
    y = special((1, 2, 2, 3, 2), seed=6, pool=pool).astype(np.float16)
    _check3(y, (3, 4, 3), "NCDHW", method, "half_pixel", rnd)


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16"])
def test_resize3d_nearest_small_integers(dtype):
    x = np.random.default_rng(1).integers(-100 if dtype != "uint8" else 0, 100,
                                          (1, 2, 2, 3, 2)).astype(dtype)
    _check3(x, (3, 4, 3), "NCDHW", "nearest_neighbor", "asymmetric", "floor")


def test_resize3d_lerp_order_matters():
    """The trilinear order is part of the specification: w, then h, then d. Another order
    (d first) gives a different float32 result on these inputs, and the encoder rejects it."""
    x = rand((1, 1, 2, 2, 2), seed=11) * f32(1e3)
    x[0, 0, 0, 0, 0] = f32(3e7)
    size, attrs = (3, 3, 3), dict(method="linear", coordinate_transformation_mode="half_pixel")
    ty, norm = tvm_call(_make3(size, **attrs), (x.shape, "float32"))
    want = ref_resize3d(x, size, "NCDHW", "linear", "half_pixel")
    other = ref_resize3d(np.ascontiguousarray(np.transpose(x, (0, 1, 4, 3, 2))), size, "NCDHW",
                         "linear", "half_pixel")
    other = np.transpose(other, (0, 1, 4, 3, 2))       # d-lerp innermost
    assert not arrays_match(want, other)
    args, dts = [x, ("shape", list(size))], ["float32", "int64"]
    assert agrees("relax.image.resize3d", args, ty, [want], norm, exact=True, arg_dtypes=dts)
    assert not agrees("relax.image.resize3d", args, ty, [other], norm, exact=False, arg_dtypes=dts)


def test_resize3d_broken_twins():
    x = rand((1, 1, 2, 3, 4), seed=7)
    for method, mode, rnd in [("linear", "half_pixel", ""), ("nearest_neighbor", "asymmetric", "round"),
                              ("linear", "align_corners", "")]:
        attrs = dict(method=method, coordinate_transformation_mode=mode, rounding_method=rnd)
        ty, norm = tvm_call(_make3((3, 5, 6), **attrs), (x.shape, "float32"))
        want = ref_resize3d(x, (3, 5, 6), "NCDHW", method, mode, rnd)
        args, dts = [x, ("shape", [3, 5, 6])], ["float32", "int64"]
        bad = want.copy()
        bad[0, 0, 1, 2, 3] = np.nextafter(bad[0, 0, 1, 2, 3], f32(INF))
        assert not agrees("relax.image.resize3d", args, ty, [bad], norm, exact=False, arg_dtypes=dts)
        other = ref_resize3d(x, (3, 5, 6), "NCDHW", method,
                             "asymmetric" if mode != "asymmetric" else "half_pixel", rnd)
        assert not agrees("relax.image.resize3d", args, ty, [other], norm, exact=False, arg_dtypes=dts)


@pytest.mark.parametrize("attrs", [dict(coordinate_transformation_mode="tf_crop_and_resize"),
                                   dict(out_dtype="float16"),
                                   dict(method="cubic", coordinate_transformation_mode="align_corners",
                                        size=(3, 1, 3)),
                                   dict(coordinate_transformation_mode="align_corners", size=(1, 3, 3))])
def test_resize3d_unsupported(attrs):
    attrs = dict(attrs)
    size = attrs.pop("size", (3, 5, 6))
    x = rand((1, 1, 2, 3, 4))
    ty, norm = tvm_call(_make3(size, **attrs), (x.shape, "float32"))
    with pytest.raises(Unsupported):
        eval_op("relax.image.resize3d", [x, ("shape", list(size))], ty, norm,
                arg_dtypes=["float32", "int64"])


def _module3(shape, size, dtype="float32", **attrs):
    from tests.test_ops_linalg import typed_module
    return typed_module(_make3(size, **attrs), (shape, dtype))


VERIFY3 = [((1, 1, 2, 3, 2), (3, 2, 3), "float32", "NCDHW", "nearest_neighbor", m, r)
           for m, r in [("asymmetric", ""), ("asymmetric", "floor"), ("half_pixel", "round"),
                        ("align_corners", ""), ("tf_half_pixel_for_nn", "ceil"),
                        ("half_pixel", "round_prefer_ceil")]] + [
    ((1, 2, 2, 2, 2), (3, 3, 3), "float32", "NDHWC", "nearest_neighbor", "half_pixel", ""),
] + [((1, 1, 2, 3, 2), (3, 2, 3), "float32", "NCDHW", "linear", m, "") for m in LINEAR] + [
    ((1, 2, 2, 2, 2), (2, 3, 3), "float32", "NDHWC", "linear", "align_corners", ""),
    ((1, 1, 2, 2, 2), (3, 2, 3), "float16", "NCDHW", "linear", "half_pixel", ""),
]


@pytest.mark.parametrize("shape,size,dtype,layout,method,mode,rnd", VERIFY3)
def test_resize3d_legalize_is_proved(shape, size, dtype, layout, method, mode, rnd):
    from tvm import relax

    import tvtv
    mod = _module3(shape, size, dtype, layout=layout, method=method,
                   coordinate_transformation_mode=mode, rounding_method=rnd)
    (r,) = tvtv.verify(mod, relax.transform.LegalizeOps()(mod), timeout=20).results
    assert r.verdict == "proved", r.to_dict()


LIN3, NEAR3 = LIN, NEAR        # resize2d's attribute sets, on resize3d
# the legalized TIR of resize3d (1, 1, 2, 3, 2) -> (3, 2, 3); the first occurrence is replaced
MUTATIONS3 = {
    # the first lerp weight (along w) 1 - t becomes 1 + t
    "1 - t exchanged for 1 + t": (LIN3, "T.float32(1.0) - (", "T.float32(1.0) + ("),
    # the upper neighbour along w, x0 + 1, becomes x0 (index off by one)
    "upper neighbour off by one": (LIN3, ") + T.int64(1), T.int64(1))", ") + T.int64(0), T.int64(1))"),
    # h: 3 -> 2, coordinates 0.25 and 1.75 round to 0 and 2; a clamp at 1 reads row 1
    "clamp bound off by one": (NEAR3, "T.int64(2)), T.int64(0))", "T.int64(1)), T.int64(0))"),
    # h's scale 1.5 -> 1.25: coordinate 1.375 rounds to 1 instead of 2
    "scale changed": (NEAR3, "T.float32(1.5)", "T.float32(1.25)"),
}


# about 45 s: the IEEE model times out and the VM's random inputs show the difference
@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow)
                                  if n == "upper neighbour off by one" else n
                                  for n in sorted(MUTATIONS3)])
def test_resize3d_broken_legalization_is_refuted(name):
    from tvm import relax

    import tvtv
    from tvtv.ir import tvm_bridge
    attrs, old, new = MUTATIONS3[name]
    source = relax.transform.LegalizeOps()(_module3((1, 1, 2, 3, 2), (3, 2, 3), **attrs))
    text = source.script()
    assert old in text, f"mutation {name!r} does not apply:\n{text}"
    broken = tvm_bridge.parse_script(text.replace(old, new, 1))
    (r,) = tvtv.verify(source, broken, timeout=20).results
    assert r.verdict == "counterexample", r.to_dict()


# == affine_grid ===============================================================================

from fractions import Fraction  # noqa: E402


def _round_once(q: Fraction, t) -> float:
    """q rounded to nearest (ties to even) in numpy float type t, by comparing the float
    candidates around float64(q) exactly."""
    c = t(float(q))
    cands = [np.nextafter(c, t(-INF)), c, np.nextafter(c, t(INF))]
    dist = [abs(Fraction(float(v)) - q) for v in cands]
    m = min(dist)
    best = [v for v, dv in zip(cands, dist) if dv == m]
    if len(best) > 1:   # a tie: the even significand (its last significand bit is 0)
        best = [v for v in best if np.frexp(float(v))[0] * 2 ** (np.finfo(t).nmant + 1) % 2 == 0]
    return float(best[0])


def ref_affine_grid(theta: np.ndarray, size, align_corners: bool) -> np.ndarray:
    """PyTorch's affine_grid in TVM's layout (N, k, *size), coordinates rounded once,
    ((t[k] + t[k-1] * c_0) + ...) + t[0] * c_last in the dtype."""
    t = theta.dtype.type
    n, k = theta.shape[0], theta.shape[1]
    coords = []
    for s in size:
        if align_corners:
            coords.append([_round_once(Fraction(-1) + Fraction(2 * j, s - 1), t) for j in range(s)])
        else:
            coords.append([_round_once(Fraction(2 * j + 1, s) - 1, t) for j in range(s)])
    out = np.zeros((n, k, *size), theta.dtype)
    with np.errstate(all="ignore"):
        for pos in np.ndindex(*size):
            for d in range(k):
                v = theta[:, d, k].copy()
                for r in range(k):
                    v = (v + theta[:, d, k - 1 - r] * t(coords[r][pos[r]])).astype(theta.dtype)
                out[(slice(None), d) + pos] = v
    return out


def _make_ag(size, align_corners):
    from tvm.relax import op as O
    return lambda t: O.image.affine_grid(t, size, align_corners=align_corners)


def _check_ag(theta: np.ndarray, size, align_corners: bool, vm: bool = True) -> np.ndarray:
    ty, norm = tvm_call(_make_ag(size, align_corners), (theta.shape, str(theta.dtype)))
    want = ref_affine_grid(theta, size, align_corners)
    args, dts = [theta, ("shape", list(size))], [str(theta.dtype), "int64"]
    got = eval_op("relax.image.affine_grid", args, ty, norm, arg_dtypes=dts)[0]
    assert arrays_match(got, want), (got, want)
    assert agrees("relax.image.affine_grid", args, ty, [want], norm, exact=True, arg_dtypes=dts)
    if vm:
        assert arrays_match(run_tvm(_make_ag(size, align_corners), theta), want)
    return want


# pixel centers of these sizes are exact in float32 and float16: TVM computes them exactly
EXACT_SIZES = [(2, 3), (4, 8), (1, 3), (3, 1), (2, 3, 4), (1, 4, 2)]


@pytest.mark.parametrize("size", EXACT_SIZES)
def test_affine_grid_random_and_vm(size):
    for seed in range(3):
        theta = rand((2, len(size), len(size) + 1), seed=seed)
        _check_ag(theta, size, align_corners=False)


@pytest.mark.parametrize("size", [(2, 3), (2, 3, 4)])
def test_affine_grid_specials_and_vm(size):
    pool = [0.0, -0.0, INF, -INF, NAN, FMAX, -FMAX, 1.5, -2.0, 3.25]
    for seed in range(3):
        _check_ag(special((3, len(size), len(size) + 1), seed=seed, pool=pool), size, False)


def test_affine_grid_float16_and_vm():
    _check_ag(rand((2, 2, 3), seed=3, dtype=np.float16), (4, 2), False)
    pool = [0.0, -0.0, INF, -INF, NAN, 65504.0, -65504.0, 1.5, -2.0, 6e-8]
    _check_ag(special((2, 2, 3), seed=4, pool=pool).astype(np.float16), (2, 4), False)


@pytest.mark.parametrize("size", [(3, 5), (7, 4), (5, 6, 7), (2, 2)])
def test_affine_grid_inexact_sizes_reference(size):
    """align_corners both ways, sizes whose coordinates round: encoder = reference (the VM
    differs: test_affine_grid_coordinates_are_a_finding)."""
    for align in (True, False):
        _check_ag(rand((2, len(size), len(size) + 1), seed=len(size)), size, align, vm=False)


IDENTITY = np.array([[[1, 0, 0], [0, 1, 0]]], f32)


def test_affine_grid_coordinates_are_a_finding():
    """Pinned: TVM's coordinates are not the documented ones rounded once. Identity theta,
    so the output is the coordinate grid itself:
      align_corners=True, size (3, 5): x = [-1, -0.5, -5.96e-08, 0.49999991, 0.99999988]
        (step float32((2 - 1e-7) / (s - 1))); PyTorch's linspace(-1, 1, 5) = [-1, -0.5, 0, 0.5, 1];
      align_corners=False, size (7, 4): y[3] = 2.98e-08 (float32(-1 + 1/7) + 3 * float32(2/7)),
        the pixel center (2*3+1)/7 - 1 = 0."""
    out = run_tvm(_make_ag((3, 5), True), IDENTITY)
    assert out[0, 0, 0].tolist() == [-1.0, -0.5, -5.960464477539063e-08, 0.49999991059303284,
                                     0.9999998807907104]
    want = _check_ag(IDENTITY, (3, 5), True, vm=False)
    assert want[0, 0, 0].tolist() == [-1.0, -0.5, 0.0, 0.5, 1.0]
    out = run_tvm(_make_ag((7, 4), False), IDENTITY)
    assert out[0, 1, 3, 0] == f32(2.9802322387695312e-08)
    want = _check_ag(IDENTITY, (7, 4), False, vm=False)
    assert want[0, 1, 3, 0] == 0.0 and want[0, 0, 0].tolist() == [-0.75, -0.25, 0.25, 0.75]


def test_affine_grid_order_is_fixed():
    """The order ((t2 + t1*y) + t0*x) is part of the specification: x's product first,
    ((t2 + t0*x) + t1*y), differs on cancelling inputs and is rejected."""
    # at y = 0.5, x = -0.5: (2 + 2^25) - 2^24 = 2^24 (2 + 2^25 ties to 2^25), while
    # (2 - 2^24) + 2^25 = 2^24 + 2 exactly
    theta = np.array([[[2.0 ** 25, 2.0 ** 26, 2.0], [1.0, 2.0, 3.0]]], f32)
    size = (2, 2)      # coordinates -0.5, 0.5
    ty, norm = tvm_call(_make_ag(size, False), (theta.shape, "float32"))
    want = _check_ag(theta, size, False)
    other = want.copy()
    with np.errstate(all="ignore"):
        for i, y in enumerate((-0.5, 0.5)):
            for j, x in enumerate((-0.5, 0.5)):
                other[0, 0, i, j] = f32(f32(theta[0, 0, 2] + theta[0, 0, 0] * f32(x)) + theta[0, 0, 1] * f32(y))
    assert not arrays_match(want, other)
    args, dts = [theta, ("shape", list(size))], ["float32", "int64"]
    assert not agrees("relax.image.affine_grid", args, ty, [other], norm, exact=False, arg_dtypes=dts)


def test_affine_grid_broken_twins():
    theta = rand((1, 2, 3), seed=9)
    for align in (True, False):
        ty, norm = tvm_call(_make_ag((3, 4), align), (theta.shape, "float32"))
        args, dts = [theta, ("shape", [3, 4])], ["float32", "int64"]
        want = ref_affine_grid(theta, (3, 4), align)
        bad = want.copy()
        bad[0, 1, 2, 3] = np.nextafter(bad[0, 1, 2, 3], f32(INF))
        assert not agrees("relax.image.affine_grid", args, ty, [bad], norm, exact=False, arg_dtypes=dts)
        other = ref_affine_grid(theta, (3, 4), not align)
        assert not agrees("relax.image.affine_grid", args, ty, [other], norm, exact=False, arg_dtypes=dts)
        # channels swapped (PyTorch's x/y order confused)
        assert not agrees("relax.image.affine_grid", args, ty, [want[:, ::-1].copy()], norm,
                          exact=False, arg_dtypes=dts)


def test_affine_grid_unsupported():
    theta = rand((1, 2, 3))
    ty, norm = tvm_call(_make_ag((1, 3), True), (theta.shape, "float32"))
    with pytest.raises(Unsupported):
        eval_op("relax.image.affine_grid", [theta, ("shape", [1, 3])], ty, norm,
                arg_dtypes=["float32", "int64"])


def _module_ag(shape, size, align, dtype="float32"):
    from tests.test_ops_linalg import typed_module
    return typed_module(_make_ag(size, align), (shape, dtype))


AG_PROVED = [((2, 2, 3), (2, 3), "float32"), ((1, 2, 3), (4, 8), "float32"),
             ((1, 3, 4), (2, 3, 4), "float32"), ((2, 2, 3), (2, 4), "float16")]


@pytest.mark.parametrize("shape,size,dtype", AG_PROVED)
def test_affine_grid_legalize_is_proved(shape, size, dtype):
    from tvm import relax

    import tvtv
    mod = _module_ag(shape, size, False, dtype)
    (r,) = tvtv.verify(mod, relax.transform.LegalizeOps()(mod), timeout=20).results
    assert r.verdict == "proved", r.to_dict()


@pytest.mark.parametrize("size,align", [((3, 5), True), ((7, 4), False), ((2, 2), True)])
def test_affine_grid_legalize_finding_is_refuted(size, align):
    from tvm import relax

    import tvtv
    mod = _module_ag((1, 2, 3), size, align)
    (r,) = tvtv.verify(mod, relax.transform.LegalizeOps()(mod), timeout=20).results
    assert r.verdict == "counterexample", r.to_dict()


# legalized TIR of affine_grid (1, 2, 3) -> (2, 3), pixel centers (proved above):
#   p0[n, d, 2] + p0[n, d, 1] * (-0.5 + float(i0)) + p0[n, d, 0] * (-0.667 + float(i1) * 0.667)
MUTATIONS_AG = {
    "translation column off by one": ("p0[v_n, v_dim, T.int64(2)]", "p0[v_n, v_dim, T.int64(1)]"),
    "start constant sign": ("T.float32(-0.5) + ", "T.float32(0.5) + "),
    "coordinate of the other axis": ('T.Cast("float32", v_i0)', 'T.Cast("float32", v_i1)'),
    "step constant changed": ("T.float32(0.66666666666666663)", "T.float32(0.5)"),
}


@pytest.mark.parametrize("name", sorted(MUTATIONS_AG))
def test_affine_grid_broken_legalization_is_refuted(name):
    from tvm import relax

    import tvtv
    from tvtv.ir import tvm_bridge
    old, new = MUTATIONS_AG[name]
    source = relax.transform.LegalizeOps()(_module_ag((1, 2, 3), (2, 3), False))
    text = source.script()
    assert old in text, f"mutation {name!r} does not apply:\n{text}"
    broken = tvm_bridge.parse_script(text.replace(old, new, 1))
    (r,) = tvtv.verify(source, broken, timeout=20).results
    assert r.verdict == "counterexample", r.to_dict()


# == grid_sample ===============================================================================

def ref_grid_sample(x: np.ndarray, grid: np.ndarray, method: str, padding: str,
                    align: bool) -> np.ndarray:
    """PyTorch's grid_sample on TVM's grid layout (N, 2, Ho, Wo), topi's float32 order:
    unnormalize, clip (border), then bilinear ((p00 wy0 wx0 + p01 wy0 wx1) + p10 wy1 wx0) +
    p11 wy1 wx1 with zero taps outside, or nearest (half to even)."""
    n, c, h, w = x.shape
    ho, wo = grid.shape[2:]
    out = np.zeros((n, c, ho, wo), f32)

    def unnorm(g, s):
        if align:
            return f32(f32(f32(g + f32(1)) * f32(s - 1)) / f32(2))
        return f32(f32(-0.5) + f32(f32(f32(g + f32(1)) * f32(s)) / f32(2)))

    def clip(v, s):
        v = v if v > 0 else f32(0.0)
        return v if v < f32(s - 1) else f32(s - 1)

    def px(b, ch, i, j):
        return x[b, ch, i, j] if 0 <= i < h and 0 <= j < w else f32(0.0)

    with np.errstate(all="ignore"):
        for b in range(n):
            for i in range(ho):
                for j in range(wo):
                    ys, xs = unnorm(grid[b, 1, i, j], h), unnorm(grid[b, 0, i, j], w)
                    if padding == "border":
                        ys, xs = clip(ys, h), clip(xs, w)
                    for ch in range(c):
                        if method == "nearest":
                            out[b, ch, i, j] = px(b, ch, int(np.rint(ys)), int(np.rint(xs)))
                            continue
                        y0, x0 = int(np.floor(ys)), int(np.floor(xs))
                        ty, tx = f32(ys - f32(y0)), f32(xs - f32(x0))
                        wy, wx = (f32(1) - ty, ty), (f32(1) - tx, tx)
                        acc = None
                        for dy in (0, 1):
                            for dx in (0, 1):
                                t = f32(f32(px(b, ch, y0 + dy, x0 + dx) * wy[dy]) * wx[dx])
                                acc = t if acc is None else f32(acc + t)
                        out[b, ch, i, j] = acc
    return out


def _make_gs(**kw):
    from tvm.relax import op as O
    return lambda a, g: O.image.grid_sample(a, g, **kw)


def _check_gs(x, grid, method, padding, align, vm=True):
    kw = dict(method=method, padding_mode=padding, align_corners=align)
    ty, norm = tvm_call(_make_gs(**kw), (x.shape, "float32"), (grid.shape, "float32"))
    want = ref_grid_sample(x, grid, method, padding, align)
    got = eval_op("relax.image.grid_sample", [x, grid], ty, norm)[0]
    assert arrays_match(got, want), (got, want)
    assert agrees("relax.image.grid_sample", [x, grid], ty, [want], norm, exact=True)
    if vm:
        assert arrays_match(run_tvm(_make_gs(**kw), x, grid), want)
    return want


GS_ATTRS = [(m, p, a) for m in ("bilinear", "nearest") for p in ("zeros", "border") for a in (False, True)]


@pytest.mark.parametrize("method,padding,align", GS_ATTRS)
def test_grid_sample_random_and_vm(method, padding, align):
    for k, (shape, out) in enumerate([((1, 2, 3, 4), (5, 3)), ((2, 1, 4, 2), (2, 6))]):
        x = rand(shape, seed=k)
        grid = (rand((shape[0], 2, *out), seed=10 + k) * f32(1.3)).astype(f32)  # some outside [-1, 1]
        _check_gs(x, grid, method, padding, align)


@pytest.mark.parametrize("method,padding,align", GS_ATTRS)
def test_grid_sample_special_data_and_grid(method, padding, align):
    """Special data (inf * 0 weight = NaN, as TVM) and special grid values: ±1, ±0, far
    outside (±3, ±FLT_MAX with border), the exact pixel positions."""
    x = special((1, 2, 3, 4), seed=1, pool=SPECIALS_IMG)
    gpool = [-1.0, 1.0, 0.0, -0.0, 0.5, -0.5, 3.0, -3.0, 1 / 3]
    if padding == "border":
        gpool += [FMAX, -FMAX, INF, -INF]
    grid = special((1, 2, 4, 3), seed=2, pool=gpool)
    _check_gs(x, grid, method, padding, align)


def test_grid_sample_nan_grid_is_undefined():
    """A NaN grid value is UB (the documentation is silent); TVM's zeros padding casts
    floor(NaN) to int32 (UB too), its border clip maps NaN to 0."""
    x = rand((1, 1, 2, 3))
    grid = np.zeros((1, 2, 1, 2), f32)
    grid[0, 1, 0, 1] = NAN
    for padding in ("zeros", "border"):
        ty, norm = tvm_call(_make_gs(padding_mode=padding), (x.shape, "float32"), (grid.shape, "float32"))
        from tvtv.encode.evaluate import encode_op
        _, ctx = encode_op("relax.image.grid_sample", [x, grid], ty, norm)
        assert z3.simplify(ctx.well_defined()).eq(z3.BoolVal(False)) or \
            z3.Solver().check(ctx.well_defined()) == z3.unsat


def test_grid_sample_layout_is_a_finding():
    """Pinned: the Relax docstring gives grid [N, H_out, W_out, 2] and output
    [N, C, H_out, W_out]; TVM infers the output from grid.shape[2:], i.e. reads the grid as
    [N, 2, H_out, W_out] (topi's layout): a PyTorch-layout grid (1, 5, 6, 2) on data
    (1, 3, 3, 4) gives (1, 3, 6, 2), not (1, 3, 5, 6). The encoder follows the inferred type."""
    ty, _ = tvm_call(_make_gs(), ((1, 3, 3, 4), "float32"), ((1, 5, 6, 2), "float32"))
    assert tuple(ty.shape) == (1, 3, 6, 2)
    ty, _ = tvm_call(_make_gs(), ((1, 3, 3, 4), "float32"), ((1, 2, 5, 6), "float32"))
    assert tuple(ty.shape) == (1, 3, 5, 6)


def test_grid_sample_broken_twins():
    x, grid = rand((1, 1, 3, 4), seed=3), (rand((1, 2, 2, 3), seed=4) * f32(0.9)).astype(f32)
    for method, padding, align in GS_ATTRS:
        kw = dict(method=method, padding_mode=padding, align_corners=align)
        ty, norm = tvm_call(_make_gs(**kw), (x.shape, "float32"), (grid.shape, "float32"))
        want = ref_grid_sample(x, grid, method, padding, align)
        bad = want.copy()
        bad[0, 0, 1, 2] = np.nextafter(bad[0, 0, 1, 2], f32(INF))
        assert not agrees("relax.image.grid_sample", [x, grid], ty, [bad], norm, exact=False)
        # x and y exchanged (grid channel 0 is x)
        swapped = ref_grid_sample(x, np.ascontiguousarray(grid[:, ::-1]), method, padding, align)
        assert not arrays_match(swapped, want)
        assert not agrees("relax.image.grid_sample", [x, grid], ty, [swapped], norm, exact=False)
        other = ref_grid_sample(x, grid, method, padding, not align)
        assert not agrees("relax.image.grid_sample", [x, grid], ty, [other], norm, exact=False)


@pytest.mark.parametrize("kw", [dict(method="bicubic"), dict(padding_mode="reflection")])
def test_grid_sample_unsupported(kw):
    x, grid = rand((1, 1, 3, 4)), rand((1, 2, 2, 2))
    ty, norm = tvm_call(_make_gs(**kw), (x.shape, "float32"), (grid.shape, "float32"))
    with pytest.raises(Unsupported):
        eval_op("relax.image.grid_sample", [x, grid], ty, norm)


def _module_gs(dshape, gshape, **kw):
    from tests.test_ops_linalg import typed_module
    return typed_module(_make_gs(**kw), (dshape, "float32"), (gshape, "float32"))


GS_PROVED = [((1, 1, 2, 3), (1, 2, 2, 2), "nearest", "zeros", True),
             ((1, 1, 2, 3), (1, 2, 2, 2), "nearest", "border", False),
             ((1, 1, 2, 2), (1, 2, 1, 1), "bilinear", "zeros", False),
             ((1, 1, 2, 2), (1, 2, 1, 1), "bilinear", "border", True),
             ((1, 2, 2, 3), (1, 2, 2, 2), "bilinear", "zeros", True)]


# In the IEEE model (bit-exact) the legalized TIR meets the specification term for term; in
# the default abstract model the checker's queries time out on bilinear (unknown after 70 to
# 120 s: the float->int casts and floor are uninterpreted there), so these checks ask IEEE.


@pytest.mark.parametrize("dshape,gshape,method,padding,align", GS_PROVED)
def test_grid_sample_legalize_is_proved(dshape, gshape, method, padding, align):
    from tvm import relax

    import tvtv
    mod = _module_gs(dshape, gshape, method=method, padding_mode=padding, align_corners=align)
    (r,) = tvtv.verify(mod, relax.transform.LegalizeOps()(mod), timeout=20, fp="ieee").results
    assert r.verdict == "proved", r.to_dict()


GS_BIL = dict(method="bilinear", padding_mode="zeros", align_corners=False)
# legalized TIR of grid_sample data (1, 1, 2, 3), grid (1, 2, 2, 2); first occurrence replaced.
# Mutations of the coordinate itself (the -0.5 offset, x/y channels, nearbyint -> floor) end
# `unknown` TIR against TIR: the UB query over the changed float->int64 casts times out in
# the IEEE model (the abstract model's counterexample is a cast it cannot confirm).
MUTATIONS_GS = {
    "weight 1 - t exchanged for 1 + t": ("(T.float32(1.0) - (", "(T.float32(1.0) + ("),
    "padding value 0 changed to 1": ("T.float32(0.0)) *", "T.float32(1.0)) *"),
    # about 45 s: found by the VM / the evaluation on seeded inputs
    "tap bound off by one": ("T.int64(-1) <= ", "T.int64(0) <= "),
}


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow)
                                  if n == "tap bound off by one" else n
                                  for n in sorted(MUTATIONS_GS)])
def test_grid_sample_broken_legalization_is_refuted(name):
    from tvm import relax

    import tvtv
    from tvtv.ir import tvm_bridge
    old, new = MUTATIONS_GS[name]
    source = relax.transform.LegalizeOps()(_module_gs((1, 1, 2, 3), (1, 2, 2, 2), **GS_BIL))
    text = source.script()
    assert old in text, f"mutation {name!r} does not apply:\n{text}"
    broken = tvm_bridge.parse_script(text.replace(old, new, 1))
    (r,) = tvtv.verify(source, broken, timeout=20, fp="ieee").results
    assert r.verdict == "counterexample", r.to_dict()


# == resize2d / resize3d: cubic ================================================================
#
# The reference re-derives the spec's float32 arithmetic with its own formulas: Keys' cubic
# weights in topi's polynomial form, each operation rounded to float32, the separable sum
# ((v0*w0 + v1*w1) + v2*w2) + v3*w3 innermost over w. TVM's legalized TIR computes the same
# float32 operations per element at run time (the weights from c - floor(c) with the
# constants a, a+2, 3+a, 3+2a, -a; `_cubic_kernel` without a leading 0 term: TVM folds it).

def _cubic_w(t: np.float32, a: float) -> list[np.float32]:
    ca, ca2, ca3, ca23, cna = f32(a), f32(a + 2.0), f32(a + 3.0), f32(2.0 * a + 3.0), f32(-a)
    t2 = f32(t * t)
    t3 = f32(t2 * t)
    return [f32(ca * f32(f32(t3 - f32(f32(2.0) * t2)) + t)),
            f32(f32(f32(ca2 * t3) - f32(ca3 * t2)) + f32(1.0)),
            f32(f32(f32(-ca2 * t3) + f32(ca23 * t2)) - f32(ca * t)),
            f32(f32(cna * t3) + f32(ca * t2))]


def _renorm(w: list, keep: list[bool]) -> list[np.float32]:
    w = [wi if k else f32(0.0) for wi, k in zip(w, keep)]
    total = f32(f32(f32(w[0] + w[1]) + w[2]) + w[3])
    return [f32(wi / total) for wi in w]


def _cubic_dim(o: int, n_in: int, n_out: int, mode: str, a: float, exclude: int):
    """(clamped taps, weights, raw weights, floor(c)) of output position o along one axis."""
    c = _coord(o, n_in, n_out, mode)
    x0 = int(np.floor(c))
    raw = _cubic_w(f32(c - np.floor(c)), a)
    w = _renorm(raw, [0 <= x0 - 1 + i < n_in for i in range(4)]) if exclude else raw
    return [min(max(x0 - 1 + i, 0), n_in - 1) for i in range(4)], w, raw, x0


def ref_cubic(x: np.ndarray, size, layout: str, mode: str, a: float = -0.75, exclude: int = 0,
              tvm3_depth_bug: bool = False) -> np.ndarray:
    """The spec's cubic resize (2-D or 3-D), in canonical layout, transposed from/to `layout`.
    tvm3_depth_bug: TVM's resize3d exclude weights along d (the width's raw weights masked
    by the width's taps against the height, renormalised) -- the pinned finding."""
    nd = x.ndim - 2
    last = layout.endswith("C")
    xc = np.moveaxis(x, -1, 1) if last else x
    sp_in = xc.shape[2:]
    out = np.zeros(xc.shape[:2] + tuple(size), x.dtype)
    xf = xc.astype(f32)
    with np.errstate(all="ignore"):
        for pos in np.ndindex(*size):
            dims = [_cubic_dim(p, n, m, mode, a, exclude) for p, n, m in zip(pos, sp_in, size)]
            taps, ws = [d[0] for d in dims], [d[1] for d in dims]
            if tvm3_depth_bug and exclude:
                _, _, raw_x, x0 = dims[-1]
                ws[0] = _renorm(raw_x, [not (x0 - 1 + i < 0 or x0 + i > sp_in[1]) for i in range(4)])

            def rec(k: int, src: list[int]) -> np.ndarray:
                if k == nd:
                    return xf[(slice(None), slice(None), *src)]
                acc = None
                for i in range(4):
                    v = rec(k + 1, src + [taps[k][i]]) * ws[k][i]
                    acc = v if acc is None else acc + v
                return acc

            out[(slice(None), slice(None), *pos)] = rec(0, []).astype(x.dtype)
    return np.moveaxis(out, 1, -1) if last else out


def ref_cubic_onnx64(x: np.ndarray, size, mode: str, a: float, exclude: int) -> np.ndarray:
    """ONNX's reference cubic (onnx/reference/ops/op_resize.py, transcribed) in float64,
    canonical layout: coefficients in ONNX's arrangement, taps x0-2..x0+1 with ratio 1 at an
    integral coordinate (else x0-1..x0+2 with ratio c - x0), edge-padded data."""
    def coord(o, n, m):
        if mode == "half_pixel" or (mode == "pytorch_half_pixel" and m > 1):
            return (o + 0.5) * n / m - 0.5
        if mode == "pytorch_half_pixel":
            return 0.0
        if mode == "align_corners":
            return o * (n - 1) / (m - 1)
        return o * n / m

    def coeffs(r):
        s, u = r, 1 - r
        return np.array([((a * (s + 1) - 5 * a) * (s + 1) + 8 * a) * (s + 1) - 4 * a,
                         ((a + 2) * s - (a + 3)) * s * s + 1,
                         ((a + 2) * u - (a + 3)) * u * u + 1,
                         ((a * (u + 1) - 5 * a) * (u + 1) + 8 * a) * (u + 1) - 4 * a])

    def axis(o, n, m):
        c = coord(o, n, m)
        x0 = int(np.floor(c))
        if c == x0:
            r, first = 1.0, x0 - 2
        else:
            r, first = c - x0, x0 - 1
        w = coeffs(r)
        taps = [first + i for i in range(4)]
        if exclude:
            w = np.where([0 <= t < n for t in taps], w, 0.0)
            w = w / w.sum()
        return [min(max(t, 0), n - 1) for t in taps], w

    xd = x.astype(np.float64)
    out = np.zeros(x.shape[:2] + tuple(size))
    for pos in np.ndindex(*size):
        dims = [axis(p, n, m) for p, n, m in zip(pos, x.shape[2:], size)]
        sub = xd[np.ix_(range(x.shape[0]), range(x.shape[1]), *[d[0] for d in dims])]
        with np.errstate(all="ignore"):   # 0 * inf = NaN, as specified
            for d in reversed(dims):      # contract the last spatial axis first
                sub = sub @ d[1]
        out[(slice(None), slice(None), *pos)] = sub
    return out


def _cubic_attrs(layout, mode, a, exclude):
    return dict(layout=layout, method="cubic", coordinate_transformation_mode=mode,
                cubic_alpha=a, cubic_exclude=exclude)


def _check_cubic(x: np.ndarray, size, layout, mode, a=-0.75, exclude=0, vm=True) -> np.ndarray:
    op, make = ("relax.image.resize2d", _make) if len(size) == 2 else ("relax.image.resize3d", _make3)
    attrs = _cubic_attrs(layout, mode, a, exclude)
    ty, norm = tvm_call(make(size, **attrs), (x.shape, str(x.dtype)))
    want = ref_cubic(x, size, layout, mode, a, exclude)
    args, dts = [x, ("shape", list(size))], [str(x.dtype), "int64"]
    got = eval_op(op, args, ty, norm, arg_dtypes=dts)[0]
    assert arrays_match(got, want), (got, want)
    assert agrees(op, args, ty, [want], norm, exact=True, arg_dtypes=dts)
    if vm:
        assert arrays_match(run_tvm(make(size, **attrs), x), want)
    return want


CUBIC_MODES = LINEAR + ["tf_half_pixel_for_nn"]


@pytest.mark.parametrize("mode", CUBIC_MODES)
@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize("a,exclude", [(-0.75, 0), (-0.5, 1)])
def test_cubic_random_and_vm(mode, layout, a, exclude):
    for k, (shape, size) in enumerate(SIZES[:4]):
        x = rand(shape, seed=k)
        if layout == "NHWC":
            x = np.ascontiguousarray(np.transpose(x, (0, 2, 3, 1)))
        _check_cubic(x, size, layout, mode, a, exclude, vm=(k < 3))


@pytest.mark.parametrize("a,exclude", [(-0.75, 0), (-0.75, 1), (-0.5, 0), (-0.6, 1)])
def test_cubic_specials_and_vm(a, exclude):
    """±0, ±inf, NaN, ±FLT_MAX: a zero weight still multiplies (inf * 0 = NaN, as TVM);
    FLT_MAX * (1 - w) sums overflow. alpha -0.6 is not a float32: its constants are the
    double sums rounded once (TVM's too: bitwise equal on the VM)."""
    for seed, (mode, size) in enumerate([("half_pixel", (5, 6)), ("asymmetric", (6, 8)),
                                         ("align_corners", (4, 7))]):
        x = special((1, 2, 3, 4), seed=seed, pool=SPECIALS_IMG)
        _check_cubic(x, size, "NCHW", mode, a, exclude)


@pytest.mark.parametrize("exclude", [0, 1])
def test_cubic_float16(exclude):
    x = rand((1, 2, 3, 4), seed=5, dtype=np.float16)
    _check_cubic(x, (5, 7), "NCHW", "half_pixel", exclude=exclude)
    pool = [0.0, -0.0, INF, -INF, NAN, 65504.0, -65504.0, 1.5, -2.0, 6e-8]
    y = special((1, 2, 3, 4), seed=6, pool=pool).astype(np.float16)
    _check_cubic(y, (5, 7), "NCHW", "half_pixel", exclude=exclude)


@pytest.mark.parametrize("mode", LINEAR)
@pytest.mark.parametrize("a,exclude", [(-0.75, 0), (-0.75, 1), (-0.5, 0), (-0.5, 1)])
def test_cubic_is_onnx_cubic(mode, a, exclude):
    """On finite data the spec is ONNX's cubic (float64 reference, its own coefficient
    arrangement and tap convention) up to float32 rounding; 2-D and 3-D."""
    for shape, size in [((1, 2, 3, 4), (5, 7)), ((2, 1, 5, 6), (3, 4)), ((1, 1, 4, 3), (8, 6)),
                        ((1, 1, 2, 3, 4), (3, 5, 2))]:
        x = rand(shape, seed=11)
        want = ref_cubic(x, size, "NCHW" if len(size) == 2 else "NCDHW", mode, a, exclude)
        onnx = ref_cubic_onnx64(x, size, mode, a, exclude)
        np.testing.assert_allclose(want, onnx, rtol=1e-5, atol=2e-6)


def test_cubic_integral_coordinate_taps():
    """The ONNX reference's taps at an integral coordinate c are c-2..c+1 (weights 0, 0, 1,
    0); the spec's (and TVM's, PyTorch's) c-1..c+2 (weights -0, 1, 0, 0): the same value on
    finite data, but inf at c+2 makes 0 * inf = NaN here and not in ONNX's reference."""
    x = np.array([[[[1.0, 2.0, INF, 4.0]]]], f32)       # asymmetric 4 -> 8: output 0 is c = 0
    want = _check_cubic(x, (1, 8), "NCHW", "asymmetric")
    assert np.isnan(want[0, 0, 0, 0])
    assert ref_cubic_onnx64(x, (1, 8), "asymmetric", -0.75, 0)[0, 0, 0, 0] == 1.0


def test_cubic_wrong_rejected():
    x = rand((1, 1, 4, 5), seed=7)
    size = (6, 7)
    ty, norm = tvm_call(_make(size, **_cubic_attrs("NCHW", "half_pixel", -0.75, 0)), (x.shape, "float32"))
    args, dts = [x, ("shape", list(size))], ["float32", "int64"]
    want = ref_cubic(x, size, "NCHW", "half_pixel")
    bad = want.copy()
    bad[0, 0, 2, 3] = np.nextafter(bad[0, 0, 2, 3], f32(INF))
    others = [bad, ref_cubic(x, size, "NCHW", "half_pixel", a=-0.5),
              ref_cubic(x, size, "NCHW", "half_pixel", exclude=1),
              ref_cubic(x, size, "NCHW", "align_corners"),
              ref_resize(x, size, "NCHW", "linear", "half_pixel"),
              # ONNX's float64 value rounded once: not the float32 order of operations
              ref_cubic_onnx64(x, size, "half_pixel", -0.75, 0).astype(f32),
              # the kernel's sum order reversed along w: (((v3*w3 + v2*w2) + v1*w1) + v0*w0)
              np.ascontiguousarray(ref_cubic(np.ascontiguousarray(x[..., ::-1]), size, "NCHW",
                                             "half_pixel")[..., ::-1])]
    for k, other in enumerate(others):
        assert not arrays_match(other, want), k
        assert not agrees("relax.image.resize2d", args, ty, [other], norm, exact=False,
                          arg_dtypes=dts), k


def test_cubic_vm_fma_contraction_is_a_finding():
    """Pinned (TVM's code generation, not LegalizeOps): TVM's LLVM backend emits
    `llvm.fmuladd` for the weights' a*b + c (FP contraction allowed). On the generic x86-64
    target it runs unfused (= the TIR = the spec: bitwise equal elsewhere), but LLVM
    constant-folds `fmuladd` as a fused multiply-add where it can fold the static weights
    (here the 4 w positions are unrolled/vectorized): align_corners 3 -> 4, exclude=1, the
    weight of tap 0 at w = 1 is 0.35087717 on the VM, 0.35087714 in the spec (t = 2/3: fused
    w2 = 0.7962963, w3 = -0.11111112, sum 1.0555553 instead of 0.79629636, -0.111111134,
    1.0555555). The legalized TIR of this very call is proved (VERIFY_CUBIC)."""
    from fractions import Fraction as Fr
    x = np.zeros((1, 1, 5, 3), f32)
    x[0, 0, 0, 0] = 1.0
    want = _check_cubic(x, (3, 4), "NCHW", "align_corners", exclude=1, vm=False)
    vm = run_tvm(_make((3, 4), **_cubic_attrs("NCHW", "align_corners", -0.75, 1)), x)
    assert want[0, 0, 0].tolist() == [1.0, f32(0.35087714), f32(-0.10526316), 0.0]
    assert vm[0, 0, 0, 1] == f32(0.35087717) and vm[0, 0, 0, 1] == np.nextafter(want[0, 0, 0, 1], f32(1))

    def fma(p, q, r):
        return f32(float(Fr(float(p)) * Fr(float(q)) + Fr(float(r))))
    t = f32(f32(2.0) / f32(3.0))
    t2, t3 = f32(t * t), f32(f32(t * t) * t)
    w1 = f32(f32(f32(1.25) * t3 - f32(2.25) * t2) + f32(1.0))
    w2 = f32(fma(t2, f32(1.5), f32(-1.25) * t3) + f32(0.75) * t)
    w3 = fma(t2, f32(-0.75), f32(0.75) * t3)
    assert f32(w1 / f32(f32(w1 + w2) + w3)) == vm[0, 0, 0, 1]


def test_cubic_unsupported_integers():
    """Integer data: TVM casts the float32 sum back by truncation (T.Cast("int32", ...)),
    undefined when the cubic overshoot leaves the range; Unsupported, as for linear."""
    x = np.arange(12, dtype="int32").reshape(1, 1, 3, 4)
    for op, make, size, shape in [("relax.image.resize2d", _make, (5, 6), (1, 1, 3, 4)),
                                  ("relax.image.resize3d", _make3, (2, 5, 6), (1, 1, 1, 3, 4))]:
        ty, norm = tvm_call(make(size, method="cubic"), (shape, "int32"))
        with pytest.raises(Unsupported, match="cubic"):
            eval_op(op, [x.reshape(shape), ("shape", list(size))], ty, norm,
                    arg_dtypes=["int32", "int64"])


# -- resize3d cubic --------------------------------------------------------------------------

@pytest.mark.parametrize("mode", ["half_pixel", "align_corners", "asymmetric"])
@pytest.mark.parametrize("layout", ["NCDHW", "NDHWC"])
def test_resize3d_cubic_random_and_vm(mode, layout):
    for k, (shape, size) in enumerate([((1, 2, 2, 3, 4), (3, 5, 7)), ((1, 1, 4, 5, 3), (2, 3, 4))]):
        x = _to_layout3(rand(shape, seed=k), layout)
        _check_cubic(x, size, layout, mode)
    x = _to_layout3(special((1, 2, 2, 3, 4), seed=3, pool=SPECIALS_IMG), layout)
    _check_cubic(x, (3, 4, 5), layout, mode)


def test_resize3d_cubic_exclude_float16():
    x = rand((1, 1, 2, 3, 4), seed=4, dtype=np.float16)
    _check_cubic(x, (3, 5, 2), "NCDHW", "half_pixel", exclude=1, vm=False)


@pytest.mark.parametrize("mode,shape,size,exact", [("half_pixel", (1, 2, 2, 3, 4), (3, 5, 7), True),
                                                   ("align_corners", (1, 1, 4, 5, 3), (2, 3, 4), False),
                                                   ("asymmetric", (1, 2, 2, 3, 4), (3, 5, 7), True)])
def test_resize3d_cubic_exclude_is_a_finding(mode, shape, size, exact):
    """Pinned: topi's `_resize_3d` with exclude_outside takes the depth weights from the
    width (`wz[i] = if_then_else(xint - 1 + i < 0 or xint + i > image_height, 0, wx[i])`,
    then renormalised). The VM is bitwise this TVM model, not the spec (each dimension's own
    weights, masked and renormalised); on (1, 2, 2, 3, 4) -> (3, 5, 7) half_pixel they differ
    by up to 2.86. (align_corners 3 -> 4 along w: the VM is the TVM model up to the 1-ulp
    contraction finding of test_cubic_vm_fma_contraction_is_a_finding.)"""
    x = rand(shape, seed=1)
    want = _check_cubic(x, size, "NCDHW", mode, exclude=1, vm=False)
    vm = run_tvm(_make3(size, **_cubic_attrs("NCDHW", mode, -0.75, 1)), x)
    model = ref_cubic(x, size, "NCDHW", mode, exclude=1, tvm3_depth_bug=True)
    if exact:
        assert arrays_match(vm, model)
    np.testing.assert_allclose(vm, model, rtol=1e-6, atol=1e-6)
    assert not arrays_match(vm, want)
    assert np.max(np.abs(vm - want)) > 0.5


# -- refinement through TVM's legalization (cubic) -------------------------------------------

SLOW = pytest.mark.slow
# measured under pytest (load ~2): 3 to 5 s unmarked, 7 to 21 s slow
VERIFY_CUBIC = [
    pytest.param((1, 1, 3, 4), (5, 6), "float32", "NCHW", "half_pixel", -0.75, 0, marks=SLOW),
    pytest.param((1, 3, 4, 2), (5, 3), "float32", "NHWC", "half_pixel", -0.75, 1, marks=SLOW),
    pytest.param((1, 1, 3, 4), (5, 6), "float32", "NCHW", "align_corners", -0.75, 1, marks=SLOW),
    ((1, 1, 3, 4), (6, 8), "float32", "NCHW", "asymmetric", -0.5, 0),
    ((1, 2, 4, 3), (2, 5), "float32", "NHWC", "align_corners", -0.5, 0),
    pytest.param((1, 1, 3, 4), (5, 6), "float16", "NCHW", "half_pixel", -0.75, 0, marks=SLOW),
    pytest.param((1, 3, 4, 2), (5, 3), "float16", "NHWC", "asymmetric", -0.75, 1, marks=SLOW),
    # the fmuladd case of test_cubic_vm_fma_contraction_is_a_finding
    pytest.param((1, 1, 5, 3), (3, 4), "float32", "NCHW", "align_corners", -0.75, 1, marks=SLOW),
]


@pytest.mark.parametrize("shape,size,dtype,layout,mode,a,exclude", VERIFY_CUBIC)
def test_cubic_legalize_is_proved(shape, size, dtype, layout, mode, a, exclude):
    from tvm import relax

    import tvtv
    mod = _module(shape, size, dtype, **_cubic_attrs(layout, mode, a, exclude))
    (r,) = tvtv.verify(mod, relax.transform.LegalizeOps()(mod), timeout=20).results
    assert r.verdict == "proved", r.to_dict()


@pytest.mark.slow      # about 14 s
def test_resize3d_cubic_legalize_is_proved():
    from tvm import relax

    import tvtv
    mod = _module3((1, 1, 2, 3, 2), (3, 2, 3), **_cubic_attrs("NCDHW", "half_pixel", -0.75, 0))
    (r,) = tvtv.verify(mod, relax.transform.LegalizeOps()(mod), timeout=20).results
    assert r.verdict == "proved", r.to_dict()


@pytest.mark.slow      # 55 to 80 s
def test_resize3d_cubic_exclude_legalize_is_refuted():
    """The finding above, through the checker: LegalizeOps' TIR is not a refinement."""
    from tvm import relax

    import tvtv
    mod = _module3((1, 1, 2, 3, 2), (3, 2, 3), **_cubic_attrs("NCDHW", "half_pixel", -0.75, 1))
    (r,) = tvtv.verify(mod, relax.transform.LegalizeOps()(mod), timeout=20).results
    assert r.verdict == "counterexample", r.to_dict()


# legalized TIR of cubic resize2d (1, 1, 2, 2) -> (3, 3), half_pixel, alpha -0.75; the first
# occurrence is replaced. Measured: "a + 2" 9 to 33 s (all-ones input: the weights no longer
# sum to 1), "alpha" 31 to 66 s and "tap offset" 44 to 47 s (the IEEE model times out; seeded
# random inputs / the VM show the difference). On (1, 1, 3, 4) -> (5, 6) each takes ~76 s.
MUTATIONS_CUBIC = {
    # the first weight along w: a * ((t3 - 2*t2) + t) with a = -0.5
    "alpha constant changed": ("T.float32(-0.75) * (", "T.float32(-0.5) * ("),
    # the second weight along w: ((a+2)*t3 - (3+a)*t2) + 1 with a + 2 = 1.5
    "a + 2 constant changed": ("T.float32(1.25) * (", "T.float32(1.5) * ("),
    # the first tap along w: floor(c) - 1 becomes floor(c)
    "tap offset off by one": (") - T.int64(1), T.int64(1))", ") - T.int64(0), T.int64(1))"),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(MUTATIONS_CUBIC))
def test_cubic_broken_legalization_is_refuted(name):
    from tvm import relax

    import tvtv
    from tvtv.ir import tvm_bridge
    old, new = MUTATIONS_CUBIC[name]
    source = relax.transform.LegalizeOps()(
        _module((1, 1, 2, 2), (3, 3), **_cubic_attrs("NCHW", "half_pixel", -0.75, 0)))
    text = source.script()
    assert old in text, f"mutation {name!r} does not apply:\n{text}"
    broken = tvm_bridge.parse_script(text.replace(old, new, 1))
    (r,) = tvtv.verify(source, broken, timeout=20).results
    assert r.verdict == "counterexample", r.to_dict()
