"""HIRGen's disruptive generation (paper §3.1.5) on Relax: break exactly ONE type or shape
constraint of a valid graph, so that TVM must reject it with an error.

Each kind rewrites one node (the *target*) of any body of the module (main, a private function,
a nested function, an If branch), sometimes through one new helper node placed right before it
(`astype` to change a dtype, `concat` of a value with itself to change a dimension); the helper
itself is well-typed, so the only broken constraint is the target's:

* ``dtype``: a float-only op (exp, softmax, ...) gets an int32 / int8 / bool operand;
* ``dtype_mismatch``: the two (non-bool) operands of an arithmetic binary op get different
  numeric dtypes;
* ``broadcast``: the operands of an elementwise binary op get non-broadcastable shapes;
* ``axis``: a reduction / softmax / expand_dims / concat gets an axis out of range;
* ``rank``: permute_dims gets a permutation of the wrong length;
* ``reshape_size``: reshape to a shape with a different number of elements;
* ``matmul_inner``: matmul operands whose contracted dimensions differ;
* ``cond_dtype``: where gets a non-bool condition;
* ``call_arg``: a function (global or local) is called with an argument of the wrong dtype.

Which kinds were broken on which ops is remembered in the coverage ("broken" items), and
not-yet-broken (kind, op) pairs are preferred. The record goes to ``graph.meta["violation"]``.
"""
from __future__ import annotations

import random
from typing import Callable, Optional

from generators.graph import CALL, INVOKE, Graph, GraphError, Node, TensorSpec
from generators.hirgen.coverage import Coverage
from generators.hirgen.pool import BOOL, F32, FLOAT_ONLY, I8, I32, MAX_ELEMS, NUMERIC
from generators.ops import broadcast_shapes

ELEMENTWISE_BINARY = frozenset(
    f"relax.{n}" for n in ("add", "subtract", "multiply", "maximum", "minimum", "divide",
                           "floor_divide", "floor_mod", "power", "less", "greater", "equal",
                           "not_equal", "less_equal", "greater_equal", "logical_and",
                           "logical_or", "logical_xor", "bitwise_and", "bitwise_xor"))
# Comparisons are left out of dtype_mismatch: TVM 0.27 infers less(float32, int8) as bool
# without complaint (measured), so mixed dtypes are no broken constraint there.
ARITH_BINARY = ELEMENTWISE_BINARY - {f"relax.{n}" for n in (
    "less", "greater", "equal", "not_equal", "less_equal", "greater_equal")}
AXIS_OPS = frozenset({"relax.sum", "relax.mean", "relax.prod", "relax.max", "relax.min",
                      "relax.nn.softmax", "relax.expand_dims", "relax.concat"})

Edit = Callable[[], dict]  # applies the violation, returns its details


class _Disruptor:
    def __init__(self, module: Graph, rng: random.Random) -> None:
        self.module = module
        self.rng = rng
        taken = set(module.inputs) | set(module.functions)
        for _, g in module.walk():
            taken.update(n.name for n in g.nodes)
            taken.update(g.inputs)
        self.taken = taken

    def fresh(self) -> str:
        k = 0
        while f"bad{k}" in self.taken:
            k += 1
        self.taken.add(f"bad{k}")
        return f"bad{k}"

    def insert(self, g: Graph, before: Node, op: str, inputs: list[str], attrs: dict,
               out: TensorSpec) -> str:
        name = self.fresh()
        g.nodes.insert(g.nodes.index(before),
                       Node(name, op, inputs, attrs, out, dataflow=before.dataflow))
        return name

    def astype(self, g: Graph, n: Node, k: int, dtype: str) -> str:
        """Make input k of `n` an astype of it to `dtype`; returns the helper's name."""
        spec = g_spec(self.module, g, n.inputs[k])
        bad = self.insert(g, n, "relax.astype", [n.inputs[k]], {"dtype": dtype},
                          TensorSpec(spec.shape, dtype))
        n.inputs[k] = bad
        return bad

    # -- the kinds: each returns an edit, or None when the node does not allow it -----------
    def k_dtype(self, g: Graph, n: Node) -> Optional[Edit]:
        if n.op not in FLOAT_ONLY:
            return None
        dtype = self.rng.choice((I32, I8, BOOL))
        return lambda: {"input": n.inputs[0], "dtype": dtype,
                        "helper": self.astype(g, n, 0, dtype)}

    def k_dtype_mismatch(self, g: Graph, n: Node) -> Optional[Edit]:
        if n.op not in ARITH_BINARY:
            return None
        # Never bool on either side: TVM 0.27 infers add(float32, bool) and equal(float32,
        # bool) without complaint (measured), so that would not break a type constraint.
        k = self.rng.randrange(2)
        have = g_spec(self.module, g, n.inputs[k]).dtype
        other = g_spec(self.module, g, n.inputs[1 - k]).dtype
        if BOOL in (have, other):
            return None
        dtype = self.rng.choice([d for d in NUMERIC if d != have])
        return lambda: {"input": n.inputs[k], "dtype": dtype,
                        "helper": self.astype(g, n, k, dtype)}

    def k_broadcast(self, g: Graph, n: Node) -> Optional[Edit]:
        if n.op not in ELEMENTWISE_BINARY:
            return None
        for k in self.rng.sample(range(2), 2):
            sa = g_spec(self.module, g, n.inputs[1 - k])
            sb = g_spec(self.module, g, n.inputs[k])
            for axis in range(sb.ndim):
                dims = list(sb.shape)
                dims[axis] *= 2
                if broadcast_shapes(sa.shape, dims) is None and sb.size * 2 <= MAX_ELEMS:
                    return self._concat_edit(g, n, k, axis, TensorSpec(tuple(dims), sb.dtype))
        return None

    def _concat_edit(self, g: Graph, n: Node, k: int, axis: int, out: TensorSpec) -> Edit:
        def edit() -> dict:
            src = n.inputs[k]
            bad = self.insert(g, n, "relax.concat", [src, src], {"axis": axis}, out)
            n.inputs[k] = bad
            return {"input": src, "helper": bad, "shape": list(out.shape)}
        return edit

    def k_axis(self, g: Graph, n: Node) -> Optional[Edit]:
        if n.op not in AXIS_OPS:
            return None
        ndim = g_spec(self.module, g, n.inputs[0]).ndim
        if n.op == "relax.expand_dims":
            ndim += 1
        bad_axis = ndim + self.rng.randint(0, 2) if self.rng.random() < 0.7 \
            else -ndim - 1 - self.rng.randint(0, 2)

        def edit() -> dict:
            old = n.attrs["axis"]
            n.attrs["axis"] = [bad_axis] + list(old[1:]) if isinstance(old, list) else bad_axis
            return {"old": old, "new": n.attrs["axis"]}
        return edit

    def k_rank(self, g: Graph, n: Node) -> Optional[Edit]:
        if n.op != "relax.permute_dims":
            return None

        def edit() -> dict:
            old = list(n.attrs["axes"])
            n.attrs["axes"] = old[:-1] if self.rng.random() < 0.5 else old + [len(old)]
            return {"old": old, "new": n.attrs["axes"]}
        return edit

    def k_reshape_size(self, g: Graph, n: Node) -> Optional[Edit]:
        if n.op != "relax.reshape":
            return None

        def edit() -> dict:
            old = list(n.attrs["shape"])
            new = list(old)
            new[self.rng.randrange(len(new))] += 1
            n.attrs["shape"] = new
            return {"old": old, "new": new}
        return edit

    def k_matmul_inner(self, g: Graph, n: Node) -> Optional[Edit]:
        if n.op != "relax.matmul":
            return None
        sw = g_spec(self.module, g, n.inputs[1])
        if sw.size * 2 > MAX_ELEMS:
            return None
        out = TensorSpec((sw.shape[0] * 2,) + sw.shape[1:], sw.dtype)
        return self._concat_edit(g, n, 1, 0, out)

    def k_cond_dtype(self, g: Graph, n: Node) -> Optional[Edit]:
        if n.op != "relax.where":
            return None
        dtype = self.rng.choice((F32, I32))
        return lambda: {"input": n.inputs[0], "dtype": dtype,
                        "helper": self.astype(g, n, 0, dtype)}

    def k_call_arg(self, g: Graph, n: Node) -> Optional[Edit]:
        if n.op not in (CALL, INVOKE):
            return None
        first = 1 if n.op == INVOKE else 0
        args = [k for k in range(first, len(n.inputs))
                if isinstance(g_spec(self.module, g, n.inputs[k]), TensorSpec)]
        if not args:
            return None
        k = self.rng.choice(args)
        have = g_spec(self.module, g, n.inputs[k]).dtype
        dtype = self.rng.choice([d for d in NUMERIC + (BOOL,) if d != have])
        return lambda: {"input": n.inputs[k], "dtype": dtype,
                        "helper": self.astype(g, n, k, dtype)}


KINDS = ("dtype", "dtype_mismatch", "broadcast", "axis", "rank", "reshape_size",
         "matmul_inner", "cond_dtype", "call_arg")


def g_spec(module: Graph, g: Graph, name: str):  # noqa: ANN201
    """The type of `name` as seen from body `g` of `module` (own values or enclosing ones)."""
    for _, body in module.walk():
        if name in body.inputs:
            return body.inputs[name]
        for n in body.nodes:
            if n.name == name:
                return n.out
    raise KeyError(name)


def candidates(module: Graph, rng: random.Random) -> list[tuple[str, str, Node, Graph, Edit]]:
    """Every (kind, scope, node, body, edit) that can be applied, in module order."""
    d = _Disruptor(module, rng)
    out = []
    for scope, g in list(module.walk()):
        for n in list(g.nodes):
            for kind in KINDS:
                edit = getattr(d, f"k_{kind}")(g, n)
                if edit is not None:
                    out.append((kind, scope, n, g, edit))
    return out


def break_one(module: Graph, rng: random.Random, cov: Optional[Coverage] = None) -> dict:
    """Break one constraint of `module` (preferring (kind, op) pairs not yet in `cov`); the
    record is stored in ``module.meta["violation"]`` and returned."""
    cands = candidates(module, rng)
    if not cands:
        raise GraphError("no constraint of this graph can be broken")
    if cov is not None:
        fresh = [c for c in cands if (c[0], c[2].op) not in cov.items["broken"]]
        cands = fresh or cands
    # a kind first (uniformly among those possible), then a place: keeps kinds balanced
    kinds = [k for k in KINDS if any(c[0] == k for c in cands)]
    pick = rng.choice(kinds)
    kind, scope, node, _, edit = rng.choice([c for c in cands if c[0] == pick])
    details = edit()
    record = {"kind": kind, "scope": scope, "node": node.name, "op": node.op, **details}
    if cov is not None:
        cov.add([("broken", kind, node.op)])
    module.meta = {**module.meta, "mode": "disruptive", "violation": record}
    return record
