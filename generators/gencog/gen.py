"""GenCoG's expressivity-directed graph generation (paper, algorithm 1) on the shared graph IR.

One graph (`GraphGenerator.generate`):

1. one graph input of random rank (1..4), dims (1..MAX_DIM, at most INPUT_MAX_ELEMS elements)
   and dtype (`Options.dtypes` with `Options.dtype_weights`);
2. until the chosen number of op calls is reached:
   * pick a value x, with probability softmax(-use_penalty * uses) (rarely used values first);
   * candidates: the ops whose spec accepts x as first input (partial evaluation with x's rank
     and dtype, cached per (op, rank, dtype));
   * pick an op with probability softmax(score), score = the op's recent vertex-diversity gains
     (mean over its last `history` attempts, 1 for an op not tried yet), standardised over the
     candidates and multiplied by `score_scale` (paper, equation 6);
   * solve its spec with x known (`solve_initial`), then match the other non-weight inputs
     to existing values whose rank, dtype and known dims fit (with probability `reuse_prob`,
     softmax(-use_penalty * uses) among them), and solve again with all of them known; a
     failing match falls back to fresh graph inputs; weights (`TypeSpec.params`) are always
     fresh graph inputs;
   * if the call's (input types, attributes) was seen already (no vertex-diversity gain), drop
     it with probability `p_rej` (paper: 0.9);
   * otherwise append it: its node (for tuple-valued ops a TUPLE-typed node and GET_ITEMs of
     the fields the graph may use; for the composite linear, permute_dims + matmul (+ add)).
3. outputs: every tensor value nobody uses (unused graph inputs are dropped).

Diversity bookkeeping (`diversity.VertexDiversity` / `EdgeDiversity`) is per graph unless a
shared `tracker` pair is passed, so a seed alone fixes the graph.
"""
from __future__ import annotations

import math
import random
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Optional, Sequence

from generators.gencog.diversity import EdgeDiversity, VertexDiversity
from generators.gencog.ops import OPS
from generators.gencog.solve import (Solution, SolveError, first_input_ok, input_pattern, solve,
                                     solve_initial)
from generators.gencog.spec import (BF16, BOOL, F16, F32, I8, I32, INPUT_MAX_ELEMS, MAX_DIM,
                                    TypeSpec)
from generators.graph import GET_ITEM, Graph, Node, TensorSpec


@dataclass
class Options:
    """Generation options (all documented in `generators.gencog.generate`)."""

    p_rej: float = 0.9
    use_penalty: float = 4.0
    score_scale: float = 1.0
    history: int = 16
    reuse_prob: float = 0.9
    max_variadic: int = 4
    match_trials: int = 3
    ops: Optional[Sequence[str]] = None
    dtypes: Sequence[str] = (F32, F16, BF16, I32, I8, BOOL)
    dtype_weights: Sequence[float] = (8, 2, 1, 2, 1, 1)
    max_input_rank: int = 4
    max_attempts_per_op: int = 60
    tracker: Optional[tuple[VertexDiversity, EdgeDiversity]] = None


def _softmax_choice(rng: random.Random, items: Sequence[Any], scores: Sequence[float]) -> Any:
    m = max(scores)
    weights = [math.exp(s - m) for s in scores]
    return rng.choices(items, weights=weights)[0]


@dataclass
class _Value:
    name: str
    spec: TensorSpec
    op: Optional[str]  # the op that computed it (None: graph input)
    uses: int = 0


@dataclass
class GraphGenerator:
    """The state of generating one graph (see the module docstring)."""

    rng: random.Random
    opts: Options
    graph: Graph = field(default_factory=Graph)
    values: list[_Value] = field(default_factory=list)
    by_name: dict[str, _Value] = field(default_factory=dict)
    num_calls: int = 0
    counters: dict[str, int] = field(default_factory=lambda: {"x": 0, "v": 0})

    def __post_init__(self) -> None:
        names = sorted(OPS) if self.opts.ops is None else sorted(
            {o if o.startswith("relax.") or o == "linear" else f"relax.{o}"
             for o in self.opts.ops})
        unknown = [n for n in names if n not in OPS]
        if unknown:
            raise ValueError(f"no GenCoG spec for {unknown}")
        self.op_names = names
        if self.opts.tracker is not None:
            self.vdiv, self.ediv = self.opts.tracker
        else:
            self.vdiv, self.ediv = VertexDiversity(), EdgeDiversity()
        self.gains: dict[str, deque[float]] = {
            n: deque(maxlen=self.opts.history) for n in names}

    # -- values -------------------------------------------------------------------------------
    def _fresh(self, prefix: str) -> str:
        k = self.counters[prefix]
        self.counters[prefix] = k + 1
        return f"{prefix}{k}"

    def new_input(self, spec: TensorSpec) -> str:
        name = self._fresh("x")
        self.graph.inputs[name] = spec
        v = _Value(name, spec, None)
        self.values.append(v)
        self.by_name[name] = v
        return name

    def _add_value(self, name: str, spec: TensorSpec, op: Optional[str]) -> None:
        v = _Value(name, spec, op)
        self.values.append(v)
        self.by_name[name] = v

    def _pick_value(self, vals: Sequence[_Value]) -> _Value:
        return _softmax_choice(self.rng, vals, [-self.opts.use_penalty * v.uses for v in vals])

    def random_input_spec(self) -> TensorSpec:
        rank = self.rng.randint(1, self.opts.max_input_rank)
        dims = [self.rng.randint(1, MAX_DIM) for _ in range(rank)]
        while math.prod(dims) > INPUT_MAX_ELEMS:
            i = max(range(rank), key=lambda j: dims[j])
            dims[i] = max(1, dims[i] // 2)
        dtype = self.rng.choices(list(self.opts.dtypes), weights=list(self.opts.dtype_weights))[0]
        return TensorSpec(tuple(dims), dtype)

    # -- op choice ------------------------------------------------------------------------------
    def _score(self, op: str) -> float:
        g = self.gains[op]
        return sum(g) / len(g) if g else 1.0

    def _pick_op(self, cands: list[str]) -> str:
        raw = [self._score(o) for o in cands]
        mean = sum(raw) / len(raw)
        std = math.sqrt(sum((r - mean) ** 2 for r in raw) / len(raw))
        scores = [self.opts.score_scale * ((r - mean) / std if std > 0 else 0.0) for r in raw]
        return _softmax_choice(self.rng, cands, scores)

    @staticmethod
    def _calls_of(op: str) -> int:
        return 3 if op == "linear" else 1

    # -- solving one call -------------------------------------------------------------------------
    def _fits(self, v: _Value, rank: Optional[int], dtype: Optional[str],
              dims: Optional[list[Optional[int]]]) -> bool:
        s = v.spec
        if rank is not None and s.ndim != rank:
            return False
        if dtype is not None and s.dtype != dtype:
            return False
        if dims is not None:
            if len(dims) != s.ndim or any(d is not None and d != x for d, x in zip(dims, s.shape)):
                return False
        return True

    def _solve_call(self, op: str, x: _Value) -> Optional[tuple[Solution, dict[int, _Value]]]:
        spec = OPS[op].spec
        in_num = self.rng.randint(1, self.opts.max_variadic) if spec.variadic else None
        known = {0: x.spec}
        try:
            sess = solve_initial(spec, known, self.rng, in_num)
        except SolveError:
            return None
        n = sess.pe(spec.in_num)
        matched: dict[int, _Value] = {0: x}
        if isinstance(n, int):
            for idx in range(1, n):
                if idx in spec.params or self.rng.random() >= self.opts.reuse_prob:
                    continue
                rank, dtype, dims = input_pattern(sess, idx)
                cands = [v for v in self.values if self._fits(v, rank, dtype, dims)]
                for _ in range(min(self.opts.match_trials, len(cands))):
                    v = self._pick_value(cands)
                    trial = {i: m.spec for i, m in matched.items()}
                    trial[idx] = v.spec
                    try:
                        solve_initial(spec, trial, random.Random(0), in_num)
                    except SolveError:
                        cands.remove(v)
                        continue
                    matched[idx] = v
                    break
        known = {i: m.spec for i, m in matched.items()}
        try:
            return solve(spec, known, self.rng, in_num), matched
        except SolveError:
            if len(matched) == 1:
                return None
        try:  # the matched values may not fit together: fresh inputs instead
            return solve(spec, {0: x.spec}, self.rng, in_num), {0: x}
        except SolveError:
            return None

    # -- building nodes ---------------------------------------------------------------------------
    def _plan(self, op: str, sol: Solution, matched: dict[int, _Value]
              ) -> tuple[list[str], list[tuple[str, TensorSpec]], list[Node], list[tuple[str, TensorSpec]]]:
        """The inputs of the call (existing names or placeholders for fresh inputs), the fresh
        inputs to create, the nodes, and the new usable values."""
        spec: TypeSpec = OPS[op].spec
        fresh: list[tuple[str, TensorSpec]] = []
        ins: list[str] = []
        xk = self.counters["x"]
        for i, t in enumerate(sol.in_types):
            if i in matched:
                ins.append(matched[i].name)
            else:
                name = f"x{xk}"
                xk += 1
                fresh.append((name, t))
                ins.append(name)
        vk = self.counters["v"]

        def vname() -> str:
            nonlocal vk
            vk += 1
            return f"v{vk - 1}"
        nodes: list[Node] = []
        new_values: list[tuple[str, TensorSpec]] = []
        attrs = {k: v for k, v in sol.attrs.items()}
        if spec.emit_as == "linear":
            x, w = ins[0], ins[1]
            wt_spec = TensorSpec((sol.in_types[1].shape[1], sol.in_types[1].shape[0]),
                                 sol.in_types[1].dtype)
            wt, mm = vname(), vname()
            nodes.append(Node(wt, "relax.permute_dims", [w], {"axes": [1, 0]}, wt_spec))
            nodes.append(Node(mm, "relax.matmul", [x, wt], {"out_dtype": None},
                              sol.out_types[0]))
            last = mm
            if attrs["bias"]:
                last = vname()
                nodes.append(Node(last, "relax.add", [mm, ins[2]], {}, sol.out_types[0]))
            new_values.append((last, sol.out_types[0]))
        elif spec.tuple_out:
            t = vname()
            nodes.append(Node(t, op, ins, attrs, tuple(sol.out_types)))
            fields = range(len(sol.out_types)) if spec.used_outputs is None else spec.used_outputs
            for k in fields:
                g = vname()
                nodes.append(Node(g, GET_ITEM, [t], {"index": k}, sol.out_types[k]))
                new_values.append((g, sol.out_types[k]))
        else:
            y = vname()
            nodes.append(Node(y, op, ins, attrs, sol.out_types[0]))
            new_values.append((y, sol.out_types[0]))
        return ins, fresh, nodes, new_values

    def _in_types_of(self, node: Node, fresh: dict[str, TensorSpec],
                     local: dict[str, Any]) -> list[Any]:
        out = []
        for i in node.inputs:
            if i in fresh:
                out.append(fresh[i])
            elif i in local:
                out.append(local[i])
            else:
                out.append(self.by_name[i].spec if i in self.by_name
                           else self.graph.spec_of(i))
        return out

    def try_add(self, op: str, x: _Value) -> bool:
        """One attempt at a call of `op` with first input `x`; True if a vertex was added."""
        got = self._solve_call(op, x)
        if got is None:
            self.gains[op].append(0.0)
            return False
        sol, matched = got
        ins, fresh_list, nodes, new_values = self._plan(op, sol, matched)
        fresh = dict(fresh_list)
        local = {n.name: n.out for n in nodes}
        calls = [n for n in nodes if n.is_call]
        is_new = any(not self.vdiv.contains(n.op, self._in_types_of(n, fresh, local), n.attrs)
                     for n in calls)
        if not is_new and self.rng.random() < self.opts.p_rej:
            self.gains[op].append(0.0)
            return False
        # commit
        for name, t in fresh_list:
            assert self.new_input(t) == name
        producers = {v.name: v.op for v in self.values}
        for n in nodes:
            if n.is_call:
                self.vdiv.add(n.op, self._in_types_of(n, fresh, local), n.attrs)
                for i in n.inputs:
                    src = producers.get(i)
                    if src is not None:
                        self.ediv.add(src, n.op)
                producers[n.name] = n.op
            elif n.op == GET_ITEM:
                producers[n.name] = producers.get(n.inputs[0])
            self.graph.nodes.append(n)
            for i in n.inputs:
                if i in self.by_name:
                    self.by_name[i].uses += 1
        self.counters["v"] += len(nodes)
        for name, t in new_values:
            self._add_value(name, t, producers.get(name))
        self.num_calls += len(calls)
        self.gains[op].append(1.0 if is_new else 0.0)
        return True

    # -- the loop ---------------------------------------------------------------------------------
    def generate(self, min_ops: int, max_ops: int) -> Graph:
        target = self.rng.randint(min_ops, max_ops)
        self.new_input(self.random_input_spec())
        attempts = 0
        limit = self.opts.max_attempts_per_op * max_ops
        while self.num_calls < target:
            attempts += 1
            if attempts > limit:
                if self.num_calls >= min_ops:
                    break
                raise RuntimeError(f"GenCoG: {self.num_calls} calls after {attempts} attempts")
            room = max_ops - self.num_calls
            x = self._pick_value(self.values)
            cands = [o for o in self.op_names if self._calls_of(o) <= room
                     and first_input_ok(o, x.spec.ndim, x.spec.dtype)]
            if not cands:  # a value no op accepts first: it stays an output
                continue
            self.try_add(self._pick_op(cands), x)
        return self.finish()

    def finish(self) -> Graph:
        g = self.graph
        used = {i for n in g.nodes for i in n.inputs}
        g.inputs = {k: v for k, v in g.inputs.items() if k in used}
        g.outputs = [v.name for v in self.values if v.op is not None and v.uses == 0]
        if not g.outputs:
            raise RuntimeError("GenCoG: a graph without outputs")
        g.validate()
        return g


def call_graph(op: str, sol: Solution) -> Graph:
    """The graph of one solved call of `op`: every input a graph input, the call's node(s),
    its values as outputs (how tests exercise one spec at a time)."""
    gen = GraphGenerator(random.Random(0), Options(ops=[op]))
    matched = {i: gen.by_name[gen.new_input(t)] for i, t in enumerate(sol.in_types)}
    _, _, nodes, new_values = gen._plan(op, sol, matched)
    gen.graph.nodes.extend(nodes)
    gen.graph.outputs = [name for name, _ in new_values]
    gen.graph.validate()
    return gen.graph
