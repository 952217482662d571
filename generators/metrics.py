"""Diversity metrics of a set of graphs: Isra's eleven, HIRGen's three coverages and GenCoG's
vertex / edge diversity.

Everything works on `generators.graph.Graph` (modules go through `generators.importer`), over
every operator call the IR exposes (`Graph.all_nodes`: main, nested bodies, global functions).
An *operation* is an op call node; the pseudo-ops (constants, tuples, tuple items, calls of
global functions, If, ...) are plumbing, not operations: data flowing through them still makes
an edge between the operations at its two ends (`Graph.op_edges`; so ``split -> get_item ->
add`` is the edge split -> add, like Isra's multi-output ONNX Split). Graph inputs and
constants are tensor placeholders (Isra) and make no edges. An edge is a (producer call,
consumer call) pair: a consumer reading the same producer twice (``add(a, a)``) has one edge.

**Isra** (Ren et al.; the paper gives the intent in §IV-C and refers to its artifact for the
exact definitions: `criterion.py` of israProj/isra, which these follow).

Operation-level metrics, over an *operation corpus* C (op name -> the input degrees the op can
have; default `default_corpus()`: every op in `generators.signatures.SIGNATURES` with its
number of tensor arguments, 1..5 for variadic concat, like Isra's bc.json) and a test set I.
Each is the mean over all n_C ops of C of a per-op value (0 for ops that never occur); ops
outside C are ignored here:

* OTC (operation type coverage): per op 1 if it occurs in I. OTC = covered ops / n_C.
* IDC (input degree coverage): per op, |distinct input degrees seen| / |input degrees in C|.
  The input degree is the number of tensor arguments (a tuple argument counts its fields),
  capped at 5 (Isra's INFINITE_INPUT).
* ODC (output degree coverage): per op, the *number* of distinct output degrees seen (not a
  ratio; Isra's Table I reports e.g. 11.848). The output degree of a call is the number of
  operations it has an edge to plus the number of outputs of ``main`` it feeds, capped at 12
  (Isra's MAX_OUTPUT).
* SEC (single edge coverage): per op o, |{type of b : o -> b edge, b in C}| / n_C; the mean
  is the fraction of the n_C x n_C op-type pairs seen as edges.
* DEC (double edge coverage): per op o, |{(type b, type c) : o -> b -> c, b, c in C}| /
  n_C^2; the mean is the fraction of op-type triples seen as paths of two edges.
* SAC (shapes and attributes coverage; SPC in the artifact): per op, the number of distinct
  non-empty attribute sets plus the number of distinct input-tensor shapes seen (each input
  tensor's shape counts separately). A number, not a ratio.

Graph-level metrics: per graph, then averaged over the graphs of I (GLM(I) = sum / n_I):

* NOO: number of operations.
* NOT: number of distinct operation types.
* NOP: number of distinct (type, type) pairs over the edges between two operations. (The
  paper says "different edges that connect two operations"; the artifact counts distinct
  op-type pairs, `len(opedges)`, which is what it reports.)
* NTR: number of distinct (type, type, type) triples over paths of two adjacent edges.
* NSA: number of distinct shapes among the tensors the operations read, plus, per operation
  type, the number of distinct non-empty attribute sets. (The artifact counts only attribute
  sets new to the whole test set so far, which makes NSA depend on graph order; here each
  graph is measured on its own, i.e. the artifact's value for a graph measured alone.)

The artifact skips the successors of tensors that are graph outputs (an ONNX renaming side
effect); here every use counts.

**HIRGen** (Ma et al., §3.1.3), counted over the whole set: operator-dtype coverage = number of
distinct (op, dtype of a result tensor); operator-shape coverage = number of distinct (op,
shape of a result tensor); operator-edge coverage = number of distinct (op_i, op_j) with an
edge from an op_i call to an op_j call.

**GenCoG** (Wang et al., equations 4 and 5): vertex and edge diversity, computed by
`generators.gencog.diversity` (imported lazily; left out when that module is not there).
"""
from __future__ import annotations

import json
import warnings
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Optional, Sequence

from generators.graph import CONST, GET_ITEM, MATCH_CAST, TUPLE, Graph, Node, TensorSpec, tensors_of

MAX_IN_DEGREE = 5  # Isra's INFINITE_INPUT
MAX_OUT_DEGREE = 12  # Isra's MAX_OUTPUT

ISRA_OP_LEVEL = ("OTC", "IDC", "ODC", "SEC", "DEC", "SAC")
ISRA_GRAPH_LEVEL = ("NOO", "NOT", "NOP", "NTR", "NSA")
HIRGEN = ("op_dtype", "op_shape", "op_edge")
GENCOG = ("vertex_div", "edge_div")


def default_corpus() -> dict[str, tuple[int, ...]]:
    """Isra's operation corpus for Relax: every op in `SIGNATURES` (read at call time, so ops
    other generators add count too) -> its possible input degrees."""
    from generators.signatures import SIGNATURES

    return {op: (tuple(range(1, MAX_IN_DEGREE + 1)) if sig.tensors is None else (sig.tensors,))
            for op, sig in sorted(SIGNATURES.items())}


# -- the operation graph --------------------------------------------------------------------------
@dataclass
class Call:
    """One operation: its node, its input tensor types (tuples flattened), and degrees."""

    node: Node
    in_specs: list[TensorSpec]
    out_degree: int = 0
    succ: list["Call"] = field(default_factory=list)  # one entry per use (multiplicity kept)

    @property
    def op(self) -> str:
        return self.node.op

    @property
    def in_degree(self) -> int:
        return len(self.in_specs)

    @property
    def attrs_key(self) -> str:
        return json.dumps(self.node.attrs, sort_keys=True, default=str)

    @property
    def out_specs(self) -> list[TensorSpec]:
        out = self.node.out
        return [out] if isinstance(out, TensorSpec) else list(out)


def _producers_of_outputs(graph: Graph) -> dict[str, int]:
    """How many of `graph`'s outputs each op call of its body feeds (followed through tuples,
    tuple items and match_casts of that body)."""
    body = {n.name: n for n in graph.nodes}

    def producers(name: str) -> list[str]:
        n = body.get(name)
        if n is None or n.op == CONST:
            return []
        if n.is_call:
            return [name]
        if n.op == GET_ITEM:
            src = body.get(n.inputs[0])
            if src is not None and src.op == TUPLE:  # item of a literal tuple: that field
                return producers(src.inputs[n.attrs["index"]])
            return producers(n.inputs[0])
        if n.op in (TUPLE, MATCH_CAST):
            return [p for i in n.inputs for p in producers(i)]
        return []

    count: dict[str, int] = {}
    for o in graph.outputs:
        for p in dict.fromkeys(producers(o)):
            count[p] = count.get(p, 0) + 1
    return count


def op_graph(graph: Graph) -> list[Call]:
    """The operations of the module `graph` (every op call the IR exposes: main, nested bodies,
    global functions; `Graph.all_nodes`) with the edges between them (`Graph.op_edges`:
    followed through tuples, calls, branches and closures; one edge per (producer, consumer)
    pair) and their degrees."""
    types: dict[tuple[str, str], Any] = {}
    for path, g in graph.walk():
        fk = path.split("/")[0]  # names are unique per global function
        types.update({(fk, name): spec for name, spec in g.inputs.items()})
        types.update({(fk, n.name): n.out for n in g.nodes})
    calls: dict[tuple[str, str], Call] = {}
    for path, n in graph.all_nodes():
        if n.is_call:
            fk = path.split("/")[0]
            calls[(path, n.name)] = Call(n, [t for i in n.inputs
                                             for t in tensors_of(types[(fk, i)])])
    for a, b in graph.op_edges():
        calls[a].succ.append(calls[b])
        calls[a].out_degree += 1
    for name, k in _producers_of_outputs(graph).items():
        calls[("main", name)].out_degree += k
    return list(calls.values())


def _calls_of(graphs: Iterable[Graph]) -> list[list[Call]]:
    return [op_graph(g) for g in graphs]


# -- Isra -----------------------------------------------------------------------------------------
def isra_graph_metrics(graph: Graph) -> dict[str, int]:
    """NOO, NOT, NOP, NTR, NSA of one graph (nested functions counted with it)."""
    calls = [c for cs in _calls_of([graph]) for c in cs]
    pairs = {(a.op, b.op) for a in calls for b in a.succ}
    triples = {(a.op, b.op, c.op) for a in calls for b in a.succ for c in b.succ}
    shapes = {s.shape for c in calls for s in c.in_specs}
    attrs = {(c.op, c.attrs_key) for c in calls if c.node.attrs}
    return {"NOO": len(calls), "NOT": len({c.op for c in calls}), "NOP": len(pairs),
            "NTR": len(triples), "NSA": len(shapes) + len(attrs)}


def isra_op_metrics(graphs: Sequence[Graph],
                    corpus: Optional[Mapping[str, Sequence[int]]] = None) -> dict[str, float]:
    """OTC, IDC, ODC, SEC, DEC, SAC of the test set `graphs` over `corpus` (see module doc)."""
    corpus = default_corpus() if corpus is None else corpus
    n_c = len(corpus)
    if n_c == 0:
        raise ValueError("empty operation corpus")
    seen: dict[str, dict[str, set[Any]]] = {}
    for calls in _calls_of(graphs):
        for c in calls:
            if c.op not in corpus:
                continue
            d = seen.setdefault(c.op, {"in": set(), "out": set(), "edge": set(), "triple": set(),
                                       "attrs": set(), "shapes": set()})
            d["in"].add(min(c.in_degree, MAX_IN_DEGREE))
            d["out"].add(min(c.out_degree, MAX_OUT_DEGREE))
            for b in c.succ:
                if b.op in corpus:
                    d["edge"].add(b.op)
                    d["triple"].update((b.op, x.op) for x in b.succ if x.op in corpus)
            if c.node.attrs:
                d["attrs"].add(c.attrs_key)
            d["shapes"].update(s.shape for s in c.in_specs)
    tot = dict.fromkeys(ISRA_OP_LEVEL, 0.0)
    for op, d in seen.items():
        tot["OTC"] += 1
        tot["IDC"] += len(d["in"]) / len(corpus[op])
        tot["ODC"] += len(d["out"])
        tot["SEC"] += len(d["edge"]) / n_c
        tot["DEC"] += len(d["triple"]) / n_c ** 2
        tot["SAC"] += len(d["attrs"]) + len(d["shapes"])
    return {k: v / n_c for k, v in tot.items()}


def isra_metrics(graphs: Sequence[Graph],
                 corpus: Optional[Mapping[str, Sequence[int]]] = None) -> dict[str, float]:
    """Isra's eleven metrics of `graphs`: the op-level ones over `corpus`, and the mean of each
    graph-level one."""
    out: dict[str, float] = dict(isra_op_metrics(graphs, corpus))
    per = [isra_graph_metrics(g) for g in graphs]
    for k in ISRA_GRAPH_LEVEL:
        out[k] = sum(p[k] for p in per) / len(per) if per else 0.0
    return out


# -- HIRGen ---------------------------------------------------------------------------------------
def hirgen_coverage(graphs: Sequence[Graph]) -> dict[str, int]:
    """HIRGen's operator-dtype, operator-shape and operator-edge coverage of `graphs` (numbers
    of distinct items)."""
    dtypes: set[tuple[str, str]] = set()
    shapes: set[tuple[str, tuple[int, ...]]] = set()
    edges: set[tuple[str, str]] = set()
    for calls in _calls_of(graphs):
        for c in calls:
            for s in c.out_specs:
                dtypes.add((c.op, s.dtype))
                shapes.add((c.op, s.shape))
            edges.update((c.op, b.op) for b in c.succ)
    return {"op_dtype": len(dtypes), "op_shape": len(shapes), "op_edge": len(edges)}


# -- GenCoG ---------------------------------------------------------------------------------------
def gencog_diversity(graphs: Sequence[Graph]) -> Optional[dict[str, float]]:
    """GenCoG's vertex diversity (mean over ops, eq. 4) and edge diversity (eq. 5), from
    `generators.gencog.diversity`; None when that module is not available."""
    flat = list(graphs)
    try:
        from generators.gencog import diversity  # written by the GenCoG generator
    except ImportError:  # the module, or one it needs, is not there (yet)
        return None
    try:
        return {"vertex_div": float(diversity.vertex_diversity(flat)["mean"]),
                "edge_div": float(diversity.edge_diversity(flat))}
    except Exception as err:  # noqa: BLE001  (its failure must not hide the other metrics)
        warnings.warn(f"GenCoG diversity left out: {type(err).__name__}: {err}", stacklevel=2)
        return None


# -- everything -----------------------------------------------------------------------------------
def all_metrics(graphs: Sequence[Graph],
                corpus: Optional[Mapping[str, Sequence[int]]] = None) -> dict[str, float]:
    """Every metric of `graphs` in one flat dict (GenCoG's left out when unavailable)."""
    out: dict[str, float] = {"graphs": float(len(graphs))}
    out.update(isra_metrics(graphs, corpus))
    out.update({k: float(v) for k, v in hirgen_coverage(graphs).items()})
    div = gencog_diversity(graphs)
    if div is not None:
        out.update(div)
    return out


METRIC_HELP = {
    "graphs": "number of graphs",
    "OTC": "Isra: share of corpus ops that occur",
    "IDC": "Isra: mean share of each op's input degrees seen",
    "ODC": "Isra: mean number of distinct output degrees per op",
    "SEC": "Isra: share of op-type pairs seen as edges",
    "DEC": "Isra: share of op-type triples seen as 2-edge paths",
    "SAC": "Isra: mean distinct attribute sets + input shapes per op",
    "NOO": "Isra: mean operations per graph",
    "NOT": "Isra: mean distinct op types per graph",
    "NOP": "Isra: mean distinct op-type pairs (edges) per graph",
    "NTR": "Isra: mean distinct op-type triples per graph",
    "NSA": "Isra: mean distinct input shapes + attribute sets per graph",
    "op_dtype": "HIRGen: distinct (op, result dtype)",
    "op_shape": "HIRGen: distinct (op, result shape)",
    "op_edge": "HIRGen: distinct (op, op) edges",
    "vertex_div": "GenCoG: vertex diversity (eq. 4, mean over ops)",
    "edge_div": "GenCoG: edge diversity (eq. 5)",
}
