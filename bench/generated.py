"""Generated graphs for a benchmark: `tvtv generate` into a temporary folder.

    with generated_graphs("isra", seed=23, count=8) as graph:
        module_path = graph(7)          # .../isra_23_7.py
"""
from __future__ import annotations

import subprocess
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

ROOT = Path(__file__).resolve().parents[1]


@contextmanager
def generated_graphs(generator: str, seed: int, count: int) -> Iterator[Callable[[int], Path]]:
    """Graphs 0 .. count-1 of `generator` at `seed`, written by `tvtv generate` (as a user
    would) into a folder removed afterwards; yields graph index -> TVMScript path."""
    with tempfile.TemporaryDirectory(prefix="tvtv-graphs-") as tmp:
        folder = Path(tmp)
        subprocess.run([sys.executable, "-m", "tvtv", "generate", "--generator", generator,
                        "--graphs", str(count), "--seed", str(seed), "--out", str(folder)],
                       check=True, capture_output=True, cwd=ROOT)
        yield lambda k: folder / f"{generator}_{seed}_{k}.py"
