"""Run modules on the TVM VM in a separate process, so that a crash (SIGFPE from an integer
division by zero, a segfault in generated code) cannot take tvtv down with it.

    python -m tvtv.ir.vm_worker DIR FUNC NSETS NAME [NAME ...]

reads DIR/inputs.npz (arrays s{j}_a{i}: input set j, parameter i) and, for each NAME, the
module DIR/NAME.py (+ NAME.consts.npz); for each input set j writes DIR/NAME.s{j}.out.npz
(outputs o0, o1, ...) or DIR/NAME.s{j}.error.txt, each as soon as it is known.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np


def main(argv: list[str]) -> int:
    folder, func, nsets, names = Path(argv[0]), argv[1], int(argv[2]), argv[3:]
    from tvtv.ir import npz, tvm_bridge

    data = npz.load(folder / "inputs.npz")
    sets = [[data[k] for k in sorted((k for k in data if k.startswith(f"s{j}_")),
                                     key=lambda k: int(k.split("_a")[1]))] for j in range(nsets)]
    for name in names:
        try:
            exe = tvm_bridge.build_vm(tvm_bridge.load_module(folder / f"{name}.py"))
        except Exception as err:
            for j in range(nsets):
                (folder / f"{name}.s{j}.error.txt").write_text(_last_line(err))
            continue
        for j, inputs in enumerate(sets):
            try:
                outs = tvm_bridge.run_built(exe, func, inputs)
                # written under another name and renamed: a crash while the outputs are read
                # out (a view of memory the generated code corrupted) leaves no partial file
                part = folder / f"{name}.s{j}.part.npz"
                npz.savez(part, **{f"o{i}": o for i, o in enumerate(outs)})
                os.replace(part, folder / f"{name}.s{j}.out.npz")
            except Exception as err:  # reported to the parent, which decides what it means
                (folder / f"{name}.s{j}.error.txt").write_text(_last_line(err))
    return 0


def _last_line(err: Exception) -> str:
    lines = str(err).strip().splitlines()
    return lines[-1] if lines else type(err).__name__


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
