"""Pipelines: validate every pass of a TVM pass pipeline, one result per pass application.

As Alive2's `opt` plugin does for LLVM, a `tvm.instrument.PassInstrument` sees the module
before and after each pass while the pipeline runs; each (before, after) pair is then checked
for refinement like a single pass. A pipeline is given as

- a name of TVM's pre-built pipelines (`relax.get_pipeline(name)`: zero, default, ...);
- a Python file `*.py` that defines `pipeline`, a `tvm.transform.Pass` (usually a
  `tvm.transform.Sequential`) or a list of passes (made into a Sequential);
- a JSON file `*.json` holding a list of pass names: tvtv's registered passes (built with
  tvtv's arguments, see `tvtv passes`) or any `relax.transform.NAME` that takes no argument.

Which pass applications are reported: passes nest (a pipeline is a module pass that runs a
Sequential, FuseTIR runs seven passes of its own). A pass tvtv registers is reported as a
whole (what it runs inside is part of it); any other pass is reported when it runs no pass
inside itself, otherwise its inner passes are. So `zero` gives LegalizeOps,
AnnotateTIROpPattern, FoldConstant, FuseOps and FuseTIR, and a user's module_pass inside a
Sequential is reported under its own name.

Verdict of one application, in this order:
1. the module is structurally unchanged: `proved`, by structural equality (`levels` says so);
2. a registered pass whose support (`tvtv passes`) does not start with "validated":
   `unknown`, with the reason; never dropped;
3. otherwise the refinement check of `tvtv.verify` (unsupported constructs: `unknown`).

Labels are `CASE:PASS#k`, k counting the applications of PASS in that case from 1.
"""
from __future__ import annotations

import json
import runpy
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from tvtv import passes
from tvtv.errors import InputError, TvtvError, failure_reason
from tvtv.ir import tvm_bridge
from tvtv.report import PROVED, UNKNOWN, Report, Result

STRUCTURAL_LEVEL = "structural equality: the pass left the module unchanged"


@dataclass
class Application:
    """One pass applied once: the module before and after it."""

    pass_name: str
    occurrence: int        # 1 for the first application of this pass in the run, 2, ...
    before: Any
    after: Any

    @property
    def tag(self) -> str:
        return f"{self.pass_name}#{self.occurrence}"


def pipeline_names() -> list[str]:
    """TVM's pre-built Relax pipelines."""
    from tvm import relax
    return sorted(relax.pipeline.PIPELINE_MAP)


def load_pipeline(spec: str) -> tuple[str, Any]:
    """(display name, pass) for a pipeline name, a `.py` file or a `.json` file (see module doc)."""
    path = Path(spec)
    if spec.endswith(".py"):
        return path.name, _pipeline_from_python(path)
    if spec.endswith(".json"):
        return path.name, _pipeline_from_json(path)
    names = pipeline_names()
    if spec not in names:
        raise InputError(f"unknown pipeline '{spec}' (known: {', '.join(names)}; or a .py file "
                         f"defining `pipeline`, or a .json list of pass names)")
    return spec, tvm_bridge.pipeline(spec)


def pipeline_identity(spec: str) -> str:
    """What identifies a pipeline for resuming a run: its name, or a file's path and a hash of
    its contents (a changed file is a different pipeline)."""
    import hashlib
    if spec.endswith((".py", ".json")):
        p = Path(spec)
        try:
            digest = hashlib.sha256(p.read_bytes()).hexdigest()[:16]
        except OSError as err:
            raise InputError(f"{p}: cannot read: {err.strerror}") from None
        return f"{p.resolve()}@{digest}"
    return spec


def _pipeline_from_python(path: Path) -> Any:
    if not path.is_file():
        raise InputError(f"{path}: cannot read: no such file")
    try:
        env = runpy.run_path(str(path))
    except Exception as err:
        lines = str(err).strip().splitlines()
        raise InputError(f"{path}: error while running the file: {type(err).__name__}: "
                         f"{lines[-1] if lines else ''}") from None
    value = env.get("pipeline")
    if isinstance(value, (list, tuple)) and all(tvm_bridge.is_pass(p) for p in value):
        return tvm_bridge.sequential(list(value))
    if not tvm_bridge.is_pass(value):
        raise InputError(f"{path}: defines no `pipeline` (a tvm.transform.Pass, such as a "
                         f"tvm.transform.Sequential, or a list of passes)")
    return value


def _pipeline_from_json(path: Path) -> Any:
    try:
        names = json.loads(path.read_text())
    except OSError as err:
        raise InputError(f"{path}: cannot read: {err.strerror}") from None
    except json.JSONDecodeError as err:
        raise InputError(f"{path}: malformed JSON: {err}") from None
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise InputError(f"{path}: expected a JSON list of pass names")
    built = []
    for name in names:
        if name in passes.PASSES:
            built.append(passes.get(name).make())
        else:
            try:
                built.append(tvm_bridge.relax_pass(name))
            except InputError:
                raise InputError(f"{path}: unknown pass '{name}' (neither registered in tvtv nor "
                                 f"relax.transform.{name})") from None
            except TypeError as err:
                raise InputError(f"{path}: relax.transform.{name} needs arguments ({err}); "
                                 f"use a .py pipeline file") from None
    return tvm_bridge.sequential(built)


class _Recorder:
    """Collects the reported pass applications (see the module doc) while a pipeline runs."""

    def __init__(self) -> None:
        self.applications: list[Application] = []
        self.counts: dict[str, int] = {}
        # open passes: [name, module before, index in `applications` when it started, has inner]
        self.stack: list[list[Any]] = []

    def before(self, mod: Any, name: str) -> None:
        if self.stack:
            self.stack[-1][3] = True
        # holding `mod` keeps it alive, so a pass cannot update it in place (copy on write)
        self.stack.append([name, mod, len(self.applications), False])

    def after(self, mod: Any, name: str) -> None:
        _, before, start, has_inner = self.stack.pop()
        if name in passes.PASSES:
            del self.applications[start:]     # reported as a whole
        elif has_inner:
            return                            # its inner passes are reported
        k = self.counts.get(name, 0) + 1
        self.counts[name] = k
        self.applications.append(Application(name, k, before, mod))

    @property
    def running(self) -> str | None:
        return self.stack[-1][0] if self.stack else None


def run_recorded(pipeline: Any, mod: Any) -> tuple[list[Application], str | None]:
    """Run `pipeline` on `mod`, recording each reported pass application. The second item is
    None, or why the pipeline stopped (TVM's message), with the applications up to there."""
    import tvm

    recorder = _Recorder()

    @tvm.instrument.pass_instrument
    class _Instrument:
        def run_before_pass(self, mod: Any, info: Any) -> None:
            recorder.before(mod, str(info.name))

        def run_after_pass(self, mod: Any, info: Any) -> None:
            recorder.after(mod, str(info.name))

    try:
        with tvm.target.Target("llvm"):
            with tvm.transform.PassContext(opt_level=3, instruments=[_Instrument()]):
                pipeline(mod)
    except TvtvError:
        raise
    except Exception as err:  # TVM errors: a pass rejected the module, or crashed on it
        where = f" in {recorder.running}" if recorder.running else ""
        return recorder.applications, failure_reason("the pipeline", err, where)
    return recorder.applications, None


def validate(app: Application, label: str, verify: Callable[..., Report]) -> list[Result]:
    """The results of one application (see the module doc); `verify(before, after, pass_name,
    label)` is the refinement check."""
    start = time.perf_counter()
    if tvm_bridge.structural_equal(app.before, app.after):
        return [Result(label, app.pass_name, PROVED, time.perf_counter() - start,
                       levels=[STRUCTURAL_LEVEL])]
    spec = passes.PASSES.get(app.pass_name)
    # support strings: "validated", "validated; <how>", or why not (prerequisite only, ...)
    if spec is not None and not spec.support.startswith(passes.VALIDATED):
        return [Result(label, app.pass_name, UNKNOWN, time.perf_counter() - start,
                       f"{app.pass_name} changed the module and is not validated by tvtv yet: {spec.support}")]
    try:
        return verify(app.before, app.after, pass_name=app.pass_name, label=label).results
    except InputError as err:   # e.g. a module whose constants cannot be written for the VM
        return [Result(label, app.pass_name, UNKNOWN, time.perf_counter() - start, f"cannot check: {err}")]
    except TvtvError as err:
        return [Result(label, app.pass_name, UNKNOWN, time.perf_counter() - start, f"unsupported: {err}")]
    except Exception as err:   # a failure on one application never loses the others
        return [Result(label, app.pass_name, UNKNOWN, time.perf_counter() - start,
                       f"internal error: {type(err).__name__}: {err}")]


def check_pipeline(pipeline: Any, module: Any, label: str, verify: Callable[..., Report]
                   ) -> list[tuple[Application | None, Result]]:
    """Run the pipeline on `module` and validate each pass application. Returns (application,
    result) pairs in order; a pipeline that fails adds one `unknown` result (application None)."""
    start = time.perf_counter()
    applications, failure = run_recorded(pipeline, module)
    pairs: list[tuple[Application | None, Result]] = []
    for app in applications:
        for r in validate(app, f"{label}:{app.tag}", verify):
            pairs.append((app, r))
    if failure is not None:
        pairs.append((None, Result(f"{label}:pipeline", None, UNKNOWN, time.perf_counter() - start, failure)))
    return pairs
