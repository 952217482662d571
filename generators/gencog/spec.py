"""Op specifications in GenCoGL's classified form (GenCoG paper, figure 5a), and their registry.

A `TypeSpec` says, with `generators.gencog.expr` expressions, what a well-typed call of one
Relax op looks like: its attributes (name -> expression, referable as ``a(name)``), the number
of inputs, their ranks, dtypes and shapes, extra constraints (Boolean expressions over all of
these), and the number, dtypes and shapes of the outputs (which may refer to anything before).

The defaults give every input a template rank in `rank_range`, a dtype from `dtypes` and dims in
`dim_range`; a spec overrides what its op fixes. `params` are the inputs that are weights: the
generator gives them fresh graph inputs instead of wiring existing values (GenCoG's
``Op(..., params=[...])``). `emit_as` is "linear" for the composite spec of
`relax.op.linear` (permute_dims + matmul (+ add)), else None.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Sequence

from generators.gencog.expr import DTYPE, IN, INT, OUT, Expr, ListGen, Var, to_expr

# Tensor bounds: every tensor at most MAX_ELEMS elements, a fresh graph input at most
# INPUT_MAX_ELEMS (tvtv checks the graphs with an SMT solver); ranks 1..MAX_RANK.
MAX_ELEMS = 4096
INPUT_MAX_ELEMS = 1024
MAX_RANK = 5
MAX_DIM = 8

F32, F16, BF16 = "float32", "float16", "bfloat16"
I32, I8, I64, BOOL = "int32", "int8", "int64", "bool"
FLOATS = (F32, F16, BF16)
INTS = (I32, I8)
NUMERIC = FLOATS + INTS
ALL_DTYPES = NUMERIC + (BOOL,)


def dim_var() -> Var:
    """A template dimension in 1..MAX_DIM."""
    return Var(INT, ran=(1, MAX_DIM))


@dataclass
class TypeSpec:
    """The type constraints of one op (see the module docstring)."""

    attrs: list[tuple[str, Any]] = field(default_factory=list)
    in_num: Any = 1
    in_ranks: Optional[Any] = None
    in_dtypes: Optional[Any] = None
    in_shapes: Optional[Any] = None
    extra: list[Any] = field(default_factory=list)
    out_num: Any = 1
    out_dtypes: Optional[Any] = None
    out_shapes: Any = None
    dtypes: Sequence[str] = FLOATS
    rank_range: tuple[Any, Any] = (1, MAX_RANK)
    params: tuple[int, ...] = ()
    variadic: bool = False
    emit_as: Optional[str] = None
    tuple_out: bool = False
    """True when the op returns a Relax tuple (split, batch_norm) even with one field."""
    used_outputs: Optional[tuple[int, ...]] = None
    """Tuple fields the graph may use (None: all); batch_norm's running stats are not."""

    def __post_init__(self) -> None:
        dts = tuple(self.dtypes)
        lo, hi = self.rank_range
        if self.in_ranks is None:
            # rank_range bounds the first input; the others (weights, ...) are 1..MAX_RANK
            self.in_ranks = ListGen(IN.num, lambda i: Var(
                INT, ran=(lo, hi) if i.value == 0 else (1, MAX_RANK), name="rank"))
        if self.in_dtypes is None:
            # one dtype for all inputs: the first input's, from `dtypes`
            first = Var(DTYPE, choices=dts, name="dt")
            self.in_dtypes = ListGen(IN.num, lambda i: first)
        if self.in_shapes is None:
            self.in_shapes = ListGen(IN.num, lambda i: ListGen(IN[i].rank, lambda _: dim_var()))
        if self.out_dtypes is None:
            self.out_dtypes = ListGen(OUT.num, lambda _: IN[0].dtype)
        if self.out_shapes is None:
            raise ValueError("a spec needs out_shapes")
        self.attrs = [(n, to_expr(e)) for n, e in self.attrs]
        self.extra = [to_expr(e) for e in self.extra]
        self.in_num, self.out_num = to_expr(self.in_num), to_expr(self.out_num)
        self.in_ranks, self.in_dtypes = to_expr(self.in_ranks), to_expr(self.in_dtypes)
        self.in_shapes, self.out_dtypes = to_expr(self.in_shapes), to_expr(self.out_dtypes)
        self.out_shapes = to_expr(self.out_shapes)

    def attr(self, name: str) -> Expr:
        for n, e in self.attrs:
            if n == name:
                return e
        raise KeyError(name)

    def add_attr(self, name: str, expr: Any) -> "TypeSpec":
        self.attrs.append((name, to_expr(expr)))
        return self


@dataclass(frozen=True)
class Op:
    """A registered op: its Relax name ("relax.nn.conv2d", or "linear" for the composite
    spec) and the factory of its spec (built once, on first use)."""

    name: str
    factory: Callable[[], TypeSpec]

    @property
    def spec(self) -> TypeSpec:
        return _spec_cache(self)


_SPECS: dict[str, TypeSpec] = {}


def _spec_cache(op: Op) -> TypeSpec:
    s = _SPECS.get(op.name)
    if s is None:
        s = _SPECS[op.name] = op.factory()
    return s


OPS: dict[str, Op] = {}


def register(name: str, factory: Callable[[], TypeSpec]) -> None:
    """Register `factory` as the spec of op `name` ("relax." prefix optional except for the
    composite "linear")."""
    full = name if name.startswith("relax.") or name == "linear" else f"relax.{name}"
    if full in OPS:
        raise ValueError(f"op {full} registered twice")
    OPS[full] = Op(full, factory)

