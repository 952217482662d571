"""Graph inputs solved for so that computed tensors take given values (tvtv/preimage.py), and
cvc5's model read back as bits (tvtv/solvers.cvc5_bits).

Every answer is checked by evaluating the module on it (numpy): a pre-image is only a
candidate, so the tests hold it to the values it promises. The twins: values no input can
produce (tanh beyond 1), and values that would need exp away from the points where every C
library agrees, give None."""
from __future__ import annotations

import numpy as np
import z3
from tvm.script import ir as I
from tvm.script import relax as R

from tvtv import preimage
from tvtv.ir import relax_reader
from tvtv.solvers import cvc5_bits

FLT_MAX = float(np.finfo(np.float32).max)


@I.ir_module
class Doubled:
    @R.function
    def main(x: R.Tensor((3,), "float32"), y: R.Tensor((2,), "float32")):
        with R.dataflow():
            d = R.add(x, x)
            t = R.tanh(d)
            e = R.exp(y)
            R.output(t, e)
        return (t, e)


@I.ir_module
class ExpMatmul:
    @R.function
    def main(x: R.Tensor((4,), "float32"), w: R.Tensor((3, 4), "float32")):
        with R.dataflow():
            e = R.exp(x)
            wt = R.permute_dims(w, axes=[1, 0])
            m = R.matmul(e, wt)
            s = R.add(m, m)
            R.output(s)
        return s


@I.ir_module
class RowSum:
    @R.function
    def main(x: R.Tensor((2, 4), "float32")):
        with R.dataflow():
            s = R.sum(x, axis=[1], keepdims=False)
            R.output(s)
        return s


def _prog(mod):
    return relax_reader.read_module(mod)


def test_prefix_cuts_after_the_named_bindings():
    fn = _prog(Doubled).functions["main"]
    cut = preimage.prefix(fn, ["d"])
    assert [b.name for b in cut.body.bindings] == ["d"]
    assert [p.name for p in cut.params] == ["x", "y"]
    both = preimage.prefix(fn, ["e", "x"])       # a parameter may be named too
    assert [b.name for b in both.body.bindings] == ["d", "t", "e"]
    assert preimage.prefix(fn, ["nowhere"]) is None


def test_a_doubled_value_is_halved():
    want = np.array([-FLT_MAX, 3.0, -0.0], dtype=np.float32)
    got = preimage.preimage(_prog(Doubled), "main", ["d"], [want])
    assert got is not None and set(got) == {"x"}     # y is not read on the way
    x = got["x"]
    assert np.isfinite(x).all()
    np.testing.assert_array_equal(np.signbit(x + x), np.signbit(want))
    np.testing.assert_array_equal(x + x, want)


def test_values_no_input_produces_have_no_preimage():
    """tanh stays within [-1, 1] (its range fact), so no input makes it 2."""
    got = preimage.preimage(_prog(Doubled), "main", ["t"], [np.full((3,), 2.0, np.float32)])
    assert got is None


def test_exp_is_only_used_where_every_libm_agrees():
    """exp(y) = 1 at y = ±0 (a special point of its rule); exp(y) = 2 needs y = ln 2, where
    the model leaves exp open, so nothing is claimed."""
    one = preimage.preimage(_prog(Doubled), "main", ["e"], [np.ones(2, np.float32)])
    assert one is not None and (one["y"] == 0).all()
    assert preimage.preimage(_prog(Doubled), "main", ["e"], [np.full(2, 2.0, np.float32)]) is None


def test_matmul_rows_reach_minus_flt_max_through_exp():
    """Zero graph 29's shape: argmax over 2 * (exp(x) @ wᵀ) gets a row of -FLT_MAX."""
    want = np.full((3,), -FLT_MAX, np.float32)
    got = preimage.preimage(_prog(ExpMatmul), "main", ["s"], [want])
    assert got is not None
    x, w = got["x"], got["w"]
    assert np.isfinite(x).all() and np.isfinite(w).all()
    with np.errstate(all="ignore"):
        m = np.exp(x.astype(np.float64)).astype(np.float32) @ w.T
    np.testing.assert_array_equal(m + m, want)


def test_sums_get_one_nonzero_term_when_they_can():
    """One nonzero term per sum: its value is the same in every summation order (what
    confirmation asks of a sum), where e.g. 3 + 2 + (-FLT_MAX + FLT_MAX) ... would not be."""
    want = np.array([5.0, -FLT_MAX], dtype=np.float32)
    got = preimage.preimage(_prog(RowSum), "main", ["s"], [want])
    assert got is not None
    x = got["x"]
    assert [int(np.count_nonzero(row)) for row in x] == [1, 1]
    np.testing.assert_array_equal(x.sum(axis=1), want)


def test_cvc5_bits_reads_the_model():
    f = z3.FP("f", z3.Float32())
    b = z3.BitVec("b", 8)
    bits = cvc5_bits([f == z3.FPVal(-2.5, z3.Float32()), b == 200], 5.0)
    assert bits is not None
    assert np.array([bits["f"]], dtype=np.uint32).view(np.float32)[0] == -2.5
    assert bits["b"] == 200
    assert cvc5_bits([z3.fpIsNaN(f), z3.fpIsInf(f)], 5.0) is None


def test_z3_bits_reads_the_model_as_cvc5_bits_does():
    from tvtv.solvers import z3_bits
    f = z3.FP("f", z3.Float32())
    b = z3.BitVec("b", 8)
    facts = [f == z3.FPVal(-2.5, z3.Float32()), b == 200]
    assert z3_bits(facts, 5.0) == cvc5_bits(facts, 5.0)
    assert z3_bits([z3.fpIsNaN(f), z3.fpIsInf(f)], 5.0) is None


@I.ir_module
class BroadcastRow:
    """Zero seed-5 graph 4's argmax argument: one row of inputs, repeated and broadcast."""
    @R.function
    def main(x: R.Tensor((2,), "float32"), y: R.Tensor((2, 3), "float32")):
        with R.dataflow():
            r = R.repeat(y, repeats=3, axis=0)
            f = R.reshape(r, R.shape([18]))
            c = R.concat((x, f), axis=0)
            b = R.broadcast_to(c, R.shape([2, 20]))
            R.output(b)
        return b


def test_a_broadcast_row_is_reached_at_the_elements_asked_for():
    """Only row 1 is pinned (`masks`): -FLT_MAX there, whatever row 0 would need. The twin:
    both rows pinned to different values has no pre-image."""
    want = np.ones((2, 20), np.float32)
    want[1] = -FLT_MAX
    got = preimage.preimage(_prog(BroadcastRow), "main", ["b"], [want], masks=[list(range(20, 40))])
    assert got is not None
    assert (got["x"] == -FLT_MAX).all() and (got["y"] == -FLT_MAX).all()
    assert preimage.preimage(_prog(BroadcastRow), "main", ["b"], [want]) is None


def test_cvc5_is_stopped_at_its_deadline():
    """A pre-image query of zero seed-5 graph 13 (tests/data, 32 KB gzipped): cvc5 in this
    process overruns its 1 s limit several times over (measured 8.5 s; 53 s under a 10 s
    limit), so `cvc5_bits` runs it in a process of its own and kills it at the deadline."""
    import gzip
    import time
    from pathlib import Path

    from tvtv import cvc5_child, solvers

    text = gzip.decompress((Path(__file__).parent / "data" / "slow_preimage_query.smt2.gz")
                           .read_bytes()).decode()
    start = time.perf_counter()
    assert solvers.cvc5_text_bits(text, 1.0) is None
    assert time.perf_counter() - start < 1.0 + solvers.CVC5_CHILD_GRACE + 2.0
    # the twin: cvc5's own limit alone does not hold on this query
    start = time.perf_counter()
    assert cvc5_child.solve(text, 1000)["answer"] == "unknown"
    assert time.perf_counter() - start > 2.0
