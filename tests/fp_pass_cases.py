"""Hand-written cases for the passes whose correctness depends on the float model.

Each case: the pass (as registered in `tvtv.passes`), the module it runs on (prerequisites
such as BindParams already applied), a mutation of the pass's output that makes a broken
twin, and the verdict expected in each float model (abstract, ieee, real) for the pass's
own output. `tests/test_passes_fp.py` checks them; `docs/gen_float_models.py` tabulates them.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
from tvm import relax
from tvm.script import ir as I
from tvm.script import relax as R

PROVED, CEX = "proved", "counterexample"
FINITE = ("no-nan", "no-inf")


@I.ir_module
class FoldChain:
    """Constant subexpressions, one of them not exact in float32 (0.1 * 3)."""

    @R.function
    def main(x: R.Tensor((2, 3), "float32")) -> R.Tensor((2, 3), "float32"):
        with R.dataflow():
            c = R.multiply(R.const(np.array([[0.1, 0.5, 2.0]], "float32")),
                           R.const(np.array([[3.0, 4.0, 1.5]], "float32")))
            d = R.add(c, R.const(np.array([[1.0, -2.0, 0.25]], "float32")))
            e = R.add(x, d)
            R.output(e)
        return e


@I.ir_module
class FoldExact:
    """Constant subexpressions that are exact in float32 (and so in the reals)."""

    @R.function
    def main(x: R.Tensor((2, 3), "float32")) -> R.Tensor((2, 3), "float32"):
        with R.dataflow():
            c = R.multiply(R.const(np.array([[0.5, 3.0, 2.0]], "float32")),
                           R.const(np.array([[4.0, 4.0, 1.5]], "float32")))
            d = R.add(c, R.const(np.array([[1.0, -2.0, 0.25]], "float32")))
            e = R.multiply(x, d)
            R.output(e)
        return e


@I.ir_module
class MatmulRelu:
    @R.function
    def main(x: R.Tensor((2, 4), "float32"), w: R.Tensor((4, 3), "float32")) -> R.Tensor((2, 3), "float32"):
        with R.dataflow():
            y = R.matmul(x, w)
            z = R.nn.relu(y)
            R.output(z)
        return z


@I.ir_module
class Conv:
    @R.function
    def main(x: R.Tensor((1, 2, 3, 3), "float32"), w: R.Tensor((2, 2, 2, 2), "float32")) -> R.Tensor((1, 2, 2, 2), "float32"):
        with R.dataflow():
            y = R.nn.conv2d(x, w)
            z = R.nn.relu(y)
            R.output(z)
        return z


@I.ir_module
class MatmulChain:
    """x @ (a @ b) with a low-rank a @ b: AdjustMatmulOrder computes (x @ a) @ b."""

    @R.function
    def main(x: R.Tensor((1, 8), "float32"), a: R.Tensor((8, 2), "float32"), b: R.Tensor((2, 8), "float32")) -> R.Tensor((1, 8), "float32"):
        with R.dataflow():
            ab = R.matmul(a, b)
            y = R.matmul(x, ab)
            R.output(y)
        return y


@I.ir_module
class MatmulOfSum:
    @R.function
    def main(x: R.Tensor((2, 3), "float32"), a: R.Tensor((3, 2), "float32"), b: R.Tensor((3, 2), "float32")) -> R.Tensor((2, 2), "float32"):
        with R.dataflow():
            s = R.add(a, b)
            y = R.matmul(x, s)
            R.output(y)
        return y


@I.ir_module
class TakeMatmul:
    @R.function
    def main(x: R.Tensor((2, 3), "float32"), w: R.Tensor((3, 5), "float32"), idx: R.Tensor((2,), "int64")) -> R.Tensor((2, 2), "float32"):
        with R.dataflow():
            wt = R.take(w, idx, axis=1)
            y = R.matmul(x, wt)
            R.output(y)
        return y


@I.ir_module
class ParallelMatmulF16:
    """float16 matmuls accumulating in float32 (`out_dtype`)."""

    @R.function
    def main(x: R.Tensor((2, 4), "float16"), w1: R.Tensor((4, 3), "float16"), w2: R.Tensor((4, 5), "float16")) -> R.Tuple(R.Tensor((2, 3), "float32"), R.Tensor((2, 5), "float32")):
        with R.dataflow():
            a = R.matmul(x, w1, out_dtype="float32")
            b = R.matmul(x, w2, out_dtype="float32")
            t = (a, b)
            R.output(t)
        return t


def batch_norm_module(center: bool = True, scale: bool = True, axis: int = 1) -> Any:
    """Inference batch_norm with the given settings (NCHW input, or NHWC for axis=3)."""
    shape = (2, 3, 2, 2) if axis == 1 else (2, 2, 2, 3)
    x = relax.Var("x", relax.TensorType(shape, "float32"))
    ps = [relax.Var(n, relax.TensorType((3,), "float32")) for n in ("gamma", "beta", "mean", "var")]
    bb = relax.BlockBuilder()
    with bb.function("main", [x, *ps]):
        with bb.dataflow():
            bn = bb.emit(relax.op.nn.batch_norm(x, *ps, axis=axis, epsilon=1e-5, center=center,
                                                scale=scale, training=False))
            out = bb.emit_output(relax.TupleGetItem(bn, 0))
        bb.emit_func_output(out)
    return bb.get()


def conv_batch_norm_bound(training: bool = False) -> Any:
    """conv2d -> batch_norm with weights and statistics bound as constants (BindParams)."""
    x = relax.Var("x", relax.TensorType((1, 2, 3, 3), "float32"))
    w = relax.Var("w", relax.TensorType((2, 2, 2, 2), "float32"))
    ps = [relax.Var(n, relax.TensorType((2,), "float32")) for n in ("gamma", "beta", "mean", "var")]
    bb = relax.BlockBuilder()
    with bb.function("main", [x, w, *ps]):
        with bb.dataflow():
            c = bb.emit(relax.op.nn.conv2d(x, w))
            bn = bb.emit(relax.op.nn.batch_norm(c, *ps, axis=1, epsilon=1e-5, training=training))
            out = bb.emit_output(relax.TupleGetItem(bn, 0))
        bb.emit_func_output(out)
    rng = np.random.default_rng(0)
    params = {"w": rng.standard_normal((2, 2, 2, 2)).astype("float32"),
              "gamma": rng.standard_normal(2).astype("float32"),
              "beta": rng.standard_normal(2).astype("float32"),
              "mean": rng.standard_normal(2).astype("float32"),
              "var": (rng.random(2) + 0.5).astype("float32")}
    return relax.transform.BindParams("main", params)(bb.get())


@dataclass(frozen=True)
class FpCase:
    pass_name: str
    label: str
    build: Callable[[], Any]             # the module the pass runs on
    old: str                             # text in the pass's output ...
    new: str                             # ... and what the broken twin has instead
    # model -> verdict on the pass output (the IEEE "unknown"s are 10 s timeouts here)
    expect: dict[str, str] = field(default_factory=dict)
    meaning: str = ""                    # what a counterexample (if any) means
    real_assume: tuple[str, ...] = ()    # assumptions of the real-model check (algebra on
                                         # matrices holds for finite values only)


CASES: list[FpCase] = [
    FpCase("FoldConstant", "inexact fold", lambda: FoldChain, "R.add(x, ", "R.subtract(x, ",
           {"abstract": PROVED, "ieee": PROVED, "real": CEX},
           "real: float32(0.1)*3 folded to float32 differs from the exact product"),
    FpCase("FoldConstant", "exact fold", lambda: FoldExact, "R.multiply(x, ", "R.add(x, ",
           {"abstract": PROVED, "ieee": PROVED, "real": PROVED}),
    FpCase("ToMixedPrecision", "matmul+relu", lambda: MatmulRelu, "R.nn.relu(", "R.negative(",
           {"abstract": CEX, "ieee": "unknown", "real": PROVED},
           "inputs not representable in float16 are rounded (or overflow to inf)"),
    FpCase("ConvertLayout", "conv2d NHWC", lambda: Conv, "axes=[0, 3, 1, 2]", "axes=[0, 3, 2, 1]",
           {"abstract": PROVED, "ieee": PROVED, "real": PROVED}),
    FpCase("AdjustMatmulOrder", "x@(a@b)", lambda: MatmulChain, "R.matmul(lv, b", "R.matmul(R.negative(lv), b",
           {"abstract": CEX, "ieee": "unknown", "real": PROVED},
           "float sums are not associative: (x@a)@b rounds differently from x@(a@b)",
           real_assume=FINITE),
    FpCase("ExpandMatmulOfSum", "x@(a+b)", lambda: MatmulOfSum, "R.add(lv, lv1)", "R.subtract(lv, lv1)",
           {"abstract": CEX, "ieee": "unknown", "real": PROVED},
           "x@a + x@b rounds differently from x@(a+b) (and inf-inf gives NaN)",
           real_assume=FINITE),
    FpCase("ReorderTakeAfterMatmul", "take after matmul", lambda: TakeMatmul, "R.take(lv, idx", "R.take(R.negative(lv), idx",
           {"abstract": PROVED, "ieee": PROVED, "real": PROVED}),
    FpCase("CombineParallelMatmul", "out_dtype float32", lambda: ParallelMatmulF16,
           "R.concat((w1, w2)", "R.concat((w2, w1)",
           {"abstract": PROVED, "ieee": PROVED, "real": PROVED}),
    FpCase("FoldBatchnormToConv2D", "after BindParams", conv_batch_norm_bound, "R.add(lv5, lv8)",
           "R.subtract(lv5, lv8)", {"abstract": CEX, "ieee": "unknown", "real": PROVED},
           "scaling the weights before the conv rounds differently from scaling its output; "
           "in the real model an identity on finite values (a nonlinear query that timed out "
           "until finite inputs were built as reals: 3.6 s)", real_assume=FINITE),
] + [
    FpCase("DecomposeOpsForInference", f"batch_norm center={c} scale={s} axis={a}",
           (lambda c=c, s=s, a=a: batch_norm_module(c, s, a)), "R.subtract(x, lv)", "R.subtract(lv, x)",
           {"abstract": PROVED, "ieee": PROVED, "real": PROVED})
    for c in (True, False) for s in (True, False) for a in (1, 3)
]
