"""`.npz` files that keep the dtypes numpy itself does not know.

TVM's bfloat16 and float8 tensors come to numpy as `ml_dtypes` arrays. `np.savez` writes
them, but `np.load` reads bfloat16 back as raw void records (`|V2`), which TVM refuses
("unknown dtype `|V2`", measured with a bfloat16 input to the VM worker), and refuses
float8_e5m2's header (`<f1`) altogether. Such an array is
stored here as its bits (an unsigned view of the same width) under the key `name@dtype`,
and read back as the original dtype; every other array is stored as `np.savez` stores it.
"""
from __future__ import annotations

from typing import IO, Any

import ml_dtypes
import numpy as np

# the separator between an array's name and the ml_dtypes dtype it is stored for
MARK = "@"
_BITS = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def _foreign(a: np.ndarray) -> bool:
    """Is `a`'s dtype one `np.load` cannot give back? Every ml_dtypes type: bfloat16 is read
    back as `|V2`, and float8_e5m2's header `<f1` is refused outright."""
    return a.dtype.type.__module__ == "ml_dtypes"


def savez(file: str | Any | IO[bytes], **arrays: Any) -> None:
    """`np.savez(file, **arrays)`, with ml_dtypes arrays stored as their bits (see above)."""
    stored: dict[str, np.ndarray] = {}
    for key, value in arrays.items():
        if MARK in key:
            raise ValueError(f"array name {key!r} holds {MARK!r}, which marks a stored dtype")
        a = np.asarray(value)
        if _foreign(a):
            stored[f"{key}{MARK}{a.dtype.name}"] = a.view(_BITS[a.dtype.itemsize])
        else:
            stored[key] = a
    np.savez(file, **stored)


def load(file: str | Any | IO[bytes]) -> dict[str, np.ndarray]:
    """The arrays of an `.npz` file written by `savez` (or `np.savez`), by name, in the
    file's order, with ml_dtypes arrays restored."""
    out: dict[str, np.ndarray] = {}
    with np.load(file) as data:
        for key in data.files:
            a = data[key]
            name, _, dtype = key.partition(MARK)
            out[name] = a.view(np.dtype(getattr(ml_dtypes, dtype))) if dtype else a
    return out
