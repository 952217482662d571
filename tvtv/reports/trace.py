"""Source and target values along the way: every binding of both functions, run on the VM on
a counterexample's inputs.

Each module is read into the graph IR (`generators.importer`), every tensor-valued binding of
the function is made an output, and the result is emitted (`generators.emit`) and run in the
VM's child process. Where a module is outside the importer's reach, only its outputs are shown.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from generators.graph import CONST, TensorSpec

MAX_ELEMENTS_SHOWN = 16


def fmt_array(a: Any) -> str:
    """A short text form of an array (special values as nan, inf, -0.)."""
    arr = np.asarray(a)
    if arr.ndim == 0:
        return repr(arr.item())
    return np.array2string(arr, threshold=MAX_ELEMENTS_SHOWN, edgeitems=2, precision=6,
                           separator=", ").replace("\n", " ")


def _expose(mod: Any, func: str) -> tuple[Any, list[tuple[str, str, str]]] | None:
    """A module computing every tensor binding of `func` as an output, and (name, op, type) of
    each output; None when the module cannot be read into the graph IR."""
    from generators.emit import emit
    from generators.importer import import_module
    try:
        g = import_module(mod, func)
        h = g.copy()
        rows = [(n.name, _op_label(n), str(n.out)) for n in h.nodes
                if n.op != CONST and isinstance(n.out, TensorSpec)]
        if not rows:
            return None
        h.outputs = [r[0] for r in rows]
        return emit(h, check_types=False), rows
    except Exception:   # outside the importer's reach: the caller shows outputs only
        return None


def _op_label(n: Any) -> str:
    func = n.attrs.get("func") if isinstance(n.attrs, dict) else None
    return f"{n.op} {func}" if func else n.op


def trace(before: Any, after: Any, func: str, inputs: dict[str, np.ndarray],
          index: tuple[int, ...] | None, shape: tuple[int, ...] | None) -> dict[str, Any]:
    """{"source": rows, "target": rows, "error": str | None}; a row is a dict with name, op,
    type, value (short text) and at (the element at `index` when the binding has `shape`)."""
    from tvtv.ir import tvm_bridge
    mods: dict[str, Any] = {}
    rows: dict[str, list[tuple[str, str, str]]] = {}
    for side, mod in (("source", before), ("target", after)):
        exposed = _expose(mod, func)
        if exposed is None:
            mods[side], rows[side] = mod, []
        else:
            mods[side], rows[side] = exposed
    params = list(inputs)
    try:
        runs = tvm_bridge.run_vm_isolated(mods, func, [[inputs[p] for p in params]])
    except Exception as err:   # a module that cannot be written out
        return {"source": [], "target": [], "error": f"cannot run: {err}"}
    out: dict[str, Any] = {"error": None}
    for side in ("source", "target"):
        status, values = runs[side][0]
        if status != "ok":
            out[side] = [{"name": "(error)", "op": "", "type": "", "value": str(values), "at": ""}]
            continue
        names = rows[side] or [(f"output {k}", "", f"{v.dtype}{list(v.shape)}") for k, v in enumerate(values)]
        side_rows = []
        for (name, op, ty), v in zip(names, values):
            at = ""
            if index is not None and shape is not None and tuple(v.shape) == tuple(shape):
                at = str(np.asarray(v)[tuple(index)])   # numpy's short form in the array's dtype
            side_rows.append({"name": name, "op": op, "type": ty, "value": fmt_array(v), "at": at})
        out[side] = side_rows
    return out
