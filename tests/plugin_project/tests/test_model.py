"""The project's own tests: they check its model with whatever pass pytest was given
(--tvtv-pass), through tvtv's fixture."""
from tvm.script import ir as I
from tvm.script import relax as R


@I.ir_module
class Model:
    @R.function
    def main(x: R.Tensor((2, 3), dtype="float32"), y: R.Tensor((2, 3), dtype="float32")) -> R.Tensor((2, 3), dtype="float32"):
        with R.dataflow():
            a = R.add(x, y)
            b = R.add(x, y)
            c = R.multiply(a, b)
            d = R.nn.relu(c)
            R.output(d)
        return d


def test_pass_preserves_model(tvtv_check):
    tvtv_check(Model)


def test_identity_refines(tvtv_check):
    tvtv_check.refines(Model, Model)
