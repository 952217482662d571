"""The crash oracle of HIRGen's disruptive mode: TVM must reject an ill-typed module with an
error; accepting it, or dying (segfault, abort, hang), is a bug.

`crash_oracle(source)` runs TVM on one module in a child process; `crash_oracle_many(sources)`
runs many in one child (TVM is imported once) and starts a new child after a case that killed
it. For each case the child parses the TVMScript text (TVM normalizes and infers types), checks
Relax well-formedness, runs the passes (default: LambdaLift, LegalizeOps, AnnotateTIROpPattern,
FuseOps, FuseTIR) and builds with ``relax.build(target="llvm")``; the first stage that raises a
Python exception rejects the module. A child that exits without answering (a signal such as
SIGSEGV, or exit code != 0) or is silent for `timeout` seconds is a crash.
"""
from __future__ import annotations

import json
import os
import selectors
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import Sequence, Union

from generators.graph import Graph

DEFAULT_PASSES = ("LambdaLift", "LegalizeOps", "AnnotateTIROpPattern", "FuseOps", "FuseTIR")

VERDICTS = ("rejected", "accepted", "crashed")


@dataclass(frozen=True)
class OracleResult:
    """What TVM did with one module: `verdict` is "rejected" (an error was raised at `stage`:
    parse, well_formed, pass:<Name> or build), "accepted" (every stage passed) or "crashed"
    (the process died or hung; `message` says how)."""

    verdict: str
    stage: str
    message: str
    error_type: str = ""

    def to_dict(self) -> dict[str, str]:
        return {"verdict": self.verdict, "stage": self.stage, "message": self.message,
                "error_type": self.error_type}


_CHILD = r'''
import json, sys, traceback
import tvm
from tvm import relax
from tvm.script import from_source

def run(case):
    stage = "parse"
    try:
        mod = from_source(case["text"])
        stage = "well_formed"
        relax.analysis.well_formed(mod)
        if not relax.analysis.check_well_formed(mod):
            raise ValueError("module is not well formed")
        for name in case["passes"]:
            stage = "pass:" + name
            with tvm.target.Target("llvm"):
                with tvm.transform.PassContext(opt_level=3):
                    mod = getattr(relax.transform, name)()(mod)
        if case["build"]:
            stage = "build"
            relax.build(mod, target="llvm")
    except Exception as e:  # a Python exception is a rejection with an error message
        lines = [l.strip() for l in str(e).strip().splitlines() if l.strip()]
        # DiagnosticError puts "error: <what>" before the source excerpt; others end with it
        said = [l for l in lines if l.startswith("error:")] or \
            [l for l in lines if l.strip("^|~ ")][-1:] or [""]
        return {"verdict": "rejected", "stage": stage, "error_type": type(e).__name__,
                "message": said[0][:500]}
    return {"verdict": "accepted", "stage": "build" if case["build"] else stage,
            "error_type": "", "message": ""}

path, start = sys.argv[1], int(sys.argv[2])
with open(path) as f:
    cases = [json.loads(l) for l in f]
for k in range(start, len(cases)):
    print(json.dumps({"index": k, **run(cases[k])}), flush=True)
'''


def _text(source: Union[str, Graph]) -> str:
    if isinstance(source, Graph):
        from generators.emit import to_script

        return to_script(source, annotate=False)
    return source


def crash_oracle_many(sources: Sequence[Union[str, Graph]],
                      passes: Sequence[str] = DEFAULT_PASSES, *, build: bool = True,
                      timeout: float = 120.0) -> list[OracleResult]:
    """`crash_oracle` of every source (TVMScript text, or a Graph printed without type
    annotations by `generators.emit.to_script`), sharing child processes."""
    cases = [{"text": _text(s), "passes": list(passes), "build": build} for s in sources]
    results: list[OracleResult | None] = [None] * len(cases)
    with tempfile.TemporaryDirectory(prefix="hirgen-oracle-") as tmp:
        path = os.path.join(tmp, "cases.jsonl")
        with open(path, "w") as f:
            for c in cases:
                f.write(json.dumps(c) + "\n")
        start = 0
        while start < len(cases):
            start = _run_child(path, start, len(cases), results, timeout, tmp)
    return [r for r in results if r is not None]


def _run_child(path: str, start: int, n: int, results: list, timeout: float, tmp: str) -> int:
    """Run one child from case `start`; returns the next case to do."""
    err_path = os.path.join(tmp, f"stderr{start}.txt")
    with open(err_path, "w") as err:
        proc = subprocess.Popen([sys.executable, "-c", _CHILD, path, str(start)],
                                stdout=subprocess.PIPE, stderr=err, text=True)
    sel = selectors.DefaultSelector()
    assert proc.stdout is not None
    sel.register(proc.stdout, selectors.EVENT_READ)
    k = start
    buf = ""
    deadline = time.monotonic() + timeout + 10.0  # the first case also pays TVM's import
    try:
        while k < n:
            left = deadline - time.monotonic()
            if left <= 0 or not sel.select(left):
                proc.kill()  # the child we started, by its handle
                proc.wait()
                results[k] = OracleResult("crashed", "timeout",
                                          f"no answer within {timeout:.0f} s")
                return k + 1
            chunk = proc.stdout.readline()
            if not chunk:  # the child died while on case k
                rc = proc.wait()
                with open(err_path) as f:
                    tail = [l for l in f.read().splitlines() if l.strip()][-3:]
                how = f"killed by signal {-rc}" if rc < 0 else f"exit code {rc}"
                results[k] = OracleResult("crashed", "process", f"{how}: {' | '.join(tail)}"[:500])
                return k + 1
            buf = chunk
            d = json.loads(buf)
            results[d["index"]] = OracleResult(d["verdict"], d["stage"], d["message"],
                                               d["error_type"])
            k = d["index"] + 1
            deadline = time.monotonic() + timeout
        proc.wait()
        return k
    finally:
        sel.close()
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def crash_oracle(source: Union[str, Graph], passes: Sequence[str] = DEFAULT_PASSES, *,
                 build: bool = True, timeout: float = 120.0) -> OracleResult:
    """Run TVM on one module in a child process (see the module docstring)."""
    return crash_oracle_many([source], passes, build=build, timeout=timeout)[0]
