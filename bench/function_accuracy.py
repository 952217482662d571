"""Measurement: how far TVM's legalized float functions are from x near 0, and float16 erf
against the correctly rounded erf (docs/findings.md, "Accuracy of TVM's CPU functions").

For each function and dtype it prints the largest |f(x)| / |x| over every finite float16 /
bfloat16 value and a stride of float32 (every 4099th bit pattern, `_finite_values` of
tests/test_tir_conformance.py), with its argument, and the largest over |x| < 1e-3; then the
float16 values where TVM's erf is not the correctly rounded one. A function TVM cannot compile
in a dtype ("unknown intrinsic") is listed as such. Measured 2026-12-06: tanh 1.9999
(float32), 1.998 (float16), 1.984 (bfloat16); erf 1.25 (float16), 1.128 (float32); sin, atan,
asinh 1.0; float16 erf off at ±0.001482 only. About 30 s.

    .venv/bin/python bench/function_accuracy.py
"""
from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

FUNCTIONS = ("erf", "tanh", "sin", "atan", "asinh")


def main() -> None:
    from test_tir_conformance import _finite_values, _legalized_on_the_vm

    for dtype in ("float16", "bfloat16", "float32"):
        a = _finite_values(dtype)
        a = a[a.astype(np.float32) != 0]
        xs = np.abs(a.astype(np.float64))
        for name in FUNCTIONS:
            try:
                (r,) = _legalized_on_the_vm([name], a, dtype)
            except Exception as err:        # noqa: BLE001 (TVM's error type varies)
                print(f"{dtype:9} {name:6} cannot compile: {str(err).splitlines()[0][:60]}")
                continue
            ratio = np.abs(r.astype(np.float64)) / xs
            ok = ~np.isnan(ratio)
            i = int(np.argmax(np.where(ok, ratio, -1)))
            small = ok & (xs < 1e-3)
            print(f"{dtype:9} {name:6} max |f(x)|/|x| {ratio[i]:.6g} at x = {a[i]!r}; "
                  f"for |x| < 1e-3: {ratio[small].max():.6g}")
    a = _finite_values("float16")
    (half,) = _legalized_on_the_vm(["erf"], a, "float16")
    exact = np.array([math.erf(float(v)) for v in a]).astype(np.float16)
    off = exact != half
    print("float16 erf not correctly rounded at", a[off].tolist(), "TVM", half[off].tolist(),
          "correctly rounded", exact[off].tolist())


if __name__ == "__main__":
    main()
