"""HIRGen's operator pool on Relax, and the builder that inserts one candidate node at a time.

Every op lists the operand dtypes it accepts. The lists were MEASURED on TVM 0.27 (each op on
a (2, 3) tensor of each dtype, type inference + ``relax.build(target="llvm")`` + one VM run;
the script is described in the report of this module's author): for example ``atan``/``sinh``/
``cosh`` fail to build in float16 ("unknown intrinsic tirx.atan"), ``power`` builds only for
float32/float16, ``isnan``/``isinf``/``isfinite`` not for bfloat16, arithmetic not for bool,
``logical_and``/``logical_or`` only for bool. Integer ``divide``, ``floor_divide`` and
``floor_mod`` type-check and build but the VM dies with SIGFPE on a zero divisor, so they are
float-only here. `TYPE_REJECTED` lists (op, dtype) pairs TVM's type inference rejects (used by
disruptive mode).

Operand choice follows HIRGen: an operator and an operand dtype are drawn first, then the
operands are connected to existing values of fitting type (or new inputs / scalar constants),
and the result type is inferred here (and checked again by TVM when emitted).
"""
from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Sequence

from generators.graph import CONST, Graph, Node, TensorSpec
from generators.ops import NICE_FLOATS, Reject, broadcast_shapes, random_factorization, require

MAX_ELEMS = 4096
INPUT_MAX_ELEMS = 1024
MAX_RANK = 4

F32, F16, BF16, I32, I8, BOOL = "float32", "float16", "bfloat16", "int32", "int8", "bool"
DTYPES = (F32, F16, BF16, I32, I8, BOOL)
FLOATS = (F32, F16, BF16)
NUMERIC = (F32, F16, BF16, I32, I8)
INTS_BOOL = (I32, I8, BOOL)


def rand_shape(rng: random.Random, rank: Optional[int] = None,
               max_elems: int = INPUT_MAX_ELEMS) -> tuple[int, ...]:
    """A random shape of rank 0..4 (rank 0 rare), dims 1..6, at most `max_elems` elements."""
    if rank is None:
        rank = rng.choice((0, 1, 1, 2, 2, 2, 3, 3, 4))
    dims = [rng.randint(1, 6) for _ in range(rank)]
    while math.prod(dims) > max_elems:
        i = max(range(rank), key=lambda j: dims[j])
        dims[i] = max(1, dims[i] // 2)
    return tuple(dims)


@dataclass
class Builder:
    """A flat graph under construction: values, who produced them, how often they are used."""

    rng: random.Random
    reuse_prob: float = 0.85
    graph: Graph = field(default_factory=Graph)
    values: list[str] = field(default_factory=list)
    producer: dict[str, Optional[str]] = field(default_factory=dict)  # value -> op (None: input)
    uses: dict[str, int] = field(default_factory=dict)
    counters: dict[str, int] = field(default_factory=lambda: {"x": 0, "v": 0, "c": 0})
    last: Optional[Node] = None  # the last operator node added

    def snapshot(self) -> tuple[Any, ...]:
        return (dict(self.graph.inputs), len(self.graph.nodes), list(self.values),
                dict(self.producer), dict(self.uses), dict(self.counters), self.last)

    def restore(self, snap: tuple[Any, ...]) -> None:
        inputs, n, values, producer, uses, counters, last = snap
        self.graph.inputs = dict(inputs)
        del self.graph.nodes[n:]
        self.values, self.producer, self.uses = list(values), dict(producer), dict(uses)
        self.counters, self.last = dict(counters), last

    def fresh(self, prefix: str) -> str:
        k = self.counters[prefix]
        self.counters[prefix] = k + 1
        return f"{prefix}{k}"

    def spec(self, name: str) -> TensorSpec:
        s = self.graph.spec_of(name)
        assert isinstance(s, TensorSpec)
        return s

    @property
    def num_calls(self) -> int:
        return sum(1 for n in self.graph.nodes if n.is_call)

    # -- values ------------------------------------------------------------------------------
    def new_input(self, spec: TensorSpec) -> str:
        require(spec.size <= INPUT_MAX_ELEMS, "input too big")
        name = self.fresh("x")
        self.graph.inputs[name] = spec
        self.values.append(name)
        self.producer[name] = None
        self.uses[name] = 0
        return name

    def scalar_const(self, dtype: str) -> str:
        """A rank-0 constant of `dtype` (never zero; no bfloat16: numpy cannot hold it)."""
        require(dtype != BF16, "no bfloat16 constants")
        if dtype in FLOATS:
            value: Any = self.rng.choice([v for v in NICE_FLOATS if v != 0.0])
        elif dtype == BOOL:
            value = self.rng.random() < 0.5
        else:
            value = self.rng.choice((-3, -2, -1, 1, 2, 3, 5))
        name = self.fresh("c")
        self.graph.nodes.append(Node(name, CONST, [], {"value": value, "dtype": dtype},
                                     TensorSpec((), dtype)))
        self.producer[name] = None
        self.uses[name] = 0
        return name

    def pick(self, pred: Callable[[TensorSpec], bool],
             make: Optional[Callable[[], Optional[TensorSpec]]]) -> str:
        """An existing value whose type satisfies `pred` (probability `reuse_prob`, values
        nobody uses yet preferred), else a new input of type `make()`."""
        cands = [v for v in self.values if pred(self.spec(v))]
        if cands and (make is None or self.rng.random() < self.reuse_prob):
            unused = [v for v in cands if self.uses[v] == 0]
            pool = unused if unused and self.rng.random() < 0.7 else cands
            return self.rng.choice(pool)
        require(make is not None, "no fitting value")
        spec = make()  # type: ignore[misc]
        require(spec is not None and pred(spec), "cannot make a fitting input")
        return self.new_input(spec)  # type: ignore[arg-type]

    def pick_dtype(self, dtype: str, min_rank: int = 0, max_rank: int = MAX_RANK) -> str:
        return self.pick(lambda s: s.dtype == dtype and min_rank <= s.ndim <= max_rank,
                         lambda: TensorSpec(rand_shape(
                             self.rng, self.rng.randint(min_rank, max_rank)), dtype))

    def call(self, op: str, inputs: Sequence[str], attrs: dict[str, Any],
             out: TensorSpec) -> str:
        require(out.size <= MAX_ELEMS, f"{op}: result {out} too big")
        require(out.ndim <= MAX_RANK, "rank too big")
        name = self.fresh("v")
        for i in inputs:
            self.uses[i] += 1
        node = Node(name, op, list(inputs), attrs, out)
        self.graph.nodes.append(node)
        self.values.append(name)
        self.producer[name] = op
        self.uses[name] = 0
        self.last = node
        return name


# -- samplers: one per op family -------------------------------------------------------------
Sampler = Callable[[Builder, str], None]


def _unary(op: str, out_dtype: Optional[str] = None) -> Sampler:
    def sample(b: Builder, dtype: str) -> None:
        x = b.pick_dtype(dtype)
        s = b.spec(x)
        b.call(op, [x], {}, TensorSpec(s.shape, out_dtype or dtype))
    return sample


def second_operand(b: Builder, a: str, *, const_ok: bool = True) -> str:
    """An operand of `a`'s dtype whose shape broadcasts with `a`'s (an existing value, a new
    input, or a scalar constant)."""
    sa = b.spec(a)
    r = b.rng.random()
    if const_ok and sa.dtype != BF16 and r < 0.2:
        return b.scalar_const(sa.dtype)

    def fits(s: TensorSpec) -> bool:
        out = broadcast_shapes(sa.shape, s.shape)
        return s.dtype == sa.dtype and out is not None and math.prod(out) <= MAX_ELEMS

    def make() -> TensorSpec:
        k = b.rng.randint(0, sa.ndim)
        dims = [d if b.rng.random() < 0.7 else 1 for d in sa.shape[sa.ndim - k:]]
        if b.rng.random() < 0.2 and sa.ndim < MAX_RANK and math.prod(sa.shape) * 2 <= MAX_ELEMS:
            dims = [2] + list(sa.shape)  # broadcast the other way: a grows
        return TensorSpec(tuple(dims), sa.dtype)

    return b.pick(fits, make)


def _binary(op: str, out_dtype: Optional[str] = None) -> Sampler:
    def sample(b: Builder, dtype: str) -> None:
        a = b.pick_dtype(dtype)
        c = second_operand(b, a)
        if b.rng.random() < 0.3:
            a, c = c, a
        shape = broadcast_shapes(b.spec(a).shape, b.spec(c).shape)
        require(shape is not None)
        b.call(op, [a, c], {}, TensorSpec(shape, out_dtype or dtype))  # type: ignore[arg-type]
    return sample


def _where(b: Builder, dtype: str) -> None:
    x = b.pick_dtype(dtype)
    y = second_operand(b, x)
    shape = broadcast_shapes(b.spec(x).shape, b.spec(y).shape)
    require(shape is not None)
    cond = b.pick(lambda s: s.dtype == BOOL and broadcast_shapes(s.shape, shape) == shape,
                  lambda: TensorSpec(shape, BOOL))  # type: ignore[arg-type]
    b.call("relax.where", [cond, x, y], {}, TensorSpec(shape, dtype))  # type: ignore[arg-type]


def _astype(b: Builder, dtype: str) -> None:
    x = b.pick_dtype(dtype)
    target = b.rng.choice([d for d in DTYPES if d != dtype])
    b.call("relax.astype", [x], {"dtype": target}, TensorSpec(b.spec(x).shape, target))


def _reduce(op: str) -> Sampler:
    def sample(b: Builder, dtype: str) -> None:
        x = b.pick_dtype(dtype, 1)
        s = b.spec(x)
        axes = sorted(b.rng.sample(range(s.ndim), b.rng.randint(1, s.ndim)))
        keep = b.rng.random() < 0.4
        shape = tuple(1 if i in axes else d for i, d in enumerate(s.shape) if keep or i not in axes)
        b.call(op, [x], {"axis": axes, "keepdims": keep}, TensorSpec(shape, dtype))
    return sample


def _softmax(b: Builder, dtype: str) -> None:
    x = b.pick_dtype(dtype, 1)
    s = b.spec(x)
    b.call("relax.nn.softmax", [x], {"axis": b.rng.randrange(-s.ndim, s.ndim)}, s)


def _permute(b: Builder, dtype: str) -> None:
    x = b.pick_dtype(dtype, 2)
    s = b.spec(x)
    axes = list(range(s.ndim))
    while axes == list(range(s.ndim)):
        b.rng.shuffle(axes)
    b.call("relax.permute_dims", [x], {"axes": axes},
           TensorSpec(tuple(s.shape[a] for a in axes), dtype))


def _reshape(b: Builder, dtype: str) -> None:
    x = b.pick_dtype(dtype, 1)
    s = b.spec(x)
    shape = random_factorization(b.rng, s.size, b.rng.randint(1, MAX_RANK))
    require(tuple(shape) != s.shape, "identity reshape")
    b.call("relax.reshape", [x], {"shape": list(shape)}, TensorSpec(tuple(shape), dtype))


def _expand_dims(b: Builder, dtype: str) -> None:
    x = b.pick_dtype(dtype, 0, MAX_RANK - 1)
    s = b.spec(x)
    axis = b.rng.randint(-(s.ndim + 1), s.ndim)
    pos = axis if axis >= 0 else s.ndim + 1 + axis
    shape = s.shape[:pos] + (1,) + s.shape[pos:]
    b.call("relax.expand_dims", [x], {"axis": [axis]}, TensorSpec(shape, dtype))


def _concat(b: Builder, dtype: str) -> None:
    a = b.pick_dtype(dtype, 1)
    s = b.spec(a)
    axis = b.rng.randrange(s.ndim)

    def fits(t: TensorSpec) -> bool:
        return t.dtype == dtype and t.ndim == s.ndim and all(
            t.shape[i] == s.shape[i] for i in range(s.ndim) if i != axis)

    def make() -> TensorSpec:
        dims = list(s.shape)
        dims[axis] = b.rng.randint(1, 4)
        return TensorSpec(tuple(dims), dtype)

    c = b.pick(fits, make)
    shape = list(s.shape)
    shape[axis] += b.spec(c).shape[axis]
    b.call("relax.concat", [a, c], {"axis": axis}, TensorSpec(tuple(shape), dtype))


def _matmul(b: Builder, dtype: str) -> None:
    a = b.pick_dtype(dtype, 1, 3)
    sa = b.spec(a)
    k = sa.shape[-1]
    w = b.pick(lambda t: t.dtype == dtype and t.ndim == 2 and t.shape[0] == k,
               lambda: TensorSpec((k, b.rng.randint(1, 6)), dtype))
    n = b.spec(w).shape[1]
    b.call("relax.matmul", [a, w], {"out_dtype": None},
           TensorSpec(sa.shape[:-1] + (n,), dtype))


def _clip(b: Builder, dtype: str) -> None:
    x = b.pick_dtype(dtype)
    if dtype in FLOATS:
        lo, hi = sorted(b.rng.sample([v for v in NICE_FLOATS], 2))
    else:
        lo, hi = sorted(b.rng.sample(range(-5, 6), 2))
    b.call("relax.clip", [x], {"min": lo, "max": hi}, b.spec(x))


@dataclass(frozen=True)
class HOp:
    """An operator of the pool: its Relax name, accepted operand dtypes, and sampler."""

    name: str
    dtypes: tuple[str, ...]
    sample: Sampler


def _pool() -> dict[str, HOp]:
    ops: list[HOp] = []
    for n in ("exp", "log", "sqrt", "rsqrt", "sin", "cos", "tan", "tanh", "sigmoid", "erf",
              "nn.gelu", "nn.silu"):
        ops.append(HOp(f"relax.{n}", FLOATS, _unary(f"relax.{n}")))
    for n in ("atan", "sinh", "cosh"):  # float16 does not build (no LLVM intrinsic)
        ops.append(HOp(f"relax.{n}", (F32, BF16), _unary(f"relax.{n}")))
    for n in ("floor", "ceil", "round", "trunc"):
        ops.append(HOp(f"relax.{n}", DTYPES, _unary(f"relax.{n}")))
    for n in ("abs", "negative", "square", "sign", "nn.relu"):
        ops.append(HOp(f"relax.{n}", NUMERIC, _unary(f"relax.{n}")))
    ops.append(HOp("relax.logical_not", (BOOL,), _unary("relax.logical_not")))
    ops.append(HOp("relax.bitwise_not", INTS_BOOL, _unary("relax.bitwise_not")))
    for n in ("isnan", "isinf", "isfinite"):
        ops.append(HOp(f"relax.{n}", (F32, F16, I32, I8), _unary(f"relax.{n}", BOOL)))
    for n in ("add", "subtract", "multiply", "maximum", "minimum"):
        ops.append(HOp(f"relax.{n}", NUMERIC, _binary(f"relax.{n}")))
    for n in ("divide", "floor_divide", "floor_mod"):  # never integer: SIGFPE on x / 0
        ops.append(HOp(f"relax.{n}", FLOATS, _binary(f"relax.{n}")))
    ops.append(HOp("relax.power", (F32, F16), _binary("relax.power")))
    for n in ("less", "greater", "equal", "not_equal", "less_equal", "greater_equal"):
        ops.append(HOp(f"relax.{n}", NUMERIC, _binary(f"relax.{n}", BOOL)))
    for n in ("logical_and", "logical_or"):
        ops.append(HOp(f"relax.{n}", (BOOL,), _binary(f"relax.{n}")))
    for n in ("logical_xor", "bitwise_and", "bitwise_xor"):
        ops.append(HOp(f"relax.{n}", INTS_BOOL, _binary(f"relax.{n}")))
    ops.append(HOp("relax.where", DTYPES, _where))
    ops.append(HOp("relax.astype", DTYPES, _astype))
    for n in ("sum", "prod"):
        ops.append(HOp(f"relax.{n}", DTYPES, _reduce(f"relax.{n}")))
    # mean of int32 builds alone, but a later int32 op on its result fails to build ("uses
    # datatype T.int32 on the LHS ... T.int64 on the RHS", measured): floats only.
    ops.append(HOp("relax.mean", FLOATS, _reduce("relax.mean")))
    for n in ("max", "min"):
        ops.append(HOp(f"relax.{n}", NUMERIC, _reduce(f"relax.{n}")))
    ops.append(HOp("relax.nn.softmax", FLOATS, _softmax))
    ops.append(HOp("relax.permute_dims", DTYPES, _permute))
    ops.append(HOp("relax.reshape", DTYPES, _reshape))
    ops.append(HOp("relax.expand_dims", DTYPES, _expand_dims))
    ops.append(HOp("relax.concat", DTYPES, _concat))
    ops.append(HOp("relax.matmul", NUMERIC, _matmul))
    ops.append(HOp("relax.clip", NUMERIC, _clip))
    return {o.name: o for o in ops}


POOL: dict[str, HOp] = _pool()

# (op, dtype) pairs whose type inference TVM rejects (measured like the table above): the
# float-only math ops and softmax on integers and bool.
FLOAT_ONLY = tuple(n for n, o in POOL.items() if set(o.dtypes) <= set(FLOATS)
                   and n not in ("relax.divide", "relax.floor_divide", "relax.floor_mod",
                                 "relax.power"))
