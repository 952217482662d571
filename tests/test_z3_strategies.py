"""Z3 asked in stages (tvtv/solvers.py: `Z3_STRATEGIES`, `z3_slices`): the default solver
briefly, then the `qfufbv` tactic, then the default solver with the time left.

Each stage must be a complete solver on its own: the same answers, and a model that satisfies
the facts and decodes to a counterexample the check can confirm."""
from __future__ import annotations

import pytest
import z3

from tests.test_models import AddZero, Identity, SumLeft, SumRight, verdict
from tvtv import solvers
from tvtv.absfp.abstract import AbstractModel
from tvtv.solvers import Query, z3_slices


def test_slices_start_briefly_with_the_default_solver():
    assert z3_slices(15.0) == [("smt", 1.0), ("qfufbv", 7.0), ("smt", 7.0)]
    assert z3_slices(2.5) == [("smt", 1.0), ("qfufbv", 1.5)]
    assert z3_slices(0.5) == [("smt", 0.5)]           # too short to split
    assert z3_slices(15.0, ("smt",)) == [("smt", 15.0)]
    for t in (1.2, 3.0, 15.0, 60.0):
        assert sum(s for _, s in z3_slices(t)) == pytest.approx(t)


def _element_query(dom, differ: bool) -> list[z3.BoolRef]:
    """`(a + b) * c` against itself with the operands of + exchanged (equal: the abstract +
    is commutative by construction), or against `(a + c) * b` (different)."""
    a, b, c = (dom.var(n) for n in "abc")
    lhs = dom.mul(dom.add(a, b), c)
    rhs = dom.mul(dom.add(a, c), b) if differ else dom.mul(dom.add(b, a), c)
    return [z3.Not(dom.same(lhs, rhs))]


@pytest.mark.parametrize("first", ["smt", "qfufbv"])
def test_each_strategy_decides_alone_and_its_model_satisfies_the_facts(monkeypatch, first):
    monkeypatch.setattr(solvers, "Z3_STRATEGIES", (first,))
    model = AbstractModel()
    dom = model.domain("float32")
    facts = _element_query(dom, differ=False)
    q = Query("z3", 20)
    q.add(*model.preconditions(), *facts)
    assert q.check() == z3.unsat and q.strategy == first
    facts = _element_query(dom, differ=True)
    q = Query("z3", 20)
    q.add(*model.preconditions(), *facts)
    assert q.check() == z3.sat and q.strategy == first
    m = q.model()
    assert all(z3.is_true(m.eval(f, model_completion=True)) for f in q.facts)


@pytest.mark.parametrize("order", [("qfufbv", "smt"), ("smt", "qfufbv")])
def test_checks_agree_whichever_strategy_goes_first(monkeypatch, order):
    """The twin of the proofs: a broken target is refuted through the tactic's model too
    (x + 0 differs from x at x = -0)."""
    monkeypatch.setattr(solvers, "Z3_STRATEGIES", order)
    monkeypatch.setattr(solvers, "FIRST_SLICE", 5.0)
    assert verdict(SumLeft, SumRight, fp="real").verdict == "proved"
    r = verdict(Identity, AddZero)
    assert r.verdict == "counterexample", r.to_dict()
    assert r.counterexample.inputs["x"][r.counterexample.index] == 0.0


def test_an_undecided_query_is_unknown_with_the_last_stages_reason():
    # factoring the product of two 31-bit primes: undecided after 5 s (measured)
    x, y = z3.BitVecs("x y", 32)
    q = Query("z3", 1.3)             # the default solver 1 s, then the tactic 0.3 s
    q.add(z3.ZeroExt(32, x) * z3.ZeroExt(32, y) == 1362286843 * 1524616343,
          z3.ULT(1, x), z3.ULT(1, y))
    assert q.check() == z3.unknown
    assert q.reason_unknown() in ("timeout", "canceled")
    with pytest.raises(z3.Z3Exception):
        q.model()


def _product_of_wide_vectors() -> list[z3.BoolRef]:
    """A query whose bit-blasting grows fast: six 1,024-bit factors of a constant (measured:
    7.3 GiB after 30 s without a bound)."""
    xs = z3.BitVecs("wide_a wide_b wide_c wide_d wide_e wide_f", 1024)
    p = xs[0]
    for v in xs[1:]:
        p = p * v
    return [p == 12345678901234567890123, *[z3.UGT(v, 1) for v in xs]]


def test_a_query_past_z3s_memory_bound_gives_up_and_says_so():
    """With Z3's memory bounded (`limit_z3_memory`) a query that would grow past it answers
    unknown at once, the reason naming the bound; the twin, unbounded, is still working
    when its time is up ("timeout"). Either way small queries are decided afterwards."""
    try:
        solvers.limit_z3_memory(200)
        q = Query(timeout=20.0)
        q.add(*_product_of_wide_vectors())
        assert q.check() == z3.unknown
        assert solvers.MEMORY_EXCEEDED in q.reason_unknown()
        assert solvers.Z3_MEMORY_ENV in q.reason_unknown()
        solvers.limit_z3_memory(0)          # 0: no bound
        q = Query(timeout=1.5)
        q.add(*_product_of_wide_vectors())
        assert q.check() == z3.unknown and q.reason_unknown() == "timeout"
    finally:
        solvers.limit_z3_memory()
    x = z3.BitVec("x", 8)
    q = Query(timeout=5.0)
    q.add(x + 1 == 3)
    assert q.check() == z3.sat


def test_the_default_memory_bound_is_a_share_of_the_machine(monkeypatch):
    monkeypatch.setenv(solvers.Z3_MEMORY_ENV, "1234")
    assert solvers.z3_memory_mb() == 1234
    monkeypatch.delenv(solvers.Z3_MEMORY_ENV)
    assert solvers.z3_memory_mb() >= 2048


def _factoring() -> list[z3.BoolRef]:
    """x * y = 1009 * 1013 in 16-bit factors: decided in 0.03-0.3 s by either strategy, never
    in 1 ms (measured 10 times each)."""
    x, y = z3.BitVecs("fx fy", 32)
    return [x * y == 1009 * 1013, z3.UGT(x, 1), z3.UGT(y, 1), z3.ULT(x, 65536), z3.ULT(y, 65536)]


def test_a_check_asks_first_the_strategy_that_answered_last(monkeypatch):
    """Within a check (`refinement._ORDER`), a query of a kind answered by a later stage
    moves that strategy to the front for the kind's next queries, and back when the other
    answers instead; other kinds, and queries of no kind, keep the fixed order. With a
    first slice of 1 ms the first stage never decides the factoring, so the second always
    answers."""
    from tvtv import refinement
    monkeypatch.setattr(solvers, "FIRST_SLICE", 0.001)
    token = refinement._ORDER.set({})
    try:
        q = refinement._solver(10.0, kind="element")
        assert z3_slices(q.timeout, q.strategies)[0][0] == "smt"
        q.add(*_factoring())
        assert refinement._check(q, "element") == z3.sat and q.strategy == "qfufbv"
        assert refinement._ORDER.get() == {"element": ["qfufbv", "smt"]}
        assert refinement._solver(10.0, kind="group").strategies == ()
        assert refinement._solver(10.0).strategies == ()
        q = refinement._solver(10.0, kind="element")
        assert q.strategies == ("qfufbv", "smt")
        q.add(*_factoring())
        assert refinement._check(q, "element") == z3.sat and q.strategy == "smt"
        assert refinement._ORDER.get() == {"element": ["smt", "qfufbv"]}
        q = refinement._solver(10.0)          # no kind: nothing is learnt
        q.add(*_factoring())
        assert refinement._check(q) == z3.sat and q.strategy == "qfufbv"
        assert refinement._ORDER.get() == {"element": ["smt", "qfufbv"]}
    finally:
        refinement._ORDER.reset(token)


def test_each_check_starts_from_the_fixed_order():
    """`check_function` learns the order for its own queries only: before and after it no
    order is set, and a check's result does not depend on what an earlier one learnt."""
    from tvtv import refinement
    assert refinement._ORDER.get() is None
    assert verdict(SumLeft, SumRight, fp="real").verdict == "proved"
    assert refinement._ORDER.get() is None
    assert refinement._solver(5.0).strategies == ()
