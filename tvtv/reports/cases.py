"""The layout of a saved case, shared by `tvtv check --out DIR` (`tvtv.runner`, which saves
them) and `finalize` (which reads them): ``DIR/cases/<label>/before.py``, ``after.py``
(TVMScript, constants in ``.consts.npz`` beside) and ``inputs.npz`` (the counterexample's inputs
by parameter name). The label is made file-name safe the way `tvtv.runner.case_dir` does."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from tvtv.ir import npz
from tvtv.report import Result


def case_dir(out_dir: str | Path, label: str) -> Path:
    try:
        from tvtv.runner import case_dir as runner_case_dir
    except ImportError:   # the runner's own rule, repeated
        safe = "".join(c if c.isalnum() or c in "_.:#-" else "_" for c in label)
        return Path(out_dir) / "cases" / safe
    return runner_case_dir(Path(out_dir), label)


def load_inputs(path: Path) -> dict[str, Any]:
    try:
        from tvtv.runner import load_inputs as runner_load_inputs
    except ImportError:
        return npz.load(path)
    return runner_load_inputs(path)


def save_case(out_dir: str | Path, result: Result, before: Any, after: Any) -> Path:
    """Save the source and target modules of `result` and its counterexample's inputs, as
    `tvtv check --out` does."""
    from tvtv.ir import tvm_bridge
    folder = case_dir(out_dir, result.name)
    folder.mkdir(parents=True, exist_ok=True)
    tvm_bridge.save_module(before, folder / "before.py")
    tvm_bridge.save_module(after, folder / "after.py")
    cex = result.counterexample
    if cex is not None:
        npz.savez(folder / "inputs.npz", **{k: np.asarray(v) for k, v in cex.inputs.items()
                                           if not isinstance(v, tuple)})
    return folder
