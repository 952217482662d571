"""`OpInfo`, after the RFC's operator registry: per Relax operator, a recognizer, a solver and a
sampler, plus how to build the call.

* recognizer `recognize(T)`: can a call of this op return type `T`?
* solver `solve(T, ctx)`: argument types (and attributes) such that the call returns exactly
  `T`. The RFC invariant, tested on every op: **if the recognizer accepts T, the solver returns a
  correct solution** (TVM's own type inference of the built call gives back `T`). Solvers need
  not find every solution, only correct ones; when they have freedom they draw it from `ctx`
  (the module's `TypeGenerator`, so sizes come from the module's dimension pool and stay small).
* sampler `sample(ctx)`: a random return type the recognizer accepts, with its solution ("a
  return type, then the solver", as in the RFC's prototype).

Arguments that are not free expressions carry a `kind`: integer divisors must be positive
constants (an integer division by zero kills the VM with SIGFPE, and INT_MIN / -1 traps too),
`take` indices must be in-range constants.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from generators.typed.types import TensorTy, Ty, TypeGenerator

EXPR = "expr"          # any expression of the type
POSITIVE = "positive"  # a constant whose elements are all >= 1
INDICES = "indices"    # a constant of integer indices in [0, bound)


@dataclass(frozen=True)
class ArgSpec:
    """One tensor argument of a call: its type and what its value may be."""

    ty: Ty
    kind: str = EXPR
    bound: int = 0


@dataclass
class Solution:
    """Argument specs and attributes (keyword arguments of the `tvm.relax.op` function)."""

    args: list[ArgSpec]
    attrs: dict[str, Any] = field(default_factory=dict)


Recognizer = Callable[[Ty], bool]
Solver = Callable[[Ty, TypeGenerator], Solution]
RetSampler = Callable[[TypeGenerator], Ty]
Builder = Callable[[list[Any], dict[str, Any]], Any]


@dataclass(frozen=True)
class OpInfo:
    """Everything the generator knows about one Relax operator `name` (e.g. "relax.add")."""

    name: str
    recognize: Recognizer
    solve: Solver
    sample_ret: RetSampler
    build: Builder
    weight: float = 1.0

    def sample(self, ctx: TypeGenerator) -> tuple[Ty, Solution]:
        """A random valid call: (return type, solution)."""
        ty = self.sample_ret(ctx)
        return ty, self.solve(ty, ctx)


REGISTRY: dict[str, OpInfo] = {}
"""Op name -> OpInfo; filled by the op family modules (insertion order is fixed)."""


def register(name: str, recognize: Recognizer, solve: Solver, sample_ret: RetSampler,
             build: Builder, weight: float = 1.0) -> OpInfo:
    if name in REGISTRY:
        raise ValueError(f"op {name} registered twice")
    info = OpInfo(name, recognize, solve, sample_ret, build, weight)
    REGISTRY[name] = info
    return info


# -- shared recognizers and samplers -----------------------------------------------------------
def tensor_rec(dtypes: tuple[str, ...], lo: int = 0, hi: int = 4,
               extra: Optional[Callable[[TensorTy], bool]] = None) -> Recognizer:
    """Recognizes tensors with a dtype in `dtypes`, rank in lo..hi, and `extra` if given."""
    def rec(ty: Ty) -> bool:
        return (isinstance(ty, TensorTy) and ty.dtype in dtypes and lo <= ty.ndim <= hi
                and (extra is None or extra(ty)))
    return rec


def tensor_sampler(dtypes: tuple[str, ...], lo: int = 0, hi: int = 4,
                   extra: Optional[Callable[[TensorTy], bool]] = None,
                   fix: Optional[Callable[[TensorTy, TypeGenerator], TensorTy]] = None
                   ) -> RetSampler:
    """Samples a tensor type the matching `tensor_rec` accepts (`fix` repairs a draw to meet
    `extra`; the draw is retried until it does)."""
    def sample(ctx: TypeGenerator) -> Ty:
        for _ in range(100):
            ty = ctx.tensor(dtypes, lo, hi)
            if fix is not None:
                ty = fix(ty, ctx)
            if extra is None or extra(ty):
                return ty
        raise RuntimeError("sampler could not draw an accepted type")
    return sample


def relax_op(path: str) -> Callable[..., Any]:
    """`tvm.relax.op.<path>` ("nn.conv2d" -> relax.op.nn.conv2d)."""
    from tvm import relax

    fn: Any = relax.op
    for part in path.split("."):
        fn = getattr(fn, part)
    return fn
