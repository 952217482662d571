"""The VM process one tvtv process keeps for its runs on the TVM VM (`tvm_bridge.run_vm_isolated`).

Each run used to start `python -m tvtv.ir.vm_worker` anew, which imports TVM first (1.6 s
here) and builds every module again. The server (`vm_worker --serve`) stays between runs and
keeps what it built; a run is one request line and one answer line. Isolation is kept: a crash
of generated code ends the server, the run's missing results are crashes as before, and the
next run starts a new server. A run past its timeout kills the server. After
`MAX_REQUESTS` runs a server is replaced, so that what TVM keeps of the modules it built
(LLVM's code, the kept executables) stays bounded.
"""
from __future__ import annotations

import atexit
import json
import os
import select
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import IO

from tvtv.processes import signal_name

MAX_REQUESTS = 64

# how a run's answer begins when the server died before answering
DIED = "the VM process died"


class VMServer:
    """A `vm_worker --serve` process, started on first use and after a crash."""

    def __init__(self) -> None:
        self._proc: subprocess.Popen[str] | None = None
        self._owner = os.getpid()     # a forked child starts its own server
        self._served = 0
        self._pending = ""
        self._log: IO[bytes] | None = None    # the server's standard error

    def run(self, folder: Path, func: str, nsets: int, names: list[str], timeout: float) -> str | None:
        """Do one request (see `tvtv.ir.vm_worker`); None when the server answered, else why
        not: it died (a crash in generated code) or did not answer in `timeout` seconds.

        A server that had answered earlier requests and dies before answering this one is
        replaced and the request done once more: its death may belong to what it did before
        (measured: once in a CI run of 4,500 tests, a confirmation's run on a kept server
        came back "died" within 0.3 s, and the same test passes alone). A request that kills
        a fresh server too is a crash of its own."""
        if self._owner != os.getpid():
            self._proc, self._log, self._owner = None, None, os.getpid()
        if self._proc is not None and (self._proc.poll() is not None or self._served >= MAX_REQUESTS):
            self.close()
        reused = self._proc is not None
        why = self._request(folder, func, nsets, names, timeout)
        if why is not None and reused and self._proc is None and why.startswith(DIED):
            why = self._request(folder, func, nsets, names, timeout)
        return why

    def _request(self, folder: Path, func: str, nsets: int, names: list[str], timeout: float) -> str | None:
        """One request to the server, started first if there is none (see `run`)."""
        if self._proc is None:
            self._log = tempfile.TemporaryFile()
            self._proc = subprocess.Popen(
                [sys.executable, "-m", "tvtv.ir.vm_worker", "--serve"], stdin=subprocess.PIPE,
                stdout=subprocess.PIPE, stderr=self._log, text=True, bufsize=1)
            self._served, self._pending = 0, ""
        proc = self._proc
        assert proc.stdin is not None and proc.stdout is not None
        self._served += 1
        request = {"folder": str(folder), "func": func, "nsets": nsets, "names": names}
        try:
            proc.stdin.write(json.dumps(request) + "\n")
            proc.stdin.flush()
        except OSError:
            return self._died()
        deadline = time.monotonic() + timeout
        fd = proc.stdout.fileno()
        while "\n" not in self._pending:
            left = deadline - time.monotonic()
            if left <= 0:
                self.close(kill=True)
                return f"the VM process did not finish in {timeout:g} s"
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                continue
            chunk = os.read(fd, 4096).decode()
            if not chunk:
                return self._died()
            self._pending += chunk
        line, self._pending = self._pending.split("\n", 1)
        if line != "done":
            self.close(kill=True)
            return f"the VM process answered {line!r}"
        return None

    def _died(self) -> str:
        """Why the server ended: its exit status and the last line it wrote to its standard
        error (TVM's fatal message, Python's exception), if any."""
        assert self._proc is not None
        code = self._proc.wait()
        self._proc = None
        last = self._last_error_line()
        status = f"exit status {code}"
        if code < 0:    # killed by a signal: SIGFPE for an integer division by zero, SIGSEGV
            status += f", {signal_name(-code)}"
        return f"{DIED} ({status})" + (f": {last}" if last else "")

    def _last_error_line(self) -> str:
        """The last non-empty line of the ended server's standard error, at most 300
        characters; the log is closed."""
        log, self._log = self._log, None
        if log is None:
            return ""
        try:
            size = log.seek(0, os.SEEK_END)
            log.seek(max(0, size - 4096))
            lines = [ln.strip() for ln in log.read().decode(errors="replace").splitlines() if ln.strip()]
        finally:
            log.close()
        return lines[-1][:300] if lines else ""

    def close(self, kill: bool = False) -> None:
        """End the server: it exits at the end of its input, and is killed if it does not
        within 5 s (at once with `kill`)."""
        proc, self._proc = self._proc, None
        if self._log is not None:
            self._log.close()
            self._log = None
        if proc is None:
            return
        if kill:
            proc.kill()
        try:
            if proc.stdin is not None:
                proc.stdin.close()
            proc.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            proc.kill()
            proc.wait()


_SERVER = VMServer()
atexit.register(_SERVER.close)


def server() -> VMServer:
    """This process's VM server."""
    return _SERVER
