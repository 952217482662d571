"""Modules for tests/test_per_operation_inner.py: a FuseOps-style group whose intermediate
can overflow (x * x), followed by an operation that hides the NaN it then makes (`==` of a
value with itself is a Boolean)."""
from tvm.script import ir as I
from tvm.script import relax as R


@I.ir_module
class GroupSource:
    @R.function(private=True)
    def fused(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "bool"):
        R.func_attr({"Primitive": True})
        with R.dataflow():
            v = R.multiply(x, x)
            w = R.subtract(v, v)
            e = R.equal(w, w)
            R.output(e)
        return e

    @R.function
    def main(x: R.Tensor((4,), "float32")) -> R.Tensor((4,), "bool"):
        cls = GroupSource
        with R.dataflow():
            y = cls.fused(x)
            R.output(y)
        return y


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
class GroupSourceHalf:
    """GroupSource in float16, where x * x overflows already for |x| > 256 (the large
    input set's 1000 does, `confirm._large_like`)."""
    @R.function(private=True)
    def fused(x: R.Tensor((4,), "float16")) -> R.Tensor((4,), "bool"):
        R.func_attr({"Primitive": True})
        with R.dataflow():
            v = R.multiply(x, x)
            w = R.subtract(v, v)
            e = R.equal(w, w)
            R.output(e)
        return e

    @R.function
    def main(x: R.Tensor((4,), "float16")) -> R.Tensor((4,), "bool"):
        cls = GroupSourceHalf
        with R.dataflow():
            y = cls.fused(x)
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
