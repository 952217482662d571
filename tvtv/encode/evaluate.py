"""Evaluate encodings on concrete inputs, without a solver where possible.

Used by conformance tests (an op's encoding against numpy) and to check that a
counterexample's inputs really separate source and target in the IEEE model.
An element that depends on an uninterpreted function (exp, tanh, an opaque PrimFunc ...)
does not simplify to a numeral; it comes back as `None` ("not determined by the model").
"""
from __future__ import annotations

import math
import re
import time
from typing import Any, Sequence

import numpy as np
import z3

from tvtv import z3fast as zf
from tvtv import z3raw
from tvtv.absfp.abstract import round_to
from tvtv.absfp.dtypes import FLOAT_FORMATS, numpy_dtype
from tvtv.absfp.ieee import IEEEModel, fp_value
from tvtv.absfp.interface import FloatModel
from tvtv.encode import registry
from tvtv.encode.context import EncodeContext
from tvtv.encode.determined import DETERMINED
from tvtv.encode.tensor import Tensor
from tvtv.encode.values import PrimScalar, Shape, Value, flatten
from tvtv.ir import program as P


# `certainly_holds`: the solver's limit (ms) for a condition simplification leaves open
HOLDS_TIMEOUT_MS = 5000


def certainly_holds(cond: z3.BoolRef, timeout_ms: int = HOLDS_TIMEOUT_MS) -> bool:
    """Does `cond` hold for every value of what is left open in it (uninterpreted functions
    such as exp)? Simplification decides most conditions of a concrete evaluation; a
    quantified one it cannot (a fused PrimFunc's well-definedness on concrete inputs is
    "no loop index i in range reads out of bounds", `Not(Exists(i, ...))`: measured on the
    zero pipeline's seed-0 graph 3, whose every input set was judged undefined until this
    asked a solver, which answers in milliseconds). False when the solver finds a case
    where it fails or gives up."""
    s = z3.simplify(cond)
    for decide in (lambda c: c, decide_quantifiers):
        s = decide(s)
        if z3.is_true(s):
            return True
        if z3.is_false(s):
            return False
    solver = z3.Solver()
    solver.set("timeout", timeout_ms)
    solver.add(zf.Not(s))
    return solver.check() == z3.unsat


# `decide_quantifiers`: the solver's limit (ms) for one quantifier's body, and for all of them
QUANTIFIER_TIMEOUT_MS = 2000
QUANTIFIERS_BUDGET_MS = 5000


def decide_quantifiers(cond: z3.BoolRef, timeout_ms: int = QUANTIFIER_TIMEOUT_MS,
                       budget_ms: int = QUANTIFIERS_BUDGET_MS) -> z3.BoolRef:
    """`cond` with each outermost quantified subformula that is the same for every value of
    what is left open replaced by that value, and simplified: `Exists(i, B)` by False when B
    is unsatisfiable with i free, `ForAll(i, B)` by True when not-B is. Each is asked alone,
    with the rest of `cond` out of the query, within `timeout_ms`, and none is begun after
    `budget_ms` in all (a quantifier left undecided stays as it is).

    A PrimFunc's well-definedness is a conjunction of `Not(Exists(i, i < n and load i is out
    of bounds))`, one per guarded load (`tvtv.encode.tensor.close_over_live_indices`). On
    concrete inputs each is decided in milliseconds alone; together the solver needs far
    longer: the legalized module of GenCoG seed-0 graph 1 (a padded conv3d and 22 more such
    loads) took 7 s in one query, past `HOLDS_TIMEOUT_MS`, so every input set was judged
    undefined and no counterexample could be confirmed; asked one by one, 0.35 s.
    Replacing a subformula by a value it has under every interpretation is sound in any
    polarity."""
    deadline = time.perf_counter() + budget_ms / 1000
    solver = z3.Solver()
    solver.set("timeout", timeout_ms)
    pairs = []
    for q, _ in _outermost_where(cond, lambda e: e if z3.is_quantifier(e) else None):
        if time.perf_counter() > deadline:
            break
        consts = [z3.FreshConst(q.var_sort(k), "q") for k in range(q.num_vars())]
        body = z3.substitute_vars(q.body(), *reversed(consts))   # Var(0) is the last bound
        if q.is_exists():
            query, value = body, z3.BoolVal(False)
        elif q.is_forall():
            query, value = zf.Not(body), z3.BoolVal(True)
        else:
            continue
        solver.push()
        solver.add(query)
        if solver.check() == z3.unsat:
            pairs.append((q, value))
        solver.pop()
    return z3.simplify(z3.substitute(cond, *pairs)) if pairs else cond


def element_value(term: z3.ExprRef, dtype: str) -> Any:
    """The concrete value of a closed term, or None when it is not a numeral."""
    return _numeral_value(z3.simplify(term), dtype)


def _numeral_value(v: z3.ExprRef, dtype: str) -> Any:
    """The value of a simplified term when it is a numeral, else None."""
    if z3.is_true(v):
        return True
    if z3.is_false(v):
        return False
    if z3.is_fp_value(v):
        return fp_value(v, dtype)
    if z3.is_bv_value(v):
        iv = v.as_long()
        bits = v.size()
        if dtype.startswith("int") and iv >> (bits - 1):
            iv -= 1 << bits
        return iv
    return None


# numpy's (the C library's) float functions, for `libm_value`; keyed by the name in the IEEE
# model's uninterpreted function `ieee_<name>_<dtype>` (`tvtv.absfp.ieee.IEEEModel._uf`)
_LIBM: dict[str, Any] = {
    "exp": np.exp, "log": np.log, "rsqrt": lambda x: 1.0 / np.sqrt(x), "tanh": np.tanh,
    "sigmoid": lambda x: 1.0 / (1.0 + np.exp(-x)), "erf": np.vectorize(math.erf),
    "sin": np.sin, "cos": np.cos, "tan": np.tan, "asin": np.arcsin, "acos": np.arccos,
    "atan": np.arctan, "sinh": np.sinh, "cosh": np.cosh, "asinh": np.arcsinh,
    "acosh": np.arccosh, "atanh": np.arctanh, "pow": np.power, "atan2": np.arctan2,
    "fmod": np.fmod, "log_add_exp": np.logaddexp,
}
_IEEE_UF = re.compile(r"^ieee_(.+)_(float16|bfloat16|float32|float64)$")
# substitution rounds of `libm_value` (each resolves one layer of nested function calls)
LIBM_ROUNDS = 64


# the uninterpreted sums and products of `tvtv/encode/reduction.py` (`uf_of_terms`, named
# through `context.shared_uf`): of n scalar terms, or of an array holding them at 0..n-1
_REDUCTION_UF = re.compile(r"^(sum|prod)_(float16|bfloat16|float32|float64)_(\d+)__\d+$")


def _reduction_terms(app: z3.ExprRef) -> list[z3.ExprRef] | None:
    """The terms an uninterpreted sum/product reduces, when all are numerals."""
    m = _REDUCTION_UF.match(app.decl().name())
    if m is None:
        return None
    n = int(m.group(3))
    # (an array argument may be a lambda, which z3.is_array does not count as one)
    if app.num_args() == 1 and app.arg(0).sort().kind() == z3.Z3_ARRAY_SORT:
        terms = [z3.simplify(zf.Select(app.arg(0), z3.BitVecVal(k, 32))) for k in range(n)]
    else:
        terms = list(app.children())
    return terms if len(terms) == n and all(z3.is_fp_value(t) for t in terms) else None


def _outermost_where(term: z3.ExprRef, pick: Any) -> list[tuple[z3.ExprRef, Any]]:
    """(subterm, value) for the outermost subterms of `term` that `pick` gives a value (not
    None: look inside instead, when the subterm is an application), each shared subterm
    visited once."""
    seen: set[int] = set()
    found: list[tuple[z3.ExprRef, Any]] = []
    stack = [term]
    while stack:
        t = stack.pop()
        if t.get_id() in seen:
            continue
        seen.add(t.get_id())
        value = pick(t)
        if value is not None:
            found.append((t, value))
        elif z3.is_app(t):
            stack.extend(t.children())
    return found


def _outermost(term: z3.ExprRef, value_of: Any) -> list[tuple[z3.ExprRef, z3.ExprRef]]:
    """(application, value) for the outermost applications in `term` that `value_of` gives a
    value (a numeral term; None: look inside instead), each shared subterm visited once;
    `value_of` is asked only of applications of uninterpreted functions with arguments
    (every function valued here is one: exp, erf, sums, products), in a raw walk
    (`z3raw.outermost_applications`)."""
    return z3raw.outermost_applications(term, value_of)


def _libm_value_of(t: z3.ExprRef) -> z3.ExprRef | None:
    """numpy's value of an IEEE-model function application, or of a float sum or product,
    on numerals (`_libm_apply`); None for anything else."""
    m = _IEEE_UF.match(t.decl().name())
    if m and m.group(1) in _LIBM and all(z3.is_fp_value(a) for a in t.children()):
        return _libm_apply(t, None)
    terms = _reduction_terms(t)
    return _libm_apply(t, terms) if terms is not None else None


def _libm_apply(app: z3.ExprRef, terms: list[z3.ExprRef] | None) -> z3.ExprRef:
    """numpy's value of `app`: a float sum or product of `terms` (its numerals), or with
    `terms` None an IEEE-model function of numerals."""
    if terms is not None:    # a sum or product, in double precision, rounded once
        m = _REDUCTION_UF.match(app.decl().name())
        assert m is not None
        kind, dtype = m.group(1), m.group(2)
        vals = np.array([fp_value(t, dtype) for t in terms], dtype=np.float64)
        with np.errstate(all="ignore"):
            out = float(vals.sum() if kind == "sum" else vals.prod())
        return _fp_numeral(out, dtype, app.sort())
    m = _IEEE_UF.match(app.decl().name())
    assert m is not None
    fname, dtype = m.group(1), m.group(2)
    args = [np.float64(fp_value(a, dtype)) for a in app.children()]
    with np.errstate(all="ignore"):
        out = float(np.float64(_LIBM[fname](*args)))
    return _fp_numeral(out, dtype, app.sort())


def _fp_numeral(out: float, dtype: str, sort: z3.SortRef) -> z3.ExprRef:
    """`out` rounded to `dtype`, as a numeral of `sort`."""
    out = float(round_to(out, dtype))
    if math.isnan(out):
        return z3.fpNaN(sort)
    if math.isinf(out):
        return z3.fpMinusInfinity(sort) if out < 0 else z3.fpPlusInfinity(sort)
    if out == 0.0:
        return z3.fpMinusZero(sort) if math.copysign(1.0, out) < 0 else z3.fpPlusZero(sort)
    return z3.FPVal(out, sort)


def libm_value(term: z3.ExprRef, dtype: str) -> Any:
    """The value of a closed IEEE-model term with its uninterpreted float functions (exp,
    tanh, erf, ...) and float sums and products given numpy's values in double precision,
    rounded to the dtype once: what a run with the C library's functions computes, up to an
    ulp of those functions and the summation order. None when something else stays open (an
    opaque PrimFunc, a dot product's function). For questions a
    last ulp does not decide, such as whether a run computes a NaN or an infinity
    (`tvtv.confirm.poisoned_inside`); never a counterexample's confirmation."""
    v = _libm_resolve(term, lambda v: element_value(v, dtype) is not None)
    return None if v is None else element_value(v, dtype)


def libm_truth(term: z3.BoolRef) -> bool | None:
    """The truth of a closed Boolean IEEE-model term with `libm_value`'s values for its
    functions, sums and products; None when it stays open. One simplification walks the
    terms its parts share once: "is any of these elements NaN" over a whole run's tensors
    costs one walk, where `libm_value` per element walked every element's whole history
    (measured: over 60 s for zero graph 20's 3,000 live elements, which share layer_norm's
    and conv2d's sums)."""
    v = _libm_resolve(term, lambda v: z3.is_true(v) or z3.is_false(v))
    return None if v is None else z3.is_true(v)


def libm_numeral(term: z3.ExprRef) -> z3.ExprRef | None:
    """`term` with `libm_value`'s values for its functions, sums and products, when that
    makes it a numeral (a float, bit-vector or Boolean constant); None when it stays open.
    Those values are one interpretation of the uninterpreted functions among all."""
    return _libm_resolve(term, lambda v: z3.is_true(v) or z3.is_false(v) or z3.is_fp_value(v)
                         or z3.is_bv_value(v))


def _libm_resolve(term: z3.ExprRef, done: Any) -> z3.ExprRef | None:
    """`term` simplified, with the function applications on numerals replaced by their
    values, round by round, until `done(term)`; None if it stays open."""
    return _resolve(term, done, lambda v: _outermost(v, _libm_value_of))


def _resolve(term: z3.ExprRef, done: Any, values: Any) -> z3.ExprRef | None:
    """`term` simplified, with the applications `values(term)` gives as (application, its
    value) substituted, round by round, until `done(term)`; None if it stays open."""
    v = z3.simplify(term)
    for _ in range(LIBM_ROUNDS):
        if done(v):
            return v
        pairs = values(v)
        if not pairs:
            return None
        v = z3.simplify(z3.substitute(v, *pairs))
    return None


# Sums of up to this many terms are evaluated in every summation order: every binary tree of
# roundings (commutative: (2n-3)!! trees, 10,395 for 7), memoized by the subset of terms
# summed, giving up once a subset's sums take more than ORDER_VALUES_CAP values.
ORDER_TREES_UPTO = 7
ORDER_VALUES_CAP = 256
# numpy adds these dtypes with one IEEE rounding per operation (float16 and bfloat16 go
# through float32 and round twice, so their trees are not evaluated)
_ONE_ROUNDING = {"float32": np.float32, "float64": np.float64}


def order_free_sum(values: Sequence[float], dtype: str) -> float | None:
    """The value every summation order of `values` gives in `dtype` (each an IEEE
    round-to-nearest-even sum, in any order and grouping), or None when two orders differ,
    or it cannot be told. A reduction's specification leaves the order open, so only such a
    value is *the* specification's value: TVM's loop, in index order, may give any of them.

    Up to ORDER_TREES_UPTO terms (float32, float64) every tree is evaluated. Beyond, the sum
    is order-free when it is exact in every order: all terms finite and integer multiples of
    2^e, with sum(|t|) < 2^(e + precision) and ≤ the dtype's largest value, so that every
    partial sum is a representable multiple of 2^e. An exact zero sum is +0 unless every
    term is -0 (IEEE 754 §6.3: x + (-x) = +0 in round-to-nearest, -0 + -0 = -0). It is also
    order-free when one term absorbs all the others (`_absorbed_sum`)."""
    vals = [float(v) for v in values]
    if not vals:
        return None
    if len(vals) <= ORDER_TREES_UPTO and dtype in _ONE_ROUNDING:
        return _every_tree(vals, _ONE_ROUNDING[dtype])
    exact = _exact_sum(vals, dtype)
    if exact is not None:
        return exact
    absorbed = _absorbed_sum(vals, dtype)
    return absorbed if absorbed is not None else _infinite_sum(vals, dtype)


def _every_tree(vals: list[float], kind: Any) -> float | None:
    """The value every binary tree of roundings of `vals` gives (`kind`: the numpy scalar
    type), or None when two trees differ or they take too many values."""
    found = _tree_values(vals, kind)
    return found[0] if found is not None and len(found) == 1 else None


def _tree_values(vals: list[float], kind: Any) -> list[float] | None:
    """Every value a binary tree of roundings of `vals` gives (NaN once), or None when a
    subset's sums take more than ORDER_VALUES_CAP values."""
    terms = [kind(v) for v in vals]
    memo: dict[int, dict[Any, Any]] = {}

    def key(x: Any) -> Any:
        return "nan" if np.isnan(x) else x.tobytes()

    def sums(mask: int) -> dict[Any, Any] | None:
        if mask in memo:
            return memo[mask]
        if mask & (mask - 1) == 0:
            t = terms[mask.bit_length() - 1]
            memo[mask] = {key(t): t}
            return memo[mask]
        low = mask & -mask
        rest = mask ^ low
        out: dict[Any, Any] = {}
        sub = rest
        while True:   # the part holding the lowest term, and the nonempty rest
            a, b = sub | low, mask ^ (sub | low)
            if b:
                sa, sb = sums(a), sums(b)
                if sa is None or sb is None:
                    return None
                for x in sa.values():
                    for y in sb.values():
                        s = x + y
                        out[key(s)] = s
                if len(out) > ORDER_VALUES_CAP:
                    return None
            if sub == 0:
                break
            sub = (sub - 1) & rest
        memo[mask] = out
        return out

    with np.errstate(all="ignore"):
        found = sums((1 << len(terms)) - 1)
    return None if found is None else [float(v) for v in found.values()]


def order_sum_values(values: Sequence[float], dtype: str) -> list[float] | None:
    """Every value the summation orders of `values` give in `dtype`: `order_free_sum`'s one
    value where it has one, else, up to ORDER_TREES_UPTO float32/float64 terms, every tree's
    (at most ORDER_VALUES_CAP of them); None when that cannot be told."""
    vals = [float(v) for v in values]
    if vals and len(vals) <= ORDER_TREES_UPTO and dtype in _ONE_ROUNDING:
        return _tree_values(vals, _ONE_ROUNDING[dtype])     # (order_free_sum's trees, all)
    one = order_free_sum(vals, dtype)
    return None if one is None else [one]


def _exact_sum(vals: list[float], dtype: str) -> float | None:
    from fractions import Fraction
    if not all(math.isfinite(v) for v in vals):
        return None
    fmt = FLOAT_FORMATS[dtype]      # sbits: the significand's bits, the hidden one included
    nonzero = [Fraction(v) for v in vals if v != 0.0]
    if not nonzero:
        return -0.0 if all(math.copysign(1.0, v) < 0 for v in vals) else 0.0
    # e: the largest power of two every term is an integer multiple of
    e = min((f.numerator & -f.numerator).bit_length() - 1 - (f.denominator.bit_length() - 1)
            for f in nonzero)
    magnitude = sum(abs(f) for f in nonzero)
    if magnitude >= Fraction(2) ** (e + fmt.sbits) or magnitude > Fraction(fmt.max_value):
        return None
    total = sum(nonzero)
    return float(total) if total != 0 else 0.0   # exact: float() of a representable value


def _absorbed_sum(vals: list[float], dtype: str) -> float | None:
    """M, when every summation order of `vals` gives the term M of largest magnitude: M is
    finite, nonzero and the only term of its magnitude, and the other terms' magnitudes sum
    to S with S * (1 + u)^n < s/2, u = 2^-precision, s the spacing of `dtype` just below |M|
    (which is at most the spacing above). In any order, M meets only partial sums T of
    other terms, whose rounding errors keep |T| ≤ S * (1 + u)^n (each addition rounds by
    at most a factor 1 + u); so M + T lies strictly within half a spacing of M and rounds to
    M (round to nearest, no tie), by induction up to the root. (The +0.0 a sum starts from
    is one more term of magnitude 0.) None otherwise."""
    from fractions import Fraction
    if not all(math.isfinite(v) for v in vals):
        return None
    fmt = FLOAT_FORMATS[dtype]
    nonzero = [Fraction(v) for v in vals if v != 0.0]
    if len(nonzero) < 2:
        return None              # `_exact_sum`'s case
    big = max(nonzero, key=abs)
    if sum(1 for f in nonzero if abs(f) == abs(big)) > 1:
        return None
    rest = sum(abs(f) for f in nonzero) - abs(big)
    growth = (1 + Fraction(1, 2 ** fmt.sbits)) ** (len(vals) + 1)
    if 2 * rest * growth < _spacing_below(abs(big), fmt):
        return float(big)
    return None


def _infinite_sum(vals: list[float], dtype: str) -> float | None:
    """±inf, when every summation order of `vals` gives it: no NaN, every infinite term of
    one sign, and the finite terms' magnitudes sum to S with S * (1 + 2u)^(n+1) at most the
    dtype's largest finite value (u = 2^-precision). A partial sum of finite terms then stays
    within that bound (each addition rounds by at most a factor 1 + u, 1 + 2u covering the
    float32-then-half double rounding of float16/bfloat16 adds), so it rounds to a finite
    value and never to the other infinity; a partial sum holding an infinity is that
    infinity (inf + finite = inf, inf + inf = inf; IEEE 754 §6.1), and the root holds all
    the terms. (A row of conv products that overflow to -inf beside padding zeros.) None
    otherwise."""
    from fractions import Fraction
    if any(math.isnan(v) for v in vals):
        return None
    infinities = {v for v in vals if math.isinf(v)}
    if len(infinities) != 1:
        return None
    fmt = FLOAT_FORMATS[dtype]
    finite = sum((abs(Fraction(v)) for v in vals if math.isfinite(v)), Fraction(0))
    growth = (1 + Fraction(2, 2 ** fmt.sbits)) ** (len(vals) + 1)
    if finite * growth <= Fraction(fmt.max_value):
        return infinities.pop()
    return None


def _spacing_below(m: Any, fmt: Any) -> Any:
    """The distance from the positive representable `m` (a Fraction) of format `fmt` to the
    next representable number below it: 2^(e - p + 1) for m in [2^e, 2^(e+1)), 2^(e - p) at
    m = 2^e itself, and the smallest subnormal at or below the smallest normal."""
    from fractions import Fraction
    emin = 2 - 2 ** (fmt.ebits - 1)
    e = m.numerator.bit_length() - m.denominator.bit_length()
    if Fraction(2) ** e > m:
        e -= 1
    if e <= emin:                # subnormal, or the smallest normal
        return Fraction(2) ** (emin - fmt.sbits + 1)
    return Fraction(2) ** (e - fmt.sbits + (0 if m == Fraction(2) ** e else 1))


def _order_free_value_of(t: z3.ExprRef) -> z3.ExprRef | None:
    """The value of an uninterpreted float sum of numerals that every summation order gives
    (`order_free_sum`), or of a specification function of numerals that every reading of
    it gives (`tvtv.encode.determined`); None for anything else."""
    f = _IEEE_UF.match(t.decl().name())
    if f is not None and f.group(1) in DETERMINED and all(z3.is_fp_value(a) for a in t.children()):
        dtype = f.group(2)
        value = DETERMINED[f.group(1)]([fp_value(a, dtype) for a in t.children()], dtype)
        return None if value is None else _fp_numeral(value, dtype, t.sort())
    m = _REDUCTION_UF.match(t.decl().name())
    terms = _reduction_terms(t) if m is not None and m.group(1) == "sum" else None
    if m is None or terms is None:
        return None
    dtype = m.group(2)
    value = order_free_sum([fp_value(x, dtype) for x in terms], dtype)
    return None if value is None else _fp_numeral(value, dtype, t.sort())


def exact_value(term: z3.ExprRef, dtype: str) -> Any:
    """`element_value`, with the uninterpreted float sums in `term` whose terms are numerals
    and that every summation order gives one value replaced by that value
    (`order_free_sum`): the value of a closed IEEE-model term as every run computes it,
    whatever order its sums take. None when something else stays open (exp, an opaque
    PrimFunc, a sum whose orders differ). Sound for confirming a counterexample."""
    v = _resolve(term, lambda v: element_value(v, dtype) is not None,
                 lambda v: _outermost(v, _order_free_value_of))
    return None if v is None else element_value(v, dtype)


def cpu_value(term: z3.ExprRef, dtype: str) -> Any:
    """`exact_value`, with the IEEE model's functions of numerals that TIR shares with the
    specifications (exp, erf, tanh, pow, ...: `tvtv.encode.tir.intrinsics.INTRINSICS`)
    given the values TVM's CPU code computes for them
    (`tvm_bridge.cpu_function_values`). The Relax ops' specifications and the TIR intrinsics
    share these functions (`tvtv/encode/tir/intrinsics.py`), so this is the value the
    specification has in a run with TVM's own functions, bit for bit. Sound for confirming
    that a target's execution departs from the specification; a function TVM cannot
    compile for the dtype (float16 atan) stays open, and so does the term."""
    v = _resolve(term, lambda v: element_value(v, dtype) is not None, _cpu_walk)
    return None if v is None else element_value(v, dtype)


def cpu_truth(term: z3.BoolRef) -> bool | None:
    """The truth of a closed Boolean IEEE-model term with `cpu_value`'s values for its
    functions and order-free sums: what a run with TVM's own functions makes of it (a run's
    well-definedness, where `_cpu_outputs` evaluates the outputs with those values too).
    None when it stays open (an order-dependent sum, a quantifier, an opaque PrimFunc).

    Measured (GenCoG seed-0 graph 5 under LegalizeOps): the well-definedness of
    `astype(rms_norm(v - v), int8)` with `v` behind tan is open for some tan (an infinite one
    makes v - v NaN); `certainly_holds` asked the solver that for every drawn set and gave
    up after its 5 s each, 93 times: 465 of the check's 483 s, with every set judged
    undefined. With TVM's tan the question is closed by simplification."""
    v = _resolve(term, lambda v: z3.is_true(v) or z3.is_false(v), _cpu_walk)
    return None if v is None else z3.is_true(v)


# `cpu_values`: at most this many values (branches over open sums' orders) for an element
ORDER_BRANCHES_CAP = 64


def cpu_values(term: z3.ExprRef, dtype: str, cap: int = ORDER_BRANCHES_CAP) -> list[Any] | None:
    """Every value `term` takes in a run with TVM's own functions, whatever order its float
    sums take: `cpu_value`'s evaluation, branching on each value of a sum of numerals
    whose summation orders differ (`order_sum_values`; innermost first, as a layer_norm's
    variance terms need its mean). The specification leaves a reduction's order open, so a
    target value outside this list is one no order gives: sound for confirming a
    difference where `cpu_value` has none. A sum applied in several places takes one value
    in each branch: a sum is a function of its terms, as the check's reassociation assumes
    (`tvtv.absfp.reductions`). None when something else stays open, or past `cap`
    branches."""
    if not has_branching_sum(term):
        return None          # no sum to branch on: `cpu_value`'s answer stands
    found: dict[Any, Any] = {}
    work = [term]
    branches = 1
    while work:
        v = _settle(work.pop(), _cpu_walk)
        value = _numeral_value(v, dtype)
        if value is not None:
            found[_value_key(value)] = value
            continue
        opened = _outermost(v, _order_values_of)
        if not opened:
            return None
        app, values = opened[0]
        branches += len(values) - 1
        if branches > cap:
            return None
        work += [z3.substitute(v, (app, x)) for x in values]
    return list(found.values())


def has_branching_sum(term: z3.ExprRef) -> bool:
    """Does `term` apply a float sum `cpu_values` may branch on (`_branching_sum`)? A raw
    walk of its uninterpreted functions: milliseconds, where evaluating it may take a second."""
    return any(_branching_sum(name) for name in z3raw.uninterpreted_names([term]))


def _branching_sum(name: str) -> bool:
    """Is `name` that of an uninterpreted float sum `order_sum_values` may branch on (at most
    ORDER_TREES_UPTO terms, of a dtype numpy adds with one rounding)?"""
    m = _REDUCTION_UF.match(name)
    return m is not None and m.group(1) == "sum" and m.group(2) in _ONE_ROUNDING \
        and int(m.group(3)) <= ORDER_TREES_UPTO


def _settle(term: z3.ExprRef, walk: Any) -> z3.ExprRef:
    """`term` simplified, with `walk`'s (application, value) pairs substituted round by
    round until it gives none (`_resolve` without a goal)."""
    v = z3.simplify(term)
    for _ in range(LIBM_ROUNDS):
        pairs = walk(v)
        if not pairs:
            break
        v = z3.simplify(z3.substitute(v, *pairs))
    return v


def _order_values_of(t: z3.ExprRef) -> list[z3.ExprRef] | None:
    """The numerals a float sum of numerals `t` takes over its summation orders
    (`order_sum_values`), or None (not such a sum, or its values cannot be told); asked of
    applications by `_outermost`."""
    m = _REDUCTION_UF.match(t.decl().name())
    terms = _reduction_terms(t) if m is not None and m.group(1) == "sum" else None
    if terms is None:
        return None
    dtype = m.group(2)       # type: ignore[union-attr]
    values = order_sum_values([fp_value(x, dtype) for x in terms], dtype)
    return None if values is None else [_fp_numeral(x, dtype, t.sort()) for x in values]


def _value_key(value: Any) -> Any:
    """A key telling values apart as refinement does: one NaN, and -0.0 apart from +0.0."""
    if isinstance(value, float):
        return "nan" if math.isnan(value) else (value, math.copysign(1.0, value))
    return value


def _cpu_walk(term: z3.ExprRef) -> list[tuple[z3.ExprRef, z3.ExprRef]]:
    """(application, value) for the outermost order-free sums of numerals and the
    applications of CPU functions to numerals in `term`; each function's applications are
    computed in one run of TVM's code."""
    from tvtv.encode.tir.intrinsics import INTRINSICS
    from tvtv.ir import tvm_bridge

    calls: dict[tuple[str, str], list[z3.ExprRef]] = {}

    def value_of(t: z3.ExprRef) -> z3.ExprRef | None:
        total = _order_free_value_of(t)
        if total is not None:
            return total
        m = _IEEE_UF.match(t.decl().name())
        if (m and m.group(1) in INTRINSICS and m.group(2) != "bfloat16"
                and all(z3.is_fp_value(a) for a in t.children())):
            calls.setdefault((m.group(1), m.group(2)), []).append(t)
            return t        # outermost: valued below, with its function's other calls
        return None

    pairs = [(t, v) for t, v in _outermost(term, value_of) if not v.eq(t)]
    for (fname, dtype), apps in calls.items():
        args = np.array([[fp_value(a, dtype) for a in t.children()] for t in apps])
        outs = tvm_bridge.cpu_function_values(fname, dtype, args)
        if outs is not None:
            pairs += [(t, _fp_numeral(float(o), dtype, t.sort())) for t, o in zip(apps, outs)]
    return pairs


def values_of(terms: Sequence[z3.ExprRef], dtype: str, value_of: Any,
              partial: bool = False) -> list[Any] | None:
    """`value_of(term, dtype)` of every term (`element_value`, `exact_value` or
    `libm_value`): all or nothing (None when one of them has no value), or with `partial`
    each value or None. The terms are resolved in bundles, so the subterms they share are
    simplified once per round (measured: materializing zero graph 20's layer_norm, 768
    elements whose groups share their sums, took 21.9 s element by element, 3.5 s so).
    All or nothing stops at the first bundle with an open term; bundles grow 1, 8, 64, ...
    terms, so a tensor open from its second element costs little more than element by
    element (a bundle of 863 mostly open terms took 12.5 s)."""
    walk = _BUNDLE_WALKS.get(value_of)
    if walk is None:             # another evaluator: element by element
        vals = [value_of(t, dtype) for t in terms]
        return vals if partial or all(x is not None for x in vals) else None
    if partial:
        return _bundle_values(terms, dtype, walk)
    vals: list[Any] = []
    size = 1
    while len(vals) < len(terms):
        chunk = _bundle_values(terms[len(vals):len(vals) + size], dtype, walk)
        if any(x is None for x in chunk):
            return None
        vals += chunk
        size *= 8
    return vals


def _bundle_values(terms: Sequence[z3.ExprRef], dtype: str, walk: Any) -> list[Any]:
    """The value of each term or None, resolved together: one term bundling them is
    simplified with the applications `walk` gives values substituted, round by round."""
    if not terms:
        return []
    bundle = zf.batch("tvtv_bundle", terms)
    v = z3.simplify(bundle)
    for _ in range(LIBM_ROUNDS):
        if all(_numeral_value(c, dtype) is not None for c in v.children()):
            break
        pairs = walk(v)
        if not pairs:
            break
        v = z3.simplify(z3.substitute(v, *pairs))
    return [_numeral_value(c, dtype) for c in v.children()]


# each evaluator's substitutions, for `values_of` (`element_value`: none, simplification only)
_BUNDLE_WALKS: dict[Any, Any] = {
    element_value: lambda v: [],
    exact_value: lambda v: _outermost(v, _order_free_value_of),
    libm_value: lambda v: _outermost(v, _libm_value_of),
    cpu_value: _cpu_walk,
}


# tensors above this many elements are not materialized (a constant is a chain of stores)
MATERIALIZE_BOUND = 4096


def materialize(t: Tensor, value_of: Any, dom: Any) -> Tensor:
    """`t` as a constant tensor when each element has a value (`value_of(term, dtype)`:
    `element_value`, exact, or `libm_value`, with the C library's functions), else `t`
    itself. Sound wherever `value_of` is: the constant has those very values."""
    if t.numel > MATERIALIZE_BOUND or t.numel == 0:
        return t
    vals = values_of([t.at(k) for k in range(t.numel)], t.dtype, value_of)
    if vals is None:
        return t
    return Tensor.from_numpy(np.array(vals, dtype=numpy_dtype(t.dtype)).reshape(t.shape),
                             t.dtype, dom)


def tensor_values(t: Tensor) -> list[Any]:
    return [element_value(t.at(k), t.dtype) for k in range(t.numel)]


def to_array(t: Tensor) -> np.ndarray:
    """All elements as a numpy array; raises ValueError if one is not determined."""
    vals = tensor_values(t)
    if any(v is None for v in vals):
        raise ValueError("some elements depend on uninterpreted functions")
    return np.array(vals, dtype=numpy_dtype(t.dtype)).reshape(t.shape)


def arg_value(value: Any, dtype: str, ctx: EncodeContext) -> Value:
    """numpy array → constant Tensor; ('prim', v) → PrimScalar; ('shape', dims) → Shape."""
    if isinstance(value, tuple) and value and value[0] == "prim":
        return PrimScalar(ctx.dom(dtype).const(value[1]), dtype, value[1])
    if isinstance(value, tuple) and value and value[0] == "shape":
        return Shape(tuple(value[1]))
    arr = np.asarray(value)
    return Tensor.from_numpy(arr, dtype, ctx.dom(dtype))


def encode_op(op: str, args: Sequence[Any], out_ty: P.Type, attrs: dict | None = None,
              model: FloatModel | None = None, arg_dtypes: Sequence[str] | None = None) -> tuple[Value, EncodeContext]:
    """Encode one op applied to concrete arguments; returns the value and the context."""
    model = model or IEEEModel()
    ctx = EncodeContext(model)
    model.on_ub = ctx.add_ub
    dtypes = list(arg_dtypes) if arg_dtypes else [
        str(np.asarray(a).dtype) if not isinstance(a, tuple) else "int64" for a in args]
    values = [arg_value(a, d, ctx) for a, d in zip(args, dtypes)]
    call = P.OpCall(op, tuple(P.VarRef(f"a{k}") for k in range(len(args))), dict(attrs or {}), out_ty)
    return registry.lookup(op)(ctx, call, values), ctx


def eval_op(op: str, args: Sequence[Any], out_ty: P.Type, attrs: dict | None = None,
            arg_dtypes: Sequence[str] | None = None) -> list[np.ndarray | list]:
    """IEEE evaluation of an op on concrete inputs: one array per output tensor
    (an element is None when it depends on an uninterpreted function)."""
    value, _ = encode_op(op, args, out_ty, attrs, IEEEModel(), arg_dtypes)
    out = []
    for t in flatten(value):
        vals = tensor_values(t)
        if any(v is None for v in vals):
            out.append(vals)
        else:
            out.append(np.array(vals, dtype=numpy_dtype(t.dtype)).reshape(t.shape))
    return out


def same_value(a: Any, b: Any) -> bool:
    """Refinement equality on Python values: NaN equals NaN, +0.0 differs from -0.0."""
    if isinstance(a, float) and isinstance(b, float):
        if math.isnan(a) and math.isnan(b):
            return True
        return a == b and math.copysign(1, a) == math.copysign(1, b)
    return bool(a == b)


def arrays_match(got: np.ndarray, want: np.ndarray) -> bool:
    """Bitwise-level agreement of two arrays (NaN = NaN, ±0 distinguished)."""
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape:
        return False
    return all(same_value(float(x) if isinstance(x, (np.floating, float)) else x,
                          float(y) if isinstance(y, (np.floating, float)) else y)
               for x, y in zip(got.reshape(-1).tolist(), want.reshape(-1).tolist()))


def agrees(op: str, args: Sequence[Any], out_ty: P.Type, expected: Sequence[np.ndarray],
           attrs: dict | None = None, model: FloatModel | None = None, exact: bool = True,
           arg_dtypes: Sequence[str] | None = None, timeout_ms: int = 20000) -> bool:
    """Does the op's encoding in `model` agree with `expected` (e.g. numpy's result)?

    exact=True: every output element is *forced* to equal the expected value (under the
    model's preconditions): the encoding is precise on these inputs.
    exact=False: the expected values are *admitted*: some interpretation of the
    uninterpreted functions gives them (the encoding is sound on these inputs).
    Works for the abstract model, where constants are symbolic magnitudes, too.
    """
    model = model or IEEEModel()
    value, ctx = encode_op(op, args, out_ty, attrs, model, arg_dtypes)
    outs = flatten(value)
    if len(outs) != len(expected):
        return False
    eqs = []
    for t, want in zip(outs, expected):
        want = np.asarray(want)
        if tuple(want.shape) != t.shape:
            return False
        dom = model.domain(t.dtype)
        for k, w in enumerate(want.reshape(-1).tolist()):
            eqs.append(dom.same(t.at(k), dom.const(w)))
    s = z3.Solver()
    s.set("timeout", timeout_ms)
    s.add(*model.preconditions())
    s.add(ctx.well_defined())
    if exact:
        s.add(zf.Not(zf.And(*eqs)))
        return s.check() == z3.unsat
    s.add(*eqs)
    return s.check() == z3.sat
