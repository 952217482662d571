"""Confirm counterexamples by running both modules on the TVM VM (real execution).

`True`: execution shows the difference (or the target crashes where the source runs);
`False`: execution agrees everywhere it was tried: the difference exists only in the
abstraction (Alive2's "not unsound"); `None`: the VM could not show it (the source fails
to build or run, or tuple inputs). The VM runs in a child process: generated code can crash.

The solver's inputs are tried first. An opaque PrimFunc is an uninterpreted function of
whole arrays, so those inputs may differ only where the real PrimFunc does not look; a few
seeded random inputs are tried next, and inputs that show a difference replace the
solver's in the counterexample (its message says so).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from tvtv.encode.evaluate import same_value
from tvtv.errors import InputError
from tvtv.ir import tvm_bridge
from tvtv.report import Counterexample

RANDOM_SETS = 3


def _random_like(a: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    if a.dtype == np.bool_:
        return rng.random(a.shape) < 0.5
    if np.issubdtype(a.dtype, np.integer):
        return rng.integers(0, 4, size=a.shape).astype(a.dtype)
    return rng.standard_normal(a.shape).astype(a.dtype) * 2


def _first_difference(src: list[np.ndarray], tgt: list[np.ndarray]) -> tuple[int, tuple, Any, Any] | None:
    for k, (a, b) in enumerate(zip(src, tgt)):
        if a.shape != b.shape or a.dtype != b.dtype:
            return k, (), None, None
        for idx in np.ndindex(a.shape):
            x, y = _py(a[idx]), _py(b[idx])
            if not same_value(x, y):
                return k, tuple(int(i) for i in idx), x, y
    return None


def confirm(before: Any, after: Any, fname: str, param_names: list[str],
            cex: Counterexample) -> bool | None:
    inputs = [cex.inputs[n] for n in param_names]
    if any(isinstance(v, tuple) for v in inputs):
        return None
    rng = np.random.default_rng(0)
    sets = [inputs] + [[_random_like(np.asarray(a), rng) for a in inputs] for _ in range(RANDOM_SETS)]
    try:
        runs = tvm_bridge.run_vm_isolated({"source": before, "target": after}, fname, sets)
    except InputError:   # a module whose tensor constants cannot be written out
        return None
    s_status, src = runs["source"][0]
    t_status, tgt = runs["target"][0]
    if s_status == "ok":
        if t_status != "ok" or len(src) != len(tgt):
            return True   # the source runs, the target fails or crashes on these inputs
        if cex.kind in ("shape", "dtype"):
            return any(a.shape != b.shape or a.dtype != b.dtype for a, b in zip(src, tgt))
        if cex.kind == "value" and cex.output is not None and cex.output < len(src):
            a, b = src[cex.output], tgt[cex.output]
            idx = tuple(cex.index or ())
            if a.shape != b.shape or not same_value(_py(a[idx]), _py(b[idx])):
                return True
    # the solver's inputs did not show it: try the random ones
    any_ran = s_status == "ok"
    for j in range(1, len(sets)):
        (s_status, src), (t_status, tgt) = runs["source"][j], runs["target"][j]
        if s_status != "ok" or t_status != "ok":
            continue
        any_ran = True
        diff = _first_difference(src, tgt)
        if diff is not None:
            k, idx, x, y = diff
            cex.inputs = dict(zip(param_names, sets[j]))
            cex.kind, cex.output, cex.index = "value", k, idx
            cex.source_value, cex.target_value, cex.confirmed_ieee = x, y, None
            cex.message = f"output {k} differs at index {idx} (inputs found by execution on the VM)"
            return True
    return False if any_ran else None


def _py(v: Any) -> Any:
    v = np.asarray(v).item()
    return float(v) if isinstance(v, float) else v
