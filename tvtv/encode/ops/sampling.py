"""relax.multinomial_from_uniform: inverse-CDF sampling from rows of probabilities.

Relax's docstring (python/tvm/relax/op/sampling.py): prob is (batch, vocab_size), "Each row is
a distribution across vocabulary ... Values range from [0, 1] ... The sum of values in each
row is 1"; uniform_sample is (n, 1), "Values range from 0 to 1"; sample_indices is (n, 1) and
"the ith token should be sampled from the sample_indices[i]th probability distribution"; the
result is (n, 1) of `dtype`; the Notes add "For accurate results, ensure probabilities are
between 0 and 1 and sum to 1". Its example (prob [[0.2, 0.3, 0.5], [0.3, 0.4, 0.3]], usample
[[0.4], [0.9]] -> [[1], [2]]) is the inverse CDF: the first index whose cumulative probability
exceeds the sample. prob is not normalised by its row sum.

TVM 0.27 (measured): LegalizeOps leaves the op alone (it has no FLegalize). The build
pipeline's `relax.backend.DispatchSampling` (in a `Target("llvm")` context) lowers it on CPU
to `R.cumsum(prob, axis=1)` and the PrimFunc `get_sample_index` of
relax/backend/gpu_generic/sampling.py, whose block (i, k) writes k when `(u < c[k] or
k == V - 1) and (k == 0 or u >= c[k - 1])`, and nothing otherwise; its buffers have
symbolic shapes (`T.match_buffer` on handles).
"""
from __future__ import annotations

import z3

from tvtv import z3fast as zf
from tvtv.absfp.dtypes import INT_FORMATS, is_float
from tvtv.encode.context import EncodeContext
from tvtv.encode.ops.common import (add_ub_for_some, checked_result, index_result_dtype,
                                    index_value, tensor_arg)
from tvtv.encode.registry import register
from tvtv.encode.tensor import Tensor
from tvtv.errors import Unsupported
from tvtv.ir.program import OpCall

Term = z3.ExprRef
Index = z3.BitVecRef
# each sample's term is a chain of vocab_size comparisons with the cumulative sums
VOCAB_BOUND = 256


def _check_shapes(call: OpCall, prob: Tensor, u: Tensor, s: Tensor) -> None:
    if prob.ndim != 2 or not is_float(prob.dtype):
        raise Unsupported(f"{call.op}: prob {prob.shape} {prob.dtype} (needs a 2-D float tensor)")
    if u.ndim != 2 or u.shape[1] != 1 or not is_float(u.dtype):
        raise Unsupported(f"{call.op}: uniform_sample {u.shape} {u.dtype} (needs (n, 1) float)")
    if u.dtype != prob.dtype:
        raise Unsupported(f"{call.op}: uniform_sample of dtype {u.dtype} for prob of dtype "
                          f"{prob.dtype} (TVM's lowering fails on mixed dtypes)")
    if s.shape != u.shape or s.dtype not in INT_FORMATS:
        raise Unsupported(f"{call.op}: sample_indices {s.shape} {s.dtype} (needs {u.shape} int)")
    if prob.shape[1] == 0 or prob.shape[1] > VOCAB_BOUND:
        raise Unsupported(f"{call.op}: vocab_size {prob.shape[1]} (limit {VOCAB_BOUND}, at least 1)")


def _in_unit(dom: object, v: Term) -> z3.BoolRef:
    """0 <= v <= 1 (false for NaN; -0.0 is in)."""
    return zf.And(dom.le(dom.zero(), v), dom.le(v, dom.one()))


def _add_ub(ctx: EncodeContext, prob: Tensor, u: Tensor, s: Tensor, op: str) -> None:
    """The documented domains: prob and uniform_sample in [0, 1], sample_indices in
    [0, batch)."""
    batch = prob.shape[0]
    pd, ud = ctx.dom(prob.dtype), ctx.dom(u.dtype)
    add_ub_for_some(ctx, s.numel, lambda k: zf.Not(_row_ok(s.at(k), s.dtype, batch, op)),
                    f"multinomial_from_uniform with a sample index outside [0, {batch})",
                    "multinomial_s_k")
    add_ub_for_some(ctx, prob.numel, lambda k: zf.Not(_in_unit(pd, prob.at(k))),
                    "multinomial_from_uniform with a probability outside [0, 1] (or NaN)",
                    "multinomial_p_k")
    add_ub_for_some(ctx, u.numel, lambda k: zf.Not(_in_unit(ud, u.at(k))),
                    "multinomial_from_uniform with a uniform sample outside [0, 1] (or NaN)",
                    "multinomial_u_k")


def _row_ok(v: Term, dtype: str, batch: int, op: str) -> z3.BoolRef:
    r = index_value(v, dtype, op)
    return zf.And(r >= z3.BitVecVal(0, 65), r < z3.BitVecVal(batch, 65))


@register("relax.multinomial_from_uniform")
def encode_multinomial_from_uniform(ctx: EncodeContext, call: OpCall, args: list) -> Tensor:
    """multinomial_from_uniform(prob, u, s, dtype): out[i, 0] = the first k with u[i, 0] < c[s[i, 0], k], where c is prob's cumulative sum along the row (a left fold in prob's dtype, not normalised), or vocab_size - 1 when there is none; prob or u outside [0, 1] (NaN too) and s outside [0, batch) are UB; integer result dtypes only.

    Details. The docstring's parameter descriptions give prob and uniform_sample the range
    [0, 1]: these are read as preconditions (UB outside them). "The sum of values in each
    row is 1" is only asked "for accurate results" and cannot hold exactly in floating point,
    so a row whose sum is at most u is defined: it gives the last index (as TVM's kernel and
    `vm.builtin.multinomial_from_uniform` do). u must have prob's dtype: TVM's type
    inference accepts float16 prob with float32 u, but its CPU lowering then fails to build
    (measured), so mixed dtypes are unsupported. At most `VOCAB_BOUND` entries per row.

    TVM 0.27 (measured on the VM): the docstring's example gives [[1], [2]]; u = 1.0 with a
    row summing to 1 gives vocab_size - 1; a zero probability is skipped (u = c[k] moves
    past k), except by that fallback ([0.5, 0.5, 0.0] with u = 1.0 gives 2). Inside the
    preconditions the cumulative sums are non-decreasing and not NaN, so DispatchSampling's
    kernel writes exactly the first such k (the last index when none).
    Outside them it departs (not findings, UB here): with a NaN u and vocab_size > 1 it
    writes nothing (the output is uninitialised memory), with a negative probability it can
    write several k and the last one wins."""
    prob, u, s = (tensor_arg(args, k, call) for k in range(3))
    _check_shapes(call, prob, u, s)
    batch, vocab = prob.shape
    od = index_result_dtype(call, str(call.attrs.get("dtype", "int64")), vocab)
    _add_ub(ctx, prob, u, s, call.op)
    pd, odom = ctx.dom(prob.dtype), ctx.dom(od)

    def elem(i: Index) -> Term:
        row = z3.Extract(31, 0, index_value(s.at(i), s.dtype, call.op))
        sample = u.at(i)
        acc = prob.at_multi([row, 0])
        cums = [acc]
        for k in range(1, vocab):
            acc = pd.add(acc, prob.at_multi([row, k]))
            cums.append(acc)
        out: Term = odom.const(vocab - 1)
        for k in range(vocab - 2, -1, -1):
            out = zf.If(pd.lt(sample, cums[k]), odom.const(k), out)
        return out

    result = Tensor.from_flat(u.shape, od, elem)
    return checked_result(call, result)
