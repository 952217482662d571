"""`finalize`: what `tvtv check --out DIR` does after the run, and `tvtv report DIR` again.

Input: the run's `Report` and, for every counterexample, the case the checker saved:
``DIR/cases/<label>/before.py`` and ``after.py`` (TVMScript, constants in ``.consts.npz``
beside), ``inputs.npz`` (the counterexample's inputs by parameter name). Output, in DIR:

- ``cases/<label>/minimized/`` (when minimizing): ``input.py`` (the minimized module the pass
  runs on), ``before.py`` / ``after.py`` (the check's source and target: after the pass's
  prerequisites, and after the pass), ``inputs.npz``, ``result.json``;
- ``repro_<label>.py``: a standalone reproducer per finding (`tvtv.reports.repro`);
- ``groups.json``: the findings grouped by cause (`tvtv.reports.grouping`);
- ``report.html``: a self-contained page (no external resources) with the summary and one
  section per group with its smallest example; everything taken from user files is escaped
  (jinja2 autoescape).
and prints a rich summary of the groups.
"""
from __future__ import annotations

import datetime
import json
from pathlib import Path
from typing import Any

import numpy as np

from tvtv.ir import npz
from tvtv.report import COUNTEREXAMPLE, UNKNOWN, Report, Result, json_scalar, unknown_cause
from tvtv.reports import cases
from tvtv.reports.grouping import Finding, Group, group_findings, short_op

TEMPLATES = Path(__file__).with_name("templates")


def _load(path: Path) -> Any:
    from tvtv.ir import tvm_bridge
    return tvm_bridge.load_module(path) if path.exists() else None


def _func_name(label: str, module: Any) -> str:
    """The checked function: `label` is `LABEL:FUNC` when a module had several."""
    if ":" in label and module is not None:
        name = label.rsplit(":", 1)[1]
        if name in [gv.name_hint for gv in module.functions]:
            return name
    return "main"


def _inputs_of(result: Result, case_dir: Path | None) -> dict[str, np.ndarray]:
    cex = result.counterexample
    if cex is not None and cex.inputs:
        return {k: np.asarray(v) for k, v in cex.inputs.items() if not isinstance(v, tuple)}
    if case_dir is not None and (case_dir / "inputs.npz").exists():
        return {k: v for k, v in cases.load_inputs(case_dir / "inputs.npz").items()
                if not isinstance(v, tuple)}
    return {}


def _graph_facts(module: Any, func: str, result: Result) -> tuple[tuple[str, ...], str, int | None]:
    """(sorted ops, op producing the differing output, number of ops) of `module`'s function
    read into the graph IR; ((), "?", None) when it cannot be read."""
    from generators.graph import CALL, GET_ITEM, TensorSpec
    from generators.importer import import_module
    try:
        g = import_module(module, func)
    except Exception:   # outside the importer's reach
        return (), "?", None
    ops = tuple(sorted({_op_name(n) for n in g.op_calls()}))
    producer = "?"
    cex = result.counterexample
    if cex is not None and cex.output is not None and cex.output < len(g.outputs) \
            and all(isinstance(g.spec_of(o), TensorSpec) for o in g.outputs):
        name = g.outputs[cex.output]
        if name in g.inputs:
            producer = "(parameter)"
        else:
            node = g.node(name)
            while node.op == GET_ITEM and node.inputs[0] not in g.inputs:
                node = g.node(node.inputs[0])
            producer = _op_name(node) if node.op != CALL else f"call {node.attrs.get('func')}"
    elif cex is not None and len(g.outputs) == 1 and g.outputs[0] not in g.inputs:
        producer = _op_name(g.node(g.outputs[0]))
    return ops, producer, g.num_ops


def _op_name(n: Any) -> str:
    if n.op == "relax.call_tir" and isinstance(n.attrs.get("func"), str):
        return f"call_tir {n.attrs['func']}"
    return n.op


def _script(module: Any) -> str:
    from tvtv.ir import tvm_bridge
    if module is None:
        return "(not saved)"
    try:
        return tvm_bridge.module_to_script(module)[0]
    except Exception:   # a module whose constants cannot be printed: TVM's own printing
        return module.script()


def _write_case(folder: Path, m: Any) -> None:
    from tvtv.ir import tvm_bridge
    folder.mkdir(parents=True, exist_ok=True)
    tvm_bridge.save_module(m.module, folder / "input.py")
    tvm_bridge.save_module(m.before, folder / "before.py")
    tvm_bridge.save_module(m.after, folder / "after.py")
    cex = m.result.counterexample
    if cex is not None:
        npz.savez(folder / "inputs.npz", **{k: np.asarray(v) for k, v in cex.inputs.items()
                                           if not isinstance(v, tuple)})
    (folder / "result.json").write_text(json.dumps(
        {**m.result.to_dict(), "minimized_from_ops": m.original_ops, "ops": m.ops,
         "checks": m.checks, "steps": m.log}, indent=2))


def build_finding(out_dir: Path, r: Result, pass_name: str, minimize: bool, pass_obj: Any,
                  timeout: float, max_checks: int, log: Any, max_seconds: float = 120.0,
                  options: dict[str, Any] | None = None) -> Finding:
    """Everything the report shows about one counterexample (minimizing it when asked, with
    `options` for `tvtv.check_pass`: the run's float model, assumptions, input class)."""
    from tvtv.confirm import HOW
    case_dir = cases.case_dir(out_dir, r.name)
    before = _load(case_dir / "before.py")
    after = _load(case_dir / "after.py")
    func = _func_name(r.name, before)
    f = Finding(r.name, r, case_dir if case_dir.exists() else None)
    if minimize and before is not None:
        from tvtv.minimize import minimize_case
        target = pass_to_rerun(r.pass_name or pass_name, pass_name, pass_obj)
        try:
            m = minimize_case(before, target, r, func=func, timeout=timeout, max_checks=max_checks,
                              max_seconds=max_seconds, **(options or {}))
            m.result.name = r.name   # the finding keeps its label
            f.minimized = m
            _write_case(case_dir / "minimized", m)
            before, after, f.result = m.before, m.after, m.result
            log(f"minimized {r.name}: {m.original_ops} -> {m.ops} ops ({m.checks} checks, {m.seconds:.1f} s)")
        except Exception as err:   # not minimizable (outside the graph IR, unknown pass, ...)
            f.minimize_error = " ".join(str(err).split())[:300]
            log(f"not minimized {r.name}: {f.minimize_error}")
    r = f.result
    cex = r.counterexample
    f.inputs = _inputs_of(r, f.case_dir)
    f.input_size = int(sum(v.size for v in f.inputs.values()))
    graph_module = f.minimized.module if f.minimized is not None else before
    f.ops, f.producer, f.num_ops = _graph_facts(graph_module, func, r) if graph_module is not None \
        else ((), "?", None)
    if f.minimized is not None:   # the producer in the check's source, named as the user wrote it
        f.producer = _graph_facts(f.minimized.module, func, r)[1]
    f.before_text, f.after_text = _script(before), _script(after)
    by = cex.confirmed_by if cex is not None else None
    f.confirmation = HOW.get(by or "", "confirmation was not attempted") if r.confirmed is not None or by else \
        "confirmation was not attempted"
    if before is not None and after is not None and cex is not None and f.inputs:
        from tvtv.reports.trace import trace
        shape = None
        if cex.index is not None:
            shape = _output_shape(before, func, cex.output)
        t = trace(before, after, func, f.inputs, tuple(cex.index) if cex.index is not None else None, shape)
        f.trace, f.trace_error = t, t.get("error")
    else:
        f.trace_error = "the modules of this case were not saved"
    if before is not None and after is not None and cex is not None and f.inputs:
        from tvtv.reports.repro import reproducer_source, safe_name
        spec = None
        if by in ("ieee-spec", "spec-vs-vm") and cex.output is not None:
            from tvtv.confirm import ieee_element
            known, value = ieee_element(before, func, f.inputs, cex.output, tuple(cex.index or ()))
            if known:
                spec = (cex.output, list(cex.index or ()), value)
        name = f"repro_{safe_name(r.name)}.py"
        params = _param_names(before, func)
        ordered = [f.inputs[p] for p in params if p in f.inputs]
        (out_dir / name).write_text(reproducer_source(
            before, after, func, ordered, f"{r.pass_name or pass_name} on {r.name}: {cex.message}",
            r.pass_name or pass_name, spec))
        f.repro = name
    return f


def _find_pass(p: Any, name: str) -> Any:
    """The pass called `name` inside `p` (a Sequential's passes, depth first), or None."""
    from tvtv.ir import tvm_bridge
    if tvm_bridge.pass_name(p) == name and not getattr(p, "passes", None):
        return p
    for inner in getattr(p, "passes", None) or ():
        found = _find_pass(inner, name)
        if found is not None:
            return found
    return p if tvm_bridge.pass_name(p) == name else None


_PIPELINE_CACHE: dict[str, Any] = {}


def pass_to_rerun(name: str, target: str, pass_obj: Any = None) -> Any:
    """What minimization re-runs for a finding of pass `name`: `pass_obj` when given, the
    registered pass of that name, or the pass of that name inside the pipeline `target`
    ("pipeline SPEC", as `tvtv check --pipeline SPEC` names its run)."""
    from tvtv import passes
    if pass_obj is not None:
        return pass_obj
    if name in passes.PASSES or not target.startswith("pipeline "):
        return name
    spec = target[len("pipeline "):]
    try:
        if spec not in _PIPELINE_CACHE:
            from tvtv.pipeline import load_pipeline
            _PIPELINE_CACHE[spec] = load_pipeline(spec)[1]
        found = _find_pass(_PIPELINE_CACHE[spec], name)
    except Exception:   # the pipeline cannot be loaded again: minimization will say so
        return name
    return found if found is not None else name


def _param_names(module: Any, func: str) -> list[str]:
    return [p.name for p in module[func].params]


def _output_shape(module: Any, func: str, output: int | None) -> tuple[int, ...] | None:
    from generators.emit import type_to_out
    from generators.graph import TensorSpec, tensors_of
    try:
        ret = type_to_out(module[func].ret_ty)
    except Exception:
        return None
    if ret is None or output is None:
        return None
    flat = tensors_of(ret) if not isinstance(ret, TensorSpec) else [ret]
    return tuple(flat[output].shape) if output < len(flat) else None


def _fmt(v: Any) -> str:
    """A value for people: special values as nan/inf/-0.0, finite floats to 9 significant
    digits (enough to tell float32 values apart)."""
    if v is None:
        return "-"
    j = json_scalar(v)
    if not isinstance(j, float):
        return str(j)
    text = format(j, ".9g")
    return text if any(c in text for c in ".en") else text + ".0"   # 1.0, not 1


def render_html(report: Report, groups: list[Group], pass_name: str) -> str:
    """The self-contained HTML page (autoescaped: user text cannot inject markup)."""
    import jinja2
    from tvtv.reports.trace import fmt_array
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)), autoescape=True,
                             undefined=jinja2.StrictUndefined)
    env.globals.update(fmt=_fmt, fmt_array=fmt_array, unknown_cause=unknown_cause)
    when = datetime.datetime.now(datetime.timezone.utc).strftime("Generated %Y-%m-%d %H:%M UTC by tvtv.")
    return env.get_template("report.html.j2").render(
        pass_name=pass_name, summary=report.summary(), groups=groups, generated=when,
        unknowns=[r for r in report.results if r.verdict == UNKNOWN],
        unknown_causes=report.unknown_causes())


def groups_json(groups: list[Group]) -> dict[str, Any]:
    return {"groups": [{"cause": g.cause.to_dict(), "title": g.cause.title(),
                        "findings": [f.label for f in g.findings],
                        "example": g.example.label,
                        "example_ops": g.example.num_ops,
                        "example_minimized": g.example.minimized is not None,
                        "example_confirmed": g.example.result.confirmed,
                        "reproducer": g.example.repro}
                       for g in groups]}


def print_groups(groups: list[Group], console: Any = None) -> None:
    """A rich table of the causes: one row per group, its size and smallest example."""
    from rich.console import Console
    from rich.table import Table
    console = console or Console(highlight=False)
    if not groups:
        return
    n = sum(len(g.findings) for g in groups)
    console.print(f"{n} counterexample{'s' if n != 1 else ''}, {len(groups)} distinct "
                  f"cause{'s' if len(groups) != 1 else ''}", markup=False, style="bold")
    table = Table(show_edge=False)
    for col, justify in (("#", "right"), ("difference at", "left"), ("ops", "left"),
                         ("witness", "left"), ("findings", "right"), ("smallest", "left")):
        table.add_column(col, justify=justify)   # type: ignore[arg-type]
    from rich.text import Text
    for k, g in enumerate(groups, 1):
        ex = g.example
        # plain Text cells: labels and op names come from user files and may contain "[...]"
        cells = [str(k), f"{g.cause.kind}: {short_op(g.cause.producer)}",
                 ", ".join(short_op(o) for o in g.cause.ops), g.cause.witness,
                 str(len(g.findings)), f"{ex.label} ({ex.num_ops if ex.num_ops is not None else '?'} ops)"]
        table.add_row(*(Text(c) for c in cells))
    console.print(table)


def finalize(out_dir: Path, report: Report, pass_name: str, minimize: bool, *,
             pass_obj: Any = None, console: Any = None, timeout: float = 10.0,
             max_checks: int = 150, max_seconds: float = 120.0, quiet: bool = False,
             options: dict[str, Any] | None = None) -> list[Group]:
    """Minimize (when asked), group, and write the HTML page, the reproducers and
    `groups.json` into `out_dir` (see the module docstring); print the groups. `pass_obj` is
    the TVM pass when it is not one tvtv's registry knows by `pass_name` (needed to minimize);
    `options` are the run's `tvtv.check_pass` options (fp, assume, input_class), which
    minimization keeps."""
    from rich.console import Console
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    console = console or Console(stderr=True, highlight=False)

    def log(msg: str) -> None:
        if not quiet:
            console.print(msg, markup=False)

    findings = [build_finding(out_dir, r, pass_name, minimize, pass_obj, timeout, max_checks, log,
                              max_seconds, options)
                for r in report.results
                if r.verdict == COUNTEREXAMPLE and r.counterexample is not None]
    groups = group_findings(findings, pass_name)
    (out_dir / "groups.json").write_text(json.dumps(groups_json(groups), indent=2))
    (out_dir / "report.html").write_text(render_html(report, groups, pass_name))
    if not quiet:
        print_groups(groups, console)
        console.print(f"HTML report: {out_dir / 'report.html'}", markup=False)
    return groups
