"""cvc5 reads the queries tvtv writes for it (`solvers.to_smtlib`, `cvc5_child.run`).

Until 2026-12-07 every FuseTIR query of a pooled or reshaped graph failed in cvc5 (Z3's
simplifier writes `bvurem_i` for an index's floor_mod, and padded buffers are constant
arrays), so `--solver cvc5` left 15 of FuseTIR seed 0's 30 graphs `unknown` with a reason
that said "timeout". These tests keep both translations honest: each internal operator means
its SMT-LIB twin, cvc5 answers as Z3 does on division by zero and constant arrays, and a
FuseTIR check under `--solver cvc5` proves a pooling and refutes its broken twin.
"""
from __future__ import annotations

import pytest
import z3
from tvm.script import ir as I
from tvm.script import relax as R

import tvtv
from tvtv import solvers

from tests.conftest import mutate

INTERNAL = ["bvudiv", "bvurem", "bvsdiv", "bvsrem", "bvsmod"]


@pytest.mark.parametrize("op", INTERNAL)
@pytest.mark.parametrize("bits", [4, 8])
def test_z3s_internal_division_is_its_smtlib_twin_for_all_operands(op, bits):
    """The rewrite `(bvurem_i ...)` -> `(bvurem ...)` is sound: Z3 (default `hi_div0`) proves
    the two equal for every pair of operands, the divisor 0 included."""
    facts = z3.parse_smt2_string(
        f"(declare-const x (_ BitVec {bits})) (declare-const y (_ BitVec {bits}))"
        f"(assert (not (= ({op}_i x y) ({op} x y))))")
    s = z3.Solver()
    s.add(facts)
    assert s.check() == z3.unsat


def _simplified(*facts: z3.BoolRef) -> list[z3.BoolRef]:
    return [z3.simplify(f) for f in facts]


def test_simplified_division_reaches_cvc5_with_standard_names():
    x, y = z3.BitVecs("x y", 32)
    facts = _simplified(z3.URem(x, y) == 5, y == 7, z3.SRem(x, 3) == 1, x / y == 2)
    assert any("_i" in f.sexpr() for f in facts)       # Z3 wrote its internal operators
    text = solvers.to_smtlib(facts)
    for op in INTERNAL:
        assert f"({op}_i" not in text
    assert solvers.cvc5_answer(facts, 10) == (z3.sat, "")


@pytest.mark.parametrize("fact, expected", [
    # SMT-LIB: x / 0 is all ones, x rem 0 is x, and Z3's simplifier keeps that meaning
    (lambda x: z3.UDiv(x, 0) != -1, z3.unsat),
    (lambda x: z3.URem(x, 0) != x, z3.unsat),
    (lambda x: z3.SRem(x, 0) != x, z3.unsat),
    # the twin: a claim that is false for some x is satisfiable in both solvers
    (lambda x: z3.UDiv(x, 0) != x, z3.sat),
    (lambda x: z3.URem(x, 3) == 3, z3.unsat),
])
def test_cvc5_and_z3_agree_on_division_by_zero_and_remainders(fact, expected):
    x = z3.BitVec("x", 16)
    facts = _simplified(fact(x))
    s = z3.Solver()
    s.add(facts)
    assert s.check() == expected
    assert solvers.cvc5_answer(facts, 10)[0] == expected


def test_cvc5_reads_constant_arrays():
    """A padded buffer's default is a constant array; cvc5 needs its experimental array
    solver for it ("Cannot handle assertion with term of kind STORE_ALL" without)."""
    f32 = z3.Float32()
    zeros = z3.K(z3.BitVecSort(32), z3.FPVal(0.0, f32))
    i = z3.BitVec("i", 32)
    a = z3.Store(zeros, 3, z3.FPVal(1.0, f32))
    assert solvers.cvc5_answer([z3.fpEQ(a[i], z3.FPVal(1.0, f32)), i != 3], 10)[0] == z3.unsat
    assert solvers.cvc5_answer([z3.fpEQ(a[i], z3.FPVal(0.0, f32))], 10)[0] == z3.sat


def test_cvc5s_unknown_says_why():
    """A timeout is named as one, and an incomplete answer (quantifiers over an uninterpreted
    function of a lambda) as cvc5 gives it: neither is reported as the other."""
    f, rne = z3.Float32(), z3.RNE()
    x, y, z = z3.FPs("x y z", f)
    tenth = z3.FPVal(0.1, f)
    hard = [z3.fpMul(rne, z3.fpMul(rne, x, y), z) == tenth,     # is multiplication
            z3.fpNEQ(z3.fpMul(rne, x, z3.fpMul(rne, y, z)), tenth)]   # associative here?
    r, why = solvers.cvc5_answer(hard, 0.001)
    assert r == z3.unknown and why == "cvc5: timeout after 0.001 s", why
    j, k = z3.BitVecs("j k", 32)
    bv = z3.BitVecSort(32)
    g = z3.Function("g", z3.ArraySort(bv, bv), bv)
    outer = z3.Lambda([j], g(z3.Lambda([k], j + k)))
    r, why = solvers.cvc5_answer([outer[1] == 4], 10)
    assert r == z3.unknown and why == "cvc5: unknown (INCOMPLETE)", why


def test_a_query_cvc5_rejects_is_named_so_and_not_a_timeout():
    """Z3's `fp.to_ieee_bv` is not SMT-LIB: cvc5's parser rejects it. The reason says so,
    the verdict's reason does not call it a timeout, and the run's causes count it apart."""
    from tvtv.report import unknown_cause

    x = z3.FP("x", z3.Float32())
    r, why = solvers.cvc5_answer([z3.fpToIEEEBV(x) == 0], 10)
    assert r == z3.unknown and why.startswith(solvers.CVC5_ERROR) and "to_ieee_bv" in why, why
    q = solvers.Query("cvc5", 10)
    q.add(z3.fpToIEEEBV(x) == 0)
    assert q.check() == z3.unknown and q.reason_unknown() == why
    assert unknown_cause(f"undecided: {why}") == "the solver rejected the query"
    assert unknown_cause("timeout after 10 s per query (cvc5: timeout after 10 s)") == "timeout"


@I.ir_module
class Pool:
    """adaptive_avg_pool2d over uneven windows: LegalizeOps' PrimFunc indexes with floor
    division and modulo, so the fused module's queries hold Z3's internal division."""

    @R.function
    def main(x: R.Tensor((1, 2, 5, 7), "float32")) -> R.Tensor((1, 2, 5, 5), "float32"):
        with R.dataflow():
            y = R.nn.adaptive_avg_pool2d(x, output_size=[5, 5])
            z = R.add(y, y)
            R.output(z)
        return z


def test_fusetir_of_a_pooling_is_proved_with_cvc5_alone():
    (r,) = tvtv.check_pass("FuseTIR", Pool, timeout=30, solver="cvc5").results
    assert r.verdict == "proved", r.to_dict()
    assert "solver: cvc5" in r.levels, r.levels


def test_its_twin_with_a_changed_divisor_is_refuted_with_cvc5_alone():
    """The twin: the averaging divides the wider windows by one more than their width."""
    import tvm
    t = tvm.relax.transform
    target = t.FuseTIR()(t.FuseOps()(t.AnnotateTIROpPattern()(t.LegalizeOps()(Pool))))
    broken = mutate(target, '// T.int64(5) + T.int64(1)) - T.Cast("int64", v_ax3)',
                    '// T.int64(5) + T.int64(2)) - T.Cast("int64", v_ax3)')
    (r,) = tvtv.verify(Pool, broken, timeout=30, solver="cvc5").results
    assert r.verdict == "counterexample" and r.confirmed is True, r.to_dict()


def test_a_query_tvtv_cannot_write_for_cvc5_is_named_so_and_not_a_timeout():
    """A lambda over an enclosing lambda's index stays a lambda after lifting, which
    SMT-LIB cannot say: no time limit was reached, so the reason does not call it one."""
    from tvtv.report import unknown_cause

    j, k = z3.BitVecs("j k", 32)
    bv = z3.BitVecSort(32)
    g = z3.Function("g", z3.ArraySort(bv, bv), bv)
    nested = z3.Lambda([j], g(z3.Lambda([k], j + k)))
    r, why = solvers.cvc5_answer([nested == z3.Array("a", bv, bv)], 10)
    assert r == z3.unknown and why.startswith(solvers.CVC5_UNWRITABLE), why
    assert "enclosing lambda" in why and "timeout" not in why
    assert unknown_cause(f"undecided: {why}") == "the solver rejected the query"
    # the twin: without the nesting a lambda is written and answered
    a = z3.Array("a", bv, bv)
    assert solvers.cvc5_answer([z3.Lambda([j], j + 1) == a, a[3] == 5], 10) == (z3.unsat, "")
