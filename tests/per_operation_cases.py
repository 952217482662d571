"""Modules for tests/test_per_operation_inner.py: a FuseOps-style group whose intermediate
can overflow (x * x), followed by an operation that hides the NaN it then makes (`==` of a
value with itself is a Boolean)."""
from tvm import IRModule, relax
from tvm.script import ir as I
from tvm.script import relax as R


def group_source(dtype: str) -> IRModule:
    """A module whose main calls a Primitive group computing x * x - x * x == itself in
    `dtype`: true unless x * x overflows (inf - inf is NaN). Built, as TVMScript does not
    take the dtype from a closure."""
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType((4,), dtype))
    with bb.function("fused", [x], attrs={"Primitive": True}, private=True):
        with bb.dataflow():
            v = bb.emit(relax.op.multiply(x, x))
            w = bb.emit(relax.op.subtract(v, v))
            e = bb.emit_output(relax.op.equal(w, w))
        bb.emit_func_output(e)
    fused = bb.get().get_global_var("fused")
    x = relax.Var("x", relax.TensorType((4,), dtype))
    with bb.function("main", [x]):
        with bb.dataflow():
            y = bb.emit_output(relax.Call(fused, [x]))
        bb.emit_func_output(y)
    return bb.get()


GroupSource = group_source("float32")
# in float16 x * x overflows already for |x| > 256 (the large input set's 1000 does,
# `confirm._large_like`)
GroupSourceHalf = group_source("float16")


@I.ir_module
class AllTrue:
    """What a simplifier makes of the group: x * x - x * x is 0 unless x * x overflows."""
    @R.function
    def main(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "bool"):
        with R.dataflow():
            y = R.equal(x, x)
            R.output(y)
        return y


@I.ir_module
class AllFalse:
    """A broken twin: false for every finite x."""
    @R.function
    def main(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "bool"):
        with R.dataflow():
            y = R.not_equal(x, x)
            R.output(y)
        return y


@I.ir_module
class NotFourHalf:
    """A broken twin of the simplification: x != 4, so false where x is 4 (a run without
    poison: the integral input set draws 4) as well as true on the overflowing runs."""
    @R.function
    def main(x: R.Tensor((4,), "float16")) -> R.Tensor((4,), "bool"):
        with R.dataflow():
            y = R.not_equal(x, R.const(4.0, "float16"))
            R.output(y)
        return y


@I.ir_module
class ClippedExpSource:
    """exp(clip(x, -10, 10)) - itself == itself: true on every finite run, since exp(10) is
    finite, while the abstract model's exp may still be inf. Its counterexamples are therefore
    never real overflows, whichever x the solver picks (ExpSource's may be: x > 88.72 is one,
    and which x Z3 returns depended on what earlier tests had put in its context)."""
    @R.function
    def main(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "bool"):
        with R.dataflow():
            c = R.clip(x, -10.0, 10.0)
            v = R.exp(c)
            w = R.subtract(v, v)
            e = R.equal(w, w)
            R.output(e)
        return e


@I.ir_module
class ExpSource:
    """exp(x) - exp(x) == itself: true unless exp(x) overflows (inf - inf is NaN). The
    abstract model's exp may be inf where the true exp is finite, so its counterexample's
    run is one that IEEE evaluation finds without poison, and nothing shows it."""
    @R.function
    def main(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "bool"):
        with R.dataflow():
            v = R.exp(x)
            w = R.subtract(v, v)
            e = R.equal(w, w)
            R.output(e)
        return e
