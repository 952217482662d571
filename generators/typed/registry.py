"""The op registry of the type-directed generator: `OPS` maps a Relax op name to its `OpInfo`
(recognizer, solver, sampler, builder). Families live in `elementwise`, `reduction`,
`manipulate` and `nn`; registration order is fixed, so iteration over `OPS` is deterministic."""
from __future__ import annotations

from generators.typed import elementwise, manipulate, nn, reduction
from generators.typed.opinfo import REGISTRY, OpInfo
from generators.typed.types import Ty

if not REGISTRY:
    elementwise.register_all()
    reduction.register_all()
    manipulate.register_all()
    nn.register_all()

OPS: dict[str, OpInfo] = REGISTRY


def ops_returning(ty: Ty, names: list[str] | None = None) -> list[OpInfo]:
    """The ops whose recognizer accepts `ty` (in registry order), among `names` if given."""
    infos = OPS.values() if names is None else [OPS[n] for n in names]
    return [info for info in infos if info.recognize(ty)]
