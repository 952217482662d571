"""Plain-text reports: what a failing test or assertion prints."""
from __future__ import annotations

from typing import Any

import numpy as np

from tvtv.report import Report, Result, json_scalar


def _value(v: Any) -> str:
    return "-" if v is None else str(json_scalar(v))


def format_result(r: Result) -> str:
    """A readable multi-line report of one verdict: the reason, the counterexample's inputs,
    the first differing element with source and target values, and how it was confirmed."""
    from tvtv.confirm import HOW
    lines = [f"tvtv: {r.verdict}: {r.name}" + (f" (pass {r.pass_name})" if r.pass_name else "")]
    if r.reason:
        lines.append(f"  reason: {r.reason}")
    cex = r.counterexample
    if cex is not None:
        if cex.index is not None:
            lines.append(f"  first difference: output {cex.output}, index {tuple(cex.index)}")
            if cex.executed_values is not None:
                src, tgt = cex.executed_values
                where = "IEEE evaluation" if cex.confirmed_by in ("ieee-spec", "spec-vs-vm") else "on the TVM VM"
                lines.append(f"    {where}: source {_value(src)}, target {_value(tgt)}")
            lines.append(f"    in the solver's model ({r.fp_model} floats): source "
                         f"{_value(cex.source_value)}, target {_value(cex.target_value)}")
        if r.confirmed is not None or cex.confirmed_by:
            state = {True: "confirmed", False: "unconfirmed", None: "not decided"}[r.confirmed]
            lines.append(f"  {state}: {HOW.get(cex.confirmed_by or '', cex.confirmed_by or '')}")
        lines.append("  inputs:")
        with np.printoptions(threshold=24, edgeitems=3, precision=6):
            for name, value in cex.inputs.items():
                arr = np.asarray(value) if not isinstance(value, tuple) else value
                head = f"    {name}" + (f": {arr.dtype}{list(arr.shape)}" if hasattr(arr, "dtype") else "")
                text = str(arr).replace("\n", "\n" + " " * (len(head) + 3))
                lines.append(f"{head} = {text}")
    if r.assumptions:
        lines.append(f"  assumptions: {', '.join(r.assumptions)}")
    if r.levels:
        lines.append(f"  levels: {', '.join(r.levels)}")
    return "\n".join(lines)


def format_report(report: Report) -> str:
    """Every result that is not proved, then the summary line."""
    parts = [format_result(r) for r in report.results if r.verdict != "proved"]
    s = report.summary()
    causes = report.unknown_causes()
    why = f" ({', '.join(f'{n} {c}' for c, n in causes.items())})" if causes else ""
    parts.append(f"tvtv summary: {s['proved']} proved, {s['counterexample']} counterexample, "
                 f"{s['unknown']} unknown{why}")
    return "\n".join(parts)
