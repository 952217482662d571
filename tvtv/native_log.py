"""TVM's C++ log lines on a worker's stderr, with the ones known to be harmless dropped.

TVM 0.27 writes `LOG(WARNING)` straight to file descriptor 2 (`tvm/runtime/logging.h`,
`LogMessage`), and has no run-time switch for the level. One warning comes from every graph
with a `take` in it: LegalizeOps lowers `relax.take` to topi's take in mode "fast", whose
every call prints "Fast mode segfaults when there are out-of-bounds indices"
(`include/tvm/topi/transform.h:1261`), dozens of lines in a `zero` run, interleaved with the
progress display. The warning says nothing the check does not already know: the encoder
makes an out-of-range index in mode "fast" undefined behaviour (`tvtv/encode/ops/
manipulate.py`, `take`), so the source's UB and the target's agree. Two more come with every
pass that rejects a module (a DeclGen run prints them a dozen times), whose error is the
verdict's reason already.

`filter_stderr` puts a pipe in front of a worker process's fd 2 and a thread that forwards
every line to the real stderr except those `HARMLESS` names. Python's own writes go
through it too, in order. `TVTV_TVM_WARNINGS=all` turns the filter off.

tvtv's own process (`tvtv check --jobs 0`, minimization after a run) filters with
`keep_python=True`: there rich draws its live progress display on stderr, and rich shows it
only on a terminal, which a pipe is not. So Python's `sys.stderr` is moved to a copy of the
real descriptor (still the terminal), and only what C++ writes to fd 2 passes the filter.
"""
from __future__ import annotations

import os
import sys
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO

# A substring of a known harmless TVM log line -> why it may be dropped.
HARMLESS: dict[str, str] = {
    "Fast mode segfaults when there are out-of-bounds indices":
        "topi take in mode \"fast\" (LegalizeOps of relax.take); the encoder makes an index "
        "outside [0, n) undefined behaviour, in source and target alike",
    # both are printed when a pass rejects a module (DeclGen's logical_and of int32 in
    # LegalizeOps), whose error is the verdict's reason already ("the pass failed: ...")
    "No TScriptPrinterName attribute for te.tensor_load":
        "TVMScript's printer writing a TE tensor load into the error message of a pass that "
        "rejected the module",
    "BlockBuilder destroyed with remaining blocks!":
        "a pass that failed while it was building a function (the failure is the verdict)",
}

ENV = "TVTV_TVM_WARNINGS"


def harmless(line: str) -> str | None:
    """The entry of `HARMLESS` that `line` matches, or None when it must be shown."""
    return next((key for key in HARMLESS if key in line), None)


class StderrFilter:
    """A pipe in front of this process's fd 2; lines `harmless` names are counted in
    `dropped` instead of written. `close()` restores fd 2 and writes what is left.

    With `keep_python`, Python's `sys.stderr` (when it is fd 2, not a capture of pytest's or
    click's) writes to a copy of the real descriptor instead, past the filter: a terminal
    stays a terminal for rich."""

    def __init__(self, keep_python: bool = False) -> None:
        self.dropped: Counter[str] = Counter()
        sys.stderr.flush()
        self._real = os.dup(2)
        self._python: TextIO | None = None
        if keep_python and _is_fd2(sys.stderr):
            self._python = sys.stderr
            sys.stderr = open(os.dup(self._real), "w", buffering=1,
                              encoding=self._python.encoding, errors=self._python.errors)
        read, write = os.pipe()
        os.dup2(write, 2)
        os.close(write)
        self._read = read
        self._thread = threading.Thread(target=self._forward, daemon=True,
                                        name="tvtv-stderr-filter")
        self._thread.start()

    def _forward(self) -> None:
        pending = b""
        while True:
            try:
                chunk = os.read(self._read, 65536)
            except OSError:
                chunk = b""
            if not chunk:
                break
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for line in lines:
                self._emit(line + b"\n")
        if pending:
            self._emit(pending)
        os.close(self._read)

    def _emit(self, line: bytes) -> None:
        key = harmless(line.decode("utf-8", "replace"))
        if key is not None:
            self.dropped[key] += 1
            return
        view = memoryview(line)
        while view:
            try:
                view = view[os.write(self._real, view):]
            except OSError:
                return

    def close(self) -> None:
        """Put the real stderr back on fd 2 and wait until every line written before is out."""
        sys.stderr.flush()
        if self._python is not None:
            moved, sys.stderr = sys.stderr, self._python
            moved.close()
        os.dup2(self._real, 2)   # the pipe's last writer is gone: the thread reads to its end
        self._thread.join(2)   # a child still holding fd 2 must not hold up the exit
        os.close(self._real)


def _is_fd2(stream: object) -> bool:
    """Whether `stream` writes to file descriptor 2 itself."""
    try:
        return stream.fileno() == 2   # type: ignore[attr-defined]
    except (AttributeError, OSError, ValueError):
        return False   # io.StringIO and captures without a descriptor


def filter_stderr(keep_python: bool = False) -> StderrFilter | None:
    """Filter this process's stderr (for a worker process, at its start; with `keep_python`
    for tvtv's own process); None when `TVTV_TVM_WARNINGS=all` asks to see every line."""
    if os.environ.get(ENV, "").strip().lower() == "all":
        return None
    return StderrFilter(keep_python)


@contextmanager
def filtered_stderr(keep_python: bool = False) -> Iterator[StderrFilter | None]:
    """`filter_stderr` for the block, every line out and fd 2 restored when it ends."""
    active = filter_stderr(keep_python)
    try:
        yield active
    finally:
        if active is not None:
            active.close()
