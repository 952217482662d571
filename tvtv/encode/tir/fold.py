"""The step function of a multi-buffer reduction, split from the elements it folds.

A reduction block with several accumulators (LegalizeOps' argmax/argmin: an index and a
value, stored at the same indices) computes, for each output element, the left fold

    acc = init;  for r in 0 .. n-1:  acc = step(acc, e_1(r), ..., e_m(r))

where `e_i(r)` are the parts of the stores' values that do not read an accumulator (the
element `x[v, r]`, the index `r` itself, a loop variable of the output). The fold is a
function of the step, of `n`, of the initial accumulators and of the n element tuples *in
loop order*, and of nothing else. Above the unrolling bound, the interpreter states it as an
uninterpreted function named after the step's skeleton (`skeleton`): two blocks with the
same skeleton and the same `n` that fold equal initial values and equal element sequences
give equal results, and nothing else is claimed. Since the order is part of the arguments
(one array per element part, indexed by the step number), a block that visits the elements
in another order is not equal to it, as argmax's first-index tie rule requires.
"""
from __future__ import annotations

import dataclasses
import hashlib

from tvtv.encode.reduction import FOLD_BOUND
from tvtv.ir import tir as T


NOTE = f"multi-buffer reduction: uninterpreted fold of its step (beyond {FOLD_BOUND} steps)"


class NotAFold(Exception):
    """The block's step cannot be separated from its elements (the message says why)."""


def dtype_of(e: T.Expr) -> str:
    """The dtype of a TIR expression's value (comparisons and logic give bool)."""
    if isinstance(e, (T.Compare, T.Logic)):
        return "bool"
    return e.dtype


def skeleton(stores: list[T.Store], dtypes: list[str], n: int) -> tuple[str, list[T.Expr]]:
    """The name of the step function of `stores` (a multi-buffer reduction's body) over `n`
    steps, and its element parts in the order the step's arguments take them.

    The name is a hash of the skeleton's text (`steps`), the accumulators' dtypes and `n`: it
    holds no buffer or variable name of the PrimFunc, so a fused copy of the block gets the
    same one. Raises `NotAFold` as `steps` does."""
    skel, parts = steps(stores)
    text = repr((n, dtypes, skel))
    return "fold_" + hashlib.sha256(text.encode()).hexdigest()[:16], parts


def steps(stores: list[T.Store]) -> tuple[list[T.Expr], list[T.Expr]]:
    """The step of `stores` (a multi-buffer reduction's body) with its elements split off:
    one skeleton expression per store, and the element parts, where the skeleton's
    parameter `p_k` stands for part k.

    Every maximal subexpression that reads no accumulator becomes a parameter `p_k` (equal
    subexpressions share one); an accumulator load becomes `acc_j`, j its store's position.
    Raises `NotAFold` where the step reads an accumulator at other indices, or where a
    lazily evaluated `if_then_else` depends on one (its untaken branch may hold an
    out-of-bounds load, which the element arrays would evaluate for every step)."""
    accs = {st.buffer: j for j, st in enumerate(stores)}
    indices = stores[0].indices
    params: dict[T.Expr, T.Var] = {}

    def param(e: T.Expr) -> T.Expr:
        """`e`, which reads no accumulator, in the skeleton: a constant stays, anything else
        becomes its parameter."""
        if isinstance(e, (T.IntImm, T.FloatImm)):
            return e
        if e not in params:
            params[e] = T.Var(f"p_{len(params)}", dtype_of(e))
        return params[e]

    def walk(e: T.Expr) -> T.Expr | None:
        """`e` in the skeleton, or None when it reads no accumulator (the caller then makes
        it, or an expression around it, a parameter): one pass, bottom-up."""
        if isinstance(e, T.Load) and e.buffer in accs:
            if e.indices != indices:
                raise NotAFold("a reduction step that reads its accumulator elsewhere")
            return T.Load(f"acc_{accs[e.buffer]}", (), e.dtype)
        walked: dict[str, tuple] = {}   # field -> (its value, the value walked)
        for f in dataclasses.fields(e):
            v = getattr(e, f.name)
            if isinstance(v, tuple):
                walked[f.name] = (v, tuple(walk(x) for x in v))
            elif dataclasses.is_dataclass(v):
                walked[f.name] = (v, walk(v))
        if all(w is None for _, ws in walked.values()
               for w in (ws if isinstance(ws, tuple) else (ws,))):
            return None
        if isinstance(e, T.IfThenElse):
            raise NotAFold("a lazy if_then_else that depends on an accumulator")

        def keep(x: T.Expr, w: T.Expr | None) -> T.Expr:
            return param(x) if w is None else w
        return dataclasses.replace(e, **{
            k: tuple(map(keep, v, w)) if isinstance(v, tuple) else keep(v, w)
            for k, (v, w) in walked.items()})

    skel = []
    for st in stores:
        w = walk(st.value)
        skel.append(param(st.value) if w is None else w)
    return skel, list(params)


@dataclasses.dataclass(frozen=True)
class ArgReduction:
    """A multi-buffer reduction that is TVM's argmax or argmin combiner (`arg_reduction`)."""

    kind: str          # "max" or "min"
    index_acc: int     # position of the index accumulator's store
    value_acc: int     # position of the value accumulator's store
    value: T.Expr      # the element compared (x[v, k])
    index: T.Expr      # the element stored as the index (k, or k0 * n1 + k1)


def arg_reduction(stores: list[T.Store], dtypes: list[str]) -> ArgReduction | None:
    """`stores` as TVM's argmax/argmin step, or None when they are any other step.

    LegalizeOps' argmax (topi `argmax`, `select_last_index` false) folds, with `i`, `v` the
    index and value accumulators and `k`, `x` the step's index and element:

        i' = Select(v > x || (v == x && i < k), i, k)      v' = Select(v > x, v, x)

    and argmin the same with `<`. Matched on the skeleton (`steps`), so names do not matter;
    the operands' order does (`x < v` keeps ties and NaNs the other way)."""
    if len(stores) != 2:
        return None
    try:
        skel, parts = steps(stores)
    except NotAFold:
        return None
    ints = [j for j, d in enumerate(dtypes) if d in ("int32", "int64")]
    floats = [j for j, d in enumerate(dtypes) if d.startswith(("float", "bfloat"))]
    if len(ints) != 1 or len(floats) != 1 or len(parts) != 2:
        return None
    ji, jv = ints[0], floats[0]
    pv = [k for k, p in enumerate(parts) if dtype_of(p) == dtypes[jv]]
    pi = [k for k, p in enumerate(parts) if dtype_of(p) == dtypes[ji]]
    if len(pv) != 1 or len(pi) != 1:
        return None
    i = T.Load(f"acc_{ji}", (), dtypes[ji])
    v = T.Load(f"acc_{jv}", (), dtypes[jv])
    x = T.Var(f"p_{pv[0]}", dtypes[jv])
    k = T.Var(f"p_{pi[0]}", dtypes[ji])
    for kind, op in (("max", "gt"), ("min", "lt")):
        keep = T.Logic("or", (T.Compare(op, v, x),
                              T.Logic("and", (T.Compare("eq", v, x), T.Compare("lt", i, k)))))
        if skel[ji] == T.Select(keep, i, k, dtypes[ji]) and \
                skel[jv] == T.Select(T.Compare(op, v, x), v, x, dtypes[jv]):
            return ArgReduction(kind, ji, jv, parts[pv[0]], parts[pi[0]])
    return None
