"""With the "z3+cvc5" solver, in the IEEE model each query is asked of cvc5 briefly before Z3
(`refinement._CVC5_PROOFS`, `solvers.Query.cvc5_first`), and only cvc5's unsat is taken.

FastMathTransform's fast_softmax over an axis of size 1 computes fast_exp(x - max(-FLT_MAX, x)),
a polynomial on a bit pattern (`T.reinterpret`), so the check is in the IEEE model; Z3 timed out
on it after 30 s (Isra seed 23, graphs 0 and 6), cvc5 proves it in seconds. (Since 2026-12-07
the queries reach both solvers folded, `tvtv.numeral_cases`, and Z3 decides them too:
`tests/test_numeral_cases.py`; cvc5, asked first here, still answers.)
"""
from __future__ import annotations

import z3
from tvm.script import ir as I
from tvm.script import relax as R

import tvtv
from tvtv import solvers
from tvtv.refinement import CVC5_PROVED

from tests.conftest import mutate


@I.ir_module
class SoftmaxOfOne:
    @R.function
    def main(x: R.Tensor((2, 1), "float32")) -> R.Tensor((2, 1), "float32"):
        with R.dataflow():
            y = R.nn.softmax(x, axis=1)
            R.output(y)
        return y


def test_fast_softmax_over_one_element_is_proved_by_cvc5():
    (r,) = tvtv.check_pass("FastMathTransform", SoftmaxOfOne, timeout=30,
                           solver="z3+cvc5").results
    assert r.verdict == "proved", r.to_dict()
    assert any(lv.startswith(CVC5_PROVED) for lv in r.levels), r.levels
    assert "fp: ieee (bit-exact)" in r.levels, r.levels


def test_its_twin_with_a_changed_max_init_is_refuted():
    """The twin: the row maximum starts at 0 instead of -FLT_MAX, so x - max is x for x < 0,
    and fast_exp of x < -88.38 is 0: 0 / 0 is NaN where softmax gives 1."""
    import tvm
    target = tvm.relax.transform.FastMathTransform()(SoftmaxOfOne)
    broken = mutate(target, "T.float32(-340282346638528859811704183484516925440.0)",
                    "T.float32(0.0)")
    (r,) = tvtv.verify(SoftmaxOfOne, broken, timeout=30, solver="z3+cvc5").results
    assert r.verdict == "counterexample" and r.confirmed is True, r.to_dict()
    assert not any(lv.startswith(CVC5_PROVED) for lv in r.levels), r.levels


def test_cvc5_first_takes_its_unsat_only():
    """cvc5's unsat is the answer; on a satisfiable query Z3 is asked after it and answers,
    with its model; past the deadline cvc5 is not asked."""
    x = z3.FP("x", z3.Float32())
    above_one = z3.fpGT(x, z3.FPVal(1.0, z3.Float32()))
    q = solvers.Query("z3", 5, cvc5_first=True)
    q.add(above_one)
    assert q.check() == z3.sat and q.decided_by == "" and q.answers == {"cvc5": "sat", "z3": "sat"}
    assert z3.is_true(q.model().eval(above_one))
    q = solvers.Query("z3", 5, cvc5_first=True)
    q.add(z3.fpLT(x, x), z3.Not(z3.fpIsNaN(x)))
    assert q.check() == z3.unsat and q.decided_by == "cvc5" and q.answers == {"cvc5": "unsat"}
    q = solvers.Query("z3", 5, cvc5_first=True, deadline=0.0)
    q.add(above_one)
    assert q.check() == z3.sat and q.decided_by == "" and "cvc5" not in q.answers
