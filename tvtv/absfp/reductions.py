"""How a float model interprets the reductions the encoders leave uninterpreted.

`tvtv.encode.reduction.uf_of_terms` asks the encode context for an uninterpreted function
named `sum_<dtype>_<n>` (or `prod_...`) and applies it to the n terms (or to an array holding
them). Two arithmetic settings change what that function is:

- **reassociate** (default on): a float sum is a function of the *multiset* of its terms,
  whatever their order (Relax leaves the summation order unspecified, and TVM's passes and
  schedules reorder reductions freely). Encoded as mlir-tv §5.3 does, with a hash:
  `sum(t_1..t_n) = F(h(t_1) + ... + h(t_n))` with `h`, `F` uninterpreted, the hash an
  unbounded integer (mlir-tv uses bit-vectors; integers need no width argument, and Z3's
  arithmetic closes such sums under congruence fast), and `h(-0.0) = h(+0.0) = 0` (a
  zero term never changes a sum that starts from +0.0). Sound: some `h` is injective on
  the multisets the programs sum, zeros left out.
  Off: the sum is a function of the ordered term list (the reduction order is fixed).
- **real model**: a sum is the exact real sum of its terms, a product the exact product, a
  dot product (`dot_<dtype>_<n>` of two term arrays) the exact sum of products.

With reassociation on, the abstraction ladder's coarse "dot as a function" (`dot_<dtype>_<n>`)
is the hashed multiset of its products too: a dot product whose terms are permuted (a layout
change) is then the same value, which a function of the two term arrays cannot show without
array extensionality (Z3 times out on that).

`interpret` returns a callable to use instead of the uninterpreted function, or None.
"""
from __future__ import annotations

import re
from typing import Callable

import z3

from tvtv import z3fast as zf
from tvtv import z3raw
from tvtv.absfp.dtypes import is_float
from tvtv.absfp.interface import FloatModel

_NAME = re.compile(r"^(sum|prod|dot)_(\w+?)_(\d+)$")


def _terms(args: tuple, n: int, elem_sort: z3.SortRef) -> list[z3.ExprRef]:
    """The n terms of a reduction, given as n arguments or as one array holding them."""
    # (a lambda-built array is a QuantifierRef, not an ArrayRef: test the sort)
    if len(args) == 1 and args[0].sort().kind() == z3.Z3_ARRAY_SORT and n != 1:
        return z3raw.selects(args[0], n)
    return list(args)


def interpret(model: FloatModel, name: str, sorts: tuple[z3.SortRef, ...],
              reassociate: bool) -> Callable[..., z3.ExprRef] | None:
    m = _NAME.match(name)
    if m is None:
        return None
    kind, dtype, n = m.group(1), m.group(2), int(m.group(3))
    if not is_float(dtype):
        return None
    dom = model.domain(dtype)
    if kind == "dot":
        def products(a: z3.ExprRef, b: z3.ExprRef) -> list[z3.ExprRef]:
            return [dom.mul(x, y) for x, y in zip(z3raw.selects(a, n), z3raw.selects(b, n))]
        if model.name == "real":
            return lambda a, b: dom.sum(products(a, b))
        if not reassociate:
            return None     # the coarse "dot as a function" rung of the abstraction ladder
        h, f = _hash_functions(model, "sum", dtype, dom)
        return lambda a, b: f(z3raw.sum_of_applications(h, products(a, b)))
    if model.name == "real":
        flat = dom.sum if kind == "sum" else dom.prod

        def exact(*args: z3.ExprRef) -> z3.ExprRef:
            return flat(_terms(args, n, dom.sort))
        return exact
    if not reassociate:
        return None
    h, f = _hash_functions(model, kind, dtype, dom)

    def multiset(*args: z3.ExprRef) -> z3.ExprRef:
        return f(z3raw.sum_of_applications(h, _terms(args, n, dom.sort)))
    return multiset


def _hash_functions(model: FloatModel, kind: str, dtype: str, dom) -> tuple[z3.FuncDeclRef, z3.FuncDeclRef]:
    """`h` (term -> Int) and `F` (Int -> value) of the multiset encoding, with h(unit) = 0."""
    h = z3.Function(f"absfp_hash_{kind}_{dtype}", dom.sort, z3.IntSort())
    f = z3.Function(f"absfp_{kind}_of_hash_{dtype}", z3.IntSort(), dom.sort)
    if kind == "sum":
        # Neither zero changes a sum: every sum this function stands for starts from +0.0
        # (`reduce_sum`, and a TIR loop from +0.0), and an IEEE sum is -0.0 only when all
        # its addends are -0.0 (x + -x = +0.0 under roundTiesToEven, IEEE 754 §6.3), so no
        # order of such a sum gives -0.0. A -0.0 term then changes no partial sum except a
        # zero's sign, and a +0.0 term turns only a -0.0 partial sum into +0.0: either way
        # the result, never -0.0, is the same (checked over every order of small multisets
        # of special values: tests/test_hash_zero_terms.py). So a padding zero, or a
        # product 0 * w with w finite, is no term at all.
        model.hash_facts[h.name()] = zf.And(h(dom.const(-0.0)) == 0, h(dom.const(0.0)) == 0)
    else:
        model.hash_facts[h.name()] = h(dom.const(1.0)) == 0   # multiplying by 1 changes nothing
    return h, f
