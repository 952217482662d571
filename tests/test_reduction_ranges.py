"""Ranges of TIR reductions and across call_tir (`tvtv.encode.tir.ranges.sum_range`,
`reduction_range`; `PrimFuncEncoder`'s per-side table of tensor ranges): each rule against
numpy sums in several orders and roundings on random and extreme values, and the proof they
make possible (a mean of clipped values is finite, so FuseTIR's folded `x - x` is right),
with its twin whose clip bound lets the sum overflow, refuted and shown on the VM."""
from __future__ import annotations

import math

import numpy as np
import pytest
import tvm
from tvm.script import ir as I
from tvm.script import relax as R
from tvm.script import tirx as T

import tvtv
from tvtv.absfp.dtypes import FLOAT_FORMATS, numpy_dtype
from tvtv.encode.tir import ranges

DTYPES = ("float16", "bfloat16", "float32", "float64")


def _inside(r: ranges.Range, v: float) -> bool:
    return (r.nan and math.isnan(v)) or (not math.isnan(v) and r.lo <= v <= r.hi)


def _sums(start: float, xs: np.ndarray, nd: np.dtype) -> list[float]:
    """`start + xs` summed one by one in `nd`: in index order, reversed, from the largest
    magnitude down, and (float16, bfloat16) each step computed in float32 and narrowed, as
    TVM's CPU code computes half-precision arithmetic."""
    out = []
    orders = [xs, xs[::-1], xs[np.argsort(-np.abs(xs.astype(np.float64)))]]
    with np.errstate(all="ignore"):
        for seq in orders:
            acc = nd.type(start)
            for x in seq:
                acc = nd.type(acc + x)
            out.append(float(acc))
            if nd.itemsize < 4:
                acc32 = nd.type(start)
                for x in seq:
                    acc32 = nd.type(np.float32(acc32) + np.float32(x))
                out.append(float(acc32))
    return out


def _smallest_subnormal(dtype: str) -> float:
    fmt = FLOAT_FORMATS[dtype]
    return 2.0 ** (2 - 2 ** (fmt.ebits - 1) - (fmt.sbits - 1))


def _draws(r: ranges.Range, n: int, rng: np.random.Generator, dtype: str) -> list[np.ndarray]:
    """Element vectors of `n` values in `r`: all at one end (the worst case for the bound),
    uniform, alternating ends (cancellation), and tiny values (subnormal partial sums)."""
    nd = numpy_dtype(dtype)
    tiny = _smallest_subnormal(dtype)
    lo, hi = np.asarray(r.lo, nd), np.asarray(r.hi, nd)
    vecs = [np.full(n, lo, nd), np.full(n, hi, nd),
            rng.uniform(r.lo, r.hi, n).astype(nd),
            np.where(np.arange(n) % 2 == 0, lo, hi).astype(nd)]
    if r.lo <= tiny <= r.hi:
        vecs.append(np.full(n, tiny, nd))
    return [v[(v >= r.lo) & (v <= r.hi)] for v in vecs]


@pytest.mark.parametrize("dtype", DTYPES)
def test_sum_range_holds_every_order_and_rounding(dtype):
    """`sum_range` encloses numpy's sums of at most n elements drawn from the term's range
    (with a start from its range) in every order tried, and is no looser than its margin.""" 
    nd = numpy_dtype(dtype)
    rng = np.random.default_rng(5)
    sizes = {"float16": (1, 7, 48, 200), "bfloat16": (1, 7, 30), "float32": (1, 48, 1000),
             "float64": (1, 48, 1000)}[dtype]
    checked = 0
    for n in sizes:
        for _ in range(12):
            scale = 10.0 ** rng.integers(-2, 3)
            a, b = sorted(float(v) for v in rng.normal(0, scale, 2).astype(nd))
            term = ranges.Range(a, b)
            c = float(nd.type(rng.normal(0, scale)))
            start = ranges.Range(c, c)
            r = ranges.sum_range(start, term, n, dtype)
            assert r.finite and not r.nan, (dtype, n, term, r)
            # no looser than Higham's margin (twice the unit roundoff) and one step outward
            nu = n * 2.0 ** (1 - FLOAT_FORMATS[dtype].sbits)
            margin = nu / (1 - nu) * (abs(c) + n * term.magnitude)
            exact_hi = c + max(0.0, n * b)
            step = float(np.spacing(np.asarray(max(abs(r.hi), 1e-30), nd)))
            assert r.hi <= exact_hi + margin + step, (term, n, r)
            for xs in _draws(term, n, rng, dtype):
                for k in (len(xs), len(xs) // 2):     # fewer terms than n are covered too
                    bad = [v for v in _sums(c, xs[:k], nd) if not _inside(r, v)]
                    assert not bad, (dtype, n, k, term, c, r, bad)
                    checked += 1
    assert checked >= 100


def test_sum_range_of_a_clipped_mean_is_tight():
    """A mean's sum of 48 elements of clip(x, -1, 1) lies in [-48, 48] up to a rounding
    margin far below 1, so the mean is finite; 48 elements clipped to ±3e38 may overflow."""
    r = ranges.sum_range(ranges.Range(0.0, 0.0), ranges.Range(-1.0, 1.0), 48, "float32")
    assert -48.001 < r.lo <= -48.0 and 48.0 <= r.hi < 48.001
    mean = ranges.arith("div", r, ranges.Range(48.0, 48.0), "float32")
    assert mean.finite and mean.magnitude < 1.001
    big = ranges.sum_range(ranges.Range(0.0, 0.0), ranges.Range(-3e38, 3e38), 48, "float32")
    assert not big.finite


def test_sum_range_gives_up_where_its_bound_fails():
    """No range where n·u reaches 1/2 (bfloat16's 8 bits over 64 terms), a NaN start or term
    makes NaN possible, and an unbounded term gives nothing."""
    one = ranges.Range(1.0, 1.0)
    zero = ranges.Range(0.0, 0.0)
    assert ranges.sum_range(zero, one, 63, "bfloat16").finite
    assert ranges.sum_range(zero, one, 64, "bfloat16") == ranges.TOP
    assert ranges.sum_range(zero, ranges.Range(-1.0, 1.0, True), 4, "float32").nan
    assert ranges.sum_range(ranges.Range(0.0, 0.0, True), one, 4, "float32").nan
    assert ranges.sum_range(zero, ranges.TOP, 4, "float32") == ranges.TOP
    assert ranges.sum_range(zero, ranges.Range(0.0, math.inf), 4, "float32") == ranges.TOP


def _tir_max(a: float, b: float) -> float:
    return a if a > b else b        # TVM's CPU code (tvtv/encode/tir/intrinsics.py)


def _tir_min(a: float, b: float) -> float:
    return a if a < b else b


@pytest.mark.parametrize("op", ["max", "min"])
@pytest.mark.parametrize("acc_first", [True, False])
def test_max_min_reduction_ranges_follow_the_fold(op, acc_first):
    """The range of `acc = T.max(acc, e)` (or `T.max(e, acc)`) folded from a start over any
    number of steps (zero included) holds every fold of drawn values, NaN where TIR's rule
    lets a NaN through."""
    fn = _tir_max if op == "max" else _tir_min
    rng = np.random.default_rng(13)
    starts = [ranges.Range(-3.4028234663852886e38, -3.4028234663852886e38),
              ranges.Range(0.0, 0.0), ranges.Range(5.0, 5.0)]
    terms = [ranges.Range(-1.0, 1.0), ranges.Range(-2.0, 3.0, True), ranges.Range(10.0, 20.0)]
    for start in starts:
        for term in terms:
            r = ranges.reduction_range(op, start, term, 8, "float32", acc_first)
            assert r != ranges.TOP
            pool = np.concatenate([[term.lo, term.hi], rng.uniform(term.lo, term.hi, 6),
                                   [np.nan] if term.nan else []])
            for _ in range(200):
                k = int(rng.integers(0, 9))
                acc = start.lo
                for x in rng.choice(pool, k):
                    acc = fn(acc, float(x)) if acc_first else fn(float(x), acc)
                assert _inside(r, acc), (op, acc_first, start, term, r, acc)
    assert ranges.reduction_range("mul", ranges.Range(1.0, 1.0), ranges.Range(0.5, 2.0), 4,
                                  "float32", True) == ranges.TOP


def _clipped_mean_self_difference(bound: str) -> tvm.IRModule:
    """`max(m - m)` over the last axis, m = mean over 48 rows of clip(x, -bound, bound).
    FuseTIR fuses the expand_dims, subtract and max, and TVM's simplifier folds the fused
    `m - m` to 0 (docs/findings.md); the source computes it, NaN for an infinite m."""
    text = f'''
@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((48, 2), dtype="float32")) -> R.Tensor((2, 1), dtype="float32"):
        with R.dataflow():
            c = R.clip(x, T.float64(-{bound}), T.float64({bound}))
            m = R.mean(c, axis=[0], keepdims=False)
            e = R.expand_dims(m, axis=[1])
            d = R.subtract(e, e)
            y = R.max(d, axis=[1], keepdims=True)
            R.output(y)
        return y
'''
    return tvm.script.from_source(text, extra_vars={"I": I, "R": R, "T": T})


@pytest.mark.slow
def test_clipped_mean_minus_itself_is_proved_and_overflowing_twin_refuted():
    """Through call_tir: the clip's range reaches the mean's PrimFunc, the sum's range makes
    the mean finite, so the source's `m - m` is +0 as the target's folded one (unknown before:
    FuseTIR's seed-5 graph 24, reduced). With clip bounds of ±3e38 the sum of 48 elements may
    overflow: no range, and the difference (inf - inf = NaN against 0) is shown on the VM."""
    (ok,) = tvtv.check_pass("FuseTIR", _clipped_mean_self_difference("1.0"), timeout=30).results
    assert ok.verdict == "proved", ok.to_dict()
    assert any(lv.endswith("TIR value ranges: stated") for lv in ok.levels), ok.levels
    (bad,) = tvtv.check_pass("FuseTIR", _clipped_mean_self_difference("3e38"),
                             timeout=30).results
    assert bad.verdict == "counterexample" and bad.confirmed, bad.to_dict()
