"""The concrete probe (`tvtv/encode/probe.py`) substitutes and simplifies an output's elements
together; it must name what probing element by element names: the first differing element
in index order, under the first special value that shows a difference."""
from __future__ import annotations

import z3

from tvtv.absfp.ieee import IEEEModel
from tvtv.encode import probe as P
from tvtv.encode.tensor import Tensor


def outputs(broken: bool) -> tuple[list, list]:
    """x + 0.0 at elements 2 and 3 against x: +0 where x is -0 (IEEE 754 §6.3), so the
    special value -0.0 shows it; elsewhere, and without `broken`, the same term."""
    model = IEEEModel()
    dom = model.domain("float32")
    x = Tensor.variable("x", (5,), "float32", dom)
    src = Tensor.from_flat((5,), "float32", lambda i: x.at(i))
    tgt = Tensor.from_flat((5,), "float32", lambda i: z3.If(z3.UGE(i, 2), dom.add(x.at(i), dom.const(0.0)), x.at(i))) \
        if broken else src
    return [("x", x)], [(src, tgt)], model


def element_by_element(outs, domain, same, subst):
    """The probe's rule, one element at a time (the reference)."""
    for k, (a, b) in enumerate(outs):
        for j in range(a.numel):
            x = z3.simplify(z3.substitute(a.at(j), *subst))
            y = z3.simplify(z3.substitute(b.at(j), *subst))
            if z3.is_false(z3.simplify(same(domain(a.dtype), x, y))):
                return k, j
    return None


def test_batched_probe_names_the_first_differing_element():
    inputs, outs, model = outputs(broken=True)
    same = lambda dom, x, y: dom.same(x, y)   # noqa: E731
    found = P.probe(inputs, outs, [], model.domain, same)
    assert found is not None
    concrete, k, flat, x, y = found
    assert (k, flat) == (0, 2) and str(concrete["x"][0]) == "-0.0"
    # the same answer element by element, for every special value
    arr = inputs[0][1].arr
    for v in P.SPECIALS:
        subst = [(arr, z3.K(arr.domain(), model.domain("float32").const(v)))]
        want = element_by_element(outs, model.domain, same, subst)
        got = P.constant_difference(outs, model.domain, same, subst)
        assert (got[:2] if got else None) == want, v


def test_batched_probe_finds_nothing_in_an_unchanged_output():
    inputs, outs, model = outputs(broken=False)
    assert P.probe(inputs, outs, [], model.domain, lambda dom, x, y: dom.same(x, y)) is None


def test_first_is_tried_before_the_others():
    inputs, outs, model = outputs(broken=True)
    arr = inputs[0][1].arr
    subst = [(arr, z3.K(arr.domain(), model.domain("float32").const(-0.0)))]
    got = P.constant_difference(outs, model.domain, lambda dom, x, y: dom.same(x, y), subst,
                                first=(0, 4))
    assert got is not None and got[:2] == (0, 4)


def test_probe_conditions_left_open_by_simplification_are_decided_by_a_solver() -> None:
    """A PrimFunc's well-definedness on concrete inputs is "no loop index reads out of
    range", a quantified condition simplification leaves open: the probe asks a solver
    (`probe.holds`). Twin: a condition that fails for one index stays not held."""
    bv = z3.BitVecSort(64)
    t = z3.Array("t", bv, bv)
    k = z3.BitVec("k", 64)
    # every index t[k], 0 <= k < 300, is below 8 (take's condition on 300 indices)
    in_range = z3.Not(z3.Exists([k], z3.And(z3.ULT(k, 300), z3.Not(z3.ULT(t[k], 8)))))

    def indices(at_123: int) -> list:       # t = k % 8, but t[123] = at_123
        return [(t, z3.Lambda([k], z3.If(k == 123, z3.BitVecVal(at_123, 64), z3.URem(k, 8))))]

    assert not z3.is_true(z3.simplify(z3.substitute(in_range, *indices(5))))   # left open
    assert P.holds([in_range], indices(5))
    assert not P.holds([in_range], indices(8))
