"""Op specifications for type-directed random generation, and the builder they work on.

Each `OpSpec` knows how to add one use of an op to a `GraphBuilder`: pick its input values
among the existing ones whose types fit (or create new graph inputs / constants of a fitting
type), solve its attributes so that the call type-checks, compute the result type, and append
the node(s). Result types are computed here in Python (so a `Graph` is self-describing), and
`generators.emit.emit` checks every one of them against TVM's inference.

Conventions:
* Values flowing between ops are float32 tensors, except comparison results (bool; consumed
  by `where` and `astype`) and argmax results (int64; only ever graph outputs). astype makes
  a float32 -> float16 -> float32 round trip, so no float16 value is left for other ops.
* Every tensor has at most `MAX_ELEMS` elements; new graph inputs at most `INPUT_MAX_ELEMS`.
* Attributes are written in TVM's canonical form (e.g. conv2d padding as 4 ints, out_layout
  spelled out), so importing an emitted graph gives back the identical graph.
* A spec that cannot apply raises `Reject`; the generator then undoes the partial work
  (`GraphBuilder.snapshot` / `restore`) and tries another op.
* Composite specs: "linear" is not a TVM op (`relax.op.linear` is a Python helper building
  permute_dims + matmul (+ add)), so its spec emits those calls; sqrt takes a value known to be
  non-negative (or NaN) or makes one with abs/exp; where makes a comparison when no bool value
  exists; astype is the two-cast round trip.
"""
from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Optional, Sequence

import numpy as np

from generators.graph import CONST, GET_ITEM, Graph, Node, TensorSpec

F32 = "float32"
F16 = "float16"
BOOL = "bool"
I64 = "int64"
MAX_ELEMS = 4096
INPUT_MAX_ELEMS = 1024
MAX_RANK = 4

# Scalar constants are drawn from values exactly representable in float16 and float32.
NICE_FLOATS = (-2.0, -1.5, -1.0, -0.5, -0.25, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0)


class Reject(Exception):
    """The op cannot be applied now (no fitting input, or the result would be too big)."""


def require(cond: bool, why: str = "") -> None:
    if not cond:
        raise Reject(why)


# -- shape arithmetic -------------------------------------------------------------------------
def broadcast_shapes(*shapes: Sequence[int]) -> Optional[tuple[int, ...]]:
    """numpy broadcasting of `shapes`, or None when they are incompatible."""
    rank = max((len(s) for s in shapes), default=0)
    out = []
    for i in range(rank):
        dims = {s[len(s) - rank + i] for s in shapes if len(s) - rank + i >= 0}
        dims.discard(1)
        if len(dims) > 1:
            return None
        out.append(dims.pop() if dims else 1)
    return tuple(out)


def prime_factors(n: int) -> list[int]:
    out, p = [], 2
    while n > 1 and p * p <= n:
        while n % p == 0:
            out.append(p)
            n //= p
        p += 1
    if n > 1:
        out.append(n)
    return out


def rand_shape(rng: random.Random, rank: Optional[int] = None, *, lo: int = 1, hi: int = 8,
               max_elems: int = INPUT_MAX_ELEMS, fixed: Optional[dict[int, int]] = None
               ) -> tuple[int, ...]:
    """A random shape of `rank` (random 1..4 if None) with dims in lo..hi, positions in
    `fixed` forced, shrunk (largest free dim halved) until it has at most `max_elems`."""
    if rank is None:
        rank = rng.choice((1, 2, 2, 3, 3, 4, 4))
    dims = [rng.randint(lo, hi) for _ in range(rank)]
    fixed = fixed or {}
    for i, d in fixed.items():
        dims[i] = d
    while math.prod(dims) > max_elems:
        free = [i for i in range(rank) if i not in fixed and dims[i] > lo]
        if not free:
            break
        i = max(free, key=lambda j: dims[j])
        dims[i] = max(lo, dims[i] // 2)
    return tuple(dims)


def broadcastable_to(rng: random.Random, shape: Sequence[int]) -> tuple[int, ...]:
    """A random shape that broadcasts against `shape` without enlarging it: a suffix of
    `shape` (leading dims dropped) with some dims replaced by 1."""
    drop = rng.choice([0, 0, 0, 1, 2]) if shape else 0
    suffix = list(shape[min(drop, len(shape)):])
    return tuple(1 if rng.random() < 0.3 else d for d in suffix)


def random_factorization(rng: random.Random, n: int, rank: int) -> tuple[int, ...]:
    """A random shape of `rank` with `n` elements."""
    dims = [1] * rank
    for p in prime_factors(n):
        dims[rng.randrange(rank)] *= p
    return tuple(dims)


def is_f32(s: TensorSpec) -> bool:
    return s.dtype == F32


def f32_rank(lo: int, hi: int = MAX_RANK) -> Callable[[TensorSpec], bool]:
    return lambda s: s.dtype == F32 and lo <= s.ndim <= hi


def _as_f32(x: float) -> float:
    """`x` rounded to the nearest float32, as a Python float (exact in JSON)."""
    return float(np.float32(x))


# -- the builder --------------------------------------------------------------------------------
@dataclass(frozen=True)
class ValueInfo:
    """What the generator knows of a tensor value: its type, and whether it is known to be
    non-negative or NaN (results of abs, exp, relu, sigmoid, softmax, sqrt, clip with min>=0)."""

    spec: TensorSpec
    nonneg: bool = False


@dataclass
class GraphBuilder:
    """A graph under construction plus the bookkeeping the op specs need: the tensor values
    available as inputs, how often each is used, and a random source."""

    rng: random.Random
    reuse_prob: float = 0.9
    """Probability of reusing an existing fitting value rather than making a new input."""
    prefer_unused: float = 0.9
    """When reusing, probability of choosing among values nobody uses yet (keeps few outputs)."""
    const_tensor_prob: float = 0.3
    """Probability that a weight-like operand (conv weight, norm parameters) is a constant."""
    graph: Graph = field(default_factory=Graph)
    values: list[str] = field(default_factory=list)
    info: dict[str, ValueInfo] = field(default_factory=dict)
    uses: dict[str, int] = field(default_factory=dict)
    counters: dict[str, int] = field(default_factory=lambda: {"x": 0, "v": 0, "c": 0})
    num_calls: int = 0
    created_inputs: list[str] = field(default_factory=list)

    # -- undo ---------------------------------------------------------------------------------
    def snapshot(self) -> tuple[Any, ...]:
        return (dict(self.graph.inputs), len(self.graph.nodes), list(self.values),
                dict(self.info), dict(self.uses), dict(self.counters), self.num_calls,
                list(self.created_inputs))

    def restore(self, snap: tuple[Any, ...]) -> None:
        inputs, n_nodes, values, info, uses, counters, num_calls, created = snap
        self.graph.inputs = dict(inputs)
        del self.graph.nodes[n_nodes:]
        self.values, self.info, self.uses = list(values), dict(info), dict(uses)
        self.counters, self.num_calls = dict(counters), num_calls
        self.created_inputs = list(created)

    # -- values -------------------------------------------------------------------------------
    def _fresh(self, prefix: str) -> str:
        k = self.counters[prefix]
        self.counters[prefix] = k + 1
        return f"{prefix}{k}"

    def spec(self, name: str) -> TensorSpec:
        return self.info[name].spec

    def shape(self, name: str) -> tuple[int, ...]:
        return self.info[name].spec.shape

    def _add_value(self, name: str, spec: TensorSpec, nonneg: bool = False) -> str:
        require(spec.size <= MAX_ELEMS, f"{name}: {spec} too big")
        self.values.append(name)
        self.info[name] = ValueInfo(spec, nonneg)
        self.uses[name] = 0
        return name

    def new_input(self, spec: TensorSpec) -> str:
        """A new graph input of type `spec`."""
        name = self._fresh("x")
        self.graph.inputs[name] = spec
        self.created_inputs.append(name)
        return self._add_value(name, spec)

    def pick(self, pred: Callable[[TensorSpec], bool],
             make: Optional[Callable[[], Optional[TensorSpec]]] = None, *,
             nonneg: bool = False, reuse: Optional[float] = None) -> str:
        """An input for an op: an existing value whose type satisfies `pred` (and is known
        non-negative if `nonneg`), or, with probability 1 - reuse (or when none fits), a new
        graph input of the type `make()` returns. Raises Reject when neither is possible."""
        cands = [v for v in self.values if pred(self.info[v].spec)
                 and (not nonneg or self.info[v].nonneg)]
        reuse = self.reuse_prob if reuse is None else reuse
        if cands and (make is None or self.rng.random() < reuse):
            unused = [v for v in cands if self.uses[v] == 0]
            if unused and self.rng.random() < self.prefer_unused:
                return self.rng.choice(unused)
            return self.rng.choice(cands)
        require(make is not None, "no fitting value")
        spec = make()  # type: ignore[misc]
        require(spec is not None and pred(spec), "cannot make a fitting input")
        return self.new_input(spec)  # type: ignore[arg-type]

    def pick_any(self) -> str:
        """Any float32 tensor of rank >= 1 (a new input of random shape if need be)."""
        return self.pick(f32_rank(1), lambda: TensorSpec(rand_shape(self.rng), F32))

    def pick_rank(self, lo: int, hi: int = MAX_RANK, **shape_kw: Any) -> str:
        """A float32 tensor of rank lo..hi."""
        return self.pick(f32_rank(lo, hi), lambda: TensorSpec(
            rand_shape(self.rng, self.rng.randint(lo, hi), **shape_kw), F32))

    def operand(self, pred: Callable[[TensorSpec], bool],
                shape: Callable[[], Optional[Sequence[int]]], *, const_ok: bool = True) -> str:
        """A weight-like float32 operand: sometimes a tensor constant of shape `shape()`,
        otherwise `pick(pred, ...)` with a new input of that shape when making one."""
        if const_ok and self.rng.random() < self.const_tensor_prob:
            s = shape()
            require(s is not None)
            return self.const_tensor(tuple(s))  # type: ignore[arg-type]
        return self.pick(pred, lambda: None if (s := shape()) is None else TensorSpec(tuple(s), F32))

    # -- constants ----------------------------------------------------------------------------
    def const(self, value: Any, spec: TensorSpec) -> str:
        """A CONST node holding `value` (nested lists / scalar) of type `spec`; it is placed
        right before its user and counts as used once."""
        name = self._fresh("c")
        self.graph.nodes.append(Node(name, CONST, [], {"value": value, "dtype": spec.dtype},
                                     spec))
        self.info[name] = ValueInfo(spec)
        self.uses[name] = 0
        return name

    def scalar_const(self, *, nonzero: bool = True, dtype: str = F32) -> str:
        values = [v for v in NICE_FLOATS if v != 0.0 or not nonzero]
        return self.const(self.rng.choice(values), TensorSpec((), dtype))

    def const_tensor(self, shape: tuple[int, ...], lo: float = -1.0, hi: float = 1.0) -> str:
        """A small float32 tensor constant with uniform random values in [lo, hi)."""
        require(math.prod(shape) <= 256, "constant too big")
        flat = [_as_f32(self.rng.uniform(lo, hi)) for _ in range(math.prod(shape))]
        value = np.array(flat, dtype=np.float64).reshape(shape).tolist()
        return self.const(value, TensorSpec(shape, F32))

    # -- nodes --------------------------------------------------------------------------------
    def call(self, op: str, inputs: Sequence[str], attrs: dict[str, Any], out: TensorSpec,
             *, nonneg: bool = False) -> str:
        """Append `op(*inputs, **attrs)` with a tensor result; returns the new value."""
        name = self._fresh("v")
        require(out.size <= MAX_ELEMS, f"{op}: result {out} too big")
        for i in inputs:
            self.uses[i] += 1
        self.graph.nodes.append(Node(name, op, list(inputs), attrs, out))
        self.num_calls += 1
        return self._add_value(name, out, nonneg)

    def call_tuple(self, op: str, inputs: Sequence[str], attrs: dict[str, Any],
                   out: tuple[TensorSpec, ...], items: Iterable[int]) -> list[str]:
        """Append `op(...)` with a tuple result and a TupleGetItem for each index in `items`;
        returns the item values (the tuple itself is not offered to other ops)."""
        name = self._fresh("v")
        for t in out:
            require(t.size <= MAX_ELEMS, f"{op}: result {t} too big")
        for i in inputs:
            self.uses[i] += 1
        self.graph.nodes.append(Node(name, op, list(inputs), attrs, out))
        self.num_calls += 1
        got = []
        for k in items:
            item = self._fresh("v")
            self.graph.nodes.append(Node(item, GET_ITEM, [name], {"index": k}, out[k]))
            got.append(self._add_value(item, out[k]))
        return got

    def finish(self) -> Graph:
        """The graph: unused inputs dropped, every unused tensor value an output."""
        for name in list(self.graph.inputs):
            if self.uses[name] == 0:
                del self.graph.inputs[name]
        inputs = set(self.created_inputs)
        self.graph.outputs = [v for v in self.values if self.uses[v] == 0 and v not in inputs]
        self.graph.validate()
        return self.graph


# -- op specs -------------------------------------------------------------------------------
Sampler = Callable[[GraphBuilder], None]


@dataclass(frozen=True)
class OpSpec:
    """How to add one use of an op. `name` is the TVM op name (or "linear" for the composite);
    `emits` the TVM ops the sampler may append; `calls` the (min, max) number of op calls it
    appends; `weight` its relative probability of being chosen."""

    name: str
    sample: Sampler
    emits: tuple[str, ...]
    calls: tuple[int, int] = (1, 1)
    weight: float = 1.0


OPS: dict[str, OpSpec] = {}


def _register(name: str, sample: Sampler, emits: Optional[tuple[str, ...]] = None,
              calls: tuple[int, int] = (1, 1), weight: float = 1.0) -> None:
    OPS[name] = OpSpec(name, sample, emits or (name,), calls, weight)


# elementwise ---------------------------------------------------------------------------------
_NONNEG_UNARY = {"relax.exp", "relax.sigmoid", "relax.abs", "relax.nn.relu"}


def _unary(op: str) -> Sampler:
    def sample(b: GraphBuilder) -> None:
        x = b.pick_any()
        b.call(op, [x], {}, b.spec(x), nonneg=op in _NONNEG_UNARY)
    return sample


for _op in ("exp", "tanh", "sigmoid", "negative", "abs", "nn.relu", "nn.gelu", "nn.silu"):
    _register(f"relax.{_op}", _unary(f"relax.{_op}"))


def _sqrt(b: GraphBuilder) -> None:
    # sqrt of a value known to be >= 0 (or NaN), else of abs(x) or exp(x): keeps NaN rare.
    try:
        x = b.pick(is_f32, nonneg=True, reuse=1.0)
    except Reject:
        y = b.pick_any()
        x = b.call(b.rng.choice(("relax.abs", "relax.exp")), [y], {}, b.spec(y), nonneg=True)
    b.call("relax.sqrt", [x], {}, b.spec(x), nonneg=True)


_register("relax.sqrt", _sqrt, ("relax.sqrt", "relax.abs", "relax.exp"), (1, 2))


def _second_operand(b: GraphBuilder, a: str, *, nonzero_const: bool) -> str:
    """The other operand of a broadcasting binary op whose first operand is `a`: a scalar
    constant, `a` itself, or a float32 tensor broadcast-compatible with `a`."""
    r = b.rng.random()
    if r < 0.15:
        return b.scalar_const(nonzero=nonzero_const)
    if r < 0.2:
        return a
    sa = b.shape(a)

    def fits(s: TensorSpec) -> bool:
        out = broadcast_shapes(sa, s.shape)
        return is_f32(s) and out is not None and math.prod(out) <= MAX_ELEMS

    return b.pick(fits, lambda: TensorSpec(broadcastable_to(b.rng, sa), F32))


def _binary(op: str, out_dtype: str = F32) -> Sampler:
    def sample(b: GraphBuilder) -> None:
        a = b.pick_any()
        c = _second_operand(b, a, nonzero_const=op == "relax.divide")
        ins = [a, c] if b.rng.random() < 0.5 else [c, a]
        shape = broadcast_shapes(b.shape(ins[0]), b.shape(ins[1]))
        assert shape is not None
        b.call(op, ins, {}, TensorSpec(shape, out_dtype))
    return sample


for _op in ("add", "subtract", "multiply", "divide", "maximum", "minimum"):
    _register(f"relax.{_op}", _binary(f"relax.{_op}"))
COMPARISONS = ("less", "greater", "equal", "not_equal", "less_equal", "greater_equal")
for _op in COMPARISONS:
    _register(f"relax.{_op}", _binary(f"relax.{_op}", BOOL), weight=0.4)


def _clip(b: GraphBuilder) -> None:
    x = b.pick_any()
    lo = b.rng.choice((-2.0, -1.0, -0.5, 0.0, 0.0, 0.25))
    hi = lo + b.rng.choice((0.5, 1.0, 2.0, 6.0))
    b.call("relax.clip", [x], {"min": lo, "max": hi}, b.spec(x), nonneg=lo >= 0)


_register("relax.clip", _clip)


def _softmax(op: str) -> Sampler:
    def sample(b: GraphBuilder) -> None:
        x = b.pick_any()
        r = b.spec(x).ndim
        b.call(op, [x], {"axis": b.rng.randrange(-r, r)}, b.spec(x),
               nonneg=op == "relax.nn.softmax")
    return sample


_register("relax.nn.softmax", _softmax("relax.nn.softmax"))
_register("relax.nn.log_softmax", _softmax("relax.nn.log_softmax"))


# shape manipulation ----------------------------------------------------------------------------
def _reshape(b: GraphBuilder) -> None:
    x = b.pick_any()
    s = b.spec(x)
    new = random_factorization(b.rng, s.size, b.rng.randint(1, MAX_RANK))
    if new == s.shape:
        new = random_factorization(b.rng, s.size, b.rng.randint(1, MAX_RANK))
    b.call("relax.reshape", [x], {"shape": list(new)}, TensorSpec(new, F32))


_register("relax.reshape", _reshape)


def _permute_dims(b: GraphBuilder) -> None:
    x = b.pick_rank(2)
    s = b.spec(x)
    axes = list(range(s.ndim))
    while axes == sorted(axes):
        b.rng.shuffle(axes)
    b.call("relax.permute_dims", [x], {"axes": axes},
           TensorSpec(tuple(s.shape[i] for i in axes), F32))


_register("relax.permute_dims", _permute_dims)


def _expand_dims(b: GraphBuilder) -> None:
    x = b.pick_rank(1, MAX_RANK - 1)
    s = b.spec(x)
    k = b.rng.randint(1, MAX_RANK - s.ndim)
    new_rank = s.ndim + k
    axes = sorted(b.rng.sample(range(new_rank), k))
    dims = iter(s.shape)
    out = tuple(1 if j in axes else next(dims) for j in range(new_rank))
    b.call("relax.expand_dims", [x], {"axis": axes}, TensorSpec(out, F32))


_register("relax.expand_dims", _expand_dims)


def _squeeze(b: GraphBuilder) -> None:
    def fits(s: TensorSpec) -> bool:
        return is_f32(s) and s.ndim >= 2 and 1 in s.shape and any(d != 1 for d in s.shape)

    def make() -> TensorSpec:
        rank = b.rng.randint(2, MAX_RANK)
        shape = list(rand_shape(b.rng, rank, lo=2))
        shape[b.rng.randrange(rank)] = 1
        return TensorSpec(tuple(shape), F32)

    x = b.pick(fits, make)
    s = b.spec(x)
    ones = [i for i, d in enumerate(s.shape) if d == 1]
    axes = sorted(b.rng.sample(ones, b.rng.randint(1, len(ones))))
    out = tuple(d for i, d in enumerate(s.shape) if i not in axes)
    b.call("relax.squeeze", [x], {"axis": axes}, TensorSpec(out, F32))


_register("relax.squeeze", _squeeze)


def _flatten(b: GraphBuilder) -> None:
    x = b.pick_rank(2)
    b.call("relax.flatten", [x], {}, TensorSpec((b.spec(x).size,), F32))


_register("relax.flatten", _flatten)


def _concat(b: GraphBuilder) -> None:
    x = b.pick_any()
    s = b.spec(x)
    axis = b.rng.randrange(s.ndim)
    parts = [x]
    for _ in range(b.rng.randint(1, 2)):
        def fits(t: TensorSpec) -> bool:
            return is_f32(t) and t.ndim == s.ndim and all(
                t.shape[i] == s.shape[i] for i in range(s.ndim) if i != axis)

        def make() -> TensorSpec:
            return TensorSpec(tuple(b.rng.randint(1, 6) if i == axis else d
                                    for i, d in enumerate(s.shape)), F32)

        parts.append(b.pick(fits, make))
    total = sum(b.shape(p)[axis] for p in parts)
    out = tuple(total if i == axis else d for i, d in enumerate(s.shape))
    b.call("relax.concat", parts, {"axis": axis}, TensorSpec(out, F32))


_register("relax.concat", _concat)


def _split(b: GraphBuilder) -> None:
    x = b.pick(lambda s: is_f32(s) and s.ndim >= 1 and max(s.shape) >= 2,
               lambda: TensorSpec(rand_shape(b.rng, None, lo=2), F32))
    s = b.spec(x)
    axis = b.rng.choice([i for i, d in enumerate(s.shape) if d >= 2])
    d = s.shape[axis]
    divisors = [k for k in range(2, min(d, 4) + 1) if d % k == 0]
    if divisors and b.rng.random() < 0.5:
        sections: Any = b.rng.choice(divisors)
        lengths = [d // sections] * sections
    else:
        sections = sorted(b.rng.sample(range(1, d), b.rng.randint(1, min(2, d - 1))))
        bounds = [0, *sections, d]
        lengths = [hi - lo for lo, hi in zip(bounds, bounds[1:])]
    out = tuple(TensorSpec(tuple(n if i == axis else e for i, e in enumerate(s.shape)), F32)
                for n in lengths)
    b.call_tuple("relax.split", [x], {"indices_or_sections": sections, "axis": axis}, out,
                 range(len(out)))


_register("relax.split", _split)


def _strided_slice(b: GraphBuilder) -> None:
    x = b.pick(lambda s: is_f32(s) and s.ndim >= 1 and max(s.shape) >= 2,
               lambda: TensorSpec(rand_shape(b.rng, None, lo=2), F32))
    s = b.spec(x)
    axes = sorted(b.rng.sample(range(s.ndim), b.rng.randint(1, min(2, s.ndim))))
    begin, end, strides = [], [], []
    out = list(s.shape)
    for a in axes:
        d = s.shape[a]
        lo = b.rng.randrange(d)
        hi = b.rng.randint(lo + 1, d)
        st = b.rng.choice((1, 1, 2))
        begin.append(lo)
        end.append(hi)
        strides.append(st)
        out[a] = -(-(hi - lo) // st)  # ceil((end - begin) / stride)
    b.call("relax.strided_slice", [x],
           {"axes": axes, "begin": begin, "end": end, "strides": strides,
            "assume_inbound": False}, TensorSpec(tuple(out), F32))


_register("relax.strided_slice", _strided_slice)


def _take(b: GraphBuilder) -> None:
    x = b.pick_any()
    s = b.spec(x)
    axis = b.rng.randrange(s.ndim)
    d = s.shape[axis]
    if s.ndim >= 2 and b.rng.random() < 0.2:  # a scalar index removes the axis
        idx_shape: tuple[int, ...] = ()
        value: Any = b.rng.randrange(d)
    else:
        n = b.rng.randint(1, 4)
        idx_shape = (n,)
        value = [b.rng.randrange(d) for _ in range(n)]  # in range: mode="fast" is UB otherwise
    idx = b.const(value, TensorSpec(idx_shape, I64))
    out = s.shape[:axis] + idx_shape + s.shape[axis + 1:]
    b.call("relax.take", [x, idx], {"axis": axis, "mode": "fast"}, TensorSpec(out, F32))


_register("relax.take", _take)


def _broadcast_to(b: GraphBuilder) -> None:
    x = b.pick(lambda s: is_f32(s) and s.ndim >= 1 and (1 in s.shape or s.ndim < MAX_RANK),
               lambda: TensorSpec(broadcastable_to(b.rng, rand_shape(b.rng)) or (1,), F32))
    s = b.spec(x)
    target = [b.rng.randint(1, 4) if d == 1 else d for d in s.shape]
    if s.ndim < MAX_RANK and (b.rng.random() < 0.3 or tuple(target) == s.shape):
        target.insert(0, b.rng.randint(2, 3))
    b.call("relax.broadcast_to", [x], {"shape": target}, TensorSpec(tuple(target), F32))


_register("relax.broadcast_to", _broadcast_to)


def _tile(b: GraphBuilder) -> None:
    x = b.pick_any()
    s = b.spec(x)
    reps = [b.rng.choice((1, 1, 2, 3)) for _ in s.shape]
    if all(r == 1 for r in reps):
        reps[b.rng.randrange(len(reps))] = 2
    out = tuple(d * r for d, r in zip(s.shape, reps))
    b.call("relax.tile", [x], {"repeats": reps}, TensorSpec(out, F32))


_register("relax.tile", _tile)


def _repeat(b: GraphBuilder) -> None:
    x = b.pick_any()
    s = b.spec(x)
    axis, reps = b.rng.randrange(s.ndim), b.rng.randint(2, 3)
    out = tuple(d * reps if i == axis else d for i, d in enumerate(s.shape))
    b.call("relax.repeat", [x], {"repeats": reps, "axis": axis}, TensorSpec(out, F32))


_register("relax.repeat", _repeat)


def _flip(b: GraphBuilder) -> None:
    x = b.pick_any()
    b.call("relax.flip", [x], {"axis": b.rng.randrange(b.spec(x).ndim)}, b.spec(x))


_register("relax.flip", _flip)


# reductions --------------------------------------------------------------------------------------
def _reduced_shape(shape: tuple[int, ...], axes: Optional[list[int]], keepdims: bool
                   ) -> tuple[int, ...]:
    r = len(shape)
    norm = set(range(r)) if axes is None else {a % r for a in axes}
    if keepdims:
        return tuple(1 if i in norm else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in norm)


def _reduce(op: str) -> Sampler:
    def sample(b: GraphBuilder) -> None:
        x = b.pick_any()
        s = b.spec(x)
        axes: Optional[list[int]]
        if b.rng.random() < 0.15:
            axes = None
        else:
            axes = sorted(b.rng.sample(range(s.ndim), b.rng.randint(1, s.ndim)))
            # sometimes spelled negatively (TVM keeps the attribute as written)
            axes = [a - s.ndim if b.rng.random() < 0.3 else a for a in axes]
        keepdims = b.rng.random() < 0.4
        b.call(op, [x], {"axis": axes, "keepdims": keepdims},
               TensorSpec(_reduced_shape(s.shape, axes, keepdims), F32))
    return sample


for _op in ("sum", "mean", "max", "min", "variance"):
    _register(f"relax.{_op}", _reduce(f"relax.{_op}"))


def _argmax(b: GraphBuilder) -> None:
    # int64 result: never consumed by other ops here, so it is always a graph output.
    x = b.pick_any()
    s = b.spec(x)
    axis = None if b.rng.random() < 0.2 else b.rng.randrange(s.ndim)
    keepdims = b.rng.random() < 0.4
    out = _reduced_shape(s.shape, None if axis is None else [axis], keepdims)
    b.call("relax.argmax", [x], {"axis": axis, "keepdims": keepdims}, TensorSpec(out, I64))


_register("relax.argmax", _argmax, weight=0.5)


# linear algebra ----------------------------------------------------------------------------------
def _matmul(b: GraphBuilder) -> None:
    a = b.pick(f32_rank(2, 4), lambda: TensorSpec(rand_shape(b.rng, b.rng.randint(2, 3)), F32))
    sa = b.spec(a)
    batch, (m, k) = sa.shape[:-2], sa.shape[-2:]
    if b.rng.random() < 0.1:  # matrix-vector: (..., m, k) @ (k,) -> (..., m)
        v = b.pick(lambda s: is_f32(s) and s.shape == (k,), lambda: TensorSpec((k,), F32))
        b.call("relax.matmul", [a, v], {"out_dtype": None}, TensorSpec(sa.shape[:-1], F32))
        return

    def fits(s: TensorSpec) -> bool:
        if not (is_f32(s) and s.ndim >= 2 and s.shape[-2] == k):
            return False
        bb = broadcast_shapes(batch, s.shape[:-2])
        return bb is not None and math.prod(bb) * m * s.shape[-1] <= MAX_ELEMS

    def make() -> TensorSpec:
        return TensorSpec(broadcastable_to(b.rng, batch) + (k, b.rng.randint(1, 8)), F32)

    w = b.pick(fits, make)
    sw = b.spec(w)
    out_batch = broadcast_shapes(batch, sw.shape[:-2])
    assert out_batch is not None
    b.call("relax.matmul", [a, w], {"out_dtype": None},
           TensorSpec(out_batch + (m, sw.shape[-1]), F32))


_register("relax.matmul", _matmul)


def _linear(b: GraphBuilder) -> None:
    # relax.op.linear(x, w, b) is the Python helper matmul(x, permute_dims(w)) + b.
    x = b.pick_any()
    sx = b.spec(x)
    k = sx.shape[-1]
    n = b.rng.randint(1, 8)
    w = b.operand(lambda s: is_f32(s) and s.ndim == 2 and s.shape[1] == k, lambda: (n, k))
    n = b.shape(w)[0]
    wt = b.call("relax.permute_dims", [w], {"axes": [1, 0]}, TensorSpec((k, n), F32))
    y = b.call("relax.matmul", [x, wt], {"out_dtype": None}, TensorSpec(sx.shape[:-1] + (n,), F32))
    if b.rng.random() < 0.6:
        bias = b.operand(lambda s: is_f32(s) and s.shape == (n,), lambda: (n,))
        b.call("relax.add", [y, bias], {}, TensorSpec(sx.shape[:-1] + (n,), F32))


_register("linear", _linear, ("relax.permute_dims", "relax.matmul", "relax.add"), (2, 3))


# convolution and pooling (NCHW) --------------------------------------------------------------------
def _image(b: GraphBuilder, min_hw: int = 1) -> str:
    """A float32 NCHW tensor with H, W >= min_hw."""
    return b.pick(lambda s: is_f32(s) and s.ndim == 4 and min(s.shape[2:]) >= min_hw,
                  lambda: TensorSpec(rand_shape(b.rng, 4, fixed={
                      0: b.rng.randint(1, 2), 1: b.rng.randint(1, 4),
                      2: b.rng.randint(max(3, min_hw), 8), 3: b.rng.randint(max(3, min_hw), 8)}),
                      F32))


def _window_out(size: int, pad_lo: int, pad_hi: int, k: int, stride: int, dilation: int,
                ceil_mode: bool = False) -> int:
    """Output length of a sliding window (TVM's conv2d / pool2d shape inference)."""
    num = size + pad_lo + pad_hi - ((k - 1) * dilation + 1)
    if not ceil_mode:
        return num // stride + 1
    out = (num + stride - 1) // stride + 1
    # With ceil_mode TVM (like PyTorch) drops a last window that would start in the bottom /
    # right padding: measured, e.g. H=4, pad=(0, 1), k=2, s=2 gives 2, not 3.
    if (out - 1) * stride >= size + pad_lo:
        out -= 1
    return out


def _conv2d(b: GraphBuilder) -> None:
    x = _image(b)
    n, c, h, w = b.shape(x)
    groups = c if c > 1 and b.rng.random() < 0.3 else 1
    out_c = c * b.rng.choice((1, 2)) if groups > 1 else b.rng.randint(1, 6)
    kh, kw = b.rng.randint(1, 3), b.rng.randint(1, 3)
    stride = b.rng.choice((1, 1, 2))
    dilation = b.rng.choice((1, 1, 1, 2))
    pad = [b.rng.randint(0, 1) for _ in range(4)]  # top, left, bottom, right
    oh = _window_out(h, pad[0], pad[2], kh, stride, dilation)
    ow = _window_out(w, pad[1], pad[3], kw, stride, dilation)
    require(oh >= 1 and ow >= 1, "conv2d window larger than the padded input")
    wshape = (out_c, c // groups, kh, kw)
    weight = b.operand(lambda s: is_f32(s) and s.shape == wshape, lambda: wshape)
    attrs = {"strides": [stride, stride], "padding": pad, "dilation": [dilation, dilation],
             "groups": groups, "data_layout": "NCHW", "kernel_layout": "OIHW",
             "out_layout": "NCHW", "out_dtype": None}
    b.call("relax.nn.conv2d", [x, weight], attrs, TensorSpec((n, out_c, oh, ow), F32))


_register("relax.nn.conv2d", _conv2d)


def _pool2d(op: str) -> Sampler:
    def sample(b: GraphBuilder) -> None:
        x = _image(b)
        n, c, h, w = b.shape(x)
        kh, kw = b.rng.randint(1, min(3, h)), b.rng.randint(1, min(3, w))
        stride = b.rng.choice((1, 2, 2))
        pad = [b.rng.randint(0, kh // 2), b.rng.randint(0, kw // 2),
               b.rng.randint(0, kh // 2), b.rng.randint(0, kw // 2)]
        ceil_mode = b.rng.random() < 0.2
        oh = _window_out(h, pad[0], pad[2], kh, stride, 1, ceil_mode)
        ow = _window_out(w, pad[1], pad[3], kw, stride, 1, ceil_mode)
        require(oh >= 1 and ow >= 1)
        attrs = {"pool_size": [kh, kw], "strides": [stride, stride], "padding": pad,
                 "dilation": [1, 1], "ceil_mode": ceil_mode,
                 "count_include_pad": op == "relax.nn.avg_pool2d" and b.rng.random() < 0.5,
                 "layout": "NCHW", "out_layout": "NCHW"}
        b.call(op, [x], attrs, TensorSpec((n, c, oh, ow), F32))
    return sample


_register("relax.nn.max_pool2d", _pool2d("relax.nn.max_pool2d"))
_register("relax.nn.avg_pool2d", _pool2d("relax.nn.avg_pool2d"))


def _adaptive_avg_pool2d(b: GraphBuilder) -> None:
    x = _image(b)
    n, c, h, w = b.shape(x)
    size = [b.rng.randint(1, h), b.rng.randint(1, w)]
    b.call("relax.nn.adaptive_avg_pool2d", [x],
           {"output_size": size, "layout": "NCHW", "out_layout": "NCHW"},
           TensorSpec((n, c, *size), F32))


_register("relax.nn.adaptive_avg_pool2d", _adaptive_avg_pool2d)


# normalisation ----------------------------------------------------------------------------------
def _layer_norm(b: GraphBuilder) -> None:
    x = b.pick_any()
    s = b.spec(x)
    k = b.rng.randint(1, min(2, s.ndim))
    pshape = s.shape[-k:]
    axes = list(range(-k, 0)) if b.rng.random() < 0.5 else list(range(s.ndim - k, s.ndim))
    gamma = b.operand(lambda t: is_f32(t) and t.shape == pshape, lambda: pshape)
    beta = b.operand(lambda t: is_f32(t) and t.shape == pshape, lambda: pshape)
    b.call("relax.nn.layer_norm", [x, gamma, beta],
           {"axes": axes, "epsilon": 1e-5, "center": True, "scale": True}, s)


_register("relax.nn.layer_norm", _layer_norm)


def _batch_norm(b: GraphBuilder) -> None:
    # Inference mode (training=False): uses moving_mean / moving_var; result item 0 only.
    x = b.pick_rank(2)
    s = b.spec(x)
    axis = 1 if b.rng.random() < 0.7 else b.rng.randrange(s.ndim)
    cshape = (s.shape[axis],)

    def param() -> str:
        return b.operand(lambda t: is_f32(t) and t.shape == cshape, lambda: cshape)

    gamma, beta, mean = param(), param(), param()
    if b.rng.random() < 0.7:  # a positive variance constant keeps sqrt(var + eps) real
        var = b.const_tensor(cshape, 0.5, 2.0)
    else:
        var = b.pick(lambda t: is_f32(t) and t.shape == cshape, lambda: TensorSpec(cshape, F32),
                     nonneg=False)
    attrs = {"axis": axis, "epsilon": 1e-5, "center": True, "scale": True, "momentum": 0.1,
             "training": False}
    b.call_tuple("relax.nn.batch_norm", [x, gamma, beta, mean, var], attrs,
                 (s, TensorSpec(cshape, F32), TensorSpec(cshape, F32)), [0])


_register("relax.nn.batch_norm", _batch_norm)


def _pad(b: GraphBuilder) -> None:
    x = b.pick_any()
    s = b.spec(x)
    width: list[int] = []
    for i in range(s.ndim):
        active = i >= s.ndim - 2 and b.rng.random() < 0.7
        width += [b.rng.randint(0, 2), b.rng.randint(0, 2)] if active else [0, 0]
    if not any(width):
        width[-1] = 1
    out = tuple(d + width[2 * i] + width[2 * i + 1] for i, d in enumerate(s.shape))
    b.call("relax.nn.pad", [x], {"pad_width": width, "pad_mode": "constant",
                                 "pad_value": b.rng.choice((0.0, 0.0, 1.0, -1.5))},
           TensorSpec(out, F32))


_register("relax.nn.pad", _pad)


# selection and casts ------------------------------------------------------------------------------
def _where(b: GraphBuilder) -> None:
    try:
        cond = b.pick(lambda s: s.dtype == BOOL, reuse=1.0)
    except Reject:  # make a condition: a comparison of float tensors
        _binary(f"relax.{b.rng.choice(COMPARISONS)}", BOOL)(b)
        cond = b.values[-1]
    cs = b.shape(cond)

    def fits_with(shape: tuple[int, ...]) -> Callable[[TensorSpec], bool]:
        def fits(s: TensorSpec) -> bool:
            out = broadcast_shapes(shape, s.shape)
            return is_f32(s) and out is not None and math.prod(out) <= MAX_ELEMS
        return fits

    x1 = b.pick(fits_with(cs), lambda: TensorSpec(broadcastable_to(b.rng, cs), F32))
    s1 = broadcast_shapes(cs, b.shape(x1))
    assert s1 is not None
    if b.rng.random() < 0.2:
        x2 = b.scalar_const(nonzero=False)
    else:
        x2 = b.pick(fits_with(s1), lambda: TensorSpec(broadcastable_to(b.rng, s1), F32))
    out = broadcast_shapes(s1, b.shape(x2))
    assert out is not None
    ins = [cond, x1, x2] if b.rng.random() < 0.5 else [cond, x2, x1]
    b.call("relax.where", ins, {}, TensorSpec(out, F32))


_register("relax.where", _where, ("relax.where",) + tuple(f"relax.{c}" for c in COMPARISONS),
          (1, 2))


def _astype(b: GraphBuilder) -> None:
    unused_bools = [v for v in b.values if b.spec(v).dtype == BOOL and b.uses[v] == 0]
    if unused_bools and b.rng.random() < 0.4:
        x = b.rng.choice(unused_bools)
        b.call("relax.astype", [x], {"dtype": F32}, TensorSpec(b.shape(x), F32), nonneg=True)
        return
    x = b.pick_any()
    half = b.call("relax.astype", [x], {"dtype": F16}, TensorSpec(b.shape(x), F16))
    b.call("relax.astype", [half], {"dtype": F32}, b.spec(x), nonneg=b.info[x].nonneg)


_register("relax.astype", _astype, calls=(1, 2))


def normalize_op_name(name: str) -> str:
    """Accept "add", "nn.conv2d", "relax.add", "linear"; return the `OPS` key."""
    if name in OPS:
        return name
    if f"relax.{name}" in OPS:
        return f"relax.{name}"
    raise KeyError(f"no op spec for {name!r} (known: {', '.join(sorted(OPS))})")
