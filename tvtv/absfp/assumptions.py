"""Assumptions a user may state, as fast-math flags and Alive2 allow.

- `no-nan`:  no input element is NaN, and a NaN the source computes is poison (LLVM's
  `nnan`: "if an argument is a nan, or the result would be a nan, it produces a poison
  value"): an output element where the source is NaN is refined by any target value.
- `no-inf`:  the same for ±inf (`ninf`): no input is ±inf, a source output that is ±inf
  (an overflow, a max over padding only) is poison.
- `no-signed-zeros`: +0.0 and -0.0 are not distinguished in the outputs (`nsz`): an output
  element refines the source's when both are zeros of any sign.

- `per-operation`: no-nan and no-inf hold for every operation, as LLVM's flags on every
  instruction: a run in which the source computes a NaN (under no-nan) or an infinity
  (under no-inf) in any tensor its outputs are computed from is poison as a whole. The
  output rules above stay as they are; what this adds is that an operator proved equal to
  its legalization only for finite inputs and results (relu, max, clip: they differ on NaN)
  may stand for it (`tvtv.lemmas`). Needs no-nan or no-inf. With no-signed-zeros it also
  makes the sign of a zero argument or result insignificant for every operation (LLVM's
  `nsz` on every instruction): tanh and atanh may then drop their argument's zero sign, as
  TVM's code does (tanh(-0) = +0), and get operator lemmas.
- `op-rounding`: an operator may be computed by a legalization that equals it in real
  arithmetic (LLVM's `afn` and `reassoc`, for one operator's PrimFunc as a whole): where an
  operator's lemma (`tvtv.lemmas`) does not hold in the user's float model, it may be proved
  in the real model (`tvtv.absfp.real`: correct up to rounding, one zero), and then stands for
  the operator's `call_tir` in the graph check. The verdict names every operator taken so.
  gelu (`x * (0.5 + erf(x / sqrt 2) * 0.5)` for `0.5 * x * (1 + erf(x / sqrt 2))`) and
  layer_norm (`* rsqrt(var + eps)` for `/ sqrt(var + eps)`) differ from their
  specifications only so (docs/findings.md).

Without per-operation, poison is taken at the outputs only, which is weaker than LLVM's (there any intermediate NaN
makes every value that depends on it poison, even one a max would have dropped): a proof
under these rules is a proof under fast-math's, never the other way round. A source output
that is NaN under no-nan must come from an operation that produced NaN (the inputs hold
none), whose poison reaches that output. Every assumption in force is recorded in the result
(`Result.assumptions`) and printed with the verdict.
"""
from __future__ import annotations

from typing import Iterable, Sequence

import z3

from tvtv import z3context
from tvtv import z3fast as zf
from tvtv.absfp.dtypes import is_float
from tvtv.absfp.interface import FloatModel, ScalarDomain

NO_NAN, NO_INF, NO_SIGNED_ZEROS = "no-nan", "no-inf", "no-signed-zeros"
PER_OPERATION = "per-operation"
OP_ROUNDING = "op-rounding"
ASSUMPTIONS: dict[str, str] = {
    NO_NAN: "no input element is NaN; a NaN the source computes is poison (nnan)",
    NO_INF: "no input element is +inf or -inf; an infinity the source computes is poison (ninf)",
    NO_SIGNED_ZEROS: "outputs are compared modulo the sign of zero",
    PER_OPERATION: "no-nan/no-inf hold for every operation: a NaN/inf in any tensor the "
                   "source's outputs are computed from makes the whole run poison; with "
                   "no-signed-zeros, a zero's sign is insignificant for every operation",
    OP_ROUNDING: "an operator's legalization may differ from it by rounding: its lemma may be "
                 "proved in the real model (correct up to rounding, signed zeros not "
                 "distinguished); the operators taken so are listed with the verdict",
}
# Up to this many elements an input constraint is expanded element by element.
EXPAND_BOUND = 256


def validate(names: Iterable[str]) -> tuple[str, ...]:
    """The assumptions as a sorted tuple; ValueError naming the allowed ones otherwise."""
    out = []
    for n in names:
        if n not in ASSUMPTIONS:
            raise ValueError(f"unknown assumption {n!r} (choose from {', '.join(ASSUMPTIONS)})")
        if n not in out:
            out.append(n)
    if PER_OPERATION in out and not (NO_NAN in out or NO_INF in out):
        raise ValueError(f"assumption {PER_OPERATION!r} needs {NO_NAN!r} or {NO_INF!r}")
    return tuple(sorted(out))


def per_operation(assume: Sequence[str]) -> tuple[str, ...]:
    """The assumptions that hold for every operation (empty without per-operation): no-nan
    and no-inf, never no-signed-zeros (a zero of the other sign would reach the next
    operation, which may tell them apart)."""
    if PER_OPERATION not in assume:
        return ()
    return tuple(a for a in assume if a in (NO_NAN, NO_INF))


def zero_signs_free(assume: Sequence[str]) -> bool:
    """per-operation with no-signed-zeros: the sign of a zero argument or result is
    insignificant for every operation (LLVM's `nsz` on every instruction), so the source may
    be evaluated with an operator's argument's zero sign dropped where the operator's result
    at ±0 is a zero either way (`tvtv.encode.ops.elementwise.ZERO_SIGN_DROPPED`)."""
    return PER_OPERATION in assume and NO_SIGNED_ZEROS in assume


def describe(names: Sequence[str], input_class: Sequence[str] = ()) -> list[str]:
    """One printable line per assumption in force, then one for an input class
    (`validate_input_class`) when the inputs looked at are restricted."""
    lines = [f"{n}: {ASSUMPTIONS[n]}" for n in names]
    if input_class:
        kinds = " or ".join({NO_NAN: "NaN", NO_INF: "±inf"}[n] for n in input_class)
        lines.append(f"inputs: no {kinds} elements (only such inputs are looked at; not an "
                     f"assumption: a NaN or infinity computed inside still counts)")
    return lines


# An input class restricts the inputs a check looks at, as no-nan / no-inf do, but leaves out
# their second half: a NaN or an infinity the source computes is not poison. "The pass
# changes the result on finite inputs" (TIR's max dropping the NaN of sqrt(-1)) is such a
# claim; under no-nan that output would be poison, and the difference no counterexample.
# The minimizer keeps a finding's inputs in its class with it (`tvtv.minimize`).
INPUT_CLASSES = (NO_NAN, NO_INF)


# The names users give an input class (`tvtv check --inputs`).
INPUT_CLASS_NAMES: dict[str, tuple[str, ...]] = {
    "any": (), "no-nan": (NO_NAN,), "finite": (NO_NAN, NO_INF)}


def input_class_named(name: str) -> tuple[str, ...]:
    """The input class a user names (`INPUT_CLASS_NAMES`); ValueError naming the choices."""
    if name not in INPUT_CLASS_NAMES:
        raise ValueError(f"unknown input class {name!r} (choose from {', '.join(INPUT_CLASS_NAMES)})")
    return INPUT_CLASS_NAMES[name]


def validate_input_class(names: Iterable[str]) -> tuple[str, ...]:
    """`names` (of no-nan, no-inf) in `INPUT_CLASSES`' order; ValueError for anything else."""
    given = set(names)
    bad = sorted(given - set(INPUT_CLASSES))
    if bad:
        raise ValueError(f"unknown input class {bad[0]!r} (choose from {', '.join(INPUT_CLASSES)})")
    return tuple(n for n in INPUT_CLASSES if n in given)


def restricting(assume: Sequence[str], input_class: Sequence[str]) -> tuple[str, ...]:
    """The names whose input half holds (`input_facts`, `atom_facts`, drawn inputs): the
    assumptions and the input class together."""
    return tuple(sorted(set(assume) | set(input_class)))


def excluded(assume: Sequence[str], dom: ScalarDomain, x: z3.ExprRef) -> list[z3.BoolRef]:
    """What no-nan / no-inf in `assume` rule out for a value `x`: "x is NaN", "x is ±inf"."""
    return (([dom.is_nan(x)] if NO_NAN in assume else [])
            + ([dom.is_inf(x)] if NO_INF in assume else []))


def decided_atoms(assume: Sequence[str], dom: ScalarDomain, x: z3.ExprRef) -> list[z3.BoolRef]:
    """The atoms about `x` that no-nan / no-inf make False, in every form an encoder builds
    them: `excluded`'s, and under no-inf also "x is -inf" and "x is +inf" (`is_signed_inf`,
    which the abstract domain builds as one code comparison, `x == -inf`, not through
    `is_inf`: a max or min reduction's identity test meets that form)."""
    atoms = excluded(assume, dom, x)
    if NO_INF in assume:
        atoms += [dom.is_signed_inf(x, -1), dom.is_signed_inf(x, 1)]
    return atoms


def input_facts(assume: Sequence[str], model: FloatModel, tensors: Sequence[object]) -> list[z3.BoolRef]:
    """Constraints on the input tensors (objects with `dtype`, `numel`, `at(i)`)."""
    want_nan, want_inf = NO_NAN in assume, NO_INF in assume
    if not (want_nan or want_inf):
        return []
    facts: list[z3.BoolRef] = []
    for t in tensors:
        if not is_float(t.dtype) or t.numel == 0:  # type: ignore[attr-defined]
            continue
        dom = model.domain(t.dtype)  # type: ignore[attr-defined]

        def ok(x: z3.ExprRef, dom: ScalarDomain = dom) -> z3.BoolRef:
            return zf.And(*[zf.Not(p) for p in excluded(assume, dom, x)])
        n = t.numel  # type: ignore[attr-defined]
        if n <= EXPAND_BOUND:
            facts += [ok(t.at(k)) for k in range(n)]  # type: ignore[attr-defined]
        else:
            i = z3.BitVec("tvtv_assume_i", 32)
            facts.append(z3.ForAll([i], z3.Implies(z3.ULT(i, z3.BitVecVal(n, 32)), ok(t.at(i)))))  # type: ignore[attr-defined]
    return facts


# Inputs up to this many elements in all have their elements' NaN/inf atoms decided by
# `atom_facts` (each element costs a few simplifications).
ATOM_FACTS_BOUND = 4096


def atom_facts(assume: Sequence[str], model: FloatModel, tensors: Sequence[object]
               ) -> dict[int, tuple[z3.ExprRef, z3.ExprRef]]:
    """What no-nan and no-inf decide about single input elements: the atoms "x[k] is NaN" and
    "x[k] is ±inf", raw and simplified, mapped to False (AST id -> (atom, False)), for
    `tvtv.encode.canonical.Canonicalizer`. They are consequences of `input_facts`."""
    want_nan, want_inf = NO_NAN in assume, NO_INF in assume
    if not (want_nan or want_inf):
        return {}
    if sum(t.numel for t in tensors if is_float(t.dtype)) > ATOM_FACTS_BOUND:  # type: ignore[attr-defined]
        return {}
    flags = (want_nan, want_inf)
    out: dict[int, tuple[z3.ExprRef, z3.ExprRef]] = {}
    for t in tensors:
        if not is_float(t.dtype):  # type: ignore[attr-defined]
            continue
        dom = model.domain(t.dtype)  # type: ignore[attr-defined]
        for k in range(t.numel):  # type: ignore[attr-defined]
            out.update(_element_facts(flags, dom, t.at(k)))  # type: ignore[attr-defined]
    return out


# (domain class, dtype, (no-nan, no-inf), element's AST id) -> (the element, its
# `false_atom_facts`). An element's atoms are a function of its term alone: every domain's
# is_nan / is_inf / is_signed_inf depends only on the term's sort (the abstract domain's codes
# on its width), so one element met by several checks of a case (the operator lemmas' inputs
# are named alike: seed-0 zero graph 16 asked for 3,933 elements' atoms, 2,520 of them
# distinct; atom_facts 1.03 s -> 0.73 s of its 6 s) is simplified once. The element is kept so that its id is not reused;
# emptied with a new Z3 context (`tvtv.z3context`).
_ELEMENT_FACTS: dict[tuple, tuple[z3.ExprRef, dict[int, tuple[z3.ExprRef, z3.ExprRef]]]] = \
    z3context.cache({})
_ELEMENT_FACTS_LIMIT = 200_000


def _element_facts(flags: tuple[bool, bool], dom: ScalarDomain, x: z3.ExprRef
                   ) -> dict[int, tuple[z3.ExprRef, z3.ExprRef]]:
    """`false_atom_facts` of the atoms no-nan / no-inf (`flags`) decide about element `x`."""
    key = (type(dom), dom.dtype, flags, x.get_id())
    hit = _ELEMENT_FACTS.get(key)
    if hit is not None:
        return hit[1]
    assume = [NO_NAN] * flags[0] + [NO_INF] * flags[1]
    facts = false_atom_facts(decided_atoms(assume, dom, z3.simplify(x)))
    if len(_ELEMENT_FACTS) >= _ELEMENT_FACTS_LIMIT:
        _ELEMENT_FACTS.clear()
    _ELEMENT_FACTS[key] = (x, facts)
    return facts


def false_atom_facts(atoms: Sequence[z3.BoolRef]) -> dict[int, tuple[z3.ExprRef, z3.ExprRef]]:
    """`atoms` (false on every input the check admits), raw and simplified, mapped to False
    as `atom_facts` maps its atoms."""
    false = z3.BoolVal(False)
    # true and false are one node each (Z3 hash-conses terms): comparing ids is
    # z3.is_true / z3.is_false without their several calls per form
    constants = (false.get_id(), z3.BoolVal(True).get_id())
    out: dict[int, tuple[z3.ExprRef, z3.ExprRef]] = {}
    for p in atoms:
        for form in (p, z3.simplify(p)):
            fid = form.get_id()
            if fid not in constants and z3.is_app(form):
                out[fid] = (form, false)
    return out


# Live tensors up to this many elements in all get `run_facts` (one constraint an element).
RUN_FACTS_BOUND = 4096


def float_elements(tensors: Sequence[object]) -> int:
    """How many float elements `tensors` hold: what `run_facts` counts against its bound."""
    return sum(t.numel for t in tensors if is_float(t.dtype))  # type: ignore[attr-defined]


def run_facts_fit(assume: Sequence[str], tensors: Sequence[object]) -> bool:
    """Does `run_facts` give `tensors` their facts (per-operation, and at most
    RUN_FACTS_BOUND float elements in all)?"""
    return bool(per_operation(assume)) and float_elements(tensors) <= RUN_FACTS_BOUND


def run_facts(assume: Sequence[str], model: FloatModel, tensors: Sequence[object]) -> list[z3.BoolRef]:
    """Under per-operation: the source's live tensors (those its outputs are computed from)
    hold no NaN (no-nan) / inf (no-inf), which is what a run that is not poison computes.
    Element by element, and only while they number at most RUN_FACTS_BOUND in all (fewer
    premises only make the check weaker, never wrong: `run_facts_fit`)."""
    if not run_facts_fit(assume, tensors):
        return []
    flags = per_operation(assume)
    floats = [t for t in tensors if is_float(t.dtype)]  # type: ignore[attr-defined]
    facts: list[z3.BoolRef] = []
    for t in floats:
        dom = model.domain(t.dtype)  # type: ignore[attr-defined]
        for k in range(t.numel):  # type: ignore[attr-defined]
            facts += [zf.Not(p) for p in excluded(flags, dom, t.at(k))]  # type: ignore[attr-defined]
    return facts


def live_facts(assume: Sequence[str], model: FloatModel, tensors: Sequence[object]
               ) -> list[tuple[z3.ExprRef, z3.ExprRef]]:
    """Premises for computed values: under per-operation, on the runs `run_facts` admits,
    the live tensors' elements are not NaN (no-nan) / inf (no-inf), so each element's atoms
    are False and, with both, its `self_difference` (x - x) is +0 (IEEE 754 6.3). As
    (term, value) pairs on the terms as built, for `tvtv.encode.canonical.Canonicalizer`'s
    `premises`, which simplifies them with the terms it canonicalizes.

    A computed atom's simplified form is no single atom (Z3 spreads "v is NaN" over v's case
    splits), and a fused `v - v` is an `ite` on both atoms that the simplifier merges: so
    the whole self-difference is a premise too, which the canonicalizer meets as one term
    where the output's simplification builds it alike (it simplifies bottom up). FuseTIR's
    seed-0 graph 19: TVM folds a group's `v - v` of a variance to 0 (docs/findings.md). Only
    for the tensors whose `run_facts` are premises of the check."""
    flags = per_operation(assume)
    out: list[tuple[z3.ExprRef, z3.ExprRef]] = []
    if not flags:
        return out
    false = z3.BoolVal(False)
    for t in tensors:
        if not is_float(t.dtype) or not t.numel:  # type: ignore[attr-defined]
            continue
        dom = model.domain(t.dtype)  # type: ignore[attr-defined]
        zero = z3.simplify(dom.zero())
        for k in range(t.numel):  # type: ignore[attr-defined]
            v = t.at(k)  # type: ignore[attr-defined]
            out += [(p, false) for p in decided_atoms(flags, dom, v)]
            if len(flags) == 2:
                out.append((dom.self_difference(v), zero))
    return out


def same_output(assume: Sequence[str], dom: ScalarDomain, a: z3.ExprRef, b: z3.ExprRef) -> z3.BoolRef:
    """Does target element `b` refine source element `a` under the assumptions?"""
    if not is_float(dom.dtype):
        return dom.same(a, b)
    ok = [dom.same(a, b)]
    if NO_SIGNED_ZEROS in assume:
        zero = dom.zero()
        ok.append(zf.And(dom.eq(a, zero), dom.eq(b, zero)))
    if NO_NAN in assume:
        ok.append(dom.is_nan(a))     # the source's NaN is poison: anything refines it
    if NO_INF in assume:
        ok.append(dom.is_inf(a))     # likewise a computed infinity
    return zf.Or(*ok) if len(ok) > 1 else ok[0]
