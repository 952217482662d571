"""Assumptions a user may state, as fast-math flags and Alive2 allow.

- `no-nan`:  no input element is NaN (LLVM's `nnan`, on the function's inputs).
- `no-inf`:  no input element is ±inf (`ninf`).
- `no-signed-zeros`: +0.0 and -0.0 are not distinguished in the outputs (`nsz`): an output
  element refines the source's when both are zeros of any sign.

They restrict the inputs (no-nan, no-inf) or weaken the output comparison (no-signed-zeros);
intermediate values may still become NaN or inf (inf - inf): the assumption is about what the
caller passes, not a promise that the program never produces them. Every assumption in force
is recorded in the result (`Result.assumptions`) and printed with the verdict.
"""
from __future__ import annotations

from typing import Iterable, Sequence

import z3

from tvtv.absfp.dtypes import is_float
from tvtv.absfp.interface import FloatModel, ScalarDomain

NO_NAN, NO_INF, NO_SIGNED_ZEROS = "no-nan", "no-inf", "no-signed-zeros"
ASSUMPTIONS: dict[str, str] = {
    NO_NAN: "no input element is NaN",
    NO_INF: "no input element is +inf or -inf",
    NO_SIGNED_ZEROS: "outputs are compared modulo the sign of zero",
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
    return tuple(sorted(out))


def describe(names: Sequence[str]) -> list[str]:
    """One printable line per assumption in force."""
    return [f"{n}: {ASSUMPTIONS[n]}" for n in names]


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
            conds = []
            if want_nan:
                conds.append(z3.Not(dom.is_nan(x)))
            if want_inf:
                conds.append(z3.Not(dom.is_inf(x)))
            return z3.And(*conds)
        n = t.numel  # type: ignore[attr-defined]
        if n <= EXPAND_BOUND:
            facts += [ok(t.at(k)) for k in range(n)]  # type: ignore[attr-defined]
        else:
            i = z3.BitVec("tvtv_assume_i", 32)
            facts.append(z3.ForAll([i], z3.Implies(z3.ULT(i, z3.BitVecVal(n, 32)), ok(t.at(i)))))  # type: ignore[attr-defined]
    return facts


def same_output(assume: Sequence[str], dom: ScalarDomain, a: z3.ExprRef, b: z3.ExprRef) -> z3.BoolRef:
    """Refinement equality of one output element under the assumptions."""
    if NO_SIGNED_ZEROS in assume and is_float(dom.dtype):
        zero = dom.zero()
        return z3.Or(dom.same(a, b), z3.And(dom.eq(a, zero), dom.eq(b, zero)))
    return dom.same(a, b)
