"""TIR means what TVM's CPU code computes, after TVM's arithmetic simplifier.

relax.build's TIR pipeline runs `tirx.transform.StmtSimplify`, which rewrites float
expressions as if they were real numbers: `a - a` and `a * 0` become 0, `a + 0` becomes `a`,
`(a + c) - c` becomes `a`, `a == a` becomes true, also where a is NaN or infinite. tvtv reads
every stored float value after the same simplifier (`tvtv.ir.tir_reader.as_compiled`).
Checked here:

* the VM's results on special values (pinned: these are TVM's, not IEEE's), and tvtv's IEEE
  evaluation of the same PrimFunc equal to them element by element;
* the finding it exposes: FuseTIR merges `subtract(p0, p1)` called as `subtract(x, x)` into a
  PrimFunc that reads x twice, which the simplifier turns into 0, so `sigmoid(x - x)` is 0.5
  for x = inf after FuseTIR and NaN before; tvtv refutes FuseTIR there (confirmed on the VM)
  and proves it when the operands differ.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
import tvm
from tvm import relax

import tvtv
from tvtv import api, confirm
from tvtv.ir import tvm_bridge
from tests.test_ops_linalg import typed_module

O = relax.op
f32 = np.float32
INF, NAN = math.inf, math.nan

TEMPLATE = '''
@I.ir_module
class Module:
    @T.prim_func(private=True, s_tir=True)
    def f(A: T.Buffer((T.int64(6),), "float32"), C: T.Buffer((T.int64(6),), "float32"), B: T.Buffer((T.int64(6),), "float32")):
        T.func_attr({"tirx.noalias": True})
        for i in range(T.int64(6)):
            with T.sblock("b"):
                v = T.axis.spatial(T.int64(6), i)
                B[v] = EXPR

    @R.function
    def main(x: R.Tensor((6,), dtype="float32"), y: R.Tensor((6,), dtype="float32")) -> R.Tensor((6,), dtype="float32"):
        cls = Module
        gv = R.call_tir(cls.f, (x, y), out_ty=R.Tensor((6,), dtype="float32"))
        return gv
'''
X = np.array([INF, NAN, -0.0, 1.0, -INF, 3e38], f32)
Y = np.array([1.0, 2.0, 0.0, -0.0, INF, 3e38], f32)
ONE_IF = "T.Select({}, T.float32(1), T.float32(0))"

# expression -> what the CPU code computes on (X, Y) (measured on the VM with TVM 0.27)
CPU = {
    "A[v] - A[v]": [0.0] * 6,
    "A[v] * T.float32(0.0)": [0.0] * 6,
    "A[v] + T.float32(0.0)": [INF, NAN, -0.0, 1.0, -INF, 3e38],
    "(A[v] + C[v]) - C[v]": [INF, NAN, -0.0, 1.0, -INF, 3e38],
    "A[v] - (A[v] + C[v])": [-1.0, -2.0, 0.0, 0.0, -INF, -3e38],
    ONE_IF.format("A[v] == A[v]"): [1.0] * 6,
    # left as IEEE by the simplifier
    "A[v] / A[v]": [NAN, NAN, NAN, 1.0, NAN, 1.0],
    "A[v] * T.float32(1.0)": [INF, NAN, -0.0, 1.0, -INF, 3e38],
    ONE_IF.format("A[v] < A[v]"): [0.0] * 6,
}


def module(expr: str):
    return tvm_bridge.parse_script(TEMPLATE.replace("EXPR", expr))


def same(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))


def run(mod) -> np.ndarray:
    vm = relax.VirtualMachine(relax.build(mod, "llvm"), tvm.cpu())
    return vm["main"](tvm.runtime.tensor(X), tvm.runtime.tensor(Y)).numpy()


@pytest.mark.parametrize("expr", sorted(CPU))
def test_vm_computes_the_simplified_expression(expr: str) -> None:
    got = [float(v) for v in run(module(expr))]
    want = [float(f32(v)) for v in CPU[expr]]
    assert all(same(a, b) for a, b in zip(got, want)), (got, want)


@pytest.mark.parametrize("expr", sorted(CPU))
def test_ieee_encoding_equals_the_vm(expr: str) -> None:
    """tvtv's bit-exact evaluation of the PrimFunc, element by element, is the VM's."""
    mod = module(expr)
    args = {"x": X, "y": Y}
    for i, want in enumerate(CPU[expr]):
        known, got = confirm.ieee_element(mod, "main", args, 0, (i,))
        assert known and same(float(got), float(f32(want))), (expr, i, got, want)


def test_simplified_subtraction_is_proved_equal_to_zeros() -> None:
    """`A - A` in TIR is the zeros TVM computes: proved against zeros_like, and refuted
    against Relax's subtract(x, x) (NaN at inf), which is what IEEE would give."""
    tgt = tvm_bridge.parse_script(TEMPLATE.replace("EXPR", "A[v] - A[v]"))
    zeros = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType((6,), "float32"))
    y = relax.Var("y", relax.TensorType((6,), "float32"))
    with zeros.function("main", [x, y]):
        zeros.emit_func_output(zeros.emit(O.zeros_like(x)))
    (r,) = tvtv.verify(zeros.get(), tgt, timeout=20).results
    assert r.verdict == "proved", r.to_dict()
    sub = relax.BlockBuilder()
    with sub.function("main", [x, y]):
        sub.emit_func_output(sub.emit(O.subtract(x, x)))
    (r,) = tvtv.verify(sub.get(), tgt, timeout=20, confirm_vm=False).results
    assert r.verdict == "counterexample", r.to_dict()


def test_fuse_tir_of_self_subtraction_is_refuted() -> None:
    """The finding: FuseTIR turns subtract(x, x) into one PrimFunc reading x twice, which
    TVM's simplifier folds to 0: sigmoid(x - x) of inf is NaN before FuseTIR and 0.5 after.
    Refuted, with an infinite or NaN input, and confirmed by running both on the VM."""
    mod = typed_module(lambda p: O.sigmoid(O.subtract(p, p)), ((2, 3), "float32"))
    (r,) = api.check_pass("FuseTIR", mod).results
    d = r.to_dict()
    assert r.verdict == "counterexample" and r.confirmed is True, d
    assert any(s in str(d["inputs"]) for s in ("inf", "nan")), d
    # under no-nan and no-inf the two agree
    (r,) = api.check_pass("FuseTIR", mod, assume=["no-nan", "no-inf"]).results
    assert r.verdict == "proved", r.to_dict()


def test_fuse_tir_of_subtraction_of_two_tensors_is_proved() -> None:
    """Twin: with two different operands nothing is folded, and FuseTIR is proved."""
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType((2, 3), "float32"))
    y = relax.Var("y", relax.TensorType((2, 3), "float32"))
    with bb.function("main", [x, y]):
        with bb.dataflow():
            out = bb.emit_output(bb.emit(O.sigmoid(O.subtract(x, y))))
        bb.emit_func_output(out)
    (r,) = api.check_pass("FuseTIR", bb.get()).results
    assert r.verdict == "proved", r.to_dict()
