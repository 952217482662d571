"""The "isra" generator: backtrack-free instantiation after Ren et al., *Effective Random Test
Generation for Deep Learning Compilers* (Isra).

A graph is built one operation at a time in topological order (graph-level directional
consistency: a new operation only reads tensors that already exist, so it can never make an
earlier operation invalid). Each operation is instantiated in the paper's order (§III-C1):

* **G1** its type (uniform over the op table) and its in-degree (`Step.degree`);
* **G2** its first input (`Step.first`): an existing tensor whose structure satisfies the op's
  first-input filter, reused with probability `pick_rate` (0.97, the paper's default), or else a
  new tensor placeholder (a graph input) of a random structure satisfying the filter; inside the
  group the rank comes before the dimension lengths;
* **G3** its attributes (`Step.set_attrs`), drawn from domains that the first input has already
  narrowed (constraint propagation: e.g. a conv kernel no larger than the padded image);
* **G4..** the other inputs in order (`Step.other`), each described by a `Pattern` (Isra's
  partial shape with wildcards, generalised to per-dimension domains so that broadcasting fits)
  and again reused with probability `pick_rate` or created.

Every domain in the table is non-empty by construction, so no choice is ever undone: there is
no snapshot/restore and no retry loop (`Step` enforces the order, and `IsraBuilder.steps`, the
number of operations instantiated, always equals the graph's number of op calls; the tests
assert it). This is the paper's operation-level global consistency, made true here
by writing each op's domains so that any value drawn for an earlier group leaves a non-empty
domain for the later ones (including the element budget: every tensor has at most
`MAX_ELEMS` = 4096 elements).

Like Isra's code (`g.py`, `newOrReuse`), only op results and the initial tensor are candidates
for reuse; placeholders made on demand are not offered again. Tensors nobody reads become graph
outputs. Dtypes: float32 everywhere, float16 for floating-point ops, int32/int64 where integer
arithmetic is defined without undefined behaviour (no integer division), bool from comparisons
into logical ops and `where`; astype converts between all of them.

Deterministic: all randomness comes from one `random.Random(seed)`.
"""
from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Sequence

from generators.graph import CONST, GET_ITEM, Graph, Node, OutSpec, TensorSpec

MAX_ELEMS = 4096
F32, F16, I32, I64, BOOL = "float32", "float16", "int32", "int64", "bool"
FLOATS = (F32, F16)
INTS = (I32, I64)
NUMERIC = FLOATS + INTS
ALL_DTYPES = NUMERIC + (BOOL,)
PICK_RATE = 0.97


class Inconsistent(AssertionError):
    """A table entry drew a value outside its own domain: a bug in the table, never a reason to
    retry (Isra is backtrack-free)."""


# -- patterns: the structure an input must have ---------------------------------------------------
@dataclass(frozen=True)
class FirstInput:
    """The filter on an op's first input (Isra's FILTER_DICT, plus dtype and size): the dtypes
    it may have, its rank range, an upper bound on its number of elements, and an optional
    extra condition `need` on its shape with a function `fix` that makes any shape satisfy it
    (so creating a fitting placeholder always succeeds)."""

    dtypes: tuple[str, ...]
    min_rank: int = 1
    max_rank: int = 5
    max_size: int = MAX_ELEMS
    need: Optional[Callable[[tuple[int, ...]], bool]] = None
    fix: Optional[Callable[[random.Random, list[int]], None]] = None

    def matches(self, s: TensorSpec) -> bool:
        return (s.dtype in self.dtypes and self.min_rank <= s.ndim <= self.max_rank
                and s.size <= self.max_size and (self.need is None or self.need(s.shape)))


@dataclass(frozen=True)
class Pattern:
    """The structure of a later input: a dtype and, per dimension, the tuple of lengths allowed
    (None = any length in 1..`free_max`). Isra's partial shapes with -1 wildcards are the case
    where each domain is one length or None."""

    dtype: str
    dims: tuple[Optional[tuple[int, ...]], ...]
    free_max: int = 5

    def matches(self, s: TensorSpec) -> bool:
        return s.dtype == self.dtype and s.ndim == len(self.dims) and all(
            (1 <= d <= self.free_max) if dom is None else d in dom
            for d, dom in zip(s.shape, self.dims))

    def make(self, rng: random.Random) -> TensorSpec:
        return TensorSpec(tuple(rng.randint(1, self.free_max) if dom is None else rng.choice(dom)
                                for dom in self.dims), self.dtype)

    @staticmethod
    def exact(spec: TensorSpec | tuple[int, ...], dtype: str | None = None) -> "Pattern":
        shape = spec.shape if isinstance(spec, TensorSpec) else spec
        dt = dtype or (spec.dtype if isinstance(spec, TensorSpec) else F32)
        return Pattern(dt, tuple((d,) for d in shape))


# -- the builder ----------------------------------------------------------------------------------
@dataclass
class IsraBuilder:
    """The graph under construction and Isra's bookkeeping: the tensors offered for reuse
    (`pool`: the initial tensor and every op result, in creation order), who reads what, and the
    settings. `steps` counts instantiated operations (each gives exactly one op call)."""

    rng: random.Random
    pick_rate: float = PICK_RATE
    max_rank: int = 5
    max_dim: int = 5
    graph: Graph = field(default_factory=Graph)
    pool: list[str] = field(default_factory=list)
    specs: dict[str, TensorSpec] = field(default_factory=dict)
    used: set[str] = field(default_factory=set)
    placeholders: list[str] = field(default_factory=list)
    counters: dict[str, int] = field(default_factory=lambda: {"x": 0, "v": 0, "c": 0})
    steps: int = 0
    target: int = 0

    def fresh(self, prefix: str) -> str:
        k = self.counters[prefix]
        self.counters[prefix] = k + 1
        return f"{prefix}{k}"

    def placeholder(self, spec: TensorSpec) -> str:
        name = self.fresh("x")
        self.placeholders.append(name)
        self.graph.inputs[name] = spec
        self.specs[name] = spec
        return name

    def random_shape(self, f: FirstInput) -> tuple[int, ...]:
        """A random shape in `f`'s domain: rank first, then the lengths (Isra's order inside a
        tensor's group), shrunk to the size bound, then fixed to satisfy `f.need`."""
        lo = max(1, f.min_rank)  # an op's own minimum (conv's 4) wins over `max_rank`
        rank = self.rng.randint(lo, max(lo, min(self.max_rank, f.max_rank)))
        dims = [self.rng.randint(1, self.max_dim) for _ in range(rank)]
        if f.fix is not None:
            f.fix(self.rng, dims)
        while math.prod(dims) > f.max_size:
            i = max(range(rank), key=lambda j: dims[j])
            dims[i] = max(1, dims[i] // 2)
            if f.fix is not None:
                f.fix(self.rng, dims)
        return tuple(dims)

    def reuse(self, ok: Callable[[TensorSpec], bool]) -> Optional[str]:
        """With probability `pick_rate`, a uniformly chosen pooled tensor satisfying `ok`
        (None if the coin says "create" or nothing fits)."""
        if self.rng.random() >= self.pick_rate:
            return None
        fits = [v for v in self.pool if ok(self.specs[v])]
        return self.rng.choice(fits) if fits else None

    def new_first(self, f: FirstInput) -> str:
        dtype = F32 if F32 in f.dtypes and self.rng.random() < 0.6 else self.rng.choice(f.dtypes)
        spec = TensorSpec(self.random_shape(f), dtype)
        if not f.matches(spec):
            raise Inconsistent(f"made first input {spec} outside its filter")
        return self.placeholder(spec)

    def finish(self) -> Graph:
        for name in list(self.graph.inputs):
            if name not in self.used:
                del self.graph.inputs[name]
        self.graph.outputs = [v for v in self.pool if v not in self.used
                              and v not in self.placeholders]
        self.graph.validate()
        return self.graph


class Step:
    """The instantiation of one operation, in Isra's order: `degree` (G1), `first` (G2),
    `set_attrs` (G3), then `other`/`const` for each further input (G4..), and `emit`.
    Calling them out of order is a bug (`Inconsistent`)."""

    def __init__(self, b: IsraBuilder, op: str) -> None:
        self.b, self.op, self.rng = b, op, b.rng
        self.phase = 0
        self.emitted = False
        self.n = 0
        self.inputs: list[str] = []
        self.attrs: dict[str, Any] = {}

    def _at(self, phase: int, what: str) -> None:
        if self.phase != phase:
            raise Inconsistent(f"{self.op}: {what} out of Isra's order (phase {self.phase})")

    def degree(self, choices: Sequence[int]) -> int:
        self._at(0, "in-degree")
        self.n = self.rng.choice(list(choices))
        self.phase = 1
        return self.n

    def first(self, f: FirstInput) -> TensorSpec:
        self._at(1, "first input")
        name = self.b.reuse(f.matches) or self.b.new_first(f)
        self.inputs.append(name)
        self.phase = 2
        return self.b.specs[name]

    def set_attrs(self, **attrs: Any) -> None:
        self._at(2, "attributes")
        self.attrs = attrs
        self.phase = 3

    def other(self, p: Pattern) -> TensorSpec:
        self._at(3, "other input")
        name = self.b.reuse(p.matches)
        if name is None:
            spec = p.make(self.rng)
            if not p.matches(spec):
                raise Inconsistent(f"{self.op}: made {spec} outside {p}")
            name = self.b.placeholder(spec)
        self.inputs.append(name)
        return self.b.specs[name]

    def const(self, value: Any, spec: TensorSpec) -> None:
        """A pure-value input (Isra's initializers: gather indices), a CONST node."""
        self._at(3, "constant input")
        name = self.b.fresh("c")
        self.b.graph.nodes.append(Node(name, CONST, [], {"value": value, "dtype": spec.dtype},
                                       spec))
        self.b.specs[name] = spec
        self.inputs.append(name)

    def emit(self, out: OutSpec, items: Sequence[int] = (0,)) -> None:
        """Append the node; for a tuple result, a TupleGetItem per index in `items`."""
        if self.phase == 2:  # no attributes
            self.phase = 3
        self._at(3, "emit")
        if len(self.inputs) != self.n:
            raise Inconsistent(f"{self.op}: {len(self.inputs)} inputs, in-degree {self.n}")
        specs = [out] if isinstance(out, TensorSpec) else list(out)
        for s in specs:
            if s.size > MAX_ELEMS:
                raise Inconsistent(f"{self.op}: result {s} exceeds {MAX_ELEMS} elements")
        b = self.b
        self.emitted = True
        name = b.fresh("v")
        b.used.update(self.inputs)
        b.graph.nodes.append(Node(name, self.op, list(self.inputs), self.attrs, out))
        if isinstance(out, TensorSpec):
            b.specs[name] = out
            b.pool.append(name)
            return
        b.used.add(name)
        for k in items:
            item = b.fresh("v")
            b.graph.nodes.append(Node(item, GET_ITEM, [name], {"index": k}, out[k]))
            b.specs[item] = out[k]
            b.pool.append(item)
        self.phase = 4


# -- shape helpers --------------------------------------------------------------------------------
def bcast_pattern(rng: random.Random, x: TensorSpec, dtype: Optional[str] = None) -> Pattern:
    """A later input that broadcasts to `x` without enlarging it: its rank (drawn first, as in
    Isra's order) is 1..rank(x) and each dimension is x's length or 1."""
    rank = rng.randint(1, x.ndim) if rng.random() < 0.4 else x.ndim
    tail = x.shape[x.ndim - rank:]
    return Pattern(dtype or x.dtype, tuple(tuple(sorted({d, 1})) for d in tail))


def reduced(shape: tuple[int, ...], axes: Optional[Sequence[int]], keepdims: bool
            ) -> tuple[int, ...]:
    r = len(shape)
    norm = set(range(r)) if axes is None else {a % r for a in axes}
    if keepdims:
        return tuple(1 if i in norm else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in norm)


def window_out(size: int, lo: int, hi: int, k: int, stride: int, dilation: int,
               ceil_mode: bool = False) -> int:
    """Output length of a sliding window (TVM's conv2d / pool2d shape inference)."""
    num = size + lo + hi - ((k - 1) * dilation + 1)
    if not ceil_mode:
        return num // stride + 1
    out = (num + stride - 1) // stride + 1
    if (out - 1) * stride >= size + lo:  # TVM drops a last window starting in the padding
        out -= 1
    return out


def factorization(rng: random.Random, n: int, rank: int) -> tuple[int, ...]:
    dims = [1] * rank
    p, m = 2, n
    while m > 1:
        while m % p == 0:
            dims[rng.randrange(rank)] *= p
            m //= p
        p += 1
    return tuple(dims)


def some_dim_at_least(k: int) -> tuple[Callable[[tuple[int, ...]], bool],
                                      Callable[[random.Random, list[int]], None]]:
    """`need`/`fix` for "some dimension has length >= k"."""
    def need(shape: tuple[int, ...]) -> bool:
        return any(d >= k for d in shape)

    def fix(rng: random.Random, dims: list[int]) -> None:
        if not any(d >= k for d in dims):
            dims[rng.randrange(len(dims))] = k
    return need, fix


def has_unit_dim() -> tuple[Callable[[tuple[int, ...]], bool],
                            Callable[[random.Random, list[int]], None]]:
    def need(shape: tuple[int, ...]) -> bool:
        return 1 in shape

    def fix(rng: random.Random, dims: list[int]) -> None:
        if 1 not in dims:
            dims[rng.randrange(len(dims))] = 1
    return need, fix


# -- the instantiation table ----------------------------------------------------------------------
Instantiate = Callable[[Step], None]
TABLE: dict[str, Instantiate] = {}


def entry(*ops: str) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Register `fn(step, op)` for each of `ops` ("relax." is added)."""
    def deco(fn: Callable[..., None]) -> Callable[..., None]:
        for op in ops:
            TABLE[f"relax.{op}"] = (lambda s, _fn=fn, _op=f"relax.{op}": _fn(s, _op))
        return fn
    return deco


UNARY_FLOAT = ("exp", "tanh", "sigmoid", "sqrt", "log", "sin", "cos", "floor", "ceil", "square",
               "nn.relu", "nn.gelu", "nn.silu")
UNARY_NUMERIC = ("negative", "abs")
BINARY_NUMERIC = ("add", "subtract", "multiply", "maximum", "minimum")
BINARY_FLOAT = ("divide", "power")
COMPARE = ("less", "greater", "equal", "not_equal", "less_equal", "greater_equal")


@entry(*UNARY_FLOAT)
def _unary_float(s: Step, op: str) -> None:
    s.degree([1])
    x = s.first(FirstInput(FLOATS))
    s.emit(x)


@entry(*UNARY_NUMERIC)
def _unary_numeric(s: Step, op: str) -> None:
    s.degree([1])
    x = s.first(FirstInput(NUMERIC))
    s.emit(x)


@entry("logical_not")
def _logical_not(s: Step, op: str) -> None:
    s.degree([1])
    s.emit(s.first(FirstInput((BOOL,))))


def _binary(s: Step, dtypes: tuple[str, ...], out_dtype: Optional[str] = None) -> None:
    s.degree([2])
    x = s.first(FirstInput(dtypes))
    swap = s.rng.random() < 0.5  # G3: which argument position the first input takes
    s.set_attrs()
    s.other(bcast_pattern(s.rng, x))
    if swap:
        s.inputs.reverse()
    s.emit(TensorSpec(x.shape, out_dtype or x.dtype))


@entry(*BINARY_NUMERIC)
def _binary_numeric(s: Step, op: str) -> None:
    _binary(s, NUMERIC)


@entry(*BINARY_FLOAT)
def _binary_float(s: Step, op: str) -> None:
    _binary(s, FLOATS)


@entry(*COMPARE)
def _compare(s: Step, op: str) -> None:
    _binary(s, NUMERIC, BOOL)


@entry("logical_and", "logical_or")
def _logical(s: Step, op: str) -> None:
    _binary(s, (BOOL,))


@entry("where")
def _where(s: Step, op: str) -> None:
    s.degree([3])
    x = s.first(FirstInput(NUMERIC))
    s.set_attrs()
    s.other(bcast_pattern(s.rng, x, BOOL))  # the condition
    s.other(bcast_pattern(s.rng, x))  # the other branch
    c, xx, y = s.inputs[1], s.inputs[0], s.inputs[2]
    s.inputs = [c, xx, y] if s.rng.random() < 0.5 else [c, y, xx]
    s.emit(x)


@entry("astype")
def _astype(s: Step, op: str) -> None:
    s.degree([1])
    x = s.first(FirstInput(ALL_DTYPES))
    dtype = s.rng.choice([d for d in ALL_DTYPES if d != x.dtype])
    s.set_attrs(dtype=dtype)
    s.emit(TensorSpec(x.shape, dtype))


@entry("clip")
def _clip(s: Step, op: str) -> None:
    s.degree([1])
    x = s.first(FirstInput(FLOATS))
    lo = s.rng.choice((-2.0, -1.0, -0.5, 0.0, 0.25))
    s.set_attrs(min=lo, max=lo + s.rng.choice((0.5, 1.0, 2.0, 6.0)))
    s.emit(x)


@entry("nn.softmax", "nn.log_softmax")
def _softmax(s: Step, op: str) -> None:
    s.degree([1])
    x = s.first(FirstInput(FLOATS))
    s.set_attrs(axis=s.rng.randrange(-x.ndim, x.ndim))
    s.emit(x)


def _reduction(s: Step, dtypes: tuple[str, ...]) -> None:
    s.degree([1])
    x = s.first(FirstInput(dtypes))
    axes: Optional[list[int]] = None
    if s.rng.random() > 0.15:
        axes = sorted(s.rng.sample(range(x.ndim), s.rng.randint(1, x.ndim)))
    keepdims = s.rng.random() < 0.4
    s.set_attrs(axis=axes, keepdims=keepdims)
    s.emit(TensorSpec(reduced(x.shape, axes, keepdims), x.dtype))


@entry("sum", "max", "min", "prod")
def _reduce_numeric(s: Step, op: str) -> None:
    _reduction(s, NUMERIC)


@entry("mean", "variance")
def _reduce_float(s: Step, op: str) -> None:
    _reduction(s, FLOATS)


@entry("argmax", "argmin")
def _argmax(s: Step, op: str) -> None:
    s.degree([1])
    x = s.first(FirstInput(NUMERIC))
    axis = None if s.rng.random() < 0.2 else s.rng.randrange(x.ndim)
    keepdims = s.rng.random() < 0.4
    s.set_attrs(axis=axis, keepdims=keepdims)
    s.emit(TensorSpec(reduced(x.shape, None if axis is None else [axis], keepdims), I64))


# tensor transformations -------------------------------------------------------------------------
@entry("reshape")
def _reshape(s: Step, op: str) -> None:
    s.degree([1])
    x = s.first(FirstInput(ALL_DTYPES))
    shape = factorization(s.rng, x.size, s.rng.randint(1, s.b.max_rank))
    s.set_attrs(shape=list(shape))
    s.emit(TensorSpec(shape, x.dtype))


@entry("permute_dims")
def _permute(s: Step, op: str) -> None:
    s.degree([1])
    x = s.first(FirstInput(ALL_DTYPES))
    axes = list(range(x.ndim))
    s.rng.shuffle(axes)
    s.set_attrs(axes=axes)
    s.emit(TensorSpec(tuple(x.shape[a] for a in axes), x.dtype))


@entry("expand_dims")
def _expand_dims(s: Step, op: str) -> None:
    s.degree([1])
    x = s.first(FirstInput(ALL_DTYPES, max_rank=4))
    k = s.rng.randint(1, max(1, 5 - x.ndim))
    rank = x.ndim + k
    axes = sorted(s.rng.sample(range(rank), k))
    dims = iter(x.shape)
    s.set_attrs(axis=axes)
    s.emit(TensorSpec(tuple(1 if j in axes else next(dims) for j in range(rank)), x.dtype))


_UNIT_NEED, _UNIT_FIX = has_unit_dim()


@entry("squeeze")
def _squeeze(s: Step, op: str) -> None:
    s.degree([1])
    x = s.first(FirstInput(ALL_DTYPES, need=_UNIT_NEED, fix=_UNIT_FIX))
    ones = [i for i, d in enumerate(x.shape) if d == 1]
    axes = sorted(s.rng.sample(ones, s.rng.randint(1, len(ones))))
    s.set_attrs(axis=axes)
    s.emit(TensorSpec(tuple(d for i, d in enumerate(x.shape) if i not in axes), x.dtype))


@entry("flatten")
def _flatten(s: Step, op: str) -> None:
    s.degree([1])
    x = s.first(FirstInput(ALL_DTYPES))
    s.emit(TensorSpec((x.size,), x.dtype))


@entry("concat")
def _concat(s: Step, op: str) -> None:
    n = s.degree([1, 2, 3, 4])
    # size <= 1024: any axis length a >= 1 leaves room for 3 more parts (4 * size <= 4096)
    x = s.first(FirstInput(ALL_DTYPES, max_size=MAX_ELEMS // 4))
    axis = s.rng.randrange(x.ndim)
    s.set_attrs(axis=axis)
    row = x.size // x.shape[axis]
    total = x.shape[axis]
    for k in range(1, n):
        room = MAX_ELEMS // row - total - (n - 1 - k)  # leave >= 1 for each later part
        dims = tuple((d,) if i != axis else tuple(range(1, min(s.b.max_dim, room) + 1))
                     for i, d in enumerate(x.shape))
        total += s.other(Pattern(x.dtype, dims)).shape[axis]
    s.emit(TensorSpec(tuple(total if i == axis else d for i, d in enumerate(x.shape)), x.dtype))


_GE2_NEED, _GE2_FIX = some_dim_at_least(2)


@entry("split")
def _split(s: Step, op: str) -> None:
    s.degree([1])
    x = s.first(FirstInput(ALL_DTYPES, need=_GE2_NEED, fix=_GE2_FIX))
    axis = s.rng.choice([i for i, d in enumerate(x.shape) if d >= 2])
    d = x.shape[axis]
    divisors = [k for k in range(2, min(d, 4) + 1) if d % k == 0]
    if divisors and s.rng.random() < 0.5:
        sections: Any = s.rng.choice(divisors)
        lengths = [d // sections] * sections
    else:
        sections = sorted(s.rng.sample(range(1, d), s.rng.randint(1, min(3, d - 1))))
        bounds = [0, *sections, d]
        lengths = [hi - lo for lo, hi in zip(bounds, bounds[1:])]
    s.set_attrs(indices_or_sections=sections, axis=axis)
    out = tuple(TensorSpec(tuple(n if i == axis else e for i, e in enumerate(x.shape)), x.dtype)
                for n in lengths)
    s.emit(out, items=range(len(out)))


@entry("strided_slice")
def _strided_slice(s: Step, op: str) -> None:
    s.degree([1])
    x = s.first(FirstInput(ALL_DTYPES))
    axes = sorted(s.rng.sample(range(x.ndim), s.rng.randint(1, x.ndim)))
    begin, end, strides = [], [], []
    out = list(x.shape)
    for a in axes:
        d = x.shape[a]
        lo = s.rng.randrange(d)
        hi = s.rng.randint(lo + 1, d)
        st = s.rng.choice((1, 1, 2, 3))
        begin.append(lo)
        end.append(hi)
        strides.append(st)
        out[a] = -(-(hi - lo) // st)
    s.set_attrs(axes=axes, begin=begin, end=end, strides=strides, assume_inbound=False)
    s.emit(TensorSpec(tuple(out), x.dtype))


@entry("flip")
def _flip(s: Step, op: str) -> None:
    s.degree([1])
    x = s.first(FirstInput(ALL_DTYPES))
    s.set_attrs(axis=s.rng.randrange(x.ndim))
    s.emit(x)


@entry("tile")
def _tile(s: Step, op: str) -> None:
    s.degree([1])
    x = s.first(FirstInput(ALL_DTYPES))
    reps, size = [], x.size
    for _ in x.shape:  # each repeat count within the remaining element budget
        r = s.rng.randint(1, max(1, min(3, MAX_ELEMS // size)))
        size *= r
        reps.append(r)
    s.set_attrs(repeats=reps)
    s.emit(TensorSpec(tuple(d * r for d, r in zip(x.shape, reps)), x.dtype))


@entry("repeat")
def _repeat(s: Step, op: str) -> None:
    s.degree([1])
    x = s.first(FirstInput(ALL_DTYPES, max_size=MAX_ELEMS // 2))
    axis = s.rng.randrange(x.ndim)
    reps = s.rng.randint(1, max(1, min(3, MAX_ELEMS // x.size)))
    s.set_attrs(repeats=reps, axis=axis)
    s.emit(TensorSpec(tuple(d * reps if i == axis else d for i, d in enumerate(x.shape)),
                      x.dtype))


@entry("broadcast_to")
def _broadcast_to(s: Step, op: str) -> None:
    s.degree([1])
    x = s.first(FirstInput(ALL_DTYPES))
    target, size = [], x.size
    for d in x.shape:
        t = d
        if d == 1:
            t = s.rng.randint(1, max(1, min(s.b.max_dim, MAX_ELEMS // size)))
            size *= t
        target.append(t)
    if x.ndim < 5 and s.rng.random() < 0.3 and size * 2 <= MAX_ELEMS:
        target.insert(0, 2)
    s.set_attrs(shape=target)
    s.emit(TensorSpec(tuple(target), x.dtype))


@entry("take")
def _take(s: Step, op: str) -> None:
    s.degree([2])
    x = s.first(FirstInput(ALL_DTYPES, max_size=MAX_ELEMS // 4))
    axis = s.rng.randrange(x.ndim)
    s.set_attrs(axis=axis, mode="fast")
    n = s.rng.randint(1, 4)
    d = x.shape[axis]
    s.const([s.rng.randrange(d) for _ in range(n)], TensorSpec((n,), I64))  # in range: "fast"
    s.emit(TensorSpec(x.shape[:axis] + (n,) + x.shape[axis + 1:], x.dtype))


@entry("nn.pad")
def _pad(s: Step, op: str) -> None:
    s.degree([1])
    x = s.first(FirstInput(FLOATS))
    width, size = [], x.size
    out = list(x.shape)
    for i, d in enumerate(x.shape):
        lo, hi = s.rng.randint(0, 2), s.rng.randint(0, 2)
        if size // d * (d + lo + hi) > MAX_ELEMS:
            lo = hi = 0
        size = size // d * (d + lo + hi)
        width += [lo, hi]
        out[i] = d + lo + hi
    s.set_attrs(pad_width=width, pad_mode="constant",
                pad_value=s.rng.choice((0.0, 1.0, -1.5)))
    s.emit(TensorSpec(tuple(out), x.dtype))


# linear algebra, convolution, pooling, normalisation --------------------------------------------
@entry("matmul")
def _matmul(s: Step, op: str) -> None:
    s.degree([2])
    x = s.first(FirstInput(FLOATS, min_rank=2, max_rank=4, max_size=MAX_ELEMS // 2))
    s.set_attrs(out_dtype=None)
    batch, m, k = x.shape[:-2], x.shape[-2], x.shape[-1]
    # G4: the second input's rank first (2, or x's rank with the same batch), then its dims
    batched = x.ndim > 2 and s.rng.random() < 0.5
    rows = math.prod(batch) * m
    n_max = max(1, min(8, MAX_ELEMS // rows))
    w = s.other(Pattern(x.dtype, tuple((d,) for d in (batch if batched else ())) + ((k,), None),
                        free_max=n_max))
    s.emit(TensorSpec(batch + (m, w.shape[-1]), x.dtype))


def _image(s: Step, dtypes: tuple[str, ...], max_size: int) -> TensorSpec:
    return s.first(FirstInput(dtypes, min_rank=4, max_rank=4, max_size=max_size))


@entry("nn.conv2d")
def _conv2d(s: Step, op: str) -> None:
    s.degree([2])
    # size <= 455: with padding <= 1, out_c = groups <= C keeps the result <= 9 * size < 4096
    x = _image(s, (F32,), MAX_ELEMS // 9)
    n, c, h, w = x.shape
    d = 2 if min(h, w) >= 3 and s.rng.random() < 0.25 else 1
    kh = s.rng.randint(1, min(3, (h - 1) // d + 1))
    kw = s.rng.randint(1, min(3, (w - 1) // d + 1))
    stride = s.rng.choice((1, 1, 2))
    pad = [s.rng.randint(0, 1) for _ in range(4)]
    oh = window_out(h, pad[0], pad[2], kh, stride, d)
    ow = window_out(w, pad[1], pad[3], kw, stride, d)
    groups = c if c > 1 and s.rng.random() < 0.3 else 1
    mult = s.rng.randint(1, max(1, min(8 // groups if groups <= 8 else 1,
                                       MAX_ELEMS // (n * groups * oh * ow))))
    out_c = groups * mult
    s.set_attrs(strides=[stride, stride], padding=pad, dilation=[d, d], groups=groups,
                data_layout="NCHW", kernel_layout="OIHW", out_layout="NCHW", out_dtype=None)
    s.other(Pattern.exact((out_c, c // groups, kh, kw), x.dtype))
    s.emit(TensorSpec((n, out_c, oh, ow), x.dtype))


@entry("nn.max_pool2d", "nn.avg_pool2d")
def _pool2d(s: Step, op: str) -> None:
    s.degree([1])
    x = _image(s, FLOATS, MAX_ELEMS)
    n, c, h, w = x.shape
    kh, kw = s.rng.randint(1, min(3, h)), s.rng.randint(1, min(3, w))
    stride = s.rng.choice((1, 2, 2))
    pad = [s.rng.randint(0, kh // 2), s.rng.randint(0, kw // 2),
           s.rng.randint(0, kh // 2), s.rng.randint(0, kw // 2)]
    ceil_mode = s.rng.random() < 0.2
    s.set_attrs(pool_size=[kh, kw], strides=[stride, stride], padding=pad, dilation=[1, 1],
                ceil_mode=ceil_mode,
                count_include_pad=op == "relax.nn.avg_pool2d" and s.rng.random() < 0.5,
                layout="NCHW", out_layout="NCHW")
    s.emit(TensorSpec((n, c, window_out(h, pad[0], pad[2], kh, stride, 1, ceil_mode),
                       window_out(w, pad[1], pad[3], kw, stride, 1, ceil_mode)), x.dtype))


@entry("nn.adaptive_avg_pool2d")
def _adaptive_pool(s: Step, op: str) -> None:
    s.degree([1])
    x = _image(s, FLOATS, MAX_ELEMS)
    n, c, h, w = x.shape
    size = [s.rng.randint(1, h), s.rng.randint(1, w)]
    s.set_attrs(output_size=size, layout="NCHW", out_layout="NCHW")
    s.emit(TensorSpec((n, c, *size), x.dtype))


@entry("nn.layer_norm")
def _layer_norm(s: Step, op: str) -> None:
    s.degree([3])
    x = s.first(FirstInput((F32,)))
    k = s.rng.randint(1, min(2, x.ndim))
    axes = list(range(-k, 0)) if s.rng.random() < 0.5 else list(range(x.ndim - k, x.ndim))
    s.set_attrs(axes=axes, epsilon=1e-5, center=True, scale=True)
    s.other(Pattern.exact(x.shape[-k:], x.dtype))
    s.other(Pattern.exact(x.shape[-k:], x.dtype))
    s.emit(x)


@entry("nn.batch_norm")
def _batch_norm(s: Step, op: str) -> None:
    s.degree([5])
    x = s.first(FirstInput((F32,), min_rank=2))
    axis = 1 if s.rng.random() < 0.7 else s.rng.randrange(x.ndim)
    s.set_attrs(axis=axis, epsilon=1e-5, center=True, scale=True, momentum=0.1, training=False)
    c = (x.shape[axis],)
    for _ in range(4):  # gamma, beta, moving mean, moving variance
        s.other(Pattern.exact(c, x.dtype))
    s.emit((x, TensorSpec(c, x.dtype), TensorSpec(c, x.dtype)), items=[0])


# -- the generator --------------------------------------------------------------------------------
# Ops in the table that are left out of the default op set because TVM itself cannot build
# some of their valid instances (measured on apache-tvm 0.27.0.post1; pass `ops=` to use them).
KNOWN_TVM_BUGS: dict[str, str] = {
    "relax.nn.silu": "relax.build(target='llvm') fails with 'LLVM module verification failed: "
                     "Instruction does not dominate all uses' for float32 inputs of shape "
                     "(4, 5, 2), (4, 2, 7), (2, 4, 2, 7) (a single silu call)",
}


def op_names(include_known_bugs: bool = False) -> list[str]:
    """The op types Isra samples from by default (sorted): the table minus `KNOWN_TVM_BUGS`
    unless `include_known_bugs`."""
    return sorted(o for o in TABLE if include_known_bugs or o not in KNOWN_TVM_BUGS)


def generate(seed: int, min_ops: int = 1, max_ops: int = 30, *, pick_rate: float = PICK_RATE,
             ops: Optional[Sequence[str]] = None, max_rank: int = 5, max_dim: int = 5,
             builder_out: Optional[list[IsraBuilder]] = None) -> Graph:
    """An Isra graph with a number of op calls drawn uniformly from min_ops..max_ops, op types
    drawn uniformly from `ops` (default: the whole table; names may omit "relax."), inputs
    reused with probability `pick_rate`, tensors of rank <= `max_rank` and new dimensions
    <= `max_dim` (the paper's settings: 5 and 5). Never retries: the number of steps equals the
    number of op calls. `builder_out`, if given, receives the builder (for its statistics)."""
    if min_ops < 1 or max_ops < min_ops:
        raise ValueError(f"need 1 <= min_ops <= max_ops, got {min_ops}, {max_ops}")
    if not 0.0 <= pick_rate <= 1.0:
        raise ValueError(f"pick_rate must be in [0, 1], got {pick_rate}")
    names = op_names() if ops is None else sorted(
        {o if o.startswith("relax.") else f"relax.{o}" for o in ops})
    unknown = [o for o in names if o not in TABLE]
    if unknown:
        raise ValueError(f"isra has no instantiation for {unknown} "
                         f"(known: {', '.join(op_names(True))})")
    rng = random.Random(seed)
    b = IsraBuilder(rng, pick_rate, max_rank, max_dim)
    first = b.placeholder(TensorSpec(b.random_shape(FirstInput(NUMERIC)), F32))
    b.pool.append(first)
    b.target = rng.randint(min_ops, max_ops)
    for _ in range(b.target):
        op = rng.choice(names)
        step = Step(b, op)
        b.steps += 1
        TABLE[op](step)
        if not step.emitted:
            raise Inconsistent(f"{op}: instantiation did not emit")
    if builder_out is not None:
        builder_out.append(b)
    return b.finish()
