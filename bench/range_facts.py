"""Measurement: every finite float32 through TVM's legalized bounded functions on the VM.

`tvtv.absfp.special.UnaryRule.bound` says tanh, erf, sin and cos stay within [-1, 1] and
sigmoid within [0, 1], never NaN, on every finite argument; `positive_range` and
`negative_range` say exp(x) is ≥ 1 for x > 0 and in [0, 1] for x < 0; `nan_free` says exp,
log, sqrt, rsqrt, tan, atan, sinh, cosh and asinh give no NaN on a finite nonzero argument
(a positive one for log, sqrt, rsqrt), and `finite` that log, sqrt, rsqrt, atan and asinh
give no ±inf there either (the `inf` column counts those arguments); the encoders rely on
them in the dtypes of `special.BOUND_DTYPES`. The tests run every float16/bfloat16 value and a stride of
float32 (`tests/test_tir_conformance.py`); this script runs all 4,278,190,080 finite float32
bit patterns through one LegalizeOps'd module on the VM, in chunks of 2^22, and prints each
function's minimum, maximum and NaN count (measured 2026-11-26: within the bounds, no NaN,
127 s for all five on this machine, 485 MiB; exp's sign ranges hold too, measured
2026-11-26; the nine `nan_free` functions no NaN in their domains, 303 s, and the five
`finite` ones no inf there, measured 2026-12-06).

    .venv/bin/python bench/range_facts.py [--functions tanh,sigmoid,erf,sin,cos] [--chunks N]

`--chunks N` stops after N chunks of each sign (a quick look; the claim needs all of them).
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tvtv.absfp import special  # noqa: E402

CHUNK = 1 << 22
FINITE_END = 0x7F800000          # the bit pattern of +inf: everything below is finite


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--functions", default=",".join(
        n for n, r in special.UNARY_RULES.items()
        if r.bound is not None or r.positive_range is not None or r.negative_range is not None
        or r.nan_free))
    ap.add_argument("--chunks", type=int, default=None)
    args = ap.parse_args()
    import tvm
    from tvm import relax

    from tvtv.ir import tvm_bridge

    names = args.functions.split(",")
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType((CHUNK,), "float32"))
    with bb.function("main", [x]):
        with bb.dataflow():
            outs = [bb.emit(getattr(relax.op, n)(x)) for n in names]
            gv = bb.emit_output(relax.Tuple(outs))
        bb.emit_func_output(gv)
    fn = tvm_bridge.build_vm(relax.transform.LegalizeOps()(bb.get()))["main"]
    lo = {n: np.inf for n in names}
    hi = {n: -np.inf for n in names}
    # the same per sign of the argument (for the sign ranges)
    side = {(n, s): [np.inf, -np.inf] for n in names for s in (0, 1)}
    nans = {n: 0 for n in names}
    infs = {n: 0 for n in names}        # ±inf on nonzero arguments in the domain
    inp = tvm.runtime.empty((CHUNK,), "float32", tvm.cpu())
    start, count = time.perf_counter(), 0
    ends = FINITE_END if args.chunks is None else min(FINITE_END, args.chunks * CHUNK)
    for sign in (0, 1):
        for s in range(0, ends, CHUNK):
            n = min(CHUNK, FINITE_END - s)
            bits = np.arange(s, s + CHUNK, dtype=np.uint32) | np.uint32(sign << 31)
            inp.copyfrom(bits.view(np.float32))
            out = fn(inp)
            for k, name in enumerate(names):
                r = out[k].numpy()[:n]
                # NaN counts in the function's domain: log, sqrt, rsqrt of a negative
                # number are NaN by their rule (`nan_below_zero`)
                if not (sign == 1 and special.UNARY_RULES[name].nan_below_zero):
                    inside = r[bits[:n] & 0x7FFFFFFF != 0]
                    nans[name] += int(np.isnan(inside).sum())
                    infs[name] += int(np.isinf(inside).sum())
                lo[name] = min(lo[name], float(np.nanmin(r)))
                hi[name] = max(hi[name], float(np.nanmax(r)))
                nz = r[bits[:n] & 0x7FFFFFFF != 0]       # x = ±0 is a special point
                if nz.size:
                    seen = side[(name, sign)]
                    seen[0], seen[1] = min(seen[0], float(np.nanmin(nz))), max(seen[1], float(np.nanmax(nz)))
            count += n
    print(f"{count:,} finite float32 values in {time.perf_counter() - start:.0f} s")
    print(f"{'function':10s} {'bound':>6s} {'min':>10s} {'max':>10s} {'NaN':>5s} {'inf':>9s}  holds")
    for name in names:
        rule = special.UNARY_RULES[name]
        holds = nans[name] == 0 and (infs[name] == 0 or not rule.finite)
        if rule.bound is not None:
            low = 0.0 if rule.nonneg else -rule.bound
            holds = holds and low <= lo[name] and hi[name] <= rule.bound
        for sign, rng in ((0, rule.positive_range), (1, rule.negative_range)):
            if rng is not None:
                seen = side[(name, sign)]
                holds = holds and rng[0] <= seen[0] and seen[1] <= rng[1]
                print(f"  {name} on {'positive' if sign == 0 else 'negative'} x: "
                      f"{seen[0]:.6g} .. {seen[1]:.6g} (claimed {rng[0]:g} .. {rng[1]:g})")
        print(f"{name:10s} {rule.bound!s:>6s} {lo[name]:10.6g} {hi[name]:10.6g} {nans[name]:5d} "
              f"{infs[name]:9d}  {holds}")


if __name__ == "__main__":
    main()
