"""Conformance of relax.nn.attention / attention_bias (tvtv/encode/ops/attention.py).

A float64 numpy reference of TVM's documented formula (BSNH layout, default scale
1/sqrt(H) as a division by sqrt(H), np.tril causal masks with the legalization's zero fill),
rounded to float32:
- the IEEE encoding with its uninterpreted sums/exp read as numpy equals it within rounding,
  the abstract model admits it, and wrong expectations (perturbed, transposed) are rejected;
- the TVM VM agrees with it (so the reference reads layout and attributes as TVM does);
- LegalizeOps refines the op (tvtv.verify proves it), and one-token mutations of the
  legalized TIR give counterexamples.
"""
from __future__ import annotations

import numpy as np
import pytest

import tvtv
import tvtv.encode.ops.attention  # noqa: F401  (registers the encoders)
from tests.test_ops_linalg import run_tvm, typed_module
from tests.test_ops_statistical import abstract, eval_numpy_ufs
from tvtv.encode.evaluate import agrees, encode_op
from tvtv.errors import Unsupported
from tvtv.ir import tvm_bridge
from tvtv.ir.program import TensorType

f32 = np.float32


def tt(shape, dtype="float32") -> TensorType:
    return TensorType(tuple(shape), dtype)


def keep_mask(S, T, mask):
    if mask is None:
        return np.ones((S, T), bool)
    off = 0 if mask == "TopLeft" else abs(S - T)
    return np.tril(np.ones((S, T), bool), k=off)


def ref_attention(q, k, v, bias=None, scale=None, mask=None):
    """float64 reference, rounded to float32."""
    q, k, v = (np.asarray(a, np.float64) for a in (q, k, v))
    H, S, T = q.shape[-1], q.shape[1], k.shape[1]
    with np.errstate(all="ignore"):
        p = np.einsum("bsnh,btnh->bnst", q, k)
        p = p / np.sqrt(H) if scale is None else p * float(f32(scale))
        if bias is not None:
            p = p + np.asarray(bias, np.float64)
        keep = keep_mask(S, T, mask)
        pm = np.where(keep, p, -np.inf)   # the softmax of the kept scores
        e = np.where(keep, np.exp(pm - pm.max(-1, keepdims=True)), 0.0)
        w = e / e.sum(-1, keepdims=True)
        return np.einsum("bnst,btnv->bsnv", w, np.asarray(v, np.float64)).astype(f32)


def out_shape(q, v):
    return (q.shape[0], q.shape[1], q.shape[2], v.shape[3])


def make(shape_q, shape_kv, hv, seed):
    rng = np.random.default_rng(seed)
    B, S, N, H = shape_q
    T = shape_kv
    q = rng.standard_normal((B, S, N, H)).astype(f32)
    k = rng.standard_normal((B, T, N, H)).astype(f32)
    v = rng.standard_normal((B, T, N, hv)).astype(f32)
    return q, k, v


# (B, S, N, H), S_kv, H_v, attrs, bias shape
CASES = [
    ((1, 2, 1, 2), 2, 2, {}, None),
    ((2, 3, 2, 3), 2, 1, {}, None),
    ((1, 2, 3, 1), 3, 3, {"scale": 0.5}, None),
    ((1, 3, 1, 2), 2, 2, {"causal_mask": "TopLeft"}, None),
    ((1, 3, 2, 2), 2, 2, {"causal_mask": "BottomRight"}, None),
    ((1, 2, 1, 3), 3, 2, {"causal_mask": "BottomRight"}, None),
    ((2, 2, 2, 2), 3, 2, {}, (1, 2, 1, 3)),
    ((1, 3, 1, 2), 3, 2, {"causal_mask": "TopLeft", "scale": 0.25}, (1, 1, 3, 3)),
    ((1, 2, 1, 2), 2, 2, {}, (1, 1, 2, 2)),
]


def _case(i):
    shape_q, T, hv, attrs, bshape = CASES[i]
    q, k, v = make(shape_q, T, hv, i)
    args = [q, k, v]
    op = "relax.nn.attention"
    if bshape is not None:
        args.append(np.random.default_rng(100 + i).standard_normal(bshape).astype(f32))
        op = "relax.nn.attention_bias"
    want = ref_attention(q, k, v, args[3] if bshape else None, attrs.get("scale"),
                         attrs.get("causal_mask"))
    return op, args, attrs, want


@pytest.mark.parametrize("i", range(len(CASES)))
def test_ieee_with_numpy_ufs_matches_reference(i):
    op, args, attrs, want = _case(i)
    (got,) = eval_numpy_ufs(op, args, tt(want.shape), attrs)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def _equal_value_columns(i):
    """Case i with V[..., 1] = V[..., 0], so out[..., 1] must equal out[..., 0]: the abstract
    model leaves sums and exp uninterpreted, but equal terms give equal results."""
    op, args, attrs, _ = _case(i)
    args[2][..., 1] = args[2][..., 0]
    want = ref_attention(*args[:3], args[3] if len(args) > 3 else None, attrs.get("scale"),
                         attrs.get("causal_mask"))
    return op, args, attrs, want


@pytest.mark.parametrize("i", [0, 3, 8])
def test_abstract_admits_reference_and_rejects_wrong(i):
    op, args, attrs, want = _equal_value_columns(i)
    assert agrees(op, args, tt(want.shape), [want], attrs, model=abstract(), exact=False)
    wrong = want.copy()
    wrong[0, 0, 0, 1] = np.nextafter(wrong[0, 0, 0, 0], f32(np.inf))
    assert not agrees(op, args, tt(want.shape), [wrong], attrs, model=abstract(), exact=False)


def test_wrong_layout_rejected():
    # the result with S and H_v swapped (transposed) is rejected
    op, args, attrs, want = _equal_value_columns(0)
    wrong = np.swapaxes(want, 1, 3).copy()
    assert not np.allclose(wrong, want)
    assert not agrees(op, args, tt(want.shape), [wrong], attrs, model=abstract(), exact=False)
    (got,) = eval_numpy_ufs(op, args, tt(want.shape), attrs)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    assert not np.allclose(got, wrong)


def test_nan_query_propagates_to_its_rows():
    op, args, attrs, _ = _case(1)
    q = args[0].copy()
    q[1, 2, 0, 1] = np.nan
    (got,) = eval_numpy_ufs(op, [q] + args[1:], tt((2, 3, 2, 1)), attrs)
    assert np.isnan(got[1, 2, 0]).all()
    mask = np.ones(got.shape, bool)
    mask[1, 2, 0] = False
    assert not np.isnan(got[mask]).any()


def test_inf_key_gives_nan_row_and_tvm_masked_underflow_gives_nan():
    op, args, attrs, _ = _case(0)
    k = args[1].copy()
    k[0, 1, 0, :] = np.inf          # +inf score in every row (inf - inf = NaN in the softmax)
    q = np.abs(args[0]) + 1
    (got,) = eval_numpy_ufs(op, [q, k, args[2]], tt((1, 2, 1, 2)), attrs)
    assert np.isnan(got).all()
    # TopLeft, kept scores ~ -141: the softmax of the kept scores is finite (row 0 keeps one
    # score: weight 1). Finding: TVM's legalization takes the masked 0 as the row max, exp
    # underflows, 0/0 = NaN on the VM.
    q = np.full((1, 2, 1, 2), 10, f32)
    k = np.full((1, 2, 1, 2), -10, f32)
    v = np.ones((1, 2, 1, 2), f32)
    at = {"causal_mask": "TopLeft"}
    (got,) = eval_numpy_ufs(op, [q, k, v], tt((1, 2, 1, 2)), at)
    assert (got == 1).all(), got
    np.testing.assert_array_equal(got, ref_attention(q, k, v, mask="TopLeft"))
    vm = run_tvm(_relax_call(op, at), q, k, v)
    assert np.isnan(vm[0, 0]).all() and (vm[0, 1] == 1).all(), vm


def test_unsupported():
    op, args, _, want = _case(0)
    with pytest.raises(Unsupported):
        encode_op(op, args, tt(want.shape), {"window_size": 2})
    with pytest.raises(Unsupported):
        encode_op(op, args, tt(want.shape), {"causal_mask": "Diagonal"})
    with pytest.raises(Unsupported):
        encode_op(op, [a.astype(np.int32) for a in args], tt(want.shape, "int32"), {})


# -- the TVM VM reads layout and attributes as the reference does ----------------------------

def _relax_call(op, attrs):
    from tvm.relax import op as O
    kw = {"scale": attrs.get("scale"), "causal_mask": attrs.get("causal_mask")}
    if op == "relax.nn.attention_bias":
        return lambda q, k, v, b: O.nn.attention(q, k, v, bias=b, **kw)
    return lambda q, k, v: O.nn.attention(q, k, v, **kw)


@pytest.mark.parametrize("i", range(len(CASES)))
def test_tvm_vm_agrees_with_reference(i):
    op, args, attrs, want = _case(i)
    got = run_tvm(_relax_call(op, attrs), *args)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


# -- refinement through TVM's LegalizeOps ------------------------------------------------------

def _module(shapes, fn):
    return typed_module(fn, *[(s, "float32") for s in shapes])


VERIFY = {   # measured: plain 4-5 s, BottomRight 5-11 s (2 cores, shared)
    "plain": ([(1, 2, 1, 2)] * 3, {}),
    "bottom-right": ([(1, 3, 1, 2), (1, 2, 1, 2), (1, 2, 1, 2)], {"causal_mask": "BottomRight"}),
}


@pytest.mark.parametrize("name", list(VERIFY))
def test_legalize_ops_is_proved(name):
    from tvm import relax
    shapes, attrs = VERIFY[name]
    mod = _module(shapes, _relax_call("relax.nn.attention", attrs))
    (res,) = tvtv.verify(mod, relax.transform.LegalizeOps()(mod), timeout=20).results
    assert res.verdict == "proved", res


def test_broken_legalization_is_refuted():
    """The second batch_matmul reading V transposed (one index swap) is refuted (16 s).

    Measured but left out (too slow for this file): the default scale's `T.sqrt(T.float32(1.0))`
    changed to 2.0 gives `counterexample` in 58 s on this module (75 s with shapes (1, 2, 1, 2)
    and sqrt(2.0) -> sqrt(3.0)); the V swap on (1, 2, 1, 2) took 75 s."""
    from tvm import relax
    mod = _module([(1, 1, 1, 1), (1, 2, 1, 1), (1, 2, 1, 2)],
                  _relax_call("relax.nn.attention", {}))
    text = relax.transform.LegalizeOps()(mod).script()
    old, new = "T_reshape_2[T.int64(0), v_k, v_j]", "T_reshape_2[T.int64(0), v_j, v_k]"
    assert old in text
    broken = tvm_bridge.parse_script(text.replace(old, new))
    (res,) = tvtv.verify(mod, broken, timeout=20).results
    assert res.verdict == "counterexample", res
