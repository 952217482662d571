"""Verdicts and reports: what a check returns, in Python and as JSON."""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

PROVED, COUNTEREXAMPLE, UNKNOWN = "proved", "counterexample", "unknown"
VERDICTS = (PROVED, COUNTEREXAMPLE, UNKNOWN)

# Exit status of the CLI (see README): everything proved, a counterexample, only unknowns,
# bad input.
EXIT_PROVED, EXIT_COUNTEREXAMPLE, EXIT_UNKNOWN, EXIT_BAD_INPUT = 0, 1, 2, 3


def json_scalar(v: Any) -> Any:
    """A JSON-safe scalar: special floats as the strings "nan", "inf", "-inf", "-0.0"."""
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, (int, np.integer)):
        return int(v)
    f = float(v)
    if math.isnan(f):
        return "nan"
    if math.isinf(f):
        return "inf" if f > 0 else "-inf"
    if f == 0.0 and math.copysign(1.0, f) < 0:
        return "-0.0"
    return f


def json_array(a: Any) -> Any:
    """Nested lists of `json_scalar`s for an array (or a tuple of arrays)."""
    if isinstance(a, tuple):
        return [json_array(x) for x in a]
    arr = np.asarray(a)
    if arr.ndim == 0:
        return json_scalar(arr.item())
    return [json_array(x) for x in arr]


def from_json_scalar(v: Any) -> Any:
    if isinstance(v, str):
        return {"nan": math.nan, "inf": math.inf, "-inf": -math.inf, "-0.0": -0.0}[v]
    return v


@dataclass
class Counterexample:
    """Concrete inputs on which the target does not refine the source.

    `inputs` maps parameter names to numpy arrays (tuples for tuple parameters).
    `kind` is "value" (an output element differs), "ub" (the target is undefined where the
    source is not), "shape" or "dtype" (an output's type differs)."""

    kind: str
    message: str
    inputs: dict[str, Any]
    output: int | None = None
    index: tuple[int, ...] | None = None
    source_value: Any = None
    target_value: Any = None
    confirmed_ieee: bool | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "message": self.message,
            "output": self.output,
            "index": list(self.index) if self.index is not None else None,
            "source_value": None if self.source_value is None else json_scalar(self.source_value),
            "target_value": None if self.target_value is None else json_scalar(self.target_value),
            "separates_in_ieee": self.confirmed_ieee,
        }


@dataclass
class Result:
    """The verdict for one checked function (or one generated graph)."""

    name: str
    pass_name: str | None
    verdict: str
    seconds: float
    reason: str | None = None
    counterexample: Counterexample | None = None
    fp_model: str = "abstract"
    levels: list[str] = field(default_factory=list)
    assumptions: list[str] = field(default_factory=list)
    confirmed: bool | None = None   # counterexamples: did execution on the TVM VM show it?

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "name": self.name,
            "pass": self.pass_name,
            "verdict": self.verdict,
            "seconds": round(self.seconds, 4),
            "reason": self.reason,
            "inputs": None,
            "fp_model": self.fp_model,
            "levels": list(self.levels),
            "assumptions": list(self.assumptions),
        }
        if self.counterexample is not None:
            d["inputs"] = {k: json_array(v) for k, v in self.counterexample.inputs.items()}
            d["counterexample"] = self.counterexample.to_dict()
            d["confirmed"] = self.confirmed
        return d

    def summary_line(self) -> str:
        text = f"{self.name}: {self.verdict}"
        if self.reason:
            text += f" ({self.reason})"
        return text


@dataclass
class Report:
    results: list[Result] = field(default_factory=list)

    def summary(self) -> dict[str, int]:
        counts = {v: 0 for v in VERDICTS}
        for r in self.results:
            counts[r.verdict] += 1
        return counts

    def to_dict(self) -> dict[str, Any]:
        return {"results": [r.to_dict() for r in self.results], "summary": self.summary()}

    def write_json(self, path: str | Path) -> None:
        """Write the report (atomically, so a long run's finished results survive a crash)."""
        p = Path(path)
        p.parent.mkdir(parents=True, exist_ok=True)
        tmp = p.with_name(p.name + ".tmp")
        tmp.write_text(json.dumps(self.to_dict(), indent=2))
        tmp.replace(p)

    def exit_code(self) -> int:
        s = self.summary()
        if s[COUNTEREXAMPLE]:
            return EXIT_COUNTEREXAMPLE
        if s[UNKNOWN]:
            return EXIT_UNKNOWN
        return EXIT_PROVED

    @property
    def verdict(self) -> str:
        """The verdict of the whole report: counterexample > unknown > proved."""
        return {EXIT_COUNTEREXAMPLE: COUNTEREXAMPLE, EXIT_UNKNOWN: UNKNOWN}.get(self.exit_code(), PROVED)
