"""Deciding a counterexample without the solver where evaluation suffices
(tvtv/refinement.py: `separated_by_evaluation`, `separates`; tvtv/encode/probe.py: the probe
of a module without inputs, `libm_difference`).

The modules are hamming_window's legalization (no inputs; cos of constants, an
uninterpreted function) and one-token breaks of it:
  * cos -> sin: element 0 is cos(+0) = 1 against sin(+0) = +0, fixed by the special-value
    rules; element 1 is cos(a) against sin(a), open (hangs on the functions' values);
  * float64 N = 4: TVM's angle for n = 1 is an ulp off (a finding, tests/test_ops_window.py):
    cos(a) against cos(a + ulp), open, but the C library's values differ;
  * float16 N = 12 periodic: the float32 angles differ, the float16 window values do not.
Each decision has its twin: the unbroken float32 window is separated nowhere.
"""
from __future__ import annotations

from typing import Iterator

import numpy as np
import pytest
import z3

from tests.test_ops_window import legalized, mutate
from tvtv import refinement as RF
from tvtv.encode.abstraction import Abstraction, abstraction_level
from tvtv.encode.probe import probe
from tvtv.ir import relax_reader
from tvtv.report import Counterexample

COS_TO_SIN = ((6, False, 0.54, 0.46, "float32"), "T.cos(", "T.sin(")


@pytest.fixture(autouse=True)
def primfunc_bodies() -> Iterator[None]:
    """Encode PrimFunc bodies, as the ladder's second rung does (the default level keeps
    call_tir opaque)."""
    with abstraction_level(Abstraction("body", "uf")):
        yield


def programs(case: tuple, old: str | None = None, new: str | None = None) -> tuple:
    mod, leg = legalized(case)
    tgt = leg if old is None else mutate(leg, old, new)
    src_p, tgt_p = relax_reader.read_module(mod), relax_reader.read_module(tgt)
    return src_p, src_p.functions["main"], tgt_p, tgt_p.functions["main"]


def cex_at(index: tuple) -> Counterexample:
    return Counterexample("value", f"output 0 differs at index {index}", {}, output=0,
                          index=index)


def ieee_probe(case: tuple, old: str | None = None, new: str | None = None) -> tuple | None:
    enc = RF._encode(*programs(case, old, new), "ieee", None)
    return probe([], list(zip(enc.src.outputs, enc.tgt.outputs)),
                 [*RF._preconditions(enc), enc.src.ctx.well_defined(),
                  enc.tgt.ctx.well_defined()],
                 enc.model.domain, lambda dom, x, y: RF.assume_mod.same_output((), dom, x, y))


# ------------------------------------------------------------------------------------------------
# separated_by_evaluation
# ------------------------------------------------------------------------------------------------
def test_evaluation_moves_an_open_element_to_a_fixed_one() -> None:
    """The abstract model's element 1 hangs on cos(a) and sin(a); evaluation alone shows
    element 0 (1.0 - ... against 0.54 - 0.46 * 0) and the counterexample moves there."""
    cex = cex_at((1,))
    moved = RF.separated_by_evaluation(*programs(COS_TO_SIN[0], *COS_TO_SIN[1:]), cex)
    assert moved is not None
    assert moved.index == (0,) and moved.output == 0 and moved.confirmed_ieee is True
    assert moved.message == "output 0 differs at index (0,)"
    # float32(0.54 - 0.46 * 1) and float32(0.54 - 0.46 * 0)
    assert moved.source_value == float(np.float32(0.54 - 0.46))
    assert moved.target_value == float(np.float32(0.54))
    assert cex.index == (1,)      # the caller's counterexample is left as it was


def test_evaluation_keeps_a_separating_element() -> None:
    moved = RF.separated_by_evaluation(*programs(COS_TO_SIN[0], *COS_TO_SIN[1:]), cex_at((0,)))
    assert moved is not None and moved.index == (0,)


def test_evaluation_separates_nothing_in_an_unbroken_module() -> None:
    """The twin: the legalization itself, and a difference that hangs on function values
    only (the float64 angle finding) are not separated by evaluation."""
    assert RF.separated_by_evaluation(*programs(COS_TO_SIN[0]), cex_at((1,))) is None
    assert RF.separated_by_evaluation(*programs((4, False, 0.54, 0.46, "float64")),
                                      cex_at((1,))) is None


def test_evaluation_leaves_other_kinds_to_the_solver() -> None:
    ub = Counterexample("ub", "target is undefined", {})
    assert RF.separated_by_evaluation(*programs(COS_TO_SIN[0], *COS_TO_SIN[1:]), ub) is None


# ------------------------------------------------------------------------------------------------
# separates: the C library's values as a witness of "not separated" (modules without inputs)
# ------------------------------------------------------------------------------------------------
def test_libm_values_show_a_float16_difference_is_not_separated() -> None:
    """float16 N = 12: the angles differ, the window values under the C library's cos do not:
    not separated for every interpretation (the solver's query alone ran 10 s undecided:
    None)."""
    assert RF.separates(*programs((12, True, 0.54, 0.46, "float16")), cex_at((11,))) is False


def test_separates_still_proves_a_fixed_difference() -> None:
    """The twin: where the special-value rules fix both elements, separation is proved."""
    assert RF.separates(*programs(COS_TO_SIN[0], *COS_TO_SIN[1:]), cex_at((0,))) is True


# ------------------------------------------------------------------------------------------------
# the probe of a module without inputs
# ------------------------------------------------------------------------------------------------
def test_probe_evaluates_a_module_without_inputs() -> None:
    found = ieee_probe(COS_TO_SIN[0], *COS_TO_SIN[1:])
    assert found is not None
    inputs, k, j, _, _ = found
    assert inputs == {} and (k, j) == (0, 0)


def test_probe_uses_libm_values_where_functions_decide() -> None:
    """The float64 angle finding: cos(a) against cos(a + ulp) differ under the C library's
    cos at n = 1 (the element the VM confirms, tests/test_ops_window.py)."""
    found = ieee_probe((4, False, 0.54, 0.46, "float64"))
    assert found is not None
    _, k, j, x, y = found
    assert (k, j) == (0, 1) and not z3.eq(x, y)


def test_probe_finds_nothing_where_libm_values_agree() -> None:
    """Twins: the unbroken float32 window, and float16 N = 12 (equal values)."""
    assert ieee_probe(COS_TO_SIN[0]) is None
    assert ieee_probe((12, True, 0.54, 0.46, "float16")) is None


# ------------------------------------------------------------------------------------------------
# the ladder asks the IEEE model's question once per place
# ------------------------------------------------------------------------------------------------
def test_same_place_compares_inputs_bit_for_bit() -> None:
    a = Counterexample("value", "m", {"x": np.array([0.0], np.float32)}, output=0, index=(0,))
    b = Counterexample("value", "m", {"x": np.array([-0.0], np.float32)}, output=0, index=(0,))
    c = Counterexample("value", "m", {"x": np.array([0.0], np.float32)}, output=0, index=(0,))
    assert RF._same_place(a, c) and not RF._same_place(a, b)
    assert not RF._same_place(a, Counterexample("value", "m", {"x": np.array([0.0], np.float32)},
                                                output=0, index=(1,)))
    t1 = Counterexample("ub", "m", {"t": (np.array([1], "int32"), np.array([nan()], np.float32))})
    t2 = Counterexample("ub", "m", {"t": (np.array([1], "int32"), np.array([nan()], np.float32))})
    assert RF._same_place(t1, t2)


def nan() -> float:
    return float("nan")


def test_hamming_refutation_is_decided_at_the_abstract_level() -> None:
    """End to end, with a 20 s query budget: the cos -> sin break is refuted at the abstract
    level, its counterexample moved to element 0 and confirmed on the VM, without climbing
    to the IEEE model (before, the IEEE re-check ran 10 s undecided on the abstract model's
    element, and the IEEE model's search found element 0 after a 2 s symbolic query)."""
    import tvtv
    mod, leg = legalized(COS_TO_SIN[0])
    (r,) = tvtv.verify(mod, mutate(leg, *COS_TO_SIN[1:]), timeout=20).results
    d = r.to_dict()
    assert r.verdict == "counterexample" and r.confirmed is True, d
    assert r.counterexample.index == (0,) and r.counterexample.confirmed_ieee is True, d
    assert "fp: ieee (bit-exact)" not in d["levels"], d
