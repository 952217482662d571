"""A fresh Z3 context for each case (tvtv/z3context.py): nothing of the old context is left
at module level, checks after the switch give the same verdicts (the operator lemmas cached
before it included), and a broken twin is still refuted after it."""
from __future__ import annotations

import importlib
import pkgutil

import z3
from tvm.script import ir as I
from tvm.script import relax as R

import generators
import tvtv
from tests.conftest import mutate
from tvtv import lemmas, passes, runner, z3context
from tvtv.encode import tensor
from tvtv.encode.tensor import INDEX   # a copy by name, as tests/test_tir_reductions.py holds
from tvtv.ir import tvm_bridge


def _import_everything() -> None:
    """Every module of tvtv and the generators, so that every module-level z3 object exists."""
    for pkg in (tvtv, generators):
        for info in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + "."):
            if not info.name.endswith("__main__"):      # tvtv.__main__ runs the CLI
                importlib.import_module(info.name)


def test_fresh_leaves_no_z3_object_of_the_old_context():
    _import_everything()
    old, old_index = z3.main_ctx(), tensor.INDEX
    with z3context.scope():
        assert z3.main_ctx() is not old
        assert z3context.stale_objects() == []
        assert tensor.INDEX.ctx is z3.main_ctx()
        assert globals()["INDEX"] is tensor.INDEX     # the copy in this module was rebound
        assert not tensor._IDX                        # caches of the old context emptied
        assert tensor.idx(3).ctx is z3.main_ctx()
    # and back: the old context and its objects, as the rest of this process holds them
    assert z3.main_ctx() is old and tensor.INDEX is old_index and INDEX is old_index
    assert z3context.stale_objects() == [] and tensor.idx(3).ctx is old


def test_stale_objects_finds_an_object_fresh_does_not_know(monkeypatch):
    """The twin of the test above: a module-level z3 object that is not registered stays in
    the old context, and `stale_objects` names it (also inside a container)."""
    monkeypatch.setattr(z3context, "_probe", z3.Int("tvtv_probe"), raising=False)
    monkeypatch.setattr(z3context, "_probes", {"k": z3.Int("tvtv_probe")}, raising=False)
    with z3context.scope():
        assert {"tvtv.z3context._probe", "tvtv.z3context._probes"} <= set(z3context.stale_objects())


@I.ir_module
class Small:
    @R.function
    def main(x: R.Tensor((2, 3), "float32"), y: R.Tensor((2, 3), "float32")) -> R.Tensor((2, 3), "float32"):
        with R.dataflow():
            a = R.add(x, y)
            b = R.exp(a)
            c = R.multiply(b, R.const(2.0, "float32"))
            R.output(c)
        return c


def test_checks_across_fresh_contexts_keep_their_verdicts():
    """LegalizeOps proved, then again in a new context, where the lemmas cached in the old
    one stand for their calls; a broken legalization is refuted in a third context."""
    with z3context.scope():
        (r,) = tvtv.check_pass("LegalizeOps", Small).results
    assert r.verdict == "proved", r.to_dict()
    assert lemmas._CACHE
    with z3context.scope():
        (r2,) = tvtv.check_pass("LegalizeOps", Small).results
    assert r2.verdict == "proved", r2.to_dict()
    assert r.levels[0].startswith("operator lemmas: 3 of 3"), r.levels
    assert r2.levels[1:] == r.levels[1:] and r2.levels[0].startswith("operator lemmas: 3 of 3")
    with z3context.scope():
        target = tvm_bridge.apply(passes.get("LegalizeOps").make(), Small)
        broken = mutate(target, "T.float32(2.0)", "T.float32(3.0)")
        (bad,) = tvtv.verify(Small, broken, pass_name="LegalizeOps").results
    assert bad.verdict == "counterexample", bad.to_dict()
    assert bad.confirmed or bad.counterexample.confirmed_ieee, bad.to_dict()


def test_a_worker_runs_each_case_in_a_new_context_and_in_process_runs_keep_it():
    """`run_case_in_worker` (what a worker calls) gives each case its own context; `run_case`
    (`--jobs 0`, and this test process) keeps the process's context, whose z3 objects other
    code may hold (tests/test_tir_conformance.py's module-level domain did, and a suite run
    failed with "Context mismatch" while run_case switched it)."""
    config = runner.RunConfig(pass_name="FuseOps", generator="simple", seed=0, min_ops=3, max_ops=5)
    cases = runner.generated_cases(config, 2)
    before = z3.main_ctx()
    (result,) = runner.run_case(cases[0], config, None)
    assert result.verdict == "proved", result.to_dict()
    assert z3.main_ctx() is before
    seen = []
    with z3context.scope():
        for case in cases:
            (result,) = runner.run_case_in_worker(case, config, None)
            assert result.verdict == "proved", result.to_dict()
            seen.append(z3.main_ctx())
    assert seen[0] is not seen[1] and before not in seen
    assert z3.main_ctx() is before
