"""Concrete probing before solving: evaluate an encoded check on inputs filled with one
special value (±0, ±inf, NaN, ±FLT_MAX, ±1) by substitution and simplification.

Used in the IEEE model, where an approximation (FastMathTransform's polynomial exp) is a
large floating-point circuit the solver bit-blasts slowly, while the difference shows at
once on a special value (exp(-inf) = 0, the polynomial gives 1.2e-38). A probe that
simplifies "defined, and some output element differs" to true is a real counterexample of
the encoding (no solver involved), and so is an element that is an uninterpreted function
of constants on one side (the source's exp(1.0)) and a constant on the other (the
polynomial's value): the encoding leaves the function's value open, so it may differ; such
a counterexample is then confirmed or not by execution on the VM, like any other.
Anything else that does not simplify to a constant is skipped.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np
import z3

from tvtv import z3fast as zf
from tvtv.absfp.dtypes import is_float, numpy_dtype
from tvtv.encode.evaluate import certainly_holds, libm_numeral, libm_truth
from tvtv.encode.tensor import INDEX, Tensor

SPECIALS = (float("-inf"), float("inf"), float("nan"), 0.0, -0.0, 1.0, -1.0,
            3.4028234663852886e38, -3.4028234663852886e38, 0.5, 2.0)
# Largest output examined element by element.
MAX_ELEMENTS = 256
# the solver's budget for a condition simplification leaves open, per probe (a probe only
# saves the solver's query; when it gives up, the query decides)
HOLDS_TIMEOUT_MS = 1000


def probe(inputs: Sequence[tuple[str, Tensor]], outputs: Sequence[tuple[Tensor, Tensor]],
          conditions: Sequence[z3.BoolRef], domain: Callable[[str], Any],
          same: Callable[[Any, z3.ExprRef, z3.ExprRef], z3.BoolRef]
          ) -> tuple[dict[str, np.ndarray], int, int, z3.ExprRef, z3.ExprRef] | None:
    """(inputs, output k, flat index, source element, target element) of a difference found
    by filling every float input with one special value (ints with 0), or None. A module
    without inputs (a hamming_window) is evaluated once, as it is."""
    if any(not isinstance(t.arr, z3.ArrayRef) or not z3.is_const(t.arr) for _, t in inputs):
        return None
    for value in SPECIALS if inputs else SPECIALS[:1]:
        subst, concrete = [], {}
        for name, t in inputs:
            v = value if is_float(t.dtype) else 0
            dom = domain(t.dtype)
            subst.append((t.arr, z3.K(INDEX, dom.const(v))))
            with np.errstate(over="ignore"):   # ±FLT_MAX is ±inf in float16, as dom.const
                concrete[name] = np.full(t.shape, v, dtype=numpy_dtype(t.dtype))
        if not holds(conditions, subst):
            continue
        found = constant_difference(outputs, domain, same, subst, free_choice=True)
        if found is not None:
            return (concrete, *found)
    if not inputs:
        found = libm_difference(outputs, conditions, domain, same)
        if found is not None:
            return ({}, *found)
    return None


def libm_difference(outputs: Sequence[tuple[Tensor, Tensor]], conditions: Sequence[z3.BoolRef],
                    domain: Callable[[str], Any],
                    same: Callable[[Any, z3.ExprRef, z3.ExprRef], z3.BoolRef]
                    ) -> tuple[int, int, z3.ExprRef, z3.ExprRef] | None:
    """(output k, flat index, source element, target element) of a difference of a module
    without inputs under ONE interpretation of its functions: numpy's (the C library's)
    values for functions of numerals, sums and products (`evaluate.libm_numeral`), or None.

    A module without inputs has nothing for the solver to choose but those functions' values,
    and where a difference hangs on them (hamming_window's angle one ulp apart:
    cos(a) against cos(a + ulp), both open) the solver's bit-exact float64 queries run out
    of time (10 s each, measured) where the C library's values decide at once. Every value
    is allowed: the encoding puts a function's laws (range bounds, special values) in the
    term itself, and the conditions (the model's facts, definedness) must come out true
    under the same values. Execution on the VM confirms or not, as for any counterexample."""
    if conditions and libm_truth(zf.And(*conditions)) is not True:
        return None
    for k, (a, b) in enumerate(outputs):
        if a.numel > MAX_ELEMENTS:
            continue
        dom = domain(a.dtype)
        for j in range(a.numel):
            x, y = libm_numeral(a.at(j)), libm_numeral(b.at(j))
            if x is not None and y is not None and z3.is_false(z3.simplify(same(dom, x, y))):
                return k, j, x, y
    return None


def holds(conditions: Sequence[z3.BoolRef], subst: Sequence[tuple[z3.ExprRef, z3.ExprRef]] = ()
          ) -> bool:
    """Do `conditions`, after substitution, hold for every value of the uninterpreted
    functions? Decided by simplification, else by a solver within `HOLDS_TIMEOUT_MS` (a
    PrimFunc's well-definedness on concrete inputs is a quantified condition, "no loop index
    reads out of range", which simplification leaves open; `evaluate.certainly_holds`)."""
    if not conditions:
        return True
    return certainly_holds(z3.substitute(zf.And(*conditions), *subst), HOLDS_TIMEOUT_MS)


def constant_difference(outputs: Sequence[tuple[Tensor, Tensor]], domain: Callable[[str], Any],
                        same: Callable[[Any, z3.ExprRef, z3.ExprRef], z3.BoolRef],
                        subst: Sequence[tuple[z3.ExprRef, z3.ExprRef]] = (),
                        free_choice: bool = False, first: tuple[int, int] | None = None
                        ) -> tuple[int, int, z3.ExprRef, z3.ExprRef] | None:
    """(output k, flat index, source element, target element) of an element whose source and
    target, after substitution and simplification, are not the same for any interpretation
    of the uninterpreted functions ("same" simplifies to false), or None. `free_choice` also
    takes an uninterpreted function of constants against a constant (`_free_choice`: SOME
    interpretation differs). The element `first` (k, flat) is tried before the others;
    outputs of more than MAX_ELEMENTS elements are skipped (apart from `first`); of the
    others, the first element in index order that differs is named."""
    if first is not None and (found := _first_difference(outputs, first[0], [first[1]], domain,
                                                         same, subst, free_choice)) is not None:
        return found
    for k, (a, _) in enumerate(outputs):
        if a.numel > MAX_ELEMENTS:
            continue
        flats = [j for j in range(a.numel) if (k, j) != first]
        found = _first_difference(outputs, k, flats, domain, same, subst, free_choice)
        if found is not None:
            return found
    return None


def _first_difference(outputs: Sequence[tuple[Tensor, Tensor]], k: int, flats: list[int],
                      domain: Callable[[str], Any],
                      same: Callable[[Any, z3.ExprRef, z3.ExprRef], z3.BoolRef],
                      subst: Sequence[tuple[z3.ExprRef, z3.ExprRef]], free_choice: bool
                      ) -> tuple[int, int, z3.ExprRef, z3.ExprRef] | None:
    """`constant_difference` on the elements `flats` of output k, in that order: their
    source and target terms substituted and simplified together, then their "same" terms."""
    if not flats:
        return None
    a, b = outputs[k]
    n = len(flats)
    both = _simplified([*[a.at(j) for j in flats], *[b.at(j) for j in flats]], subst)
    xs, ys = both[:n], both[n:]
    # one term on both sides is the same value whatever the functions in it mean (and is
    # not a function of constants against a numeral): only the others are asked
    open_ = [(j, x, y) for j, x, y in zip(flats, xs, ys) if not z3.eq(x, y)]
    if not open_:
        return None
    dom = domain(a.dtype)
    verdicts = _simplified([same(dom, x, y) for _, x, y in open_], ())
    for (j, x, y), v in zip(open_, verdicts):
        if z3.is_false(v) or free_choice and (_free_choice(x, y) or _free_choice(y, x)):
            return k, j, x, y
    return None


def _simplified(terms: list[z3.ExprRef], subst: Sequence[tuple[z3.ExprRef, z3.ExprRef]]
                ) -> list[z3.ExprRef]:
    """Each of `terms` substituted by `subst` and simplified, in one substitution and one
    simplification: the terms are the arguments of one application of a fresh uninterpreted
    function, which Z3's simplifier rewrites bottom up without context, so each argument
    becomes the term it would alone (as `canonical.Canonicalizer.many`), while the subterms
    the elements share (a row's sum, a padded input) are rewritten once, not once per element
    (measured: a clip lemma's probe of 11 special values took 0.41 s element by element)."""
    if len(terms) == 1:
        t = z3.substitute(terms[0], *subst) if subst else terms[0]
        return [z3.simplify(t)]
    batch = z3.Function("tvtv_probe_batch", *[t.sort() for t in terms], z3.BoolSort())
    app = batch(*terms)
    out = z3.simplify(z3.substitute(app, *subst) if subst else app)
    return [out.arg(i) for i in range(len(terms))]


def _free_choice(x: z3.ExprRef, y: z3.ExprRef) -> bool:
    """x is an uninterpreted function applied to constants and y a constant: some
    interpretation of the function makes them differ (the encoding leaves that value
    open, e.g. the source's exp(1.0) against a polynomial's exact result)."""
    while z3.is_app(x) and x.decl().kind() in (z3.Z3_OP_FPA_ABS, z3.Z3_OP_FPA_NEG):
        x = x.arg(0)   # |f(c)| or -f(c) still takes at least two values as f(c) varies
    if not (z3.is_app(x) and x.decl().kind() == z3.Z3_OP_UNINTERPRETED and x.num_args() > 0):
        return False
    if not all(_is_numeral(a) for a in x.children()):
        return False
    return _is_numeral(y)


def _is_numeral(t: z3.ExprRef) -> bool:
    return z3.is_fp_value(t) or z3.is_bv_value(t) or z3.is_int_value(t) or z3.is_rational_value(t)
