"""The `tvtv` command line (typer). Exit status: 0 all proved, 1 a counterexample,
2 something unknown and nothing refuted, 3 bad input (always with a one-line message)."""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Callable, Optional

import typer
from rich.console import Console
from rich.table import Table

from tvtv.errors import InputError
from tvtv.report import EXIT_BAD_INPUT, Report, Result

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="Translation validation for TVM Relax passes.")
console = Console(highlight=False)
err_console = Console(stderr=True, highlight=False)

FP_HELP = "float model: abstract (mlir-tv abstract floats, default) or ieee (bit-exact)"
TIMEOUT_HELP = "solver timeout per query, in seconds"


def _fail(message: str) -> None:
    # one line, never wrapped: scripts grep for it
    print(f"tvtv: error: {' '.join(message.split())}", file=sys.stderr)
    raise typer.Exit(EXIT_BAD_INPUT)


def _guard(fn: Callable[[], int]) -> None:
    """Run a command: bad input becomes one line on stderr and exit status 3."""
    try:
        code = fn()
    except InputError as err:
        _fail(str(err))
    except ValueError as err:
        _fail(str(err))
    raise typer.Exit(code)


def _fmt(v: object) -> str:
    from tvtv.report import json_scalar
    return str(json_scalar(v))


def print_result(r: Result) -> None:
    style = {"proved": "green", "counterexample": "bold red", "unknown": "yellow"}[r.verdict]
    line = f"[{style}]{r.verdict}[/{style}]  {r.name}  ({r.seconds:.2f} s)"
    console.print(line)
    if r.reason and r.verdict != "proved":
        console.print(f"    reason: {r.reason}", markup=False)
    if r.levels:
        console.print(f"    levels: {', '.join(r.levels)}", markup=False)
    cex = r.counterexample
    if cex is not None:
        if cex.index is not None:
            console.print(f"    source value: {_fmt(cex.source_value)}   target value: "
                          f"{_fmt(cex.target_value)}", markup=False)
        if r.confirmed is not None:
            console.print(f"    TVM VM execution: {'confirmed' if r.confirmed else 'unconfirmed (only the abstraction shows it)'}",
                          markup=False)
        if cex.confirmed_ieee is not None:
            console.print(f"    inputs separate source and target in IEEE evaluation: "
                          f"{'yes' if cex.confirmed_ieee else 'not for every value of exp/tanh/... (uninterpreted)'}",
                          markup=False)
        import numpy as np
        with np.printoptions(threshold=24, edgeitems=3, precision=6):
            for name, value in cex.inputs.items():
                text = str(value).replace("\n", "\n" + " " * (8 + len(name)))
                console.print(f"    input {name} = {text}", markup=False)


def print_summary(report: Report, json_path: Optional[Path]) -> None:
    s = report.summary()
    table = Table(title="tvtv summary", show_edge=False)
    for k in ("proved", "counterexample", "unknown"):
        table.add_column(k, justify="right")
    table.add_row(*(str(s[k]) for k in ("proved", "counterexample", "unknown")))
    console.print(table)
    times = sorted(r.seconds for r in report.results)
    if times:
        console.print(f"median {times[len(times) // 2]:.3f} s per check, total {sum(times):.1f} s")
    if json_path:
        console.print(f"report written to {json_path}", markup=False)


@app.command()
def verify(before: Path = typer.Argument(..., help="the module before the pass (TVMScript)"),
           after: Path = typer.Argument(..., help="the module after the pass (TVMScript)"),
           fp: str = typer.Option("abstract", "--fp", help=FP_HELP),
           timeout: float = typer.Option(30.0, "--timeout", help=TIMEOUT_HELP),
           json_path: Optional[Path] = typer.Option(None, "--json", help="write the JSON report here")) -> None:
    """Check that AFTER refines BEFORE, function by function."""
    def run() -> int:
        from tvtv.api import verify as api_verify
        report = api_verify(before, after, fp=fp, timeout=timeout)
        for r in report.results:
            print_result(r)
        if json_path:
            report.write_json(json_path)
        print_summary(report, json_path)
        return report.exit_code()
    _guard(run)


@app.command()
def check(pass_name: str = typer.Option(..., "--pass", help="the pass to validate (see `tvtv passes`)"),
          module: Optional[Path] = typer.Option(None, "--module", help="check on this TVMScript module"),
          graphs: int = typer.Option(20, "--graphs", help="number of generated graphs"),
          seed: int = typer.Option(0, "--seed", help="seed of the generator"),
          generator: str = typer.Option("simple", "--generator", help="graph generator"),
          min_ops: int = typer.Option(10, "--min-ops"), max_ops: int = typer.Option(30, "--max-ops"),
          fp: str = typer.Option("abstract", "--fp", help=FP_HELP),
          timeout: float = typer.Option(30.0, "--timeout", help=TIMEOUT_HELP),
          json_path: Optional[Path] = typer.Option(None, "--json", help="write the JSON report here"),
          out: Optional[Path] = typer.Option(None, "--out", help="save failing graphs (before/after) here")) -> None:
    """Run a pass (after its prerequisites) on a module or on generated graphs and validate it."""
    def run() -> int:
        from tvtv import api, passes
        from tvtv.ir import tvm_bridge
        spec = passes.get(pass_name)
        if spec.support != passes.VALIDATED:
            err_console.print(f"tvtv: note: {spec.name}: {spec.support}; verdicts will be unknown "
                              f"where its output cannot be encoded", markup=False)
        report = Report()
        if module is not None:
            cases = [(module.stem, lambda: tvm_bridge.load_module(module))]
        else:
            import generators
            if generator not in generators.GENERATORS:
                raise InputError(f"unknown generator '{generator}' (known: {', '.join(generators.GENERATORS)})")
            cases = [(f"graph{seed}_{k}", (lambda k=k: generators.generate_module(generator, seed, k, min_ops, max_ops)))
                     for k in range(graphs)]
        from rich.progress import Progress
        with Progress(console=err_console, transient=True, disable=not sys.stderr.isatty()) as progress:
            task = progress.add_task(f"checking {spec.name}", total=len(cases))
            for label, make in cases:
                start = time.perf_counter()
                try:
                    mod = make()
                    sub = api.check_pass(spec.name, mod, fp=fp, timeout=timeout, label=label)
                except InputError:
                    raise
                except Exception as err:  # a crash in one case never loses the others
                    sub = Report([Result(label, spec.name, "unknown", time.perf_counter() - start,
                                         f"internal error: {type(err).__name__}: {err}")])
                for r in sub.results:
                    report.results.append(r)
                    if r.verdict != "proved" or module is not None:
                        print_result(r)
                    if out is not None and r.verdict == "counterexample":
                        out.mkdir(parents=True, exist_ok=True)
                        tvm_bridge.save_module(mod, out / f"{label}.before.py")
                if json_path:
                    report.write_json(json_path)
                progress.advance(task)
        print_summary(report, json_path)
        return report.exit_code()
    _guard(run)


@app.command("passes")
def list_passes() -> None:
    """List the registered passes, their prerequisites and what tvtv supports of each."""
    from tvtv import passes
    table = Table(show_edge=False)
    table.add_column("pass")
    table.add_column("prerequisites")
    table.add_column("support")
    table.add_column("note")
    for spec in passes.PASSES.values():
        table.add_row(spec.name, ", ".join(spec.prerequisites) or "-", spec.support, spec.note)
    console.print(table)


@app.command()
def ops(markdown: bool = typer.Option(False, "--markdown", help="print the semantics table as Markdown")) -> None:
    """List the Relax ops the encoder supports and what each means."""
    from tvtv.semantics import semantics_rows, semantics_markdown
    if markdown:
        sys.stdout.write(semantics_markdown())
        return
    table = Table(show_edge=False)
    table.add_column("op")
    table.add_column("semantics")
    for op, text in semantics_rows():
        table.add_row(op, text)
    console.print(table)


@app.command()
def generate(generator: str = typer.Option("simple", "--generator"),
             n: int = typer.Option(10, "-n", help="number of graphs"),
             seed: int = typer.Option(0, "--seed"),
             min_ops: int = typer.Option(10, "--min-ops"), max_ops: int = typer.Option(30, "--max-ops"),
             out: Path = typer.Option(..., "--out", help="folder for the TVMScript files")) -> None:
    """Write N generated graphs as TVMScript files (tensor constants in .consts.npz beside)."""
    def run() -> int:
        import generators
        from tvtv.ir import tvm_bridge
        if generator not in generators.GENERATORS:
            raise InputError(f"unknown generator '{generator}' (known: {', '.join(generators.GENERATORS)})")
        out.mkdir(parents=True, exist_ok=True)
        for k in range(n):
            mod = generators.generate_module(generator, seed, k, min_ops, max_ops)
            tvm_bridge.save_module(mod, out / f"{generator}_{seed}_{k}.py")
        console.print(f"wrote {n} graphs to {out}", markup=False)
        return 0
    _guard(run)


# Commands that live in their own modules: each has `register(app)`, which adds its commands.
_EXTENSIONS = ("tvtv.cli_stats", "tvtv.cli_minimize")


def _register_extensions() -> None:
    import importlib
    for name in _EXTENSIONS:
        importlib.import_module(name).register(app)


_register_extensions()


def main() -> None:
    app()


if __name__ == "__main__":
    main()
