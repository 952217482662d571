"""The registry of Relax op encoders, keyed by TVM op name ("relax.add", "relax.nn.conv2d").

An encoder is `fn(ctx, call, args) -> Value`: `ctx` is the `EncodeContext`, `call` the
`tvtv.ir.program.OpCall` (its `attrs` dict and its inferred result type `ty`, which encoders
use for output shapes), and `args` the already encoded argument values.
"""
from __future__ import annotations

from typing import Callable

from tvtv.errors import Unsupported

Encoder = Callable[..., object]
OP_ENCODERS: dict[str, Encoder] = {}


def register(*names: str) -> Callable[[Encoder], Encoder]:
    def deco(fn: Encoder) -> Encoder:
        for n in names:
            if n in OP_ENCODERS:
                raise ValueError(f"encoder for {n} registered twice")
            OP_ENCODERS[n] = fn
        return fn
    return deco


def lookup(name: str) -> Encoder:
    _load_all()
    try:
        return OP_ENCODERS[name]
    except KeyError:
        raise Unsupported(f"op {name} is not supported by the encoder yet") from None


def supported_ops() -> list[str]:
    _load_all()
    return sorted(OP_ENCODERS)


_loaded = False


def _load_all() -> None:
    """Import the modules that register encoders (once)."""
    global _loaded
    if _loaded:
        return
    _loaded = True
    from tvtv.encode import ops  # noqa: F401  (registers everything)
