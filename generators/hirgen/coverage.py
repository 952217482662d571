"""HIRGen's three coverage criteria (paper §3.1.3), carried across runs in a JSON file.

* operator-dtype: (op, dtype of its operands) pairs seen;
* operator-shape: (op, shape of its result) pairs seen;
* operator-edge: (producer op, consumer op) pairs seen, for edges between operator nodes (not
  from graph inputs or constants).

A candidate node is kept according to how many new items it would add (paper, Algorithm 1 and
the artifact's `Coverage::noProgress`): 3 or more -> always, 2 -> with probability 1/2, 1 -> 1/10,
0 -> never. Disruptive generation also remembers which (constraint kind, op) pairs it broke.

The file is JSON with sorted lists, so the same file always gives the same choices.
"""
from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Optional, Union

KEEP_PROB = {0: 0.0, 1: 0.1, 2: 0.5}  # 3 or more new items: 1.0

Item = tuple[str, str, str]  # (criterion, a, b)
CRITERIA = ("op_dtype", "op_shape", "op_edge", "broken")


@dataclass
class Coverage:
    """Sets of covered items, one per criterion."""

    items: dict[str, set[tuple[str, str]]] = field(
        default_factory=lambda: {c: set() for c in CRITERIA})

    @staticmethod
    def load(path: Union[str, Path, None]) -> "Coverage":
        """The coverage stored in `path` (empty if None or the file does not exist)."""
        cov = Coverage()
        if path is None or not Path(path).exists():
            return cov
        data = json.loads(Path(path).read_text())
        for c in CRITERIA:
            cov.items[c] = {(str(a), str(b)) for a, b in data.get(c, [])}
        return cov

    def save(self, path: Union[str, Path]) -> None:
        data = {c: sorted([a, b] for a, b in self.items[c]) for c in CRITERIA}
        Path(path).write_text(json.dumps(data, indent=0) + "\n")

    def new_items(self, items: Iterable[Item]) -> list[Item]:
        """The items not covered yet (each counted once)."""
        out: list[Item] = []
        for it in items:
            if (it[1], it[2]) not in self.items[it[0]] and it not in out:
                out.append(it)
        return out

    def add(self, items: Iterable[Item]) -> None:
        for c, a, b in items:
            self.items[c].add((a, b))

    def keep(self, rng: random.Random, n_new: int) -> bool:
        """The paper's acceptance rule for a candidate adding `n_new` new items. Draws from
        `rng` only when the answer is not certain (so choices stay reproducible)."""
        if n_new >= 3:
            return True
        p = KEEP_PROB[n_new]
        return p > 0 and rng.random() < p

    def counts(self) -> dict[str, int]:
        return {c: len(self.items[c]) for c in CRITERIA}


def shape_key(shape: Iterable[int]) -> str:
    return "x".join(str(d) for d in shape) or "scalar"


def node_items(op: str, dtype: str, out_shape: Iterable[int],
               preds: Iterable[Optional[str]]) -> list[Item]:
    """The coverage items of a node `op` on operands of `dtype` whose result has `out_shape`,
    fed by the operator nodes `preds` (None for inputs and constants)."""
    items: list[Item] = [("op_dtype", op, dtype), ("op_shape", op, shape_key(out_shape))]
    items += [("op_edge", p, op) for p in preds if p is not None]
    return items
