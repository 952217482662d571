"""HIRGen's conversion of a computational graph into a high-level IR with functions (paper §3.2,
Algorithm 2), on Relax: slices of consecutive bindings are wrapped into

* ``private``: a private global Relax function called from its old place (`CALL`);
* ``nested``: a local function defined in place and invoked (`FUNCTION` + `INVOKE`); inside a
  private function this gives a nested function in a function; its body is a plain binding
  block (see `wrap_one` for the TVM failure a dataflow block there causes);
* ``if``: an If on a new boolean graph input whose two branches compute the slice (the else
  branch is a renamed copy, so both branches agree and the graph keeps its meaning); only
  slices of one op call (see `wrap_functions` for the TVM crash this avoids).

The slice's free values become parameters (no closure captures by default: TVM 0.27's
LambdaLift + build rejects closures that capture a tensor, "Argument 0 type mismatch: expected
R.Tensor(...), given R.Any", measured); values defined in the slice and used after it become the
results (one value, or a tuple read back with TupleGetItems that keep the old names), so the
rest of the graph is unchanged.
"""
from __future__ import annotations

import copy
import random

from generators.graph import (CALL, CONST, FUNCTION, GET_ITEM, IF, INVOKE, FuncSpec, Graph,
                              GraphError, Node, OutSpec, TensorSpec)

KINDS = ("private", "nested", "if")
MAX_SLICE_OPS = 4


def _slices(g: Graph) -> list[tuple[int, int]]:
    """Candidate slices [i, j] of `g.nodes`: j is an op call or CALL, i extends back over the
    constants just before the first node, and the slice holds only op calls, constants, CALLs
    and tuple items (at most `MAX_SLICE_OPS` calls)."""
    out = []
    nodes = g.nodes
    for j, last in enumerate(nodes):
        if not (last.is_call or last.op == CALL):
            continue
        count = 0
        for i in range(j, -1, -1):
            n = nodes[i]
            if n.op in (FUNCTION, INVOKE, IF) or n.body:
                break
            if n.op not in (CONST, GET_ITEM):
                if not (n.is_call or n.op == CALL):
                    break
                count += 1
                if count > MAX_SLICE_OPS:
                    break
                k = i
                while k > 0 and nodes[k - 1].op == CONST:
                    k -= 1
                out.append((k, j))
    return out


def _interface(g: Graph, i: int, j: int) -> tuple[list[str], list[str]]:
    """(free values used by the slice, values of the slice used after it), in order."""
    inside = g.nodes[i:j + 1]
    defined = {n.name for n in inside}
    params: list[str] = []
    for n in inside:
        for v in g.uses_of(n):
            if v not in defined and v not in params:
                params.append(v)
    later: set[str] = set(g.outputs)
    for n in g.nodes[j + 1:]:
        later.update(g.uses_of(n))
    outs = [n.name for n in inside if n.name in later]
    return params, outs


def _rename(nodes: list[Node], mapping: dict[str, str]) -> list[Node]:
    out = []
    for n in nodes:
        m = copy.deepcopy(n)
        m.name = mapping.get(m.name, m.name)
        m.inputs = [mapping.get(v, v) for v in m.inputs]
        out.append(m)
    return out


def _result(outs: list[str], specs: list[OutSpec]) -> OutSpec:
    return specs[0] if len(outs) == 1 else tuple(specs)


def wrap_one(module: Graph, g: Graph, i: int, j: int, kind: str, fname: str,
             rng: random.Random) -> int:
    """Wrap slice [i, j] of body `g` (main or a global function of `module`) as `kind`, with
    new names starting with `fname`. Returns the number of op calls added (the If copy)."""
    params, outs = _interface(g, i, j)
    if not outs:
        raise GraphError("slice without results")
    specs = {v: _spec(g, v) for v in params}
    inside = g.nodes[i:j + 1]
    out_specs = [n.out for n in inside if n.name in outs]
    res = _result(outs, out_specs)
    added = 0
    if kind == "private":
        body = Graph({p: specs[p] for p in params}, copy.deepcopy(inside), list(outs),
                     private=True)
        for n in body.nodes:
            n.dataflow = True
        new = [Node(outs[0] if len(outs) == 1 else f"{fname}_r", CALL, list(params),
                    {"func": fname}, res)]
        module.functions[fname] = body
        module.functions = dict(sorted(module.functions.items()))
    elif kind == "nested":
        # names are unique per global function, nested bodies included: rename everything
        mapping = {v: f"{fname}_{v}" for v in params + [n.name for n in inside]}
        body = Graph({mapping[p]: specs[p] for p in params}, _rename(inside, mapping),
                     [mapping[o] for o in outs])
        # FuseOps (after LegalizeOps + AnnotateTIROpPattern) of TVM 0.27 fails with "Check
        # failed: (it_creator != group2func_.end())" when a nested function's body is a
        # dataflow block (measured; repro in the report): nested bodies use binding blocks.
        for n in body.nodes:
            n.dataflow = False
        ftype = FuncSpec(tuple(specs[p] for p in params), res)
        new = [Node(fname, FUNCTION, [], {}, ftype, [body]),
               Node(outs[0] if len(outs) == 1 else f"{fname}_r", INVOKE, [fname] + params, {},
                    res)]
    elif kind == "if":
        cond = f"{fname}_cond"
        module.inputs[cond] = TensorSpec((), "bool")
        tmap = {n.name: f"{n.name}_t" for n in inside}
        then = Graph({}, _rename(inside, tmap), [tmap[o] for o in outs])
        emap = {n.name: f"{n.name}_e" for n in inside}
        other = Graph({}, _rename(inside, emap), [emap[o] for o in outs])
        for b in (then, other):
            for n in b.nodes:
                n.dataflow = False
        added = sum(1 for n in inside if n.is_call)
        new = [Node(outs[0] if len(outs) == 1 else f"{fname}_r", IF, [cond], {}, res,
                    [then, other], dataflow=False)]
    else:
        raise ValueError(f"unknown wrapping kind {kind!r}")
    if len(outs) > 1:
        head = new[-1].name
        new += [Node(o, GET_ITEM, [head], {"index": k}, s)
                for k, (o, s) in enumerate(zip(outs, out_specs))]
    g.nodes[i:j + 1] = new
    return added


def _spec(g: Graph, name: str) -> OutSpec:
    return g.spec_of(name)


def wrap_functions(module: Graph, rng: random.Random, max_ops: int, *,
                   kinds: tuple[str, ...] = KINDS, max_wraps: int = 3,
                   nested_in_private: float = 0.4) -> list[dict[str, str]]:
    """Wrap 1..`max_wraps` random slices of ``main`` (Algorithm 2), then, with probability
    `nested_in_private`, a slice of each new private function as a nested function. An If is
    only made while the op count stays within `max_ops`. Returns what was done."""
    done: list[dict[str, str]] = []
    counter = 0
    for _ in range(rng.randint(1, max_wraps)):
        cands = _slices(module)
        if not cands:
            break
        kind = rng.choice(kinds)
        if kind == "if":
            # The VM of TVM 0.27 segfaults (AllocTensor) when both branches of an If compute
            # an intermediate tensor, e.g. `if c: a = log(x); r = exp(a) else: <same>`
            # (measured; repro in the report of this module's author). So an If only wraps a
            # slice of ONE op call with one result, while the op budget allows the copy.
            cands = [(i, j) for i, j in cands
                     if sum(1 for n in module.nodes[i:j + 1] if n.is_call) == 1
                     and module.nodes[j].is_call and len(_interface(module, i, j)[1]) == 1]
            if not cands or module.num_ops + 1 > max_ops:
                continue
        i, j = rng.choice(cands)
        fname = _fresh_name(module, f"f{counter}")
        counter += 1
        wrap_one(module, module, i, j, kind, fname, rng)
        done.append({"kind": kind, "function": fname})
    if "nested" in kinds:
        for fname in [d["function"] for d in done if d["kind"] == "private"]:
            body = module.functions[fname]
            cands = _slices(body)
            if cands and rng.random() < nested_in_private:
                i, j = rng.choice(cands)
                inner = _fresh_name(module, f"{fname}_g")
                wrap_one(module, body, i, j, "nested", inner, rng)
                done.append({"kind": "nested", "function": inner, "in": fname})
    return done


def _fresh_name(module: Graph, base: str) -> str:
    taken = set(module.functions)
    for _, g in module.walk():
        taken.update(n.name for n in g.nodes)
        taken.update(g.inputs)
    name, k = base, 1
    while name in taken or any(t.startswith(name + "_") for t in taken):
        name, k = f"{base}_{k}", k + 1
    return name


