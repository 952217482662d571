"""Where the specification's float sums take several values over their summation orders,
confirmation compares the target with every one (`evaluate.order_sum_values`,
`evaluate.cpu_values`, `confirm.Evaluated.order_values`): a target value outside all of them
is a difference no order explains; one among them is not blamed. (Before, such an element
had no value, and nothing was confirmed there.)"""
from __future__ import annotations

import itertools
import math

import numpy as np
from tvm import relax

from tests.conftest import mutate
from tvtv import confirm
from tvtv.encode import evaluate as E
from tvtv.ir import program as P
from tvtv.ir import tvm_bridge
from tvtv.report import Counterexample

# 1 + 1e-8 - 1: 0 or 1e-8 (or 2e-8 - ...) by order; the big terms make the spread visible
TERMS = np.array([1e8, 1.0, -1e8, 0.75, 3.0], np.float32)


def _every_left_fold(vals: np.ndarray) -> set[float]:
    out = set()
    for perm in itertools.permutations(vals.tolist()):
        acc = np.float32(0.0)
        for v in perm:
            acc = acc + np.float32(v)
        out.add(float(acc))
    return out


def test_order_values_hold_every_left_fold():
    got = E.order_sum_values(TERMS.tolist(), "float32")
    assert got is not None and len(got) > 1
    assert _every_left_fold(TERMS) <= set(got)          # trees include every left fold
    assert E.order_sum_values([0.5, 0.25], "float32") == [0.75]   # order-free: one value
    assert E.order_sum_values([1.0] * 8 + [2.0 ** -30], "float32") is None  # beyond the trees


def _sum_module(n: int = 5) -> object:
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType((n,), "float32"))
    with bb.function("main", [x]):
        bb.emit_func_output(bb.emit(relax.op.sum(x, axis=[0])))
    return bb.get()


def test_cpu_values_branch_over_a_sums_orders():
    spec, _ = E.encode_op("relax.sum", [TERMS], P.TensorType((), "float32"), {"axis": [0]})
    assert E.cpu_value(spec.at(0), "float32") is None           # the order is open
    vals = E.cpu_values(spec.at(0), "float32")
    assert vals is not None and set(vals) == set(E.order_sum_values(TERMS.tolist(), "float32"))
    assert E.cpu_values(spec.at(0), "float32", cap=1) is None   # past the cap: no answer


def _difference(src, tgt) -> confirm.Confirmation | None:
    args = {"x": TERMS}
    (ran,) = tvm_bridge.run_vm(tgt, "main", [TERMS])
    cex = Counterexample("value", "output 0 differs at index ()", dict(args), 0, ())
    return confirm._spec_vs_cpu_run(src, tgt, "main", ["x"], [[TERMS]],
                                    [("ok", [np.asarray(ran)])], (), cex), cex


def test_a_sum_outside_every_order_is_confirmed_and_one_inside_is_not():
    """LegalizeOps' loop sums in index order, one of the orders: not a difference. The same
    loop started from 100 instead of 0 gives a value no order gives: confirmed, with the
    orders' values in the message."""
    src = _sum_module()
    legal = relax.transform.LegalizeOps()(src)
    found, _ = _difference(src, legal)
    assert found is None
    broken = mutate(legal, "T.float32(0.0)", "T.float32(100.0)")
    found, cex = _difference(src, broken)
    assert found is not None and (found.confirmed, found.by) == (True, "ieee-spec-cpu"), found
    assert "summation orders give" in cex.message, cex.message
    assert not any(math.isclose(cex.target_value, v, rel_tol=0, abs_tol=0)
                   for v in E.order_sum_values(TERMS.tolist(), "float32"))


def test_the_source_ran_as_specified_when_its_value_is_one_orders():
    """`_source_ran_as_specified`: the source's VM value (index order) is one of the values
    its sum's orders give, so a VM difference on non-finite inputs may count there."""
    src = _sum_module()
    (ran,) = tvm_bridge.run_vm(relax.transform.LegalizeOps()(src), "main", [TERMS])
    diff = (0, (), float(ran), float("nan"))
    assert confirm._source_ran_as_specified(src, "main", {"x": TERMS}, diff)
    wrong = (0, (), float(ran) + 123.0, float("nan"))
    assert not confirm._source_ran_as_specified(src, "main", {"x": TERMS}, wrong)


def test_sums_numpy_rounds_twice_are_not_branched_on():
    """float16 sums (numpy adds them in float32 and rounds twice) have no trees here: the
    element stays open at once, without an evaluation (`evaluate._branching_sum`: GenCoG
    seed-0 graph 0's testing spent 18.7 of its 30 s evaluating such elements before)."""
    half = np.array([1000.0, 0.3, -1000.0, 0.7, 3.0], np.float16)   # orders differ
    spec, _ = E.encode_op("relax.sum", [half], P.TensorType((), "float16"), {"axis": [0]})
    assert E.cpu_value(spec.at(0), "float16") is None
    assert E.cpu_values(spec.at(0), "float16") is None
