"""The type-directed generator, after the TVM RFC "Type-Directed Relay Fuzzing Library", on
Relax.

* `opinfo` / `registry`: per op a recognizer, a solver and a sampler (`OPS`, 78 ops in the
  families `elementwise`, `reduction`, `manipulate`, `nn`);
* `types`: the static types and the type generator;
* `exprgen`: the expression generator (the type checker in reverse, with fuel): op calls,
  variables, constants, tuples, TupleGetItem, If, local and private functions, match_cast,
  dataflow blocks;
* `modgen`: the module generator;
* `stats`: counts of the constructs in a module.

`generate(seed, min_ops, max_ops, **options)` returns a `tvm.ir.IRModule` with a public `main`
and `min_ops..max_ops` op calls in total. Options: any field of `exprgen.Options` (connective
weights, `fuel`, `p_dataflow`, `capture`, `ops`), and `dtypes` (the dtypes the type generator
draws). Deterministic: one `random.Random(seed)` drives everything.
"""
from __future__ import annotations

from typing import Any

import tvm

from generators.typed.exprgen import GenerationError, Options
from generators.typed.modgen import generate_module
from generators.typed.registry import OPS


def generate(seed: int, min_ops: int = 10, max_ops: int = 30, **options: Any) -> tvm.ir.IRModule:
    """A random well-formed Relax module from `seed` (see the package docstring)."""
    return generate_module(seed, min_ops, max_ops, **options)


__all__ = ["OPS", "GenerationError", "Options", "generate"]
