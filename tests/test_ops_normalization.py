"""Conformance of softmax and the normalization encoders (tvtv/encode/ops/normalization.py).

As in tests/test_ops_statistical.py: the IEEE encoding with its uninterpreted functions (sums,
exp, log) read as numpy (`eval_numpy_ufs`) must equal a step-by-step float32 numpy reference
of the documented formula on random and special values; the abstract model must admit
numpy's result and force it where it is fixed (NaN/inf groups, axes of length one); wrong
expectations must be rejected. (IEEE "admits" checks of these composite formulas are left to
`eval_numpy_ufs`: Z3 takes too long to invert the FP divisions and square roots.) batch_norm in inference mode has no reduction, so
its IEEE encoding is evaluated exactly. DecomposeOpsForInference on batch_norm is checked end
to end with tvtv's API.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import pytest
import z3

import tvtv.encode.ops.manipulate  # noqa: F401  (expand_dims, for DecomposeOpsForInference)
import tvtv.encode.ops.normalization  # noqa: F401  (registers the encoders)
import tvtv.encode.ops.statistical  # noqa: F401
from tests.conftest import assert_unsat_each
from tests.test_ops_statistical import (DENORM, FMAX, abstract, eval_numpy_ufs, random_array,
                                        ref_mean, ref_var, seq_reduce, special_array)
from tvtv.absfp.ieee import IEEEModel
from tvtv.encode.evaluate import agrees, arrays_match, encode_op, eval_op
from tvtv.errors import Unsupported
from tvtv.ir.program import TensorType, TupleType

f32 = np.float32
EPS = 1e-5
# rows that exercise exp/log special values: -inf terms, all -inf, +inf, NaN, FLT_MAX
ROW_SPECIALS = [[-np.inf, 1.0, 2.0], [-np.inf, -np.inf, -np.inf], [1.0, np.inf, 2.0],
                [np.nan, 0.0, 1.0], [FMAX, -FMAX, 0.0], [-0.0, 0.0, DENORM]]


def tt(shape, dtype="float32") -> TensorType:
    return TensorType(tuple(shape), dtype)


# -- references (float32, step by step, the documented formula) -------------------------------

def ref_softmax_parts(x, axis):
    with np.errstate(all="ignore"):
        shifted = x - np.max(x, axis=axis, keepdims=True)
        e = np.exp(shifted)
        return shifted, e, seq_reduce(e, [axis], True, "sum")


def ref_softmax(x, axis):
    _, e, s = ref_softmax_parts(x, axis)
    with np.errstate(all="ignore"):
        return e / s


def ref_log_softmax(x, axis):
    shifted, _, s = ref_softmax_parts(x, axis)
    with np.errstate(all="ignore"):
        return shifted - np.log(s)


def np_mean(x, axes, keepdims):
    """numpy's own mean (its own summation order), in float32."""
    with np.errstate(all="ignore"):
        return np.asarray(np.mean(x, axis=tuple(axes), keepdims=keepdims), dtype=x.dtype)


def ref_standardize(x, axes, eps=EPS, mean=ref_mean):
    axes = sorted(a % x.ndim for a in axes)
    with np.errstate(all="ignore"):
        d = x - mean(x, axes, True)
        v = mean(d * d, axes, True)
        return d / np.sqrt(v + f32(eps))


def param_along(p, axes, shape):
    """p (whose k-th dim is data axis axes[k]) broadcast against data of `shape`."""
    axes = [a % len(shape) for a in axes]
    order = np.argsort(axes)
    pt = np.transpose(p, order)
    return pt.reshape([shape[a] if a in axes else 1 for a in range(len(shape))])


def ref_layer_norm(x, g, b, axes, center=True, scale=True, eps=EPS, mean=ref_mean):
    y = ref_standardize(x, axes, eps, mean)
    with np.errstate(all="ignore"):
        if scale:
            y = y * param_along(g, axes, x.shape)
        if center:
            y = y + param_along(b, axes, x.shape)
    return y


def ref_group_norm(x, g, b, groups, c_axis, axes, eps=EPS, mean=ref_mean):
    c_axis %= x.ndim
    c = x.shape[c_axis]
    split = x.shape[:c_axis] + (groups, c // groups) + x.shape[c_axis + 1:]
    red = [c_axis + 1] + [(a % x.ndim) + 1 if a % x.ndim > c_axis else a % x.ndim for a in axes]
    y = ref_standardize(x.reshape(split), red, eps, mean).reshape(x.shape)
    with np.errstate(all="ignore"):
        return y * param_along(g, [c_axis], x.shape) + param_along(b, [c_axis], x.shape)


def ref_instance_norm(x, g, b, c_axis, axes, eps=EPS, mean=ref_mean):
    y = ref_standardize(x, axes, eps, mean)
    with np.errstate(all="ignore"):
        return y * param_along(g, [c_axis], x.shape) + param_along(b, [c_axis], x.shape)


def ref_rms_norm(x, w, axes, eps=EPS, mean=ref_mean):
    with np.errstate(all="ignore"):
        ms = mean(x * x, sorted(a % x.ndim for a in axes), True)
        return x / np.sqrt(ms + f32(eps)) * param_along(w, axes, x.shape)


def ref_batch_norm_training(x, g, b, m, v, axis, center=True, scale=True, eps=EPS,
                            momentum=0.1):
    """Training mode as Relax's documentation writes it: normalize with the batch's mean and
    variance over every axis but `axis`; moving = moving * momentum + batch * (1 - momentum)."""
    others = [a for a in range(x.ndim) if a != axis]
    mean, var = ref_mean(x, others, False), ref_var(x, others, False)
    # inference's formula with the batch's statistics in place of the moving ones
    y = ref_batch_norm(x, g, b, mean, var, axis, center, scale, eps)
    keep = f32(1.0 - momentum)
    with np.errstate(all="ignore"):
        return y, m * f32(momentum) + mean * keep, v * f32(momentum) + var * keep


def ref_batch_norm(x, g, b, m, v, axis, center=True, scale=True, eps=EPS):
    with np.errstate(all="ignore"):
        y = (x - param_along(m, [axis], x.shape)) / np.sqrt(param_along(v, [axis], x.shape)
                                                              + f32(eps))
        if scale:
            y = y * param_along(g, [axis], x.shape)
        if center:
            y = y + param_along(b, [axis], x.shape)
    return y


def inputs(shape, kind, seed):
    if kind == "random":
        return random_array(shape, seed)
    if kind == "special":
        return special_array(shape, seed)
    return special_array(shape, seed, [1.0, -0.0, 0.5, DENORM, -3.0, 2.0])   # "mild"


# -- TVM's inferred result types -------------------------------------------------------------

def _tvm_type(build):
    from tvm import relax

    from tvtv.ir.relax_reader import convert_type
    bb = relax.BlockBuilder()
    holder = relax.Var("unused", relax.TensorType((1,), "float32"))
    with bb.function("main", [holder]):
        ty = convert_type(bb.normalize(build(relax)).ty)
        bb.emit_func_output(holder)
    return ty


def _v(relax, name, shape):
    return relax.Var(name, relax.TensorType(shape, "float32"))


TYPE_CASES = [
    ("relax.nn.softmax", [(2, 3, 4)], {"axis": 1},
     lambda r, a: r.op.nn.softmax(a[0], axis=1)),
    ("relax.nn.log_softmax", [(2, 3)], {"axis": -1},
     lambda r, a: r.op.nn.log_softmax(a[0], axis=-1)),
    ("relax.nn.layer_norm", [(2, 3, 4), (4, 3), (4, 3)],
     {"axes": [2, 1], "epsilon": EPS, "center": True, "scale": True},
     lambda r, a: r.op.nn.layer_norm(*a, axes=[2, 1])),
    ("relax.nn.batch_norm", [(2, 3, 4)] + [(4,)] * 4,
     {"axis": -1, "epsilon": EPS, "center": True, "scale": True, "training": False},
     lambda r, a: r.op.nn.batch_norm(*a, axis=-1, training=False)),
    ("relax.nn.group_norm", [(2, 4, 3), (4,), (4,)],
     {"num_groups": 2, "channel_axis": 1, "axes": [2], "epsilon": EPS},
     lambda r, a: r.op.nn.group_norm(*a, num_groups=2, channel_axis=1, axes=[2])),
    ("relax.nn.instance_norm", [(2, 3, 4), (3,), (3,)],
     {"channel_axis": 1, "axes": [2], "epsilon": EPS},
     lambda r, a: r.op.nn.instance_norm(*a, channel_axis=1, axes=[2])),
    ("relax.nn.rms_norm", [(2, 3, 4), (4,)], {"axes": [-1], "epsilon": EPS},
     lambda r, a: r.op.nn.rms_norm(*a, axes=[-1])),
]


@pytest.mark.parametrize("op,shapes,attrs,build", TYPE_CASES, ids=[c[0] for c in TYPE_CASES])
def test_result_type_matches_tvm(op, shapes, attrs, build):
    ty = _tvm_type(lambda r: build(r, [_v(r, f"a{k}", s) for k, s in enumerate(shapes)]))
    args = [np.ones(s, f32) for s in shapes]
    value, _ = encode_op(op, args, ty, attrs, IEEEModel())
    if isinstance(ty, TupleType):
        assert tuple((t.shape, t.dtype) for t in value) == \
            tuple((f.shape, f.dtype) for f in ty.fields)
    else:
        assert (value.shape, value.dtype) == (ty.shape, ty.dtype)


def test_int_softmax_unsupported():
    with pytest.raises(Unsupported):
        encode_op("relax.nn.softmax", [np.ones((2,), np.int32)], tt((2,), "int32"), {"axis": -1},
                  IEEEModel())


# -- softmax / log_softmax --------------------------------------------------------------------

SOFTMAX = {"relax.nn.softmax": ref_softmax, "relax.nn.log_softmax": ref_log_softmax}


@pytest.mark.parametrize("op", list(SOFTMAX))
@pytest.mark.parametrize("shape,axis", [((2, 3), 1), ((2, 3), 0), ((2, 3), -1), ((2, 2, 2), 1)])
@pytest.mark.parametrize("kind", ["random", "special", "mild"])
def test_softmax_structure_ieee(op, shape, axis, kind):
    x = inputs(shape, kind, 3)
    want = SOFTMAX[op](x, axis)
    (got,) = eval_numpy_ufs(op, [x], tt(shape), {"axis": axis})
    assert arrays_match(got, want), (x, got, want)


@pytest.mark.parametrize("op", list(SOFTMAX))
def test_softmax_special_rows_ieee(op):
    x = np.array(ROW_SPECIALS, f32)
    want = SOFTMAX[op](x, 1)
    (got,) = eval_numpy_ufs(op, [x], tt(x.shape), {"axis": 1})
    assert arrays_match(got, want), (got, want)
    # the stable form: +inf, NaN and all -inf rows are NaN (as scipy.special.softmax gives)
    assert np.isnan(got[1:4]).all()
    # a wrong formula (the unshifted exp(x) / sum(exp(x))) is told apart on FLT_MAX rows
    if op == "relax.nn.softmax":
        with np.errstate(all="ignore"):
            e = np.exp(x)
            naive = e / seq_reduce(e, [1], True, "sum")
        assert not arrays_match(got, naive)


@pytest.mark.parametrize("op", list(SOFTMAX))
@pytest.mark.parametrize("model", ["ieee", "abstract"])
def test_softmax_forced_values(op, model):
    m = IEEEModel() if model == "ieee" else abstract()
    # an axis of length one: exp(x - x) / (0 + exp(0)) = 1, log_softmax = 0 - log(1) = +0
    x = np.array([[2.5], [-FMAX], [DENORM], [-0.0]], f32)
    want = np.full((4, 1), 1.0 if op == "relax.nn.softmax" else 0.0, f32)
    assert agrees(op, [x], tt(x.shape), [want], {"axis": 1}, model=m, exact=True)
    assert not agrees(op, [x], tt(x.shape), [want * f32(0.5) + f32(0.25)], {"axis": 1},
                      model=m, exact=False)
    # rows with NaN or +inf, and rows of -inf only, are NaN
    x = np.array([[1.0, np.nan, 2.0], [np.inf, 0.5, -1.0], [-np.inf, -np.inf, -np.inf]], f32)
    want = np.full(x.shape, np.nan, f32)
    assert agrees(op, [x], tt(x.shape), [want], {"axis": 1}, model=m, exact=True)
    wrong = want.copy()
    wrong[1, 1] = 0.0
    assert not agrees(op, [x], tt(x.shape), [wrong], {"axis": 1}, model=m, exact=False)


@pytest.mark.parametrize("op", list(SOFTMAX))
@pytest.mark.parametrize("kind", ["random", "mild"])
def test_softmax_admits_numpy_abstract(op, kind):
    x = inputs((2, 3), kind, 4)
    x[:, 1] = x[:, 0]                   # equal inputs must give equal outputs (below)
    with np.errstate(all="ignore"):
        shifted = x - x.max(axis=1, keepdims=True)
        s = np.exp(shifted).sum(axis=1, keepdims=True)
        want = np.exp(shifted) / s if op == "relax.nn.softmax" else shifted - np.log(s)
    assert agrees(op, [x], tt(x.shape), [want.astype(f32)], {"axis": -1}, model=abstract(),
                  exact=False)
    # the abstract sum and exp are uninterpreted, but equal terms give equal results
    wrong = want.astype(f32).copy()
    wrong[0, 1] = np.nextafter(wrong[0, 0], f32(np.inf))
    assert not agrees(op, [x], tt(x.shape), [wrong], {"axis": -1}, model=abstract(),
                      exact=False)


# -- layer / group / instance / RMS norm ------------------------------------------------------

LN_CASES = [((2, 3), [-1], True, True), ((2, 2, 2), [1, 2], True, True),
            ((2, 2, 3), [2, 1], True, False), ((2, 3, 2), [0], False, True),
            ((2, 3), [0, 1], False, False)]


@pytest.mark.parametrize("shape,axes,center,scale", LN_CASES)
@pytest.mark.parametrize("kind", ["random", "special", "mild"])
def test_layer_norm_structure_ieee(shape, axes, center, scale, kind):
    x = inputs(shape, kind, 5)
    pshape = tuple(shape[a] for a in axes)
    g, b = random_array(pshape, 6), random_array(pshape, 7)
    want = ref_layer_norm(x, g, b, axes, center, scale)
    attrs = {"axes": axes, "epsilon": EPS, "center": center, "scale": scale}
    (got,) = eval_numpy_ufs("relax.nn.layer_norm", [x, g, b], tt(shape), attrs)
    assert arrays_match(got, want), (x, got, want)


def test_layer_norm_structure_can_fail():
    """gamma indexed by the axes in the given order: reading it transposed is told apart."""
    x, g, b = random_array((2, 2, 3), 8), random_array((3, 2), 9), random_array((3, 2), 10)
    attrs = {"axes": [2, 1], "epsilon": EPS, "center": True, "scale": True}
    (got,) = eval_numpy_ufs("relax.nn.layer_norm", [x, g, b], tt(x.shape), attrs)
    assert arrays_match(got, ref_layer_norm(x, g, b, [2, 1]))
    # gamma's (3, 2) memory read as if it were laid out (2, 3)
    misread = ref_standardize(x, [1, 2]) * g.reshape(1, 2, 3) + b.reshape(1, 2, 3)
    assert not arrays_match(got, misread)
    # and a different epsilon is told apart
    assert not arrays_match(got, ref_layer_norm(x, g, b, [2, 1], eps=1e-3))


NORM_CASES = {
    "relax.nn.group_norm": [
        ((2, 4, 3), dict(num_groups=2, channel_axis=1, axes=[2])),
        ((1, 2, 2, 2), dict(num_groups=1, channel_axis=-1, axes=[1, 2])),
        ((2, 3, 2), dict(num_groups=3, channel_axis=1, axes=[2]))],
    "relax.nn.instance_norm": [
        ((2, 3, 2), dict(channel_axis=1, axes=[2])),
        ((2, 2, 3), dict(channel_axis=-1, axes=[1])),
        ((1, 2, 2, 2), dict(channel_axis=1, axes=[2, 3]))],
    "relax.nn.rms_norm": [
        ((2, 3), dict(axes=[-1])), ((2, 2, 3), dict(axes=[2, 1])), ((3, 2), dict(axes=[0]))],
}


def _norm_args(op, shape, attrs, x, seed=11):
    c = shape[attrs["channel_axis"] % len(shape)] if "channel_axis" in attrs else None
    if op == "relax.nn.rms_norm":
        return [x, random_array(tuple(shape[a % len(shape)] for a in attrs["axes"]), seed)]
    return [x, random_array((c,), seed), random_array((c,), seed + 1)]


def _norm_ref(op, args, attrs, mean=ref_mean):
    if op == "relax.nn.group_norm":
        return ref_group_norm(*args, attrs["num_groups"], attrs["channel_axis"], attrs["axes"],
                              mean=mean)
    if op == "relax.nn.instance_norm":
        return ref_instance_norm(*args, attrs["channel_axis"], attrs["axes"], mean=mean)
    if op == "relax.nn.layer_norm":
        return ref_layer_norm(*args, attrs["axes"], attrs["center"], attrs["scale"], mean=mean)
    return ref_rms_norm(*args, attrs["axes"], mean=mean)


@pytest.mark.parametrize("op,shape,attrs",
                         [(op, s, a) for op, cases in NORM_CASES.items() for s, a in cases])
@pytest.mark.parametrize("kind", ["random", "special", "mild"])
def test_norms_structure_ieee(op, shape, attrs, kind):
    x = inputs(shape, kind, 12)
    args = _norm_args(op, shape, attrs, x)
    want = _norm_ref(op, args, attrs)
    (got,) = eval_numpy_ufs(op, args, tt(shape), {**attrs, "epsilon": EPS})
    assert arrays_match(got, want), (x, got, want)


def test_group_norm_groups_are_consecutive_channels():
    """Grouping channels (0, 1), (2, 3) differs from grouping (0, 2), (1, 3)."""
    x = random_array((1, 4, 2), 13)
    g, b = np.ones(4, f32), np.zeros(4, f32)
    attrs = {"num_groups": 2, "channel_axis": 1, "axes": [2], "epsilon": EPS}
    (got,) = eval_numpy_ufs("relax.nn.group_norm", [x, g, b], tt(x.shape), attrs)
    strided = ref_group_norm(x[:, [0, 2, 1, 3]], g, b, 2, 1, [2])[:, [0, 2, 1, 3]]
    assert arrays_match(got, ref_group_norm(x, g, b, 2, 1, [2]))
    assert not arrays_match(got, strided)


ADMIT_CASES = [(op, s, a) for op, cases in NORM_CASES.items() for s, a in cases] + [
    ("relax.nn.layer_norm", shape, {"axes": axes, "center": c, "scale": sc})
    for shape, axes, c, sc in LN_CASES[:3]]


@pytest.mark.parametrize("op,shape,attrs", ADMIT_CASES)
@pytest.mark.parametrize("kind", ["random", "mild"])
def test_norms_admit_numpy_abstract(op, shape, attrs, kind):
    """The abstract model admits numpy's own result (np.mean's summation order)."""
    x = inputs(shape, kind, 21)
    if op == "relax.nn.layer_norm":
        pshape = tuple(shape[a] for a in attrs["axes"])
        args = [x, random_array(pshape, 6), random_array(pshape, 7)]
    else:
        args = _norm_args(op, shape, attrs, x)
    want = _norm_ref(op, args, attrs, mean=np_mean)
    attrs = {**attrs, "epsilon": EPS}
    assert agrees(op, args, tt(shape), [want], attrs, model=abstract(), exact=False)


# One normalized group each: a bad value makes its whole group NaN.
SINGLE_GROUP = [
    ("relax.nn.layer_norm", (1, 3), [random_array((3,), 14), random_array((3,), 15)],
     {"axes": [1], "epsilon": EPS, "center": True, "scale": True}),
    ("relax.nn.group_norm", (1, 2, 2), [random_array((2,), 16), random_array((2,), 17)],
     {"num_groups": 1, "channel_axis": 1, "axes": [2], "epsilon": EPS, "center": True,
      "scale": True}),
    ("relax.nn.instance_norm", (1, 1, 3), [random_array((1,), 18), random_array((1,), 19)],
     {"channel_axis": 1, "axes": [2], "epsilon": EPS, "center": True, "scale": True}),
    ("relax.nn.rms_norm", (1, 3), [random_array((3,), 20)], {"axes": [-1], "epsilon": EPS}),
]


@pytest.mark.parametrize("op,shape,params,attrs", SINGLE_GROUP, ids=[c[0] for c in SINGLE_GROUP])
@pytest.mark.parametrize("model", ["ieee", "abstract"])
def test_norms_forced_values(op, shape, params, attrs, model):
    """A group holding NaN, or +inf (inf - inf in the deviations), is NaN throughout.

    (+inf only in the abstract model: an IEEE sum with a +inf term is "+inf or NaN", and Z3
    takes tens of seconds to push that through the FP arithmetic of the deviations.)"""
    m = IEEEModel() if model == "ieee" else abstract()
    for bad in (np.nan,) if model == "ieee" else (np.nan, np.inf):
        x = random_array(shape, 22)
        x.reshape(-1)[1] = bad
        want = np.full(shape, np.nan, f32)
        if op == "relax.nn.rms_norm" and bad == np.inf:
            continue      # x / inf = 0 for the finite elements: not NaN everywhere
        assert agrees(op, [x, *params], tt(shape), [want], attrs, model=m, exact=True)
        wrong = want.copy()
        wrong.reshape(-1)[0] = 1.0
        assert not agrees(op, [x, *params], tt(shape), [wrong], attrs, model=m, exact=False)


@pytest.mark.parametrize("model", ["ieee", "abstract"])
def test_layer_norm_of_one_element_is_beta(model):
    """Over an axis of length one the deviation is +0, so the result is +0 * gamma + beta:
    forced in IEEE; the abstract model only admits it (its sqrt(eps) may be +0, giving NaN)."""
    m = IEEEModel() if model == "ieee" else abstract()
    x = np.array([[3.0], [-FMAX], [DENORM]], f32)
    g, b = np.array([-2.0], f32), np.array([0.75], f32)
    attrs = {"axes": [1], "epsilon": EPS, "center": True, "scale": True}
    want = np.full((3, 1), 0.75, f32)
    assert agrees("relax.nn.layer_norm", [x, g, b], tt(x.shape), [want], attrs, model=m,
                  exact=model == "ieee")
    assert not agrees("relax.nn.layer_norm", [x, g, b], tt(x.shape), [want * 2], attrs,
                      model=m, exact=False)


# -- batch_norm (inference) -------------------------------------------------------------------

def _bn_inputs(shape, axis, kind, seed):
    c = shape[axis]
    x = inputs(shape, kind, seed)
    g, b, mean = (random_array((c,), seed + k) for k in (1, 2, 3))
    var = np.abs(random_array((c,), seed + 4))
    if kind == "special":
        var = special_array((c,), seed + 5)      # negative, zero, inf and NaN variances too
    return [x, g, b, mean, var]


@pytest.mark.parametrize("shape,axis", [((2, 3, 2), 1), ((2, 3), -1), ((3, 2), 0)])
@pytest.mark.parametrize("center,scale", [(True, True), (False, True), (True, False)])
@pytest.mark.parametrize("kind", ["random", "special"])
def test_batch_norm_exact_ieee(shape, axis, center, scale, kind):
    args = _bn_inputs(shape, axis, kind, 23)
    c = shape[axis]
    attrs = {"axis": axis, "epsilon": EPS, "center": center, "scale": scale, "training": False}
    ty = TupleType((tt(shape), tt((c,)), tt((c,))))
    out, mm, mv = eval_op("relax.nn.batch_norm", args, ty, attrs)
    want = ref_batch_norm(*args, axis % len(shape), center, scale)
    assert arrays_match(out, want), (args, out, want)
    assert arrays_match(mm, args[3]) and arrays_match(mv, args[4])
    wrong = ref_batch_norm(*args[:4], args[4] + f32(1), axis % len(shape), center, scale)
    assert not arrays_match(out, wrong)


@pytest.mark.parametrize("kind", ["random", "special"])
def test_batch_norm_abstract(kind):
    shape, axis = (2, 2), 1
    args = _bn_inputs(shape, axis, kind, 24)
    attrs = {"axis": axis, "epsilon": EPS, "training": False}
    ty = TupleType((tt(shape), tt((2,)), tt((2,))))
    want = [ref_batch_norm(*args, axis), args[3], args[4]]
    assert agrees("relax.nn.batch_norm", args, ty, want, attrs, model=abstract(), exact=False)
    wrong = [want[0], args[3] + f32(1), args[4]]
    assert not agrees("relax.nn.batch_norm", args, ty, wrong, attrs, model=abstract(),
                      exact=False)
    x = args[0].copy()
    x[:, 0] = np.nan                    # NaN data, or a NaN variance, gives NaN
    nan_var = args[4].copy()
    nan_var[1] = np.nan
    forced = np.full(shape, np.nan, f32)
    assert agrees("relax.nn.batch_norm", [x, *args[1:4], nan_var], ty,
                  [forced, args[3], nan_var], attrs, model=abstract(), exact=True)


def _bn_module(training: bool = False, item: int = 0):
    """batch_norm over a (2, 3, 2) input along axis 1 (momentum 0.1), returning result `item`."""
    from tvm import relax
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType((2, 3, 2), "float32"))
    ps = [relax.Var(n, relax.TensorType((3,), "float32")) for n in ("g", "b", "m", "v")]
    with bb.function("main", [x, *ps]):
        with bb.dataflow():
            t = bb.emit(relax.op.nn.batch_norm(x, *ps, axis=1, training=training))
            o = bb.emit_output(relax.TupleGetItem(t, item))
        bb.emit_func_output(o)
    return bb.get()


def test_decompose_ops_for_inference_proved():
    """The encoding meets DecomposeOpsForInference's decomposition term for term, and a
    broken decomposition (divide replaced by multiply) is not proved."""
    from tests.conftest import mutate
    from tvm import relax

    from tvtv.api import check_pass, verify
    report = check_pass("DecomposeOpsForInference", _bn_module(), fp="abstract", timeout=10)
    assert [r.verdict for r in report.results] == ["proved"]
    mod = _bn_module()
    after = relax.transform.DecomposeOpsForInference()(mod)
    broken = mutate(after, "R.divide", "R.multiply")
    report = verify(mod, broken, fp="abstract", timeout=10, confirm_vm=False)
    # usually a counterexample at once; Z3's search is not always that lucky, but the broken
    # twin must never be proved
    assert [r.verdict for r in report.results] != ["proved"]


def test_layer_norm_equals_its_decomposition():
    """layer_norm and mean/subtract/multiply/mean/add/sqrt/divide/multiply/add built from the
    registered encoders are the same function in the abstract model (terms are shared)."""
    from tvtv.encode.context import EncodeContext
    from tvtv.encode.registry import lookup
    from tvtv.encode.tensor import Tensor
    from tvtv.encode.values import PrimScalar
    from tvtv.ir.program import OpCall, VarRef

    model = abstract()
    ctx = EncodeContext(model)
    dom = model.domain("float32")
    x = Tensor.variable("x", (2, 3), "float32", dom)
    g = Tensor.variable("g", (3,), "float32", dom)
    b = Tensor.variable("b", (3,), "float32", dom)

    def op(name: str, args: Sequence, shape, **attrs):
        call = OpCall(name, tuple(VarRef(f"a{k}") for k in range(len(args))), attrs, tt(shape))
        return lookup(name)(ctx, call, list(args))

    ln = op("relax.nn.layer_norm", [x, g, b], (2, 3), axes=[-1], epsilon=EPS, center=True,
            scale=True)
    m = op("relax.mean", [x], (2, 1), axis=[1], keepdims=True)
    d = op("relax.subtract", [x, m], (2, 3))
    v = op("relax.mean", [op("relax.multiply", [d, d], (2, 3))], (2, 1), axis=[1], keepdims=True)
    eps = PrimScalar(dom.const(EPS), "float32", EPS)
    s = op("relax.sqrt", [op("relax.add", [v, eps], (2, 1))], (2, 1))
    y = op("relax.add", [op("relax.multiply", [op("relax.divide", [d, s], (2, 3)), g], (2, 3)),
                         b], (2, 3))
    assert_unsat_each(model.preconditions(),
                      [z3.Not(dom.same(ln.at(k), y.at(k))) for k in range(6)])


# -- batch_norm (training) --------------------------------------------------------------------

@pytest.mark.parametrize("shape,axis", [((2, 3, 2), 1), ((2, 3), -1), ((3, 2), 0)])
@pytest.mark.parametrize("center,scale", [(True, True), (False, False)])
@pytest.mark.parametrize("momentum", [0.1, 0.75])
@pytest.mark.parametrize("kind", ["random", "special", "mild"])
def test_batch_norm_training_structure_ieee(shape, axis, center, scale, momentum, kind):
    """training=True normalizes with the batch's own statistics and updates the moving ones
    as the documentation writes it; TVM's topi convention is told apart."""
    args = _bn_inputs(shape, axis, kind, 31)
    c = shape[axis]
    attrs = {"axis": axis, "epsilon": EPS, "center": center, "scale": scale,
             "momentum": momentum, "training": True}
    ty = TupleType((tt(shape), tt((c,)), tt((c,))))
    got = eval_numpy_ufs("relax.nn.batch_norm", args, ty, attrs)
    want = ref_batch_norm_training(*args, axis % len(shape), center, scale, momentum=momentum)
    for g, w in zip(got, want):
        assert arrays_match(g, w), (args, g, w)
    if kind == "random":
        # the moving statistics are not left alone (inference mode) ...
        assert not arrays_match(got[1], args[3])
        # ... and not updated the other way round: moving * (1 - momentum) + batch * momentum
        others = tuple(a for a in range(len(shape)) if a != axis % len(shape))
        batch = ref_mean(args[0], others, False)
        topi = args[3] * f32(1.0 - momentum) + batch * f32(momentum)
        assert not arrays_match(got[1], topi)
        # and normalizing with the moving statistics is told apart
        assert not arrays_match(got[0], ref_batch_norm(*args, axis % len(shape), center, scale))


def test_batch_norm_training_is_the_default():
    """An attribute set without `training` means training mode (TVMScript's default)."""
    args = _bn_inputs((2, 3), 1, "random", 32)
    ty = TupleType((tt((2, 3)), tt((3,)), tt((3,))))
    default = eval_numpy_ufs("relax.nn.batch_norm", args, ty, {"axis": 1, "epsilon": EPS})
    training = eval_numpy_ufs("relax.nn.batch_norm", args, ty,
                              {"axis": 1, "epsilon": EPS, "training": True})
    assert all(arrays_match(d, t) for d, t in zip(default, training))


def test_moving_mean_update_is_a_finding():
    """Relax documents moving_mean * momentum + data_mean * (1 - momentum); TVM 0.27's
    DecomposeOpsForTraining computes (1 - momentum) * moving_mean + momentum * data_mean.
    The counterexample is confirmed by the IEEE evaluation of the specification (the VM
    legalizes the source with TVM's convention too). Whether the IEEE model also separates
    the two for every value of the uninterpreted functions (`confirmed_ieee`) depends on
    how much of its 10 s the machine gives it (alone: 12-30 s in all, separated; one CI
    run under load: not decided), so it is not asserted. Without it the check climbs to a
    later rung, whose counterexample was confirmed `ieee-spec-cpu` (measured with
    `separates` disabled)."""
    from tvtv.api import check_pass
    report = check_pass("DecomposeOpsForTraining", _bn_module(training=True, item=1), timeout=10)
    (r,) = report.results
    assert r.verdict == "counterexample", r.reason
    assert r.confirmed is True, r.to_dict()
    cex = r.counterexample
    x, m = cex.inputs["x"], cex.inputs["m"]
    j = cex.index[0]
    batch = f32(x[:, j, :].astype(np.float64).mean())
    documented = m[j] * f32(0.1) + batch * f32(0.9)
    tvm = f32(0.9) * m[j] + f32(0.1) * batch
    assert not np.isclose(documented, tvm, rtol=1e-5, equal_nan=True)
    # the specification's evaluation against the target's, with TVM's rsqrt values when the
    # element depends on it (the rung the check ends on decides which element that is)
    assert cex.confirmed_by in ("ieee-spec", "ieee-spec-cpu")
    spec, target = cex.executed_values
    assert np.isclose(spec, documented, rtol=1e-5) and np.isclose(target, tvm, rtol=1e-5)


@pytest.mark.parametrize("pass_name, training", [("DecomposeOpsForTraining", False),
                                                 ("DecomposeOpsForInference", True)])
def test_decompose_ops_ignores_batch_norm_s_training_attribute(pass_name, training):
    """Found by a sweep (Isra, seed 23, graph 7): each DecomposeOps pass decomposes every
    batch_norm in its own mode, whatever the call's `training` says. DecomposeOpsForTraining
    normalizes a training=False batch_norm with the batch's statistics (x = [2], moving
    statistics 3: 3.0 where the VM's source gives 1.268), DecomposeOpsForInference a
    training=True one with the moving statistics. The normalized output changes, confirmed
    by execution on the VM (the source's legalization keeps the mode)."""
    from tvtv.api import check_pass
    (r,) = check_pass(pass_name, _bn_module(training=training, item=0), timeout=10).results
    assert r.verdict == "counterexample", r.reason
    assert r.confirmed is True, r.to_dict()
    cex = r.counterexample
    # measured: "vm" for both (the source's and the target's runs differ)
    assert cex.confirmed_by in ("vm", "vm-random-inputs"), cex.confirmed_by
    # the proof in the pass's own mode stands (the twin: the attribute matters)
    (same,) = check_pass(pass_name, _bn_module(training=not training, item=0), timeout=10).results
    assert same.verdict == "proved", same.reason
