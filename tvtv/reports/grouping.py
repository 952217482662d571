"""Findings grouped by cause, so a run where many graphs fail shows the few problems behind
them.

A finding's cause is the tuple (`Cause`):
- the pass;
- the kind of difference (`value`, `ub`, `shape`, `dtype`);
- the ops involved: the operators of the minimized module the pass runs on (sorted, without
  repeats); when the finding was not minimized, only the op that produced the differing output
  (a whole generated graph's op set would make every finding its own group);
- the witness kind: for a minimized finding, the least special kind of input that shows the
  difference (`tvtv.minimize.WITNESS_LADDER`: finite, signed zero, inf, nan), which does not
  depend on the values the solver happened to pick; otherwise (`witness_kind`) the classes of
  the source and target values at the differing element, NaN / +inf / -inf / +0 / -0 / finite
  (int and bool for other dtypes);
- the op that produced the differing output in the source (after minimization when there was
  one).
Each group keeps its smallest example: fewest ops, then fewest input elements, then label.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Iterable

from tvtv.report import Counterexample


def value_class(v: Any) -> str:
    """The class of one value: "nan", "+inf", "-inf", "+0", "-0", "finite", "int", "bool"
    ("none" when there is no value, e.g. a UB or shape difference)."""
    if v is None:
        return "none"
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, int):
        return "int"
    f = float(v)
    if math.isnan(f):
        return "nan"
    if math.isinf(f):
        return "+inf" if f > 0 else "-inf"
    if f == 0.0:
        return "-0" if math.copysign(1.0, f) < 0 else "+0"
    return "finite"


def witness_kind(cex: Counterexample) -> str:
    """`source class -> target class` at the first differing element (e.g. "finite -> finite",
    "nan -> +0"); the difference kind for UB/shape/dtype counterexamples."""
    if cex.kind != "value":
        return cex.kind
    return f"{value_class(cex.source_value)} -> {value_class(cex.target_value)}"


@dataclass(frozen=True)
class Cause:
    pass_name: str
    kind: str
    ops: tuple[str, ...]
    witness: str
    producer: str

    def title(self) -> str:
        ops = ", ".join(short_op(o) for o in self.ops) or "?"
        return (f"{self.pass_name}: {self.kind} difference at the output of "
                f"{short_op(self.producer)} (ops: {ops}; witness {self.witness})")

    def to_dict(self) -> dict[str, Any]:
        return {"pass": self.pass_name, "kind": self.kind, "ops": list(self.ops),
                "witness": self.witness, "producer": self.producer}


def short_op(op: str) -> str:
    return op[len("relax."):] if op.startswith("relax.") else op


@dataclass
class Finding:
    """One counterexample of the report with what is known about it (filled by `finalize`)."""

    label: str
    result: Any                      # tvtv.report.Result
    case_dir: Any = None             # Path of DIR/cases/<label>, when saved
    ops: tuple[str, ...] = ()        # the ops of the (minimized) module
    producer: str = "?"
    num_ops: int | None = None
    input_size: int = 0
    minimized: Any = None            # tvtv.minimize.Minimized, when minimized
    minimize_error: str | None = None
    before_text: str = ""
    after_text: str = ""
    inputs: dict[str, Any] = field(default_factory=dict)
    trace: dict[str, Any] = field(default_factory=dict)
    trace_error: str | None = None
    repro: str | None = None         # file name of the reproducer script
    confirmation: str = ""           # how `result.confirmed` was decided, for people

    def cause(self, pass_name: str) -> Cause:
        cex = self.result.counterexample
        ops = self.ops if self.minimized is not None else (self.producer,)
        witness = self.minimized.witness if self.minimized is not None and cex.kind == "value" \
            else witness_kind(cex)
        return Cause(self.result.pass_name or pass_name, cex.kind, tuple(ops), witness, self.producer)


@dataclass
class Group:
    cause: Cause
    findings: list[Finding]

    @property
    def example(self) -> Finding:
        """The smallest finding: fewest ops, then fewest input elements, then label."""
        return min(self.findings, key=lambda f: (f.num_ops if f.num_ops is not None else 10**9,
                                                 f.input_size, f.label))


def group_findings(findings: Iterable[Finding], pass_name: str) -> list[Group]:
    """Findings grouped by `Finding.cause`, largest group first (ties: by title)."""
    groups: dict[Cause, list[Finding]] = {}
    for f in findings:
        groups.setdefault(f.cause(pass_name), []).append(f)
    out = [Group(c, sorted(fs, key=lambda f: f.label)) for c, fs in groups.items()]
    out.sort(key=lambda g: (-len(g.findings), g.cause.title()))
    return out
