"""Passes of the demo project: one correct, one broken on purpose."""
import tvm
from tvm import relax


@relax.expr_functor.mutator
class _AddToSubtract(relax.PyExprMutator):
    """Rewrites every `R.add(a, b)` into `R.subtract(a, b)`: a broken "optimization"."""

    def __init__(self, mod):
        super().__init__(mod)
        self.mod_ = mod

    def visit_call_(self, call):
        call = super().visit_call_(call)
        if isinstance(call.op, tvm.ir.Op) and call.op.name == "relax.add":
            return relax.op.subtract(call.args[0], call.args[1])
        return call

    def transform(self):
        for gv, func in list(self.mod_.functions.items()):
            if isinstance(func, relax.Function):
                self.builder_.update_func(gv, self.visit_expr(func))
        return self.builder_.get()


@tvm.ir.transform.module_pass(opt_level=0, name="AddToSubtract")
def add_to_subtract(mod, ctx):
    return _AddToSubtract(mod).transform()


def cleanup():
    """A correct pass: CSE followed by removal of the dead bindings it leaves."""
    return tvm.transform.Sequential([relax.transform.EliminateCommonSubexpr(call_only=False),
                                     relax.transform.CanonicalizeBindings(),
                                     relax.transform.DeadCodeElimination()], name="Cleanup")
