"""tvtv's pytest plugin (registered through the `pytest11` entry point `tvtv`).

Validate a pass on generated graphs, one test item per graph:

    pytest --tvtv-pass FuseOps --tvtv-graphs 50 [--tvtv-generator simple --tvtv-seed 0]
           [--tvtv-min-ops 10 --tvtv-max-ops 30 --tvtv-ops add,multiply,nn.relu]
           [--tvtv-assume no-nan,no-inf] [--tvtv-inputs finite] [--tvtv-case-timeout 300]

`--tvtv-pass` takes a registered pass name (`tvtv passes`) or `package.module:attr` naming a
TVM pass (or a function that returns one) in the project under test. A graph the pass breaks
fails with tvtv's report (verdict, counterexample inputs, source and target values); a graph
tvtv cannot decide is skipped with the reason (`--tvtv-strict` makes it fail). Every
assumption in force (`--tvtv-assume`, as `tvtv check --assume`) and the input class
(`--tvtv-inputs`, as `tvtv check --inputs`) are printed in the report.

Each graph is checked in a worker process kept for the session, in a fresh Z3 context
(`tvtv.plugin_worker`): a graph that outlives `--tvtv-case-timeout` seconds (default 300), or
whose check crashes, is `unknown` with the reason, and the session goes on. With
`--tvtv-case-timeout 0` the graphs are checked in pytest's own process (each in a fresh Z3
context, but without a bound on a hung check).

Fixtures for a project's own tests:

- `tvtv_check(module, pass_=None, **options)`: run the pass (default: `--tvtv-pass`) on the
  module and assert that the result refines it; `tvtv_check.refines(before, after)` asserts
  refinement of two given modules. Both return the `tvtv.Report`.
- `tvtv_pass`: the pass given with `--tvtv-pass` (None when not given).

Nothing happens unless an option is given, so the plugin costs nothing to other test runs.
"""
from __future__ import annotations

from typing import Any

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("tvtv", "translation validation of TVM passes (tvtv)")
    group.addoption("--tvtv-pass", default=None, metavar="NAME",
                    help="validate this pass on generated graphs (a registered name or module:attr)")
    group.addoption("--tvtv-graphs", type=int, default=10, metavar="N", help="number of generated graphs")
    group.addoption("--tvtv-generator", default="simple", metavar="NAME", help="graph generator")
    group.addoption("--tvtv-seed", type=int, default=0, metavar="S", help="generator seed")
    group.addoption("--tvtv-min-ops", type=int, default=10, metavar="N", help="fewest ops per graph")
    group.addoption("--tvtv-max-ops", type=int, default=30, metavar="N", help="most ops per graph")
    group.addoption("--tvtv-ops", default=None, metavar="OPS",
                    help="comma-separated ops the simple generator may use (e.g. add,nn.relu)")
    group.addoption("--tvtv-timeout", type=float, default=30.0, metavar="SECONDS",
                    help="solver timeout per query")
    group.addoption("--tvtv-fp", default="abstract", metavar="MODEL", help="float model: abstract or ieee")
    group.addoption("--tvtv-strict", action="store_true", default=False,
                    help="fail (instead of skip) graphs tvtv cannot decide")
    group.addoption("--tvtv-assume", default=None, metavar="LIST",
                    help="assumptions for the float model, a comma list: no-nan, no-inf, "
                         "no-signed-zeros, per-operation, op-rounding (see `tvtv check --help`)")
    group.addoption("--tvtv-inputs", default="any", metavar="CLASS",
                    help="the inputs looked at: any, finite or no-nan; a NaN or infinity the "
                         "program computes still counts (see `tvtv check --help`)")
    group.addoption("--tvtv-case-timeout", type=float, default=DEFAULT_CASE_TIMEOUT, metavar="SECONDS",
                    help="a graph still unchecked after this long is unknown (0: check in "
                         "pytest's own process, unbounded)")


# as `tvtv check`'s worker processes: a graph's check ends by itself (unknown, with the
# reason) within a third of the case timeout (`tvtv.cli.CHECKS_PER_CASE`)
DEFAULT_CASE_TIMEOUT = 300.0


def float_options(config: pytest.Config) -> dict[str, Any]:
    """The `tvtv.api.verify` float options `--tvtv-assume` and `--tvtv-inputs` give; a bad
    value is a usage error, reported before any graph is checked."""
    from tvtv.api import float_options as api_float_options
    from tvtv.errors import InputError
    from tvtv.refinement import Options
    assume, inputs = config.getoption("tvtv_assume"), config.getoption("tvtv_inputs")
    try:
        given = api_float_options(None, assume, inputs)
        Options(**given)
    except (InputError, ValueError) as err:
        given_text = " ".join(f"--tvtv-{k} {v}" for k, v in (("assume", assume), ("inputs", inputs))
                              if v is not None and v != "any")
        raise pytest.UsageError(f"{given_text}: {err}") from None
    return given


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("tvtv_pass") or config.getoption("tvtv_assume") \
            or config.getoption("tvtv_inputs") != "any":
        float_options(config)
        if config.getoption("tvtv_case_timeout") < 0:
            raise pytest.UsageError("--tvtv-case-timeout must be 0 or more")


def pytest_unconfigure(config: pytest.Config) -> None:
    worker = getattr(config, "_tvtv_worker", None)
    if worker is not None:
        worker.close()


def resolve_pass(spec: str) -> Any:
    """A registered pass name as it is, or the TVM pass `module:attr` names (called when it is
    a function returning a pass)."""
    from tvtv.cli_minimize import _resolve_pass
    return _resolve_pass(spec)


class TvtvFailure(Exception):
    """A graph on which the pass is not validated: the message is tvtv's readable report."""


class TvtvGraphItem(pytest.Item):
    """One generated graph: run the pass on it and check the result refines it."""

    def __init__(self, *, index: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.index = index

    def runtest(self) -> None:
        from tvtv import z3context
        from tvtv.cli import CHECKS_PER_CASE
        from tvtv.plugin_worker import GraphRequest, GraphWorker, check_graph
        from tvtv.report import Report
        from tvtv.reports.text import format_report
        opt = self.config.getoption
        ops = tuple(o.strip() for o in opt("tvtv_ops").split(",") if o.strip()) \
            if opt("tvtv_ops") else None
        case_timeout = opt("tvtv_case_timeout")
        options = float_options(self.config)
        if case_timeout > 0:
            options["budget"] = round(case_timeout / CHECKS_PER_CASE, 3)
        req = GraphRequest(label=f"graph{opt('tvtv_seed')}_{self.index}", pass_spec=opt("tvtv_pass"),
                           generator=opt("tvtv_generator"), seed=opt("tvtv_seed"), index=self.index,
                           min_ops=opt("tvtv_min_ops"), max_ops=opt("tvtv_max_ops"), ops=ops,
                           fp=opt("tvtv_fp"), timeout=opt("tvtv_timeout"), float_options=options)
        if case_timeout > 0:
            worker = getattr(self.config, "_tvtv_worker", None)
            if worker is None:
                worker = self.config._tvtv_worker = GraphWorker()  # type: ignore[attr-defined]
            outcome = worker.check(req, case_timeout)
        else:
            with z3context.scope():
                outcome = check_graph(req)
        report = Report(outcome.results)
        self.user_properties.append(("tvtv", report.to_dict()))
        if report.verdict == "counterexample":
            raise TvtvFailure(format_report(report) + "\n" + outcome.module_text)
        if report.verdict == "unknown":
            if opt("tvtv_strict"):
                raise TvtvFailure(format_report(report))
            pytest.skip("tvtv: unknown: " + "; ".join(r.reason or "" for r in report.results))

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        if isinstance(excinfo.value, TvtvFailure):
            return str(excinfo.value)
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Any, int | None, str]:
        return self.path, None, f"tvtv: {self.name}"


def module_text(mod: Any) -> str:
    """The module before the pass as TVMScript, for a report ("" when it cannot be printed)."""
    from tvtv.ir import tvm_bridge
    try:
        return "module before the pass:\n" + tvm_bridge.module_to_script(mod)[0]
    except Exception:
        return ""


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config,
                                  items: list[pytest.Item]) -> None:
    name = config.getoption("tvtv_pass")
    if not name:
        return
    n, seed = config.getoption("tvtv_graphs"), config.getoption("tvtv_seed")
    gen = config.getoption("tvtv_generator")
    for k in range(n):
        items.append(TvtvGraphItem.from_parent(session, name=f"tvtv[{name}-{gen}-seed{seed}-graph{k}]",
                                               index=k))


class TvtvChecker:
    """The `tvtv_check` fixture's value (see the module docstring)."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        spec = config.getoption("tvtv_pass")
        self.pass_ = resolve_pass(spec) if spec else None
        self.defaults = {"fp": config.getoption("tvtv_fp"), "timeout": config.getoption("tvtv_timeout"),
                         **float_options(config)}

    def __call__(self, module: Any, pass_: Any = None, *, allow_unknown: bool = False,
                 **options: Any) -> Any:
        from tvtv.testing import assert_pass_refines
        p = pass_ if pass_ is not None else self.pass_
        if p is None:
            raise pytest.UsageError("tvtv_check: no pass given (pass one, or run pytest with --tvtv-pass)")
        return assert_pass_refines(p, module, allow_unknown=allow_unknown, **{**self.defaults, **options})

    def refines(self, before: Any, after: Any, *, allow_unknown: bool = False, **options: Any) -> Any:
        from tvtv.testing import assert_refines
        return assert_refines(before, after, allow_unknown=allow_unknown, **{**self.defaults, **options})


@pytest.fixture
def tvtv_check(request: pytest.FixtureRequest) -> TvtvChecker:
    """Assert that a pass preserves a module's meaning: `tvtv_check(module, pass_=None)`."""
    return TvtvChecker(request.config)


@pytest.fixture
def tvtv_pass(request: pytest.FixtureRequest) -> Any:
    """The pass given with --tvtv-pass (None when not given)."""
    spec = request.config.getoption("tvtv_pass")
    return resolve_pass(spec) if spec else None
