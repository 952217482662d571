"""tvtv's pytest plugin (registered through the `pytest11` entry point `tvtv`).

Validate a pass on generated graphs, one test item per graph:

    pytest --tvtv-pass FuseOps --tvtv-graphs 50 [--tvtv-generator simple --tvtv-seed 0]
           [--tvtv-min-ops 10 --tvtv-max-ops 30 --tvtv-ops add,multiply,nn.relu]

`--tvtv-pass` takes a registered pass name (`tvtv passes`) or `package.module:attr` naming a
TVM pass (or a function that returns one) in the project under test. A graph the pass breaks
fails with tvtv's report (verdict, counterexample inputs, source and target values); a graph
tvtv cannot decide is skipped with the reason (`--tvtv-strict` makes it fail).

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
        import generators
        from tvtv.api import check_pass
        from tvtv.reports.text import format_report
        opt = self.config.getoption
        kwargs: dict[str, Any] = {}
        if opt("tvtv_ops"):
            kwargs["ops"] = [o.strip() for o in opt("tvtv_ops").split(",") if o.strip()]
        mod = generators.generate_module(opt("tvtv_generator"), opt("tvtv_seed"), self.index,
                                         opt("tvtv_min_ops"), opt("tvtv_max_ops"), **kwargs)
        pass_ = resolve_pass(opt("tvtv_pass"))
        report = check_pass(pass_, mod, fp=opt("tvtv_fp"), timeout=opt("tvtv_timeout"),
                            label=f"graph{opt('tvtv_seed')}_{self.index}")
        self.user_properties.append(("tvtv", report.to_dict()))
        if report.verdict == "counterexample":
            raise TvtvFailure(format_report(report) + "\n" + _module_text(mod))
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


def _module_text(mod: Any) -> str:
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
        self.defaults = {"fp": config.getoption("tvtv_fp"), "timeout": config.getoption("tvtv_timeout")}

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
