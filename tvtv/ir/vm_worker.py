"""Run modules on the TVM VM in a separate process, so that a crash (SIGFPE from an integer
division by zero, a segfault in generated code) cannot take tvtv down with it.

    python -m tvtv.ir.vm_worker DIR FUNC NSETS NAME [NAME ...]
    python -m tvtv.ir.vm_worker --serve

reads DIR/inputs.npz (arrays s{j}_a{i}: input set j, parameter i) and, for each NAME, the
module DIR/NAME.py (+ NAME.consts.npz); for each input set j writes DIR/NAME.s{j}.out.npz
(outputs o0, o1, ...) or DIR/NAME.s{j}.error.txt, each as soon as it is known.

With `--serve` the process stays: it reads one request a line on its standard input (JSON:
{"folder", "func", "nsets", "names"}), does it as above and answers "done" on its standard
output; it ends at the end of its input. That saves the start-up (importing TVM, 1.6 s here)
of every run after the first, and a module built once (the same source in the checks of a
chain and in confirmation) is built once: executables are kept by the text of the module
files. What the generated code writes to the standard output goes to the standard error, so
it cannot be taken for an answer (`tvm_bridge.run_vm_isolated` is the other side).
"""
from __future__ import annotations

import hashlib
import json
import os
import sys
from collections import OrderedDict
from pathlib import Path
from typing import Any, Callable

from tvtv.errors import tvm_message


# built executables kept by a server, at most (by the hash of the module's files)
KEEP_EXECUTABLES = 16


def main(argv: list[str]) -> int:
    if argv == ["--serve"]:
        return serve()
    folder, func, nsets, names = Path(argv[0]), argv[1], int(argv[2]), argv[3:]
    from tvtv.ir import tvm_bridge
    run_request(folder, func, nsets, names,
                lambda path: tvm_bridge.build_executable(tvm_bridge.load_module(path)))
    return 0


def serve() -> int:
    """Answer requests until the standard input ends (see the module doc)."""
    if sys.platform.startswith("linux"):
        # killed with the process that started it (a tvtv worker killed at its case timeout):
        # prctl(PR_SET_PDEATHSIG, SIGKILL)
        import ctypes
        import signal
        ctypes.CDLL(None).prctl(1, signal.SIGKILL)
    from tvtv.ir import tvm_bridge
    answers = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)                 # fd 1 (Python's and C's stdout) now writes to stderr
    sys.stdout = sys.stderr
    built: OrderedDict[str, Any] = OrderedDict()

    def build(path: Path) -> Any:
        consts = tvm_bridge.consts_path(path)
        key = hashlib.sha256(path.read_bytes() + (consts.read_bytes() if consts.exists() else b"")).hexdigest()
        if key in built:
            built.move_to_end(key)
            return built[key]
        exe = tvm_bridge.build_executable(tvm_bridge.load_module(path))
        built[key] = exe
        while len(built) > KEEP_EXECUTABLES:
            built.popitem(last=False)
        return exe

    for line in sys.stdin:
        request = json.loads(line)
        run_request(Path(request["folder"]), request["func"], int(request["nsets"]),
                    list(request["names"]), build)
        answers.write("done\n")
        answers.flush()
    return 0


def run_request(folder: Path, func: str, nsets: int, names: list[str],
                build: Callable[[Path], Any]) -> None:
    """Run `func` of each module DIR/NAME.py on each input set, writing each result file as
    soon as it is known (see the module doc). `build` makes a module file's executable."""
    from tvtv.ir import npz, tvm_bridge

    data = npz.load(folder / "inputs.npz")
    sets = [[data[k] for k in sorted((k for k in data if k.startswith(f"s{j}_")),
                                     key=lambda k: int(k.split("_a")[1]))] for j in range(nsets)]
    for name in names:
        try:
            vm = tvm_bridge.vm_of(build(folder / f"{name}.py"))
        except Exception as err:
            for j in range(nsets):
                (folder / f"{name}.s{j}.error.txt").write_text(tvm_message(err))
            continue
        for j, inputs in enumerate(sets):
            try:
                outs = tvm_bridge.run_built(vm, func, inputs)
                # written under another name and renamed: a crash while the outputs are read
                # out (a view of memory the generated code corrupted) leaves no partial file
                part = folder / f"{name}.s{j}.part.npz"
                npz.savez(part, **{f"o{i}": o for i, o in enumerate(outs)})
                os.replace(part, folder / f"{name}.s{j}.out.npz")
            except Exception as err:  # reported to the parent, which decides what it means
                (folder / f"{name}.s{j}.error.txt").write_text(tvm_message(err))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
