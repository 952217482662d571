"""Minimization of a counterexample: delta debugging over the graph while the same
counterexample persists.

The module the pass runs on is read into the generators' graph IR (`generators.importer`),
reduced, and emitted back (`generators.emit`) for every candidate, so any module the importer
reads can be minimized, whatever made it. Reductions, tried in this order and repeated until
none applies (or the budget of checks is spent):

1. **outputs**: keep only the output that differs, else drop other outputs (ddmin);
2. **cut values** (and **bypass ops**): replace the values of a set of nodes by new function parameters of the same
   type, then drop what nobody uses any more (the node, its operands' producers, parameters):
   a chunk of half the candidates first, then quarters, ... then one node at a time, nodes near
   the outputs first, so one accepted cut removes whole upstream subgraphs (ddmin's
   complement-removal on the list of nodes); then ops are removed by making their users read
   an operand of the same type instead (`relu(add(x, y))` -> `add(x, y)`);
3. **shrink shapes**: every parameter's dimensions set to 1, then one dimension at a time to 1,
   then halved; the types of the nodes are re-inferred by TVM (emit without type checks, import
   back), and a candidate TVM rejects is skipped.

"The same counterexample" (what a candidate must keep to be accepted) means: running the same
pass (with its prerequisites) on the candidate gives a `counterexample` verdict with the same
kind of difference (`value`, `ub`, `shape`, `dtype`). The witness values are not part of it:
the solver picks them anew for every candidate (a NaN for one graph, 2.0 for a smaller one), so
requiring the same witness kind would stop most reductions; the witness kind of the *minimized*
case is what findings are grouped by (`tvtv.reports.grouping`). The op producing the differing
output and the inputs may change too: a mistranslated `add` under a `relu` minimizes to the
`add` alone. A check that times out or fails counts as "not the same". Candidates are checked
without running the VM (`confirm_vm=False`); the final minimized case is checked once more with
confirmation. Every candidate is checked on inputs of the original counterexample's class only
(`input_class`: finite inputs stay finite, inputs without NaN stay so), so that a cut cannot
trade the cause for a NaN or an infinity at a new parameter (`kept_class`). Where the source
computes a NaN (or infinity) on the original inputs, that restriction is an input class
(`Options.input_class`), not the assumption no-nan (no-inf), which would also make the computed
value poison: a finding on finite inputs through a computed NaN (TIR's max dropping the NaN of
sqrt(-1)) is kept; where it computes none, the assumption, so a candidate cannot trade the
cause for a computed one either.

A counterexample the solver left undecided and testing found (`tvtv.api._test_undecided`,
e.g. log_add_exp overflowing float16 deep in a graph) is minimized by testing instead: each
candidate is tested on the seeded input sets (`confirm.search_by_testing`: the specification
against the target's run on the VM, so an accepted candidate is a true counterexample), drawn
in the original inputs' class (measured: without it the GenCoG case below drifted to `max` on
an infinity). Before, such a finding could not be
minimized at all: candidates are checked without the VM, so each ended `unknown` (measured:
GenCoG seed-23 graph 7 under LegalizeOps stayed at 10 ops after 7 checks and 168 s; by
testing 10 -> 2 ops in 27 checks and 15 s; `bench/minimize_testing.py`).
"""
from __future__ import annotations

import itertools
import time
from dataclasses import dataclass, field
from typing import Any, Iterator, Sequence

from generators.graph import CONST, Graph, GraphError, TensorSpec
from tvtv.errors import InputError
from tvtv.report import COUNTEREXAMPLE, Result

DEFAULT_MAX_CHECKS = 150

# The kinds of witness, least special first, each with the input class (tvtv.refinement.Options
# `input_class`) a counterexample's inputs then have and the assumptions added to the user's.
# The minimized case is checked down this ladder and its witness is the first rung that still
# shows the difference: "finite" (finite inputs, ±0 not told apart), "signed zero", "inf",
# "nan". Unlike the values the solver happens to pick, this does not depend on the solver's
# whims, so findings of one bug share it (`tvtv.reports.grouping` groups by it). The rungs
# restrict the inputs only: until 2026-12-05 they were the assumptions no-nan / no-inf, which
# also make a NaN the source computes poison, so a difference on finite inputs through a
# computed NaN (TIR's max dropping sqrt(-1)'s) was called "nan".
WITNESS_LADDER: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...] = (
    ("finite", ("no-nan", "no-inf"), ("no-signed-zeros",)),
    ("signed zero", ("no-nan", "no-inf"), ()),
    ("inf", ("no-nan",), ()),
    ("nan", (), ()),
)
DEFAULT_TIMEOUT = 10.0
# seconds of IEEE evaluation a candidate's test may take (`confirm.search_by_testing`)
CANDIDATE_TESTING_BUDGET = 10.0
DEFAULT_MAX_SECONDS = 120.0   # wall-clock budget of the reduction (the final checks come on top)


@dataclass
class Minimized:
    """A minimized counterexample: the graph and module the pass runs on (`graph`, `module`),
    the check's source (`before`, the module after the pass's prerequisites) and target
    (`after`), and the final check's `result`."""

    graph: Graph
    module: Any
    before: Any
    after: Any
    result: Result
    original_ops: int
    checks: int = 0
    accepted: int = 0
    seconds: float = 0.0
    log: list[str] = field(default_factory=list)
    witness: str = "?"   # the least special kind of input showing it (`WITNESS_LADDER`)

    @property
    def ops(self) -> int:
        return self.graph.num_ops


def finding_key(r: Result) -> tuple[str, ...] | None:
    """What must persist while minimizing (see the module docstring): None unless `r` is a
    counterexample."""
    if r.verdict != COUNTEREXAMPLE or r.counterexample is None:
        return None
    return (r.counterexample.kind,)


def same_finding(a: Result, b: Result) -> bool:
    ka = finding_key(a)
    return ka is not None and ka == finding_key(b)


# -- graph edits ------------------------------------------------------------------------------

def _used_names(g: Graph) -> set[str]:
    used = set(g.outputs)
    for n in g.nodes:
        used.update(g.uses_of(n))
    return used


def _clean(g: Graph) -> Graph:
    """Drop dead nodes and parameters nobody uses."""
    if len(g.outputs) > 1:   # a parameter returned as it is shows no difference
        g.outputs = [o for o in g.outputs if o not in g.inputs] or g.outputs[:1]
    g.prune()
    used = _used_names(g)
    g.inputs = {k: v for k, v in g.inputs.items() if k in used}
    return g


def _fresh(g: Graph, base: str) -> str:
    taken = set(g.inputs) | {n.name for _, n in g.all_nodes()}
    for k in itertools.count():
        name = f"{base}_in" if k == 0 else f"{base}_in{k}"
        if name not in taken:
            return name
    raise AssertionError


def cut(g: Graph, names: Sequence[str]) -> Graph:
    """A copy of `g` where the values of nodes `names` become new parameters."""
    h = g.copy()
    for name in names:
        node = h.node(name)
        new = _fresh(h, name)
        h.inputs[new] = node.out
        h.replace_uses(name, new)
    return _clean(h)


def bypass(g: Graph, name: str, operand: str) -> Graph:
    """A copy of `g` without node `name`: its uses read its operand `operand` (of the same
    type) instead."""
    h = g.copy()
    h.replace_uses(name, operand)
    return _clean(h)


def _bypassable(g: Graph) -> list[tuple[str, str]]:
    """(node, operand) pairs where the operand has the node's type, nearest the outputs first."""
    pairs = []
    for n in reversed(g.nodes):
        if n.op == CONST or not isinstance(n.out, TensorSpec):
            continue
        for i in dict.fromkeys(n.inputs):
            try:
                if g.spec_of(i) == n.out:
                    pairs.append((n.name, i))
            except KeyError:   # a value of an enclosing scope
                continue
    return pairs


def keep_outputs(g: Graph, outputs: Sequence[str]) -> Graph:
    h = g.copy()
    h.outputs = list(outputs)
    return _clean(h)


def _cuttable(g: Graph) -> list[str]:
    """Nodes whose value can become a parameter (tensor-typed, not constants), nearest the
    outputs first."""
    return [n.name for n in reversed(g.nodes) if n.op != CONST and isinstance(n.out, TensorSpec)]


def _chunks(items: list[str]) -> Iterator[list[str]]:
    size = max(1, len(items) // 2)
    while True:
        for i in range(0, len(items), size):
            yield items[i:i + size]
        if size == 1:
            return
        size = max(1, size // 2)


def reshape_inputs(g: Graph, shapes: dict[str, tuple[int, ...]], func: str = "main") -> Graph | None:
    """`g` with new parameter shapes and every node's type re-inferred by TVM (None when TVM
    rejects the graph with these shapes)."""
    from generators.emit import emit
    from generators.importer import import_module
    h = g.copy()
    for name, shape in shapes.items():
        h.inputs[name] = TensorSpec(shape, h.inputs[name].dtype)
    try:
        mod = emit(h, check_types=False, func_name=func)
        back = import_module(mod, func)
    except Exception:   # TVM's type inference rejects the new shapes (or the importer cannot read it)
        return None
    return back


def _shape_candidates(g: Graph) -> Iterator[dict[str, tuple[int, ...]]]:
    tensors = {k: v for k, v in g.inputs.items() if isinstance(v, TensorSpec)}
    ones = {k: tuple(1 for _ in v.shape) for k, v in tensors.items()}
    if any(ones[k] != v.shape for k, v in tensors.items()):
        yield ones
    for k, v in tensors.items():
        for d, size in enumerate(v.shape):
            if size > 1:
                yield {k: v.shape[:d] + (1,) + v.shape[d + 1:]}
    for k, v in tensors.items():
        for d, size in enumerate(v.shape):
            if size > 2:
                yield {k: v.shape[:d] + (size // 2,) + v.shape[d + 1:]}


# -- the reducer ------------------------------------------------------------------------------

class _Reducer:
    def __init__(self, pass_: Any, key: tuple[str, ...], func: str, timeout: float,
                 max_checks: int, options: dict[str, Any], max_seconds: float = DEFAULT_MAX_SECONDS) -> None:
        self.pass_ = pass_
        self.testing = False     # candidates are tested on drawn inputs, not given to the solver
        self.deadline = time.perf_counter() + max_seconds
        self.key = key
        self.func = func
        self.timeout = timeout
        self.max_checks = max_checks
        self.options = options
        self.user_options = options   # as given: `options` may keep a finding's input class
        self.checks = 0
        self.accepted = 0
        self.log: list[str] = []

    def result(self, g: Graph, confirm_vm: bool = False) -> Result | None:
        from generators.emit import emit
        from tvtv.api import check_pass
        try:
            mod = emit(g, func_name=self.func)
        except Exception:   # GraphError or TVM's own type errors: not a valid candidate
            return None
        try:
            report = check_pass(self.pass_, mod, timeout=self.timeout, confirm_vm=confirm_vm,
                                **self.options)
        except Exception:   # an internal error on a candidate: not the same finding
            return None
        for r in report.results:
            if r.name == self.func or r.name.endswith(f":{self.func}") or len(report.results) == 1:
                return r
        return None

    def shown_by_testing(self, g: Graph) -> bool:
        """Does testing on drawn inputs (`confirm.search_by_testing`, under the options'
        assumptions and input class) show a value difference between the candidate's
        specification and the pass's output run on the VM?"""
        from generators.emit import emit
        from tvtv.api import drawn_input_difference, run_pass
        from tvtv.ir import relax_reader
        if self.key != ("value",):
            return False
        try:
            _, before, after, _ = run_pass(self.pass_, emit(g, func_name=self.func))
            fn = relax_reader.read_module(before).functions[self.func]
            found = drawn_input_difference(before, after, fn, tuple(self.options.get("assume") or ()),
                                           CANDIDATE_TESTING_BUDGET,
                                           tuple(self.options.get("input_class") or ()))
        except Exception:   # PassFailed, GraphError, TVM's type errors, a module tvtv cannot
            return False    # read or an internal error: not the same finding
        return found is not None

    def interesting(self, g: Graph, what: str) -> bool:
        if self.checks >= self.max_checks or g.num_ops == 0 or time.perf_counter() > self.deadline:
            return False
        self.checks += 1
        if self.testing:
            # the solver did not decide the original within its timeout, and mostly does not
            # on a candidate either: asking it cost 20-25 s per rejected candidate, where a
            # test takes 2-5 s (measured on GenCoG seed-23 graph 7: 10 -> 6 ops in 8 checks
            # and 183 s with the solver asked after the test, `bench/minimize_testing.py`)
            ok = self.shown_by_testing(g)
            if ok:
                self.accepted += 1
                self.log.append(f"{what}: {g.num_ops} ops (shown by testing)")
            return ok
        r = self.result(g)
        ok = r is not None and finding_key(r) == self.key
        if ok:
            self.accepted += 1
            self.log.append(f"{what}: {g.num_ops} ops")
        return ok

    def outputs(self, g: Graph, first: str | None) -> Graph:
        if len(g.outputs) <= 1:
            return g
        if first is not None and first in g.outputs:
            h = keep_outputs(g, [first])
            if self.interesting(h, f"keep output {first}"):
                return h
        outs = list(g.outputs)
        for chunk in _chunks(outs):
            rest = [o for o in g.outputs if o not in chunk]
            if rest and len(rest) < len(g.outputs):
                h = keep_outputs(g, rest)
                if self.interesting(h, f"drop outputs {chunk}"):
                    return self.outputs(h, None)
        return g

    def cuts(self, g: Graph) -> Graph:
        progress = True
        while progress and self.checks < self.max_checks:
            progress = False
            for chunk in _chunks(_cuttable(g)):
                try:
                    h = cut(g, chunk)
                except (GraphError, KeyError):
                    continue
                if h.num_ops >= g.num_ops:
                    continue
                if self.interesting(h, f"cut {', '.join(chunk)}"):
                    g, progress = h, True
                    break
        return g

    def bypasses(self, g: Graph) -> Graph:
        progress = True
        while progress and self.checks < self.max_checks:
            progress = False
            for name, operand in _bypassable(g):
                h = bypass(g, name, operand)
                if h.num_ops < g.num_ops and self.interesting(h, f"bypass {name}"):
                    g, progress = h, True
                    break
        return g

    def witness(self, g: Graph) -> tuple[str, Result | None]:
        """The least special kind of input that still shows the difference: the first rung of
        `WITNESS_LADDER` whose input class (with its assumptions added to the user's) still
        gives the same kind of counterexample (checked with VM confirmation)."""
        saved = self.options
        user = list(self.user_options.get("assume") or ())
        try:
            for label, inputs, assume in WITNESS_LADDER:
                self.options = {**self.user_options, "input_class": inputs,
                                "assume": list(dict.fromkeys([*user, *assume]))}
                self.checks += 1
                r = self.result(g, confirm_vm=True)
                if r is not None and finding_key(r) == self.key:
                    return label, r
        finally:
            self.options = saved
        return "?", None

    def shapes(self, g: Graph) -> Graph:
        progress = True
        while progress and self.checks < self.max_checks:
            progress = False
            for shapes in _shape_candidates(g):
                h = reshape_inputs(g, shapes, self.func)
                if h is not None and self.interesting(h, f"shapes {shapes}"):
                    g, progress = h, True
                    break
        return g


def input_class(inputs: dict[str, Any]) -> tuple[str, ...]:
    """The input class (`WITNESS_LADDER`, `Options.input_class`) of counterexample inputs
    `inputs`: no-nan and no-inf when every float element is finite, no-nan when none is NaN,
    none otherwise."""
    import numpy as np
    arrays = [np.asarray(a) for a in inputs.values()]
    values = [a.astype("float64") for a in arrays if "float" in str(a.dtype)]   # and bfloat16
    if any(np.isnan(v).any() for v in values):
        return ()
    if any(np.isinf(v).any() for v in values):
        return ("no-nan",)
    return ("no-nan", "no-inf")


def kept_class(options: dict[str, Any], module: Any, func: str, inputs: dict[str, Any]
               ) -> dict[str, Any]:
    """`options` for the candidates of a counterexample with `inputs` of `module`'s `func`:
    they are looked at on inputs of the same class (`input_class`), so that a cut cannot trade
    the cause for a NaN or an infinity at a new parameter. For each of no-nan and no-inf the
    class has: when the source, evaluated on `inputs` (`confirm.poisoned_inside`), computes
    no such value, it becomes an assumption, so a NaN or infinity a candidate's source
    computes is poison too (measured: without it GenCoG seed-23 graph 7's float16 log_add_exp
    overflow drifted to `max` on a computed infinity); when it computes one (TIR's max
    dropping the NaN of sqrt(-1) on finite inputs), or cannot be evaluated, only the input
    class (`Options.input_class`), which keeps a finding through a computed NaN."""
    from tvtv.absfp import assumptions as A
    from tvtv.confirm import poisoned_inside
    assume = list(options.get("assume") or ())
    inputs_only = set(options.get("input_class") or ())
    for flag in input_class(inputs):
        if flag in assume:
            continue
        try:
            inside = poisoned_inside(module, func, inputs, (flag, A.PER_OPERATION))
        except Exception:   # a module tvtv cannot evaluate: as when it cannot tell (None)
            inside = None
        if inside is False:
            assume.append(flag)
        else:
            inputs_only.add(flag)
    return {**options, "assume": assume, "input_class": tuple(sorted(inputs_only))}


def found_by_testing(r: Result | None) -> bool:
    """Did testing on drawn inputs find `r`'s counterexample, the solver undecided?"""
    from tvtv.api import TESTING_FOUND
    return r is not None and any(TESTING_FOUND in level for level in r.levels)


def _differing_output(g: Graph, r: Result) -> str | None:
    cex = r.counterexample
    if cex is None or cex.output is None:
        return None
    # flattened output k is graph output k when every output is one tensor
    if all(isinstance(g.spec_of(o), TensorSpec) for o in g.outputs) and cex.output < len(g.outputs):
        return g.outputs[cex.output]
    return None


def minimize_case(module: Any, pass_: Any, result: Result | None = None, *, func: str = "main",
                  timeout: float = DEFAULT_TIMEOUT, max_checks: int = DEFAULT_MAX_CHECKS,
                  shrink_shapes: bool = True, max_seconds: float = DEFAULT_MAX_SECONDS,
                  **options: Any) -> Minimized:
    """Minimize the counterexample that `pass_` (a registered name or a TVM pass) shows on
    `module` (an IRModule or a TVMScript path). `result` is the counterexample to keep (the
    module is checked first when it is not given). The reduction stops after `max_checks`
    checks or `max_seconds` seconds, keeping the smallest case so far. Raises InputError when the module shows no
    counterexample or cannot be read into the graph IR. `options` go to `tvtv.check_pass`
    (fp, assume, ...)."""
    from generators.emit import emit
    from generators.importer import UnsupportedModule, import_module
    from tvtv.api import _as_module, resolve_pass
    from tvtv.ir import tvm_bridge

    start = time.perf_counter()
    name, pre, pass_obj = resolve_pass(pass_)   # an unknown pass name is bad input, at once
    mod = _as_module(module, "module")
    try:
        graph = import_module(mod, func)
    except UnsupportedModule as err:
        raise InputError(f"cannot minimize: the module is not in the graph IR's reach: {err}") from None
    graph = _clean(graph)
    red = _Reducer(pass_, ("",), func, timeout, max_checks, options, max_seconds)
    if result is None or finding_key(result) is None:
        # with the VM, as `tvtv check` does: a finding only testing shows is found too
        result = red.result(graph, confirm_vm=True)
        red.checks += 1
    key = finding_key(result) if result is not None else None
    if key is None:
        verdict = result.verdict if result is not None else "no result"
        raise InputError(f"cannot minimize: the pass shows no counterexample on this module ({verdict})")
    red.key = key
    red.testing = found_by_testing(result)
    if result.counterexample is not None:
        red.options = kept_class(options, mod, func, result.counterexample.inputs)
    original_ops = graph.num_ops
    g = red.outputs(graph, _differing_output(graph, result))
    while red.checks < max_checks and time.perf_counter() < red.deadline:
        before_ops, before_size = g.num_ops, _size(g)
        g = red.outputs(g, None)
        g = red.cuts(g)
        g = red.bypasses(g)
        if shrink_shapes:
            g = red.shapes(g)
        if (g.num_ops, _size(g)) == (before_ops, before_size):
            break
    witness, final = red.witness(g)
    if final is None:   # e.g. a timeout on the last check
        final = red.result(g, confirm_vm=True) or result
    minimized = emit(g, func_name=func)
    before = minimized
    for p in pre:
        before = tvm_bridge.apply(p, before)
    after = tvm_bridge.apply(pass_obj, before)
    return Minimized(g, minimized, before, after, final, original_ops, red.checks, red.accepted,
                     time.perf_counter() - start, red.log, witness)


def _size(g: Graph) -> int:
    return sum(v.size for v in g.inputs.values() if isinstance(v, TensorSpec))
