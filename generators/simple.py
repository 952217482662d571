"""The "simple" generator: GenCoG-flavoured type-directed random graphs, without a solver.

Start from 1-3 float32 graph inputs of random shapes; then, until the chosen number of op
calls is reached, pick an op spec (weighted by `OpSpec.weight`) and let it pick its inputs among
the existing values whose types fit (reusing one with probability 0.9, preferring values nobody
uses yet; otherwise making a new graph input of a fitting type) and solve its attributes so the
call type-checks (see `generators/ops.py`). A spec that cannot apply is undone and another op is
tried. Finally unused inputs are dropped and every value nobody uses becomes a graph output, so
nothing is dead.

Deterministic: all randomness comes from one `random.Random(seed)`, and nothing iterates over
sets or over dicts keyed by anything but insertion order.
"""
from __future__ import annotations

import random
from typing import Optional, Sequence

from generators.graph import Graph, TensorSpec
from generators.ops import F32, OPS, GraphBuilder, Reject, normalize_op_name, rand_shape

MAX_FAILURES_PER_OP = 200


def generate(seed: int, min_ops: int = 10, max_ops: int = 30,
             ops: Optional[Sequence[str]] = None) -> Graph:
    """A random well-typed graph with between `min_ops` and `max_ops` op calls, built only
    from the op specs named in `ops` (default: all of `generators.ops.OPS`; names may omit the
    "relax." prefix). The same arguments always give the identical graph."""
    if min_ops < 1 or max_ops < min_ops:
        raise ValueError(f"need 1 <= min_ops <= max_ops, got {min_ops}, {max_ops}")
    # sorted: the caller's container order (a set's, say) must not change the graph
    names = sorted({normalize_op_name(o) for o in (OPS if ops is None else ops)})
    specs = [OPS[n] for n in names]
    rng = random.Random(seed)
    target = rng.randint(min_ops, max_ops)
    b = GraphBuilder(rng)
    for _ in range(rng.randint(1, 3)):
        b.new_input(TensorSpec(rand_shape(rng), F32))
    failures = 0
    while b.num_calls < target:
        room = max_ops - b.num_calls
        fitting = [s for s in specs if s.calls[1] <= room]
        if not fitting:
            if b.num_calls >= min_ops:
                break
            raise ValueError(f"ops {names} cannot make a graph of {min_ops}..{max_ops} calls")
        spec = rng.choices(fitting, weights=[s.weight for s in fitting])[0]
        snap = b.snapshot()
        try:
            spec.sample(b)
        except Reject:
            b.restore(snap)
            failures += 1
            if failures > MAX_FAILURES_PER_OP * max_ops:
                raise RuntimeError(f"seed {seed}: op specs {names} keep failing") from None
    return b.finish()
