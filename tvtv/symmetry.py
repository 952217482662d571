"""Output elements that are one question up to renaming input elements, asked once.

A softmax's rows, a normalization's groups, a pooled window: each output element of such an
op is computed from its own input elements exactly as its neighbours are from theirs. The
check "source element j equals target element j" is then one formula with the input elements
renamed, and proving it once, over fresh variables, proves it for every element of the group.

Soundness. Element j's condition `c_j` mentions input elements `atoms_j = [x[i0], x[i1], ...]`
(selects of an input array at a constant index). `skeleton(c_j)` replaces them by positional
variables `v_0, v_1, ...` and takes the canonical form (`tvtv.encode.canonical`, which keeps
meaning). Elements with the same skeleton `K` form a group: `c_j` is equivalent to
`K[v := atoms_j]` for each member. If `G -> K` is valid (the solver finds `G and not K`
unsatisfiable, uninterpreted functions included), then so is every instance
`G[v := atoms_j] -> c_j`. `G` holds only premises whose instance is, for every member, one of
that member's own premises (`general_premises`), so each member's query is answered: its
premises imply `c_j`. A premise that mentions none of the representative's input elements is
its own instance. Leaving a premise out only makes `G -> K` harder to prove, never wrong; a
satisfiable or undecided group query decides nothing, and its members are asked one by one.

Which input element gets which variable must agree across the members, or their skeletons
differ (no group, no harm). Variables follow the input elements' order (array, then flat
index), so a member that reads the same positions of another row or window (a translation of
the indices, any order-preserving renaming) numbers them alike. The skeleton is canonical
again after the renaming: the first canonical form sorted commutative arguments by a hash of
the concrete input elements, which differs from row to row (measured on softmax (4, 4):
without the second canonical form 12 skeletons for its 16 elements, with it the 4 positions
of a row).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import z3

from tvtv import z3raw
from tvtv.encode.canonical import Canonicalizer

_ID, _KIND = z3raw.ID, z3raw.KIND
_NUM_ARGS, _ARG, _DECL, _DECL_KIND = z3raw.NUM_ARGS, z3raw.ARG, z3raw.DECL, z3raw.DECL_KIND

VAR_PREFIX = "tvtv_sym"


@dataclass
class Group:
    """Members (flat output indices with their conditions) whose conditions are one skeleton;
    `atoms[m]` are member m's input elements in variable order."""

    skeleton: z3.BoolRef
    members: list[tuple[int, z3.BoolRef]]
    atoms: list[list[z3.ExprRef]]


def _atoms(root: z3.ExprRef, arrays: dict[int, int]) -> tuple[list[z3.ExprRef], int]:
    """The input elements `root` reads (selects of an array in `arrays`, array id -> its
    position, at a numeral index), in (array position, index) order; and the number of
    distinct terms walked to find them (the work `groups` counts)."""
    ref = root.ctx_ref()
    seen: set[int] = set()
    found: list[tuple[int, int, Any]] = []
    stack = [root.as_ast()]
    while stack:
        e = stack.pop()
        key = _ID(ref, e)
        if key in seen or _KIND(ref, e) != z3.Z3_APP_AST:
            continue
        seen.add(key)
        n = _NUM_ARGS(ref, e)
        if n == 2 and _DECL_KIND(ref, _DECL(ref, e)) == z3.Z3_OP_SELECT:
            array, index = _ARG(ref, e, 0), _ARG(ref, e, 1)
            if _ID(ref, array) in arrays and _KIND(ref, index) == z3.Z3_NUMERAL_AST:
                found.append((arrays[_ID(ref, array)],
                              z3.z3._to_expr_ref(index, root.ctx).as_long(), e))
                continue
        stack.extend(_ARG(ref, e, i) for i in range(n))
    found.sort(key=lambda f: (f[0], f[1]))
    return [z3.z3._to_expr_ref(e, root.ctx) for _, _, e in found], len(seen)


def _variables(atoms: Sequence[z3.ExprRef]) -> list[z3.ExprRef]:
    return [z3.Const(f"{VAR_PREFIX}_{k}", a.sort()) for k, a in enumerate(atoms)]


def groups(conditions: Sequence[tuple[int, z3.BoolRef]], arrays: Sequence[z3.ExprRef],
           work: int | None = None) -> list[Group]:
    """`conditions` (flat index, "elements equal") grouped by skeleton, in first-member order.
    A condition with no input element is a group of its own, and so is every condition
    left once `work` terms have been walked (`_atoms`' count, summed over the conditions):
    a skeleton costs a canonical form, about proportional to the condition's size. A count,
    not a clock, so that one check groups alike in every run (with a 2 s deadline, zero
    seed-5 graph 22 grouped differently from run to run, then was proved in one run and
    timed out in the other)."""
    if not conditions:
        return []
    positions = {a.get_id(): k for k, a in enumerate(arrays)}
    canon = Canonicalizer()
    by_key: dict[int, Group] = {}
    out: list[Group] = []
    walked = 0
    for j, c in conditions:
        atoms: list[z3.ExprRef] = []
        if work is None or walked < work:
            atoms, size = _atoms(c, positions)
            walked += size
        if not atoms:
            out.append(Group(c, [(j, c)], [[]]))
            continue
        skeleton = canon(z3.substitute(c, *zip(atoms, _variables(atoms))))
        group = by_key.get(skeleton.get_id())
        if group is None:
            group = by_key[skeleton.get_id()] = Group(skeleton, [], [])
            out.append(group)
        group.members.append((j, c))
        group.atoms.append(atoms)
    return out


def general_premises(group: Group, premises: Sequence[z3.BoolRef]) -> list[z3.BoolRef]:
    """The premises `G` the group's query may assume: each premise with the first member's
    input elements replaced by the variables, kept when its instance for every member is one
    of `premises` (which every member's own query assumes)."""
    have = {p.get_id() for p in premises}
    first = group.atoms[0]      # never empty: a condition without input elements is alone
    variables = _variables(first)
    out: list[z3.BoolRef] = []
    for p in premises:
        g = z3.substitute(p, *zip(first, variables))
        if g.eq(p) or all(z3.substitute(g, *zip(variables, atoms)).get_id() in have
                          for atoms in group.atoms[1:]):
            out.append(g)
    return out
