"""The process in which the pytest plugin checks its generated graphs, one at a time.

A check can outlive every solver timeout: Z3 does not bound `Z3_solver_assert` (a zero
graph once spent more than ten minutes and 2 GB there), and a crash in TVM or Z3 would end
pytest itself. So each graph item is checked in one spawned worker process, kept for the
session (TVM is imported once), with a fresh Z3 context per graph as the CLI's workers have
(`tvtv.runner.run_case_in_worker`): a graph's verdict does not depend on the graphs checked
before it. A graph that outlives its case timeout, or whose worker dies, is `unknown` with
the reason; the next graph gets a new worker.
"""
from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import signal
import time
import traceback
from dataclasses import dataclass
from typing import Any

from tvtv.processes import crash_reason, end_worker
from tvtv.report import UNKNOWN, Result

# Seconds a new worker may take to import TVM and tvtv before the plugin gives up on it
# (not part of any graph's case timeout).
START_TIMEOUT = 300.0


@dataclass(frozen=True)
class GraphRequest:
    """One generated graph to check: what `check_graph` needs, all of it picklable."""

    label: str
    pass_spec: str              # a registered pass name or `module:attr`
    generator: str
    seed: int
    index: int
    min_ops: int
    max_ops: int
    ops: tuple[str, ...] | None
    fp: str
    timeout: float
    float_options: dict[str, Any]


@dataclass
class GraphOutcome:
    """What checking a graph gave: its results, and the module's text when it was refuted."""

    results: list[Result]
    module_text: str = ""


def check_graph(req: GraphRequest) -> GraphOutcome:
    """Generate the graph, run the pass on it and check the result (in the calling process)."""
    import generators
    from tvtv.api import check_pass
    from tvtv.pytest_plugin import module_text, resolve_pass
    from tvtv.report import COUNTEREXAMPLE
    kwargs: dict[str, Any] = {"ops": list(req.ops)} if req.ops else {}
    mod = generators.generate_module(req.generator, req.seed, req.index, req.min_ops,
                                     req.max_ops, **kwargs)
    report = check_pass(resolve_pass(req.pass_spec), mod, fp=req.fp, timeout=req.timeout,
                        label=req.label, **req.float_options)
    text = module_text(mod) if report.verdict == COUNTEREXAMPLE else ""
    return GraphOutcome(list(report.results), text)


def _worker_main(conn: Any) -> None:
    """Receive requests, answer each with ("done", outcome) or ("error", last line)."""
    from tvtv import runner
    signal.signal(signal.SIGINT, signal.SIG_IGN)   # Ctrl-C is pytest's to handle
    runner._exit_with_parent()
    from tvtv.native_log import filtered_stderr
    with filtered_stderr():   # TVM's harmless C++ warnings would flood pytest's output
        _serve_requests(conn)


def _serve_requests(conn: Any) -> None:
    """The worker's loop: say ready, then check each graph received until told to stop."""
    from tvtv import runner, z3context
    import tvtv.api  # noqa: F401  (TVM imported before "ready": not part of a graph's time)
    conn.send(("ready",))
    while True:
        try:
            req = conn.recv()
        except (EOFError, OSError):
            return
        if req is None:
            return
        if runner._hooked(runner.HANG_HOOK, req.label):   # test hook: a check that hangs
            time.sleep(10 ** 6)
        z3context.fresh()
        try:
            msg: tuple[Any, ...] = ("done", check_graph(req))
        except Exception:
            msg = ("error", traceback.format_exc(limit=3).strip().splitlines()[-1])
        finally:
            z3context.fresh()
        try:
            conn.send(msg)
        except OSError:
            return


class GraphWorker:
    """A worker process for the session's graphs, started when first needed and again after
    one was killed or died."""

    def __init__(self) -> None:
        self._ctx = multiprocessing.get_context("spawn")
        self._proc: Any = None
        self._conn: Any = None

    def _start(self) -> str | None:
        """Start a worker and wait until it is ready: None, or why it could not start."""
        self._conn, child = self._ctx.Pipe()
        self._proc = self._ctx.Process(target=_worker_main, args=(child,), daemon=True,
                                       name="tvtv-plugin-worker")
        self._proc.start()
        child.close()
        if self._conn.poll(START_TIMEOUT):
            try:
                if self._conn.recv() == ("ready",):
                    return None
            except (EOFError, OSError):
                pass
        self._proc.join(5)
        reason = crash_reason(self._proc.exitcode) if self._proc.exitcode is not None \
            else f"not ready after {START_TIMEOUT:g} s"
        self.close(kill=True)
        return f"the plugin's worker process did not start ({reason})"

    def check(self, req: GraphRequest, case_timeout: float) -> GraphOutcome:
        """Check `req` in the worker; `unknown` with the reason when it outlives
        `case_timeout` seconds or the worker dies."""
        if self._proc is None or not self._proc.is_alive():
            failed = self._start()
            if failed is not None:
                return _unknown(req, failed, 0.0)
        start = time.monotonic()
        reason: str
        try:
            self._conn.send(req)
            ready = multiprocessing.connection.wait([self._conn, self._proc.sentinel],
                                                    timeout=case_timeout)
            if self._conn in ready:
                msg = self._conn.recv()
                if msg[0] == "done":
                    return msg[1]
                reason = f"internal error: {msg[1]}"
                return _unknown(req, reason, time.monotonic() - start)
            if ready:   # the process ended without an answer
                self._proc.join(5)
                reason = crash_reason(self._proc.exitcode)
            else:
                reason = f"case timeout after {case_timeout:g} s"
        except (EOFError, OSError):
            self._proc.join(5)
            reason = crash_reason(self._proc.exitcode)
        self.close(kill=True)
        return _unknown(req, reason, time.monotonic() - start)

    def close(self, kill: bool = False) -> None:
        """Stop the worker: ask it to end, or `kill` it (it is busy with a case)."""
        if self._proc is None:
            return
        end_worker(self._proc, self._conn, kill)
        self._proc = self._conn = None


def _unknown(req: GraphRequest, reason: str, seconds: float) -> GraphOutcome:
    return GraphOutcome([Result(req.label, req.pass_spec, UNKNOWN, seconds, reason, fp_model=req.fp)])
