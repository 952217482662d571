"""The GenCoG generator (Wang et al., ISSTA 2023) for Relax: constraint specifications in a
Python-embedded GenCoGL (`expr`, `spec`, one spec per op in `ops`), concolic solving (`solve`:
partial evaluation to a fixed point, then sampling and Z3 over bit-vectors), expressivity-
directed graph generation (`gen`) and the vertex/edge diversity metrics (`diversity`).
"""
from __future__ import annotations

import random
from typing import Any

from generators.graph import Graph


def generate(seed: int, min_ops: int = 10, max_ops: int = 30, **options: Any) -> Graph:
    """A random well-typed graph with `min_ops`..`max_ops` op calls (the composite linear
    counts its 2-3 calls); the same seed and options always give the same graph.

    Options (see `generators.gencog.gen` for the algorithm):

    * ``p_rej`` (0.9): probability of dropping a call that adds no vertex diversity;
    * ``use_penalty`` (4.0): values are picked with softmax(-use_penalty * uses);
    * ``score_scale`` (1.0): ops are picked with softmax(score_scale * standardised recent
      vertex-diversity gains);
    * ``history`` (16): how many recent attempts of an op its score averages;
    * ``reuse_prob`` (0.9): probability of wiring an existing value to a non-weight input;
    * ``max_variadic`` (4): most inputs of concat;
    * ``ops`` (all): the op names to use ("relax." may be omitted; "linear" is the composite);
    * ``dtypes`` / ``dtype_weights``: the first input's dtype distribution (float32, float16,
      bfloat16, int32, int8, bool with weights 8, 2, 1, 2, 1, 1); other dtypes arise through
      astype, comparisons and argmax;
    * ``max_input_rank`` (4): rank of the first input;
    * ``tracker``: a (VertexDiversity, EdgeDiversity) pair shared across calls (then graphs
      depend on the order of calls, not only on their seeds);
    * ``strict`` (True): GenCoG only makes well-typed graphs; False is refused.
    """
    from generators.gencog.gen import GraphGenerator, Options

    if min_ops < 1 or max_ops < min_ops:
        raise ValueError(f"need 1 <= min_ops <= max_ops, got {min_ops}, {max_ops}")
    if not options.pop("strict", True):
        raise ValueError("the gencog generator has no disruptive mode (strict=False)")
    known = set(Options.__dataclass_fields__)
    bad = sorted(set(options) - known)
    if bad:
        raise ValueError(f"unknown gencog options {bad} (known: {sorted(known)})")
    return GraphGenerator(random.Random(seed), Options(**options)).generate(min_ops, max_ops)


__all__ = ["generate"]
