"""Tests of the type-directed generator (`generators/typed`, after the TVM fuzzing RFC).

Everything is checked against TVM itself: solvers against TVM's type inference, modules against
Relax's well-formedness check, `relax.build` and the VM, and tvtv's reader and FuseOps check.
"""
from __future__ import annotations

import random
import zlib
from collections import Counter

import ml_dtypes
import numpy as np
import pytest
import tvm
from tvm import relax

from generators import GENERATORS, generate_module
from generators.typed import OPS, generate
from generators.typed.exprgen import ExprGenerator, Options
from generators.typed.opinfo import EXPR
from generators.typed.stats import module_stats
from generators.typed.types import (INPUT_MAX_ELEMS, MAX_ELEMS, TensorTy, TypeGenerator,
                                    from_relax, to_relax)
from tvtv import api
from tvtv.ir import relax_reader, tvm_bridge
from tvtv.ir.tvm_bridge import is_well_formed

MIN_OPS, MAX_OPS = 10, 30
FAST_MIN, FAST_MAX = 10, 20   # the fast set: smaller modules build faster
N_FAST = 15


def random_inputs(mod: tvm.ir.IRModule, seed: int) -> list:
    """Random arguments for `main` (ints in -5..5, bools, standard normal floats)."""
    rng = np.random.default_rng(seed)
    out = []
    for p in mod["main"].params:
        ty = from_relax(p.ty)
        assert ty is not None, "main's parameters have static types"
        if ty.dtype == "bool":
            a = rng.random(ty.shape) < 0.5
        elif ty.dtype.startswith("int"):
            a = rng.integers(-5, 6, ty.shape).astype(ty.dtype)
        elif ty.dtype == "bfloat16":
            a = rng.standard_normal(ty.shape).astype(ml_dtypes.bfloat16)
        else:
            a = rng.standard_normal(ty.shape).astype(ty.dtype)
        out.append(tvm.runtime.tensor(np.asarray(a), tvm.cpu()))
    return out


def build_vm(mod: tvm.ir.IRModule) -> relax.VirtualMachine:
    """`relax.build` on CPU. Local functions are lifted first: the default build pipeline has no
    LambdaLift and VMShapeLower rejects local functions ("make sure to run it after
    LambdaLift")."""
    return relax.VirtualMachine(relax.build(relax.transform.LambdaLift()(mod), target="llvm"),
                                tvm.cpu())


def flatten_values(value) -> list:
    if isinstance(value, tvm.runtime.Tensor):
        return [value]
    return [t for v in value for t in flatten_values(v)]


def flatten_types(ty) -> list[TensorTy]:
    return [ty] if isinstance(ty, TensorTy) else [t for f in ty.fields for t in flatten_types(f)]


def assert_outputs_match(out, declared) -> None:
    """The VM's results have exactly the shapes and dtypes TVM's type inference declared."""
    values, types = flatten_values(out), flatten_types(declared)
    assert len(values) == len(types)
    for v, t in zip(values, types):
        assert (tuple(v.shape), str(v.dtype)) == (t.shape, t.dtype), f"got {v.dtype}{v.shape}, declared {t}"


def check_runs(mod: tvm.ir.IRModule, seed: int, n_inputs: int = 2) -> None:
    vm = build_vm(mod)
    ret = from_relax(mod["main"].ret_ty)
    for k in range(n_inputs):
        assert_outputs_match(vm["main"](*random_inputs(mod, seed * 100 + k)), ret)


def top_level_conditions(mod: tvm.ir.IRModule) -> list[tvm.ir.IRModule]:
    """For each If bound at the top level of `main`: a copy of the module whose `main` stops
    before that If and returns its condition (to see which branch the inputs take)."""
    main = mod["main"]
    out = []
    for bi, block in enumerate(main.body.blocks):
        for k, b in enumerate(block.bindings):
            if isinstance(b, relax.VarBinding) and isinstance(b.value, relax.If):
                blocks = list(main.body.blocks[:bi])
                if k:
                    blocks.append(relax.BindingBlock(list(block.bindings[:k])))
                cond = b.value.cond
                f = relax.Function(main.params, relax.SeqExpr(blocks, cond), cond.ty,
                                   is_pure=True).with_attr("global_symbol", "main")
                m = tvm.IRModule({gv: fn for gv, fn in mod.functions.items()
                                  if gv.name_hint != "main"})
                m["main"] = f
                out.append(m)
    return out


@pytest.fixture(scope="module")
def modules() -> list[tvm.ir.IRModule]:
    return [generate_module("typed", 7, i, FAST_MIN, FAST_MAX) for i in range(N_FAST)]


# -- the op registry and the RFC invariant --------------------------------------------------------
def test_registry_covers_the_op_families():
    names = set(OPS)
    assert len(names) >= 70
    for op in ("relax.add", "relax.divide", "relax.greater", "relax.where", "relax.sum",
               "relax.argmax", "relax.matmul", "relax.reshape", "relax.permute_dims",
               "relax.concat", "relax.split", "relax.strided_slice", "relax.take",
               "relax.nn.conv2d", "relax.nn.max_pool2d", "relax.nn.avg_pool2d",
               "relax.nn.adaptive_avg_pool2d", "relax.nn.softmax", "relax.nn.layer_norm",
               "relax.nn.batch_norm", "relax.nn.group_norm", "relax.astype"):
        assert op in names, op


@pytest.mark.parametrize("name", list(OPS))
def test_recognizer_implies_solver_solution_type_checks(name):
    """RFC invariants: sampled return types are recognized, and whenever the recognizer accepts
    a type its solver returns arguments that TVM's type inference maps back to exactly it."""
    info = OPS[name]
    rng = random.Random(zlib.crc32(name.encode()))
    tg = TypeGenerator(rng)
    bb = relax.BlockBuilder()
    solved = 0
    for i in range(40):
        if i % 2 == 0:
            ty, sol = info.sample(tg)
            assert info.recognize(ty), f"sampler returned {ty}, not recognized"
        else:
            ty = tg.tensor(lo=0, max_elems=MAX_ELEMS) if i % 3 else tg.tuple_containing(
                tg.tensor())[0]
            if not info.recognize(ty):
                continue
            sol = info.solve(ty, tg)
        args = [relax.Var(f"a{k}", to_relax(a.ty)) for k, a in enumerate(sol.args)]
        call = bb.normalize(info.build(args, sol.attrs))
        assert from_relax(call.ty) == ty, f"{ty} <- {sol}: TVM infers {call.ty}"
        assert all(a.ty.size <= MAX_ELEMS for a in sol.args if hasattr(a.ty, "size"))
        solved += 1
    assert solved >= 20


@pytest.mark.slow
def test_every_op_builds_and_runs_on_cpu():
    """One module with two sampled calls of every op (constant args where the solver asks for
    them), built with relax.build and run: every dtype an op's recognizer accepts runs."""
    rng = random.Random(11)
    tg = TypeGenerator(rng)
    gen = ExprGenerator(rng, tg, 0, Options())
    bb = relax.BlockBuilder()
    params, bindings, outs = [], [], []
    for name, info in OPS.items():
        for i in range(2):
            ty, sol = info.sample(tg)
            args = []
            for k, a in enumerate(sol.args):
                if a.kind == EXPR:
                    p = relax.Var(f"a{len(params)}", to_relax(a.ty))
                    params.append(p)
                    args.append(p)
                else:
                    args.append(gen.const(a.ty, a.kind, a.bound))
            e = bb.normalize(info.build(args, sol.attrs))
            v = relax.Var(f"v{len(bindings)}", e.ty)
            bindings.append(relax.VarBinding(v, e))
            outs.append(v)
    body = bb.normalize(relax.SeqExpr([relax.BindingBlock(bindings)], relax.Tuple(outs)))
    main = relax.Function(params, body, body.ty, is_pure=True).with_attr("global_symbol", "main")
    mod = tvm.IRModule({"main": main})
    assert is_well_formed(mod)
    out = build_vm(mod)["main"](*random_inputs(mod, 0))
    assert len(out) == 2 * len(OPS)
    assert_outputs_match(out, from_relax(body.ty))


# -- generated modules ---------------------------------------------------------------------------
def test_registry_entry_and_options():
    assert "typed" in GENERATORS
    m = generate(5, 3, 6, ops=["add", "relax.exp", "nn.relu"], dtypes=["float32"])
    st = module_stats(m)
    assert 3 <= st["op_calls"] <= 6
    assert set(k for k in st if k.startswith("dtype:")) <= {"dtype:float32", "dtype:bool"}
    with pytest.raises(ValueError):
        generate(0, 5, 2)
    with pytest.raises(ValueError, match="unknown option"):
        generate(0, no_such_option=1)


def test_modules_well_formed_build_and_run(modules):
    for i, mod in enumerate(modules):
        assert is_well_formed(mod), mod.script()
        n = module_stats(mod)["op_calls"]
        assert FAST_MIN <= n <= FAST_MAX
        for p in mod["main"].params:
            assert from_relax(p.ty).size <= INPUT_MAX_ELEMS
        check_runs(mod, i)


def test_if_conditions_take_both_branches(modules):
    seen: Counter = Counter()
    for i, mod in enumerate(modules[:10]):
        for cm in top_level_conditions(mod)[:1]:
            vm = build_vm(cm)
            for k in range(3):
                seen[bool(vm["main"](*random_inputs(cm, i * 10 + k)).numpy())] += 1
    assert seen[True] > 0 and seen[False] > 0, seen


def test_same_seed_same_script_different_seed_different_module():
    a, b = generate(123, 10, 20), generate(123, 10, 20)
    assert a.script() == b.script()
    assert generate(124, 10, 20).script() != a.script()
    assert generate(123, 10, 20, p_dataflow=0.0).script() != a.script()


def test_modules_survive_tvmscript_round_trip(modules):
    """Printed (by tvtv, which also recovers the tensor constants in print order) and parsed
    back, each module is structurally equal to the generated one."""
    for mod in modules:
        script, arrays = tvm_bridge.module_to_script(mod)
        # constants rebuilt with their dtype: tvm_bridge.parse_script's relax.const(array)
        # turns int64 arrays into int32 constants (reported to the lead)
        consts = [relax.const(a, str(a.dtype)) for a in arrays]
        env = {"I": tvm.script.ir, "R": tvm.script.relax, "T": tvm.script.tirx,
               "metadata": {"ir.GenericConst": consts}}
        back = tvm.script.from_source(script, extra_vars=env)
        assert tvm_bridge.structural_equal(back, mod)


def test_constructs_are_used_over_50_modules():
    total: Counter = Counter()
    for i in range(50):
        total += module_stats(generate(1000 + i, MIN_OPS, MAX_OPS))
    print("construct counts over 50 modules:", dict(sorted(total.items())))
    for k in ("if", "tuple", "get_item", "local_func", "call_local", "private_func",
              "call_private", "match_cast", "match_cast_wide", "dataflow_blocks"):
        assert total[k] >= 5, (k, total)
    for d in ("float32", "float16", "bfloat16", "int32", "int8", "bool"):
        assert total["dtype:" + d] > 0, d


def test_no_integer_division_by_a_non_constant():
    """Integer divide / floor_divide / floor_mod always get a positive constant divisor."""
    for i in range(30):
        mod = generate(2000 + i)
        for _, f in mod.functions.items():
            def visit(e):
                if isinstance(e, tvm.ir.Call) and isinstance(e.op, tvm.ir.Op) and \
                        e.op.name in ("relax.divide", "relax.floor_divide", "relax.floor_mod") \
                        and str(e.ty.dtype).startswith("int"):
                    d = e.args[1]
                    assert isinstance(d, tvm.ir.GenericConst)
                    assert (d.value.numpy() >= 1).all()
            relax.analysis.post_order_visit(f.body, visit)


def test_tvtv_reads_and_checks_fuseops(modules):
    verdicts: Counter = Counter()
    for mod in modules[:4]:
        relax_reader.read_module(mod)
        for r in api.check_pass("FuseOps", mod, timeout=20).results:
            assert r.verdict in ("proved", "unknown"), (r.verdict, r.reason)
            verdicts[r.verdict] += 1
    assert verdicts["proved"] >= 1, verdicts


@pytest.mark.slow
def test_tvtv_fuseops_over_10_modules():
    verdicts: Counter = Counter()
    reasons = []
    for i in range(10):
        mod = generate_module("typed", 99, i, MIN_OPS, MAX_OPS)
        relax_reader.read_module(mod)
        for r in api.check_pass("FuseOps", mod, timeout=30).results:
            verdicts[r.verdict] += 1
            if r.verdict != "proved":
                reasons.append(r.reason)
    print("FuseOps verdicts over 10 typed modules:", dict(verdicts), reasons)
    assert set(verdicts) <= {"proved", "unknown"}


@pytest.mark.slow
def test_200_modules_well_formed_build_and_run():
    failures = []
    for i in range(200):
        mod = generate_module("typed", 2024, i, MIN_OPS, MAX_OPS)
        try:
            assert is_well_formed(mod)
            check_runs(mod, i, n_inputs=1)
        except Exception as err:  # collect all, report at once
            failures.append((i, str(err).strip().splitlines()[-1][:200]))
    print(f"200 typed modules: {200 - len(failures)} built and ran")
    assert not failures, failures
