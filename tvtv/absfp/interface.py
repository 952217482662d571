"""The interface every scalar model offers to the op encoders.

A *float model* (abstract or IEEE) is chosen per run. `model.domain(dtype)` gives a
`ScalarDomain`: the SMT sort of one element of that dtype and its operations. Encoders only
ever call these methods, so the same encoder works in both float models and for integers.
"""
from __future__ import annotations

import math
from abc import ABC, abstractmethod
from typing import Any, Callable, Sequence

import z3

from tvtv import z3fast as zf
from tvtv.absfp.special import COMPUTED_IN
from tvtv.errors import Unsupported

UBCallback = Callable[[z3.BoolRef, str], None]


class ScalarDomain(ABC):
    """Values of one dtype: an SMT sort and exact or abstract operations on it."""

    dtype: str
    sort: z3.SortRef
    # True when the domain states float sums and products exactly (`sum`, `prod`: the real
    # model), so `tvtv.encode.reduction` needs no uninterpreted function for them
    exact_reductions: bool = False
    # the constructor of finite values from their payload when inputs are known finite (the
    # real model under no-nan and no-inf: `Tensor.variable` builds inputs from it), else None
    finite_element: Any = None

    # -- values ------------------------------------------------------------------------------
    @abstractmethod
    def const(self, value: Any) -> z3.ExprRef: ...

    def var(self, name: str) -> z3.ExprRef:
        return z3.Const(name, self.sort)

    def zero(self) -> z3.ExprRef:
        return self.const(0)

    def one(self) -> z3.ExprRef:
        return self.const(1)

    def with_specials(self, specials: dict[str, float | str], cases: dict[str, z3.BoolRef],
                      x: z3.ExprRef, general: z3.ExprRef) -> z3.ExprRef:
        """`general`, except on the special inputs a special-value rule fixes
        (`absfp/special.py`): where `cases[key]` holds, `specials[key]` (`"x"`: x itself)."""
        result = general
        for key, cond in cases.items():
            if key in specials:
                out = specials[key]
                result = zf.If(cond, x if out == "x" else self.const(out), result)
        return result

    # -- arithmetic --------------------------------------------------------------------------
    @abstractmethod
    def add(self, a: z3.ExprRef, b: z3.ExprRef) -> z3.ExprRef: ...
    @abstractmethod
    def sub(self, a: z3.ExprRef, b: z3.ExprRef) -> z3.ExprRef: ...
    @abstractmethod
    def mul(self, a: z3.ExprRef, b: z3.ExprRef) -> z3.ExprRef: ...
    @abstractmethod
    def div(self, a: z3.ExprRef, b: z3.ExprRef) -> z3.ExprRef: ...
    @abstractmethod
    def neg(self, a: z3.ExprRef) -> z3.ExprRef: ...
    @abstractmethod
    def abs(self, a: z3.ExprRef) -> z3.ExprRef: ...

    def self_difference(self, x: z3.ExprRef) -> z3.ExprRef:
        """A float domain's x - x as its own short term: +0 for finite x (IEEE 754 §6.3: an
        exact zero sum of operands of opposite signs is +0 in round-to-nearest, also for
        x = ±0), NaN for NaN and ±inf (inf - inf is invalid, §7.2). The general rule means
        the same, but as terms no simplifier folds (the abstract model's x + (-x) is a chain
        of cases): TVM's simplifier folds a fused `x - x` to the numeral 0
        (docs/findings.md), and under no-nan/no-inf premises this term becomes that +0 in
        canonical form, where the general one left each element to the solver (FuseTIR's
        seed-0 graph 6 under per-operation: unknown before, proved in 78 s after;
        2026-11-29)."""
        return zf.If(zf.Or(self.is_nan(x), self.is_inf(x)), self.nan(), self.zero())

    def difference_from_guarded(self, a: z3.ExprRef, b: z3.ExprRef) -> z3.ExprRef | None:
        """`a - b` where `b` is `ite(c, k, a)`, split on `c`: `ite(c, a - k, a - a)`, with
        `a - a` as `self_difference`, and `a` put in as -inf where `c` says it is -inf. None
        when `b` has another shape.

        That shape is `x - T.max(-FLT_MAX, x)` (`tvtv.encode.tir.intrinsics.tir_max`): the
        `x - max` of a softmax or log_softmax over an axis of one element, whose max reduction
        starts from -FLT_MAX. Split, its value is one of -inf, NaN and +0, and what follows
        (FastMathTransform's fast_exp polynomial, a division) is a function of three numerals;
        left as a subtraction, the solver decided it bit by bit for every float `x` and
        timed out after 30 s on a softmax over a (2, 4, 1) tensor's last axis. Same value
        both ways: it is a case split."""
        if not (z3.is_app_of(b, z3.Z3_OP_ITE) and z3.eq(b.arg(2), a)):
            return None
        c, k = b.arg(0), b.arg(1)
        if z3.eq(c, self.is_signed_inf(a, -1)):
            pinned = z3.simplify(self.sub(self.const(-math.inf), k))   # a numeral in IEEE
        else:
            pinned = self.sub(a, k)
        return zf.If(c, pinned, self.self_difference(a))

    def maximum(self, a: z3.ExprRef, b: z3.ExprRef) -> z3.ExprRef:
        """numpy.maximum: NaN if either is NaN, else `a if a > b else b` (ties give b)."""
        return zf.If(zf.Or(self.is_nan(a), self.is_nan(b)), self.nan(),
                     zf.If(self.gt(a, b), a, b))

    def minimum(self, a: z3.ExprRef, b: z3.ExprRef) -> z3.ExprRef:
        """numpy.minimum: NaN if either is NaN, else `a if a < b else b` (ties give b)."""
        return zf.If(zf.Or(self.is_nan(a), self.is_nan(b)), self.nan(),
                     zf.If(self.lt(a, b), a, b))

    # -- comparisons (IEEE: every comparison with NaN is false except !=) ------------------
    @abstractmethod
    def lt(self, a: z3.ExprRef, b: z3.ExprRef) -> z3.BoolRef: ...
    @abstractmethod
    def eq(self, a: z3.ExprRef, b: z3.ExprRef) -> z3.BoolRef: ...

    def le(self, a: z3.ExprRef, b: z3.ExprRef) -> z3.BoolRef:
        return zf.Or(self.lt(a, b), self.eq(a, b))

    def gt(self, a: z3.ExprRef, b: z3.ExprRef) -> z3.BoolRef:
        return self.lt(b, a)

    def ge(self, a: z3.ExprRef, b: z3.ExprRef) -> z3.BoolRef:
        return self.le(b, a)

    def ne(self, a: z3.ExprRef, b: z3.ExprRef) -> z3.BoolRef:
        return zf.Not(self.eq(a, b))

    # -- classification ----------------------------------------------------------------------
    def is_nan(self, a: z3.ExprRef) -> z3.BoolRef:
        return z3.BoolVal(False)

    def nan(self) -> z3.ExprRef:
        raise NotImplementedError(f"{self.dtype} has no NaN")

    def is_inf(self, a: z3.ExprRef) -> z3.BoolRef:
        return z3.BoolVal(False)

    def is_signed_inf(self, a: z3.ExprRef, sign: int) -> z3.BoolRef:
        """`a` is -inf (sign -1) or +inf (sign 1)."""
        zero = self.const(0.0)
        return zf.And(self.is_inf(a), self.lt(a, zero) if sign < 0 else self.gt(a, zero))

    def same(self, a: z3.ExprRef, b: z3.ExprRef) -> z3.BoolRef:
        """Refinement equality: both NaN (payloads unobserved), or the very same value
        (+0.0 and -0.0 differ)."""
        return a == b

    # -- functions -----------------------------------------------------------------------------
    def unary(self, fname: str, a: z3.ExprRef) -> z3.ExprRef:
        raise Unsupported(f"{fname} on {self.dtype}")

    def binary(self, fname: str, a: z3.ExprRef, b: z3.ExprRef) -> z3.ExprRef:
        raise Unsupported(f"{fname} on {self.dtype}")

    # True when `bounded` states something (the abstract model), so a range is worth a rung
    states_ranges: bool = False

    def bounded(self, a: z3.ExprRef, bound: float, nan: bool = False) -> z3.ExprRef:
        """`a`, a value proved (outside the model) to be at most `bound` in magnitude or,
        only when `nan`, NaN, with that fact stated where the model would not know it. Exact
        models (IEEE, real) know it already: `a` itself."""
        return a

    # -- booleans ------------------------------------------------------------------------------
    def truthy(self, a: z3.ExprRef) -> z3.BoolRef:
        """`a != 0` (NaN is true, as in C)."""
        return zf.Not(self.eq(a, self.zero()))

    def from_bool(self, b: z3.BoolRef) -> z3.ExprRef:
        return zf.If(b, self.one(), self.zero())


class FloatModel(ABC):
    """A run's choice of float semantics: 'abstract' (mlir-tv), 'ieee' (SMT FP theory) or
    'real' (exact real arithmetic: correct up to rounding only)."""

    name: str

    def __init__(self) -> None:
        self.on_ub: UBCallback = lambda cond, why: None
        self._domains: dict[str, ScalarDomain] = {}
        # Facts of the reduction interpretation (`reductions.py`), keyed by function name.
        self.hash_facts: dict[str, z3.BoolRef] = {}

    def domain(self, dtype: str) -> ScalarDomain:
        if dtype not in self._domains:
            self._domains[dtype] = self._make_domain(dtype)
        return self._domains[dtype]

    def false_atoms(self) -> list[z3.BoolRef]:
        """Atoms the model's own preconditions make false (the abstract model's constants are
        never zero, inf or NaN); none where constants are numerals."""
        return []

    def _make_domain(self, dtype: str) -> ScalarDomain:
        """Integers and bools are exact bit-vectors in every model (division by zero is UB,
        reported through `on_ub`); floats are the model's own `_float_domain`."""
        from tvtv.absfp.dtypes import is_bool, is_float, is_int
        from tvtv.absfp.integers import BoolDomain, IntDomain
        if is_float(dtype):
            return self._float_domain(dtype)
        if is_int(dtype):
            return IntDomain(dtype, lambda c, w: self.on_ub(c, w))
        if is_bool(dtype):
            return BoolDomain()
        raise Unsupported(f"dtype {dtype} is not supported")

    @abstractmethod
    def _float_domain(self, dtype: str) -> ScalarDomain:
        """The scalar domain of the float dtype `dtype` in this model."""

    @abstractmethod
    def cast(self, x: z3.ExprRef, src: str, dst: str) -> z3.ExprRef:
        """astype from `src` to `dst` dtype."""

    def computed_wider(self, fname: str, x: z3.ExprRef, dtype: str) -> z3.ExprRef | None:
        """`fname(x)` in `dtype` as the wider dtype's function of `x` cast up, cast back,
        where that is what the function means in `dtype` (`special.COMPUTED_IN`: float16
        erf is float32 erf rounded); None elsewhere. The float domains' `unary` asks first."""
        wide = COMPUTED_IN.get((fname, dtype))
        if wide is None:
            return None
        up = self.domain(wide).unary(fname, self.cast(x, dtype, wide))
        return self.cast(up, wide, dtype)

    def preconditions(self) -> list[z3.BoolRef]:
        """Facts the model assumes (e.g. the order of abstract constants)."""
        return []

    @abstractmethod
    def decode(self, model: z3.ModelRef, terms: Sequence[tuple[z3.ExprRef, str]]) -> list[Any]:
        """Concrete Python values (floats, ints, bools) for `terms` in a solver model.

        For floats, special values come back as float('nan'), ±inf and -0.0."""

    def describe(self) -> str:
        return self.name


def model_value(model: z3.ModelRef, term: z3.ExprRef) -> z3.ExprRef | None:
    """The numeral a solver model gives `term`, or None when the model cannot say.

    Z3 sometimes leaves a select over an `as-array` model of an uninterpreted function
    unevaluated; simplifying the evaluated term, or evaluating it again, reduces it. An
    uninterpreted function applied to a lambda array (an opaque PrimFunc's output) may stay
    unevaluated: such values are reported as unknown."""
    v = model.eval(term, model_completion=True)
    for _ in range(3):
        if z3.is_bv_value(v) or z3.is_fp_value(v) or z3.is_true(v) or z3.is_false(v):
            return v
        v = model.eval(z3.simplify(v), model_completion=True)
    return None
