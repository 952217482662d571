"""Scalar programs in TIR (`tvtv/encode/tir/program.py`): a loop whose body allocates local
buffers (`T.alloc_local`, TVM's flat `AllocBuffer`) and runs `while` and `if` statements over
them, run once symbolically over the loop's iterations, the while loop unrolled until a solver
shows its condition false on every input.

The IR-builder TIR that LegalizeOps emits for relax.bucketize (`topi.searchsorted`, a binary
search) is checked against the specification (tvtv/encode/ops/bucketing.py, torch.bucketize):
TVM's search gives 0 for a NaN input where PyTorch gives len(boundaries), so float data is a
confirmed counterexample on NaN and proved under no-nan; int data is proved. One-token
mutations of the legalized TIR are refuted, and a search that never narrows (`lo = mid`) is
`unknown` with the loop named. A hand-written program (a sum and a first-positive scan in a
while loop) is evaluated on concrete inputs against numpy and the VM."""
from __future__ import annotations

import math

import numpy as np
import pytest
import z3
from tvm import relax
from tvm.script import ir as I
from tvm.script import relax as R
from tvm.script import tirx as T

import tvtv
from tests.test_ops_linalg import run_vm, typed_module
from tvtv.absfp.ieee import IEEEModel
from tvtv.encode.context import EncodeContext
from tvtv.encode.evaluate import to_array
from tvtv.encode.tensor import Tensor
from tvtv.encode.tir import encode_prim_func
from tvtv.encode.tir.program import WHILE_ROUNDS
from tvtv.ir import tir as TT
from tvtv.ir import tvm_bridge
from tvtv.ir.tir_reader import read_prim_func

O = relax.op
NAN = math.nan

# name -> (data dtype, x shape, boundaries, out_int32, right)
CASES = {
    "f32 left int64": ("float32", (5,), 3, False, False),
    "f32 right int32": ("float32", (5,), 3, True, True),
    "f32 2d left int32": ("float32", (2, 3), 4, True, False),
    "i32 left int64": ("int32", (5,), 3, False, False),
    "i32 right int32": ("int32", (5,), 3, True, True),
    "i32 2d right int64": ("int32", (2, 3), 4, False, True),
}


def source(name: str):
    dtype, shape, k, out_int32, right = CASES[name]
    return typed_module(lambda a, b: O.bucketize(a, b, out_int32, right), (shape, dtype), ((k,), dtype))


def legalized_text(name: str) -> str:
    return relax.transform.LegalizeOps()(source(name)).script()


def test_searchsorted_is_read_as_alloc_and_while():
    mod = relax.transform.LegalizeOps()(source("f32 left int64"))
    (gv,) = [g for g in mod.functions if g.name_hint != "main"]
    pf = read_prim_func(gv.name_hint, mod[gv])
    loop = pf.body.body
    assert isinstance(loop, TT.For)
    stmts = loop.body.stmts
    assert [type(s).__name__ for s in stmts] == ["Alloc", "Alloc", "Store", "Store", "While", "Store"]
    assert stmts[0].buffer.shape == (1,) and stmts[0].buffer.dtype == "int64"
    assert isinstance(stmts[4].body, TT.IfStmt) and isinstance(stmts[4].cond, TT.Compare)


@pytest.mark.parametrize("name", sorted(c for c in CASES if c.startswith("f32")))
def test_legalized_float_bucketize_differs_on_nan_only(name):
    src = source(name)
    tgt = relax.transform.LegalizeOps()(src)
    (r,) = tvtv.verify(src, tgt, timeout=20).results
    d = r.to_dict()
    assert r.verdict == "counterexample" and r.confirmed is True, d
    assert "nan" in str(d["inputs"]["p0"]), d
    (r,) = tvtv.verify(src, tgt, timeout=20, assume=["no-nan"]).results
    assert r.verdict == "proved", r.to_dict()


@pytest.mark.parametrize("name", sorted(c for c in CASES if c.startswith("i32")))
def test_legalized_int_bucketize_is_proved(name):
    src = source(name)
    (r,) = tvtv.verify(src, relax.transform.LegalizeOps()(src), timeout=20).results
    assert r.verdict == "proved", r.to_dict()


def test_nan_counterexample_is_the_vm_value():
    """TVM's search on the VM: bucketize(NaN) = 0; the spec says len(boundaries)."""
    src = source("f32 left int64")
    x, b = np.array([NAN, 0.5, 1.0, 2.5, 9.0], np.float32), np.array([1.0, 2.0, 3.0], np.float32)
    got = run_vm(relax.transform.LegalizeOps()(src), x, b).numpy()
    assert got.tolist() == [0, 0, 0, 2, 3]


# one-token mutations of the legalized TIR: (case, old, new, verdict)
MUTATIONS = {
    "< becomes <=": ("i32 left int64", "< p0[v]", "<= p0[v]", "counterexample"),
    "<= becomes <": ("f32 right int32", "<= p0[v]", "< p0[v]", "counterexample"),
    "initial hi n - 1": ("i32 left int64", "buffer_1[T.int64(0)] = T.int64(3)",
                         "buffer_1[T.int64(0)] = T.int64(2)", "counterexample"),
    "2d: <= becomes >=": ("i32 2d right int64", "] <= p0[v // T.int64(3), v % T.int64(3)]",
                             "] >= p0[v // T.int64(3), v % T.int64(3)]", "counterexample"),
    # lo = mid instead of mid + 1: the search stops narrowing at hi = lo + 1
    "+ 1 dropped": ("i32 left int64", " + T.int64(1)\n", "\n", "unknown"),
    "+ 1 dropped, int32 indices": ("i32 right int32", ") + 1\n", ")\n", "unknown"),
}


@pytest.mark.parametrize("mutation", sorted(MUTATIONS))
def test_broken_searchsorted_is_refuted(mutation):
    name, old, new, verdict = MUTATIONS[mutation]
    src = source(name)
    text = legalized_text(name)
    assert text.count(old) == 1, f"mutation {mutation!r} does not apply:\n{text}"
    assume = ["no-nan"] if name.startswith("f32") else None
    (ok,) = tvtv.verify(src, tvm_bridge.parse_script(text), timeout=20, assume=assume).results
    assert ok.verdict == "proved", ok.to_dict()   # the text itself parses back to a proof
    broken = tvm_bridge.parse_script(text.replace(old, new))
    (r,) = tvtv.verify(src, broken, timeout=20, assume=assume, confirm_vm=False).results
    assert r.verdict == verdict, r.to_dict()
    if verdict == "unknown":
        assert f"not shown to end within {WHILE_ROUNDS} iterations" in r.reason, r.to_dict()
        assert "while loop in PrimFunc searchsorted" in r.reason, r.to_dict()


# -- a hand-written scalar program ------------------------------------------------------------
@I.ir_module
class Scan:
    @T.prim_func(private=True, s_tir=True)
    def scan(x: T.Buffer((T.int64(4), T.int64(3)), "float32"), total: T.Buffer((T.int64(4),), "float32"),
             first: T.Buffer((T.int64(4),), "int32")):
        for v in range(T.int64(4)):
            acc = T.alloc_local((T.int64(1),), "float32")
            pos = T.alloc_local((T.int64(1),), "int32")
            i = T.alloc_local((T.int64(1),), "int64")
            acc[T.int64(0)] = T.float32(0)
            pos[T.int64(0)] = 3
            i[T.int64(0)] = T.int64(0)
            while i[T.int64(0)] < T.int64(3):
                acc[T.int64(0)] = acc[T.int64(0)] + x[v, i[T.int64(0)]]
                if pos[T.int64(0)] == 3 and x[v, i[T.int64(0)]] > T.float32(0):
                    pos[T.int64(0)] = T.Cast("int32", i[T.int64(0)])
                i[T.int64(0)] = i[T.int64(0)] + T.int64(1)
            total[v] = acc[T.int64(0)]
            first[v] = pos[T.int64(0)]

    @R.function
    def main(x: R.Tensor((4, 3), "float32")):
        cls = Scan
        y = R.call_tir(cls.scan, (x,), out_ty=[R.Tensor((4,), "float32"), R.Tensor((4,), "int32")])
        return y


def scan_ref(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    total = np.zeros(x.shape[0], np.float32)
    first = np.full(x.shape[0], 3, np.int32)
    for v in range(x.shape[0]):
        for j in range(x.shape[1]):
            with np.errstate(invalid="ignore"):
                total[v] = np.float32(total[v] + x[v, j])
            if first[v] == 3 and x[v, j] > 0:
                first[v] = j
    return total, first


SCAN_INPUTS = [
    np.array([[1.5, -2, 3], [-1, -2, -3], [0, 0, 1e8], [-0.0, 1, NAN]], np.float32),
    np.array([[1e8, 1, -1e8], [np.inf, -np.inf, 1], [2, 2, 2], [-0.0, -0.0, -0.0]], np.float32),
]


def _scan_encoded(x: np.ndarray) -> tuple[list[np.ndarray], EncodeContext]:
    (gv,) = [g for g in Scan.functions if g.name_hint == "scan"]
    pf = read_prim_func("scan", Scan[gv])
    model = IEEEModel()
    ctx = EncodeContext(model)
    model.on_ub = ctx.add_ub
    outs = encode_prim_func(ctx, pf, [Tensor.from_numpy(x, "float32", ctx.dom("float32"))], 2)
    return [to_array(t) for t in outs], ctx


@pytest.mark.parametrize("k", range(len(SCAN_INPUTS)))
def test_hand_written_program_matches_numpy_and_vm(k):
    x = SCAN_INPUTS[k]
    (total, first), ctx = _scan_encoded(x)
    want_total, want_first = scan_ref(x)
    np.testing.assert_array_equal(first, want_first)
    np.testing.assert_array_equal(total, want_total)   # NaN equals NaN here
    real = ~np.isnan(want_total)         # zero signs matter; a NaN's sign does not
    assert np.array_equal(np.signbit(total[real]), np.signbit(want_total[real]))
    s = z3.Solver()
    s.add(z3.Not(ctx.well_defined()))
    assert s.check() == z3.unsat        # in bounds: no UB
    vm = run_vm(Scan, x)
    np.testing.assert_array_equal(vm[0].numpy(), want_total)   # the reference is TVM's too
    np.testing.assert_array_equal(vm[1].numpy(), want_first)


def _scan_variant(old: str, new: str):
    text = Scan.script()
    assert text.count(old) == 1, text
    return tvm_bridge.parse_script(text.replace(old, new))


def _encode_variant(mod) -> EncodeContext:
    (gv,) = [g for g in mod.functions if g.name_hint == "scan"]
    pf = read_prim_func("scan", mod[gv])
    model = IEEEModel()
    ctx = EncodeContext(model)
    model.on_ub = ctx.add_ub
    x = Tensor.variable("x", (4, 3), "float32", ctx.dom("float32"))
    encode_prim_func(ctx, pf, [x], 2)
    return ctx


def test_out_of_bounds_in_some_iteration_is_ub():
    """Three rounds read x[v, 0..2]; a fourth round reads x[v, 3]: UB (for every v)."""
    ctx = _encode_variant(_scan_variant("while i[T.int64(0)] < T.int64(3):",
                                        "while i[T.int64(0)] < T.int64(4):"))
    s = z3.Solver()
    s.add(z3.Not(ctx.well_defined()))
    assert s.check() == z3.sat
    assert any("out of bounds" in why for _, why in ctx.ub)
    ctx = _encode_variant(Scan)
    s = z3.Solver()
    s.add(z3.Not(ctx.well_defined()))
    assert s.check() == z3.unsat


def test_store_elsewhere_than_the_iteration_is_unsupported():
    mod = _scan_variant("total[v] = acc[T.int64(0)]", "total[T.int64(0)] = acc[T.int64(0)]")
    with pytest.raises(tvtv.errors.Unsupported, match="not the loop's iteration"):
        _encode_variant(mod)


def test_endless_while_is_unsupported():
    mod = _scan_variant("i[T.int64(0)] = i[T.int64(0)] + T.int64(1)",
                        "i[T.int64(0)] = i[T.int64(0)] + T.int64(0)")
    with pytest.raises(tvtv.errors.Unsupported, match="not shown to end within"):
        _encode_variant(mod)
