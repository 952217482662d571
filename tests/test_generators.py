"""Tests of the graph generators: graph IR, emitter, importer, op specs, `simple` generator.

Everything is checked against TVM itself: the emitter compares every node's declared type with
TVM's inference, modules must pass Relax's well-formedness check, a sample is built and run on
the VM, and the fusion pipeline (the main job of tvtv) must accept generated modules.
"""
from __future__ import annotations

import json

import numpy as np
import pytest
import tvm
from tvm import relax

from generators import GENERATORS, derive_seed, generate_graphs, generate_modules
from generators.emit import emit
from generators.graph import CONST, GET_ITEM, Graph, GraphError, Node, TensorSpec, union
from generators.importer import UnsupportedModule, import_module
from generators.ops import MAX_ELEMS, OPS, normalize_op_name
from generators.simple import generate

SEED = 2024
N_GRAPHS = 40
MIN_OPS, MAX_OPS = 10, 30


@pytest.fixture(scope="module")
def graphs() -> list[Graph]:
    return generate_graphs("simple", N_GRAPHS, SEED, MIN_OPS, MAX_OPS)


@pytest.fixture(scope="module")
def modules(graphs: list[Graph]) -> list[tvm.ir.IRModule]:
    return [emit(g) for g in graphs]


def main_op_calls(mod: tvm.ir.IRModule) -> list[str]:
    """Names of the Relax operators called in `main`, in binding order."""
    names = []
    for block in mod["main"].body.blocks:
        for b in block.bindings:
            if isinstance(b.value, tvm.ir.Call) and isinstance(b.value.op, tvm.ir.Op):
                names.append(b.value.op.name)
    return names


def run_on_vm(mod: tvm.ir.IRModule, graph: Graph, seed: int = 0) -> list[np.ndarray]:
    ex = relax.build(mod, target="llvm")
    vm = relax.VirtualMachine(ex, tvm.cpu())
    rng = np.random.default_rng(seed)
    args = [tvm.runtime.tensor(rng.standard_normal(s.shape).astype(s.dtype), tvm.cpu())
            for s in graph.inputs.values()]
    out = vm["main"](*args)
    outs = [out] if len(graph.outputs) == 1 else [out[i] for i in range(len(graph.outputs))]
    return [o.numpy() for o in outs]


def fusion_pipeline(mod: tvm.ir.IRModule) -> tvm.ir.IRModule:
    return tvm.transform.Sequential([
        relax.transform.LegalizeOps(), relax.transform.AnnotateTIROpPattern(),
        relax.transform.FuseOps(), relax.transform.FuseTIR()])(mod)


# -- generated modules --------------------------------------------------------------------------
def test_generated_modules_are_well_formed_with_op_counts_in_range(graphs, modules):
    for g, mod in zip(graphs, modules):
        assert relax.analysis.check_well_formed(mod)
        ops = main_op_calls(mod)
        assert MIN_OPS <= len(ops) <= MAX_OPS
        assert ops == g.op_sequence()
        assert mod["main"].attrs["global_symbol"] == "main"


def test_generate_modules_matches_generate_graphs(graphs):
    mods = generate_modules("simple", 3, SEED, MIN_OPS, MAX_OPS)
    for g, mod in zip(graphs, mods):
        assert mod.script() == emit(g).script()
    for i in range(3):
        assert graphs[i].to_dict() == generate(derive_seed(SEED, i), MIN_OPS, MAX_OPS).to_dict()
    assert "simple" in GENERATORS
    with pytest.raises(ValueError):
        generate_graphs("no-such-generator", 1, 0)


def test_graphs_have_no_dead_values_and_small_tensors(graphs):
    for g in graphs:
        uses = g.consumers()
        assert all(uses[name] for name in g.inputs), "unused graph input"
        for n in g.nodes:
            specs = [n.out] if isinstance(n.out, TensorSpec) else list(n.out)
            assert all(s.size <= MAX_ELEMS for s in specs)
            if n.name not in g.outputs:
                assert uses[n.name], f"{n.name} is dead"
        # outputs are exactly the unused values, and all are tensors
        assert sorted(g.outputs) == sorted(n.name for n in g.nodes if not uses[n.name])
        assert all(isinstance(g.spec_of(o), TensorSpec) for o in g.outputs)


def test_same_seed_same_module_different_seed_different_graph():
    a, b = generate(12345), generate(12345)
    assert a.to_dict() == b.to_dict()
    assert emit(a).script() == emit(b).script()
    assert generate(12346).to_dict() != a.to_dict()


def test_build_and_run_on_vm(graphs, modules):
    for g, mod in list(zip(graphs, modules))[:8]:
        outs = run_on_vm(mod, g)
        assert len(outs) == len(g.outputs)
        for o, name in zip(outs, g.outputs):
            spec = g.spec_of(name)
            assert o.shape == spec.shape and str(o.dtype) == spec.dtype


def test_fusion_pipeline_accepts_generated_modules(graphs, modules):
    fused_groups = 0
    for g, mod in list(zip(graphs, modules))[:10]:
        out = fusion_pipeline(mod)
        assert relax.analysis.check_well_formed(out)
        names = [gv.name_hint for gv in out.functions]
        fused_groups += sum(n.startswith("fused_") for n in names)
        # main now only calls PrimFuncs (plus tuple plumbing): no high-level op is left
        assert all(op == "relax.call_tir" for op in main_op_calls(out))
    assert fused_groups > 0, "FuseOps fused nothing in 10 generated graphs"


# -- graph IR, emitter and importer ------------------------------------------------------------------
def test_import_inverts_emit(graphs, modules):
    for g, mod in zip(graphs, modules):
        back = import_module(mod)
        assert back.to_dict() == g.to_dict()
        assert emit(back).script() == mod.script()


def test_import_from_tvmscript_text(graphs, modules):
    """Parse the printed module (graphs without tensor constants: TVM cannot print those) and
    import: same graph, so attributes survive TVMScript too."""
    checked = 0
    for g, mod in zip(graphs, modules):
        if any(n.op == CONST and n.out.ndim > 0 for n in g.nodes):
            continue
        parsed = tvm.script.from_source(mod.script())
        assert import_module(parsed).to_dict() == g.to_dict()
        checked += 1
    assert checked >= 3


def test_json_round_trip(graphs):
    for g in graphs[:10]:
        text = g.to_json()
        back = Graph.from_json(text)
        assert back.to_dict() == g.to_dict()
        assert json.loads(text) == g.to_dict()
        assert emit(back).script() == emit(g).script()


def test_graph_constants_scalars_and_tensors_appear(graphs):
    consts = [n for g in graphs for n in g.nodes if n.op == CONST]
    assert any(n.out.ndim == 0 and n.out.dtype == "float32" for n in consts)
    assert any(n.out.ndim > 0 and n.out.dtype == "float32" for n in consts)  # weights
    assert any(n.out.dtype == "int64" for n in consts)  # take indices


def test_emit_rejects_a_wrong_declared_type():
    g = Graph({"x": TensorSpec((2, 3), "float32")},
              [Node("y", "relax.nn.relu", ["x"], {}, TensorSpec((3, 2), "float32"))], ["y"])
    with pytest.raises(GraphError, match="TVM infers"):
        emit(g)
    g.nodes[0].out = TensorSpec((2, 3), "float32")
    assert relax.analysis.check_well_formed(emit(g))


def test_validate_rejects_malformed_graphs():
    x = TensorSpec((2,), "float32")
    with pytest.raises(GraphError, match="before it is defined"):
        Graph({"x": x}, [Node("a", "relax.exp", ["b"], {}, x)], ["a"]).validate()
    with pytest.raises(GraphError, match="defined twice"):
        Graph({"x": x}, [Node("x", "relax.exp", ["x"], {}, x)], ["x"]).validate()
    with pytest.raises(GraphError, match="not defined"):
        Graph({"x": x}, [Node("a", "relax.exp", ["x"], {}, x)], ["zz"]).validate()


def test_multiple_outputs_and_tuple_items_round_trip():
    x = TensorSpec((4, 6), "float32")
    half = TensorSpec((4, 3), "float32")
    g = Graph({"x": x}, [
        Node("s", "relax.split", ["x"], {"indices_or_sections": 2, "axis": 1}, (half, half)),
        Node("a", GET_ITEM, ["s"], {"index": 0}, half),
        Node("b", GET_ITEM, ["s"], {"index": 1}, half),
        Node("c0", CONST, [], {"value": 1.5, "dtype": "float32"}, TensorSpec((), "float32")),
        Node("m", "relax.multiply", ["a", "c0"], {}, half),
    ], ["m", "b"])
    mod = emit(g)
    assert isinstance(mod["main"].body.body, tvm.ir.Tuple)
    assert import_module(mod).to_dict() == g.to_dict()
    outs = run_on_vm(mod, g)
    xs = np.random.default_rng(0).standard_normal((4, 6)).astype("float32")
    np.testing.assert_array_equal(outs[0], xs[:, :3] * np.float32(1.5))
    np.testing.assert_array_equal(outs[1], xs[:, 3:])


def test_importer_rejects_what_the_graph_ir_cannot_hold():
    """Symbolic shapes have no static type in the graph IR."""
    n = tvm.tirx.Var("n", "int64")
    x = relax.Var("x", relax.TensorType([n, 3], "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            y = bb.emit_output(relax.op.exp(x), "y")
        bb.emit_func_output(y)
    with pytest.raises(UnsupportedModule, match="non-static"):
        import_module(bb.get())


def test_importer_reads_lowered_modules_as_opaque_call_tir():
    """After LegalizeOps + FuseOps + FuseTIR, main calls PrimFuncs: call_tir nodes naming the
    PrimFunc, whose TVMScript is kept; emitting the import gives a well-formed module that
    computes the same."""
    g0 = generate(3, 3, 5, ops=["relax.add", "relax.exp"])
    mod = fusion_pipeline(emit(g0))
    g = import_module(mod)
    assert g.op_sequence() and set(g.op_sequence()) == {"relax.call_tir"}
    assert {n.attrs["func"] for n in g.op_calls()} == set(g.prim_funcs)
    back = emit(g)
    assert relax.analysis.check_well_formed(back)
    tvm.ir.assert_structural_equal(back, mod)
    ins = run_on_vm(mod, g0)
    assert all(np.array_equal(a, b) for a, b in zip(ins, run_on_vm(back, g0)))


def test_importer_reads_foreign_ops_generically():
    x = relax.Var("x", relax.TensorType((2, 3), "float32"))
    bb = relax.BlockBuilder()
    with bb.function("main", [x]):
        with bb.dataflow():
            y = bb.emit_output(relax.op.cumsum(x, axis=1), "y")
        bb.emit_func_output(y)
    g = import_module(bb.get())
    assert g.op_sequence() == ["relax.cumsum"]
    assert g.nodes[0].attrs["axis"] == 1 and g.nodes[0].out == TensorSpec((2, 3), "float32")


# -- op specs ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(OPS))
def test_each_op_spec_type_checks_alone(name):
    spec = OPS[name]
    seen: set[str] = set()
    for seed in range(4):
        g = generate(seed, 1, spec.calls[1], ops=[name])
        assert spec.calls[0] <= g.num_ops <= spec.calls[1]
        assert set(g.op_sequence()) <= set(spec.emits)
        seen.update(g.op_sequence())
        mod = emit(g)  # checks every declared type against TVM's inference
        assert relax.analysis.check_well_formed(mod)
        relax.transform.LegalizeOps()(mod)
        assert import_module(mod).to_dict() == g.to_dict()
    main_op = "relax.matmul" if name == "linear" else name
    assert main_op in seen


def test_every_op_spec_builds_and_runs():
    """One graph per op spec, side by side in one module: every op legalizes, compiles
    with LLVM and runs on the VM (one build, to keep the test fast)."""
    parts = [generate(7, 1, s.calls[1], ops=[n]) for n, s in sorted(OPS.items())]
    g = union(parts)
    outs = run_on_vm(emit(g), g)
    assert len(outs) == len(g.outputs)


def test_op_table_covers_the_required_ops():
    required = ["add", "subtract", "multiply", "divide", "maximum", "minimum", "exp", "tanh",
                "sigmoid", "sqrt", "negative", "abs", "nn.relu", "nn.gelu", "nn.silu", "clip",
                "nn.softmax", "nn.log_softmax", "reshape", "permute_dims", "expand_dims",
                "squeeze", "flatten", "concat", "split", "strided_slice", "take",
                "broadcast_to", "tile", "repeat", "flip", "sum", "mean", "max", "min",
                "variance", "argmax", "matmul", "linear", "nn.conv2d", "nn.max_pool2d",
                "nn.avg_pool2d", "nn.adaptive_avg_pool2d", "nn.layer_norm", "nn.batch_norm",
                "nn.pad", "where", "astype", "less", "greater", "equal", "not_equal",
                "less_equal", "greater_equal"]
    for r in required:
        assert normalize_op_name(r) in OPS
    with pytest.raises(KeyError):
        normalize_op_name("relax.no_such_op")


def test_generate_respects_an_op_subset_and_bounds():
    g = generate(5, 4, 6, ops=["add", "relax.nn.relu"])
    assert 4 <= g.num_ops <= 6
    assert set(g.op_sequence()) <= {"relax.add", "relax.nn.relu"}
    with pytest.raises(ValueError):
        generate(0, 5, 4)


def test_generation_does_not_depend_on_hash_seed():
    """Same graph in fresh processes with different string-hash seeds (no set/dict-order
    dependence)."""
    import os
    import subprocess
    import sys

    code = ("from generators.simple import generate; "
            "print(generate(99, ops={'add', 'nn.relu', 'concat', 'split', 'sum'}).to_json())")
    outs = []
    for hash_seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        outs.append(subprocess.run([sys.executable, "-c", code], env=env, check=True,
                                   capture_output=True, text=True).stdout)
    assert outs[0] == outs[1] and outs[0].strip()


# -- functions and control flow in the graph IR ------------------------------------------------------
from generators.emit import parse_script, to_script  # noqa: E402
from generators.graph import (CALL, FUNCTION, IF, INVOKE, MATCH_CAST, TUPLE,  # noqa: E402
                              FuncSpec)

F23 = TensorSpec((2, 3), "float32")
I3 = TensorSpec((3,), "int32")
B0 = TensorSpec((), "bool")


def module_with_functions() -> Graph:
    """main calls private `sub` (which calls private `leaf` and takes a tuple), defines and
    invokes a closure, match_casts, and branches on an If returning a tuple."""
    leaf = Graph({"a": F23}, [Node("r", "relax.exp", ["a"], {}, F23)], ["r"], private=True)
    sub = Graph({"a": F23, "b": (F23, I3)}, [
        Node("b0", GET_ITEM, ["b"], {"index": 0}, F23),
        Node("s", "relax.add", ["a", "b0"], {}, F23),
        Node("r", CALL, ["s"], {"func": "leaf"}, F23),
    ], ["r", "b0"], private=True)
    inner = Graph({"p": F23}, [
        Node("q", "relax.negative", ["p"], {}, F23),
        Node("q2", "relax.multiply", ["q", "y0"], {}, F23),  # y0 is captured from main
    ], ["q2"])
    then = Graph({}, [Node("k", "relax.multiply", ["zo", "zo"], {}, F23, dataflow=False)],
                 ["k", "zo"])
    other = Graph({}, [Node("k2", "relax.subtract", ["zo", "x"], {}, F23, dataflow=False)],
                  ["k2", "y0"])
    main = Graph({"x": F23, "c": B0, "i": I3}, [
        Node("t0", TUPLE, ["x", "i"], {"inline": True}, (F23, I3)),
        Node("y", CALL, ["x", "t0"], {"func": "sub"}, (F23, F23)),
        Node("y0", GET_ITEM, ["y"], {"index": 0}, F23),
        Node("f", FUNCTION, [], {}, FuncSpec((F23,), F23), [inner]),
        Node("z", INVOKE, ["f", "y0"], {}, F23),
        Node("m", MATCH_CAST, ["z"], {}, F23),
        Node("c0", CONST, [], {"value": 0.5, "dtype": "float32"}, TensorSpec((), "float32")),
        Node("zo", "relax.add", ["m", "c0"], {}, F23),
        Node("iff", IF, ["c"], {}, (F23, F23), [then, other], dataflow=False),
        Node("i0", GET_ITEM, ["iff"], {"index": 0}, F23),
        Node("i1", GET_ITEM, ["iff"], {"index": 1}, F23),
        Node("res", "relax.add", ["i0", "i1"], {}, F23),
    ], ["res"], functions={"leaf": leaf, "sub": sub})
    return main


def test_functions_and_control_flow_round_trip():
    g = module_with_functions()
    g.validate()
    mod = emit(g)  # every declared type is checked against TVM's inference
    assert relax.analysis.check_well_formed(mod)
    assert {gv.name_hint for gv in mod.functions} == {"main", "sub", "leaf"}
    assert "global_symbol" not in (mod["sub"].attrs or {})
    back = import_module(mod)
    assert back.to_dict() == g.to_dict()
    tvm.ir.assert_structural_equal(emit(back), mod)
    assert Graph.from_json(g.to_json()).to_dict() == g.to_dict()
    # the TVMScript printer gives the same module, with and without type annotations
    for annotate in (True, False):
        tvm.ir.assert_structural_equal(parse_script(to_script(g, annotate=annotate)), mod)


def test_functions_module_builds_and_runs():
    """LambdaLift (nested functions), build, run: the value matches numpy on both branches.
    The closure reads its argument instead of the capture (same value): TVM 0.27 cannot build
    a lifted closure that captures a tensor ("Argument 0 type mismatch ... given R.Any")."""
    g = module_with_functions()
    g.node("f").body[0].nodes[1].inputs = ["q", "p"]
    ex = relax.build(relax.transform.LambdaLift()(emit(g)), target="llvm")
    vm = relax.VirtualMachine(ex, tvm.cpu())
    x = np.random.default_rng(1).standard_normal((2, 3)).astype("float32")
    i = np.arange(3, dtype="int32")
    y0 = np.exp(x + x)
    zo = (-y0 * y0) + np.float32(0.5)
    for c in (True, False):
        out = vm["main"](tvm.runtime.tensor(x), tvm.runtime.tensor(np.array(c)),
                         tvm.runtime.tensor(i)).numpy()
        want = zo * zo + zo if c else (zo - x) + y0
        np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-6)


def test_queries_across_functions():
    g = module_with_functions()
    scopes = [s for s, _ in g.walk()]
    assert scopes == ["main", "main/f.0", "main/iff.0", "main/iff.1", "leaf", "sub"]
    assert [n.op for n in g.op_calls(deep=False)] == ["relax.add", "relax.add"]
    assert g.op_sequence() == ["relax.negative", "relax.multiply", "relax.add",
                               "relax.multiply", "relax.subtract", "relax.add", "relax.exp",
                               "relax.add"]
    assert g.num_ops == 8
    # y0 is used by the invoke and, inside the closure and the else branch, by f and iff
    assert g.consumers()["y0"] == ["f", "z", "iff"]
    assert g.node("f").body[0].free_vars() == ["y0"]
    edges = set(g.op_edge_types())
    # across a call: add in sub -> exp in leaf; results of leaf reach main's closure
    assert ("relax.add", "relax.exp") in edges
    assert ("relax.exp", "relax.negative") in edges and ("relax.exp", "relax.multiply") in edges
    # through the closure result, a match_cast, and out of the If
    assert ("relax.multiply", "relax.add") in edges and ("relax.subtract", "relax.add") in edges
    assert ("relax.negative", "relax.multiply") in edges
    assert all(a != ("main", "c0") for a, _ in g.op_edges())


def test_editing_helpers_for_minimization():
    g = module_with_functions()
    g.replace_uses("y0", "x")  # also inside the closure and the else branch
    assert g.node("f").body[0].free_vars() == ["x"]
    assert g.node("iff").body[1].outputs == ["k2", "x"]
    g.prune()  # y0 is now dead; sub (hence leaf) is still called by y -> dead too
    names = [n.name for n in g.nodes]
    assert "y0" not in names and "y" not in names and "t0" not in names
    assert g.functions == {}
    g.validate()
    assert relax.analysis.check_well_formed(emit(g))


def test_validate_checks_functions_and_bodies():
    g = module_with_functions()
    g.node("y").attrs["func"] = "nope"
    with pytest.raises(GraphError, match="unknown function"):
        g.validate()
    g = module_with_functions()
    g.node("iff").dataflow = True
    with pytest.raises(GraphError, match="dataflow=False"):
        g.validate()
    g = module_with_functions()
    g.node("f").body[0].nodes[0].name = "x"  # shadows main's parameter
    with pytest.raises(GraphError, match="defined twice"):
        g.validate()


def test_importer_reads_tvmscript_with_control_flow():
    """A hand-written module with If, match_cast, a closure, inline nested tuples and a call of a
    private function: import, emit and print again give the same module."""
    src = """
# from tvm.script import ir as I
# from tvm.script import relax as R
@I.ir_module
class Module:
    @R.function(private=True)
    def sub(a: R.Tensor((2, 3), dtype="float32"), b: R.Tuple(R.Tensor((2, 3), dtype="float32"), R.Tensor((3,), dtype="int32"))) -> R.Tensor((2, 3), dtype="float32"):
        with R.dataflow():
            b0 = b[0]
            r = R.exp(R.add(a, b0))
            R.output(r)
        return r

    @R.function
    def main(x: R.Tensor((2, 3), dtype="float32"), c: R.Tensor((), dtype="bool"), i: R.Tensor((3,), dtype="int32")) -> R.Tensor((2, 3), dtype="float32"):
        cls = Module
        with R.dataflow():
            y = cls.sub(x, (x, i))
            @R.function
            def f(p: R.Tensor((2, 3), dtype="float32")) -> R.Tensor((2, 3), dtype="float32"):
                q = R.negative(p)
                q2 = R.multiply(q, y)
                return q2
            z = f(y)
            t = (z, (y, i))
            t1 = t[1]
            m = R.match_cast(z, R.Tensor((2, 3), dtype="float32"))
            zo = R.add(m, t1[0])
            R.output(zo, y)
        if c:
            k = R.multiply(zo, zo)
            iff = (k, zo)
        else:
            k2 = R.subtract(zo, x)
            iff = (k2, y)
        res = R.add(iff[0], iff[1])
        return res
"""
    mod = parse_script(src)
    g = import_module(mod)
    ops = {n.op for _, n in g.all_nodes()}
    assert {CALL, FUNCTION, INVOKE, MATCH_CAST, IF, TUPLE, GET_ITEM} <= ops
    assert list(g.functions) == ["sub"] and g.functions["sub"].private
    tvm.ir.assert_structural_equal(emit(g), mod)
    tvm.ir.assert_structural_equal(parse_script(to_script(g)), mod)
    # after LambdaLift a closure without captures is a private global function, called as such
    plain = parse_script(src.replace("R.multiply(q, y)", "R.multiply(q, p)"))
    lifted = import_module(relax.transform.LambdaLift()(plain))
    assert len(lifted.functions) == 2
    assert [n.op for n in lifted.nodes if n.op in (CALL, FUNCTION, INVOKE)] == [CALL, CALL]
    # one that captures becomes R.make_closure of type R.Any: not representable
    with pytest.raises(UnsupportedModule):
        import_module(relax.transform.LambdaLift()(mod))


def test_importer_reads_modules_of_the_typed_generator():
    """The type-directed generator builds Relax directly (tuples, If, nested and private
    functions, match_cast, aliases with less precise types): the importer reads its modules
    and emitting them again gives the structurally same module."""
    pytest.importorskip("generators.typed")
    from generators import generate_modules as gen

    ops: set[str] = set()
    for mod in gen("typed", 10, 3):
        g = import_module(mod)
        ops.update(n.op for _, n in g.all_nodes())
        tvm.ir.assert_structural_equal(emit(g), mod)
    assert len(ops) > 10


@pytest.mark.parametrize("passes", [
    ("LegalizeOps", "AnnotateTIROpPattern", "FuseOps", "FuseTIR"),
    ("LambdaLift",), ("InlinePrivateFunctions",), ("ToNonDataflow",), ("CanonicalizeBindings",),
])
def test_importer_reads_modules_after_passes(passes):
    """HIRGen modules (private and nested functions, Ifs) after TVM passes: the importer reads
    them (PrimFuncs as opaque text) and emitting gives the structurally same module."""
    for g in generate_graphs("hirgen", 3, 5):
        mod = tvm.transform.Sequential([getattr(relax.transform, p)() for p in passes])(emit(g))
        tvm.ir.assert_structural_equal(emit(import_module(mod)), mod)
