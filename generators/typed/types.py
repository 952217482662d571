"""The static types the type-directed generator reasons about, and the type generator.

`TensorTy(shape, dtype)` is a Relax tensor of static shape; `TupleTy(fields)` a Relax tuple of
them. Function types are kept as `FuncTy(params, ret)` for local-function variables only. The
generator works on these plain, hashable Python values and converts to Relax types
(`to_relax`) only when it builds IR, so the solvers never touch TVM.

`TypeGenerator` draws random types. Dimensions come from a small per-module pool (plus the odd
fresh size) so that independently drawn types often coincide, which lets the expression
generator reuse existing variables (an exact type match is needed to use a variable).
"""
from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Any, Optional, Sequence, Union

FLOATS = ("float32", "float16", "bfloat16")
INTS = ("int32", "int8", "int64")
BOOL = "bool"
ALL_DTYPES = FLOATS + INTS + (BOOL,)
NUMERIC = FLOATS + INTS

MAX_ELEMS = 4096
"""No tensor value of a generated module has more elements."""
INPUT_MAX_ELEMS = 1024
"""No parameter of a generated function has more elements."""
MAX_RANK = 4


@dataclass(frozen=True)
class TensorTy:
    """A tensor of static `shape` and `dtype` (a TVM dtype string)."""

    shape: tuple[int, ...]
    dtype: str

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    def __str__(self) -> str:
        return f"{self.dtype}{list(self.shape)}"


@dataclass(frozen=True)
class TupleTy:
    """A Relax tuple whose fields have the types `fields`."""

    fields: tuple["Ty", ...]

    def __str__(self) -> str:
        return "(" + ", ".join(str(f) for f in self.fields) + ")"


@dataclass(frozen=True)
class FuncTy:
    """The type of a (local or global) function: parameter types and return type."""

    params: tuple["Ty", ...]
    ret: "Ty"


Ty = Union[TensorTy, TupleTy]

BOOL_SCALAR = TensorTy((), BOOL)


def tensor(shape: Sequence[int], dtype: str) -> TensorTy:
    return TensorTy(tuple(int(d) for d in shape), dtype)


def total_size(ty: Ty) -> int:
    """Elements of a tensor, or the sum over the tensors of a tuple."""
    if isinstance(ty, TensorTy):
        return ty.size
    return sum(total_size(f) for f in ty.fields)


def to_relax(ty: Any) -> Any:
    """The Relax type of `ty` (TensorTy, TupleTy or FuncTy)."""
    from tvm import relax
    import tvm

    if isinstance(ty, TensorTy):
        return relax.TensorType(list(ty.shape), ty.dtype)
    if isinstance(ty, TupleTy):
        return tvm.ir.TupleType([to_relax(f) for f in ty.fields])
    if isinstance(ty, FuncTy):
        return relax.FuncType([to_relax(p) for p in ty.params], to_relax(ty.ret))
    raise TypeError(f"not a generator type: {ty!r}")


def from_relax(rty: Any) -> Optional[Ty]:
    """`rty` as a TensorTy / TupleTy, or None if it is not fully static (e.g. R.Tensor(ndim=2))."""
    from tvm import relax
    import tvm

    if isinstance(rty, relax.TensorType):
        if not isinstance(rty.shape, relax.ShapeExpr):
            return None
        dims = []
        for v in rty.shape.values:
            if type(v).__name__ != "IntImm":
                return None
            dims.append(int(v.value))
        return TensorTy(tuple(dims), str(rty.dtype))
    if isinstance(rty, tvm.ir.TupleType):
        fields = [from_relax(f) for f in rty.fields]
        if any(f is None for f in fields):
            return None
        return TupleTy(tuple(fields))  # type: ignore[arg-type]
    return None


def shrink(dims: list[int], max_elems: int, keep: Sequence[int] = ()) -> list[int]:
    """`dims` with the largest dims (not in `keep`) halved until the product is <= max_elems."""
    dims = list(dims)
    while math.prod(dims) > max_elems:
        free = [i for i in range(len(dims)) if i not in keep and dims[i] > 1]
        if not free:
            break
        i = max(free, key=lambda j: (dims[j], -j))
        dims[i] = max(1, dims[i] // 2)
    return dims


DTYPE_WEIGHTS = {"float32": 10, "float16": 2, "bfloat16": 2, "int32": 2, "int8": 1.5,
                 "int64": 0.5, "bool": 1.5}
RANK_WEIGHTS = {0: 0.5, 1: 1.5, 2: 3, 3: 3, 4: 3}


class TypeGenerator:
    """Random types for one module, drawn from `rng` (the module's only random source)."""

    def __init__(self, rng: random.Random, dtypes: Sequence[str] = ALL_DTYPES,
                 pool_size: int = 4) -> None:
        self.rng = rng
        self.dtypes = [d for d in DTYPE_WEIGHTS if d in dtypes]  # fixed order
        self.pool = sorted({rng.randint(1, 8) for _ in range(pool_size)} | {1})

    def dim(self) -> int:
        """A dimension: usually from the module's pool, sometimes fresh (1..8)."""
        if self.rng.random() < 0.85:
            return self.rng.choice(self.pool)
        return self.rng.randint(1, 8)

    def dtype(self, allowed: Optional[Sequence[str]] = None) -> str:
        cands = [d for d in self.dtypes if allowed is None or d in allowed]
        if not cands:
            cands = list(allowed or self.dtypes)
        return self.rng.choices(cands, weights=[DTYPE_WEIGHTS.get(d, 1) for d in cands])[0]

    def rank(self, lo: int = 0, hi: int = MAX_RANK) -> int:
        ranks = [r for r in RANK_WEIGHTS if lo <= r <= hi]
        return self.rng.choices(ranks, weights=[RANK_WEIGHTS[r] for r in ranks])[0]

    def shape(self, rank: int, max_elems: int = INPUT_MAX_ELEMS) -> tuple[int, ...]:
        return tuple(shrink([self.dim() for _ in range(rank)], max_elems))

    def tensor(self, dtypes: Optional[Sequence[str]] = None, lo: int = 0, hi: int = MAX_RANK,
               max_elems: int = INPUT_MAX_ELEMS) -> TensorTy:
        return TensorTy(self.shape(self.rank(lo, hi), max_elems), self.dtype(dtypes))

    def tuple_containing(self, ty: Ty) -> tuple[TupleTy, int]:
        """A tuple type with `ty` at some index (the index is returned): a random tuple, or one
        shaped like the result of `split` or `batch_norm` so those ops can produce it."""
        r = self.rng.random()
        if isinstance(ty, TensorTy) and ty.ndim >= 1 and r < 0.35:   # split-like
            axis = self.rng.randrange(ty.ndim)
            n = self.rng.randint(2, 3)
            fields = []
            for _ in range(n - 1):
                shape = list(ty.shape)
                shape[axis] = self.rng.choice([ty.shape[axis], self.dim()])
                fields.append(TensorTy(tuple(shrink(shape, MAX_ELEMS // n, keep=[])), ty.dtype))
            i = self.rng.randrange(n)
            fields.insert(i, ty)
            if sum(f.size for f in fields) <= MAX_ELEMS and \
                    all(f.shape[:axis] + f.shape[axis + 1:] == ty.shape[:axis] + ty.shape[axis + 1:]
                        for f in fields):
                return TupleTy(tuple(fields)), i
        if isinstance(ty, TensorTy) and ty.ndim >= 2 and ty.dtype == "float32" and r < 0.5:
            c = ty.shape[1]                                     # batch_norm-like, axis 1
            stat = TensorTy((c,), ty.dtype)
            return TupleTy((ty, stat, stat)), 0
        n = self.rng.randint(1, 3)
        fields = [self.tensor(max_elems=256) for _ in range(n - 1)]
        i = self.rng.randrange(n)
        fields.insert(i, ty)
        return TupleTy(tuple(fields)), i

    def widen(self, ty: TensorTy) -> Any:
        """A Relax tensor type less specific than `ty`: its rank without the shape, or only
        its dtype (a value of `ty` has this type; `match_cast` recovers `ty`)."""
        from tvm import relax

        if self.rng.random() < 0.6:
            return relax.TensorType(ndim=ty.ndim, dtype=ty.dtype)
        return relax.TensorType(dtype=ty.dtype)
