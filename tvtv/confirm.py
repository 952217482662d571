"""Confirm counterexamples by running both modules on the TVM VM (real execution).

`True`: execution on the counterexample's inputs shows the difference (or the target
crashes where the source runs); `False`: execution agrees, the difference exists only in the
abstraction (Alive2's "not unsound"); `None`: the VM could not show it (the source fails to
build or run, or tuple inputs). The VM runs in a child process: generated code can crash.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from tvtv.encode.evaluate import same_value
from tvtv.ir import tvm_bridge
from tvtv.report import Counterexample


def confirm(before: Any, after: Any, fname: str, param_names: list[str],
            cex: Counterexample) -> bool | None:
    inputs = [cex.inputs[n] for n in param_names]
    if any(isinstance(v, tuple) for v in inputs):
        return None
    runs = tvm_bridge.run_vm_isolated({"source": before, "target": after}, fname, inputs)
    (s_status, src), (t_status, tgt) = runs["source"], runs["target"]
    if s_status != "ok":
        return None
    if t_status != "ok":
        return True   # the source runs, the target fails or crashes on these inputs
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
