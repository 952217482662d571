"""Under per-operation, an output's queries carry the run facts of the source bindings it is
computed from only (`tvtv.refinement._sliced`); a difference found without the others' facts
is asked again with all of them, so a run the other outputs make poison is never a
counterexample."""
from __future__ import annotations

import tvm
from tvm import relax
from tvm.script import ir as I
from tvm.script import relax as R

import tvtv
import tvtv.refinement as refinement
from tvtv.absfp.abstract import AbstractModel
from tvtv.encode.context import EncodeContext
from tvtv.encode.function import FunctionEncoder, input_value
from tvtv.ir import relax_reader

PER_OPERATION = ["no-nan", "no-inf", "per-operation"]


def _with_log(first) -> tvm.IRModule:
    """main(x) = (first(x), log(x)) over a float32 vector of 4."""
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType((4,), "float32"))
    with bb.function("main", [x]):
        with bb.dataflow():
            a = bb.emit_output(first(x))
            b = bb.emit_output(relax.op.log(x))
        bb.emit_func_output(relax.Tuple([a, b]))
    return bb.get()


AbsAndLog = _with_log(relax.op.abs)
# abs(x) = relu(x) where log(x) is neither NaN nor -inf (x > 0): only output 1's facts make
# output 0 equal
ReluAndLog = _with_log(relax.op.nn.relu)
NegativeAndLog = _with_log(relax.op.negative)


@I.ir_module
class Branches:
    @R.function
    def main(x: R.Tensor((4,), "float32"), y: R.Tensor((4,), "float32")) -> R.Tuple(R.Tensor((4,), "float32"), R.Tuple(R.Tensor((4,), "float32"), R.Tensor((4,), "float32"))):
        with R.dataflow():
            a = R.exp(x)
            b = R.add(a, y)
            c = R.log(y)
            d = R.multiply(c, c)
            R.output(a, b, d)
        return (b, (d, a))


def _counting_facts(monkeypatch) -> list[int]:
    """The number of premises of each output query, in order."""
    sizes: list[int] = []
    inner = refinement._differing_index

    def counted(enc, pre, *args, **kw):
        sizes.append(len(pre))
        return inner(enc, pre, *args, **kw)
    monkeypatch.setattr(refinement, "_differing_index", counted)
    return sizes


def test_an_output_equal_only_on_runs_another_output_admits_is_proved(monkeypatch):
    """Output 0's own premises admit x < 0, where abs and relu differ: the difference is
    asked again with output 1's facts (log(x) neither NaN nor -inf) and is none."""
    sizes = _counting_facts(monkeypatch)
    (r,) = tvtv.verify(AbsAndLog, ReluAndLog, timeout=20, assume=PER_OPERATION).results
    assert r.verdict == "proved", r.to_dict()
    # on the runs without NaN/inf inside: the sliced query, then the one with every premise
    assert len(sizes) >= 2 and sizes[-2] < sizes[-1]


def test_twin_a_difference_on_admitted_runs_is_a_counterexample():
    (r,) = tvtv.verify(AbsAndLog, NegativeAndLog, timeout=20, assume=PER_OPERATION).results
    assert r.verdict == "counterexample", r.to_dict()
    x = r.counterexample.inputs["x"]
    assert (x > 0).all(), "a run where log(x) is finite"


def test_without_per_operation_the_negative_inputs_are_a_counterexample():
    (r,) = tvtv.verify(AbsAndLog, ReluAndLog, timeout=20, assume=["no-nan", "no-inf"]).results
    assert r.verdict == "counterexample", r.to_dict()
    assert (r.counterexample.inputs["x"] < 0).any()


def test_output_cones_follow_the_bindings():
    """Each flattened output is computed from the bindings its expression reaches: b from
    a (and itself), d from c, a alone; the live tensors are owned by their bindings."""
    prog = relax_reader.read_module(Branches)
    fn = prog.functions["main"]
    ctx = EncodeContext(AbstractModel())
    ctx.live_values = []
    args = [input_value(p.name, p.ty, ctx) for p in fn.params]
    FunctionEncoder(prog, ctx).call(fn, args)
    names = {b.vid: b.name for b in fn.body.bindings}
    cones = [sorted(names[v] for v in cone) for cone in ctx.output_cones]
    assert cones == [["a", "b"], ["c", "d"], ["a"]]
    owners = sorted(names[ctx.live_binding[id(t)]] for t in ctx.live_values)
    assert owners == ["a", "b", "c", "d"]
