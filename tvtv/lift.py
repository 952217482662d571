"""Counterexamples lifted from a refuted operator lemma to the whole graph.

Under per-operation a LegalizeOps check first proves each operator call alone on finite
values (`tvtv.lemmas`). When that is *refuted*, TVM's legalization differs from the
operator's specification on finite inputs x* (argmax gives -1 for a row of -FLT_MAX,
docs/findings.md). Whether the graph shows it depends on whether x* reaches the call, which
the whole-graph solver may take minutes to decide (and, under per-operation, a run with a
NaN/inf anywhere inside does not count: measured on zero graphs 0, 20 and 27, whose argmax
reads a graph input, 100-150 s and then `unknown`).

Where the call reads graph parameters directly, the obvious candidate is tried first: those
parameters get x*'s values, the others seeded random values. Where it reads computed values,
`tvtv.preimage` solves for graph inputs under which they are x* (measured on zero graph 29,
argmax over `2 * (exp(x0) @ x2ᵀ)`: 5 s, where the whole-graph check ended `unknown` after
64-78 s), the parameters they are not computed from again seeded. A candidate counts only
when execution shows it, as any counterexample must:
- the source is evaluated on it in the IEEE model (Relax ops by their specification), and
  under per-operation no tensor its outputs are computed from holds a NaN/inf
  (`tvtv.confirm.poisoned_inside`);
- the target runs on the TVM VM, and an output element differs from the specification's
  value where that value is a numeral (a float sum counts when every summation order gives
  one value; one depending on exp, tanh, ... is skipped: numpy's libm may differ from TVM's
  in the last ulp) and not poison under the assumptions.
It is then a counterexample confirmed `spec-vs-vm`; otherwise nothing is claimed and the
ordinary check runs.

Every candidate's inputs are finite (the lemma's were refuted on finite values, the seeded
fillings lie in ±[0.5, 2), pre-images are asked for finite inputs), so a lifted
counterexample lies in every input class (`--inputs any|no-nan|finite`) and needs none.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np
import z3

from tvtv import preimage
from tvtv.absfp import assumptions
from tvtv.absfp.dtypes import numpy_dtype
from tvtv.confirm import _ieee_run, poisoned_inside, py_value
from tvtv.encode.evaluate import certainly_holds, exact_value, same_value, values_of
from tvtv.encode.values import flatten
from tvtv.errors import TvtvError
from tvtv.ir import relax_reader, tvm_bridge
from tvtv.report import Counterexample

# seeded fillings tried for the parameters the refuted call does not read
CANDIDATES = 3
# pre-images already sought in this process, by module, call and target: a pipeline's step
# may lift from the same lemma twice (zero seed-5 graph 13: two 25 s queries, both unsat)
_PREIMAGES: dict[tuple[Any, ...], dict[str, np.ndarray] | None] = {}
# how a lifted counterexample's inputs were found (printed with the verdict)
PARAMETERS = ("its inputs at the graph's parameters, seeded values elsewhere")
PREIMAGE = ("graph inputs solved for (IEEE model, Z3 then cvc5) so that the call's computed "
            "arguments equal its inputs, seeded values elsewhere")
# output elements compared at most (the specification's values are evaluated for them)
MAX_ELEMENTS = 4096


def _fill(shape: tuple[int, ...], dtype: np.dtype, rng: np.random.Generator) -> np.ndarray:
    """Seeded values for a parameter the refuted call does not read: small and finite, so
    that the rest of the graph computes no NaN/inf (magnitudes in [0.5, 2), either sign)."""
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    if np.issubdtype(dtype, np.integer):
        return rng.integers(0, 3, size=shape).astype(dtype)
    mag = rng.uniform(0.5, 2.0, size=shape)
    return (np.where(rng.random(shape) < 0.5, -mag, mag)).astype(dtype)


def _poison(v: Any, assume: tuple[str, ...]) -> bool:
    """A source output value the assumptions make poison (anything refines it)."""
    if not isinstance(v, float):
        return False
    return (assumptions.NO_NAN in assume and math.isnan(v)) or \
        (assumptions.NO_INF in assume and math.isinf(v))


def _differs(spec: Any, got: Any, assume: tuple[str, ...]) -> bool:
    if spec is None or _poison(spec, assume):
        return False
    if assumptions.NO_SIGNED_ZEROS in assume and spec == 0 and got == 0:
        return False
    return not same_value(spec, got)


def lift(before: Any, after: Any, fname: str, param_names: list[str],
         refuted: dict[int, tuple[str, dict[str, Any], dict[str, list[int]] | None]],
         assume: tuple[str, ...]) -> tuple[Counterexample, str, str] | None:
    """A counterexample of `after` against `before`'s function `fname`, confirmed
    `spec-vs-vm`, built from an operator lemma refuted on finite values (`refuted`:
    single-operator module hash -> (operator, its counterexample's inputs x0, x1, ...)), the
    operator's name and how its inputs were reached (`PARAMETERS` or `PREIMAGE`); None when
    no candidate shows one (see the module doc)."""
    if not refuted or not assumptions.per_operation(assume):
        return None
    try:
        shapes = {p.name: (tuple(int(d) for d in p.ty.shape), numpy_dtype(str(p.ty.dtype)))
                  for p in before[fname].params if getattr(p.ty, "shape", None) is not None}
    except (TypeError, ValueError, KeyError, TvtvError):
        return None              # a symbolic dimension, or a dtype numpy cannot hold
    if set(shapes) != set(param_names):
        return None              # a tuple parameter: not tried
    tried: set[tuple[str, ...]] = set()
    for site_fn, mhash, mapping in tvm_bridge.parameter_call_sites(before):
        if site_fn != fname or mhash not in refuted:
            continue
        op, op_inputs, _ = refuted[mhash]
        fixed = {name: np.asarray(op_inputs.get(f"x{i}")) for i, name in enumerate(mapping)
                 if name is not None and f"x{i}" in op_inputs}
        if not fixed or tuple(sorted(fixed)) in tried:
            continue
        tried.add(tuple(sorted(fixed)))
        if any(fixed[n].shape != shapes[n][0] for n in fixed):
            continue
        cex = _candidates(before, after, fname, param_names, shapes, fixed, assume)
        if cex is not None:
            cex.message += f" (inputs lifted from the refuted {op} lemma)"
            return cex, op, PARAMETERS
    # the refuted call reads computed values: graph inputs that make them the lemma's inputs
    prog = None
    module_hash: int | None = None      # `before`'s hash, for the pre-image cache's key
    for site in tvm_bridge.operator_call_sites(before):
        if site.function != fname or site.module_hash not in refuted or all(site.params) \
                or None in site.vars or tuple(site.vars) in tried:
            continue
        tried.add(tuple(site.vars))
        op, op_inputs, reads = refuted[site.module_hash]
        if any(f"x{i}" not in op_inputs for i in range(len(site.vars))):
            continue
        # only the elements the lemma's differing element reads need to be reached (argmax
        # over a broadcast row: the lemma's other rows need not be its values)
        masks = None if reads is None else [reads.get(f"x{i}") for i in range(len(site.vars))]
        targets = [np.asarray(op_inputs[f"x{i}"]) for i in range(len(site.vars))]
        if module_hash is None:
            module_hash = tvm_bridge.structural_hash(before)
        key = (module_hash, fname, tuple(site.vars),
               tuple((t.dtype.str, t.shape, t.tobytes()) for t in targets),
               None if masks is None else tuple(None if m is None else tuple(m) for m in masks))
        if key not in _PREIMAGES:
            try:
                prog = prog or relax_reader.read_module(before)
                _PREIMAGES[key] = preimage.preimage(prog, fname, site.vars, targets, masks=masks)
            except (TvtvError, z3.Z3Exception, RuntimeError):
                _PREIMAGES[key] = None   # no candidate: nothing is claimed
        solved = _PREIMAGES[key]
        if solved is None:
            continue
        cex = _candidates(before, after, fname, param_names, shapes, solved, assume)
        if cex is not None:
            cex.message += f" (inputs solved for so that the refuted {op} lemma's inputs reach it)"
            return cex, op, PREIMAGE
    return None


def _candidates(before: Any, after: Any, fname: str, param_names: list[str],
                shapes: dict[str, tuple[tuple[int, ...], np.dtype]], fixed: dict[str, np.ndarray],
                assume: tuple[str, ...]) -> Counterexample | None:
    """The first of `CANDIDATES` seeded fillings of the parameters not in `fixed` on which
    execution shows a difference (`_shown`), or None."""
    for seed in range(CANDIDATES):
        rng = np.random.default_rng(seed)
        inputs = {n: fixed[n] if n in fixed else _fill(*shapes[n], rng) for n in param_names}
        cex = _shown(before, after, fname, param_names, inputs, assume)
        if cex is not None:
            return cex
    return None


def _shown(before: Any, after: Any, fname: str, param_names: list[str], inputs: dict[str, Any],
           assume: tuple[str, ...]) -> Counterexample | None:
    """The first output element where the target's execution on the VM differs from the
    IEEE evaluation of the source's specification on `inputs`, on a run the assumptions do
    not make poison; None otherwise."""
    if poisoned_inside(before, fname, inputs, assume) is not False:
        return None
    try:
        value, ctx = _ieee_run(before, fname, inputs, value_of=exact_value)
        if not certainly_holds(ctx.well_defined()):
            return None          # the source is undefined there: anything refines it
        runs = tvm_bridge.run_vm_isolated({"target": after}, fname, [[inputs[n] for n in param_names]])
    except (TvtvError, KeyError, NotImplementedError, z3.Z3Exception):
        return None              # not evaluated or not run: nothing is claimed
    outs = flatten(value)
    status, got = runs["target"][0]
    if status != "ok" or len(got) != len(outs):
        return None
    budget = MAX_ELEMENTS
    for k, (t, g) in enumerate(zip(outs, got)):
        if tuple(g.shape) != tuple(t.shape):
            return None
        n = min(t.numel, budget)
        specs = values_of([t.at(flat) for flat in range(n)], t.dtype, exact_value, partial=True)
        for flat, spec in enumerate(specs or []):
            idx = tuple(int(i) for i in np.unravel_index(flat, t.shape)) if t.shape else ()
            vm = py_value(g[idx])
            if _differs(spec, vm, assume):
                cex = Counterexample("value", f"output {k} differs at index {idx}", inputs,
                                     output=k, index=idx, source_value=spec, target_value=vm)
                cex.confirmed_by, cex.executed_values = "spec-vs-vm", (spec, vm)
                return cex
        budget -= t.numel
        if budget <= 0:
            break
    return None
