"""Conformance of the linear-algebra encoders (tvtv/encode/ops/linalg.py) with numpy.

matmul/einsum elements are uninterpreted sums of products (`reduction.dot`). They are checked
three ways:
  * `eval_folded`: the IEEE encoding with every uninterpreted sum read as the left fold
    from +0.0 over its term array (one order the spec allows) must equal, bit for bit, a
    numpy reference that multiplies and adds in the op's dtype in that same order. This
    checks which products the encoding sums and in which order, on every shape;
  * `agrees(..., exact=True)` where the result is fixed (NaN/inf rows, K=1, integers, outer),
    and `exact=False` (numpy's float64 result rounded is admitted) on random values, in the
    IEEE and the abstract model;
  * wrong expectations must be rejected.
The helpers here (`tvm_call`, `eval_folded`, `fold`) are shared with the conv/pool tests.
"""
from __future__ import annotations

import math
import re
from typing import Any, Callable, Sequence

import numpy as np
import pytest
import z3

import tvtv.encode.ops.linalg  # noqa: F401  (registers the encoders)
from tvtv.absfp.abstract import AbstractModel
from tvtv.absfp.dtypes import numpy_dtype
from tvtv.absfp.ieee import IEEEModel
from tvtv.encode import registry
from tvtv.encode.context import EncodeContext
from tvtv.encode.evaluate import agrees, arg_value, arrays_match, element_value, encode_op, eval_op
from tvtv.encode.values import flatten
from tvtv.errors import Unsupported
from tvtv.ir import program as P
from tvtv.ir.program import TensorType

f32, f16 = np.float32, np.float16
INF, NAN = math.inf, math.nan
FMAX = float(np.finfo(f32).max)
DENORM = float(f32(1e-45))
SPECIALS = [0.0, -0.0, INF, -INF, NAN, FMAX, -FMAX, DENORM, 1.5, -2.0]


def abstract() -> AbstractModel:
    return AbstractModel(8)


def rand(shape: Sequence[int], seed: int = 0, dtype: Any = f32) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def special(shape: Sequence[int], seed: int = 0, pool: Sequence[float] = SPECIALS) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.array(rng.choice(np.array(pool, dtype=f32), size=shape), dtype=f32)


# -- TVM: inferred result types and normalized attributes ------------------------------------

def tvm_call(make: Callable, *arg_types: tuple[Sequence[int], str]) -> tuple[TensorType, dict]:
    """Build `make(*params)` with BlockBuilder on parameters of the given (shape, dtype):
    TVM's inferred result type and its normalized attributes, read as tvtv reads them."""
    from tvm import relax

    from tvtv.ir.relax_reader import convert_attrs, convert_type
    params = [relax.Var(f"p{k}", relax.TensorType(list(s), d)) for k, (s, d) in enumerate(arg_types)]
    bb = relax.BlockBuilder()
    with bb.function("main", params):
        call = bb.normalize(make(*params))
        ty = convert_type(call.ty)
        attrs = convert_attrs(call.attrs)
        bb.emit_func_output(params[0])
    assert isinstance(ty, TensorType), ty
    return ty, attrs


def call_module(make: Callable, *arrays: np.ndarray) -> Any:
    """The IRModule whose `main` returns `make(*params)`, one parameter per array (its shape
    and dtype; none for ops without tensor inputs)."""
    return typed_module(make, *[(a.shape, str(a.dtype)) for a in arrays])


def typed_module(make: Callable, *types: tuple[Sequence[int], str]) -> Any:
    """`call_module` with parameters of the given (shape, dtype)."""
    from tvm import relax
    params = [relax.Var(f"p{k}", relax.TensorType(list(s), d)) for k, (s, d) in enumerate(types)]
    bb = relax.BlockBuilder()
    with bb.function("main", params):
        with bb.dataflow():
            out = bb.emit_output(bb.emit(make(*params)))
        bb.emit_func_output(out)
    return bb.get()


def run_vm(mod: Any, *arrays: np.ndarray) -> Any:
    """`mod`'s main run on the TVM VM (LLVM, CPU) with `arrays`: TVM's runtime value."""
    import tvm
    from tvm import relax
    vm = relax.VirtualMachine(relax.build(mod, target="llvm"), tvm.cpu())
    return vm["main"](*[tvm.runtime.tensor(a) for a in arrays])


def run_tvm(make: Callable, *arrays: np.ndarray) -> np.ndarray:
    """Run `make(*params)` on the TVM VM (LLVM, CPU): used only to confirm that the numpy
    references read the attributes (padding order, ceil_mode, ...) as TVM does."""
    return run_vm(call_module(make, *arrays), *arrays).numpy()


# -- the IEEE encoding with its uninterpreted sums read as left folds ------------------------

_SUM = re.compile(r"^sum_(\w+?)_(\d+)__")


def _sum_decls(term: z3.ExprRef) -> dict[str, z3.FuncDeclRef]:
    out: dict[str, z3.FuncDeclRef] = {}
    todo, seen = [term], set()
    while todo:
        e = todo.pop()
        if e.get_id() in seen:
            continue
        seen.add(e.get_id())
        if z3.is_quantifier(e):
            todo.append(e.body())
            continue
        if not z3.is_app(e):
            continue
        d = e.decl()
        if d.kind() == z3.Z3_OP_UNINTERPRETED and _SUM.match(d.name()):
            out[d.name()] = d
        todo.extend(e.children())
    return out


def fold_sums(term: z3.ExprRef) -> z3.ExprRef:
    """`term` with each uninterpreted float sum of n terms replaced by the IEEE left fold
    ((+0.0 + t_0) + t_1) + ... + t_{n-1}, simplified. A sum takes its terms either as n
    scalar arguments or as one term array (`reduction.uf_of_terms`)."""
    term = z3.simplify(term)
    pairs = []
    for name, d in _sum_decls(term).items():
        n = int(_SUM.match(name).group(2))
        if d.arity() == 1 and z3.is_array_sort(d.domain(0)):
            arr = z3.Var(0, d.domain(0))
            terms = [z3.Select(arr, z3.BitVecVal(k, 32)) for k in range(n)]
        else:
            assert d.arity() == n, name
            terms = [z3.Var(k, d.domain(k)) for k in range(n)]
        acc = z3.FPVal(0.0, d.range())
        for t in terms:
            acc = z3.fpAdd(z3.RNE(), acc, t)
        pairs.append((d, acc))
    return z3.simplify(z3.substitute_funs(term, *pairs)) if pairs else term


def eval_folded(op: str, args: Sequence[Any], out_ty: TensorType, attrs: dict | None = None,
                arg_dtypes: Sequence[str] | None = None) -> np.ndarray:
    value, _ = encode_op(op, args, out_ty, attrs, IEEEModel(), arg_dtypes)
    return folded_array(value)


def folded_array(value: Any) -> np.ndarray:
    (t,) = flatten(value)
    vals = [element_value(fold_sums(t.at(k)), t.dtype) for k in range(t.numel)]
    assert all(v is not None for v in vals), "an element is not determined"
    return np.array(vals, dtype=numpy_dtype(t.dtype)).reshape(t.shape)


def fold(terms: Sequence[Any], dtype: Any = f32) -> Any:
    """Reference sum, the left fold from +0.0 in `dtype` (IEEE, round to nearest): one of
    the orders `reduction.reduce_sum` allows. Its fixed special cases hold in every order:
    any NaN term or both infinities give NaN; an infinity among finite terms gives that
    infinity, or NaN when finite terms overflowed to the other one first
    (-FLT_MAX + -FLT_MAX + inf is NaN left to right), which the fold shows as it is."""
    t = np.dtype(dtype).type
    vals = [t(x) for x in terms]
    if np.issubdtype(np.dtype(dtype), np.floating) and len(vals) > 1:
        if any(np.isnan(v) for v in vals) or (INF in vals and -INF in vals):
            return t(NAN)
    acc = t(0.0)
    with np.errstate(all="ignore"):
        for x in vals:
            acc = t(acc + x)
    return acc


def mul(a: Any, b: Any, dtype: Any = f32) -> Any:
    t = np.dtype(dtype).type
    with np.errstate(all="ignore"):
        return t(t(a) * t(b))


# -- references ------------------------------------------------------------------------------

def ref_matmul(a: np.ndarray, b: np.ndarray, dtype: Any = None) -> np.ndarray:
    """numpy.matmul's shapes, each element the left fold over k of a*b in `dtype`."""
    dtype = dtype or a.dtype
    a2 = a if a.ndim > 1 else a[None, :]
    b2 = b if b.ndim > 1 else b[:, None]
    batch = np.broadcast_shapes(a2.shape[:-2], b2.shape[:-2])
    a3 = np.broadcast_to(a2, batch + a2.shape[-2:])
    b3 = np.broadcast_to(b2, batch + b2.shape[-2:])
    out = np.zeros(batch + (a2.shape[-2], b2.shape[-1]), dtype=dtype)
    for ix in np.ndindex(*out.shape):
        *bi, m, n = ix
        out[ix] = fold([mul(a3[(*bi, m, k)], b3[(*bi, k, n)], dtype)
                        for k in range(a2.shape[-1])], dtype)
    if a.ndim == 1:
        out = out[..., 0, :]
    if b.ndim == 1:
        out = out[..., 0]
    return out


# -- matmul ----------------------------------------------------------------------------------

MATMUL_SHAPES = [((2, 3), (3, 4)), ((3,), (3,)), ((3,), (3, 2)), ((2, 3), (3,)),
                 ((2, 1, 2, 3), (3, 3, 2)), ((1, 2), (2, 2, 1)), ((2, 1), (1, 3)),
                 ((3,), (2, 3, 2)), ((2, 2, 3), (3,))]


def matmul_ty(sa, sb, dtype="float32", out_dtype=None) -> tuple[TensorType, dict]:
    from tvm.relax import op as O
    return tvm_call(lambda a, b: O.matmul(a, b, out_dtype=out_dtype), (sa, dtype), (sb, dtype))


@pytest.mark.parametrize("sa,sb", MATMUL_SHAPES)
def test_matmul_random_folded(sa, sb):
    ty, attrs = matmul_ty(sa, sb)
    a, b = rand(sa, 1), rand(sb, 2)
    assert ty.shape == np.matmul(a, b).shape
    got = eval_folded("relax.matmul", [a, b], ty, attrs)
    assert arrays_match(got, ref_matmul(a, b))


@pytest.mark.parametrize("seed", range(3))
def test_matmul_specials_folded(seed):
    sa, sb = (3, 4), (4, 2)
    ty, attrs = matmul_ty(sa, sb)
    a, b = special(sa, seed), special(sb, seed + 10)
    got = eval_folded("relax.matmul", [a, b], ty, attrs)
    assert arrays_match(got, ref_matmul(a, b))


def test_matmul_fixed_results_exact():
    """NaN in a row, 0*inf and +inf with -inf fix an element to NaN in every summation order;
    an inf among finite terms gives inf, or NaN if finite terms overflowed first, so there
    only "inf or NaN" is fixed (the order is unspecified)."""
    a = np.array([[NAN, 1.0], [INF, 1.0], [0.0, 1.0], [-FMAX, 2.0]], f32)
    b = np.array([[1.0, -INF], [INF, 1.0]], f32)
    ty, attrs = matmul_ty(a.shape, b.shape)
    want = np.array([[NAN, NAN], [INF, -INF], [INF, NAN], [INF, INF]], f32)
    assert arrays_match(ref_matmul(a, b), want)
    got = eval_op("relax.matmul", [a, b], ty, attrs)[0]
    nan_fixed = [(0, 0), (0, 1), (2, 1)]
    for i, j in nan_fixed:
        assert got[i * 2 + j] is not None and np.isnan(got[i * 2 + j])
    for model in (None, abstract()):
        assert agrees("relax.matmul", [a, b], ty, [want], attrs, model=model, exact=False)
        also_nan = want.copy()
        also_nan[1, 0] = NAN            # inf + finite: NaN is possible in some order ...
        assert agrees("relax.matmul", [a, b], ty, [also_nan], attrs, model=model, exact=False)
        bad = want.copy()
        bad[1, 1] = INF                 # ... but never the opposite infinity
        assert not agrees("relax.matmul", [a, b], ty, [bad], attrs, model=model, exact=False)
        bad = want.copy()
        bad[0, 0] = 1.0                 # and a NaN row is always NaN
        assert not agrees("relax.matmul", [a, b], ty, [bad], attrs, model=model, exact=False)


def test_matmul_k1_exact():
    """K = 1: the sum is +0.0 + a*b (numpy gives +0.0 for -1 @ 0, as measured)."""
    a = np.array([[-1.0], [FMAX], [DENORM], [-0.0], [NAN]], f32)
    b = np.array([[0.0, 2.0, -0.0, 0.5]], f32)
    ty, attrs = matmul_ty(a.shape, b.shape)
    with np.errstate(all="ignore"):
        want = np.matmul(a, b)
    assert want[0, 0] == 0 and math.copysign(1, want[0, 0]) == 1
    assert arrays_match(eval_op("relax.matmul", [a, b], ty, attrs)[0], want)
    assert agrees("relax.matmul", [a, b], ty, [want], attrs, exact=True)
    bad = want.copy()
    bad[0, 0] = -0.0          # the -0.0 product plus numpy's +0.0 start is +0.0
    assert not agrees("relax.matmul", [a, b], ty, [bad], attrs, exact=False)
    # the abstract model fixes the products of special values (finite products such as
    # -1 * 2 are uninterpreted there)
    a, b = np.array([[-1.0], [-0.0], [NAN], [INF]], f32), np.array([[0.0, -0.0, INF]], f32)
    ty, attrs = matmul_ty(a.shape, b.shape)
    with np.errstate(all="ignore"):
        want = np.matmul(a, b)
    model = abstract()
    assert agrees("relax.matmul", [a, b], ty, [want], attrs, model=model, exact=True)
    bad = want.copy()
    bad[0, 0] = -0.0
    assert not agrees("relax.matmul", [a, b], ty, [bad], attrs, model=abstract(), exact=False)


@pytest.mark.parametrize("sa,sb", [((2, 3), (3, 2)), ((3,), (3,)), ((1, 2, 2), (3, 2, 1))])
@pytest.mark.parametrize("model", ["ieee", "abstract"])
def test_matmul_admits_numpy(sa, sb, model):
    """numpy's float64 result rounded to float32 is one value the unordered sum may take."""
    ty, attrs = matmul_ty(sa, sb)
    a, b = rand(sa, 3), rand(sb, 4)
    want = np.matmul(a.astype(np.float64), b.astype(np.float64)).astype(f32)
    m = abstract() if model == "abstract" else None
    assert agrees("relax.matmul", [a, b], ty, [want], attrs, model=m, exact=False)
    a_nan = a.copy()
    a_nan.reshape(-1)[1] = NAN       # a NaN term forces NaN: the finite result is rejected
    assert not agrees("relax.matmul", [a_nan, b], ty, [want], attrs, model=m, exact=False)


def test_matmul_out_dtype_float16_to_float32():
    a, b = rand((2, 3), 5, f16), rand((3, 2), 6, f16)
    ty, attrs = matmul_ty(a.shape, b.shape, "float16", "float32")
    assert ty.dtype == "float32" and attrs["out_dtype"] == "float32"
    got = eval_folded("relax.matmul", [a, b], ty, attrs, ["float16", "float16"])
    # operands are cast to float32 first, then multiplied and summed in float32
    assert arrays_match(got, ref_matmul(a.astype(f32), b.astype(f32), f32))
    wrong = ref_matmul(a, b, f16).astype(f32)     # computing in float16 gives other values
    assert not arrays_match(got, wrong)


@pytest.mark.parametrize("out_dtype", ["int32", None])
def test_matmul_int8_exact(out_dtype):
    a = np.array([[100, -128, 7], [1, 2, 3]], np.int8)
    b = np.array([[127, 1], [-128, 2], [5, -3]], np.int8)
    ty, attrs = matmul_ty(a.shape, b.shape, "int8", out_dtype)
    odt = np.dtype(out_dtype or "int8")
    want = (a.astype(np.int64) @ b.astype(np.int64)).astype(odt)   # wrapping (two's complement)
    got = eval_op("relax.matmul", [a, b], ty, attrs, ["int8", "int8"])[0]
    assert got.dtype == odt and np.array_equal(got, want)
    for model in (None, abstract()):
        assert agrees("relax.matmul", [a, b], ty, [want], attrs, model=model, exact=True,
                      arg_dtypes=["int8", "int8"])
    bad = want.copy()
    bad[0, 0] += 1
    assert not agrees("relax.matmul", [a, b], ty, [bad], attrs, exact=False, arg_dtypes=["int8", "int8"])


def test_matmul_rejects_bad_shapes():
    ty = TensorType((2, 2), "float32")
    with pytest.raises(Unsupported):
        eval_op("relax.matmul", [rand((2, 3)), rand((2, 2))], ty, {})
    with pytest.raises(Unsupported):   # a result type that is not numpy's
        eval_op("relax.matmul", [rand((2, 3)), rand((3, 2))], TensorType((2, 3), "float32"), {})


def test_linear_is_decomposed_by_tvm():
    """relax.op.linear is no operator in TVM 0.27: the Python API emits
    permute_dims + matmul + add, which their encoders cover."""
    from tvm import relax
    from tvm.relax import op as O
    x = relax.Var("x", relax.TensorType((2, 3), "float32"))
    w = relax.Var("w", relax.TensorType((4, 3), "float32"))
    b = relax.Var("b", relax.TensorType((4,), "float32"))
    e = O.linear(x, w, b)
    assert e.op.name == "relax.add"
    assert e.args[0].op.name == "relax.matmul"
    assert e.args[0].args[1].op.name == "relax.permute_dims"
    # x @ W^T + b with the matmul part through the matmul encoder
    xv, wv = rand((2, 3), 7), rand((4, 3), 8)
    ty, attrs = matmul_ty((2, 3), (3, 4))
    got = eval_folded("relax.matmul", [xv, np.ascontiguousarray(wv.T)], ty, attrs)
    assert arrays_match(got, ref_matmul(xv, wv.T))


# -- outer -----------------------------------------------------------------------------------

def test_outer_exact_specials():
    from tvm.relax import op as O
    a = np.array([0.0, -0.0, INF, NAN, -1.0, FMAX, DENORM], f32)
    b = np.array([0.0, -INF, 2.0, -0.5, DENORM], f32)
    ty, attrs = tvm_call(lambda x, y: O.outer(x, y), (a.shape, "float32"), (b.shape, "float32"))
    with np.errstate(all="ignore"):
        want = np.outer(a, b)
    assert arrays_match(eval_op("relax.outer", [a, b], ty, attrs)[0], want)
    fixed_a, fixed_b = a[:4], b[:2]             # every product of these is fixed
    ty2 = TensorType((4, 2), "float32")
    with np.errstate(all="ignore"):
        want2 = np.outer(fixed_a, fixed_b)
    for model in (None, abstract()):
        assert agrees("relax.outer", [fixed_a, fixed_b], ty2, [want2], {}, model=model, exact=True)
        bad = want2.copy()
        bad[0, 0] = -0.0                         # 0 * 0 is +0.0
        assert not agrees("relax.outer", [fixed_a, fixed_b], ty2, [bad], {}, model=model, exact=False)


def test_outer_random():
    a, b = rand((3,), 1), rand((2,), 2)
    ty = TensorType((3, 2), "float32")
    want = np.outer(a, b)
    assert arrays_match(eval_op("relax.outer", [a, b], ty, {})[0], want)
    assert agrees("relax.outer", [a, b], ty, [want], {}, model=abstract(), exact=False)


def test_outer_mixed_dtypes_unsupported():
    with pytest.raises(Unsupported):
        eval_op("relax.outer", [rand((2,), 0, f16), rand((3,))], TensorType((2, 3), "float16"), {},
                ["float16", "float32"])


# -- einsum ----------------------------------------------------------------------------------

def encode_einsum(operands: Sequence[np.ndarray], subscripts: str, model=None):
    """Encode relax.einsum on a tuple of constant operands (evaluate.encode_op has no tuple
    arguments); the result type comes from TVM."""
    from tvm.relax import op as O
    ty, attrs = tvm_call(lambda *ps: O.einsum(list(ps), subscripts),
                         *[(o.shape, "float32") for o in operands])
    model = model or IEEEModel()
    ctx = EncodeContext(model)
    model.on_ub = ctx.add_ub
    vals = tuple(arg_value(o, "float32", ctx) for o in operands)
    call = P.OpCall("relax.einsum", (P.VarRef("ops"),), attrs, ty)
    return registry.lookup("relax.einsum")(ctx, call, [vals]), ctx, model


@pytest.mark.parametrize("subscripts,shapes", [
    ("ij,jk->ik", [(2, 3), (3, 2)]), ("ij,jk", [(2, 3), (3, 2)]), ("bij,bjk->bik", [(2, 2, 3), (2, 3, 2)]),
    ("ii->i", [(3, 3)]), ("ij->", [(2, 3)]), ("i,i->", [(4,), (4,)]), ("ij,j,jk->ik", [(2, 2), (2,), (2, 3)]),
])
def test_einsum_folded(subscripts, shapes):
    ops_ = [special(s, k) if k == 0 else rand(s, k) for k, s in enumerate(shapes)]
    value, _, _ = encode_einsum(ops_, subscripts)
    got = folded_array(value)
    # reference: numpy's einsum structure with products left to right, sums as left folds
    ins, out = (subscripts.split("->") + [None])[:2]
    ins = ins.split(",")
    if out is None:
        letters = "".join(ins)
        out = "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
    size = {c: d for sub, o in zip(ins, ops_) for c, d in zip(sub, o.shape)}
    red = sorted({c for c in "".join(ins) if c not in out})
    want = np.zeros([size[c] for c in out], f32)
    for oix in np.ndindex(*want.shape):
        env = dict(zip(out, oix))
        terms = []
        for rix in np.ndindex(*[size[c] for c in red]):
            e = {**env, **dict(zip(red, rix))}
            p = None
            for sub, o in zip(ins, ops_):
                v = o[tuple(e[c] for c in sub)]
                p = v if p is None else mul(p, v)
            terms.append(p)
        want[oix] = fold(terms) if red else terms[0]   # no contraction: no sum (numpy)
    assert got.shape == np.einsum(subscripts, *ops_).shape
    assert arrays_match(got, want)


@pytest.mark.parametrize("subscripts,shapes", [("ij->ji", [(2, 3)]), ("i,j->ij", [(3,), (2,)])])
def test_einsum_without_contraction_is_exact(subscripts, shapes):
    # IEEE special values only: their products are fixed in the abstract model too
    ops_ = [special(s, k + 3, [0.0, -0.0, INF, -INF, NAN]) for k, s in enumerate(shapes)]
    with np.errstate(all="ignore"):
        want = np.einsum(subscripts, *ops_)
    for model in (IEEEModel(), abstract()):
        value, ctx, m = encode_einsum(ops_, subscripts, model)
        (t,) = flatten(value)
        dom = m.domain("float32")
        eqs = [dom.same(t.at(k), dom.const(float(w))) for k, w in enumerate(want.reshape(-1))]
        s = z3.Solver()
        s.add(*m.preconditions(), z3.Not(z3.And(*eqs)))
        assert s.check() == z3.unsat
        w0 = float(want.reshape(-1)[0])
        wrong = dom.same(t.at(0), dom.const(1.0 if math.isnan(w0) else NAN))
        s = z3.Solver()        # a wrong value is rejected (preconditions after the constant)
        s.add(*m.preconditions(), wrong)
        assert s.check() == z3.unsat


def test_einsum_ellipsis_unsupported():
    with pytest.raises(Unsupported):
        encode_einsum([rand((2, 3)), rand((3, 2))], "...j,jk->...k")
