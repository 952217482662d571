"""Worker processes that take requests over a `multiprocessing` pipe and end on `None`:
the run's case workers (`tvtv.runner`) and the pytest plugin's graph worker
(`tvtv.plugin_worker`) end, and are described when they die, the same way."""
from __future__ import annotations

import signal
from typing import Any

# how long a worker asked to end may take before it is killed, and a killed one to be reaped
GRACE = 5.0


def signal_name(number: int) -> str:
    """The name of signal `number` (SIGSEGV, SIGFPE, ...), or "unknown signal"."""
    try:
        return signal.Signals(number).name
    except ValueError:
        return "unknown signal"


def crash_reason(exitcode: int | None) -> str:
    """Why a worker process died, from its exit code (negative: killed by that signal)."""
    if exitcode is not None and exitcode < 0:
        return f"worker crashed: signal {-exitcode} ({signal_name(-exitcode)})"
    if exitcode:
        return f"worker crashed: exit status {exitcode}"
    return "worker crashed: it exited without a result"


def end_worker(proc: Any, conn: Any, kill: bool = False) -> None:
    """End the worker `proc` (a `multiprocessing` process) that reads from the other end of
    `conn`: it is sent `None` and given `GRACE` seconds to exit, or killed at once with
    `kill` (it is busy with a case, or hung), or when it does not exit; `conn` is closed."""
    if not kill:
        try:
            conn.send(None)
        except OSError:     # (BrokenPipeError is one) the worker is gone already
            pass
        proc.join(GRACE)
    if proc.is_alive():
        proc.kill()
    proc.join(GRACE)
    conn.close()
