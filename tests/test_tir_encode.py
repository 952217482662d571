"""The TIR encoder: legalized PrimFuncs meet their Relax ops in one vocabulary, FuseTIR's
merged PrimFuncs meet the per-op ones, TIR semantics differences show as counterexamples,
and unsupported TIR is reported with what and where."""
from __future__ import annotations

import math

import pytest
from tvm import relax
from tvm.script import ir as I
from tvm.script import relax as R
from tvm.script import tirx as T

import tvtv
from tvtv.errors import Unsupported
from tvtv.ir.tir_reader import read_prim_func


def check(src, tgt, **kw):
    (r,) = tvtv.verify(src, tgt, timeout=20, **kw).results
    return r


@I.ir_module
class Ops:
    @R.function
    def main(x: R.Tensor((2, 3), "float32"), y: R.Tensor((3,), "float32"),
             w: R.Tensor((3, 4), "float32")) -> R.Tuple(R.Tensor((2, 3), "float32"), R.Tensor((2,), "float32"), R.Tensor((2, 4), "float32")):
        a = R.add(x, y)
        b = R.sigmoid(a)
        c = R.sum(b, axis=[1])
        d = R.matmul(b, w)
        return (b, c, d)


@I.ir_module
class Relu:
    @R.function
    def main(x: R.Tensor((2, 3), "float32")) -> R.Tensor((2, 3), "float32"):
        z = R.nn.relu(x)
        return z


@I.ir_module
class Chain:
    @R.function
    def main(x: R.Tensor((2, 3), "float32"), y: R.Tensor((2, 3), "float32")) -> R.Tensor((2,), "float32"):
        with R.dataflow():
            a = R.add(x, y)
            b = R.multiply(a, x)
            c = R.exp(b)
            d = R.sum(c, axis=[1])
            R.output(d)
        return d


def test_legalize_ops_proved_through_bodies():
    r = check(Ops, relax.transform.LegalizeOps()(Ops))
    assert r.verdict == "proved", r.to_dict()
    assert any("PrimFunc bodies" in lv for lv in r.levels)


def test_legalized_relu_ignores_nan():
    """A finding: Relax relu(NaN) = NaN (numpy), legalized relu = T.max(x, 0) = 0 on the VM."""
    r = check(Relu, relax.transform.LegalizeOps()(Relu))
    assert r.verdict == "counterexample", r.to_dict()
    cex = r.counterexample
    assert math.isnan(cex.inputs["x"][cex.index]) and math.isnan(cex.source_value)
    assert cex.target_value == 0.0


def test_legalized_relu_proved_without_nan():
    r = check(Relu, relax.transform.LegalizeOps()(Relu), assume=["no-nan"])
    assert r.verdict == "proved", r.to_dict()


def test_fuse_tir_proved():
    seq = [relax.transform.LegalizeOps(), relax.transform.AnnotateTIROpPattern(),
           relax.transform.FuseOps()]
    mod = Chain
    for p in seq:
        mod = p(mod)
    fused = relax.transform.FuseTIR()(mod)
    assert len([g for g in fused.functions if "fused" in g.name_hint]) == 1
    r = check(mod, fused)
    assert r.verdict == "proved", r.to_dict()
    assert any("PrimFunc bodies" in lv for lv in r.levels)


@T.prim_func(private=True, s_tir=True)
def strided(a: T.Buffer((T.int64(4),), "float32"), b: T.Buffer((T.int64(2),), "float32")):
    for i in range(T.int64(2)):
        with T.sblock("b"):
            v = T.axis.spatial(T.int64(2), i)
            b[v] = a[v * T.int64(2)] + T.reinterpret("float32", T.int32(1))


def test_unsupported_tir_names_what_and_where():
    from tvtv.absfp.abstract import AbstractModel
    from tvtv.encode.context import EncodeContext
    from tvtv.encode.tensor import Tensor
    from tvtv.encode.tir import encode_prim_func
    ctx = EncodeContext(AbstractModel(8))
    pf = read_prim_func("strided", strided)
    a = Tensor.variable("a", (4,), "float32", ctx.dom("float32"))
    with pytest.raises(Unsupported, match="reinterpret.*strided, block 'b'"):
        encode_prim_func(ctx, pf, [a], 1)


def _unary_module(op, dtype: str, nargs: int = 1):
    bb = relax.BlockBuilder()
    xs = [relax.Var(f"x{k}", relax.TensorType((2, 3), dtype)) for k in range(nargs)]
    with bb.function("main", xs):
        bb.emit_func_output(bb.emit(op(*xs)))
    return bb.get()


@pytest.mark.parametrize("op,twin,dtype,nargs", [
    # T.ceil is registered as `prim.ceil` in TVM 0.27 (not `tirx.ceil`)
    (relax.op.ceil, relax.op.floor, "float32", 1),
    # logical_xor legalizes to `a ^ b` on bool
    (relax.op.logical_xor, relax.op.logical_or, "bool", 2),
])
def test_prim_intrinsics_and_bool_bit_ops_are_read(op, twin, dtype, nargs):
    """Legalized ceil and logical_xor are proved; the legalization of another op in their
    place (floor, logical_or) is refuted, and the VM shows the difference."""
    src = _unary_module(op, dtype, nargs)
    r = check(src, relax.transform.LegalizeOps()(src))
    assert r.verdict == "proved", r.to_dict()
    r = check(src, relax.transform.LegalizeOps()(_unary_module(twin, dtype, nargs)))
    assert r.verdict == "counterexample", r.to_dict()
    assert r.confirmed is True, r.to_dict()


@pytest.mark.parametrize("dtype", ["int32", "int64", "int8"])
def test_take_wrap_position_is_python_mod(dtype):
    """`wrapped_position` (take's "wrap" mode, shared by the Relax and TIR encoders) is
    Python's `v % n` on the dtype's extremes, or None where the dtype cannot hold it."""
    import numpy as np
    import z3
    from tvtv.encode.ops.manipulate import wrapped_position
    info = np.iinfo(dtype)
    bits = info.bits
    values = [int(info.min), int(info.min) + 1, -7, -3, -1, 0, 1, 2, 5, int(info.max)]
    largest = min(1 << (bits - 2), (1 << 31) - 1)   # r + n fits the dtype, n an index
    for n in (1, 2, 3, 5, largest):
        for v in values:
            term = wrapped_position(z3.BitVecVal(v % (1 << bits), bits), dtype, n)
            assert term is not None and z3.simplify(term).as_long() == v % n, (v, n)
    assert wrapped_position(z3.BitVec("v", bits), dtype, largest + 1) is None


@pytest.mark.parametrize("dtype,n", [("int64", 5), ("int32", 3), ("int32", 1)])
def test_legalized_take_wrap_is_proved(dtype, n):
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType((2, n), "float32"))
    i = relax.Var("i", relax.TensorType((2, 3), dtype))
    with bb.function("main", [x, i]):
        bb.emit_func_output(bb.emit(relax.op.take(x, i, axis=1, mode="wrap")))
    src = bb.get()
    r = check(src, relax.transform.LegalizeOps()(src))
    assert r.verdict == "proved", r.to_dict()


def _pad_module(mode: str):
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType((2, 3), "float32"))
    with bb.function("main", [x]):
        bb.emit_func_output(bb.emit(relax.op.nn.pad(x, [1, 1, 2, 2], mode, 0.0)))
    return bb.get()


@pytest.mark.parametrize("mode,twin", [("replicate", "reflect"), ("reflect", "circular"),
                                       ("circular", "replicate")])
def test_legalized_pad_modes_are_proved_and_another_mode_is_refuted(mode, twin):
    src = _pad_module(mode)
    assert check(src, relax.transform.LegalizeOps()(src)).verdict == "proved"
    r = check(src, relax.transform.LegalizeOps()(_pad_module(twin)))
    assert r.verdict == "counterexample" and r.confirmed is True, r.to_dict()


def test_pad_mode_edge_is_unsupported_with_the_modes_named():
    """TVM 0.27 accepts Relay's "edge" and legalizes it as "constant"; Relax documents no
    such mode, so there is no meaning to check it against."""
    src = _pad_module("edge")
    r = check(src, relax.transform.LegalizeOps()(src))
    assert r.verdict == "unknown" and "pad_mode 'edge'" in str(r.to_dict()), r.to_dict()
    assert "replicate" in str(r.to_dict())
