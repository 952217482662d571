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

import math
from typing import Any, Callable, Sequence

import numpy as np
import z3

from tvtv.absfp.dtypes import is_float, numpy_dtype
from tvtv.encode.tensor import INDEX, Tensor

SPECIALS = (float("-inf"), float("inf"), float("nan"), 0.0, -0.0, 1.0, -1.0,
            3.4028234663852886e38, -3.4028234663852886e38, 0.5, 2.0)
# Largest output examined element by element.
MAX_ELEMENTS = 256


def probe(inputs: Sequence[tuple[str, Tensor]], outputs: Sequence[tuple[Tensor, Tensor]],
          conditions: Sequence[z3.BoolRef], domain: Callable[[str], Any],
          same: Callable[[Any, z3.ExprRef, z3.ExprRef], z3.BoolRef]
          ) -> tuple[dict[str, np.ndarray], int, int, z3.ExprRef, z3.ExprRef] | None:
    """(inputs, output k, flat index, source element, target element) of a difference found
    by filling every float input with one special value (ints with 0), or None."""
    if not inputs or any(not isinstance(t.arr, z3.ArrayRef) or not z3.is_const(t.arr)
                         for _, t in inputs):
        return None
    for value in SPECIALS:
        subst, concrete = [], {}
        for name, t in inputs:
            v = value if is_float(t.dtype) else 0
            dom = domain(t.dtype)
            subst.append((t.arr, z3.K(INDEX, dom.const(v))))
            with np.errstate(over="ignore"):   # ±FLT_MAX is ±inf in float16, as dom.const
                concrete[name] = np.full(t.shape, v, dtype=numpy_dtype(t.dtype))
        ok = z3.simplify(z3.substitute(z3.And(*conditions), *subst)) if conditions else z3.BoolVal(True)
        if not z3.is_true(ok):
            continue
        for k, (a, b) in enumerate(outputs):
            if a.numel > MAX_ELEMENTS:
                continue
            dom = domain(a.dtype)
            for j in range(a.numel):
                x = z3.simplify(z3.substitute(a.at(j), *subst))
                y = z3.simplify(z3.substitute(b.at(j), *subst))
                if z3.is_false(z3.simplify(same(dom, x, y))) or _free_choice(x, y) \
                        or _free_choice(y, x):
                    return concrete, k, j, x, y
    return None


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
