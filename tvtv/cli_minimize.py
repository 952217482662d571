"""`tvtv minimize FILE --pass NAME [--out DIR]`: delta debugging of a counterexample; and
`tvtv report DIR`: the grouped reports of a finished `tvtv check --out DIR` run, again.

FILE is the module the pass runs on (TVMScript, or a Python file defining an IRModule). The
minimized case is written to DIR (default: FILE's folder, ``<stem>.min/``): ``input.py`` (the
minimized module), ``before.py`` / ``after.py`` (the check's source and target), ``inputs.npz``
and ``result.json``. Exit status as for `tvtv check`: 1 when a minimized counterexample was
written, 3 when FILE shows no counterexample or cannot be minimized (with a one-line reason).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import typer


def _resolve_pass(name: str) -> Any:
    """A registered pass name, or `module:attribute` naming a TVM pass (or a function
    returning one) in an importable Python module."""
    if ":" not in name:
        return name
    import importlib

    from tvtv.errors import InputError
    mod_name, _, attr = name.partition(":")
    try:
        obj = getattr(importlib.import_module(mod_name), attr)
    except (ImportError, AttributeError) as err:
        raise InputError(f"cannot load the pass {name}: {err}") from None
    from tvtv.ir import tvm_bridge
    if not tvm_bridge.is_pass(obj) and callable(obj):
        obj = obj()
    if not tvm_bridge.is_pass(obj):
        raise InputError(f"{name} is not a tvm.transform.Pass")
    return obj


def register(app: typer.Typer) -> None:
    """Add `tvtv minimize` and `tvtv report` to `app`."""
    register_report(app)

    @app.command()
    def minimize(file: Path = typer.Argument(..., help="the module the pass runs on (TVMScript)"),
                 pass_name: str = typer.Option(..., "--pass", help="a registered pass, or module:attr naming a TVM pass"),
                 out: Optional[Path] = typer.Option(None, "--out", help="folder for the minimized case (default FILE.min/)"),
                 func: str = typer.Option("main", "--func", help="the function to minimize"),
                 timeout: float = typer.Option(10.0, "--timeout", help="solver timeout per query while minimizing, seconds"),
                 max_checks: int = typer.Option(150, "--max-checks", help="budget of checks"),
                 assume: Optional[list[str]] = typer.Option(None, "--assume", help="as `tvtv check --assume`"),
                 inputs: str = typer.Option("any", "--inputs", help="as `tvtv check --inputs`")) -> None:
        """Shrink a module while the pass still shows the same kind of counterexample on it
        (under the assumptions and on inputs of the class given, as the check that found it)."""
        from tvtv.cli import _float_options, _guard, console

        def run() -> int:
            from tvtv.ir import tvm_bridge
            from tvtv.minimize import minimize_case
            from tvtv.reports.finalize import _write_case
            options = _float_options(None, assume, inputs)   # bad values: exit 3 first
            module = tvm_bridge.load_module(file)
            m = minimize_case(module, _resolve_pass(pass_name), func=func, timeout=timeout,
                              max_checks=max_checks, **options)
            folder = out or file.with_name(file.stem + ".min")
            _write_case(folder, m)
            r = m.result
            console.print(f"minimized {file.name}: {m.original_ops} -> {m.ops} ops "
                          f"({m.checks} checks, {m.seconds:.1f} s); witness: {m.witness}", markup=False)
            if r.counterexample is not None:
                console.print(f"    {r.counterexample.message}; confirmed: {r.confirmed} "
                              f"({r.counterexample.confirmed_by})", markup=False)
            console.print(str(m.graph), markup=False)
            console.print(f"written to {folder}/ (input.py, before.py, after.py, inputs.npz, result.json)",
                          markup=False)
            return 1
        _guard(run)


def register_report(app: typer.Typer) -> None:
    """Add `tvtv report DIR` to `app`."""

    @app.command("report")
    def report_cmd(out: Path = typer.Argument(..., help="the --out folder of a `tvtv check` run"),
                   pass_name: Optional[str] = typer.Option(None, "--pass", help="the pass (or module:attr) to minimize with; default: each finding's pass"),
                   minimize: bool = typer.Option(False, "--minimize/--no-minimize", help="minimize the findings"),
                   timeout: float = typer.Option(10.0, "--timeout", help="solver timeout per query while minimizing")) -> None:
        """Group the findings of DIR/report.json and write report.html, groups.json and the
        reproducers again (e.g. after an interrupted run, or to minimize later)."""
        from tvtv.cli import _guard

        def run() -> int:
            import json

            from tvtv.errors import InputError
            from tvtv.report import Report, Result
            from tvtv.reports import cases, finalize
            path = out / "report.json"
            try:
                data = json.loads(path.read_text())
            except (OSError, ValueError) as err:
                raise InputError(f"{path}: cannot read the run's report: {err}") from None
            results = []
            for d in data.get("results", []):
                npz = cases.case_dir(out, d["name"]) / "inputs.npz"
                inputs = cases.load_inputs(npz) if npz.exists() else None
                results.append(Result.from_dict(d, inputs))
            report = Report(results)
            target = pass_name or next((r.pass_name for r in results if r.pass_name), "?")
            pass_obj = _resolve_pass(pass_name) if pass_name and ":" in pass_name else None
            # minimized as the run checked: its float model, assumptions and input class
            from tvtv.runner import stored_check_options
            finalize(out, report, target, minimize, pass_obj=pass_obj, timeout=timeout,
                     options=stored_check_options(out / "run.sqlite"))
            return report.exit_code()
        _guard(run)
