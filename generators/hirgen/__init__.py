"""HIRGen (Ma et al., ISSTA'23) on Relax: coverage-guided graph generation, subgraphs wrapped
into functions, and a disruptive mode for a crash oracle.

`generate(seed, min_ops, max_ops, **options)` inserts one operator node at a time (Algorithm
1): draw an operator of the pool (`pool.POOL`, 63 ops) and an operand dtype it accepts
(float32, float16, bfloat16, int32, int8, bool), connect it to existing values of fitting type
(or new inputs / scalar constants), infer its result type, and keep it according to the new
operator-dtype / operator-shape / operator-edge coverage items it adds (`coverage.py`: 3 new
-> kept, 2 -> 50 %, 1 -> 10 %, 0 -> dropped). Then slices of the graph are wrapped into private
functions, nested functions and Ifs (`wrap.py`, Algorithm 2). In ``mode="disruptive"`` exactly
one type or shape constraint is broken afterwards (`disrupt.py`), recorded in
``graph.meta["violation"]``; such graphs cannot be emitted through TVM's BlockBuilder (TVM
rejects them), so materialise them with `generators.emit.to_script(g, annotate=False)` and run
`crash_oracle` on them.

Options: ``mode`` ("strict" | "disruptive"), ``coverage`` (path of a JSON coverage file,
read before and written after generation, or a `Coverage` object; None: fresh coverage),
``guided`` (False: HIRGen_r, every valid candidate kept), ``functions`` (wrap slices, default
True), ``wrap_kinds`` (subset of "private", "nested", "if"), ``ops`` / ``dtypes`` (restrict the
pool). The same seed, options and coverage file give the identical graph.

Strict modules with nested functions need ``relax.transform.LambdaLift`` before
``relax.build`` (VMShapeLower: "do not work for local functions").
"""
from __future__ import annotations

import random
from pathlib import Path
from typing import Optional, Sequence, Union

from generators.graph import Graph, TensorSpec
from generators.hirgen.coverage import Coverage, node_items
from generators.hirgen.disrupt import break_one
from generators.hirgen.oracle import OracleResult, crash_oracle, crash_oracle_many
from generators.hirgen.pool import DTYPES, POOL, Builder, rand_shape
from generators.hirgen.wrap import KINDS, wrap_functions
from generators.ops import Reject

MAX_STALL = 200
"""Consecutive candidates dropped for lack of new coverage after which the next valid one is
kept anyway (with a coverage file carried over many runs, coverage saturates)."""
MAX_FAILURES = 5000


def generate(seed: int, min_ops: int = 10, max_ops: int = 30, *, mode: str = "strict",
             coverage: Union[str, Path, Coverage, None] = None, guided: bool = True,
             functions: bool = True, wrap_kinds: Sequence[str] = KINDS,
             ops: Optional[Sequence[str]] = None,
             dtypes: Optional[Sequence[str]] = None) -> Graph:
    """A HIRGen graph with `min_ops`..`max_ops` operator calls (see the module docstring)."""
    if min_ops < 1 or max_ops < min_ops:
        raise ValueError(f"need 1 <= min_ops <= max_ops, got {min_ops}, {max_ops}")
    if mode not in ("strict", "disruptive"):
        raise ValueError(f"mode must be 'strict' or 'disruptive', not {mode!r}")
    for k in wrap_kinds:
        if k not in KINDS:
            raise ValueError(f"unknown wrapping kind {k!r} (known: {', '.join(KINDS)})")
    cov = coverage if isinstance(coverage, Coverage) else Coverage.load(coverage)
    allowed = tuple(d for d in DTYPES if dtypes is None or d in dtypes)
    names = sorted(POOL) if ops is None else sorted(
        {o if o.startswith("relax.") else f"relax.{o}" for o in ops})
    pool = [POOL[n] for n in names if set(POOL[n].dtypes) & set(allowed)]
    if not pool:
        raise ValueError("no operator of the pool accepts the given dtypes")
    rng = random.Random(seed)
    target = rng.randint(min_ops, max_ops)
    b = Builder(rng)
    for _ in range(rng.randint(1, 3)):
        b.new_input(TensorSpec(rand_shape(rng), rng.choice(allowed)))
    stall = failures = 0
    while b.num_calls < target:
        op = rng.choice(pool)
        dtype = rng.choice([d for d in op.dtypes if d in allowed])
        snap = b.snapshot()
        try:
            op.sample(b, dtype)
        except Reject:
            b.restore(snap)
            failures += 1
            if failures > MAX_FAILURES:
                raise RuntimeError(f"seed {seed}: cannot place operators") from None
            continue
        node = b.last
        assert node is not None and isinstance(node.out, TensorSpec)
        items = node_items(op.name, dtype, node.out.shape, [b.producer[i] for i in node.inputs])
        new = cov.new_items(items)
        if guided and stall < MAX_STALL and not cov.keep(rng, len(new)):
            b.restore(snap)
            stall += 1
            continue
        stall = 0
        cov.add(items)
    g = _finish(b)
    if functions:
        wrap_functions(g, rng, max_ops, kinds=tuple(wrap_kinds))
    g.canonical_constants()  # as the importer names them: import_module(emit(g)) == g
    if mode == "disruptive":
        break_one(g, rng, cov)
    g.validate()
    if coverage is not None and not isinstance(coverage, Coverage):
        cov.save(coverage)
    return g


def _finish(b: Builder) -> Graph:
    """Drop unused inputs; every unused operator value becomes an output."""
    g = b.graph
    for name in list(g.inputs):
        if b.uses[name] == 0:
            del g.inputs[name]
    g.outputs = [v for v in b.values if b.uses[v] == 0 and b.producer[v] is not None]
    g.validate()
    return g


__all__ = ["generate", "crash_oracle", "crash_oracle_many", "OracleResult", "Coverage", "POOL"]
