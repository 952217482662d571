"""Shared fixtures and helpers for tvtv's tests."""
from __future__ import annotations

import re
from typing import Sequence

import pytest
import z3

from tvtv import z3context
from tvtv.ir import tvm_bridge


@pytest.fixture(autouse=True)
def fresh_z3_context(request):
    """Each test runs in a fresh Z3 context (`tvtv.z3context.scope`), as each case of a run
    does in its worker, so what earlier tests built does not change what Z3 returns.

    Which model Z3 gives depends on its context's history (term ids order the arguments its
    simplifier sorts). CI failed at 31b1638 on a test that passed alone and in its file: in
    the worker's order of tests the solver picked an input on which exp truly overflows, so
    the check took another (sound) path than the one the test asserts. With this fixture and
    the Makefile's fixed PYTHONHASHSEED a test does in CI what it does on a developer's
    machine. A module that keeps z3 objects at module level opts out with
    `pytestmark = pytest.mark.shared_z3`."""
    if request.node.get_closest_marker("shared_z3"):
        yield
        return
    with z3context.scope():
        yield


def mutate(mod, old: str, new: str, count: int = 1):
    """A broken twin of `mod`: its TVMScript with the first `count` occurrences of `old`
    replaced by `new`, parsed back. Fails the test if `old` does not occur."""
    script, consts = tvm_bridge.module_to_script(mod)
    assert old in script, f"mutation target {old!r} not in module:\n{script}"
    return tvm_bridge.parse_script(script.replace(old, new, count), consts)


def mutate_re(mod, pattern: str, repl: str, count: int = 1):
    script, consts = tvm_bridge.module_to_script(mod)
    new_script, n = re.subn(pattern, repl, script, count=count)
    assert n, f"mutation pattern {pattern!r} not in module:\n{script}"
    return tvm_bridge.parse_script(new_script, consts)


def assert_unsat_each(preconditions: Sequence[z3.BoolRef],
                      differences: Sequence[z3.BoolRef], timeout: float = 60.0) -> None:
    """Assert that none of `differences` (one per output element) is satisfiable under
    `preconditions`, asking tvtv's own solver one element at a time.

    One query per element, as the checker asks them: the disjunction of all elements in one
    Z3 query is not the same problem for Z3. In test_ops_normalization's layer_norm test each
    element took 0.04-0.6 s, while their disjunction timed out after 60 s once earlier tests
    had filled Z3's context (alone it took 0.2 s: Z3's search depends on term order), which
    failed CI at a 10 s budget."""
    from tvtv.solvers import Query

    for k, diff in enumerate(differences):
        q = Query("z3", timeout)
        q.add(*preconditions, diff)
        r = q.check()
        assert r == z3.unsat, f"element {k}: {r} ({q.reason_unknown()})"


@pytest.fixture
def tmp_module_dir(tmp_path):
    return tmp_path
