"""Conformance of relax.multinomial_from_uniform (tvtv/encode/ops/sampling.py).

The reference: out[i] = the first k with u[i] < cumsum(prob[s[i]])[k] (numpy's sequential
cumsum in prob's dtype), vocab_size - 1 when there is none. Inputs outside the documented
domains (prob and u in [0, 1], s in [0, batch)) are UB. Checked: the IEEE encoding and the
abstract model forced to the reference (ties, zero probabilities, rows not summing to 1,
-0.0, the ends of [0, 1], float16, int32 indices and results, repeated rows), wrong
expectations rejected, the UB conditions (NaN, ±inf, negatives, > 1, out-of-range rows),
the TVM VM, and unsupported calls.

Refinement: LegalizeOps leaves the op unchanged (no FLegalize): proved because the module
is structurally the same. The CPU lowering the build runs (DispatchSampling: cumsum and
`get_sample_index`) is `unknown`: its PrimFunc has symbolic buffer shapes, and with the
shapes made static its conditional stores (an `IfStmt` in a block) are unsupported by the
TIR reader. Two hand lowerings in the TIR reader's vocabulary are proved (a count of the
cumulative sums at most u; TVM's kernel condition as a select-sum), and mutations of them
are refuted.
"""
from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest
import tvm
import z3
from tvm import relax

import tvtv
from tvtv.absfp.abstract import AbstractModel
from tvtv.absfp.ieee import IEEEModel
from tvtv.encode.evaluate import agrees, arrays_match, encode_op, eval_op
from tvtv.errors import Unsupported
from tvtv.ir import program as P
from tvtv.ir import tvm_bridge
from tests.test_ops_linalg import run_vm, tvm_call, typed_module

O = relax.op
OP = "relax.multinomial_from_uniform"
f16, f32 = np.float16, np.float32
NAN, INF = float("nan"), float("inf")


def multinomial_ref(prob: np.ndarray, u: np.ndarray, s: np.ndarray, dtype: str) -> np.ndarray:
    vocab = prob.shape[1]
    out = []
    for i in range(u.shape[0]):
        c = np.cumsum(prob[int(s[i, 0])], dtype=prob.dtype)
        hit = np.nonzero(u[i, 0] < c)[0]
        out.append(int(hit[0]) if hit.size else vocab - 1)
    return np.array(out, dtype=dtype).reshape(u.shape)


class Case:
    def __init__(self, id: str, prob: Any, u: Any, s: Any, dtype: str = "int64",
                 fdt: Any = f32, sdt: Any = np.int64) -> None:
        self.id, self.dtype = id, dtype
        self.prob = np.array(prob, fdt)
        self.u = np.array(u, fdt).reshape(-1, 1)
        self.s = np.array(s, sdt).reshape(-1, 1)

    def make(self) -> Any:
        return lambda p, u, s: O.multinomial_from_uniform(p, u, s, self.dtype)

    def types(self) -> list[tuple[tuple, str]]:
        return [(a.shape, str(a.dtype)) for a in self.args()]

    def ty(self) -> tuple[P.TensorType, dict]:
        return tvm_call(self.make(), *self.types())

    def args(self) -> list[np.ndarray]:
        return [self.prob, self.u, self.s]

    def dtypes(self) -> list[str]:
        return [str(a.dtype) for a in self.args()]

    def expected(self) -> np.ndarray:
        return multinomial_ref(self.prob, self.u, self.s, self.dtype)


CASES = [
    Case("docstring_example", [[0.2, 0.3, 0.5], [0.3, 0.4, 0.3]], [0.4, 0.9], [0, 1]),
    Case("ties_move_past", [[0.25, 0.25, 0.5]], [0.25, 0.5, 0.0, 0.2499], [0, 0, 0, 0]),
    Case("zero_probabilities_skipped", [[0.0, 0.5, 0.0, 0.5], [0.0, -0.0, 0.0, 1.0]],
         [0.0, 0.5, 0.0, 1.0, 0.99], [0, 0, 1, 1, 0]),
    Case("u_one_and_short_rows", [[0.5, 0.2, 0.3], [0.1, 0.1, 0.1]], [1.0, 0.2, 0.5, 0.3],
         [0, 1, 1, 1]),
    Case("fallback_to_zero_probability", [[0.5, 0.5, 0.0]], [1.0, 0.9999], [0, 0]),
    Case("sum_above_one", [[0.9, 0.9, 0.9]], [0.95, 0.5, 1.0], [0, 0, 0]),
    Case("tiny_and_denormal", [[1e-45, 1e-38, 1.0]], [0.0, 1e-45, 1.1e-38, 1.0], [0, 0, 0, 0]),
    Case("one_word_vocab", [[1.0], [0.0]], [0.3, 1.0], [1, 0]),
    Case("repeated_rows_int32", [[0.1, 0.2, 0.3, 0.4], [0.7, 0.1, 0.1, 0.1], [0.0, 0.0, 0.0, 0.0]],
         [0.05, 0.15, 0.35, 0.65, 0.75, 0.999], [0, 0, 1, 1, 2, 0], "int32", sdt=np.int32),
    Case("float16", [[0.1, 0.2, 0.3, 0.4], [0.3333, 0.3333, 0.3334, 0.0]],
         [0.3, 0.6, 0.9999, 0.6666, 1.0], [0, 0, 0, 1, 1], fdt=f16),
    Case("float16_int8_indices_int32", [[0.5, 0.5]], [0.5, 0.49], [0, 0], "int32", fdt=f16,
         sdt=np.int8),
]
IDS = [c.id for c in CASES]
assert len(set(IDS)) == len(IDS)


# ------------------------------------------------------------------------------------------------
# (a) encoder vs reference, (b) models forced, (c) wrong expectations rejected, (d) VM
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_ieee_matches_reference(case: Case) -> None:
    ty, attrs = case.ty()
    assert attrs == {"dtype": case.dtype}, attrs
    want = case.expected()
    assert ty.shape == want.shape and ty.dtype == str(want.dtype)
    (got,) = eval_op(OP, case.args(), ty, attrs, case.dtypes())
    assert arrays_match(got, want), f"{case.id}: got {got.tolist()}, reference {want.tolist()}"


# cases whose result does not depend on the value of a rounded sum: the abstract model (its
# + uninterpreted) forces them too; elsewhere it admits the reference among its runs
ABSTRACT_EXACT = {"zero_probabilities_skipped", "one_word_vocab", "float16_int8_indices_int32"}


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_models_force_reference(case: Case) -> None:
    ty, attrs = case.ty()
    assert agrees(OP, case.args(), ty, [case.expected()], attrs, IEEEModel(), True, case.dtypes())
    exact = case.id in ABSTRACT_EXACT
    assert agrees(OP, case.args(), ty, [case.expected()], attrs, AbstractModel(8), exact,
                  case.dtypes())
    if not exact:   # and the abstraction is really coarser there
        assert not agrees(OP, case.args(), ty, [case.expected()], attrs, AbstractModel(8), True,
                          case.dtypes())


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_wrong_expectation_is_rejected(case: Case) -> None:
    ty, attrs = case.ty()
    vocab = case.prob.shape[1]
    if vocab == 1:
        wrong = case.expected() + 1
    else:
        wrong = (case.expected() + 1) % vocab
    for model in (IEEEModel(), AbstractModel(8)):
        assert not agrees(OP, case.args(), ty, [wrong], attrs, model, False, case.dtypes())


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_tvm_vm_matches_reference(case: Case) -> None:
    mod = typed_module(case.make(), *case.types())
    got = run_vm(mod, *case.args()).numpy()
    assert arrays_match(got, case.expected()), f"{case.id}: VM {got.tolist()}"


def test_vm_outside_the_domain() -> None:
    """Why the domains are preconditions: with a negative probability the cumulative sums
    fall, and TVM's kernel writes every k where one crosses u (the last wins): 2 where the
    first crossing is 0. (With a NaN u it writes nothing: uninitialised output.)"""
    c = Case("neg", [[0.5, -0.4, 0.5]], [0.3], [0])
    got = run_vm(typed_module(c.make(), *c.types()), *c.args()).numpy()
    assert got.tolist() == [[2]] and c.expected().tolist() == [[0]]


# ------------------------------------------------------------------------------------------------
# UB
# ------------------------------------------------------------------------------------------------
def is_ub(prob: Any, u: Any, s: Any, fdt: Any = f32) -> bool:
    c = Case("ub", prob, u, s, fdt=fdt)
    _, ctx = encode_op(OP, c.args(), P.TensorType(c.u.shape, "int64"), {"dtype": "int64"},
                       IEEEModel(), c.dtypes())
    solver = z3.Solver()
    solver.add(z3.Not(ctx.well_defined()))
    return solver.check() == z3.sat


@pytest.mark.parametrize("prob,u,s,ub", [
    ([[0.2, 0.8]], [0.5], [0], False),
    ([[0.0, -0.0, 1.0]], [0.0], [0], False),
    ([[1.0, 1.0]], [1.0], [0], False),                  # a sum above 1 is allowed
    ([[0.2, 0.8], [NAN, 0.5]], [0.5], [0], True),       # every row, sampled or not
    ([[0.2, -0.1]], [0.5], [0], True),
    ([[0.2, 1.5]], [0.5], [0], True),
    ([[0.2, INF]], [0.5], [0], True),
    ([[0.2, -1e-45]], [0.5], [0], True),
    ([[0.2, 0.8]], [NAN], [0], True),
    ([[0.2, 0.8]], [-0.0], [0], False),
    ([[0.2, 0.8]], [-1e-45], [0], True),
    ([[0.2, 0.8]], [1.0000001], [0], True),
    ([[0.2, 0.8]], [-INF], [0], True),
    ([[0.2, 0.8], [0.5, 0.5]], [0.5, 0.5], [1, 2], True),
    ([[0.2, 0.8], [0.5, 0.5]], [0.5, 0.5], [-1, 0], True),
])
def test_ub_conditions(prob: list, u: list, s: list, ub: bool) -> None:
    assert is_ub(prob, u, s) == ub


def test_ub_quantified_beyond_expansion() -> None:
    prob = np.full((3, 100), 0.01, f32)
    assert not is_ub(prob, [0.5], [2])
    prob[2, 77] = -0.01
    assert is_ub(prob, [0.5], [0])
    assert is_ub(np.full((3, 100), 0.01, f32), [0.5], [3])


# ------------------------------------------------------------------------------------------------
# unsupported calls
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("prob,u,s,dtype", [
    (np.full((1, 300), 0.001, f32), np.zeros((1, 1), f32), np.zeros((1, 1), np.int64), "int64"),
    (np.full((1, 3), 0.3, f32), np.zeros((1, 1), f32), np.zeros((1, 1), np.int64), "float32"),
    (np.full((1, 200), 0.003, f32), np.zeros((1, 1), f32), np.zeros((1, 1), np.int64), "int8"),
    (np.full((1, 3), 0.3, f16), np.zeros((1, 1), f32), np.zeros((1, 1), np.int64), "int64"),
    (np.full((1, 3), 0.3, f32), np.zeros((1, 1), f32), np.zeros((1, 1), f32), "int64"),
    (np.full((3,), 0.3, f32), np.zeros((1, 1), f32), np.zeros((1, 1), np.int64), "int64"),
    (np.full((1, 3), 0.3, f32), np.zeros((1, 2), f32), np.zeros((1, 2), np.int64), "int64"),
    (np.full((1, 0), 0.3, f32), np.zeros((1, 1), f32), np.zeros((1, 1), np.int64), "int64"),
])
def test_unsupported_calls(prob: np.ndarray, u: np.ndarray, s: np.ndarray, dtype: str) -> None:
    with pytest.raises(Unsupported, match="multinomial_from_uniform"):
        encode_op(OP, [prob, u, s], P.TensorType((u.shape[0], 1), dtype), {"dtype": dtype})


# ------------------------------------------------------------------------------------------------
# (e) refinement: LegalizeOps, DispatchSampling, hand lowerings, mutations
# ------------------------------------------------------------------------------------------------
def source(b: int, v: int, n: int, fdt: str = "float32") -> Any:
    return typed_module(lambda p, u, s: O.multinomial_from_uniform(p, u, s, "int64"),
                        ((b, v), fdt), ((n, 1), fdt), ((n, 1), "int64"))


def test_legalize_leaves_the_op_alone() -> None:
    """No FLegalize: LegalizeOps returns the same module, proved as such (the op on both
    sides)."""
    mod = source(2, 3, 2)
    leg = relax.transform.LegalizeOps()(mod)
    assert tvm_bridge.structural_equal(mod, leg)
    (r,) = tvtv.verify(mod, leg, timeout=20).results
    assert r.verdict == "proved", r.to_dict()


def dispatched(mod: Any) -> Any:
    with tvm.target.Target("llvm"):
        return relax.backend.DispatchSampling()(mod)


def test_dispatch_sampling_is_unknown_symbolic_shapes() -> None:
    """The CPU lowering (cumsum + get_sample_index, symbolic T.match_buffer shapes): not
    readable, so unknown with the reason, never proved. It runs like the spec on the VM."""
    mod = source(2, 3, 2)
    tgt = dispatched(mod)
    c = CASES[0]
    assert arrays_match(run_vm(tgt, *c.args()).numpy(), c.expected())
    (r,) = tvtv.verify(mod, tgt, timeout=20).results
    d = r.to_dict()
    assert r.verdict == "unknown" and "symbolic shape" in d["reason"], d


def static_dispatch(b: int, v: int, n: int) -> tuple[Any, Any]:
    """DispatchSampling's output with its PrimFunc's shape variables replaced by the sizes."""
    mod = source(b, v, n)
    text, consts = tvm_bridge.module_to_script(dispatched(mod))
    text = "\n".join(line for line in text.splitlines() if "TypeVar" not in line)
    for name, val in (("out_batch", n), ("batch", b), ("vocab_size", v)):
        text = re.sub(rf"\b{name}\b", f"T.int64({val})", text)
    return mod, tvm_bridge.parse_script(text, consts)


def test_static_dispatch_kernel_is_unknown_if_stmt() -> None:
    """With static shapes TVM's kernel (conditional stores: `if ...: out[i, 0] = k` inside
    the block) is still outside the TIR reader: unknown, never proved."""
    mod, tgt = static_dispatch(2, 3, 2)
    c = CASES[0]
    assert arrays_match(run_vm(tgt, *c.args()).numpy(), c.expected())
    (r,) = tvtv.verify(mod, tgt, timeout=20).results
    d = r.to_dict()
    assert r.verdict == "unknown" and "IfStmt" in d["reason"], d


def hand_lowering(b: int, v: int, n: int, dt: str = "float32", kind: str = "count") -> str:
    """TVMScript: R.cumsum as TVM's dispatch emits it, then a PrimFunc computing the index as
    a reduction: "count" sums [c[s[i], k] <= u[i]] over k < v - 1; "kernel" sums
    k * [TVM's write condition at k] over k < v."""
    if kind == "count":
        ext = v - 1
        term = "T.Select(c[s[v_i, 0], v_k] <= u[v_i, 0], T.int64(1), T.int64(0))"
    else:
        ext = v
        term = (f"T.Select((u[v_i, 0] < c[s[v_i, 0], v_k] or v_k == T.int64({v - 1})) and "
                f"(v_k == T.int64(0) or u[v_i, 0] >= c[s[v_i, 0], T.max(v_k - T.int64(1), "
                f"T.int64(0))]), v_k, T.int64(0))")
    return f'''
@I.ir_module
class Module:
    @T.prim_func(private=True, s_tir=True)
    def sample(c: T.Buffer((T.int64({b}), T.int64({v})), "{dt}"), u: T.Buffer((T.int64({n}), T.int64(1)), "{dt}"), s: T.Buffer((T.int64({n}), T.int64(1)), "int64"), out: T.Buffer((T.int64({n}), T.int64(1)), "int64")):
        T.func_attr({{"tirx.noalias": True}})
        cnt = T.sblock_alloc_buffer((T.int64({n}),), "int64")
        for i, k in T.grid(T.int64({n}), T.int64({ext})):
            with T.sblock("count"):
                v_i, v_k = T.axis.remap("SR", [i, k])
                with T.init():
                    cnt[v_i] = T.int64(0)
                cnt[v_i] = cnt[v_i] + {term}
        for i in range(T.int64({n})):
            with T.sblock("out"):
                v_i = T.axis.spatial(T.int64({n}), i)
                out[v_i, T.int64(0)] = cnt[v_i]

    @R.function
    def main(p0: R.Tensor(({b}, {v}), dtype="{dt}"), p1: R.Tensor(({n}, 1), dtype="{dt}"), p2: R.Tensor(({n}, 1), dtype="int64")) -> R.Tensor(({n}, 1), dtype="int64"):
        cls = Module
        with R.dataflow():
            lv = R.cumsum(p0, axis=1, dtype="{dt}", exclusive=False)
            gv = R.call_tir(cls.sample, (lv, p1, p2), out_ty=R.Tensor(({n}, 1), dtype="int64"))
            R.output(gv)
        return gv
'''


LOWERINGS = {
    # name: (batch, vocab, n, dtype, kind)
    "count f32": (2, 3, 2, "float32", "count"),
    "kernel f32": (2, 3, 2, "float32", "kernel"),
    "count f16": (1, 4, 3, "float16", "count"),
    "kernel f16 vocab 2": (3, 2, 2, "float16", "kernel"),
}


@pytest.mark.parametrize("name", sorted(LOWERINGS))
def test_hand_lowering_runs_like_the_reference(name: str) -> None:
    b, v, n, dt, kind = LOWERINGS[name]
    rng = np.random.default_rng(len(name))
    prob = rng.dirichlet(np.ones(v), size=b).astype(dt)
    u = rng.uniform(size=(n, 1)).astype(dt)
    s = rng.integers(0, b, size=(n, 1)).astype(np.int64)
    got = run_vm(tvm_bridge.parse_script(hand_lowering(b, v, n, dt, kind)), prob, u, s).numpy()
    assert arrays_match(got, multinomial_ref(prob, u, s, "int64"))


@pytest.mark.parametrize("name", sorted(LOWERINGS))
def test_hand_lowering_refines_spec(name: str) -> None:
    """Proved: the preconditions make the cumulative sums non-decreasing, which both
    lowerings need (the counting one reads a sum of flags as an index)."""
    b, v, n, dt, kind = LOWERINGS[name]
    tgt = tvm_bridge.parse_script(hand_lowering(b, v, n, dt, kind))
    (r,) = tvtv.verify(source(b, v, n, dt), tgt, timeout=20).results
    assert r.verdict == "proved", r.to_dict()


MUTATIONS = {
    "<= becomes <": ("count f32", "c[s[v_i, 0], v_k] <= u[v_i, 0]", "c[s[v_i, 0], v_k] < u[v_i, 0]"),
    "row ignores sample_indices": ("count f32", "c[s[v_i, 0], v_k]", "c[v_i, v_k]"),
    "no last-index fallback": ("kernel f32", f" or v_k == T.int64(2))", ")"),
    "u >= becomes u >": ("kernel f32", "u[v_i, 0] >= c", "u[v_i, 0] > c"),
    "count one short": ("count f16", ", T.int64(3)):", ", T.int64(2)):"),
}


@pytest.mark.parametrize("name", sorted(MUTATIONS))
def test_broken_lowering_is_refuted(name: str) -> None:
    case, old, new = MUTATIONS[name]
    b, v, n, dt, kind = LOWERINGS[case]
    text = hand_lowering(b, v, n, dt, kind)
    assert text.count(old) == 1, f"mutation {name!r} does not apply:\n{text}"
    tgt = tvm_bridge.parse_script(text.replace(old, new))
    (r,) = tvtv.verify(source(b, v, n, dt), tgt, timeout=20).results
    assert r.verdict == "counterexample", r.to_dict()
