"""Shared fixtures and helpers for tvtv's tests."""
from __future__ import annotations

import re

import pytest

from tvtv.ir import tvm_bridge


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


@pytest.fixture
def tmp_module_dir(tmp_path):
    return tmp_path
