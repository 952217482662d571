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


# Why a check is unknown, by the first of these phrases its reason contains (the reasons
# tvtv writes: api.PassFailed and pipeline, a crash or a rejection; refinement's Unsupported
# and timeouts, compose's unconfirmed steps, the runner's case timeout), in this order;
# anything else is "other".
UNKNOWN_CAUSES: tuple[tuple[str, str], ...] = (
    ("the pass crashed", "TVM crashed in the pass"),
    ("the pass failed", "TVM rejected the module"),
    ("output is ill-formed", "the pass broke TVM's well-formedness"),
    ("the pipeline crashed", "TVM crashed in the pass"),
    ("the pipeline failed", "TVM rejected the module"),
    ("is not validated by tvtv yet", "pass not validated by tvtv"),
    ("unsupported", "not supported by the encoder yet"),
    ("cvc5 rejected the query", "the solver rejected the query"),
    ("cannot write the query for cvc5", "the solver rejected the query"),
    ("timeout", "timeout"),
    ("unconfirmed counterexample", "counterexample not confirmed"),
    ("counterexample not valid under", "counterexample excluded by the assumptions"),
    ("disagree", "solvers disagree"),
)


def unknown_cause(reason: str | None) -> str:
    """The cause of an unknown verdict with this reason (`UNKNOWN_CAUSES`)."""
    text = reason or ""
    return next((cause for phrase, cause in UNKNOWN_CAUSES if phrase in text), "other")


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


def _from_json_array(v: Any) -> Any:
    """Inverse of `json_array` up to dtype (scalars and nested lists of `json_scalar`s)."""
    def walk(x: Any) -> Any:
        return [walk(y) for y in x] if isinstance(x, list) else from_json_scalar(x)
    return np.array(walk(v))


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
    # how `Result.confirmed` was decided: "vm", "vm-random-inputs", "ieee-spec",
    # "spec-vs-vm", "ieee-spec-cpu", "tvm-types", "real", "real-random-inputs" or "none"
    # (see tvtv/confirm.py); None when confirmation was not attempted
    confirmed_by: str | None = None
    # (source, target) values at the differing element as confirmation computed them
    # (execution on the VM, or the IEEE evaluation of the specification): the solver's
    # `source_value`/`target_value` are values of the abstraction and may differ from them
    executed_values: tuple[Any, Any] | None = None
    # why confirmation could not run (`confirmed_by` "not-run"), for the verdict's reason
    not_run_detail: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "message": self.message,
            "output": self.output,
            "index": list(self.index) if self.index is not None else None,
            "source_value": None if self.source_value is None else json_scalar(self.source_value),
            "target_value": None if self.target_value is None else json_scalar(self.target_value),
            "separates_in_ieee": self.confirmed_ieee,
            "executed_values": None if self.executed_values is None else
            [None if v is None else json_scalar(v) for v in self.executed_values],
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any], inputs: dict[str, Any] | None = None) -> "Counterexample":
        """The counterexample `to_dict` wrote. `inputs` (name -> numpy array, with its dtype)
        is given separately: the JSON form of the inputs does not keep dtypes."""
        def value(v: Any) -> Any:
            return None if v is None else from_json_scalar(v)
        cex = cls(kind=d["kind"], message=d["message"], inputs=dict(inputs or {}),
                  output=d.get("output"),
                  index=tuple(d["index"]) if d.get("index") is not None else None,
                  source_value=value(d.get("source_value")), target_value=value(d.get("target_value")),
                  confirmed_ieee=d.get("separates_in_ieee"))
        # optional fields, restored when this version has them and the JSON holds them
        if d.get("executed_values") is not None and hasattr(cex, "executed_values"):
            cex.executed_values = tuple(value(v) for v in d["executed_values"])
        if d.get("confirmed_by") is not None and hasattr(cex, "confirmed_by"):
            cex.confirmed_by = d["confirmed_by"]
        return cex


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
    # an `unknown` the solver left undecided: the counterexample a coarser abstraction level
    # found and could not confirm before the ladder climbed (not in the JSON; execution may
    # still show it, `tvtv.api._confirm_candidate`)
    candidate: Counterexample | None = field(default=None, repr=False, compare=False)

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
            d["confirmed_by"] = self.counterexample.confirmed_by
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any], inputs: dict[str, Any] | None = None) -> "Result":
        """The result `to_dict` wrote. A counterexample's inputs come from `inputs` (exact
        arrays) when given, else from the JSON (nested lists: float64/int64 arrays)."""
        cex = None
        if d.get("counterexample") is not None:
            if inputs is None:
                inputs = {k: _from_json_array(v) for k, v in (d.get("inputs") or {}).items()}
            cex = Counterexample.from_dict(d["counterexample"], inputs)
            cex.confirmed_by = d.get("confirmed_by")
            ev = d["counterexample"].get("executed_values")
            cex.executed_values = None if ev is None else tuple(
                None if v is None else from_json_scalar(v) for v in ev)
        return cls(name=d["name"], pass_name=d.get("pass"), verdict=d["verdict"],
                   seconds=float(d.get("seconds") or 0.0), reason=d.get("reason"),
                   counterexample=cex, fp_model=d.get("fp_model", "abstract"),
                   levels=list(d.get("levels") or []), assumptions=list(d.get("assumptions") or []),
                   confirmed=d.get("confirmed"))

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

    def unknown_causes(self) -> dict[str, int]:
        """How many unknown verdicts each cause has (`unknown_cause`), most frequent first."""
        counts: dict[str, int] = {}
        for r in self.results:
            if r.verdict == UNKNOWN:
                cause = unknown_cause(r.reason)
                counts[cause] = counts.get(cause, 0) + 1
        return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))

    def to_dict(self) -> dict[str, Any]:
        return {"results": [r.to_dict() for r in self.results], "summary": self.summary(),
                "unknown_causes": self.unknown_causes()}

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
