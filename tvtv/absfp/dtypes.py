"""Facts about the dtypes Relax uses: which are floats, their limits, numpy equivalents."""
from __future__ import annotations

from dataclasses import dataclass

import ml_dtypes
import numpy as np

from tvtv.errors import Unsupported


@dataclass(frozen=True)
class FloatFormat:
    """An IEEE-754 binary format: exponent and significand bits (significand with hidden bit)."""

    name: str
    ebits: int
    sbits: int
    max_value: float
    np_dtype: object


FLOAT_FORMATS: dict[str, FloatFormat] = {
    "float16": FloatFormat("float16", 5, 11, 65504.0, np.float16),
    "bfloat16": FloatFormat("bfloat16", 8, 8, float(ml_dtypes.finfo(ml_dtypes.bfloat16).max),
                            ml_dtypes.bfloat16),
    "float32": FloatFormat("float32", 8, 24, float(np.finfo(np.float32).max), np.float32),
    "float64": FloatFormat("float64", 11, 53, float(np.finfo(np.float64).max), np.float64),
}

# (bits, signed)
INT_FORMATS: dict[str, tuple[int, bool]] = {
    "int8": (8, True), "int16": (16, True), "int32": (32, True), "int64": (64, True),
    "uint8": (8, False), "uint16": (16, False), "uint32": (32, False), "uint64": (64, False),
}


def is_float(dtype: str) -> bool:
    return dtype in FLOAT_FORMATS


def is_int(dtype: str) -> bool:
    return dtype in INT_FORMATS


def is_bool(dtype: str) -> bool:
    return dtype == "bool"


def check_supported(dtype: str, where: str = "") -> None:
    if not (is_float(dtype) or is_int(dtype) or is_bool(dtype)):
        raise Unsupported(f"dtype {dtype} is not supported{(' in ' + where) if where else ''}")


def numpy_dtype(dtype: str) -> np.dtype:
    if dtype in FLOAT_FORMATS:
        return np.dtype(FLOAT_FORMATS[dtype].np_dtype)
    if dtype == "bool":
        return np.dtype(np.bool_)
    if dtype in INT_FORMATS:
        return np.dtype(dtype)
    raise Unsupported(f"dtype {dtype} is not supported")
