"""Confirm counterexamples by running both modules on the TVM VM (real execution).

`confirmed` = execution on the counterexample's inputs shows the difference;
`False` = execution agrees (the difference exists only in the abstraction: Alive2's
"not unsound"); `None` = the VM could not show it (a build or run failure).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from tvtv.encode.evaluate import same_value
from tvtv.ir import tvm_bridge
from tvtv.report import Counterexample


def _flat_outputs(mod: Any, fname: str, inputs: list[np.ndarray]) -> list[np.ndarray]:
    return tvm_bridge.run_vm(mod, fname, inputs)


def confirm(before: Any, after: Any, fname: str, param_names: list[str],
            cex: Counterexample) -> bool | None:
    inputs = [cex.inputs[n] for n in param_names]
    if any(isinstance(v, tuple) for v in inputs):
        return None
    try:
        src = _flat_outputs(before, fname, inputs)
    except Exception:
        return None
    try:
        tgt = _flat_outputs(after, fname, inputs)
    except Exception:
        return True if cex.kind == "ub" else None
    if len(src) != len(tgt):
        return True
    if cex.kind in ("shape", "dtype"):
        return any(a.shape != b.shape or a.dtype != b.dtype for a, b in zip(src, tgt))
    if cex.kind == "value" and cex.output is not None and cex.output < len(src):
        a, b = src[cex.output], tgt[cex.output]
        if a.shape != b.shape:
            return True
        idx = tuple(cex.index or ())
        return not same_value(_py(a[idx]), _py(b[idx]))
    return None


def _py(v: Any) -> Any:
    v = np.asarray(v).item()
    return float(v) if isinstance(v, float) else v
