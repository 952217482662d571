"""Hand-written modules on which each pass does something, and how to break its output.

Each case: the pass name, the module before, and a mutation (old text, new text) applied
to the printed module after the pass, which makes a broken target that must be refuted.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import tvm
from tvm import relax
from tvm.script import ir as I
from tvm.script import relax as R


@I.ir_module
class Bindings:
    @R.function
    def main(x: R.Tensor((2, 3), "float32"), y: R.Tensor((2, 3), "float32")) -> R.Tensor((2, 3), "float32"):
        with R.dataflow():
            a = R.add(x, y)
            b = a
            c = R.multiply(b, y)
            d = R.match_cast(c, R.Tensor((2, 3), "float32"))
            R.output(d)
        return d


@I.ir_module
class CommonSub:
    @R.function
    def main(x: R.Tensor((2, 3), "float32"), y: R.Tensor((2, 3), "float32")) -> R.Tensor((2, 3), "float32"):
        with R.dataflow():
            a = R.add(x, y)
            b = R.add(x, y)
            c = R.multiply(a, b)
            d = R.subtract(c, x)
            R.output(d)
        return d


@I.ir_module
class Dead:
    @R.function(private=True)
    def unused(x: R.Tensor((2, 3), "float32")) -> R.Tensor((2, 3), "float32"):
        return x

    @R.function
    def main(x: R.Tensor((2, 3), "float32"), y: R.Tensor((2, 3), "float32")) -> R.Tensor((2, 3), "float32"):
        with R.dataflow():
            a = R.add(x, y)
            dead = R.multiply(x, x)
            b = R.subtract(a, y)
            R.output(b)
        return b


@I.ir_module
class NoDataflow:
    @R.function
    def main(x: R.Tensor((2, 3), "float32"), y: R.Tensor((2, 3), "float32")) -> R.Tensor((2, 3), "float32"):
        a = R.add(x, y)
        b = R.multiply(a, y)
        c = R.nn.relu(b)
        return c


@I.ir_module
class Nested:
    @R.function
    def main(x: R.Tensor((2, 3), "float32"), y: R.Tensor((2, 3), "float32")) -> R.Tensor((2, 3), "float32"):
        @R.function
        def inner(a: R.Tensor((2, 3), "float32"), b: R.Tensor((2, 3), "float32")) -> R.Tensor((2, 3), "float32"):
            c = R.subtract(a, b)
            return c

        d = inner(x, y)
        e = R.multiply(d, x)
        return e


@I.ir_module
class Private:
    @R.function(private=True)
    def helper(a: R.Tensor((2, 3), "float32"), b: R.Tensor((2, 3), "float32")) -> R.Tensor((2, 3), "float32"):
        with R.dataflow():
            c = R.subtract(a, b)
            R.output(c)
        return c

    @R.function
    def main(x: R.Tensor((2, 3), "float32"), y: R.Tensor((2, 3), "float32")) -> R.Tensor((2, 3), "float32"):
        cls = Private
        with R.dataflow():
            d = cls.helper(x, y)
            e = R.add(d, y)
            R.output(e)
        return e


@I.ir_module
class Reshapes:
    @R.function
    def main(x: R.Tensor((2, 3, 4), "float32"), y: R.Tensor((2, 3, 4), "float32")) -> R.Tensor((2, 3, 4), "float32"):
        with R.dataflow():
            a = R.reshape(x, (6, 4))
            b = R.reshape(a, (24,))
            c = R.reshape(b, (2, 3, 4))
            d = R.subtract(c, y)
            R.output(d)
        return d


@I.ir_module
class PermConcat:
    @R.function
    def main(x: R.Tensor((2, 3), "float32"), y: R.Tensor((2, 4), "float32")) -> R.Tensor((7, 2), "float32"):
        with R.dataflow():
            a = R.permute_dims(x, [1, 0])
            b = R.permute_dims(y, [1, 0])
            c = R.concat((a, b), axis=0)
            R.output(c)
        return c


@I.ir_module
class ParallelMatmul:
    @R.function
    def main(x: R.Tensor((2, 4), "float32"), w1: R.Tensor((4, 3), "float32"), w2: R.Tensor((4, 5), "float32"),
             w3: R.Tensor((4, 2), "float32")) -> R.Tuple(R.Tensor((2, 3), "float32"), R.Tensor((2, 5), "float32"), R.Tensor((2, 2), "float32")):
        with R.dataflow():
            a = R.matmul(x, w1)
            b = R.matmul(x, w2)
            c = R.matmul(x, w3)
            t = (a, b, c)
            R.output(t)
        return t


@I.ir_module
class BatchNorm:
    @R.function
    def main(x: R.Tensor((2, 3, 2, 2), "float32"), gamma: R.Tensor((3,), "float32"), beta: R.Tensor((3,), "float32"),
             mean: R.Tensor((3,), "float32"), var: R.Tensor((3,), "float32")) -> R.Tensor((2, 3, 2, 2), "float32"):
        with R.dataflow():
            bn = R.nn.batch_norm(x, gamma, beta, mean, var, axis=1, epsilon=1e-5, training=False)
            y = bn[0]
            R.output(y)
        return y


@I.ir_module
class BatchNormTraining:
    @R.function
    def main(x: R.Tensor((2, 3, 2), "float32"), gamma: R.Tensor((3,), "float32"), beta: R.Tensor((3,), "float32"),
             mean: R.Tensor((3,), "float32"), var: R.Tensor((3,), "float32")) -> R.Tensor((2, 3, 2), "float32"):
        with R.dataflow():
            bn = R.nn.batch_norm(x, gamma, beta, mean, var, axis=1, epsilon=1e-5, training=True)
            y = bn[0]
            R.output(y)
        return y


@I.ir_module
class Dense:
    @R.function
    def main(x: R.Tensor((2, 4), "float32"), w: R.Tensor((4, 3), "float32"), b: R.Tensor((3,), "float32")) -> R.Tensor((2, 3), "float32"):
        with R.dataflow():
            m = R.matmul(x, w)
            a = R.add(m, b)
            r = R.nn.relu(a)
            s = R.multiply(r, r)
            R.output(s)
        return s


@I.ir_module
class Chain:
    @R.function
    def main(x: R.Tensor((2, 3), "float32"), y: R.Tensor((2, 3), "float32"), w: R.Tensor((3, 4), "float32")) -> R.Tensor((2, 4), "float32"):
        with R.dataflow():
            a = R.add(x, y)
            b = R.multiply(a, x)
            c = R.nn.relu(b)
            d = R.subtract(c, y)
            e = R.matmul(d, w)
            f = R.exp(e)
            R.output(f)
        return f


@I.ir_module
class Unsorted:
    @R.function
    def main(x: R.Tensor((2, 3), "float32"), y: R.Tensor((2, 3), "float32")) -> R.Tensor((2, 3), "float32"):
        with R.dataflow():
            a = R.subtract(x, y)
            b = R.add(y, y)
            c = R.multiply(b, a)
            R.output(c)
        return c



@I.ir_module
class Arith:
    """No max/min/relu: legalized, these mean exactly what the Relax ops do (no NaN finding)."""

    @R.function
    def main(x: R.Tensor((2, 3), "float32"), y: R.Tensor((2, 3), "float32")) -> R.Tuple(R.Tensor((2, 3), "float32"), R.Tensor((2,), "float32")):
        with R.dataflow():
            a = R.add(x, y)
            b = R.multiply(a, x)
            d = R.subtract(b, y)
            e = R.exp(d)
            f = R.sum(e, axis=[1])
            t = (d, f)     # d is an output too: a broken subtract shows in plain arithmetic
            R.output(t)
        return t


@I.ir_module
class TransposeMatmul:
    @R.function
    def main(x: R.Tensor((2, 3), "float32"), w: R.Tensor((4, 3), "float32")) -> R.Tensor((2, 4), "float32"):
        with R.dataflow():
            wt = R.permute_dims(w, [1, 0])
            y = R.matmul(x, wt)
            R.output(y)
        return y


@I.ir_module
class DataflowReshape:
    @R.function
    def main(x: R.Tensor((2, 3), "float32"), y: R.Tensor((3, 2), "float32")) -> R.Tensor((3, 2), "float32"):
        with R.dataflow():
            a = R.add(x, x)
            b = R.reshape(a, (3, 2))
            c = R.subtract(b, y)
            R.output(c)
        return c


def _unnormalized() -> tvm.ir.IRModule:
    """main(x, y) = add(multiply(x, x), y) as one nested expression (not A-normal form)."""
    x = relax.Var("x", relax.TensorType((2, 3), "float32"))
    y = relax.Var("y", relax.TensorType((2, 3), "float32"))
    body = relax.op.add(relax.op.multiply(x, x), relax.op.subtract(y, x))
    fn = relax.Function([x, y], body, relax.TensorType((2, 3), "float32")).with_attr("global_symbol", "main")
    return tvm.IRModule({"main": fn})


@dataclass(frozen=True)
class PassCase:
    pass_name: str
    before: object
    old: str          # text in the module after the pass ...
    new: str          # ... and what the broken twin has instead


PASS_CASES = [
    PassCase("CanonicalizeBindings", Bindings, "R.multiply(", "R.add("),
    PassCase("EliminateCommonSubexpr", CommonSub, "R.subtract(c, x)", "R.subtract(x, c)"),
    PassCase("DeadCodeElimination", Dead, "R.subtract(", "R.add("),
    PassCase("ConvertToDataflow", NoDataflow, "R.multiply(", "R.subtract("),
    PassCase("ToNonDataflow", Chain, "R.subtract(", "R.add("),
    PassCase("Normalize", _unnormalized(), "R.subtract(y, x)", "R.subtract(x, y)"),
    PassCase("TopologicalSort", Unsorted, "R.subtract(x, y)", "R.subtract(y, x)"),
    PassCase("LambdaLift", Nested, "R.subtract(a, b)", "R.subtract(b, a)"),
    PassCase("InlinePrivateFunctions", Private, "R.add(", "R.multiply("),
    PassCase("RemoveRedundantReshape", Reshapes, "R.subtract(x, y)", "R.subtract(y, x)"),
    PassCase("ReorderPermuteDimsAfterConcat", PermConcat, "R.concat((x, y)", "R.concat((y, x)"),
    PassCase("CombineParallelMatmul", ParallelMatmul, "R.concat((w1, w2, w3)", "R.concat((w2, w1, w3)"),
    PassCase("DecomposeOpsForInference", BatchNorm, "R.add(", "R.subtract("),
    # item 0 only: the moving statistics differ from the documentation (test_ops_normalization)
    PassCase("DecomposeOpsForTraining", BatchNormTraining, "R.sqrt(", "R.rsqrt("),
    PassCase("FuseOpsByPattern", Dense, "R.nn.relu(", "R.negative("),
    PassCase("FuseOps", Chain, "R.call_tir(cls.subtract, (c, y)", "R.call_tir(cls.subtract, (y, c)"),
    PassCase("RemovePurityChecking", Chain, "R.subtract(", "R.add("),
]


# Passes validated through PrimFunc bodies (the TIR encoder; `passes.TIR_VALIDATED`):
# tests/test_tir_passes.py runs the same checks as tests/test_passes.py on these.
TIR_PASS_CASES = [
    PassCase("LegalizeOps", Arith, "b[v_ax0, v_ax1] - y[v_ax0, v_ax1]", "y[v_ax0, v_ax1] - b[v_ax0, v_ax1]"),
    PassCase("AnnotateTIROpPattern", Arith, "b[v_ax0, v_ax1] - y[v_ax0, v_ax1]",
             "y[v_ax0, v_ax1] - b[v_ax0, v_ax1]"),
    PassCase("FuseTIR", Arith, "T_multiply_intermediate[v_ax0, v_ax1] - y[v_ax0, v_ax1]",
             "y[v_ax0, v_ax1] - T_multiply_intermediate[v_ax0, v_ax1]"),
    PassCase("zero", Arith, "T_multiply_intermediate[v_ax0, v_ax1] - y[v_ax0, v_ax1]",
             "y[v_ax0, v_ax1] - T_multiply_intermediate[v_ax0, v_ax1]"),
    PassCase("FuseTransposeMatmul", TransposeMatmul, "x[v_i0, v_k] * w[v_i1, v_k]",
             "x[v_i0, v_k] * x[v_i0, v_k]"),
    PassCase("RewriteDataflowReshape", DataflowReshape, "R.reshape(a, R.shape([3, 2]))",
             "R.reshape(x, R.shape([3, 2]))"),
]
