"""LegalizeOps checked op by op: every op of tvtv's encoder set on at least three shapes /
attribute sets (bench/legalize_cases.py), source = the single-op Relax module, target =
`relax.transform.LegalizeOps()` of it, verdict from `tvtv.verify` (which confirms
counterexamples on the TVM VM). Writes docs/legalize.md: a per-op summary and the per-case
rows, under IEEE semantics and, with --assume, under those assumptions.

    .venv/bin/python bench/legalize_table.py --assume no-nan,no-inf,no-signed-zeros [--jobs 2]
    .venv/bin/python bench/legalize_table.py --ops relax.nn.conv2d,relax.max   # print only

Outcomes: proved, counterexample, unknown (with the reason), rejected (TVM's LegalizeOps or
the module construction refused the call: "TVM rejects: ..."), error (tvtv raised an
exception that is not Unsupported: a tvtv bug, shown with its message).
"""
from __future__ import annotations

import argparse
import math
import re
import multiprocessing as mp
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Sequence

import numpy as np

if str(Path(__file__).resolve().parent) not in sys.path:  # imported by tests
    sys.path.append(str(Path(__file__).resolve().parent))
import legalize_cases  # noqa: E402  (also puts the repository root first on sys.path)

VERDICTS = ("proved", "counterexample", "unknown", "rejected", "error")
PLAIN_TITLE = "IEEE semantics (no assumptions)"

# What a counterexample of an op means (TVM 0.27 behaviour, docs/findings.md; values quoted
# were measured on the VM). Written from the generated table; an op with a counterexample and
# no entry says so in the doc. "Spurious" entries are counterexamples tvtv reports that the VM
# does not show: they stay counterexamples in the table and are tvtv issues, not TVM's.
_NAN_RULE = "TIR max/min are `a > b ? a : b`, which drops a NaN first operand (spec: NaN propagates)"
_SPURIOUS = ("not confirmed, and the VM gives the spec's value ({}): the TIR side has no "
             "value in tvtv's model (TIR None); a tvtv encoding issue, not a TVM difference")
_NORM = ("TVM 0.27's legalization ignores center=False / scale=False and always adds beta / "
         "multiplies by gamma (VM: beta=5, center=False gives 3.66..6.34, spec -1.34..1.34); "
         "rows with center=True differ by rounding: TVM computes the variance as E[x^2] - "
         "E[x]^2 and multiplies by rsqrt (float16 instance_norm: VM -0.92578125, spec "
         "-0.921875); a row marked not confirmed shows abstract values")
_CONVT = ("TIR dilates and pads the input with explicit zeros and multiplies them by the "
          "weights: 0 * inf = NaN where the spec's sum has no such term (confirmed on the VM). "
          "Under no-nan and no-inf those products are zeros, which change no sum (a zero "
          "term is no term of a hashed sum): proved")
_POOL = ("max_pool pads with -FLT_MAX instead of -inf (a window of -inf values and padding "
         "gives -FLT_MAX), and " + _NAN_RULE + ", so a NaN in the window can be lost")
_ARG = ("TIR starts from index -1 and the dtype's {} and keeps the first element strictly "
        "{}: a row of only that value (or of {}) gives -1, and a NaN is skipped (spec, numpy: "
        "its index)")
_INT_AVG = ("integer input: TVM's legalization returns int64 where Relax infers int32, so the "
            "module's result type changes (a static difference: the VM runs both through "
            "LegalizeOps and cannot show it, TVM's own return types of the two functions "
            "confirm it: `tvm-types`); the values agree (tests/test_ops_pooling.py: "
            "the int32 sum, divided truncating)")
MEANINGS: dict[str, str] = {
    "relax.argmax": _ARG.format("lowest value (-FLT_MAX, INT_MIN)", "greater", "-inf"),
    "relax.argmin": _ARG.format("highest value (FLT_MAX, INT_MAX)", "smaller", "+inf"),
    "relax.atan2": _SPURIOUS.format("atan2(-inf, -inf) = -2.3561945, atan2(0, 0) = 0"),
    "relax.log_add_exp": ("TIR computes log(exp(a) + exp(b)), which overflows where "
                          "numpy.logaddexp does not (VM: log_add_exp(1000, 1000) = inf and "
                          "(-1000, -1000) = -inf, numpy 1000.6931 and -999.3068); the "
                          "abstraction's exp does not overflow, confirmation's large input set "
                          "shows it (TVM's own exp and log give the target inf, the spec is "
                          "a + ln 2 for equal operands)"),
    "relax.power": ("no row confirmed: the VM gives the spec's value (power(-inf, -inf) = 0), "
                    "the TIR side has no value (TIR None) or an abstract one on subnormal "
                    "inputs; a tvtv encoding issue, not a TVM difference"),
    "relax.nn.batch_norm": ("training=True: Relax documents moving_mean * momentum + "
                            "data_mean * (1 - momentum), TVM's legalization computes "
                            "(1 - momentum) * moving_mean + momentum * data_mean (PyTorch's "
                            "convention; DecomposeOpsForTraining too), so the moving statistics "
                            "differ unless momentum = 0.5 (VM: moving_mean 10, momentum 0.1 "
                            "gives 8.95 where the documentation gives 0.57)"),
    "relax.atanh": "TIR's atanh(-0) is +0 (spec: -0)",
    "relax.tanh": "TIR's tanh(-0) is +0 (spec: -0)",
    "relax.clip": "clip(NaN) gives a bound: " + _NAN_RULE,
    "relax.nn.relu": "relu(NaN) = 0: " + _NAN_RULE,
    "relax.maximum": _NAN_RULE + "; max(+0, -0) keeps -0",
    "relax.minimum": _NAN_RULE + "; min(+0, -0) keeps -0",
    "relax.max": ("the reduction starts from -FLT_MAX, not -inf (a row of -inf gives -FLT_MAX), "
                  "and " + _NAN_RULE),
    "relax.min": "the reduction starts from FLT_MAX, not +inf, and " + _NAN_RULE,
    "relax.sign": "TIR sign is `x > 0 ? 1 : (x < 0 ? -1 : 0)`: sign(NaN) = 0 (spec NaN)",
    "relax.nn.gelu_tanh": ("TIR computes (sqrt(2/pi) x) (1 + (0.044715 x) x) where the spec has "
                           "sqrt(2/pi) (x + 0.044715 x^3): the roundings differ in the last bits "
                           "(shown with TVM's own tanh in both evaluations, `ieee-spec-cpu`); "
                           "equal in real arithmetic, so op-rounding allows it"),
    "relax.nn.rms_norm": ("TIR multiplies by rsqrt(mean(x^2) + eps) where the spec divides by "
                          "sqrt(mean(x^2) + eps): the roundings differ in the last bits (VM: "
                          "-0.021077167, spec -0.021077169); equal in real arithmetic, so "
                          "op-rounding allows it"),
    "relax.floor_divide": ("TIR computes floor(a / b), where numpy.floor_divide computes from the exact "
                           "remainder fmod(a, b): where a / b rounds up to an integer they differ "
                           "(VM: -1 // -0.1 = 10 and 7 // 0.1 = 70, numpy 9 and 69)"),
    "relax.floor_mod": ("TIR computes a - floor(a / b) * b: the rounding of a / b and the sign of "
                        "a zero remainder differ from numpy.remainder (VM: 2 % -0.33333334 = 0, "
                        "numpy -5.96e-08; -1 % -1 = +0, numpy -0); in float16 a / b overflows for a "
                        "tiny divisor, so 6 % -6e-08 gives -inf (spec -0), also under no-inf (the "
                        "inf is TIR's, not the source's)"),
    "relax.nn.conv1d_transpose": _CONVT,
    "relax.nn.conv2d_transpose": _CONVT,
    "relax.nn.conv3d_transpose": _CONVT,
    "relax.nn.group_norm": _NORM,
    "relax.nn.instance_norm": _NORM,
    "relax.nn.layer_norm": _NORM,
    "relax.nn.max_pool1d": _POOL,
    "relax.nn.max_pool2d": _POOL,
    "relax.nn.max_pool3d": _POOL,
    "relax.full": ("TVM's legalization converts a float fill to bool by truncation (0.5 gives "
                   "False); numpy and astype give True (x != 0)"),
    "relax.eye_like": ("LegalizeOps ignores eye_like's dtype and builds x's dtype, so the "
                       "module's result type changes (int32 asked, float32 built; confirmed by TVM's "
                       "return types, `tvm-types`)"),
    "relax.index_tensor": ("TVM does not wrap a negative index (PyTorch wraps it once): it reads "
                           "x[-3] out of bounds (the VM returns garbage, so the UB is shown by "
                           "the IEEE model, not by execution)"),
    "relax.index_put": ("values of shape (1,) are not broadcast to the index tuples: TVM reads "
                        "values[k] out of bounds (VM: diagonal [7, 3.08e-41, 2.03e-06] for "
                        "PyTorch's [7, 7, 7])"),
    "relax.slice_scatter": ("a slice that stops before the axis end: TVM's take clips "
                            "ceil((i - start) / step) to n - 1 and reads src out of bounds for "
                            "the positions after the slice (its select drops the value; the "
                            "load is still out of bounds)"),
    "relax.quantize": ("float16 data and scale into int16: TVM adds the zero point and clamps "
                       "in float16, so 2998 + 3 rounds to 3000 (spec 3001) and the bound 32767 "
                       "becomes 32768, which overflows the int16 cast"),
    "relax.dequantize": ("TVM skips the documented clamp to the output's finite range (scale "
                         "inf or FLT_MAX gives inf), turns NaN into 65504 for float16 "
                         "(min/max drop NaN), and wraps x - zero_point in int32 "
                         "(-2147483629 - 41)"),
    "relax.bucketize": ("a NaN input: topi's binary search compares b[mid] < NaN (false) and "
                        "returns 0; PyTorch gives len(boundaries). Proved under no-nan"),
    "relax.image.affine_grid": ("TVM's align_corners coordinates step by float32((2 - 1e-7) / "
                                "(s - 1)): the last is 0.99999988, not 1 (PyTorch's linspace); "
                                "the pixel-centre ones are one ulp off for sizes 5, 6, 7"),
    "relax.sort": ("not lowered: LegalizeOps has no legalization for sort (relax.build's "
                   "DispatchSortScan lowers it to a call_packed of tvm.contrib.sort, a C++ "
                   "kernel whose NaN-blind comparator leaves rows with NaN unsorted: "
                   "docs/findings.md), so the rows check an unchanged module"),
    "relax.argsort": ("not lowered, as sort (DispatchSortScan's kernel is NaN-blind: "
                      "docs/findings.md)"),
    "relax.topk": ("not lowered, as sort (DispatchSortScan's kernel is NaN-blind, crashes on "
                   "k < 0 and returns more than k = n columns for k > n: docs/findings.md)"),
    "relax.median": ("the legalization sorts with topi.argsort, a call_packed of the C++ "
                     "kernel tvm.contrib.sort.argsort, which the TIR encoder models (its stable "
                     "order off NaN, any order in a row with NaN): proved on integers and "
                     "under no-nan; refuted on a row with NaN, where the kernel is NaN-blind "
                     "and torch.median's NaN is lost (docs/findings.md; several axes reduce "
                     "only the first, also there)"),
    "relax.hamming_window": ("the legalization rounds the angle twice, fl(fl(2 pi) * n) / "
                             "(M - 1), one ulp off the nearest float32 at n = 5 for M = 7, and "
                             "the cosine of that angle differs in the last bits of the window "
                             "(confirmed by evaluating both in IEEE arithmetic with the CPU's "
                             "cos; docs/findings.md)"),
    "relax.multinomial_from_uniform": ("not lowered: LegalizeOps has no legalization for it "
                                       "(relax.build's DispatchSampling lowers it to cumsum and "
                                       "a kernel with symbolic buffer shapes, which tvtv cannot "
                                       "read yet), so the rows check an unchanged module"),
    "relax.grad.take_backward": ("axis=-1: the legalization uses the negative axis "
                                 "unnormalized (`i < axis` in its loop bounds) and stores out "
                                 "of bounds (UB in the target; the VM returns garbage: "
                                 "docs/findings.md)"),
    "relax.grad.nll_loss_backward": ("an ignored target's class gets 0 * -1.0 * q, -0.0 where "
                                     "PyTorch leaves +0.0 (proved under no-signed-zeros); with "
                                     "the default ignore_index -100 an ignored target reads "
                                     "weights[-100] out of bounds (UB in the target)"),
    "relax.grad.max_pool2d_backward": ("topi's pool_grad picks its argmax from (-FLT_MAX, -1) "
                                       "and never keeps a NaN: a NaN window routes its gradient "
                                       "to a later tap, an all -inf or -FLT_MAX (float16: "
                                       "-65504) window nowhere, where PyTorch picks the NaN or "
                                       "the first tap (also under the assumptions); overlapping "
                                       "windows read its argmax buffer out of bounds (UB)"),
    "relax.image.resize3d": ("cubic_exclude=1: topi's _resize_3d masks the depth weights with "
                             "the width's tap positions against the height and uses the width's "
                             "raw weights, where ONNX's exclude_outside renormalises each "
                             "dimension's own weights (confirmed on the VM; docs/findings.md)"),
    "relax.meshgrid": ("one input: TVM types the result as a 1-tuple, LegalizeOps returns the "
                       "bare tensor (the result's nesting changes; confirmed by TVM's return "
                       "types). The unknown row: for \"xy\" TVM infers the \"ij\" shape while "
                       "its legalization computes numpy's (docs/findings.md)"),
    "relax.nn.nll_loss": ("TIR computes Select(t != ignore_index, (0 - p[n, t]) * w[t], 0): "
                          "Select evaluates both operands, so an ignored target (the default "
                          "-100) reads p[n, -100] out of bounds (UB; the VM reads garbage and "
                          "drops it); and 0 - p gives +0.0 where the documented -p * w gives "
                          "-0.0 for p = +0.0 (reduction none)"),
    "relax.nn.attention": ("causal_mask=TopLeft: TVM's legalization takes a masked score as 0 "
                           "in the row max (trilu before the softmax), so a row whose kept "
                           "scores are all very negative underflows to 0/0 = NaN (q = 100, "
                           "k = -1000: VM NaN, the softmax of the kept scores 100); shown with "
                           "TVM's own exp (ieee-spec-cpu)"),
    "relax.nn.attention_bias": ("as relax.nn.attention: a masked score counts as 0 in the "
                                "row max, so very negative kept scores underflow to NaN"),
    "relax.nn.avg_pool1d": _INT_AVG,
    "relax.nn.avg_pool2d": _INT_AVG,
    "relax.nn.avg_pool3d": _INT_AVG,
}


@dataclass
class Outcome:
    """One case under one set of assumptions."""

    label: str
    verdict: str
    seconds: float
    detail: str = ""

    def row(self) -> str:
        return f"| {self.label} | {self.verdict} | {self.seconds:.1f} | {self.detail} |"


def fmt(v: Any) -> str:
    if isinstance(v, float) and math.isnan(v):
        return "NaN"
    if isinstance(v, (np.floating, np.integer, np.bool_)):
        return fmt(v.item())
    return repr(v)


def _one_line(s: str, n: int = 160) -> str:
    s = " ".join(str(s).split()).replace("|", "/")
    return s if len(s) <= n else s[: n - 3] + "..."


def _array(v: Any) -> str:
    if isinstance(v, (tuple, list)):
        return "(" + ", ".join(_array(x) for x in v) + ")"
    a = np.asarray(v).reshape(-1)
    text = np.array2string(a[:6], separator=",", max_line_width=10**6)
    return _one_line(text + ("..." if a.size > 6 else ""), 400)


def check_case(case: legalize_cases.Case, assume: Sequence[str], timeout: float) -> Outcome:
    """Build, legalize and verify one case; every failure becomes an outcome."""
    import tvtv
    from tvm import relax
    from tvtv.errors import Unsupported

    t0 = time.perf_counter()
    try:
        mod = case.build()
        tgt = relax.transform.LegalizeOps()(mod)
    except Exception as e:  # noqa: BLE001 (TVM's errors: any type)
        msg = str(e).strip().splitlines()[-1] if str(e).strip() else type(e).__name__
        return Outcome(case.label, "rejected", time.perf_counter() - t0,
                       "TVM rejects: " + _one_line(msg))
    import tvm_ffi
    # an op with no legalization registered (sort, argsort, topk: relax.build lowers them
    # later, in DispatchSortScan) comes back unchanged; its row still checks the module pair,
    # but says that nothing was lowered
    kept = "not lowered: LegalizeOps leaves the call in place" \
        if tvm_ffi.structural_equal(mod, tgt) else ""
    try:
        (r,) = tvtv.verify(mod, tgt, timeout=timeout, assume=list(assume)).results
    except Unsupported as e:
        return Outcome(case.label, "unknown", time.perf_counter() - t0,
                       "unsupported: " + _one_line(str(e)))
    except Exception as e:  # noqa: BLE001 (a tvtv bug: recorded, not hidden)
        return Outcome(case.label, "error", time.perf_counter() - t0,
                       f"tvtv raised {type(e).__name__}: {_one_line(str(e))}")
    if r.verdict == "counterexample":
        c = r.counterexample
        ins = "; ".join(f"{k}={_array(v)}" for k, v in c.inputs.items())
        where = f"output {c.output} " if c.output else ""
        if c.kind == "value":
            # the values that confirmed it (VM runs, or the IEEE evaluation of the Relax
            # specification) when it was confirmed; the solver model's otherwise (those may
            # come from an abstraction: an abstract magnitude, an uninterpreted function)
            sv, tv = c.executed_values if r.confirmed and c.executed_values is not None \
                else (c.source_value, c.target_value)
            what = f"{where}at {c.index}: Relax {fmt(sv)}, TIR {fmt(tv)}"
        else:
            what = f"{c.kind}: {_one_line(c.message)}"
        by = getattr(c, "confirmed_by", None)
        shown = {True: f"confirmed by {by or 'vm'}", False: "not confirmed",
                 None: "not confirmed (not run)"}[r.confirmed]
        detail = f"{what} (inputs {ins}) [{shown}]"
    else:
        detail = _one_line(r.reason or "", 300)
    return Outcome(case.label, r.verdict, r.seconds, "; ".join(x for x in (kept, detail) if x))


def _task(args: tuple[str, int, tuple[str, ...], float]) -> Outcome:
    op, i, assume, timeout = args
    return check_case(legalize_cases.cases_for(op)[i], assume, timeout)


# Address space per worker: a case that needs more fails fast (Z3 raises out of memory, an
# `error` row) instead of swapping the machine until the OOM killer ends it (one Z3 query on
# nn.layer_norm (4)f16 took over 24 GB; `memory_max_size` does not bound it). Two workers
# fit in the 24 GB development machine with room for the VM children they start.
WORKER_MEMORY = 8 << 30


def _limit_memory(limit: int | None) -> None:
    """Worker initializer: cap the process's address space at `limit` bytes, and Z3's memory
    at 5/8 of it, so that a query that would grow past it gives up (unknown) before an
    allocation fails (`tvtv.solvers.limit_z3_memory`)."""
    import resource
    if limit is not None:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        from tvtv.solvers import limit_z3_memory, z3_memory_mb
        limit_z3_memory(z3_memory_mb(5 * limit // 8))


# Cases per worker before its pool is replaced: Z3 keeps every case's terms, and one long
# process ran out of 24 GB after ~300 cases (the OOM killer).
CASES_PER_WORKER = 5


def run(ops: Sequence[str], assume: Sequence[str], timeout: float, jobs: int,
        echo: bool = True, task: Any = None, memory: int | None = WORKER_MEMORY,
        per_worker: int = CASES_PER_WORKER) -> list[Outcome]:
    """Outcomes of every case of `ops` (in op order, then case order); `task` runs one case
    in a worker (default `_task`) whose address space is capped at `memory` bytes. Cases go
    in chunks of `per_worker` per worker, each chunk to a new pool. When a worker dies, the
    first unfinished case runs alone in a new process: dying there, it is an `error` row;
    the others go on."""
    task = task or _task
    tasks = [(op, i, tuple(assume), timeout)
             for op in ops for i in range(len(legalize_cases.cases_for(op)))]
    out: dict[int, Outcome] = {}
    suspect: int | None = None
    while len(out) < len(tasks):
        workers = 1 if suspect is not None else max(1, jobs)
        batch = [suspect] if suspect is not None else \
            [k for k in range(len(tasks)) if k not in out][:per_worker * workers]
        # worker processes even for one job, a new pool for every chunk of cases (see
        # CASES_PER_WORKER). Not multiprocessing.Pool: it loses the case of a worker that
        # dies and then waits forever (measured: one Z3 query on nn.layer_norm (4)f16 took
        # over 24 GB). Not ProcessPoolExecutor's max_tasks_per_child either: on Python 3.11
        # a worker that retires is not replaced, and the run waited forever after 10 cases.
        with ProcessPoolExecutor(workers, mp_context=mp.get_context("spawn"),
                                 initializer=_limit_memory, initargs=(memory,)) as pool:
            futures = [(k, pool.submit(task, tasks[k])) for k in batch]
            broken = False
            for k, fut in futures:
                try:
                    o = fut.result()
                except BrokenProcessPool:
                    if suspect is None:
                        broken = True
                        break
                    op, i = tasks[k][0], tasks[k][1]
                    o = Outcome(legalize_cases.cases_for(op)[i].label, "error", 0.0,
                                "the worker process died on this case, run alone (out of memory?)")
                out[k] = o
                if echo:
                    print(o.row(), flush=True)
        suspect = min(k for k in range(len(tasks)) if k not in out) if broken else None
    return [out[k] for k in range(len(tasks))]


def op_of(label: str) -> str:
    return "relax." + label.split(" ", 1)[0]


def _counts(outs: Sequence[Outcome]) -> str:
    return " / ".join(str(sum(o.verdict == v for o in outs)) for v in VERDICTS)


def render(ops: Sequence[str], sections: list[tuple[str, list[str], list[Outcome]]],
           seconds: float, argv: str) -> str:
    lines = [
        "# LegalizeOps, op by op", "",
        "Source: the single-op Relax module (its specification, docs/semantics.md); target: "
        "`relax.transform.LegalizeOps()` of it, encoded through the PrimFunc bodies (TIR means "
        "TVM's CPU code). Every op of tvtv's encoder set (`tvtv.encode.registry."
        "supported_ops()`, "
        f"{len(ops)} ops) on at least three shapes / attribute sets: GenCoG's op specifications "
        "solved with fixed seeds, or hand-written cases where the op has them "
        "(`bench/legalize_cases.py`); tensors of at most 64 elements. Verdicts come from "
        "`tvtv.verify`, which also runs every counterexample on the TVM VM.", "",
        "Outcomes: **proved**; **counterexample** (the values, the inputs, and whether the VM "
        "showed it); **unknown** (with the reason: a solver timeout, an unsupported construct); "
        "**rejected** (TVM itself refused to build or legalize the call); **error** (tvtv raised "
        "an exception: a tvtv bug). A counterexample marked `not confirmed` was shown neither "
        "by running both modules on the TVM VM (which legalizes the source too) nor by the "
        "IEEE evaluation of the specification (its values go through uninterpreted functions); "
        "it stands because the IEEE model separates source and target on its inputs for every "
        "interpretation of those functions, and its printed values are the solver's. A "
        "counterexample that nothing shows or separates is `unknown` (\"unconfirmed "
        "counterexample\"). The summary says where rows are suspect (measured on the VM while "
        "writing it).", "",
        f"Regenerate (took {seconds / 60:.1f} min on the 2-core development machine, shared with "
        f"other work): `.venv/bin/python bench/legalize_table.py {argv}`. Partial runs: "
        "`--ops relax.max,relax.nn.conv2d` (printed, not written unless `--out` is given); "
        "`--ops OP,... --update` re-checks those ops and replaces their rows here; "
        "`--render-only` re-renders this file from its rows (after editing the explanations, "
        "`MEANINGS` in bench/legalize_table.py).", "",
        "## Summary", "",
        "Counts are proved / counterexample / unknown / rejected / error.", "",
        "| op | cases | " + " | ".join(t for t, _, _ in sections) + " | what a counterexample (or an unknown or unlowered row) means |",
        "|---|---|" + "---|" * len(sections) + "---|",
    ]
    by_op = [{op: [o for o in outs if op_of(o.label) == op] for op in ops}
             for _, _, outs in sections]
    totals = []
    for op in ops:
        n = len(by_op[0][op])
        has_cex = any(o.verdict == "counterexample" for s in by_op for o in s[op])
        # a counterexample needs an explanation; an unknown, rejected or unlowered row may
        # have one (an op whose rows are all proved shows none: its entry may be history)
        noted = any(o.verdict != "proved" or o.detail.startswith("not lowered")
                    for s in by_op for o in s[op])
        mean = MEANINGS.get(op, "(no explanation written yet)" if has_cex else "") if noted else ""
        lines.append(f"| {op} | {n} | " + " | ".join(_counts(s[op]) for s in by_op)
                     + f" | {mean} |")
    for title, _, outs in sections:
        totals.append(f"{title}: {_counts(outs)} of {len(outs)} cases")
    slow = sorted((o for _, _, outs in sections for o in outs), key=lambda o: -o.seconds)[:3]
    lines += ["", "Totals (proved / counterexample / unknown / rejected / error): "
              + "; ".join(totals) + ".", "",
              "Slowest cases (the per-query timeout bounds each solver query, not a case): "
              + "; ".join(f"{o.label} ({o.seconds:.0f} s)" for o in slow) + ".", ""]
    for title, _, outs in sections:
        lines += [f"## {title}", "", "| case | verdict | s | counterexample / reason |",
                  "|---|---|---|---|"]
        lines += [o.row() for o in outs]
        lines.append("")
    return "\n".join(lines)


_ROW = re.compile(r"^\| (.+?) \| (" + "|".join(VERDICTS) + r") \| ([0-9.]+) \| (.*) \|$")


def parse_doc(text: str) -> list[tuple[str, list[Outcome]]]:
    """The per-case sections of a generated docs/legalize.md: (title, outcomes) in order."""
    sections: list[tuple[str, list[Outcome]]] = []
    for line in text.splitlines():
        if line.startswith("## "):
            title = line[3:].strip()
            if title == PLAIN_TITLE or title.startswith("assuming "):
                sections.append((title, []))
            continue
        m = _ROW.match(line)
        if m and sections:
            sections[-1][1].append(Outcome(m.group(1), m.group(2), float(m.group(3)),
                                           m.group(4).strip()))
    return sections


def main(argv: Optional[Sequence[str]] = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--assume", default="", help="e.g. no-nan,no-inf,no-signed-zeros")
    ap.add_argument("--timeout", type=float, default=10.0, help="seconds per solver query")
    ap.add_argument("--jobs", type=int, default=1, help="worker processes (spawn)")
    ap.add_argument("--ops", default="", help="comma-separated op names (partial run)")
    ap.add_argument("--out", default=None, help="default docs/legalize.md for a full run")
    ap.add_argument("--update", action="store_true",
                    help="with --ops: re-check those ops and replace their rows in --out "
                         "(docs/legalize.md), under the sections it already has")
    ap.add_argument("--render-only", action="store_true",
                    help="re-render --out (docs/legalize.md) from its own rows (after editing "
                         "MEANINGS), without checking anything")
    args = ap.parse_args(argv)
    if args.render_only or args.update:
        path = Path(args.out or "docs/legalize.md")
        text = path.read_text()
        m = re.search(r"took ([0-9.]+) min.*?`\.venv/bin/python bench/legalize_table\.py ?([^`]*)`",
                      text)
        secs, argv_text = (float(m.group(1)) * 60, m.group(2).strip()) if m else (0.0, "")
        all_ops = legalize_cases.all_ops()
        parsed = parse_doc(text)
        if args.update:
            ops = [o if o.startswith("relax.") else "relax." + o
                   for o in args.ops.split(",") if o]
            fresh = []
            for title, outs in parsed:
                assume = title.removeprefix("assuming ").split(", ") \
                    if title.startswith("assuming ") else []
                print(f"## {title}", flush=True)
                new = run(ops, assume, args.timeout, args.jobs)
                merged = [o for o in outs if op_of(o.label) not in ops] + new
                merged.sort(key=lambda o: all_ops.index(op_of(o.label)))  # stable: case order
                fresh.append((title, merged))
            parsed = fresh
        out_text = render(all_ops, [(t, [], outs) for t, outs in parsed], secs, argv_text)
        path.write_text(out_text + "\n")
        return
    ops = legalize_cases.all_ops()
    if args.ops:
        want = [o if o.startswith("relax.") else "relax." + o for o in args.ops.split(",") if o]
        unknown = [o for o in want if o not in ops]
        if unknown:
            raise SystemExit(f"not in the encoder's op set: {', '.join(unknown)}")
        ops = want
    out = args.out if args.out is not None else (None if args.ops else "docs/legalize.md")
    extra = [a for a in args.assume.split(",") if a]
    specs = [(PLAIN_TITLE, [])] + ([(f"assuming {', '.join(extra)}", extra)] if extra else [])
    t0 = time.perf_counter()
    sections = []
    for title, assume in specs:
        print(f"## {title}", flush=True)
        sections.append((title, assume, run(ops, assume, args.timeout, args.jobs)))
    seconds = time.perf_counter() - t0
    argv_text = " ".join(x for x in (f"--assume {args.assume}" if args.assume else "",
                                     f"--jobs {args.jobs}" if args.jobs > 1 else "") if x)
    text = render(ops, sections, seconds, argv_text)
    print(f"done in {seconds:.0f} s", flush=True)
    if out:
        Path(out).write_text(text + "\n")


if __name__ == "__main__":
    main()
