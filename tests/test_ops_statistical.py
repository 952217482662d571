"""Conformance of the reduction encoders (tvtv/encode/ops/statistical.py) with numpy.

Exact ops (max, min, argmax, argmin, integer sums, cumsum/cumprod) are evaluated in the IEEE
model and compared bit for bit with numpy. Float sums, products and what is built on them
(mean, variance, std) are uninterpreted functions; for those:
  * `eval_numpy_ufs` interprets the uninterpreted functions of the IEEE encoding by numpy
    (a sum as numpy's left fold from +0.0, which is numpy's order for fewer than 8 terms;
    exp/log by numpy's ufuncs) and compares with a numpy reference that uses the same order:
    this checks the structure of the encoding (which terms, which formula) on every shape;
  * `agrees(..., exact=False)` checks that the encoding admits numpy's result, and
    `exact=True` that special values are forced, in the IEEE and the abstract model.
In the IEEE model, "admits" checks of variance/std are left to `eval_numpy_ufs`: Z3 does not
find, in reasonable time, sums whose FP quotients and deviations reproduce numpy's bits.
"""
from __future__ import annotations

import re
from typing import Any, Sequence

import numpy as np
import pytest
import z3

import tvtv.encode.ops.statistical  # noqa: F401  (registers the encoders)
from tests.conftest import assert_unsat_each
from tvtv.absfp.abstract import AbstractModel
from tvtv.absfp.dtypes import numpy_dtype
from tvtv.absfp.ieee import IEEEModel, fp_value
from tvtv.encode.evaluate import agrees, arrays_match, element_value, encode_op, eval_op
from tvtv.encode.tensor import idx
from tvtv.encode.values import flatten
from tvtv.errors import Unsupported
from tvtv.ir.program import TensorType

f32 = np.float32
FMAX = float(np.finfo(np.float32).max)
DENORM = float(np.float32(1e-45))
SPECIALS = [0.0, -0.0, np.inf, -np.inf, np.nan, FMAX, -FMAX, DENORM, 1.5, -2.0]


def abstract() -> AbstractModel:
    return AbstractModel(8)


# -- evaluating the IEEE encoding with numpy in place of its uninterpreted functions ----------

_RED = re.compile(r"^(sum|prod)_(\w+?)_(\d+)__")
_FUN = re.compile(r"^ieee_(\w+)_(float16|bfloat16|float32|float64)$")


def _closed_uf_app(t: z3.ExprRef) -> z3.ExprRef | None:
    """An application of an uninterpreted function outside any binder, or None."""
    todo, seen = [t], set()
    while todo:
        e = todo.pop()
        if e.get_id() in seen or z3.is_quantifier(e) or not z3.is_app(e):
            continue
        seen.add(e.get_id())
        d = e.decl()
        if d.kind() == z3.Z3_OP_UNINTERPRETED and d.arity() > 0:
            return e
        todo.extend(e.children())
    return None


def _ground(term: z3.ExprRef) -> z3.ExprRef:
    """`term` with every uninterpreted application replaced by numpy's value for it."""
    while True:
        term = z3.simplify(term)
        app = _closed_uf_app(term)
        if app is None:
            return term
        term = z3.substitute(term, (app, _numpy_value(app)))


def _numpy_value(app: z3.ExprRef) -> z3.ExprRef:
    name = app.decl().name()
    m = _RED.match(name)
    if m:   # sum/prod of n terms: numpy's left fold from the identity
        kind, dtype, n = m.group(1), m.group(2), int(m.group(3))
        t = numpy_dtype(dtype).type
        acc = t(0.0 if kind == "sum" else 1.0)
        with np.errstate(all="ignore"):
            for k in range(n):
                # the terms are the n arguments, or the first n entries of one array argument
                term = app.arg(k) if app.num_args() == n else z3.Select(app.arg(0), idx(k))
                x = t(fp_value(_ground(term), dtype))
                acc = t(acc + x) if kind == "sum" else t(acc * x)
        return IEEEModel().domain(dtype).const(float(acc))
    m = _FUN.match(name)
    if m:   # exp, log, ...: numpy's ufunc
        fname, dtype = m.group(1), m.group(2)
        x = np.array([fp_value(_ground(app.arg(0)), dtype)], dtype=numpy_dtype(dtype))
        with np.errstate(all="ignore"):
            y = getattr(np, fname)(x)[0]
        return IEEEModel().domain(dtype).const(float(y))
    raise NotImplementedError(f"no numpy meaning for {name}")


def eval_numpy_ufs(op: str, args: Sequence[Any], out_ty: Any, attrs: dict | None = None,
                   arg_dtypes: Sequence[str] | None = None) -> list[np.ndarray]:
    """The IEEE encoding evaluated on concrete inputs, uninterpreted functions read as numpy."""
    value, _ = encode_op(op, args, out_ty, attrs, IEEEModel(), arg_dtypes)
    out = []
    for t in flatten(value):
        vals = [element_value(_ground(t.at(k)), t.dtype) for k in range(t.numel)]
        assert all(v is not None for v in vals)
        out.append(np.array(vals, dtype=numpy_dtype(t.dtype)).reshape(t.shape))
    return out


def seq_reduce(x: np.ndarray, axis: Any, keepdims: bool, kind: str) -> np.ndarray:
    """numpy sum/prod in numpy's order for short axes: a left fold from the identity over the
    reduced elements in row-major order."""
    axes = tuple(range(x.ndim)) if axis is None else tuple(a % x.ndim for a in np.atleast_1d(axis))
    kept = [a for a in range(x.ndim) if a not in axes]
    moved = np.transpose(x, kept + list(axes)).reshape([x.shape[a] for a in kept] + [-1])
    t = x.dtype.type
    acc = np.full(moved.shape[:-1], t(0 if kind == "sum" else 1), dtype=x.dtype)
    with np.errstate(all="ignore"):
        for k in range(moved.shape[-1]):
            acc = (acc + moved[..., k]) if kind == "sum" else (acc * moved[..., k])
    acc = np.asarray(acc, dtype=x.dtype)
    if keepdims:
        acc = acc.reshape([1 if a in axes else d for a, d in enumerate(x.shape)])
    return acc


def ref_mean(x, axis, keepdims):
    axes = tuple(range(x.ndim)) if axis is None else tuple(np.atleast_1d(axis))
    n = int(np.prod([x.shape[a] for a in axes]))
    with np.errstate(all="ignore"):
        return np.asarray(seq_reduce(x, axis, keepdims, "sum") / x.dtype.type(n), dtype=x.dtype)


def ref_var(x, axis, keepdims):
    with np.errstate(all="ignore"):
        d = x - ref_mean(x, axis, True)
        return ref_mean(d * d, axis, keepdims)


def ref_std(x, axis, keepdims):
    with np.errstate(all="ignore"):
        return np.sqrt(ref_var(x, axis, keepdims))


def out_shape(shape, axis, keepdims):
    axes = range(len(shape)) if axis is None else [a % len(shape) for a in np.atleast_1d(axis)]
    if keepdims:
        return tuple(1 if k in axes else d for k, d in enumerate(shape))
    return tuple(d for k, d in enumerate(shape) if k not in axes)


def special_array(shape, seed, pool=SPECIALS) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.array(rng.choice(np.array(pool, dtype=f32), size=shape), dtype=f32)


def random_array(shape, seed) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(f32)


AXES = [((2, 3), None, False), ((2, 3), [1], False), ((2, 3), [0], True), ((2, 3), [-1], True),
        ((2, 1, 3), [0, 2], False), ((2, 2, 2), [1], False), ((2, 3), [], False)]


# -- TVM's inferred result types -------------------------------------------------------------

def tvm_type(op_name: str, shape, in_dtype: str, **attrs) -> TensorType:
    """The result type TVM infers for relax.<op_name>(x, **attrs) on a tensor of `shape`."""
    from tvm import relax

    from tvtv.ir.relax_reader import convert_type
    x = relax.Var("x", relax.TensorType(shape, in_dtype))
    fn = relax.op
    for part in op_name.split(".")[1:]:
        fn = getattr(fn, part)
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        ty = convert_type(bb.normalize(fn(x, **attrs)).ty)
        bb.emit_func_output(x)
    return ty


@pytest.mark.parametrize("op,shape,dtype,attrs", [
    ("relax.sum", (2, 3, 4), "float32", {"axis": [1], "keepdims": True}),
    ("relax.sum", (2, 3), "int32", {"axis": None, "keepdims": False}),
    ("relax.sum", (2, 3), "float32", {"axis": [], "keepdims": False}),
    ("relax.prod", (2, 3, 4), "float32", {"axis": [0, 2], "keepdims": False}),
    ("relax.mean", (2, 3, 4), "float32", {"axis": [-1], "keepdims": False}),
    ("relax.mean", (2, 3), "int32", {"axis": [1], "keepdims": True}),
    ("relax.max", (2, 3, 4), "float32", {"axis": [0, 2], "keepdims": False}),
    ("relax.min", (2, 3), "int8", {"axis": None, "keepdims": True}),
    ("relax.variance", (2, 3, 4), "float32", {"axis": [1], "keepdims": False}),
    ("relax.std", (2, 3, 4), "float32", {"axis": None, "keepdims": True}),
    ("relax.argmax", (2, 3, 4), "float32", {"axis": 1, "keepdims": False}),
    ("relax.argmin", (2, 3, 4), "float32", {"axis": None, "keepdims": True}),
    ("relax.argmax", (2, 3), "int32", {"axis": -1, "keepdims": True}),
    ("relax.cumsum", (2, 3), "float32", {"axis": None, "exclusive": False}),
    ("relax.cumsum", (2, 3), "int32", {"axis": 1, "dtype": "float32", "exclusive": True}),
    ("relax.cumprod", (2, 3), "float32", {"axis": -2, "exclusive": False}),
])
def test_result_type_matches_tvm(op, shape, dtype, attrs):
    """The encoder's output shape/dtype equals TVM's inferred `.ty` (it raises otherwise)."""
    ty = tvm_type(op, shape, dtype, **attrs)
    full = {"axis": None, "keepdims": False, "exclusive": False, "dtype": None, **attrs}
    x = np.zeros(shape, dtype=numpy_dtype(dtype))
    value, _ = encode_op(op, [x], ty, full, IEEEModel(), [dtype])
    assert (value.shape, value.dtype) == (ty.shape, ty.dtype)


def test_shape_mismatch_is_reported():
    x = np.zeros((2, 3), f32)
    with pytest.raises(Unsupported):
        encode_op("relax.sum", [x], TensorType((3,), "float32"), {"axis": [1]}, IEEEModel())


# -- exact ops: max, min, argmax, argmin ------------------------------------------------------

def _np_arg(fn, x, axis, keepdims):
    if axis is None:
        r = fn(x.reshape(-1))
        return np.array(r).reshape((1,) * x.ndim) if keepdims else np.array(r)
    return fn(x, axis=axis, keepdims=keepdims)


@pytest.mark.parametrize("shape,axis,keepdims", AXES)
@pytest.mark.parametrize("values", ["random", "special"])
def test_max_min_exact_ieee(shape, axis, keepdims, values):
    x = random_array(shape, 1) if values == "random" else special_array(shape, len(shape))
    ax = None if axis is None else tuple(axis)
    for op, fn in (("relax.max", np.max), ("relax.min", np.min)):
        want = np.asarray(fn(x, axis=ax, keepdims=keepdims))
        (got,) = eval_op(op, [x], TensorType(want.shape, "float32"),
                         {"axis": axis, "keepdims": keepdims})
        assert arrays_match(got, want), (op, x, got, want)


@pytest.mark.parametrize("shape,axis,keepdims",
                         [((2, 3), [1], False), ((2, 3), None, True), ((3, 2), [0], False)])
def test_argmax_argmin_exact_ieee(shape, axis, keepdims):
    for seed, x in enumerate([random_array(shape, 2), special_array(shape, 3),
                              special_array(shape, 4)]):
        ax = None if axis is None else axis[0]
        for op, fn in (("relax.argmax", np.argmax), ("relax.argmin", np.argmin)):
            want = np.asarray(_np_arg(fn, x, ax, keepdims), dtype=np.int64)
            (got,) = eval_op(op, [x], TensorType(want.shape, "int64"),
                             {"axis": ax, "keepdims": keepdims})
            assert arrays_match(got, want), (op, x, got, want)


def test_argmax_first_nan_wins():
    x = np.array([[1.0, np.nan, 3.0, np.nan], [-np.inf, -np.inf, -np.inf, -np.inf]], f32)
    (got,) = eval_op("relax.argmax", [x], TensorType((2,), "int64"), {"axis": 1})
    assert got.tolist() == [1, 0] == np.argmax(x, axis=1).tolist()
    (got,) = eval_op("relax.argmin", [x], TensorType((2,), "int64"), {"axis": 1})
    assert got.tolist() == [1, 0] == np.argmin(x, axis=1).tolist()


def test_max_special_cases():
    x = np.array([[-np.inf, -np.inf], [1.0, np.nan], [0.0, -0.0], [-0.0, 0.0]], f32)
    (got,) = eval_op("relax.max", [x], TensorType((4,), "float32"), {"axis": [1]})
    assert arrays_match(got, np.array([-np.inf, np.nan, -0.0, 0.0], f32))
    assert arrays_match(got, np.max(x, axis=1))


@pytest.mark.parametrize("op", ["relax.max", "relax.min", "relax.argmax", "relax.argmin"])
@pytest.mark.parametrize("values", ["random", "special"])
def test_max_min_arg_exact_abstract(op, values):
    x = random_array((2, 3), 5) if values == "random" else special_array((2, 3), 6)
    fn = {"relax.max": np.max, "relax.min": np.min, "relax.argmax": np.argmax,
          "relax.argmin": np.argmin}[op]
    want = np.asarray(fn(x, axis=1))
    dt = "int64" if "arg" in op else "float32"
    attrs = {"axis": 1 if "arg" in op else [1]}
    assert agrees(op, [x], TensorType((2,), dt), [want], attrs, model=abstract(), exact=True)
    wrong = want.copy()
    wrong[0] = (wrong[0] + 1) if "arg" in op else f32(7.25)
    assert not agrees(op, [x], TensorType((2,), dt), [wrong], attrs, model=abstract(),
                      exact=False)


# -- integers ---------------------------------------------------------------------------------

INT_X = np.array([[2147483647, 1, -5], [-2147483648, -1, 7]], np.int32)


@pytest.mark.parametrize("axis,keepdims", [(None, False), ([1], False), ([0], True)])
def test_int_reductions_exact(axis, keepdims):
    ax = None if axis is None else tuple(axis)
    cases = [("relax.sum", np.sum(INT_X, axis=ax, keepdims=keepdims, dtype=np.int32)),
             ("relax.prod", np.prod(INT_X, axis=ax, keepdims=keepdims, dtype=np.int32)),
             ("relax.max", np.max(INT_X, axis=ax, keepdims=keepdims)),
             ("relax.min", np.min(INT_X, axis=ax, keepdims=keepdims))]
    for op, want in cases:
        want = np.asarray(want, np.int32)
        ty = TensorType(want.shape, "int32")
        attrs = {"axis": axis, "keepdims": keepdims}
        (got,) = eval_op(op, [INT_X], ty, attrs)
        assert arrays_match(got, want), (op, got, want)
        assert agrees(op, [INT_X], ty, [want], attrs, model=abstract(), exact=True)
        assert not agrees(op, [INT_X], ty, [want + 1], attrs, model=abstract(), exact=False)


def test_int_argmax_and_mean():
    (got,) = eval_op("relax.argmax", [INT_X], TensorType((2,), "int64"), {"axis": 1})
    assert got.tolist() == np.argmax(INT_X, axis=1).tolist()
    # TVM's integer mean: the wrapped int32 sum, divided with truncation toward zero
    x = np.array([[1, 2], [3, -8]], np.int32)
    (got,) = eval_op("relax.mean", [x], TensorType((2,), "int32"), {"axis": [1]})
    assert got.tolist() == [1, -2]           # measured on TVM's VM
    (got,) = eval_op("relax.variance", [x], TensorType((2,), "int32"), {"axis": [1]})
    assert got.tolist() == [0, 30]           # measured on TVM's VM
    with pytest.raises(Unsupported):
        encode_op("relax.std", [x], TensorType((2,), "int32"), {"axis": [1]}, IEEEModel())


BOOL_CASES = [((3, 4), [1], False), ((3, 4), [0], True), ((2, 3, 2), None, False),
              ((5,), [0], False), ((2, 0, 3), [1], False), ((70,), [0], False)]


def _bools(shape: tuple, seed: int) -> np.ndarray:
    """Random bools with an all-True row and an all-False row where the shape allows."""
    x = np.random.default_rng(seed).random(shape) < 0.5
    if x.ndim >= 2 and x.shape[1] > 0:
        x[0, ...], x[-1, ...] = True, False
    return x


@pytest.mark.parametrize("shape,axis,keepdims", BOOL_CASES)
def test_bool_sum_and_prod_are_any_and_all_as_on_the_vm(shape, axis, keepdims):
    """TVM's bool arithmetic saturates: sum of a bool tensor is `any`, prod is `all`, in bool
    (measured here on the VM, which runs LegalizeOps' `acc or x` / `acc and x`); the
    encoder's values are those bit for bit, an empty axis included (False / True)."""
    from tests.test_ops_linalg import run_vm, typed_module
    from tvm import relax
    x = _bools(shape, len(shape))
    for op, ref in (("sum", np.any), ("prod", np.all)):
        make = lambda p, op=op: getattr(relax.op, op)(p, axis=axis, keepdims=keepdims)
        on_vm = run_vm(typed_module(make, (shape, "bool")), x).numpy()
        want = ref(x, axis=None if axis is None else tuple(axis), keepdims=keepdims)
        assert on_vm.dtype == np.bool_ and on_vm.tolist() == want.tolist(), (op, on_vm, want)
        ty = TensorType(tuple(want.shape), "bool")
        attrs = {"keepdims": keepdims, **({} if axis is None else {"axis": axis})}
        (got,) = eval_op(f"relax.{op}", [x], ty, attrs)
        assert np.asarray(got).tolist() == want.tolist(), (op, got, want)


@pytest.mark.parametrize("n", [6, 5000])
def test_bool_sum_and_prod_legalization_is_proved_and_broken_twins_refuted(n):
    """LegalizeOps' bool sum / prod loops are proved equal to the ops (unrolled `or` / `and`
    for 6 terms, a function of the term array for 5000); each broken twin is refuted:
    the wrong initial value, and `or` exchanged for `and`."""
    import tvtv
    from tests.conftest import mutate
    from tests.test_ops_linalg import typed_module
    from tvm import relax
    for op, init, comb, other in (("sum", "T.bool(False)", " or ", " and "),
                                  ("prod", "T.bool(True)", " and ", " or ")):
        src = typed_module(lambda p, op=op: getattr(relax.op, op)(p, axis=[1]), ((2, n), "bool"))
        tgt = relax.transform.LegalizeOps()(src)
        (r,) = tvtv.verify(src, tgt, timeout=30).results
        assert r.verdict == "proved", (op, n, r.to_dict())
        flipped = "T.bool(True)" if init == "T.bool(False)" else "T.bool(False)"
        for old, new in ((init, flipped), (comb, other)):
            (b,) = tvtv.verify(src, mutate(tgt, old, new), timeout=30).results
            assert b.verdict == "counterexample" and b.confirmed, (op, n, old, b.to_dict())


def test_large_bool_reductions_nest_without_capture():
    """Above `BOOL_UNROLL_BOUND` terms a bool sum / prod is a quantified formula; one built
    inside another's terms binds its own index: "for every r < 5000 some s < 5000 is
    r + 1" is false (r = 4999), "for some r" is true."""
    from tvtv.encode import reduction
    from tvtv.encode.context import EncodeContext
    n = reduction.BOOL_UNROLL_BOUND + 904
    ctx = EncodeContext(IEEEModel())
    inner = lambda r: reduction.reduce_bool(ctx, "sum", n, lambda s: s == r + idx(1))
    for kind, want in (("prod", False), ("sum", True)):
        solver = z3.Solver()
        solver.add(reduction.reduce_bool(ctx, kind, n, inner) != z3.BoolVal(want))
        assert solver.check() == z3.unsat, kind


# -- float sums and what is built on them -----------------------------------------------------

REFS = {"relax.sum": lambda x, a, k: seq_reduce(x, a, k, "sum"),
        "relax.prod": lambda x, a, k: seq_reduce(x, a, k, "prod"),
        "relax.mean": ref_mean, "relax.variance": ref_var, "relax.std": ref_std}


@pytest.mark.parametrize("op", list(REFS))
@pytest.mark.parametrize("shape,axis,keepdims", AXES)
def test_float_reductions_structure_ieee(op, shape, axis, keepdims):
    """With numpy's meaning of the uninterpreted sums, the encoding computes numpy's result
    (random and special values, every axes/keepdims combination)."""
    for x in (random_array(shape, 7), special_array(shape, 8),
              special_array(shape, 9, [1.0, -0.0, 0.5, DENORM, -3.0])):
        want = REFS[op](x, axis, keepdims)
        (got,) = eval_numpy_ufs(op, [x], TensorType(want.shape, "float32"),
                                {"axis": axis, "keepdims": keepdims})
        assert arrays_match(got, want), (op, x, got, want)


def test_structure_check_can_fail():
    """The structural check rejects another formula (sample variance, ddof=1)."""
    x = random_array((2, 3), 10)
    want = ref_var(x, [1], False) * f32(3) / f32(2)
    (got,) = eval_numpy_ufs("relax.variance", [x], TensorType((2,), "float32"), {"axis": [1]})
    assert not arrays_match(got, want)


ADMIT_SHAPES = [((3,), None, False), ((2, 3), [1], False), ((2, 3), [0], True),
                ((1, 2, 2), [1, 2], False), ((2, 2, 2), [0, 2], False)]
NUMPY_FN = {"relax.sum": np.sum, "relax.prod": np.prod, "relax.mean": np.mean,
            "relax.variance": np.var, "relax.std": np.std}


@pytest.mark.parametrize("op", list(REFS))
@pytest.mark.parametrize("shape,axis,keepdims", ADMIT_SHAPES)
def test_float_reductions_admit_numpy(op, shape, axis, keepdims):
    """The encoding admits numpy's own result (np.sum etc., in numpy's own order): in the
    abstract model for every op, in the IEEE model for sum/mean/prod (for variance/std, Z3
    cannot invert the FP division inside the deviations in reasonable time; the structural
    check above covers them)."""
    x = random_array(shape, 11)
    ax = None if axis is None else tuple(axis)
    with np.errstate(all="ignore"):
        want = np.asarray(NUMPY_FN[op](x, axis=ax, keepdims=keepdims), f32)
    ty = TensorType(want.shape, "float32")
    attrs = {"axis": axis, "keepdims": keepdims}
    assert agrees(op, [x], ty, [want], attrs, model=abstract(), exact=False)
    if op in ("relax.sum", "relax.mean", "relax.prod"):
        assert agrees(op, [x], ty, [want], attrs, exact=False)


# (row, what the encoding forces for sum / prod (None: nothing), values it must admit, values
# it must reject). A sum with +inf and no -inf is "+inf or NaN" (finite terms may overflow to
# -inf first in some order: reduction.py), so only that much is forced there.
FIXED = [
    ([1.0, np.nan, 2.0], np.nan, np.nan, [np.nan], [1.0, np.inf]),
    ([np.inf, -np.inf, 1.0], np.nan, None, [np.nan], [np.inf, 0.0]),
    ([np.nan, np.inf, 0.0], np.nan, np.nan, [np.nan], [0.0]),
    ([np.inf, 5.0, -FMAX], None, None, [np.inf, np.nan], [1.0, -np.inf, FMAX]),
    ([-np.inf, -np.inf, 0.5], None, None, [-np.inf, np.nan], [np.inf, -FMAX]),
    ([-0.0, -0.0, 0.0], 0.0, None, [0.0], [-0.0]),
]


@pytest.mark.parametrize("row,s,p,admit,reject", FIXED)
@pytest.mark.parametrize("model", ["ieee", "abstract"])
def test_float_special_rows(row, s, p, admit, reject, model):
    m = IEEEModel() if model == "ieee" else abstract()
    x = np.array([row], f32)
    ty = TensorType((1,), "float32")
    attrs = {"axis": [1]}
    with np.errstate(all="ignore"):
        numpy_sum = np.sum(x, axis=1)
    assert any(arrays_match(numpy_sum, np.array([v], f32)) for v in admit)
    if s is not None:
        assert agrees("relax.sum", [x], ty, [np.array([s], f32)], attrs, model=m, exact=True)
        assert agrees("relax.mean", [x], ty, [np.array([s], f32) / f32(3)], attrs, model=m,
                      exact=True)
    for v in admit:
        assert agrees("relax.sum", [x], ty, [np.array([v], f32)], attrs, model=m, exact=False)
    for v in reject:
        assert not agrees("relax.sum", [x], ty, [np.array([v], f32)], attrs, model=m,
                          exact=False)
    if any(np.isinf(row)) or any(np.isnan(row)):   # inf - inf in the deviations: NaN
        assert agrees("relax.variance", [x], ty, [np.array([np.nan], f32)], attrs, model=m,
                      exact=True)
    if p is not None:
        assert agrees("relax.prod", [x], ty, [np.array([p], f32)], attrs, model=m, exact=True)


@pytest.mark.parametrize("model", ["ieee", "abstract"])
def test_one_term_sum_is_exact(model):
    """A sum of one term is +0.0 + x: -0.0 becomes +0.0 (numpy.sum([-0.0]) is 0.0)."""
    m = IEEEModel() if model == "ieee" else abstract()
    x = np.array([[-0.0], [DENORM], [-FMAX], [np.inf]], f32)
    want = np.array([0.0, DENORM, -FMAX, np.inf], f32)
    assert arrays_match(np.sum(x, axis=1), want)
    ty = TensorType((4,), "float32")
    assert agrees("relax.sum", [x], ty, [want], {"axis": [1]}, model=m, exact=True)
    assert not agrees("relax.sum", [x], ty, [-want], {"axis": [1]}, model=m, exact=False)
    assert agrees("relax.max", [x], ty, [x[:, 0]], {"axis": [1]}, model=m, exact=True)


# -- cumulative scans -------------------------------------------------------------------------

@pytest.mark.parametrize("op,fn", [("relax.cumsum", np.cumsum), ("relax.cumprod", np.cumprod)])
@pytest.mark.parametrize("axis", [None, 0, 1, -1])
@pytest.mark.parametrize("values", ["random", "special", "int"])
def test_cumulative_exact(op, fn, axis, values):
    x = {"random": random_array((2, 3), 12), "special": special_array((2, 3), 13),
         "int": INT_X}[values]
    with np.errstate(all="ignore"):
        want = fn(x, axis=axis, dtype=x.dtype)
    ty = TensorType(want.shape, str(x.dtype))
    attrs = {"axis": axis, "exclusive": False, "dtype": None}
    (got,) = eval_op(op, [x], ty, attrs)
    assert arrays_match(got, want), (op, x, got, want)
    # abstract + and * are uninterpreted on ordinary floats: only integers are forced there
    assert agrees(op, [x], ty, [want], attrs, model=abstract(), exact=values == "int")
    wrong = want.copy()
    wrong.reshape(-1)[0] = 3
    assert not agrees(op, [x], ty, [wrong], attrs, model=abstract(), exact=False)


def test_cumulative_exclusive_and_dtype():
    x = np.array([[-0.0, -0.0, 2.0]], f32)
    ty = TensorType((1, 3), "float32")
    # measured on TVM's VM: exclusive scans start from the identity (+0.0 / 1.0)
    (got,) = eval_op("relax.cumsum", [x], ty, {"axis": 1, "exclusive": True})
    assert arrays_match(got, np.array([[0.0, 0.0, 0.0]], f32))
    (got,) = eval_op("relax.cumprod", [x], ty, {"axis": 1, "exclusive": True})
    assert arrays_match(got, np.array([[1.0, -0.0, 0.0]], f32))
    (got,) = eval_op("relax.cumsum", [x], ty, {"axis": 1, "exclusive": False})
    assert arrays_match(got, np.array([[-0.0, -0.0, 2.0]], f32))   # numpy keeps x_0
    (got,) = eval_op("relax.cumsum", [INT_X], TensorType((2, 3), "float32"),
                     {"axis": 1, "dtype": "float32"})
    assert arrays_match(got, np.cumsum(INT_X.astype(f32), axis=1))
    # accumulating in int32 (without dtype) would wrap
    assert not arrays_match(got, np.cumsum(INT_X, axis=1, dtype=np.int32).astype(f32))


# -- sums over the same terms are the same term -----------------------------------------------

def test_variance_equals_its_decomposition():
    """relax.variance and mean((x - mean(x, keepdims))^2) built from the same helpers prove
    equal for every x in the abstract model (what EliminateCommonSubexpr etc. need)."""
    from tvtv.encode.context import EncodeContext
    from tvtv.encode.ops import statistical as S
    from tvtv.encode.registry import lookup
    from tvtv.encode.tensor import Tensor, elementwise
    from tvtv.ir.program import OpCall, VarRef

    model = abstract()
    ctx = EncodeContext(model)
    dom = model.domain("float32")
    x = Tensor.variable("x", (2, 3), "float32", dom)
    call = OpCall("relax.variance", (VarRef("x"),), {"axis": [1], "keepdims": False},
                  TensorType((2,), "float32"))
    v = lookup("relax.variance")(ctx, call, [x])
    m = S.mean_axes(ctx, x, [1], True)
    d = elementwise((2, 3), "float32", [x, m], dom.sub)
    sq = elementwise((2, 3), "float32", [d, d], dom.mul)
    v2 = S.mean_axes(ctx, sq, [1], False)
    assert_unsat_each(model.preconditions(),
                      [z3.Not(dom.same(v.at(k), v2.at(k))) for k in range(2)])
    # a different formula (x + mean instead of x - mean) is not proved equal (Z3 may answer
    # unknown rather than sat: models of sums over lambda-built arrays are hard for it)
    s2 = z3.Solver()
    s2.set("timeout", 2000)
    s2.add(*model.preconditions())
    d3 = elementwise((2, 3), "float32", [x, m], dom.add)
    v3 = S.mean_axes(ctx, elementwise((2, 3), "float32", [d3, d3], dom.mul), [1], False)
    s2.add(z3.Not(dom.same(v.at(0), v3.at(0))))
    assert s2.check() != z3.unsat


def test_float16_reductions():
    """Other float dtypes use the same encoders: float16 max (exact) and sum (structure)."""
    x = np.array([[1.5, -np.inf, 65504.0], [np.nan, 0.25, -0.0]], np.float16)
    ty = TensorType((2,), "float16")
    (got,) = eval_op("relax.max", [x], ty, {"axis": [1]}, ["float16"])
    assert arrays_match(got, np.max(x, axis=1))
    y = np.array([[1.5, 2.0, 65504.0], [0.125, 0.25, -0.0]], np.float16)
    (got,) = eval_numpy_ufs("relax.sum", [y], ty, {"axis": [1]}, ["float16"])
    assert arrays_match(got, seq_reduce(y, [1], False, "sum"))
    assert agrees("relax.sum", [y], ty, [np.sum(y, axis=1)], {"axis": [1]}, exact=False,
                  arg_dtypes=["float16"])
