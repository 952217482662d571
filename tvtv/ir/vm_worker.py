"""Run modules on the TVM VM in a separate process, so that a crash (SIGFPE from an integer
division by zero, a segfault in generated code) cannot take tvtv down with it.

    python -m tvtv.ir.vm_worker DIR FUNC NAME [NAME ...]

reads DIR/inputs.npz (arrays a0, a1, ... in parameter order) and, for each NAME, the module
DIR/NAME.py (+ NAME.consts.npz); writes DIR/NAME.out.npz (outputs o0, o1, ...) or
DIR/NAME.error.txt. Each module is written out before the next one runs.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np


def main(argv: list[str]) -> int:
    folder, func, names = Path(argv[0]), argv[1], argv[2:]
    from tvtv.ir import tvm_bridge

    with np.load(folder / "inputs.npz") as data:
        inputs = [data[f"a{i}"] for i in range(len(data.files))]
    for name in names:
        try:
            mod = tvm_bridge.load_module(folder / f"{name}.py")
            outs = tvm_bridge.run_vm(mod, func, inputs)
            np.savez(folder / f"{name}.out.npz", **{f"o{i}": o for i, o in enumerate(outs)})
        except Exception as err:  # reported to the parent, which decides what it means
            lines = str(err).strip().splitlines()
            (folder / f"{name}.error.txt").write_text(lines[-1] if lines else type(err).__name__)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
