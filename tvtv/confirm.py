"""Confirm counterexamples: does the difference the solver found exist outside the abstraction?

`confirm_case` decides, in this order, and records how (`Confirmation.by`, written to the JSON
as `confirmed_by`):

1. ``"vm"``: both modules are built and run on the TVM VM (in a child process: generated code
   can crash) on the counterexample's inputs, and execution shows the difference (or the
   target fails where the source runs).
2. ``"vm-random-inputs"``: an opaque PrimFunc is an uninterpreted function of whole arrays, so
   the solver's inputs may differ only where the real PrimFunc does not look; a few seeded
   random inputs are tried (standard-normal sets, one of decimal fractions and small
   integers, where roundings meet integers, one of large magnitudes, where exp overflows,
   one of small integers as floats, whose sums are exact in every order, and one filling
   each tensor with one small integer, whose normalization statistics are exact, and one
   with NaN, ±inf, ±0 and ±the largest finite value among normal values, where TIR's max,
   min and reductions depart from the specification, and one with a single NaN or ±inf in
   each float tensor, which reaches fewer places than the special set, so a graph that
   casts floats to integers (undefined at NaN) is not made undefined by it each time), and
   inputs that show a difference
   replace the solver's in the counterexample (its message says so). Every drawn input
   respects the input assumptions (no NaN under no-nan, no infinity under no-inf). Under per-operation a drawn set replaces them only when the source computes no
   NaN or infinity inside on it (the same rule for every drawn set below).
3. The VM cannot show every difference: it legalizes the source too, so a LegalizeOps bug (the
   target's TIR departs from the Relax op's specification) runs identically on both sides.
   For a value difference the solver's inputs are then evaluated in the IEEE model (bit-exact;
   PrimFunc bodies encoded, so TIR means what its code does):
   * ``"ieee-spec"``: the source's specification and the target, both evaluated, differ at the
     counterexample's element (uninterpreted functions such as exp only count when the
     element does not depend on them);
   * ``"spec-vs-vm"``: the target cannot be evaluated (an encoder gap, or contents the target
     leaves unspecified: a sort kernel's order of a row with NaN) but its execution on the VM
     differs from the IEEE evaluation of the source's specification, at the counterexample's
     element or, failing that, at another element of the same output (re-pointed there).
   If the target's evaluation equals the source's specification, the difference is not the
   pass's (the VM's legalization may still depart from the specification: that is a
   LegalizeOps matter, reported when LegalizeOps is the pass checked).
   * ``"ieee-spec-cpu"``: on the solver's and the random inputs, the source's specification
     and the target evaluated with exp, erf, tanh, ... given TVM's own CPU values (the
     functions the abstraction leaves open, `tvtv.encode.evaluate.cpu_value`) differ, where
     the target's execution agrees with its evaluation. Not under op-rounding.
   Every comparison counts a difference as the assumptions say (`counts`).
4. ``"tvm-types"`` (a shape or dtype counterexample only): the VM runs do not show it (they
   legalize the source too, so an op whose legalization changes the result type runs as
   the target on both sides), but TVM's own types of the two functions differ: the return
   type TVM gives the source function (the op's type inference) is not the target's (the
   `call_tir` output type LegalizeOps wrote). tvtv reads its output types from these, so
   this repeats the static check with TVM's objects rather than tvtv's reading of them.
5. In the real model (`--fp real`) a counterexample claims a difference of the reals, which
   VM runs (they round) and the IEEE model (bit-exact) cannot show. Past the VM's failures
   and types (1, 4), `_confirm_in_real` decides instead: ``"real"`` when exact real
   evaluation on the counterexample's inputs separates source and target for every value of
   exp, erf, ... near their true ones (`tvtv.encode.enclosures`), ``"real-random-inputs"``
   when it does so on a seeded set on which the VM runs differ.
6. ``"none"``: nothing showed it: `confirmed` is False ("unconfirmed": the difference exists
   only in the abstraction, Alive2's "not unsound"), or None when nothing could run at all.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass
from collections.abc import Sequence
from typing import Any, Callable

import ml_dtypes
import numpy as np
import z3

from tvtv import z3fast as zf
from tvtv.absfp import assumptions as A
from tvtv.absfp.dtypes import FLOAT_FORMATS, numpy_dtype
from tvtv.encode.context import EncodeContext
from tvtv.encode.evaluate import certainly_holds, cpu_truth, exact_value, libm_truth, libm_value, materialize, same_value
from tvtv.errors import InputError, TvtvError
from tvtv.ir import tvm_bridge
from tvtv.report import Counterexample

RANDOM_SETS = 3   # standard-normal sets, then each of `DRAWN_SETS` (`draws_per_set` times)

# Codes of `Confirmation.by` and what each means (printed in reports).
HOW = {
    "vm": "execution on the TVM VM shows the difference on the counterexample's inputs",
    "vm-random-inputs": "execution on the TVM VM shows a difference on seeded random inputs "
                        "(they replaced the counterexample's inputs, or its large ones: "
                        "`mixed_sets`)",
    "ieee-spec": "the VM cannot show it (it legalizes both sides), but the IEEE evaluation of "
                 "the source's specification differs from the target's on these inputs",
    "spec-vs-vm": "the VM cannot show it, but the target's execution differs from the IEEE "
                  "evaluation of the source's specification on these inputs",
    "ieee-spec-cpu": "the VM cannot show it, but the source's specification and the target, "
                     "both evaluated in the IEEE model with exp, erf, tanh, ... computed by TVM's "
                     "own CPU code (the functions both sides share), differ on these inputs, "
                     "and the target's execution gives the target's value",
    "tvm-types": "the VM cannot show it (it legalizes both sides), but TVM's own return types "
                 "of the source and target functions differ",
    "real": "exact real evaluation (the real model, with exp, erf, ... within enclosures of "
            "their true values) separates source and target on the counterexample's inputs",
    "real-random-inputs": "on seeded random inputs, exact real evaluation separates source and "
                          "target where their VM runs differ (the counterexample's inputs were "
                          "replaced by them)",
    "none": "neither execution nor IEEE evaluation shows it: the difference exists only in the "
            "abstraction (unconfirmed)",
    "not-run": "the modules could not be run (tuple inputs, constants that cannot be written "
               "out with the module's TVMScript, or the source fails to build or run)",
}


@dataclass
class Confirmation:
    """`confirmed`: True (shown), False (not shown: unconfirmed), None (could not try);
    `by`: a key of `HOW`; `detail`: a sentence for people."""

    confirmed: bool | None
    by: str
    detail: str = ""


# Values drawn for the last input set: decimal fractions that binary floats hold inexactly
# and small integers, where roundings meet integers (numpy's floor_divide(1, 0.1) = 9,
# floor(1 / 0.1) = 10), and signs mixed; integers small, zero included
_DECIMALS = np.array([1.0, -1.0, 0.1, -0.1, 0.3, 3.0, -2.5, 0.5, 7.0, 1e-3, -0.7, 2.0])
_SMALL_INTS = np.array([-7, -3, -2, -1, 0, 1, 2, 3, 5, 7])


def _decimal_like(a: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    if a.dtype == np.bool_:
        return rng.random(a.shape) < 0.5
    pool = _SMALL_INTS if np.issubdtype(a.dtype, np.integer) else _DECIMALS
    if np.issubdtype(a.dtype, np.unsignedinteger):
        pool = np.abs(pool)
    return rng.choice(pool, size=a.shape).astype(a.dtype)


def _floats_from(pool: np.ndarray) -> Callable[[np.ndarray, np.random.Generator], np.ndarray]:
    """An input set whose float tensors draw from `pool`; integers and bools stay as in the
    normal sets (small: they index and count)."""
    def like(a: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        if not np.issubdtype(a.dtype, np.floating):
            return _random_like(a, rng)
        return rng.choice(pool, size=a.shape).astype(a.dtype)
    return like


# Large magnitudes: exp overflows to inf and underflows to 0 there in every float dtype (ln of
# float16's largest finite value is 11.1, of float32's 88.7), and squares overflow float16;
# few values, so that elementwise operands often meet equal (relax.log_add_exp(1000, 1000)
# is 1000 + ln 2, its legalization log(exp(1000) + exp(1000)) is inf: docs/findings.md)
_large_like = _floats_from(np.array([1000.0, -1000.0, 100.0]))
# Small integers as floats: their sums are exact in every order (a float sum of many terms
# has one value in every order only then: the source's specification leaves the order open,
# `evaluate.exact_value`), so a normalization's long sums get a value and its rsqrt,
# division ... roundings can be compared
_integral_like = _floats_from(np.array([-3.0, -2.0, -1.0, 0.0, 1.0, 2.0, 3.0, 4.0]))
_NONZERO_INTEGRAL = np.array([-3.0, -2.0, -1.0, 1.0, 2.0, 3.0, 4.0])


def _constant_like(a: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Each float tensor filled with one small nonzero integer of its own. A normalization's
    statistics are then exact however long the rows (the mean of n copies of c is c, the
    deviations and the variance are 0: `evaluate.exact_value` has a value for them where
    integral rows of 48 elements leave mean / 48 inexact and the squared deviations'
    sums order-dependent), so what a legalization adds or drops around them shows: layer_norm
    with center=False, to which TVM 0.27 adds beta all the same (docs/findings.md). Nonzero,
    so that such an added term is seen. Integers and bools stay as in the normal sets."""
    if not np.issubdtype(a.dtype, np.floating):
        return _random_like(a, rng)
    return np.full(a.shape, rng.choice(_NONZERO_INTEGRAL), dtype=a.dtype)


def _overflowing_like(a: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Magnitudes near the dtype's largest finite value, one sign per tensor: products and
    sums overflow to an infinity of one sign without meeting the other (no inf - inf), and
    the specification's sums of such terms have a value (`evaluate.order_free_sum`). A row
    of conv outputs that are all -inf is made so, without a NaN: TIR's max reduction starts
    from -FLT_MAX (docs/legalize.md). Integers and bools stay as in the normal sets."""
    if not np.issubdtype(a.dtype, np.floating):
        return _random_like(a, rng)
    top = FLOAT_FORMATS[str(a.dtype)].max_value
    sign = rng.choice([-1.0, 1.0])
    return (sign * rng.choice(np.array([top, top / 2, top / 4]), size=a.shape)).astype(a.dtype)


# A quarter of a special set's float elements are IEEE special values, the rest standard
# normal: TIR's max and min are `a > b ? a : b` (docs/legalize.md), which drop a NaN first
# operand where the specification propagates it, so clip, maximum, max_pool and max
# reductions differ only where a NaN meets a number; dense NaNs would reach every output
# on both sides alike. ±0 and ±inf meet the sign and overflow rules, ±FLT_MAX the
# reductions' -FLT_MAX start. (Measured on zero's seed-0 graph 3 without assumptions: no
# other set shows its clip/max difference, and the solver's search took 208-256 s.)
SPECIAL_SHARE = 0.25


def _normal_with(a: np.ndarray, rng: np.random.Generator,
                 plant: Callable[[int, np.random.Generator], tuple[Any, Any]]) -> np.ndarray:
    """A standard-normal float tensor shaped as `a` with `plant(size, rng)`'s values at its
    places (flat indices, values); integers and bools as in the normal sets."""
    if not np.issubdtype(a.dtype, np.floating):
        return _random_like(a, rng)
    out = _random_like(a, rng).astype(np.float64).reshape(-1)
    places, values = plant(out.size, rng)
    out[places] = values
    return out.reshape(a.shape).astype(a.dtype)


def _special_like(a: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Standard-normal floats with NaN, ±inf, ±0 and ±the dtype's largest finite value among
    them (`SPECIAL_SHARE` of the elements). The special values take the chosen places in
    turn from a random start, so that a tensor with seven chosen places has each of them
    (drawn independently, a 16-element tensor drawn four times had no NaN in one seed).
    Integers and bools stay as in the normal sets."""
    if not np.issubdtype(a.dtype, np.floating):
        return _random_like(a, rng)
    top = FLOAT_FORMATS[str(a.dtype)].max_value
    pool = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, top, -top])

    def plant(size: int, rng: np.random.Generator) -> tuple[Any, Any]:
        places = np.flatnonzero(rng.random(size) < SPECIAL_SHARE)
        return places, pool[(rng.integers(len(pool)) + np.arange(places.size)) % len(pool)]
    return _normal_with(a, rng, plant)


def has_non_finite(inputs: Sequence[Any]) -> bool:
    """Does a float tensor among `inputs` hold a NaN or an infinity?"""
    return any(np.issubdtype(np.asarray(a).dtype, np.floating)
               and not np.all(np.isfinite(np.asarray(a))) for a in inputs
               if not isinstance(a, tuple))


def _random_like(a: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    if a.dtype == np.bool_:
        return rng.random(a.shape) < 0.5
    if np.issubdtype(a.dtype, np.integer):
        return rng.integers(0, 4, size=a.shape).astype(a.dtype)
    return rng.standard_normal(a.shape).astype(a.dtype) * 2


def exp_edges(dtype: str) -> np.ndarray:
    """Arguments where exp of the dtype changes regime: just below ln(largest finite) (exp
    finite but near overflow), just above it (inf), and around ln(smallest normal) and
    ln(smallest subnormal) (gradual underflow, then 0), each of either sign's use (the
    negative ones are exp's underflow side). Approximations clamp their argument near these
    points, not at them: FastMathTransform's fast_exp gives inf from x = 88.3763 on, where
    float32 exp overflows only above 88.7228 (docs/findings.md)."""
    nd = numpy_dtype(dtype)
    fi = ml_dtypes.finfo(nd) if dtype == "bfloat16" else np.finfo(nd)   # numpy lacks bfloat16
    top = math.log(float(fi.max))
    tiny = math.log(float(fi.tiny))
    sub = math.log(float(fi.smallest_subnormal))
    return np.array([top - 0.25, top - 0.02, top + 0.1, tiny + 0.1, tiny - 0.1, sub + 0.3])


def _exp_edge_like(a: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Float tensors drawn from `exp_edges` of their dtype (few values, so that elementwise
    operands meet equal too). Integers and bools stay as in the normal sets."""
    if not np.issubdtype(a.dtype, np.floating):
        return _random_like(a, rng)
    return rng.choice(exp_edges(str(a.dtype)), size=a.shape).astype(a.dtype)


# The non-finite values `_one_special_like` plants, one per float tensor
_PLANTED = np.array([np.nan, np.inf, -np.inf])


def _one_special_like(a: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Standard-normal floats with one NaN, +inf or -inf at a random place. A special set
    (`_special_like`) fills a quarter of every float tensor with special values, and on a
    graph that casts a float to an integer some NaN or inf nearly always reaches the cast,
    where the specification is undefined, so the whole set shows nothing. One value in an
    otherwise ordinary tensor reaches fewer places: measured on LegalizeOps of GenCoG seed-0
    graph 0, where `floor_mod(sign(x0), sign(x0))` is cast to int32 (undefined at NaN) and an
    argmin runs over `softplus(std(einsum(cos(-x0), x1)) + ...)`: every special set was
    undefined, every other drawn set left the float16 std's order-dependent sum without a
    value, and a single inf among ordinary values makes the rows NaN on which TIR's argmin
    returns the last index and numpy's the first. Integers and bools stay as in the normal
    sets."""
    def plant(size: int, rng: np.random.Generator) -> tuple[Any, Any]:
        if not size:
            return [], []
        value = rng.choice(_PLANTED)   # drawn before the place, as the sets were first drawn
        return rng.integers(size), value
    return _normal_with(a, rng, plant)


# the input sets tried after the normal ones, in this order (a set added later goes last:
# the sets before it keep their values, which draw from one seeded generator in turn)
DRAWN_SETS = (_decimal_like, _large_like, _integral_like, _constant_like, _overflowing_like,
              _special_like, _exp_edge_like, _one_special_like)
# A drawn set tries one pool value per element, so a difference that only a few pairs of
# pool values show needs more sets on tiny tensors: float16 floor_divide differs from
# TIR's floor(a / b) on 10 of the decimal pool's 144 pairs (-1 // 0.1: numpy -11, TIR -10),
# and a one-element operand meets one pair per set. Each drawn set is drawn until about
# `DRAWN_ELEMENTS` elements of the largest input were tried, at most `MAX_DRAWS` times
# (the sets of tiny tensors are cheap to run and evaluate).
DRAWN_ELEMENTS = 64
MAX_DRAWS = 32


def _draws_for(elements: int) -> int:
    """Draws of each set until an input of `elements` met about `DRAWN_ELEMENTS` values,
    at least one, at most `MAX_DRAWS`."""
    return max(1, min(MAX_DRAWS, -(-DRAWN_ELEMENTS // max(elements, 1))))


def draws_per_set(inputs: list[Any]) -> int:
    """How many times each of `DRAWN_SETS` is drawn for these inputs (see DRAWN_ELEMENTS)."""
    return _draws_for(max((np.asarray(a).size for a in inputs), default=1))


def testing_draws(inputs: list[Any]) -> int:
    """How many times each of `DRAWN_SETS` is drawn when searching by testing
    (`search_by_testing`): until the *smallest* input met about `DRAWN_ELEMENTS` values, at
    most `MAX_DRAWS`. A one-element input meets one value per set, and beside a large input
    `draws_per_set` draws each set once: FastMathTransform on Isra seed 23 graph 7 (exp of a
    one-element x0, a 240-element x5) met ten values of x0, on which fast_exp and exp agree,
    and ended `unknown`; with 32 draws a difference shows in 6 s (`exp(1.1532067)`). The
    search is bounded by its budget and goes round by round, so more draws cost time only
    where nothing shows; the confirmation of a counterexample keeps `draws_per_set`."""
    return _draws_for(min((np.asarray(a).size for a in inputs), default=1))


def _admissible(a: np.ndarray, assume: tuple[str, ...], rng: np.random.Generator) -> np.ndarray:
    """`a` with the input values the assumptions rule out (NaN under no-nan, ±inf under
    no-inf) replaced by standard-normal ones: an input set must be one the check ranged over,
    or a difference it shows is no counterexample under the assumptions."""
    if not np.issubdtype(a.dtype, np.floating):
        return a
    bad = np.zeros(a.shape, dtype=bool)
    if A.NO_NAN in assume:
        bad |= np.isnan(a)
    if A.NO_INF in assume:
        bad |= np.isinf(a)
    return np.where(bad, _random_like(a, rng), a).astype(a.dtype) if bad.any() else a


# `mixed_sets`: inputs of at most MIXED_SMALL elements keep the counterexample's values, the
# others are drawn again, MIXED_SETS times
MIXED_SMALL = 16
MIXED_SETS = 4


def mixed_sets(inputs: list[Any]) -> list[list[np.ndarray]]:
    """Input sets that keep the counterexample's values of its small inputs (at most
    `MIXED_SMALL` elements) and draw the large ones again; none when every input is small or
    every one is large.

    A solver's counterexample may rest on a value it chose for an uninterpreted sum of a large
    input: `sum(p2) + p5 > minimum(p6, p5)` under LegalizeOps, where TIR's min drops the NaN
    p6 and numpy's keeps it, was found with p6 = NaN, p5 = -1 and a sum it took positive,
    while p2 was all zeros (sum 0: no difference). The random sets rarely draw that NaN
    scalar, and the solver's inputs never had that sum, so the check ended unknown (typed
    generator, seed 7, graph 4; 2026-12-07). Kept, the scalars carry the solver's choice of
    special values; drawn again, the large input makes the sum something. The large inputs
    draw small integers (`_integral_like`, admissible under every assumption): their sums
    are exact in every order, so the source's specification has a value where its order of
    summation is open (`_spec_vs_cpu_run`), which a LegalizeOps difference needs (the VM
    runs both sides legalized)."""
    arrays = [np.asarray(a) for a in inputs]
    small = [a.size <= MIXED_SMALL for a in arrays]
    if all(small) or not any(small):
        return []
    rng = np.random.default_rng(1)
    return [[a if keep else _integral_like(a, rng) for a, keep in zip(arrays, small)]
            for _ in range(MIXED_SETS)]


def input_sets(like: list[Any], assume: tuple[str, ...] = (), by_round: bool = False,
               draws: int | None = None) -> list[list[np.ndarray]]:
    """The seeded input sets tried beside a counterexample's own, shaped as `like`:
    `RANDOM_SETS` standard-normal sets, then each of `DRAWN_SETS` `draws` times
    (`draws_per_set` unless given), each input admissible under the assumptions
    (`_admissible`). With `by_round` the drawn sets come round by round (one of each kind,
    then the next of each), for a search that may stop at a deadline before the last kind's
    draws; the sets are the same."""
    rng = np.random.default_rng(0)
    sets = [[_random_like(np.asarray(a), rng) for a in like] for _ in range(RANDOM_SETS)]
    draws = draws_per_set(like) if draws is None else draws
    drawn = [[_admissible(draw(np.asarray(a), rng), assume, rng) for a in like]
             for draw in DRAWN_SETS for _ in range(draws)]
    if by_round:   # drawn[kind * draws + r] -> round r, kind
        drawn = [drawn[kind * draws + r] for r in range(draws) for kind in range(len(DRAWN_SETS))]
    return sets + drawn


def first_difference(src: list[np.ndarray], tgt: list[np.ndarray], assume: tuple[str, ...] = ()
                     ) -> tuple[int, tuple, Any, Any] | None:
    """(output, index, source value, target value) of the first element where two executions
    differ (NaN = NaN, +0 ≠ -0; under assumptions, as `counts` says); index () and values
    None for a shape/dtype difference."""
    for k, (a, b) in enumerate(zip(src, tgt)):
        if a.shape != b.shape or a.dtype != b.dtype:
            return k, (), None, None
        for flat in _not_identical(a, b):
            idx = np.unravel_index(int(flat), a.shape)
            x, y = py_value(a[idx]), py_value(b[idx])
            if counts(x, y, assume):
                return k, tuple(int(i) for i in idx), x, y
    return None


def _not_identical(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The flat positions, in order, where two runs' arrays of one shape and dtype are not
    the same value (`same_value`: NaN equals NaN, +0 differs from -0): a superset of where
    `counts` finds a difference, found without a Python loop (a testing search compares
    tens of sets of outputs with thousands of elements)."""
    if a.dtype.kind in "biu":
        return np.flatnonzero(a != b)
    if a.dtype.kind not in "fV":
        return np.arange(a.size)
    # float64 holds every float16, bfloat16 and float32 value exactly
    x, y = a.astype(np.float64), b.astype(np.float64)
    with np.errstate(invalid="ignore"):
        same = ((x == y) & (np.signbit(x) == np.signbit(y))) | (np.isnan(x) & np.isnan(y))
    return np.flatnonzero(~same)


_first_difference = first_difference   # the old private name


def _ieee_run(module: Any, fname: str, inputs: dict[str, Any], keep_live: bool = False,
              value_of: Any = None) -> tuple[Any, Any]:
    """(value, encode context) of `module`'s function `fname` on concrete `inputs` in the IEEE
    model: Relax ops by their specification, PrimFunc bodies encoded. With `keep_live`, the
    context's `live_values` holds the function's live bindings' tensors. With `value_of`
    (`exact_value` or `libm_value`), each binding's tensor whose elements it evaluates is
    made a constant (`tvtv.encode.evaluate.materialize`)."""
    from tvtv.absfp.ieee import IEEEModel
    from tvtv.encode.abstraction import Abstraction
    from tvtv.encode.function import FunctionEncoder, concrete_value
    from tvtv.ir import relax_reader

    prog = relax_reader.read_module(module)
    fn = prog.functions[fname]
    model = IEEEModel()
    # concrete inputs: nothing to solve
    ctx = EncodeContext(model, exact_pair_sums=True, exact_arg_folds=True)
    if keep_live:
        ctx.live_values = []
    model.on_ub = ctx.add_ub
    if value_of is not None:
        ctx.materialize = lambda t: materialize(t, value_of, ctx.dom(t.dtype))
    args = [concrete_value(inputs[p.name], p.ty, ctx) for p in fn.params]
    return FunctionEncoder(prog, ctx, Abstraction(tir="body")).call(fn, args), ctx


def defined_on(module: Any, fname: str, inputs: dict[str, Any]) -> bool:
    """Is `module`'s function `fname` (its Relax ops by their specification) defined on the
    concrete `inputs`, in the run with TVM's own exp, tan, ... (`_defined_in_cpu_run`): no
    UB condition holds? False when that cannot be established."""
    try:
        _, ctx = _ieee_run(module, fname, inputs)
        return _defined_in_cpu_run(ctx)
    except (TvtvError, KeyError, NotImplementedError, z3.Z3Exception):
        return False


def _defined_in_cpu_run(ctx: EncodeContext) -> bool:
    """Is the IEEE run encoded in `ctx` defined with TVM's own function values
    (`evaluate.cpu_truth`), which the VM's runs and `_cpu_outputs` use; where those leave
    it open (an order-dependent sum, a quantified condition), for every interpretation
    (`evaluate.certainly_holds`)? Asking the solver first gave up after 5 s on every
    input set of GenCoG seed-0 graph 5, whose definedness depends on tan's value."""
    condition = ctx.well_defined()
    defined = cpu_truth(condition)
    return certainly_holds(condition) if defined is None else defined


def ieee_element(module: Any, fname: str, inputs: dict[str, Any], output: int,
                 index: tuple[int, ...]) -> tuple[bool, Any]:
    """Evaluate `module`'s function `fname` on concrete `inputs` in the IEEE model (Relax ops
    by their specification, PrimFunc bodies encoded) and return (known, value) of element
    `index` of output `output`. Float sums count when every summation order gives one value
    (`tvtv.encode.evaluate.exact_value`). `known` is False when the element depends on an
    uninterpreted function, the function is undefined there, or something is unsupported."""
    from tvtv.encode.values import flatten

    try:
        value, ctx = _ieee_run(module, fname, inputs)
        outs = flatten(value)
        if output >= len(outs):
            return False, None
        t = outs[output]
        if not certainly_holds(ctx.well_defined()):
            return False, None
        flat = int(np.ravel_multi_index(index, t.shape)) if t.shape else 0
        v = exact_value(t.at(flat), t.dtype)
        return (v is not None), v
    except (TvtvError, KeyError, NotImplementedError, z3.Z3Exception):
        return False, None


# outputs of up to this many elements are compared element by element with the IEEE
# evaluation of the specification (`_spec_vs_cpu_run`)
SPEC_COMPARE_BOUND = 4096


def counts(spec: Any, got: Any, assume: tuple[str, ...] = ()) -> bool:
    """Whether a target value `got` where the source's is `spec` is a difference under the
    assumptions: refinement equality (`same_value`), except that a NaN (no-nan) or infinite
    (no-inf) source value is poison that any target value refines, and zeros of either
    sign are equal under no-signed-zeros (`tvtv.absfp.assumptions`)."""
    if same_value(spec, got):
        return False
    if isinstance(spec, float):
        if A.NO_NAN in assume and math.isnan(spec):
            return False
        if A.NO_INF in assume and math.isinf(spec):
            return False
        if A.NO_SIGNED_ZEROS in assume and spec == 0 and isinstance(got, float) and got == 0:
            return False
    return True


def _run_key(module: Any, fname: str, inputs: dict[str, Any], *extra: Any) -> tuple[Any, ...] | None:
    """A key naming one evaluation of `module`'s function `fname` on `inputs` (None for tuple
    inputs, which are not remembered)."""
    if any(isinstance(v, tuple) for v in inputs.values()):
        return None
    arrays = [(n, np.asarray(v)) for n, v in sorted(inputs.items())]
    return (tvm_bridge.structural_hash(module), fname, *extra,
            tuple((n, a.dtype.str, a.shape, a.tobytes()) for n, a in arrays))


def _remembered(memo: dict[tuple[Any, ...], Any], keep: int, key: tuple[Any, ...] | None,
                compute: Callable[[], Any]) -> Any:
    """`compute()`, remembered in `memo` under `key` for the last `keep` keys."""
    if key is None:
        return compute()
    if key not in memo:
        if len(memo) >= keep:
            memo.pop(next(iter(memo)))
        memo[key] = compute()
    return memo[key]


# _cpu_outputs' recent answers: a drawn set's source is evaluated by `_source_ran_as_specified`
# and again by `_spec_vs_cpu_run`, and a chain's steps confirm on the same source module
_CPU_OUTPUTS: dict[tuple[Any, ...], Any] = {}
_CPU_OUTPUTS_KEEP = 32


def _cpu_outputs(module: Any, fname: str, args: dict[str, Any]) -> list[tuple[str, tuple, list]] | None:
    """(dtype, shape, element values or None) of each output of `module`'s function on
    `args`, evaluated in the IEEE model with TVM's own function values
    (`tvtv.encode.evaluate.cpu_value`); None when the run is undefined there or cannot be
    encoded. Outputs above `SPEC_COMPARE_BOUND` elements are left open. Remembered for the
    last `_CPU_OUTPUTS_KEEP` modules and inputs."""
    return _remembered(_CPU_OUTPUTS, _CPU_OUTPUTS_KEEP, _run_key(module, fname, args),
                       lambda: _cpu_outputs_now(module, fname, args))


class Evaluated(list):
    """An output's element values as `_cpu_outputs` gives them (None where open), and for an
    open element, when asked, every value it takes over the summation orders of its float
    sums (`evaluate.cpu_values`: the specification leaves those orders open, so one value is
    no answer, but a target value outside all of them is a difference). Asked at one element
    of a run at a time (`_spec_cpu_difference`, `_source_ran_as_specified`): each costs up to
    `evaluate.ORDER_BRANCHES_CAP` evaluations."""

    def __init__(self, values: list[Any], terms: list[z3.ExprRef] | None, dtype: str) -> None:
        super().__init__(values)
        self._terms, self._dtype = terms, dtype
        self._asked: dict[int, list[Any] | None] = {}

    def order_values(self, i: int) -> list[Any] | None:
        """Element i's values over its sums' orders ([its value] where it has one), or None
        where they cannot be told."""
        from tvtv.encode.evaluate import cpu_values
        if self[i] is not None:
            return [self[i]]
        if self._terms is None:
            return None
        if i not in self._asked:
            try:
                self._asked[i] = cpu_values(self._terms[i], self._dtype)
            except z3.Z3Exception:
                self._asked[i] = None
        return self._asked[i]


def _cpu_outputs_now(module: Any, fname: str, args: dict[str, Any]) -> list[tuple[str, tuple, list]] | None:
    """`_cpu_outputs`, evaluated."""
    from tvtv.encode.evaluate import cpu_value, values_of
    from tvtv.encode.values import flatten

    try:
        value, ctx = _ieee_run(module, fname, args)
        if not _defined_in_cpu_run(ctx):    # (as the outputs below are valued)
            return None
        out: list[tuple[str, tuple, list]] = []
        for t in flatten(value):
            if t.numel > SPEC_COMPARE_BOUND:
                out.append((t.dtype, t.shape, Evaluated([None] * t.numel, None, t.dtype)))
                continue
            terms = [t.at(i) for i in range(t.numel)]
            vals = values_of(terms, t.dtype, cpu_value, partial=True)
            out.append((t.dtype, t.shape, Evaluated(vals, terms, t.dtype)))
        return out
    except (TvtvError, KeyError, NotImplementedError, z3.Z3Exception):
        return None


# Seconds after which `confirm_case` begins no further input set of `_spec_vs_cpu_run` (the
# solver's set is always evaluated). A set costs an IEEE evaluation of both modules; before
# `evaluate.cpu_truth` one whose definedness the solver could not settle cost 5 s more, and
# GenCoG seed-0 graph 5's 46 sets took 211 s of a check whose budget was 200 s.
SPEC_CPU_BUDGET = 60.0


def _spec_vs_cpu_run(before: Any, after: Any, fname: str, param_names: list[str],
                     sets: list[list[Any]], targets: list[tuple[str, Any]],
                     assume: tuple[str, ...], cex: Counterexample, first_drawn: int = 1,
                     accept: Callable[[dict[str, Any]], bool] | None = None,
                     deadline: float | None = None) -> Confirmation | None:
    """The first input set (the solver's, then the random ones) on which the source's
    specification and the target, both evaluated in the IEEE model with TVM's own exp, erf,
    tanh, ... values (`_cpu_outputs`), differ at an element where the target's execution on
    the VM gives the target's evaluated value (so the target's value is what runs compute,
    and the difference is the pass's: a pass that leaves gelu_tanh alone is not blamed for
    its legalization, which the VM runs on both sides). `cex` is re-pointed at that element.
    A LegalizeOps departure that depends on exp, erf, tanh ... (gelu_tanh's rounding) shows
    here, where the functions' values are otherwise open. None if no set shows one.
    Sets from `first_drawn` on are drawn ones (they replace `cex`'s inputs, and its message
    says so); a drawn set `accept` rejects is skipped (`_replacement_filter`), and no set is
    begun after `deadline` (`time.perf_counter()`) but the first."""
    for j, inputs in enumerate(sets):
        status, outs = targets[j]
        if j > 0 and deadline is not None and time.perf_counter() > deadline:
            break
        if status != "ok":
            continue
        args = dict(zip(param_names, inputs))
        src = _cpu_outputs(before, fname, args)
        tgt = _cpu_outputs(after, fname, args) if src is not None else None
        drawn = j >= first_drawn
        # sums' order values only at the solver's element of the solver's inputs: on every
        # element of every drawn set they cost GenCoG seed-0 graph 2 (layer_norm rows) 92 s
        at = None if drawn or cex.output is None else (cex.output, tuple(cex.index or ()))
        found = _spec_cpu_difference(src, tgt, outs, assume, at) if tgt is not None else None
        # poison is judged only for a set that shows a difference (an IEEE run of the module)
        if found is None or drawn and accept is not None and not accept(args):
            continue
        k, idx, allowed, t = found
        v = allowed[0]
        if drawn:
            cex.inputs = dict(args)
        cex.kind, cex.output, cex.index = "value", k, idx
        cex.source_value, cex.target_value, cex.confirmed_ieee = v, t, None
        cex.executed_values = (v, t)
        orders = "" if len(allowed) == 1 else \
            f" (its summation orders give {', '.join(map(repr, allowed))}; none is the target's)"
        cex.message = (f"output {k} differs at index {idx} (found by evaluating the "
                       f"source's specification and the target with TVM's exp, erf, ..."
                       f"{' on seeded random inputs' if drawn else ''}){orders}")
        return Confirmation(True, "ieee-spec-cpu",
                            f"IEEE with TVM's exp, erf, ... values: source specification "
                            f"{v!r}{orders}, target {t!r} (its execution on the VM agrees)")
    return None


def _spec_cpu_difference(src: list[Any], tgt: list[Any], outs: list[np.ndarray],
                         assume: tuple[str, ...], at: tuple[int, tuple[int, ...]] | None = None
                         ) -> tuple[int, tuple[int, ...], list[Any], Any] | None:
    """(output, index, specification values, target value) of the first element where the
    source's specification and the target, both evaluated (`_cpu_outputs`), differ as the
    assumptions count it and the target's VM run (`outs`) gives the target's value. The
    specification's values are its one value, or, where that is open, every value its sums'
    orders give (`Evaluated.order_values`), each of which must differ; where the target's
    own value is open so, its run must be one of its orders' values. Order values are asked
    only at the element `at` (output, index; None: nowhere)."""
    for k, ((dtype, shape, spec), (_, tshape, tvals)) in enumerate(zip(src, tgt)):
        if k >= len(outs) or shape != tshape or outs[k].shape != shape:
            continue
        ran = outs[k].reshape(-1)
        here = _flat_index(at[1], shape) if at is not None and at[0] == k else None
        for i, (v, t) in enumerate(zip(spec, tvals)):
            if i == here:
                # open values here are every value their sums' orders give; the target's
                # own sums are order-open in its encoding too (a TIR loop is the op's
                # reduction term), so its run must be one of their values
                allowed, t_allowed = spec.order_values(i), tvals.order_values(i)
            elif v is None or t is None:
                continue
            else:
                allowed, t_allowed = [v], [t]
            if allowed is None or t_allowed is None:
                continue
            got = py_value(ran[i])
            if not any(same_value(a, got) for a in t_allowed) \
                    or not all(counts(a, got, assume) for a in allowed):
                continue
            idx = tuple(int(d) for d in np.unravel_index(i, shape)) if shape else ()
            return k, idx, allowed, got
    return None


def _flat_index(idx: tuple[int, ...], shape: tuple[int, ...]) -> int | None:
    """The row-major position of `idx` in `shape`, or None when it is not an index of it."""
    if len(idx) != len(shape) or not all(0 <= a < d for a, d in zip(idx, shape)):
        return None
    return int(np.ravel_multi_index(idx, shape)) if shape else 0


def _spec_vs_vm_elsewhere(before: Any, after: Any, fname: str, args: dict[str, Any],
                          cex: Counterexample, ran: np.ndarray,
                          assume: tuple[str, ...]) -> Confirmation | None:
    """Another element of `cex`'s output, on `cex`'s inputs, where the source's specification
    is known, the target's evaluation is not, and the target's execution on the VM (`ran`)
    differs from the specification; `cex` is re-pointed at it. For a target whose value
    there is left open (a kernel's unspecified order of a row with NaN: any permutation), the
    solver may name an element where the run happens to agree while another in the same
    output does not. None if there is none (or the output is above `SPEC_COMPARE_BOUND`)."""
    from tvtv.encode.values import flatten

    k = cex.output
    try:
        sval, sctx = _ieee_run(before, fname, args)
        if not certainly_holds(sctx.well_defined()):
            return None
        src = flatten(sval)[k]
    except (TvtvError, KeyError, NotImplementedError, z3.Z3Exception, IndexError):
        return None
    if src.numel > SPEC_COMPARE_BOUND or tuple(src.shape) != tuple(ran.shape):
        return None
    try:
        tval, tctx = _ieee_run(after, fname, args)
        tgt = flatten(tval)[k] if certainly_holds(tctx.well_defined()) else None
    except (TvtvError, KeyError, NotImplementedError, z3.Z3Exception, IndexError):
        tgt = None
    flat_ran = ran.reshape(-1)
    for i in range(src.numel):
        spec = exact_value(src.at(i), src.dtype)
        if spec is None or (tgt is not None and exact_value(tgt.at(i), tgt.dtype) is not None):
            continue
        got = py_value(flat_ran[i])
        if counts(spec, got, assume):
            idx = tuple(int(d) for d in np.unravel_index(i, src.shape)) if src.shape else ()
            cex.index, cex.source_value, cex.target_value = idx, spec, got
            cex.executed_values, cex.confirmed_ieee = (spec, got), None
            cex.message = f"output {k} differs at index {idx} (the target's run on the solver's inputs)"
            return Confirmation(True, "spec-vs-vm", f"source specification {spec!r}, target on the VM {got!r} at {idx}")
    return None


def _source_ran_as_specified(before: Any, fname: str, args: dict[str, Any],
                             diff: tuple[int, tuple, Any, Any]) -> bool:
    """Does the source's execution give, at the differing element `diff` (output, index,
    source value, target value), the value of its specification evaluated in the IEEE model
    with TVM's exp, erf, ... (`_cpu_outputs`)? A difference between two VM runs on NaN or
    infinite inputs counts only then: there TVM's own lowering of a Relax op departs from
    the specification (TIR's max drops a NaN first operand; TVM's sort kernel orders NaN
    otherwise than numpy: measured, a hand-written descending float16 sort proved equal to
    the specification differed from relax.sort's VM run on a row with NaN), and a correct
    pass whose target runs the specification would be blamed for the source's lowering.
    Where its sums' orders leave the specification open, the source ran as specified
    when its value is one of theirs (`Evaluated.order_values`). False where the
    specification has no value there."""
    k, idx, x, _ = diff
    outs = _cpu_outputs(before, fname, args)
    if outs is None or k >= len(outs):
        return False
    _, shape, vals = outs[k]
    flat = _flat_index(tuple(idx), shape)
    allowed = None if flat is None else vals.order_values(flat)
    return allowed is not None and any(same_value(a, x) for a in allowed)


def _vm_difference_counts(before: Any, fname: str, args: dict[str, Any],
                          diff: tuple[int, tuple, Any, Any]) -> bool:
    """May a difference between the source's and the target's VM runs on `args` (`diff`:
    output, index, source value, target value) confirm a counterexample? On finite inputs,
    yes. On inputs with NaN or infinity only where the source ran as its specification says
    (`_source_ran_as_specified`): both VM-run paths of `confirm_case` (the solver's inputs,
    then the drawn sets) pass through here, so the rule holds for every input that reaches
    the VM. (Measured 2026-12-04: the abstract model's counterexample to a hand-written
    float16 descending sort held a NaN row; relax.sort's kernel leaves such a row out of
    order, and without this rule the solver's own inputs "confirmed" a difference the target,
    which follows the specification, is not to blame for.)"""
    if not has_non_finite(list(args.values())):
        return True
    return _source_ran_as_specified(before, fname, args, diff)


def _replacement_filter(before: Any, fname: str, assume: tuple[str, ...]
                        ) -> Callable[[dict[str, Any]], bool] | None:
    """Which drawn input sets may replace a counterexample's inputs: under per-operation only
    those on which the source computes no NaN or infinity inside (`poisoned_inside` False; a
    set it cannot judge is not taken), since a run that does is poison as a whole and no
    counterexample; None (every set) otherwise. Before this filter a counterexample valid
    under per-operation could be replaced by a drawn overflowing set that showed a
    difference, and the whole check then became `unknown` (`tvtv.api._demote_poisoned`):
    measured on tests/per_operation_cases.py's GroupSource against AllTrue, where every
    difference is an overflow inside, confirmed on x near FLT_MAX."""
    if not A.per_operation(assume):
        return None
    return lambda args: poisoned_inside(before, fname, args, assume) is False


def confirm_case(before: Any, after: Any, fname: str, param_names: list[str],
                 cex: Counterexample, assume: tuple[str, ...] = (),
                 fp: str = "abstract", input_class: tuple[str, ...] = ()) -> Confirmation:
    """Decide whether `cex` is real (see the module docstring) under the assumptions
    `assume` (a difference on a NaN/inf source value they make poison does not count). May
    replace `cex`'s inputs by random ones that execution shows to differ (under per-operation
    only by ones whose run is not poison, `_replacement_filter`), drawn in `input_class`
    too (`tvtv.absfp.assumptions.INPUT_CLASSES`). A counterexample
    of the real model (`fp` "real") is a difference in exact real arithmetic, which VM runs
    and IEEE evaluations cannot show (`_confirm_in_real`)."""
    inputs = [cex.inputs[n] for n in param_names]
    if any(isinstance(v, tuple) for v in inputs):
        return Confirmation(None, "not-run", "tuple inputs are not run")
    sets = [inputs] + mixed_sets(inputs) + input_sets(inputs, A.restricting(assume, input_class))
    try:
        runs = tvm_bridge.run_vm_isolated({"source": before, "target": after}, fname, sets)
    except InputError as err:   # a module whose tensor constants cannot be written out
        return Confirmation(None, "not-run", f"the modules could not be written out to run: {err}")
    s_status, src = runs["source"][0]
    t_status, tgt = runs["target"][0]
    # a target tvtv wrote out and TVM cannot read back (CallTIRRewrite's printed
    # alloc_tensor, docs/findings.md) did not run: that says nothing of the pass, so only
    # the ways below that need no run of it are left
    unread = t_status == "error" and tvm_bridge.MALFORMED in str(tgt)
    if s_status == "ok" and not unread:
        if t_status != "ok" or len(src) != len(tgt):
            return Confirmation(True, "vm", f"the source runs, the target fails: {tgt if t_status != 'ok' else 'output count differs'}")
        if cex.kind in ("shape", "dtype"):
            if any(a.shape != b.shape or a.dtype != b.dtype for a, b in zip(src, tgt)):
                return Confirmation(True, "vm", "the outputs' shapes or dtypes differ on the VM")
        if cex.kind == "value" and cex.output is not None and cex.output < len(src):
            a, b = src[cex.output], tgt[cex.output]
            idx = tuple(cex.index or ())
            if a.shape == b.shape:
                cex.executed_values = (py_value(a[idx]), py_value(b[idx]))
            x, y = (py_value(a[idx]), py_value(b[idx])) if a.shape == b.shape else (None, None)
            if a.shape != b.shape or fp != "real" and counts(x, y, assume) and _vm_difference_counts(
                    before, fname, dict(zip(param_names, inputs)), (cex.output, idx, x, y)):
                return Confirmation(True, "vm", f"VM: source {x!r}, target {y!r}")
    if cex.kind in ("shape", "dtype"):
        typed = _types_differ(before, after, fname)
        if typed is not None:
            return Confirmation(True, "tvm-types", typed)
    if fp == "real":
        return _confirm_in_real(before, after, fname, param_names, cex, assume, sets, runs)
    # the solver's inputs did not show it on the VM: try the random ones (not for undefined
    # behaviour of the target: its runs read garbage, and a difference they show would only
    # replace the solver's precise "out of bounds" by a value that garbage happened to give)
    any_ran = s_status == "ok"
    accept = _replacement_filter(before, fname, assume)
    for j in range(1, len(sets) if cex.kind != "ub" else 1):
        (sj, srcj), (tj, tgtj) = runs["source"][j], runs["target"][j]
        if sj != "ok" or tj != "ok":
            continue
        any_ran = True
        diff = first_difference(srcj, tgtj, assume)
        # a drawn set on which the source's specification is undefined (an index out of
        # range: take, gather, nll_loss's targets) shows nothing: both compiled modules may
        # read garbage there (measured: nll_loss with targets [-7, -7] "differed" on the VM)
        args = dict(zip(param_names, sets[j]))
        if diff is not None and defined_on(before, fname, args) \
                and (accept is None or accept(args)) \
                and _vm_difference_counts(before, fname, args, diff):
            k, idx, x, y = diff
            cex.inputs = args
            cex.kind, cex.output, cex.index = "value", k, idx
            cex.source_value, cex.target_value, cex.confirmed_ieee = x, y, None
            cex.executed_values = (x, y)
            cex.message = f"output {k} differs at index {idx} (inputs found by execution on the VM)"
            return Confirmation(True, "vm-random-inputs", f"VM: source {x!r}, target {y!r}")
    # the VM cannot show it: compare with the IEEE evaluation of the source's specification
    if cex.kind == "value" and cex.output is not None:
        idx = tuple(cex.index or ())
        args = dict(zip(param_names, inputs))
        known_s, spec = ieee_element(before, fname, args, cex.output, idx)
        if known_s:
            known_t, tval = ieee_element(after, fname, args, cex.output, idx)
            if known_t:
                if counts(spec, tval, assume):
                    cex.executed_values = (spec, tval)
                    return Confirmation(True, "ieee-spec", f"IEEE: source specification {spec!r}, target {tval!r}")
            elif t_status == "ok" and cex.output < len(tgt):
                vm_val = py_value(tgt[cex.output][idx])
                if counts(spec, vm_val, assume):
                    cex.executed_values = (spec, vm_val)
                    return Confirmation(True, "spec-vs-vm", f"source specification {spec!r}, target on the VM {vm_val!r}")
                found = _spec_vs_vm_elsewhere(before, after, fname, args, cex, tgt[cex.output], assume)
                if found is not None:
                    return found
            any_ran = True
    # the specification with TVM's own exp, erf, ... against the target's runs; not under
    # op-rounding, which lets an operator's rounding differ from its specification's, and
    # a difference anywhere in the outputs may be just that
    if A.OP_ROUNDING not in assume:
        found = _spec_vs_cpu_run(before, after, fname, param_names, sets, runs["target"],
                                 assume, cex, accept=accept,
                                 deadline=time.perf_counter() + SPEC_CPU_BUDGET)
        if found is not None:
            return found
    if not any_ran:
        # nothing ran, so the source's first run failed: `src` is the VM worker's one line
        # (the last line of TVM's error, `vm_worker._last_line`) or the crash message
        return Confirmation(None, "not-run", f"the source does not run on the VM: {src}")
    return Confirmation(False, "none")


# `_confirm_in_real`: the solver's limit for one input set, the elements of a drawn set it
# asks about, and the time after which no further drawn set is begun
REAL_TIMEOUT = 10.0
REAL_ELEMENTS = 4
REAL_BUDGET = 30.0


def _confirm_in_real(before: Any, after: Any, fname: str, param_names: list[str],
                     cex: Counterexample, assume: tuple[str, ...], sets: list[list[Any]],
                     runs: dict[str, list[tuple[str, Any]]]) -> Confirmation:
    """`confirm_case` for a counterexample of the real model, which claims that source and
    target compute different real numbers. Two runs on the VM differ whenever their
    roundings do (any two summation orders), which that model allows, and the IEEE model is
    bit-exact; neither shows such a claim. So the inputs are evaluated in the real model
    on both sides (PrimFunc bodies encoded) and must separate them for every value of exp,
    erf, ... within the enclosures of the true values (`refinement.separates` with fp
    "real", `tvtv.encode.enclosures`): first the solver's inputs, then each seeded set on
    which the VM runs differ, at the `REAL_ELEMENTS` elements where they differ most
    (relatively). Under per-operation a drawn set must not be poison (`_replacement_filter`)
    and the solver's run is judged afterwards, as for every counterexample
    (`tvtv.api._demote_poisoned`); op-rounding means nothing here."""
    from tvtv.encode.abstraction import Abstraction, abstraction_level
    from tvtv.ir import relax_reader
    from tvtv.refinement import _RUN, Options, _encoded_at, separates

    src_prog, tgt_prog = relax_reader.read_module(before), relax_reader.read_module(after)
    src_fn, tgt_fn = src_prog.functions.get(fname), tgt_prog.functions.get(fname)
    if src_fn is None or tgt_fn is None:
        return Confirmation(False, "none")
    plain = tuple(a for a in assume if a not in (A.PER_OPERATION, A.OP_ROUNDING))
    token = _RUN.set(Options(fp="real", assume=plain))
    try:
        def encoded(inputs: dict[str, Any]) -> Any:
            # PrimFunc bodies read (an opaque call_tir would be any function of its inputs)
            with abstraction_level(Abstraction(tir="body")):
                return _encoded_at(src_prog, src_fn, tgt_prog, tgt_fn, inputs, "real")

        def separated(trial: Counterexample, enc: Any) -> bool:
            return enc is not None and separates(src_prog, src_fn, tgt_prog, tgt_fn, trial,
                                                 timeout=REAL_TIMEOUT, enc=enc) is True

        if separated(cex, encoded(cex.inputs)):
            if cex.executed_values is not None:
                # the solver's values of an element that passes through exp, erf, ... are
                # any values (the functions are open there); the VM's are the true ones,
                # rounded
                cex.source_value, cex.target_value = cex.executed_values
            return Confirmation(True, "real", "exact real evaluation separates source and target "
                                              "on the counterexample's inputs")
        deadline = time.perf_counter() + REAL_BUDGET
        accept = _replacement_filter(before, fname, assume)
        for j in range(1, len(sets)):
            (sj, srcj), (tj, tgtj) = runs["source"][j], runs["target"][j]
            if sj != "ok" or tj != "ok":
                continue
            if time.perf_counter() > deadline:
                break
            if has_non_finite(sets[j]):
                continue   # the real model has no NaN or infinity to evaluate them in
            inputs = dict(zip(param_names, sets[j]))
            differing = largest_differences(srcj, tgtj, REAL_ELEMENTS)
            if differing and accept is not None and not accept(inputs):
                continue
            enc = encoded(inputs) if differing else None    # one encoding for its elements
            for k, idx, x, y in differing:
                if not separated(Counterexample("value", "", inputs, k, idx), enc):
                    continue
                cex.inputs, cex.kind, cex.output, cex.index = inputs, "value", k, idx
                cex.source_value, cex.target_value, cex.confirmed_ieee = x, y, None
                cex.executed_values = (x, y)
                cex.message = (f"output {k} differs at index {idx} (seeded random inputs on which "
                               f"exact real evaluation separates source and target)")
                return Confirmation(True, "real-random-inputs",
                                    f"VM: source {x!r}, target {y!r}; separated in exact real "
                                    f"arithmetic")
    finally:
        _RUN.reset(token)
    return Confirmation(False, "none")


def largest_differences(src: list[np.ndarray], tgt: list[np.ndarray], n: int
                        ) -> list[tuple[int, tuple[int, ...], Any, Any]]:
    """(output, index, source value, target value) of the `n` elements where two runs'
    outputs of one shape differ most relative to their magnitude (NaN against a number and
    infinities first), for the real model's confirmation."""
    found: list[tuple[float, int, tuple[int, ...], Any, Any]] = []
    for k, (a, b) in enumerate(zip(src, tgt)):
        if a.shape != b.shape:
            continue
        x, y = a.astype(np.float64).reshape(-1), b.astype(np.float64).reshape(-1)
        with np.errstate(all="ignore"):
            same = (x == y) | (np.isnan(x) & np.isnan(y))
            rel = np.abs(x - y) / np.maximum(np.maximum(np.abs(x), np.abs(y)), 1e-300)
        rel = np.where(np.isnan(rel), np.inf, rel)
        # only each output's n largest become Python values (runs differ by rounding almost
        # everywhere, and outputs may hold many thousands of elements)
        differing = np.flatnonzero(~same)
        for i in differing[np.argsort(-rel[differing], kind="stable")[:n]]:
            idx = tuple(int(d) for d in np.unravel_index(int(i), a.shape)) if a.shape else ()
            found.append((float(rel[i]), k, idx, py_value(a[idx]), py_value(b[idx])))
    found.sort(key=lambda f: -f[0])
    return [f[1:] for f in found[:n]]


def _types_differ(before: Any, after: Any, fname: str) -> str | None:
    """A sentence naming the return types when TVM types `before[fname]` and `after[fname]`
    differently (their `ret_ty`, read as tvtv reads every type); None when they are the same
    or either is not fully static (symbolic shapes name their variables differently)."""
    from tvtv.ir import program as P
    from tvtv.ir.relax_reader import convert_type   # (TVM is imported by the bridge)

    def static(t: P.Type) -> bool:
        return isinstance(t, P.TensorType) or (
            isinstance(t, P.TupleType) and all(static(f) for f in t.fields))

    ta, tb = before[fname].ret_ty, after[fname].ret_ty
    try:
        a, b = convert_type(ta), convert_type(tb)
    except TvtvError:   # a type tvtv cannot read shows nothing
        return None
    if not (static(a) and static(b)) or a == b:
        return None
    return f"TVM's return types differ: source {ta}, target {tb}"


# How long `search_by_testing` may spend evaluating the input sets in the IEEE model (each
# set evaluates both modules: ~0.05-1 s each at the LegalizeOps table's shapes), after the
# target's VM runs (one child process for all the sets)
TESTING_BUDGET = 30.0


def _vm_differing_first(before: Any, fname: str, sets: list[list[Any]],
                        targets: list[tuple[str, Any]], assume: tuple[str, ...]) -> list[int]:
    """The order in which `search_by_testing` evaluates `sets`: first those on which the
    source and the target, both run on the VM, give different outputs, then the rest, each
    in their own order. Only an order: the VM legalizes the source, so its run is no evidence
    (the evidence is still the specification against the target), but where the source is
    already TIR (FuseTIR's, whose source is after LegalizeOps and FuseOps) it computes what
    the specification does, and the sets it separates are where to look first. Measured on
    FuseTIR seed-3 graph 24 (`x0 - x0` folded to 0 inside a fused PrimFunc, then a layer_norm
    over 144 elements): each set costs 3.3 s to evaluate, the 30 s budget ended before the
    one-special set, the 11th, and the check stayed `unknown` after 281 s.
    The sets' own order when the source cannot be run."""
    try:
        sources = tvm_bridge.run_vm_isolated({"source": before}, fname, sets)["source"]
    except InputError:
        return list(range(len(sets)))
    differ = [j for j, ((st, so), (tt, to)) in enumerate(zip(sources, targets))
              if st == "ok" and tt == "ok" and first_difference(so, to, assume) is not None]
    first = set(differ)
    return differ + [j for j in range(len(sets)) if j not in first]


def search_by_testing(before: Any, after: Any, fname: str,
                      params: list[tuple[str, tuple[int, ...], str]],
                      assume: tuple[str, ...] = (), budget: float = TESTING_BUDGET,
                      input_class: tuple[str, ...] = ()
                      ) -> tuple[Counterexample, Confirmation] | None:
    """When the solver left a check undecided: a counterexample found by testing instead, on
    the seeded input sets (`input_sets`) for parameters `params` (name, shape, dtype).

    Only `ieee-spec-cpu` evidence counts: the source's specification and the target, both
    evaluated in the IEEE model with TVM's own exp, erf, ... values, differ at an element
    where the target's execution on the VM gives the target's value (`_spec_vs_cpu_run`).
    A difference between two VM runs alone would not do: the VM legalizes the source, and a
    legalization that departs from the specification would blame a correct pass. The
    difference is real (a run of the source's meaning against the target's code), but the
    search is not a proof of anything when it finds none.

    None when no set shows one within `budget` seconds of evaluation, when the target cannot
    be run, or under op-rounding (an operator's rounding may then differ from its
    specification's, so a last-bit difference proves nothing). Under per-operation a run
    counts only when the source computes no NaN or infinity inside (`poisoned_inside`).
    The inputs are drawn under the assumptions and in `input_class` (whose NaN or inf
    computed inside still counts: `tvtv.absfp.assumptions.INPUT_CLASSES`)."""
    if A.OP_ROUNDING in assume:
        return None
    names = [name for name, _, _ in params]
    # round by round: on large graphs the budget may end before the last kind (the special
    # set, where TIR's max and min depart from the specification) is reached
    like = [np.zeros(shape, numpy_dtype(dtype)) for _, shape, dtype in params]
    sets = input_sets(like, A.restricting(assume, input_class), by_round=True,
                      draws=testing_draws(like))
    try:
        runs = tvm_bridge.run_vm_isolated({"target": after}, fname, sets)
    except InputError:
        return None
    order = _vm_differing_first(before, fname, sets, runs["target"], assume)
    sets, targets = [sets[j] for j in order], [runs["target"][j] for j in order]
    deadline = time.perf_counter() + budget
    accept = _replacement_filter(before, fname, assume)
    cex = Counterexample("value", "", {}, None, None)
    found = _spec_vs_cpu_run(before, after, fname, names, sets, targets, assume, cex,
                             first_drawn=0, accept=accept, deadline=deadline)
    if found is None:
        return None
    cex.confirmed_by = found.by
    return cex, found


# poisoned_inside's recent answers: a counterexample's run is judged at each step of a chain
# (`tvtv.api`), on the very same module and inputs
_POISONED: dict[tuple[Any, ...], bool | None] = {}
_POISONED_KEEP = 16


def poisoned_inside(module: Any, fname: str, inputs: dict[str, Any], assume: tuple[str, ...]
                    ) -> bool | None:
    """`_poisoned_inside`, remembered for the last few modules and inputs (tuple inputs
    are not remembered)."""
    return _remembered(_POISONED, _POISONED_KEEP,
                       _run_key(module, fname, inputs, tuple(sorted(assume))),
                       lambda: _poisoned_inside(module, fname, inputs, assume))


def _poisoned_inside(module: Any, fname: str, inputs: dict[str, Any], assume: tuple[str, ...]
                     ) -> bool | None:
    """Under the per-operation assumption: does `module`'s function, evaluated on `inputs` in
    the IEEE model (Relax ops by their specification; exp, tanh, erf ... by numpy's C-library
    values, `tvtv.encode.evaluate.libm_truth`), compute a NaN (no-nan) or an infinity
    (no-inf) in a tensor its outputs are computed from? Then the run is poison and no
    counterexample. None when a value cannot be evaluated (an opaque function)."""
    from tvtv.absfp import assumptions
    from tvtv.absfp.dtypes import is_float

    flags = assumptions.per_operation(assume)
    if not flags:
        return False
    try:
        _, ctx = _ieee_run(module, fname, inputs, keep_live=True, value_of=libm_value)
    except (TvtvError, KeyError, NotImplementedError, z3.Z3Exception):
        return None
    poison = [p for t in [*ctx.live_values, *ctx.inner_live_values] if is_float(t.dtype)
              for k in range(t.numel)
              for p in assumptions.excluded(flags, ctx.model.domain(t.dtype), t.at(k))]
    # one term for the whole run: the elements' shared subterms are evaluated once
    return libm_truth(zf.Or(*poison)) if poison else False


def confirm(before: Any, after: Any, fname: str, param_names: list[str],
            cex: Counterexample, assume: tuple[str, ...] = (), fp: str = "abstract",
            input_class: tuple[str, ...] = ()) -> bool | None:
    """`confirm_case(...).confirmed`, recording how it was decided in `cex.confirmed_by`."""
    c = confirm_case(before, after, fname, param_names, cex, assume, fp, input_class)
    cex.confirmed_by = c.by
    cex.not_run_detail = c.detail if c.confirmed is None else ""
    return c.confirmed


def py_value(v: Any) -> Any:
    """A numpy element as a Python bool/int/float."""
    v = np.asarray(v).item()
    return float(v) if isinstance(v, float) else v


_py = py_value
