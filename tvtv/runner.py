"""Long runs: cases checked in worker processes, each result stored as soon as it is known.

A *case* is one module to check: a generated graph (generator, seed, index) or a file. Each
case runs the pass (after its prerequisites) or the pipeline, and validates it.

Isolation. Cases run in worker processes started with `spawn` (TVM is not fork-safe). A
worker that dies (segfault, `os._exit`, killed) or that exceeds the per-case timeout is
killed and replaced; its case is reported `unknown` with the reason ("worker crashed:
signal 11 (SIGSEGV)", "case timeout after 60 s") and the run goes on. Every run with
`jobs >= 1` is isolated, including `--jobs 1`: a crash of TVM must never lose a run.
`jobs = 0` runs cases in the calling process (for debugging and profiling): no crash
isolation, and no per-case timeout.

Storage. With a `ResultStore` (a SQLite file), each case's results are committed when the
case finishes. The store also holds the run's configuration (the pass or pipeline, the
generator and its options, the float model, solver and assumptions: everything that can
change a verdict); resuming with a different configuration is an error. A case's key is
(pass or pipeline, generator + seed + index or file, a digest of the options), so a resumed
run skips exactly the cases already stored, and a larger `--graphs` extends a run.
Crashes and timeouts are stored too: they are that case's result.

Test hooks (documented, used by tests/test_runner.py; they do nothing unless set):
- `TVTV_TEST_CRASH_CASE=label[,label]`: a worker kills itself with SIGKILL on those cases;
- `TVTV_TEST_SEGFAULT_CASE=label[,label]`: a worker reads address 0 (SIGSEGV) on those cases;
- `TVTV_TEST_HANG_CASE=label[,label]`: a worker sleeps forever on those cases;
- `TVTV_TEST_STOP_AFTER=k`: the run kills itself with SIGKILL once k cases are stored
  (an interrupted run, with no chance to clean up).
"""
from __future__ import annotations

import hashlib
import io
import json
import os
import signal
import sqlite3
import time
import traceback
from collections import deque
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from tvtv import machine, z3context
from tvtv.errors import InputError
from tvtv.ir import npz
from tvtv.processes import crash_reason, end_worker
from tvtv.report import COUNTEREXAMPLE, UNKNOWN, Result

CRASH_HOOK, SEGFAULT_HOOK = "TVTV_TEST_CRASH_CASE", "TVTV_TEST_SEGFAULT_CASE"
HANG_HOOK, STOP_HOOK = "TVTV_TEST_HANG_CASE", "TVTV_TEST_STOP_AFTER"
# a worker holds 1 GiB while it sleeps on that case (tests the memory limit)
MEMORY_HOOK = "TVTV_TEST_MEMORY_CASE"
# the per-case memory limit in MiB, instead of `case_memory_limit`'s share of the machine
MEMORY_LIMIT_ENV = "TVTV_CASE_MEMORY_MB"
SCHEMA = 1
WORKER_START_ATTEMPTS = 3


@dataclass(frozen=True)
class RunConfig:
    """Everything that decides a case's verdict (stored in the DB and compared on resume)."""

    pass_name: str | None = None
    pipeline: str | None = None          # a pipeline name or a file (see tvtv.pipeline)
    pipeline_id: str | None = None       # name, or file path + content hash
    generator: str | None = None
    seed: int | None = None
    min_ops: int | None = None
    max_ops: int | None = None
    module: str | None = None            # a file or a folder of modules (absolute path)
    fp: str = "abstract"
    timeout: float = 30.0
    float_options: dict[str, Any] = field(default_factory=dict)   # solver, assume, ...

    def identity(self) -> dict[str, Any]:
        d = asdict(self)
        d.pop("pipeline")   # pipeline_id identifies it
        # a check's time budget follows --case-timeout and --jobs, which a resumed run may
        # change, like the machine's speed
        d["float_options"].pop("budget", None)
        return d

    def check_options(self) -> dict[str, Any]:
        """The `tvtv.check_pass` options a finding of this run is worked on with afterwards
        (minimization): the float model, solver, assumptions and input class, not the
        per-check budget (minimization has its own timeouts)."""
        return check_options(self.identity())

    def digest(self) -> str:
        return hashlib.sha256(json.dumps(self.identity(), sort_keys=True).encode()).hexdigest()[:16]

    @property
    def target_name(self) -> str:
        """The pass, or the pipeline, this run validates."""
        return self.pass_name or f"pipeline {self.pipeline}"


@dataclass(frozen=True)
class Case:
    """One module to check. `source` is {"kind": "generated", "generator", "seed", "index"}
    or {"kind": "file", "path"}."""

    key: str
    position: int
    label: str
    source: dict[str, Any]


def generated_cases(config: RunConfig, n: int) -> list[Case]:
    return [_case(config, k, f"graph{config.seed}_{k}",
                  {"kind": "generated", "generator": config.generator, "seed": config.seed, "index": k})
            for k in range(n)]


def module_cases(config: RunConfig, path: Path) -> list[Case]:
    """A file, or every `*.py` file of a folder (sorted by name); labels are file stems."""
    if path.is_dir():
        files = sorted(p for p in path.glob("*.py") if p.is_file())
        if not files:
            raise InputError(f"{path}: no module files (*.py) in this folder")
    else:
        files = [path]
    for f in files:
        try:
            f.read_bytes()
        except OSError as err:
            raise InputError(f"{f}: cannot read: {err.strerror}") from None
    return [_case(config, k, f.stem, {"kind": "file", "path": str(f.resolve())})
            for k, f in enumerate(files)]


def _case(config: RunConfig, position: int, label: str, source: dict[str, Any]) -> Case:
    what = config.pass_name or config.pipeline_id
    ident = (f"{source['generator']}:{source['seed']}:{source['index']}" if source["kind"] == "generated"
             else f"file:{source['path']}")
    return Case(json.dumps([what, ident, config.digest()]), position, label, source)


# ---------------------------------------------------------------- saving a case's artifacts

def case_dir(out: Path, label: str) -> Path:
    """`out/cases/<label>`: the label with anything but letters, digits and `_.:#-` made `_`."""
    safe = "".join(c if c.isalnum() or c in "_.:#-" else "_" for c in label)
    return Path(out) / "cases" / safe


def flatten_inputs(inputs: dict[str, Any]) -> dict[str, np.ndarray]:
    """Arrays keyed for `np.savez`: tuple parameters as `name.0`, `name.1`, ..."""
    flat: dict[str, np.ndarray] = {}

    def put(key: str, v: Any) -> None:
        if isinstance(v, tuple):
            flat[f"{key}.__tuple__"] = np.array(len(v))
            for i, x in enumerate(v):
                put(f"{key}.{i}", x)
        else:
            flat[key] = np.asarray(v)

    for name, value in inputs.items():
        put(name, value)
    return flat


def unflatten_inputs(flat: dict[str, np.ndarray]) -> dict[str, Any]:
    def get(key: str) -> Any:
        if f"{key}.__tuple__" in flat:
            return tuple(get(f"{key}.{i}") for i in range(int(flat[f"{key}.__tuple__"])))
        return flat[key]

    return {name: get(name) for name in dict.fromkeys(k.split(".")[0] for k in flat)}


def save_inputs(path: Path, inputs: dict[str, Any]) -> None:
    npz.savez(path, **flatten_inputs(inputs))


def load_inputs(path: Path) -> dict[str, Any]:
    return unflatten_inputs(npz.load(path))


def _inputs_blob(inputs: dict[str, Any]) -> bytes:
    buf = io.BytesIO()
    npz.savez(buf, **flatten_inputs(inputs))
    return buf.getvalue()


def _inputs_from_blob(blob: bytes) -> dict[str, Any]:
    return unflatten_inputs(npz.load(io.BytesIO(blob)))


def save_case(out: Path, result: Result, before: Any, after: Any) -> None:
    """`out/cases/<label>/`: before.py, after.py (with .consts.npz) and inputs.npz of a
    counterexample; a module that cannot be written leaves NOTE.txt saying why."""
    from tvtv.ir import tvm_bridge
    folder = case_dir(out, result.name)
    folder.mkdir(parents=True, exist_ok=True)
    notes = []
    for name, mod in (("before", before), ("after", after)):
        try:
            tvm_bridge.save_module(mod, folder / f"{name}.py")
        except InputError as err:
            notes.append(f"{name}.py: {err}")
    if result.counterexample is not None:
        save_inputs(folder / "inputs.npz", result.counterexample.inputs)
    if notes:
        (folder / "NOTE.txt").write_text("\n".join(notes) + "\n")


# ---------------------------------------------------------------- one case

def run_case(case: Case, config: RunConfig, out: Path | None) -> list[Result]:
    """Check one case (in the calling process). Bad input (an unreadable or malformed module)
    raises InputError; any other failure is the case's `unknown` result."""
    start = time.perf_counter()
    try:
        return _run_case(case, config, out)
    except InputError:
        raise
    except Exception as err:   # a failure in one case never loses the others
        return [Result(case.label, config.pass_name or config.pipeline, UNKNOWN,
                       time.perf_counter() - start, f"internal error: {type(err).__name__}: {err}",
                       fp_model=config.fp)]


def run_case_in_worker(case: Case, config: RunConfig, out: Path | None) -> list[Result]:
    """`run_case` in a fresh Z3 context, freed again when the case ends (before the worker
    judges whether to retire): what the cases before it left in Z3 does not slow its queries
    (`tvtv.z3context`). Only for a worker, which holds no z3 objects of its own."""
    z3context.fresh()
    try:
        return run_case(case, config, out)
    finally:
        z3context.fresh()


def _load(case: Case, config: RunConfig) -> Any:
    from tvtv.ir import tvm_bridge
    src = case.source
    if src["kind"] == "file":
        return tvm_bridge.load_module(src["path"])
    import generators
    return generators.generate_module(src["generator"], src["seed"], src["index"],
                                      config.min_ops, config.max_ops)


def _verifier(config: RunConfig) -> Callable[..., Any]:
    from tvtv import api

    def verify(before: Any, after: Any, pass_name: str | None, label: str) -> Any:
        return api.verify(before, after, fp=config.fp, timeout=config.timeout, pass_name=pass_name,
                          label=label, **config.float_options)
    return verify


_PIPELINES: dict[str, Any] = {}


def _run_case(case: Case, config: RunConfig, out: Path | None) -> list[Result]:
    mod = _load(case, config)
    verify = _verifier(config)
    pairs: list[tuple[Any, Any, Result]] = []
    if config.pipeline is not None:
        from tvtv import pipeline
        if config.pipeline not in _PIPELINES:   # a .py pipeline file runs once per process
            _PIPELINES[config.pipeline] = pipeline.load_pipeline(config.pipeline)[1]
        pl = _PIPELINES[config.pipeline]
        for app, r in pipeline.check_pipeline(pl, mod, case.label, verify):
            pairs.append((app.before if app else None, app.after if app else None, r))
    else:
        pairs = _run_pass(case, config, mod, verify)
    if out is not None:
        for before, after, r in pairs:
            if r.verdict == COUNTEREXAMPLE and before is not None:
                save_case(out, r, before, after)
    return [r for _, _, r in pairs]


def _run_pass(case: Case, config: RunConfig, mod: Any, verify: Callable[..., Any]
              ) -> list[tuple[Any, Any, Result]]:
    """As `tvtv.check_pass`, keeping the modules: the source is the module after the
    prerequisites, the target that module after the pass."""
    from tvtv import api
    try:
        name, mod, after, pass_seconds = api.run_pass(config.pass_name, mod)
    except api.PassFailed as failed:
        return [(None, None, failed.result(case.label, config.fp))]
    report = verify(mod, after, pass_name=name, label=case.label)
    for r in report.results:   # a result's time is the whole case: the pass and the check
        r.seconds += pass_seconds
    return [(mod, after, r) for r in report.results]


# ---------------------------------------------------------------- the store

def check_options(identity: dict[str, Any]) -> dict[str, Any]:
    """`RunConfig.check_options` of a configuration's `identity` (as stored)."""
    return {"fp": identity.get("fp", "abstract"), **(identity.get("float_options") or {})}


def stored_check_options(path: Path) -> dict[str, Any]:
    """The `tvtv.check_pass` options (fp, solver, assume, input_class) of the run stored in
    the database `path`, for work on its findings afterwards (`tvtv report --minimize`);
    empty when there is no such database or it holds no run."""
    if not Path(path).is_file():
        return {}
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            row = db.execute("SELECT value FROM run WHERE key = 'config'").fetchone()
        finally:
            db.close()
        config = json.loads(row[0]) if row else {}
    except (sqlite3.DatabaseError, ValueError):
        return {}
    return check_options(config)


class ResultStore:
    """The SQLite file of a run: its configuration and each finished case's results."""

    def __init__(self, path: Path, config: RunConfig, resume: bool) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        existed = self.path.exists()
        try:
            self.db = sqlite3.connect(self.path, isolation_level=None)
            self.db.executescript("""
                CREATE TABLE IF NOT EXISTS run(key TEXT PRIMARY KEY, value TEXT NOT NULL);
                CREATE TABLE IF NOT EXISTS cases(key TEXT PRIMARY KEY, position INTEGER NOT NULL,
                    label TEXT NOT NULL, finished REAL NOT NULL);
                CREATE TABLE IF NOT EXISTS results(case_key TEXT NOT NULL, n INTEGER NOT NULL,
                    name TEXT NOT NULL, verdict TEXT NOT NULL, data TEXT NOT NULL, inputs BLOB,
                    PRIMARY KEY(case_key, n));
            """)
            stored = dict(self.db.execute("SELECT key, value FROM run"))
        except sqlite3.DatabaseError as err:
            raise InputError(f"{self.path}: not a tvtv results database ({err})") from None
        self.replaced = 0
        identity = json.dumps(config.identity(), sort_keys=True)
        if existed and "config" in stored:
            if resume:
                if stored["config"] != identity:
                    raise InputError(f"{self.path}: cannot resume: the run was made with other options "
                                     f"({_differences(json.loads(stored['config']), config.identity())}); "
                                     f"use the same options or another --db")
            else:   # a new run in the same place replaces the old one
                self.replaced = self.count()
                self.db.executescript("DELETE FROM results; DELETE FROM cases; DELETE FROM run;")
        self.db.execute("INSERT OR REPLACE INTO run VALUES ('config', ?), ('schema', ?)",
                        (identity, str(SCHEMA)))

    def count(self) -> int:
        return self.db.execute("SELECT COUNT(*) FROM cases").fetchone()[0]

    def finished(self) -> set[str]:
        return {k for (k,) in self.db.execute("SELECT key FROM cases")}

    def put(self, case: Case, results: Sequence[Result]) -> None:
        """Store one finished case (one transaction: a case is stored whole or not at all)."""
        self.db.execute("BEGIN")
        try:
            self.db.execute("DELETE FROM results WHERE case_key = ?", (case.key,))
            for n, r in enumerate(results):
                blob = _inputs_blob(r.counterexample.inputs) if r.counterexample is not None else None
                self.db.execute("INSERT INTO results VALUES (?, ?, ?, ?, ?, ?)",
                                (case.key, n, r.name, r.verdict, json.dumps(r.to_dict()), blob))
            self.db.execute("INSERT OR REPLACE INTO cases VALUES (?, ?, ?, ?)",
                            (case.key, case.position, case.label, time.time()))
            self.db.execute("COMMIT")
        except BaseException:
            self.db.execute("ROLLBACK")
            raise

    def results(self, key: str) -> list[Result]:
        rows = self.db.execute("SELECT data, inputs FROM results WHERE case_key = ? ORDER BY n", (key,))
        return [Result.from_dict(json.loads(data), _inputs_from_blob(blob) if blob else None)
                for data, blob in rows]

    def close(self) -> None:
        self.db.close()


def _differences(old: dict[str, Any], new: dict[str, Any]) -> str:
    diffs = [f"{k}: {old.get(k)!r} then, {new.get(k)!r} now" for k in sorted(set(old) | set(new))
             if old.get(k) != new.get(k)]
    return "; ".join(diffs)


# ---------------------------------------------------------------- workers

def _hooked(var: str, label: str) -> bool:
    return label in [x.strip() for x in os.environ.get(var, "").split(",") if x.strip()]


def _exit_with_parent() -> None:
    """End this worker as soon as the parent process ends, even in the middle of a case (a
    parent killed with SIGKILL cannot kill its workers; a hung case would live on)."""
    import multiprocessing
    import multiprocessing.connection
    import threading
    parent = multiprocessing.parent_process()
    if parent is None:
        return

    def watch() -> None:
        multiprocessing.connection.wait([parent.sentinel])
        os._exit(0)
    threading.Thread(target=watch, daemon=True, name="tvtv-parent-watch").start()


def _worker_main(conn: Any, config: RunConfig, out: str | None, memory_limit: int) -> None:
    """A worker: receive cases, send results, until told to stop or the parent goes away."""
    # Ctrl-C reaches the whole process group: the parent alone handles it (and kills the
    # workers), so an interrupted case is not stored as a crash.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _exit_with_parent()
    from tvtv.native_log import filtered_stderr
    with filtered_stderr():   # TVM's harmless C++ warnings would flood the progress display
        _serve_cases(conn, config, out, memory_limit)


def _serve_cases(conn: Any, config: RunConfig, out: str | None, memory_limit: int) -> None:
    """The worker's loop: say ready, then run each case received until told to stop."""
    import tvtv.api  # noqa: F401  (import TVM before saying ready: not part of any case's time)
    from tvtv.solvers import limit_z3_memory, z3_memory_mb
    # Z3 gives up a query (unknown) at two thirds of the case's limit, before the parent
    # would kill the worker and lose the case's other checks (TVTV_Z3_MEMORY_MB overrides)
    limit_z3_memory(z3_memory_mb(2 * memory_limit // 3))
    conn.send(("ready",))
    while True:
        try:
            case = conn.recv()
        except (EOFError, OSError):
            return   # the parent is gone
        if case is None:
            return
        if _hooked(CRASH_HOOK, case.label):
            os.kill(os.getpid(), signal.SIGKILL)
        if _hooked(SEGFAULT_HOOK, case.label):
            import ctypes
            ctypes.string_at(0)   # a genuine segmentation fault (reads address 0)
        if _hooked(HANG_HOOK, case.label):
            time.sleep(10 ** 6)
        if _hooked(MEMORY_HOOK, case.label):
            ballast = bytearray(1 << 30)
            for k in range(0, len(ballast), 4096):
                ballast[k] = 1        # touch every page: resident, not just reserved
            time.sleep(10 ** 6)
        try:
            msg: tuple[Any, ...] = ("done", case.key,
                                    run_case_in_worker(case, config, Path(out) if out else None))
        except InputError as err:
            msg = ("input_error", case.key, str(err))
        except Exception:
            msg = ("error", case.key, traceback.format_exc(limit=3).strip().splitlines()[-1])
        # Z3 keeps what a case built: past the recycle size a fresh worker takes the next case.
        # The parent hears it before the result, so it never hands this worker another case
        # (it would be lost: seen as "exited without a result" on a zero run).
        retiring = rss_bytes(os.getpid()) > recycle_rss() or z3_bytes() > RECYCLE_Z3
        try:
            if retiring:
                conn.send(("retiring",))
            conn.send(msg)
        except OSError:
            return   # the parent is gone
        if retiring:
            return


class _Worker:
    def __init__(self, ctx: Any, config: RunConfig, out: Path | None, memory_limit: int) -> None:
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_worker_main,
                                args=(child, config, str(out) if out else None, memory_limit),
                                daemon=True, name="tvtv-worker")
        self.proc.start()
        child.close()
        self.ready = False
        self.retiring = False       # it said it exits after its current case
        self.case: Case | None = None
        self.started = 0.0

    def give(self, case: Case) -> None:
        self.case, self.started = case, time.monotonic()
        self.conn.send(case)

    def kill(self) -> None:
        end_worker(self.proc, self.conn, kill=True)

    def stop(self) -> None:
        """Ask the worker to end after its current case (killed if it does not in time)."""
        end_worker(self.proc, self.conn)


class WorkerStartError(RuntimeError):
    pass


# A worker whose resident memory exceeds this after a case exits (the parent starts a fresh
# one): terms of finished cases stay in Z3's context. One case may use up to
# `case_memory_limit(jobs)` before the parent kills it (its verdict: unknown, with the
# reason), instead of the kernel's OOM killer picking a process (seen: 23 GB for one
# layer_norm check in a long single-process run).
RECYCLE_RSS = 3 << 30
# overrides RECYCLE_RSS, in MiB (the tests recycle after every case with 1)
RECYCLE_ENV = "TVTV_RECYCLE_MB"
# A worker whose Z3 context holds more than this after a case exits too. Z3 keeps the memory
# of freed terms in its context, and every later query pays for it (measured: 200 trivial
# solver checks take 0.3 s in a fresh process and 3.9 s after a zero check of graph 0, with
# 1.6 GB left in Z3 and 17 Python-held terms; graph 3's operator lemmas then take 31 s
# instead of 2.1 s, and clip's misses its budget). A fresh worker costs 1.5 s of imports.
RECYCLE_Z3 = 256 << 20


def z3_bytes() -> int:
    """What Z3's allocator holds in this process, in bytes (its own estimate)."""
    from z3 import z3core
    return int(z3core.Z3_get_estimated_alloc_size())


def _env_bytes(name: str) -> int | None:
    """The size in MiB environment variable `name` gives, in bytes (None when unset)."""
    value = os.environ.get(name)
    return int(value) << 20 if value else None


def recycle_rss() -> int:
    """The resident size past which a worker retires after its case (RECYCLE_RSS, or
    TVTV_RECYCLE_MB)."""
    size = _env_bytes(RECYCLE_ENV)
    return RECYCLE_RSS if size is None else size


def rss_bytes(pid: int) -> int:
    """Resident memory of process `pid` in bytes (0 when unknown: not Linux, or gone)."""
    try:
        with open(f"/proc/{pid}/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def case_memory_limit(jobs: int) -> int:
    """Bytes one case may hold: three quarters of the machine's memory shared by the workers
    (at least 2 GiB), or TVTV_CASE_MEMORY_MB."""
    size = _env_bytes(MEMORY_LIMIT_ENV)
    if size is not None:
        return size
    return max(2 << 30, int(machine.memory_bytes() * 0.75) // max(1, jobs))


OnDone = Callable[[Case, list[Result]], None]
MEMORY_POLL = 2.0


def run_isolated(cases: Iterable[Case], config: RunConfig, on_done: OnDone, jobs: int,
                 case_timeout: float | None, out: Path | None) -> None:
    """Run `cases` in `jobs` spawned worker processes; `on_done(case, results)` in this process
    as each finishes (crashes and timeouts included, as `unknown`)."""
    import multiprocessing
    import multiprocessing.connection

    ctx = multiprocessing.get_context("spawn")
    memory_limit = case_memory_limit(jobs)
    pending = deque(cases)
    workers: list[_Worker] = []
    failed_starts = 0

    def unknown(case: Case, reason: str, seconds: float) -> list[Result]:
        return [Result(case.label, config.pass_name or config.pipeline, UNKNOWN, seconds, reason,
                       fp_model=config.fp)]

    try:
        workers = [_Worker(ctx, config, out, memory_limit) for _ in range(max(1, min(jobs, len(pending))))]
        while pending or any(w.case is not None for w in workers):
            for w in workers:
                if w.ready and not w.retiring and w.case is None and pending:
                    case = pending.popleft()
                    try:
                        w.give(case)
                    except OSError:   # it died meanwhile (seen below): the case waits for another
                        w.case = None
                        pending.appendleft(case)
            now = time.monotonic()
            waits = [w.started + case_timeout - now for w in workers
                     if w.case is not None and case_timeout is not None]
            # wake at least every MEMORY_POLL seconds to look at the workers' memory
            multiprocessing.connection.wait([w.conn for w in workers] + [w.proc.sentinel for w in workers],
                                            timeout=max(0.0, min([*waits, MEMORY_POLL])))
            alive: list[_Worker] = []
            for w in workers:
                dead_reason: str | None = None
                eof = False
                messages = []
                try:
                    while w.conn.poll():
                        messages.append(w.conn.recv())
                except (EOFError, OSError):
                    eof = True   # the pipe closed: the process is dead or dying
                for msg in messages:
                    if msg[0] == "ready":
                        w.ready, failed_starts = True, 0
                    elif msg[0] == "retiring":
                        w.retiring = True
                    elif w.case is not None and msg[1] == w.case.key:
                        case, seconds = w.case, time.monotonic() - w.started
                        w.case = None
                        if msg[0] == "input_error":
                            raise InputError(msg[2])
                        if msg[0] == "error":
                            on_done(case, unknown(case, f"internal error: {msg[2]}", seconds))
                        else:
                            on_done(case, msg[2])
                if eof or not w.proc.is_alive():
                    w.proc.join(5)
                    dead_reason = crash_reason(w.proc.exitcode)
                    if not w.ready:
                        failed_starts += 1
                        if failed_starts >= WORKER_START_ATTEMPTS:
                            raise WorkerStartError(f"worker processes die while starting ({dead_reason})")
                elif (w.case is not None and case_timeout is not None
                      and time.monotonic() - w.started >= case_timeout):
                    dead_reason = f"case timeout after {case_timeout:g} s"
                elif w.case is not None and rss_bytes(w.proc.pid) > memory_limit:
                    dead_reason = f"memory limit: the check held more than {memory_limit >> 20} MiB"
                if dead_reason is None:
                    alive.append(w)
                    continue
                case, seconds = w.case, time.monotonic() - w.started
                w.case = None
                w.kill()
                if case is not None:
                    on_done(case, unknown(case, dead_reason, seconds))
                if pending:   # a fresh worker takes its place
                    alive.append(_Worker(ctx, config, out, memory_limit))
            workers = alive
        # all done
    finally:
        for w in workers:
            if w.case is None and w.proc.is_alive():
                w.stop()
            else:
                w.kill()


def run_in_process(cases: Iterable[Case], config: RunConfig, on_done: OnDone, out: Path | None) -> None:
    """Run `cases` one after the other in this process (no isolation, no case timeout)."""
    for case in cases:
        on_done(case, run_case(case, config, out))


# ---------------------------------------------------------------- a whole run

@dataclass
class RunOutcome:
    """What a run did: results of every case in case order, and how many were resumed."""

    results: list[Result]
    resumed: int
    ran: int


def check_run_options(jobs: int, case_timeout: float | None) -> None:
    """Bad input in the run's own options (checked before a store is opened or replaced)."""
    if jobs < 0:
        raise InputError(f"--jobs must be 0 or more, got {jobs}")
    if case_timeout is not None and case_timeout <= 0:
        raise InputError(f"--case-timeout must be positive, got {case_timeout:g}")
    if jobs == 0 and case_timeout is not None:
        raise InputError("--case-timeout needs worker processes (--jobs 1 or more); --jobs 0 runs "
                         "cases in tvtv's own process")


def run(cases: Sequence[Case], config: RunConfig, *, jobs: int = 1, case_timeout: float | None = None,
        store: ResultStore | None = None, out: Path | None = None,
        on_result: Callable[[Case, list[Result]], None] | None = None) -> RunOutcome:
    """Run the cases not yet in `store`, storing each as it finishes, and return all results.

    `jobs >= 1`: isolated workers (see the module doc); `jobs == 0`: in this process."""
    check_run_options(jobs, case_timeout)
    done = store.finished() if store is not None else set()
    todo = [c for c in cases if c.key not in done]
    by_key: dict[str, list[Result]] = {}
    stop_after = int(os.environ.get(STOP_HOOK, "0") or 0)
    stored = 0

    def on_done(case: Case, results: list[Result]) -> None:
        nonlocal stored
        by_key[case.key] = results
        if store is not None:
            store.put(case, results)
            stored += 1
            if stop_after and stored >= stop_after:
                os.kill(os.getpid(), signal.SIGKILL)   # test hook: an interrupted run
        if on_result is not None:
            on_result(case, results)

    if todo:
        if jobs == 0:
            run_in_process(todo, config, on_done, out)
        else:
            run_isolated(todo, config, on_done, jobs, case_timeout, out)
    results: list[Result] = []
    for c in cases:
        if c.key in by_key:
            results.extend(by_key[c.key])
        elif store is not None:
            results.extend(store.results(c.key))
    return RunOutcome(results, len(cases) - len(todo), len(todo))
