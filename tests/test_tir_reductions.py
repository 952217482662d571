"""Large reductions (issue 4): sums over up to 65,536 elements whose terms come in another
order (a reshape, a permuted layout, a flip, TIR's loop nest) are proved in at most 2 s each;
a sum over terms that are *not* a permutation of the source's is refuted."""
from __future__ import annotations

import time

import numpy as np
import pytest
import z3
from tvm import relax

import tvtv
from tvtv.encode.bijection import all_elements
from tvtv.encode.tensor import INDEX, idx, ravel, unravel

O = relax.op


def module(shape, body):
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType(shape, "float32"))
    with bb.function("main", [x]):
        out = bb.emit(body(x))
        bb.emit_func_output(out)
    return bb.get()


BIG = (256, 256)   # 65,536 elements
TARGETS = {
    "reshape": lambda x: O.sum(O.reshape(x, (BIG[0] * BIG[1],))),
    "permute_dims": lambda x: O.sum(O.permute_dims(x, [1, 0])),
    "flip": lambda x: O.sum(O.flip(x, axis=0)),
}


@pytest.mark.parametrize("name", sorted(TARGETS))
def test_65536_element_sum_in_another_order_is_proved_fast(name):
    src = module(BIG, lambda x: O.sum(x))
    tgt = module(BIG, TARGETS[name])
    start = time.process_time()
    (r,) = tvtv.verify(src, tgt, timeout=20).results
    cpu = time.process_time() - start
    assert r.verdict == "proved", r.to_dict()
    assert cpu <= 2.0, f"{cpu:.2f} s of CPU"


def test_legalized_sum_of_65536_elements_is_proved_fast():
    src = module(BIG, lambda x: O.sum(x))
    start = time.process_time()
    (r,) = tvtv.verify(src, relax.transform.LegalizeOps()(src), timeout=20).results
    assert r.verdict == "proved", r.to_dict()
    assert time.process_time() - start <= 2.0


def test_sum_over_duplicated_terms_is_refuted():
    """Row 0 twice instead of rows 0 and 1: not a permutation of the source's terms."""
    shape = (2, 136)    # 272 terms: beyond the hashed bound, through the bijection check
    src = module(shape, lambda x: O.sum(x))
    half = lambda x: O.strided_slice(x, axes=[0], begin=[0], end=[1])
    tgt = module(shape, lambda x: O.sum(O.concat([half(x), half(x)], axis=0)))
    (r,) = tvtv.verify(src, tgt, timeout=30).results
    assert r.verdict == "counterexample", r.to_dict()


def test_bijection_check_is_exact():
    a = z3.Array("a", INDEX, z3.BitVecSort(8))
    n = 6 * 4
    transpose = lambda r: z3.Select(a, ravel(list(reversed(unravel(r, [6, 4]))), [4, 6]))
    assert all_elements(transpose, n, INDEX) is not None
    halve = lambda r: z3.Select(a, z3.UDiv(r, idx(2)))           # each of 12 elements twice
    assert all_elements(halve, n, INDEX) is None
    shifted = lambda r: z3.Select(a, r + idx(1))                # reads a[n], misses a[0]
    assert all_elements(shifted, n, INDEX) is None


PAIR_VALUES = [0.0, -0.0, float("inf"), float("-inf"), float("nan"),
               float(np.finfo(np.float32).max), -float(np.finfo(np.float32).max), 1.5, -1.5, 1e-45]


def test_pair_sums_are_exact_where_inputs_are_concrete():
    """With `exact_pair_sums` (set by `tvtv.confirm` for concrete inputs) a float sum of two
    terms is computed: the value of +0.0, a, b added in every order and bracketing (numpy,
    IEEE round to nearest), on the special values. Without it the sum is uninterpreted."""
    from tvtv.absfp.ieee import IEEEModel
    from tvtv.encode import reduction
    from tvtv.encode.context import EncodeContext
    from tvtv.encode.evaluate import element_value, same_value

    f = np.float32
    for a in PAIR_VALUES:
        for b in PAIR_VALUES:
            ctx = EncodeContext(IEEEModel(), exact_pair_sums=True)
            dom = ctx.dom("float32")
            terms = [dom.const(a), dom.const(b)]
            term = lambda i: terms[z3.simplify(i).as_long()]  # noqa: E731
            got = element_value(z3.simplify(reduction.reduce_sum(ctx, "float32", 2, term)), "float32")
            with np.errstate(all="ignore"):
                orders = [float((f(0) + f(a)) + f(b)), float((f(0) + f(b)) + f(a)),
                          float(f(0) + (f(a) + f(b))), float(f(a) + (f(0) + f(b)))]
            assert all(same_value(got, o) for o in orders), (a, b, got, orders)
    opaque = EncodeContext(IEEEModel())
    dom = opaque.dom("float32")
    s = z3.simplify(reduction.reduce_sum(opaque, "float32", 2, lambda i: dom.const(1.5)))
    assert element_value(s, "float32") is None   # uninterpreted: no value
