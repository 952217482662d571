"""Graph generators for tvtv: a shared graph IR (`graph`), an emitter to Relax (`emit`), an
importer from Relax (`importer`), op specifications (`ops`) and generation policies
(`GENERATORS`, keyed by name).

`generate_graphs(generator, n, seed)` gives n graphs, graph i generated from a seed derived
deterministically from (seed, i); `generate_modules` emits them as TVM IRModules.
"""
from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any, Callable

from generators import simple
from generators.graph import Graph, Node, TensorSpec

if TYPE_CHECKING:
    import tvm

def _lazy(module: str, attr: str = "generate") -> Callable[..., Any]:
    """`module.attr`, imported on first call (generators import TVM or Z3 only when used)."""
    def call(*args: Any, **kwargs: Any) -> Any:
        import importlib
        return getattr(importlib.import_module(module), attr)(*args, **kwargs)
    call.__name__ = f"{module}.{attr}"
    return call


# name -> generate(seed, min_ops, max_ops, **options) -> Graph (or an IRModule for generators
# that build Relax directly)
GENERATORS: dict[str, Callable[..., Any]] = {
    "simple": simple.generate,
    "gencog": _lazy("generators.gencog"),
    "isra": _lazy("generators.isra"),
    "hirgen": _lazy("generators.hirgen"),
    "typed": _lazy("generators.typed"),
    "declgen": _lazy("generators.declgen"),
}


def derive_seed(seed: int, index: int) -> int:
    """The seed of graph `index` of a run seeded with `seed` (a 63-bit hash of both, so
    neighbouring runs do not share graphs)."""
    digest = hashlib.sha256(f"tvtv-generators:{seed}:{index}".encode()).digest()
    return int.from_bytes(digest[:8], "little") >> 1


def generate_graphs(generator: str, n: int, seed: int, min_ops: int = 10, max_ops: int = 30,
                    **kwargs: Any) -> list[Graph]:
    """`n` graphs from the generator called `generator`; graph i uses `derive_seed(seed, i)`."""
    try:
        gen = GENERATORS[generator]
    except KeyError:
        raise ValueError(f"unknown generator {generator!r} (known: {', '.join(GENERATORS)})") \
            from None
    return [gen(derive_seed(seed, i), min_ops, max_ops, **kwargs) for i in range(n)]


def generate_modules(generator: str, n: int, seed: int, min_ops: int = 10, max_ops: int = 30,
                     **kwargs: Any) -> list["tvm.ir.IRModule"]:
    """`generate_graphs(...)` emitted as Relax IRModules (public function `main`)."""
    from generators.emit import emit

    return [emit(g) if isinstance(g, Graph) else g
            for g in generate_graphs(generator, n, seed, min_ops, max_ops, **kwargs)]


def generate_module(generator: str, seed: int, index: int, min_ops: int = 10, max_ops: int = 30,
                    **kwargs: Any) -> "tvm.ir.IRModule":
    """Graph `index` of the run seeded with `seed`, emitted (the same module that
    `generate_modules(generator, n, seed)[index]` gives, without making the others)."""
    from generators.emit import emit

    try:
        gen = GENERATORS[generator]
    except KeyError:
        raise ValueError(f"unknown generator {generator!r} (known: {', '.join(GENERATORS)})") \
            from None
    g = gen(derive_seed(seed, index), min_ops, max_ops, **kwargs)
    return emit(g) if isinstance(g, Graph) else g


__all__ = ["GENERATORS", "generate_module", "Graph", "Node", "TensorSpec", "derive_seed", "generate_graphs",
           "generate_modules"]
