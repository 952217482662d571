"""Assertions for tests, next to `tvm.ir.assert_structural_equal`:

    from tvtv.testing import assert_refines, assert_pass_refines
    assert_refines(Before, After)                  # After refines Before, for every input
    assert_pass_refines(relax.transform.FuseOps(), Before)

A counterexample raises AssertionError with the readable report (inputs, first differing
element, source and target values). An `unknown` verdict (timeout, unsupported op) raises too,
unless `allow_unknown=True`: a check that could not decide is not a pass.
"""
from __future__ import annotations

from typing import Any

from tvtv.report import COUNTEREXAMPLE, UNKNOWN, Report


def _judge(report: Report, allow_unknown: bool, what: str) -> Report:
    from tvtv.reports.text import format_report
    verdict = report.verdict
    if verdict == COUNTEREXAMPLE:
        raise AssertionError(f"{what}: the target does not refine the source\n{format_report(report)}")
    if verdict == UNKNOWN and not allow_unknown:
        raise AssertionError(f"{what}: tvtv could not decide (pass allow_unknown=True to accept)\n"
                             f"{format_report(report)}")
    return report


def assert_refines(before: Any, after: Any, *, allow_unknown: bool = False, **options: Any) -> Report:
    """Assert that `after` refines `before` (IRModules or TVMScript paths). `options` go to
    `tvtv.verify` (fp, timeout, assume, solver, ...). Returns the report."""
    from tvtv.api import verify
    return _judge(verify(before, after, **options), allow_unknown, "assert_refines")


def assert_pass_refines(pass_: Any, module: Any, *, allow_unknown: bool = False,
                        **options: Any) -> Report:
    """Assert that running `pass_` (a TVM pass or a registered name; its prerequisites first)
    on `module` gives a module that refines it."""
    from tvtv.api import check_pass
    return _judge(check_pass(pass_, module, **options), allow_unknown, "assert_pass_refines")
