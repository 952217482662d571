"""Walking tvtv's IR pictures: `program.py`'s Relax and `tir.py`'s TIR are trees of frozen
dataclasses, tuples and lists."""
from __future__ import annotations

import dataclasses
from typing import Iterator


def walk(root: object) -> Iterator[object]:
    """Every dataclass node under `root` (itself included), through dataclass fields, tuples
    and lists; other values (dicts of attributes, numpy constants) are not entered."""
    todo = [root]
    while todo:
        n = todo.pop()
        if isinstance(n, (tuple, list)):
            todo.extend(n)
        elif dataclasses.is_dataclass(n) and not isinstance(n, type):
            yield n
            todo.extend(getattr(n, f.name) for f in dataclasses.fields(n))
