"""The `tvtv` command line (typer). Exit status: 0 all proved, 1 a counterexample,
2 something unknown and nothing refuted, 3 bad input (always with a one-line message)."""
from __future__ import annotations

import sys
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

FP_HELP = ("float model: abstract (mlir-tv abstract floats, default), ieee (bit-exact) or real "
           "(correct up to rounding only)")
TIMEOUT_HELP = ("solver timeout per query, in seconds (the IEEE re-check of an abstract "
                "counterexample gets a third of it, at least 10 s)")


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
    if r.assumptions:   # every assumption in force, and an input class, with the verdict
        console.print(f"    assumptions: {'; '.join(r.assumptions)}", markup=False)
    cex = r.counterexample
    if cex is not None:
        if cex.index is not None:
            console.print(f"    source value: {_fmt(cex.source_value)}   target value: "
                          f"{_fmt(cex.target_value)}", markup=False)
        if r.confirmed is not None:
            how = f" by {cex.confirmed_by}" if r.confirmed and cex.confirmed_by else ""
            console.print(f"    confirmation: {'confirmed' + how if r.confirmed else 'unconfirmed (only the abstraction shows it)'}",
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
    causes = report.unknown_causes()
    if causes:
        console.print("unknown: " + ", ".join(f"{n} {cause}" for cause, n in causes.items()),
                      markup=False)
    times = sorted(r.seconds for r in report.results)
    if times:
        console.print(f"median {times[len(times) // 2]:.3f} s per check, total {sum(times):.1f} s")
    if json_path:
        console.print(f"report written to {json_path}", markup=False)


SOLVER_HELP = ("SMT solver: z3 (default), cvc5, both (and report disagreement), or z3+cvc5 "
               "(cvc5 briefly before z3 on the IEEE model's queries)")
ASSUME_HELP = ("assumptions for the float model: no-nan, no-inf, no-signed-zeros, and "
               "per-operation (no-nan/no-inf hold for every operation, as LLVM's fast-math "
               "flags), op-rounding (an operator may be legalized up to rounding: its lemma "
               "is proved in the real model); repeat the option or give a comma list")
INPUTS_HELP = ("the inputs looked at: any (default), finite (no NaN or ±inf element) or no-nan; "
               "unlike --assume no-nan,no-inf, a NaN or infinity the program computes from "
               "them still counts")
DEFAULT_CASE_TIMEOUT = 600.0
# a check's budget is the case timeout over this (Options.budget)
CHECKS_PER_CASE = 3


def _float_options(solver: Optional[str], assume: Optional[list[str]], inputs: str = "any") -> dict:
    """The pass-through float-model options for `tvtv.api.verify`, checked once here (bad
    values are bad input before anything runs)."""
    from tvtv.api import float_options
    from tvtv.refinement import Options
    given = float_options(solver, assume or None, inputs)   # ValueError on an unknown class
    Options(**given)   # raises ValueError on an unknown solver or assumption
    return given


@app.command()
def verify(before: Path = typer.Argument(..., help="the module before the pass (TVMScript)"),
           after: Path = typer.Argument(..., help="the module after the pass (TVMScript)"),
           fp: str = typer.Option("abstract", "--fp", help=FP_HELP),
           timeout: float = typer.Option(30.0, "--timeout", help=TIMEOUT_HELP),
           solver: Optional[str] = typer.Option(None, "--solver", help=SOLVER_HELP),
           assume: Optional[list[str]] = typer.Option(None, "--assume", help=ASSUME_HELP),
           inputs: str = typer.Option("any", "--inputs", help=INPUTS_HELP),
           json_path: Optional[Path] = typer.Option(None, "--json", help="write the JSON report here")) -> None:
    """Check that AFTER refines BEFORE, function by function."""
    def run() -> int:
        from tvtv.api import verify as api_verify
        report = api_verify(before, after, fp=fp, timeout=timeout, **_float_options(solver, assume, inputs))
        for r in report.results:
            print_result(r)
        if json_path:
            report.write_json(json_path)
        print_summary(report, json_path)
        return report.exit_code()
    _guard(run)


def _print_per_pass(report: Report) -> None:
    """For pipelines: how each pass fared over all cases."""
    from tvtv.report import VERDICTS
    rows: dict[str, dict[str, int]] = {}
    for r in report.results:
        counts = rows.setdefault(r.pass_name or "(pipeline)", {v: 0 for v in VERDICTS})
        counts[r.verdict] += 1
    table = Table(title="per pass", show_edge=False)
    table.add_column("pass")
    for v in VERDICTS:
        table.add_column(v, justify="right")
    for name, counts in rows.items():
        table.add_row(name, *(str(counts[v]) for v in VERDICTS))
    console.print(table)


def _finalize(out: Path, report: Report, target: str, minimize: bool,
              options: Optional[dict] = None) -> None:
    """`out/report.json`, then the report writer of `tvtv.reports` (HTML, grouping,
    minimization under the run's float model, assumptions and input class `options`,
    reproducers) if this tvtv has it."""
    report.write_json(out / "report.json")
    try:
        import tvtv.reports as reports
    except ImportError:
        return
    finalize = getattr(reports, "finalize", None)
    if finalize is None:
        return
    from tvtv.native_log import filtered_stderr
    try:
        with filtered_stderr(keep_python=True):   # minimization runs TVM in this process
            finalize(out, report, target, minimize, options=options or {})
    except InputError:
        raise
    except Exception as err:   # the verdicts stand; say the reports are incomplete
        print(f"tvtv: warning: writing the reports in {out} failed: {type(err).__name__}: "
              f"{' '.join(str(err).split())}", file=sys.stderr)


@app.command()
def check(pass_name: Optional[str] = typer.Option(None, "--pass", help="the pass to validate (see `tvtv passes`)"),
          pipeline: Optional[str] = typer.Option(None, "--pipeline",
                                                 help="validate every pass of a pipeline: a name (zero, default, ...), "
                                                      "a .py file defining `pipeline`, or a .json list of pass names"),
          module: Optional[Path] = typer.Option(None, "--module", help="check on this TVMScript module, or on every *.py in this folder"),
          graphs: int = typer.Option(20, "--graphs", help="number of generated graphs"),
          seed: int = typer.Option(0, "--seed", help="seed of the generator"),
          generator: str = typer.Option("simple", "--generator", help="graph generator"),
          min_ops: int = typer.Option(10, "--min-ops"), max_ops: int = typer.Option(30, "--max-ops"),
          fp: str = typer.Option("abstract", "--fp", help=FP_HELP),
          timeout: float = typer.Option(30.0, "--timeout", help=TIMEOUT_HELP),
          solver: Optional[str] = typer.Option(None, "--solver", help=SOLVER_HELP),
          assume: Optional[list[str]] = typer.Option(None, "--assume", help=ASSUME_HELP),
          inputs: str = typer.Option("any", "--inputs", help=INPUTS_HELP),
          jobs: int = typer.Option(1, "--jobs", "-j", help="worker processes (each case is isolated: a crash or "
                                   "hang is that case's unknown); 0 runs cases in this process, unprotected"),
          case_timeout: Optional[float] = typer.Option(None, "--case-timeout",
                                                       help=f"seconds per case, pass and checks together "
                                                            f"({DEFAULT_CASE_TIMEOUT:g} by default with --jobs 1 or more); "
                                                            f"each check gets 1/{CHECKS_PER_CASE} of it"),
          db: Optional[Path] = typer.Option(None, "--db", help="SQLite file keeping each finished case "
                                            "(OUT/run.sqlite by default with --out)"),
          resume: bool = typer.Option(False, "--resume", help="continue the run stored in --db (same options): "
                                      "finished cases are not run again"),
          json_path: Optional[Path] = typer.Option(None, "--json", help="write the JSON report here"),
          out: Optional[Path] = typer.Option(None, "--out", help="write report.json, counterexample cases "
                                             "(cases/LABEL/before.py, after.py, inputs.npz) and reports here"),
          minimize: bool = typer.Option(True, "--minimize/--no-minimize", help="minimize counterexamples in the --out reports")) -> None:
    """Run a pass (after its prerequisites) or a pipeline on a module or on generated graphs and
    validate it: one result per case (per pass application, for a pipeline)."""
    def run() -> int:
        from tvtv import passes, runner
        if (pass_name is None) == (pipeline is None):
            raise InputError("give exactly one of --pass NAME and --pipeline NAME|FILE")
        config_fields: dict = {"fp": fp, "timeout": timeout, "float_options": _float_options(solver, assume, inputs)}
        timeout_per_case = case_timeout if case_timeout is not None else (DEFAULT_CASE_TIMEOUT if jobs >= 1 else None)
        if timeout_per_case is not None and timeout_per_case > 0:
            # each check ends by itself, as `unknown` with its reason, before the case timeout
            # kills the worker (a zero check is two checks and the operator lemmas)
            config_fields["float_options"]["budget"] = round(timeout_per_case / CHECKS_PER_CASE, 3)
        from tvtv.refinement import Options
        Options(fp=fp, timeout=timeout, **config_fields["float_options"])   # bad values: exit 3 now
        if pass_name is not None:
            spec = passes.get(pass_name)
            if not spec.support.startswith(passes.VALIDATED):
                err_console.print(f"tvtv: note: {spec.name}: {spec.support}; verdicts will be unknown "
                                  f"where its output cannot be encoded", markup=False)
            config_fields["pass_name"] = spec.name
            target = spec.name
        else:
            from tvtv import pipeline as pl
            pl.load_pipeline(pipeline)   # bad names and files: exit 3 before anything runs
            config_fields["pipeline"] = pipeline
            config_fields["pipeline_id"] = pl.pipeline_identity(pipeline)
            target = f"pipeline {pipeline}"
        if module is not None:
            config = runner.RunConfig(module=str(module.resolve()), **config_fields)
            cases = runner.module_cases(config, module)
        else:
            import generators
            if generator not in generators.GENERATORS:
                raise InputError(f"unknown generator '{generator}' (known: {', '.join(generators.GENERATORS)})")
            if graphs < 0 or not 0 < min_ops <= max_ops:
                raise InputError("need --graphs >= 0 and 0 < --min-ops <= --max-ops")
            config = runner.RunConfig(generator=generator, seed=seed, min_ops=min_ops, max_ops=max_ops,
                                      **config_fields)
            cases = runner.generated_cases(config, graphs)
        runner.check_run_options(jobs, timeout_per_case)
        db_path = db if db is not None else (out / "run.sqlite" if out is not None else None)
        if resume and db_path is None:
            raise InputError("--resume needs the run's database: give --db PATH or --out DIR")
        store = runner.ResultStore(db_path, config, resume) if db_path is not None else None
        if store is not None and store.replaced:
            err_console.print(f"tvtv: note: {db_path}: replacing the {store.replaced} stored case(s) of an "
                              f"earlier run (use --resume to continue it)", markup=False)

        report = Report()
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, \
            TimeRemainingColumn
        columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                   TextColumn("{task.fields[counts]}"), TimeElapsedColumn(), TimeRemainingColumn())
        from contextlib import nullcontext

        from tvtv.native_log import filtered_stderr
        # with --jobs 0 TVM runs in this process: its harmless C++ warnings would cut into the display
        in_process = filtered_stderr(keep_python=True) if jobs == 0 else nullcontext()
        with in_process, Progress(*columns, console=err_console, transient=True,
                                  disable=not sys.stderr.isatty()) as progress:
            finished = len(store.finished() & {c.key for c in cases}) if store is not None and resume else 0
            if finished:
                console.print(f"resuming {db_path}: {finished} of {len(cases)} cases already done", markup=False,
                              soft_wrap=True)
            task = progress.add_task(f"checking {target}", total=len(cases), completed=finished, counts="")

            def on_result(case: runner.Case, results: list[Result]) -> None:
                for r in results:
                    report.results.append(r)
                    if r.verdict != "proved" or module is not None:
                        print_result(r)
                if json_path:
                    report.write_json(json_path)
                s = report.summary()
                progress.update(task, advance=1, counts=f"proved {s['proved']}  counterexample "
                                f"{s['counterexample']}  unknown {s['unknown']}")

            import signal

            def interrupted(signum: int, frame: object) -> None:
                raise KeyboardInterrupt   # SIGTERM as Ctrl-C: stop the workers, keep what is stored
            previous = signal.signal(signal.SIGTERM, interrupted)
            try:
                outcome = runner.run(cases, config, jobs=jobs, case_timeout=timeout_per_case, store=store,
                                     out=out, on_result=on_result)
            except KeyboardInterrupt:
                if store is not None:
                    print(f"tvtv: interrupted: {store.count()} case(s) stored in {db_path}; continue with "
                          f"--resume", file=sys.stderr)
                raise typer.Exit(130)
            except runner.WorkerStartError as err:
                raise InputError(str(err)) from None
            finally:
                signal.signal(signal.SIGTERM, previous)
                if store is not None:
                    store.close()
        report = Report(outcome.results)
        if json_path:
            report.write_json(json_path)
        if pipeline is not None and report.results:
            _print_per_pass(report)
        if out is not None:
            out.mkdir(parents=True, exist_ok=True)
            # minimization checks its candidates as the run checked
            _finalize(out, report, target, minimize, config.check_options())
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
def generate(generator: str = typer.Option("simple", "--generator",
                                           help="simple, gencog, isra, hirgen, typed or declgen"),
             n: int = typer.Option(10, "--graphs", "-n", help="number of graphs (as `check --graphs`)"),
             seed: int = typer.Option(0, "--seed"),
             min_ops: int = typer.Option(10, "--min-ops"), max_ops: int = typer.Option(30, "--max-ops"),
             mode: str = typer.Option("strict", "--mode",
                                      help="strict (valid graphs) or disruptive (hirgen only: each "
                                           "graph breaks exactly one type or shape constraint)"),
             out: Path = typer.Option(..., "--out", help="folder for the TVMScript files")) -> None:
    """Write N generated graphs as TVMScript files (tensor constants in .consts.npz beside).

    With --mode disruptive each file is ill-typed on purpose (what was broken is written to
    NAME.violation.json beside it): TVM must reject it with an error, never crash or accept it."""
    def run() -> int:
        import json

        import generators
        from tvtv.ir import tvm_bridge
        if generator not in generators.GENERATORS:
            raise InputError(f"unknown generator '{generator}' (known: {', '.join(generators.GENERATORS)})")
        if mode not in ("strict", "disruptive"):
            raise InputError(f"unknown mode '{mode}' (strict or disruptive)")
        if mode == "disruptive" and generator != "hirgen":
            raise InputError("--mode disruptive needs --generator hirgen")
        out.mkdir(parents=True, exist_ok=True)
        for k in range(n):
            path = out / f"{generator}_{seed}_{k}.py"
            if mode == "disruptive":
                # TVM's BlockBuilder rejects these graphs, so they are printed without TVM
                from generators.emit import to_script
                g = generators.GENERATORS[generator](generators.derive_seed(seed, k), min_ops,
                                                     max_ops, mode="disruptive")
                path.write_text(to_script(g, annotate=False))
                path.with_suffix(".violation.json").write_text(
                    json.dumps(g.meta.get("violation"), indent=2, default=str))
            else:
                mod = generators.generate_module(generator, seed, k, min_ops, max_ops)
                tvm_bridge.save_module(mod, path)
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
