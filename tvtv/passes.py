"""The registry of passes tvtv knows: name, prerequisites, how to build it, what is supported.

A pass that needs others first is checked on their output: the source of the check is the
module after the prerequisites, the target is that module after the pass.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from tvtv.errors import InputError
from tvtv.ir import tvm_bridge

VALIDATED = "validated"
PREREQUISITE = "prerequisite only (validating it needs the TIR encoder)"
NOT_YET = "runs, not validated yet"


@dataclass(frozen=True)
class PassSpec:
    name: str
    build: Callable[[], Any]
    prerequisites: tuple[str, ...] = ()
    support: str = VALIDATED
    note: str = ""
    # checked through the modules after these passes (tvtv.compose): source ⊑ M1 ⊑ target
    via: tuple[str, ...] = ()
    # the source's operators are first proved equal to their legalization alone (tvtv.lemmas)
    lemmas: bool = False

    def make(self) -> Any:
        return self.build()


def _relax(name: str, *args: Any, **kwargs: Any) -> Callable[[], Any]:
    return lambda: tvm_bridge.relax_pass(name, *args, **kwargs)


PASSES: dict[str, PassSpec] = {}


def register(spec: PassSpec) -> PassSpec:
    PASSES[spec.name] = spec
    return spec


for _name, _note in [
    ("CanonicalizeBindings", "drops trivial bindings"),
    ("DeadCodeElimination", "removes unused bindings and functions"),
    ("ConvertToDataflow", "wraps bindings into dataflow blocks"),
    ("ToNonDataflow", "unwraps dataflow blocks"),
    ("Normalize", "A-normal form"),
    ("LambdaLift", "lifts nested functions to private globals"),
    ("InlinePrivateFunctions", "inlines private Relax functions"),
    ("RemoveRedundantReshape", "removes reshape chains"),
    ("ReorderPermuteDimsAfterConcat", "concat(permute) -> permute(concat)"),
    ("CombineParallelMatmul", "parallel matmuls -> one matmul + split"),
    # both passes ignore batch_norm's `training` attribute (docs/findings.md)
    ("DecomposeOpsForInference", "batch_norm -> elementwise ops, as in inference whatever its "
                                 "training attribute"),
    ("DecomposeOpsForTraining", "batch_norm -> mean, variance and elementwise ops, as in "
                                "training whatever its training attribute"),
]:
    register(PassSpec(_name, _relax(_name), note=_note))

register(PassSpec("EliminateCommonSubexpr", _relax("EliminateCommonSubexpr", call_only=False),
                  note="reuses the first of structurally equal bindings (call_only=False)"))
register(PassSpec("TopologicalSort", _relax("TopologicalSort", "depth-first", "from-outputs"),
                  note="reorders bindings (depth-first, from outputs)"))
register(PassSpec("FuseOpsByPattern", lambda: tvm_bridge.fuse_ops_by_pattern(),
                  note="fuses matmul/conv2d epilogues into Composite functions (tvtv's patterns)"))
# Passes that emit or change TIR, validated through PrimFunc bodies (tvtv/encode/tir/,
# tests/test_tir_*.py; LegalizeOps op by op in docs/legalize.md).
TIR_VALIDATED = "validated through PrimFunc bodies (TIR encoder)"
register(PassSpec("LegalizeOps", _relax("LegalizeOps"), support=TIR_VALIDATED, lemmas=True,
                  note="lowers Relax ops to TIR PrimFuncs (TIR means what TVM's CPU code does); "
                       "each operator is first proved alone"))
register(PassSpec("AnnotateTIROpPattern", _relax("AnnotateTIROpPattern"), ("LegalizeOps",),
                  support=TIR_VALIDATED, note="annotates PrimFuncs with op patterns"))
register(PassSpec("FuseOps", _relax("FuseOps"), ("LegalizeOps", "AnnotateTIROpPattern"),
                  note="groups call_tir into Primitive functions (PrimFuncs opaque)"))
register(PassSpec("FuseTIR", _relax("FuseTIR"), ("LegalizeOps", "AnnotateTIROpPattern", "FuseOps"),
                  support=TIR_VALIDATED, note="merges fused PrimFuncs into one"))
register(PassSpec("zero", lambda: tvm_bridge.pipeline("zero"), support=TIR_VALIDATED,
                  via=("LegalizeOps",),
                  note="the zero pipeline as one step (LegalizeOps .. FuseTIR), checked through "
                       "the module after LegalizeOps"))
register(PassSpec("FastMathTransform", _relax("FastMathTransform"), support=TIR_VALIDATED,
                  note="exp/tanh/erf -> polynomial PrimFuncs: refuted where their values "
                       "matter (an approximation), proved where only their range does"))
register(PassSpec("FuseTransposeMatmul", _relax("FuseTransposeMatmul"), support=TIR_VALIDATED,
                  note="matmul(x, permute_dims(w)) -> call_tir(NT_matmul)"))
register(PassSpec("RewriteDataflowReshape", _relax("RewriteDataflowReshape"), ("LegalizeOps",),
                  support=TIR_VALIDATED, note="call_tir(reshape PrimFunc) -> R.reshape"))

# The `default` pipeline's lowering after LegalizeOps: tensors become objects in storage that
# PrimFuncs write in place (tvtv/encode/memory.py, tests/test_memory.py). Each pass runs after
# those the pipeline runs before it.
MEMORY_VALIDATED = "validated through the memory model (tensors in storage, PrimFuncs in place)"
register(PassSpec("RemovePurityChecking", _relax("RemovePurityChecking"),
                  note="drops purity checks (call_pure_packed -> call_packed)"))
_LOWERED: tuple[str, ...] = ("LegalizeOps", "ToNonDataflow", "RemovePurityChecking")
for _name, _note in [
    ("CallTIRRewrite", "call_tir -> alloc_tensor + the PrimFunc called in place"),
    ("StaticPlanBlockMemory", "plans storage: tensors share storage when their lifetimes allow"),
    ("LowerAllocTensor", "the remaining builtin.alloc_tensor -> alloc_storage + alloc_tensor"),
    ("KillAfterLastUse", "kills each tensor and storage after its last use"),
    ("LowerRuntimeBuiltin", "memory ops and reshape -> the VM's builtins"),
    ("VMShapeLower", "shape checks of the parameters (vm.builtin.check_tensor_info, match_shape)"),
]:
    register(PassSpec(_name, _relax(_name), _LOWERED, support=MEMORY_VALIDATED, note=_note))
    _LOWERED += (_name,)


# Passes whose verdict depends on the float model and arithmetic setting (issue 5): which model
# proves each, on which cases, is the table in docs/float-models.md (tests/test_passes_fp.py).
FLOAT_MODEL_DEPENDENT = "validated; the verdict depends on the float model (docs/float-models.md)"
for _name, _build, _note in [
    ("FoldConstant", _relax("FoldConstant"),
     "folds constant subexpressions; checked against IEEE evaluation of the fold"),
    ("ToMixedPrecision", _relax("ToMixedPrecision", out_dtype="float32"),
     "float32 -> float16 compute, float32 accumulation: refuted unless --fp real"),
    ("ConvertLayout", _relax("ConvertLayout", {"relax.nn.conv2d": ["NHWC", "OHWI"]}),
     "conv2d to NHWC/OHWI with permute_dims around it"),
    ("AdjustMatmulOrder", _relax("AdjustMatmulOrder"),
     "x@(a@b) -> (x@a)@b by shapes: correct up to rounding (--fp real)"),
    ("ExpandMatmulOfSum", _relax("ExpandMatmulOfSum"),
     "x@(a+b) -> x@a + x@b: correct up to rounding (--fp real)"),
    ("FoldBatchnormToConv2D", _relax("FoldBatchnormToConv2D"),
     "conv2d+batch_norm with bound constants (run BindParams first) -> scaled conv2d + add"),
    ("ReorderTakeAfterMatmul", _relax("ReorderTakeAfterMatmul"),
     "matmul(x, take(w, i)) -> take(matmul(x, w), i)"),
]:
    register(PassSpec(_name, _build, support=FLOAT_MODEL_DEPENDENT, note=_note))


def registered_passes() -> list[str]:
    """Names of the passes tvtv knows, in registry order."""
    return list(PASSES)


def get(name: str) -> PassSpec:
    if name not in PASSES:
        known = ", ".join(PASSES)
        raise InputError(f"unknown pass '{name}' (known passes: {known})")
    return PASSES[name]


def prepare(spec: PassSpec, mod: Any) -> Any:
    """The module after `spec`'s prerequisites (the source of the check)."""
    for pre in spec.prerequisites:
        mod = tvm_bridge.apply(get(pre).make(), mod)
    return mod
