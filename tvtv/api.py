"""tvtv's Python API: `verify`, `check_pass`, `registered_passes`."""
from __future__ import annotations

import os
import time
from typing import Any

from tvtv import confirm, passes
from tvtv.errors import InputError, TvtvError
from tvtv.ir import relax_reader, tvm_bridge
from tvtv.refinement import Options, check_programs
from tvtv.report import UNKNOWN, Report, Result


def _as_module(m: Any, what: str) -> Any:
    if isinstance(m, (str, os.PathLike)):
        return tvm_bridge.load_module(m)
    if isinstance(m, tvm_bridge.IRModule):
        return m
    raise InputError(f"{what}: expected an IRModule or a path, got {type(m).__name__}")


def verify(before: Any, after: Any, fp: str = "abstract", timeout: float = 30.0,
           pass_name: str | None = None, label: str | None = None, **options: Any) -> Report:
    """Check that `after` refines `before` (IRModules or TVMScript paths), function by function."""
    confirm_vm = options.pop("confirm_vm", True)
    opts = Options(fp=fp, timeout=timeout, **options)
    before_mod, after_mod = _as_module(before, "before"), _as_module(after, "after")
    src = relax_reader.read_module(before_mod)
    tgt = relax_reader.read_module(after_mod)
    results = check_programs(src, tgt, opts, pass_name, label)
    if confirm_vm:
        for r, fn in zip(results, src.public_functions()):
            if r.counterexample is not None:
                params = [p.name for p in fn.params]
                r.confirmed = confirm.confirm(before_mod, after_mod, fn.name, params, r.counterexample)
    return Report(results)


def resolve_pass(pass_or_name: Any) -> tuple[str, list[Any], Any]:
    """(name, prerequisite passes, pass object) for a registered name or a TVM pass."""
    if isinstance(pass_or_name, str):
        spec = passes.get(pass_or_name)
        return spec.name, [passes.get(p).make() for p in spec.prerequisites], spec.make()
    if tvm_bridge.is_pass(pass_or_name):
        name = tvm_bridge.pass_name(pass_or_name)
        spec = passes.PASSES.get(name)
        pre = [passes.get(p).make() for p in spec.prerequisites] if spec else []
        return name, pre, pass_or_name
    raise InputError(f"expected a pass name or a tvm.transform.Pass, got {type(pass_or_name).__name__}")


def check_pass(pass_or_name: Any, module: Any, fp: str = "abstract", timeout: float = 30.0,
               label: str | None = None, **options: Any) -> Report:
    """Run the pass (after its prerequisites) on `module` and check the result refines its
    input. A pass that crashes makes the verdict `unknown` with TVM's message."""
    name, pre, pass_obj = resolve_pass(pass_or_name)
    mod = _as_module(module, "module")
    start = time.perf_counter()
    label = label or name
    try:
        for p in pre:
            mod = tvm_bridge.apply(p, mod)
        after = tvm_bridge.apply(pass_obj, mod)
    except TvtvError:
        raise
    except Exception as err:  # TVM errors: the pass (or a prerequisite) rejected the module
        msg = str(err).strip().splitlines()
        return Report([Result(label, name, UNKNOWN, time.perf_counter() - start,
                              f"the pass failed: {msg[-1] if msg else type(err).__name__}")])
    pass_seconds = time.perf_counter() - start
    report = verify(mod, after, fp=fp, timeout=timeout, pass_name=name, label=label, **options)
    for r in report.results:   # a result's time is the whole case: the pass and the check
        r.seconds += pass_seconds
    return report


def registered_passes() -> list[str]:
    return passes.registered_passes()
