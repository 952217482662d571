"""Conformance of the rearranging encoders (tvtv/encode/ops/rearrange.py): layout_transform,
reverse_sequence, meshgrid.

Every case is checked against a numpy reference four ways:
  * the IEEE model on concrete inputs holding special values (NaN, ±0, ±inf, ±FLT_MAX),
    with the result type TVM 0.27 infers;
  * the abstract model (`AbstractModel(8)`), which must *force* the numpy result;
  * the same call run on the TVM VM (LLVM) must give the numpy result too;
  * a wrong expectation (the broken twin) must be rejected.
Plus: out-of-range sequence lengths are UB, what the VM does there and for pad_value None,
the meshgrid "xy" type-inference finding, refused calls, the index-map parser, and
refinement checks of LegalizeOps through real TVM with broken TIR twins that must be refuted.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np
import pytest
import z3
from tvm import relax

import tvtv
import tvtv.encode.ops.rearrange  # noqa: F401  (registers the encoders)
from tvtv.absfp.abstract import AbstractModel
from tvtv.absfp.ieee import IEEEModel
from tvtv.absfp.interface import FloatModel
from tvtv.encode import registry
from tvtv.encode.context import EncodeContext
from tvtv.encode.evaluate import arrays_match, tensor_values
from tvtv.encode.ops.rearrange import Bin, Const, Var, parse_index_map
from tvtv.encode.tensor import Tensor
from tvtv.encode.values import flatten
from tvtv.errors import Unsupported
from tvtv.ir import program as P
from tvtv.ir import tvm_bridge
from tests.test_ops_linalg import run_vm, typed_module
from tests.test_ops_manipulate import data

O = relax.op
LT, RS, MG = "relax.layout_transform", "relax.reverse_sequence", "relax.meshgrid"


# ------------------------------------------------------------------------------------------------
# helpers
# ------------------------------------------------------------------------------------------------
def tvm_types(make: Callable, *types: tuple[Sequence[int], str]) -> tuple[P.Type, dict]:
    """TVM's inferred result type (tensor or tuple) and attributes, read as tvtv reads them."""
    from tvtv.ir.relax_reader import convert_attrs, convert_type
    params = [relax.Var(f"p{k}", relax.TensorType(list(s), d)) for k, (s, d) in enumerate(types)]
    bb = relax.BlockBuilder()
    with bb.function("main", params):
        call = bb.normalize(make(*params))
        ty, attrs = convert_type(call.ty), convert_attrs(call.attrs)
        bb.emit_func_output(params[0])
    return ty, attrs


def encode(op: str, tensors: Sequence[np.ndarray], ty: P.Type, attrs: dict, model: FloatModel,
           tuple_arg: bool = False) -> tuple[list[Tensor], EncodeContext]:
    """The op's encoding on constant tensors (a meshgrid takes them as one tuple)."""
    ctx = EncodeContext(model)
    model.on_ub = ctx.add_ub
    ts = [Tensor.from_numpy(t, str(t.dtype), ctx.dom(str(t.dtype))) for t in tensors]
    args: list[Any] = [tuple(ts)] if tuple_arg else ts
    call = P.OpCall(op, tuple(P.VarRef(f"a{k}") for k in range(len(args))), dict(attrs), ty)
    return flatten(registry.lookup(op)(ctx, call, args)), ctx


def forced(outs: list[Tensor], ctx: EncodeContext, model: FloatModel, want: list[np.ndarray]) -> bool:
    """Every output element is forced to equal `want` (defined runs, model preconditions)."""
    if [t.shape for t in outs] != [w.shape for w in want]:
        return False
    eqs = []
    for t, w in zip(outs, want):
        dom = model.domain(t.dtype)
        eqs += [dom.same(t.at(k), dom.const(v)) for k, v in enumerate(w.reshape(-1).tolist())]
    s = z3.Solver()
    s.set("timeout", 20000)
    s.add(*model.preconditions(), ctx.well_defined(), z3.Not(z3.And(*eqs)))
    return s.check() == z3.unsat


def is_ub(ctx: EncodeContext) -> bool:
    s = z3.Solver()
    s.add(z3.Not(ctx.well_defined()))
    return s.check() == z3.sat


# ------------------------------------------------------------------------------------------------
# numpy references
# ------------------------------------------------------------------------------------------------
def lt_ref(f: Callable[..., tuple], pad: Any = 0,
           shape: tuple[int, ...] | None = None) -> Callable[[np.ndarray], np.ndarray]:
    """out[f(i)] = x[i]; positions no i maps to hold `pad`; shape (default: the images'
    bounding box)."""
    def ref(x: np.ndarray) -> np.ndarray:
        images = {i: f(*i) for i in np.ndindex(*x.shape)}
        rank = len(next(iter(images.values())))
        out_shape = shape or tuple(max(o[j] for o in images.values()) + 1 for j in range(rank))
        out = np.full(out_shape, pad, dtype=x.dtype)
        for i, o in images.items():
            out[o] = x[i]
        return out
    return ref


def rs_ref(x: np.ndarray, lens: np.ndarray, seq_axis: int, batch_axis: int) -> np.ndarray:
    """ONNX ReverseSequence: the first lens[b] elements of each batch's slice reversed."""
    out = x.copy()
    s, b = seq_axis % x.ndim, batch_axis % x.ndim
    for k, n in enumerate(lens.tolist()):
        src = [slice(None)] * x.ndim
        src[b] = k
        dst = list(src)
        src[s], dst[s] = slice(n - 1, None, -1) if n > 0 else slice(0, 0), slice(0, n)
        out[tuple(dst)] = x[tuple(src)]
    return out


def mg_ref(indexing: str | None) -> Callable[..., list[np.ndarray]]:
    return lambda *xs: list(np.meshgrid(*xs, indexing=indexing or "ij"))


# ------------------------------------------------------------------------------------------------
# cases
# ------------------------------------------------------------------------------------------------
@dataclass
class Case:
    id: str
    op: str
    tensors: list[np.ndarray]
    make: Callable[..., Any]                     # relax vars -> relax call
    ref: Callable[..., Any]                      # numpy: tensors -> array or list of arrays
    wrong: Callable[..., Any]                    # a broken twin of `ref` (same shapes)
    on_vm: bool = True                           # TVM legalizes the call as typed (findings)

    @property
    def tuple_arg(self) -> bool:
        return self.op == MG

    def expected(self) -> list[np.ndarray]:
        r = self.ref(*self.tensors)
        return [np.asarray(a) for a in r] if isinstance(r, (list, tuple)) else [np.asarray(r)]

    def wrong_values(self) -> list[np.ndarray]:
        r = self.wrong(*self.tensors)
        return [np.asarray(a) for a in r] if isinstance(r, (list, tuple)) else [np.asarray(r)]

    def tvm(self) -> tuple[P.Type, dict]:
        if self.tuple_arg:
            return tvm_types(lambda *vs: self.make(*vs), *self.types())
        return tvm_types(self.make, *self.types())

    def types(self) -> list[tuple[tuple[int, ...], str]]:
        return [(t.shape, str(t.dtype)) for t in self.tensors]

    def encode(self, model: FloatModel) -> tuple[list[Tensor], EncodeContext]:
        ty, attrs = self.tvm()
        return encode(self.op, self.tensors, ty, attrs, model, self.tuple_arg)


def nchw4c(n: int, c: int, h: int, w: int) -> tuple:
    return (n, c // 4, h, w, c % 4)


def pad3(n: int, c: int) -> tuple:
    return (c // 3, n, c % 3)


def fused(a: int, b: int, c: int) -> tuple:
    return (c, a * 3 + b)


def blocks4(n: int, c: int) -> tuple:
    return (n, c // 4, c % 4)


def perm(a: int, b: int, c: int) -> tuple:
    return (c, a, b)


def lt_case(id: str, x: np.ndarray, f: Callable, pad: Any, wrong_f: Callable | None = None,
            wrong_pad: Any = None) -> Case:
    wf = wrong_f or f
    wp = pad if wrong_pad is None else wrong_pad
    return Case(id, LT, [x], lambda v: O.layout_transform(v, index_map=f, pad_value=pad),
                lt_ref(f, 0 if pad is None else pad),
                lt_ref(wf, 0 if wp is None else wp))


X1822 = data((1, 8, 2, 2))
X25 = data((2, 5), seed=1)
I234 = data((2, 3, 4), "int32", seed=2)
F16_234 = data((2, 3, 4), "float16", seed=3)
I8_35 = data((3, 5), "int8", seed=4)
B234 = data((2, 3, 4), "bool", seed=5)
X34 = data((3, 4), seed=6)
X423 = data((4, 2, 3), seed=7)
I245 = data((2, 4, 5), "int32", seed=8)

CASES = [
    # layout_transform: bijective maps (pad_value not read) ...
    lt_case("lt_nchw4c", X1822, nchw4c, None,
            lambda n, c, h, w: (n, c // 4, w, h, c % 4)),
    lt_case("lt_fused_int32", I234, fused, None, lambda a, b, c: (c, (1 - a) * 3 + b)),
    lt_case("lt_perm_f16", F16_234, perm, None, lambda a, b, c: (c, 1 - a, b)),
    Case("lt_perm_bool", LT, [B234], lambda v: O.layout_transform(v, index_map=perm),
         lt_ref(perm), lt_ref(lambda a, b, c: (c, a, 2 - b)), on_vm=False),   # TVM fails on bool
    lt_case("lt_nchw4c_pad_ignored", X1822, nchw4c, 2.5, lambda n, c, h, w: (n, 1 - c // 4, h, w, c % 4)),
    # ... and maps that pad
    lt_case("lt_pad_float", X25, pad3, 1.5, wrong_pad=2.5),
    lt_case("lt_pad_nan", X25, pad3, float("nan"), wrong_pad=0.0),
    lt_case("lt_pad_neg_zero", X25, pad3, -0.0, wrong_pad=0.0),
    lt_case("lt_pad_neg_inf", X25, pad3, float("-inf"), lambda n, c: (c // 3, 1 - n, c % 3)),
    lt_case("lt_pad_int8", I8_35, blocks4, 7, lambda n, c: (n, c // 4, 3 - c % 4)),
    # reverse_sequence
    Case("rs_2d_int64", RS, [X34, np.array([0, 4, 3], "int64")],
         lambda x, l: O.reverse_sequence(x, l, 1, 0), lambda x, l: rs_ref(x, l, 1, 0),
         lambda x, l: rs_ref(x, np.minimum(l + 1, 4), 1, 0)),
    Case("rs_2d_seq0_int32", RS, [X34, np.array([1, 3, 2, 0], "int32")],
         lambda x, l: O.reverse_sequence(x, l, 0, 1), lambda x, l: rs_ref(x, l, 0, 1),
         lambda x, l: rs_ref(x, l[::-1].copy(), 0, 1)),
    Case("rs_3d_seq0_batch2", RS, [X423, np.array([4, 2, 3], "int32")],
         lambda x, l: O.reverse_sequence(x, l, 0, 2), lambda x, l: rs_ref(x, l, 0, 2),
         lambda x, l: rs_ref(x, l, 0, 2)[:, ::-1]),
    Case("rs_3d_negative_axes_int", RS, [I245, np.array([5, 2, 0, 4], "int64")],
         lambda x, l: O.reverse_sequence(x, l, -1, -2), lambda x, l: rs_ref(x, l, -1, -2),
         lambda x, l: rs_ref(x, np.array([4, 2, 0, 5], "int64"), -1, -2)),
    Case("rs_bool", RS, [B234, np.array([2, 1], "int64")],
         lambda x, l: O.reverse_sequence(x, l, 1, 0), lambda x, l: rs_ref(x, l, 1, 0),
         lambda x, l: rs_ref(x, np.array([3, 1], "int64"), 1, 0)),
    # meshgrid (a tuple of tensors in, a tuple out)
    Case("mg_ij", MG, [data((2,), seed=10), data((3,), seed=11)],
         lambda *v: O.meshgrid(list(v), "ij"), mg_ref("ij"),
         lambda a, b: [g[::-1] for g in np.meshgrid(a, b, indexing="ij")]),
    Case("mg_default_is_ij", MG, [data((3,), seed=12), data((2,), seed=13)],
         lambda *v: O.meshgrid(list(v), None), mg_ref(None),
         lambda a, b: [g[:, ::-1] for g in np.meshgrid(a, b, indexing="ij")]),
    Case("mg_xy_square", MG, [data((3,), seed=14), data((3,), seed=15)],
         lambda *v: O.meshgrid(list(v), "xy"), mg_ref("xy"), mg_ref("ij")),
    Case("mg_ij_three_int", MG, [data((2,), "int32", 16), data((3,), "int32", 17), data((4,), "int32", 18)],
         lambda *v: O.meshgrid(list(v), "ij"), mg_ref("ij"),
         lambda a, b, c: np.meshgrid(a, b[::-1], c, indexing="ij")),
    Case("mg_xy_single", MG, [data((5,), seed=19)],    # LegalizeOps drops the 1-tuple
         lambda *v: O.meshgrid(list(v), "xy"), mg_ref("xy"), lambda a: [a[::-1]], on_vm=False),
    Case("mg_xy_square_three_f16", MG, [data((2,), "float16", 20), data((2,), "float16", 21),
                                        data((3,), "float16", 22)],
         lambda *v: O.meshgrid(list(v), "xy"), mg_ref("xy"), mg_ref("ij")),
]
IDS = [c.id for c in CASES]
assert len(set(IDS)) == len(IDS)


# ------------------------------------------------------------------------------------------------
# conformance
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_ieee_matches_numpy(case: Case) -> None:
    ty, _ = case.tvm()
    want = case.expected()
    tys = list(ty.fields) if isinstance(ty, P.TupleType) else [ty]
    assert [(t.shape, t.dtype) for t in tys] == [(w.shape, str(w.dtype)) for w in want]  # TVM == numpy
    outs, ctx = case.encode(IEEEModel())
    assert not is_ub(ctx)
    for t, w in zip(outs, want):
        got = np.array(tensor_values(t), dtype=w.dtype).reshape(t.shape)
        assert arrays_match(got, w), f"{case.id}: got {got}, numpy {w}"
    model = IEEEModel()
    outs, ctx = case.encode(model)
    assert forced(outs, ctx, model, want)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_abstract_model_forces_numpy(case: Case) -> None:
    model = AbstractModel(8)
    outs, ctx = case.encode(model)
    assert forced(outs, ctx, model, case.expected())


@pytest.mark.parametrize("case", [c for c in CASES if c.on_vm], ids=[c.id for c in CASES if c.on_vm])
def test_tvm_vm_matches_numpy(case: Case) -> None:
    got = run_vm(typed_module(case.make, *case.types()), *case.tensors)
    got = [g.numpy() for g in got] if case.tuple_arg else [got.numpy()]
    want = case.expected()
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert arrays_match(g, w), f"{case.id}: VM {g}, numpy {w}"


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_wrong_expectation_is_rejected(case: Case) -> None:
    wrong, want = case.wrong_values(), case.expected()
    assert [w.shape for w in wrong] == [w.shape for w in want]
    assert not all(arrays_match(a, b) for a, b in zip(wrong, want))
    for model in (IEEEModel(), AbstractModel(8)):
        outs, ctx = case.encode(model)
        assert not forced(outs, ctx, model, wrong)


# ------------------------------------------------------------------------------------------------
# layout_transform: parser, pad_value None, refused maps
# ------------------------------------------------------------------------------------------------
def test_parse_index_map_forms() -> None:
    n, exprs = parse_index_map("T.index_map(lambda n, c: (c // T.int64(4), n, c % T.int64(4)))")
    assert n == 2 and exprs == [Bin("//", Var(1), Const(4)), Var(0), Bin("%", Var(1), Const(4))]
    n, exprs = parse_index_map("T.index_map(lambda a, b: (T.floordiv(b, 2), T.floormod(b, 2) + -a * 1, a))")
    assert n == 2 and exprs[0] == Bin("//", Var(1), Const(2)) and exprs[2] == Var(0)
    assert exprs[1] == Bin("+", Bin("%", Var(1), Const(2)), Bin("*", Bin("-", Const(0), Var(0)), Const(1)))
    assert parse_index_map("T.index_map(lambda i: i * T.int32(2) + 3 * 1)")[1] == [
        Bin("+", Bin("*", Var(0), Const(2)), Const(3))]


@pytest.mark.parametrize("text,match", [
    ("T.index_map(lambda a, b: (b // a, a))", "divisor"),
    ("T.index_map(lambda a, b: (b % 0, a))", "divisor"),
    ("T.index_map(lambda a, b: (b, a), axis_separators=[1])", "axis_separators"),
    ("T.index_map(lambda a, b: (T.max(a, b), a))", "expression"),
    ("T.index_map(lambda a, b: (c, a))", "expression"),
    ("lambda a, b: (b, a)", "T.index_map"),
    ("T.index_map(lambda a, b: (b, a)", "parse"),
])
def test_parse_index_map_refuses(text: str, match: str) -> None:
    with pytest.raises(Unsupported, match=match):
        parse_index_map(text)


def test_pad_value_none_with_padding_is_unsupported_and_vm_pads_zero() -> None:
    """The doc: "If not specified, any value can be used" at the padding. tvtv cannot express
    a per-element choice, so the call is refused; measured: TVM 0.27's VM writes 0 there."""
    make = lambda v: O.layout_transform(v, index_map=pad3)     # noqa: E731
    ty, attrs = tvm_types(make, ((2, 5), "float32"))
    assert attrs["pad_value"] is None and ty.shape == (2, 2, 3)
    with pytest.raises(Unsupported, match="pad_value None"):
        encode(LT, [X25], ty, attrs, IEEEModel())
    x = np.arange(1, 11, dtype="float32").reshape(2, 5)
    got = run_vm(typed_module(make, ((2, 5), "float32")), x).numpy()
    assert got[1, 0, 2] == 0.0 and got[1, 1, 2] == 0.0
    assert arrays_match(got, lt_ref(pad3, 0.0)(x))
    xi = np.arange(1, 11, dtype="int32").reshape(2, 5)
    assert run_vm(typed_module(make, ((2, 5), "int32")), xi).numpy()[1, 1, 2] == 0


def test_strided_map_spec_only() -> None:
    """(n * 2, c): TVM infers (4, 3) (the images span rows 0 and 2 only) and its legalization
    fails (scale must be 1); the spec puts row n at 2n and pads the other rows."""
    f = lambda n, c: (n * 2, c)     # noqa: E731
    ty, attrs = tvm_types(lambda v: O.layout_transform(v, index_map=f, pad_value=-1.0), ((2, 3), "float32"))
    assert ty.shape == (4, 3)
    x = data((2, 3), seed=30)
    (out,), ctx = encode(LT, [x], ty, attrs, IEEEModel())
    got = np.array(tensor_values(out), dtype="float32").reshape(4, 3)
    assert arrays_match(got, lt_ref(f, -1.0, (4, 3))(x))
    with pytest.raises(Exception):
        relax.transform.LegalizeOps()(typed_module(
            lambda v: O.layout_transform(v, index_map=f, pad_value=-1.0), ((2, 3), "float32")))


@pytest.mark.parametrize("text,shape,out,match", [
    ("T.index_map(lambda a, b: (a, b // 2))", (2, 4), (2, 2), "invert"),            # drops b % 2
    ("T.index_map(lambda a, b: (a * 2 + b,))", (2, 4), (8,), "invert"),              # b >= 2 overlaps
    ("T.index_map(lambda a, b: (b, a))", (2, 4), (4, 3), None),                      # pads a row
    ("T.index_map(lambda a, b: (b, a))", (2, 4), (3, 2), "outside"),                 # loses data
    ("T.index_map(lambda a: (a, a))", (2, 4), (2, 2), "variables"),
])
def test_layout_transform_refused_maps(text: str, shape: tuple, out: tuple, match: str | None) -> None:
    attrs = {"index_map": text, "pad_value": None if match else 0.5}
    x = data(shape, seed=31)
    ty = P.TensorType(out, "float32")
    if match is None:
        (t,), _ = encode(LT, [x], ty, attrs, IEEEModel())
        got = np.array(tensor_values(t), dtype="float32").reshape(out)
        want = np.full(out, 0.5, "float32")
        want[:4, :2] = x.T
        assert arrays_match(got, want)
        return
    with pytest.raises(Unsupported, match=match):
        encode(LT, [x], ty, attrs, IEEEModel())


# ------------------------------------------------------------------------------------------------
# reverse_sequence: lengths outside [0, n] are UB
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("lens,ub", [([0, 4, 1], False), ([4, 4, 4], False), ([5, 0, 1], True),
                                     ([0, -1, 2], True), ([2, 3, -2**31], True)])
@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_reverse_sequence_length_range_is_ub(lens: list, ub: bool, dtype: str) -> None:
    _, ctx = encode(RS, [X34, np.array(lens, dtype)], P.TensorType((3, 4), "float32"),
                    {"seq_axis": 1, "batch_axis": 0}, IEEEModel())
    assert is_ub(ctx) == ub


def test_reverse_sequence_symbolic_lengths_are_pinned() -> None:
    """With unknown lengths, well-definedness pins each into [0, n]; the UB condition of many
    lengths is one quantified formula and still decides."""
    for batch in (3, 300):
        ctx = EncodeContext(IEEEModel())
        x = Tensor.variable("x", (batch, 4), "float32", ctx.dom("float32"))
        lens = Tensor.variable("lens", (batch,), "int64", ctx.dom("int64"))
        call = P.OpCall(RS, (P.VarRef("x"), P.VarRef("l")), {"seq_axis": 1, "batch_axis": 0},
                        P.TensorType((batch, 4), "float32"))
        registry.lookup(RS)(ctx, call, [x, lens])
        for k, bad, ok in [(0, 5, 4), (batch - 1, -1, 0)]:
            s = z3.Solver()
            s.set("timeout", 60000)
            s.add(ctx.well_defined(), lens.at(k) == bad)
            assert s.check() == z3.unsat
            s = z3.Solver()
            s.set("timeout", 60000)
            s.add(ctx.well_defined(), lens.at(k) == ok)
            assert s.check() == z3.sat


def test_vm_reverse_sequence_out_of_range_measurements() -> None:
    """TVM 0.27 (topi.reverse_sequence clamps): a length above n reverses the whole slice, a
    negative one leaves it unchanged; both are UB in the specification."""
    x = np.arange(12, dtype="float32").reshape(3, 4)
    got = run_vm(typed_module(lambda a, l: O.reverse_sequence(a, l, 1, 0), ((3, 4), "float32"),
                              ((3,), "int64")), x, np.array([0, 5, -2], "int64")).numpy()
    assert got.tolist() == [[0, 1, 2, 3], [7, 6, 5, 4], [8, 9, 10, 11]]


# ------------------------------------------------------------------------------------------------
# meshgrid: the "xy" type-inference finding
# ------------------------------------------------------------------------------------------------
def test_meshgrid_xy_inferred_type_finding() -> None:
    """Finding: for "xy" TVM 0.27 infers the "ij" shape ((2,), (3,) -> (2, 3)), while its
    legalization computes numpy's (3, 2): the VM returns (3, 2) tensors from a function typed
    (2, 3). The encoder follows numpy and refuses the disagreeing type."""
    a, b = np.array([1, 2], "float32"), np.array([10, 20, 30], "float32")
    make = lambda *v: O.meshgrid(list(v), "xy")     # noqa: E731
    ty, attrs = tvm_types(make, ((2,), "float32"), ((3,), "float32"))
    assert [f.shape for f in ty.fields] == [(2, 3), (2, 3)]
    vm = run_vm(typed_module(make, ((2,), "float32"), ((3,), "float32")), a, b)
    want = np.meshgrid(a, b, indexing="xy")
    assert [g.numpy().shape for g in vm] == [(3, 2), (3, 2)]
    assert all(arrays_match(g.numpy(), w) for g, w in zip(vm, want))
    with pytest.raises(Unsupported, match="numpy's xy grid is \\(3, 2\\)"):
        encode(MG, [a, b], ty, attrs, IEEEModel(), tuple_arg=True)
    mod = typed_module(make, ((2,), "float32"), ((3,), "float32"))
    (r,) = tvtv.verify(mod, relax.transform.LegalizeOps()(mod), timeout=20).results
    assert r.verdict == "unknown" and "xy grid" in r.to_dict()["reason"]


def test_meshgrid_single_input_legalized_to_a_tensor_finding() -> None:
    """Finding: for one input TVM 0.27 types meshgrid as a 1-tuple (numpy returns a 1-list),
    but LegalizeOps emits a call_tir of one output and retypes `main` to return the bare
    Tensor (5,); the VM returns a Tensor. The elements are equal, but the result's type is
    not: a shape counterexample, confirmed by TVM's return types (`tvm-types`). Its twin: the
    two-input meshgrid keeps its tuple and is proved."""
    make = lambda a: O.meshgrid([a], "xy")     # noqa: E731
    mod = typed_module(make, ((5,), "float32"))
    ty, _ = tvm_types(make, ((5,), "float32"))
    assert isinstance(ty, P.TupleType) and len(ty.fields) == 1
    legal = relax.transform.LegalizeOps()(mod)
    assert isinstance(legal["main"].ret_ty, relax.TensorType)
    x = data((5,), seed=19)
    got = run_vm(mod, x)
    assert not isinstance(got, (list, tuple)) and hasattr(got, "numpy")
    assert arrays_match(got.numpy(), x)
    (r,) = tvtv.verify(mod, legal, timeout=20).results
    assert r.verdict == "counterexample" and r.counterexample.kind == "shape", r.to_dict()
    assert "source returns a tuple of (a tensor), target a tensor" in r.reason, r.reason
    assert r.confirmed is True and r.counterexample.confirmed_by == "tvm-types", r.to_dict()
    two = typed_module(lambda a, b: O.meshgrid([a, b], "ij"), ((5,), "float32"), ((2,), "float32"))
    (ok,) = tvtv.verify(two, relax.transform.LegalizeOps()(two), timeout=20).results
    assert ok.verdict == "proved", ok.to_dict()


def test_bool_layout_transform_fails_to_legalize_finding() -> None:
    """Finding: LegalizeOps of a bool layout_transform fails even for a bijective map (no
    padding): topi's transform_layout fills the padding with T.float32(0.0) and the schedule
    refuses a float32 fill for a bool buffer. The encoder gives the call its meaning."""
    mod = typed_module(lambda v: O.layout_transform(v, index_map=perm), ((2, 3, 4), "bool"))
    with pytest.raises(Exception, match="type float32"):
        relax.transform.LegalizeOps()(mod)


# ------------------------------------------------------------------------------------------------
# refused calls
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("op,tensors,ty,attrs,match", [
    (RS, [X34, np.array([1, 2, 3], "int64")], P.TensorType((3, 4), "float32"),
     {"seq_axis": 1, "batch_axis": 1}, "seq_axis == batch_axis"),
    (RS, [X34, np.array([1, 2, 3], "uint8")], P.TensorType((3, 4), "float32"),
     {"seq_axis": 1, "batch_axis": 0}, "dtype uint8"),
    (RS, [X34, np.array([1, 2], "int64")], P.TensorType((3, 4), "float32"),
     {"seq_axis": 1, "batch_axis": 0}, "2 lengths"),
    (RS, [data((4,)), np.array([1], "int64")], P.TensorType((4,), "float32"),
     {"seq_axis": 0, "batch_axis": 0}, "rank 1"),
    (RS, [X34, np.array([1, 2, 3], "int64")], P.TensorType((3, 4), "float32"),
     {"seq_axis": 2, "batch_axis": 0}, "seq_axis 2"),
    (LT, [X25], P.TensorType((2, 2, 3), "int32"),
     {"index_map": "T.index_map(lambda n, c: (c // 3, n, c % 3))", "pad_value": 1.0}, "inferred"),
    (LT, [data((2, 5), "bool", 3)], P.TensorType((2, 2, 3), "bool"),
     {"index_map": "T.index_map(lambda n, c: (c // 3, n, c % 3))", "pad_value": 1}, "padding of dtype bool"),
    (LT, [I8_35], P.TensorType((3, 2, 4), "int8"),
     {"index_map": "T.index_map(lambda n, c: (n, c // 4, c % 4))", "pad_value": 0.5}, "pad_value 0.5"),
])
def test_unsupported_calls_are_refused(op: str, tensors: list, ty: P.Type, attrs: dict, match: str) -> None:
    with pytest.raises(Unsupported, match=match):
        encode(op, tensors, ty, attrs, IEEEModel())


def test_meshgrid_refuses_mixed_or_non_vector_inputs() -> None:
    ty = P.TupleType((P.TensorType((2, 3), "float32"),) * 2)
    with pytest.raises(Unsupported, match="meshgrid of"):
        encode(MG, [data((2,)), data((3,), "int32")], ty, {"indexing": "ij"}, IEEEModel(), True)
    with pytest.raises(Unsupported, match="meshgrid of"):
        encode(MG, [data((2, 1)), data((3,))], ty, {"indexing": "ij"}, IEEEModel(), True)
    with pytest.raises(Unsupported, match="indexing 'ji'"):
        encode(MG, [data((2,)), data((3,))], ty, {"indexing": "ji"}, IEEEModel(), True)


# ------------------------------------------------------------------------------------------------
# refinement through real TVM: LegalizeOps is proved, broken TIR twins are refuted
# ------------------------------------------------------------------------------------------------
MODULES: dict[str, tuple[Callable, list[tuple[tuple[int, ...], str]]]] = {
    "lt_nchw4c": (lambda x: O.layout_transform(x, index_map=nchw4c), [((1, 8, 2, 2), "float32")]),
    "lt_fused_int32": (lambda x: O.layout_transform(x, index_map=fused), [((2, 3, 4), "int32")]),
    "lt_pad_float": (lambda x: O.layout_transform(x, index_map=pad3, pad_value=1.5), [((2, 5), "float32")]),
    "lt_pad_int8": (lambda x: O.layout_transform(x, index_map=blocks4, pad_value=7), [((3, 5), "int8")]),
    "rs_2d": (lambda x, l: O.reverse_sequence(x, l, 1, 0), [((3, 4), "float32"), ((3,), "int64")]),
    "rs_3d_int32": (lambda x, l: O.reverse_sequence(x, l, 0, 2), [((4, 2, 3), "float32"), ((3,), "int32")]),
    "mg_ij": (lambda a, b: O.meshgrid([a, b], "ij"), [((2,), "float32"), ((3,), "float32")]),
    "mg_xy_square": (lambda a, b, c: O.meshgrid([a, b, c], "xy"),
                     [((2,), "int32"), ((2,), "int32"), ((3,), "int32")]),
}


def module(name: str) -> Any:
    make, types = MODULES[name]
    return typed_module(make, *types)


@pytest.mark.parametrize("name", sorted(MODULES))
def test_legalize_is_proved(name: str) -> None:
    mod = module(name)
    (r,) = tvtv.verify(mod, relax.transform.LegalizeOps()(mod), timeout=20).results
    assert r.verdict == "proved", r.to_dict()


MUTATIONS = {
    "lt_nchw4c: block index off by one": (
        "lt_nchw4c", "te_layout_transform[v_self, v_i0 // T.int64(4),",
        "te_layout_transform[v_self, (v_i0 + T.int64(1)) % T.int64(8) // T.int64(4),"),
    "lt_nchw4c: h and w swapped": (
        "lt_nchw4c", "= p0[v_self, v_i0, v_i1, v_i2]", "= p0[v_self, v_i0, v_i2, v_i1]"),
    "lt_fused: wrong factor": (
        "lt_fused_int32", "v_self * T.int64(3) + v_i0]", "v_self * T.int64(2) + v_i0]"),
    "lt_pad_float: wrong pad value": ("lt_pad_float", "T.float32(1.5)", "T.float32(2.5)"),
    "lt_pad_float: wrong pad position": (
        "lt_pad_float", "v_axis2 == T.int64(2)", "v_axis2 == T.int64(1)"),
    "lt_pad_int8: pad condition <= turned <": (
        "lt_pad_int8", "T.int64(1) <= v_axis2", "T.int64(1) < v_axis2"),
    "rs_2d: reversed index off by one": (
        "rs_2d", "p1[v_ax0] - v_ax1 - T.int64(1)", "p1[v_ax0] - v_ax1"),
    "rs_2d: reverse bound <= turned <": ("rs_2d", "p1[v_ax0] <= v_ax1", "p1[v_ax0] < v_ax1"),
    "rs_3d: lengths read by the wrong axis": (
        "rs_3d_int32", 'T.Cast("int64", p1[v_ax2]) <= v_ax0', 'T.Cast("int64", p1[v_ax1]) <= v_ax0'),
    "mg_ij: first grid reads the column": ("mg_ij", "= p0[v_ax0]", "= p0[v_ax1 % T.int64(2)]"),
    "mg_ij: second grid reads the first input": ("mg_ij", "= p1[v_ax1]", "= p0[v_ax1 % T.int64(2)]"),
}


@pytest.mark.parametrize("name", sorted(MUTATIONS))
def test_broken_legalization_is_refuted(name: str) -> None:
    mod_name, old, new = MUTATIONS[name]
    mod = module(mod_name)
    text = relax.transform.LegalizeOps()(mod).script()
    assert old in text, f"mutation {name!r} does not apply:\n{text}"
    broken = tvm_bridge.parse_script(text.replace(old, new))
    (r,) = tvtv.verify(mod, broken, timeout=20).results
    assert r.verdict == "counterexample", r.to_dict()
