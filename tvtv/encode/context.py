"""State of encoding one side (source or target) of a refinement check."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import z3

from tvtv.absfp.interface import FloatModel, ScalarDomain
from tvtv import z3context
from tvtv import z3fast as zf
from tvtv.encode.tensor import close_over_live_indices

if TYPE_CHECKING:    # (abstraction imports reduction, which imports this module)
    from tvtv.encode.abstraction import Abstraction


@dataclass
class EncodeContext:
    """What an op encoder may use: the float model, UB recording, shared UFs.

    `ub` collects (condition, reason) pairs: the side is undefined when any condition holds.
    Conditions recorded inside an `If` branch are guarded by the branch's path condition;
    `path` is also where the TIR encoder keeps its guards (`tvtv/encode/tir/interpreter.py`).
    """

    model: FloatModel
    side: str = "src"
    ub: list[tuple[z3.BoolRef, str]] = field(default_factory=list)
    path: list[z3.BoolRef] = field(default_factory=list)
    ufs: dict[str, z3.FuncDeclRef] = field(default_factory=dict)
    notes: set[str] = field(default_factory=set)
    # operator calls the source computes on every run, with results its outputs are computed
    # from: call key (`tvtv.lemmas.call_key`) -> argument arrays of each such call; on the
    # target side, the source's (read by conditional operator lemmas)
    op_calls: dict[Any, list[tuple[z3.ExprRef, ...]]] = field(default_factory=dict)
    source_calls: dict[Any, list[tuple[z3.ExprRef, ...]]] | None = None
    # when a list: the values of the checked function's live bindings are appended to it
    # (`tvtv.confirm.poisoned_inside`)
    live_values: list[Any] | None = None
    # with `live_values` a list: the live bindings' tensors of the functions that the checked
    # function's live bindings call (a fused group's intermediates, operations of the source
    # as much as its own bindings are), kept apart so that a bound on facts can prefer the others
    inner_live_values: list[Any] = field(default_factory=list)
    # the checked function's binding each of `live_values` and `inner_live_values` belongs
    # to (by the tensor's id), and, per flattened output, the bindings it is computed from:
    # the run facts an output's queries need (`tvtv.refinement._sliced`)
    live_binding: dict[int, str] = field(default_factory=dict)
    output_cones: list[frozenset[str]] | None = None
    # per-operation no-signed-zeros (`tvtv.absfp.assumptions.zero_signs_free`): operators whose
    # result at ±0 is a zero may see their argument's zero sign dropped (`elementwise`)
    zero_signs_free: bool = False
    # a float sum of two terms is encoded exactly (`tvtv.encode.reduction.reduce_sum`): set
    # where inputs are concrete (`tvtv.confirm`), so the value is computed, not solved for
    exact_pair_sums: bool = False
    # argmax/argmin are exact folds up to `reduction.MAXMIN_FOLD_BOUND` elements at every
    # rung (`reduction.arg_fold_bound`): set where inputs are concrete, so the index is
    # computed and a counterexample found with the uninterpreted argmax can be confirmed
    exact_arg_folds: bool = False
    # where inputs are concrete: each binding's tensor is replaced by what this gives (a
    # constant tensor when its elements evaluate, `tvtv.encode.evaluate.materialize`), so a
    # later element is simplified over constants, not over the whole history of lambdas
    materialize: Any = None
    # the ladder's rung being encoded (`tvtv.encode.abstraction`), set by the FunctionEncoder:
    # read by reductions (dot as a function, unrolled sums) and by the TIR encoder (stated
    # ranges); None outside one: dots as sums of products, sums not unrolled, ranges not stated
    abstraction: Abstraction | None = None
    # what the PrimFuncs this side ran produced, by array (`tvtv.encode.tir.interpreter._Produced`:
    # each output's readers by shape and its elements' range), for the PrimFuncs that read it
    tir_produced: dict[int, Any] = field(default_factory=dict)

    def dom(self, dtype: str) -> ScalarDomain:
        return self.model.domain(dtype)

    def add_ub(self, cond: z3.BoolRef, reason: str) -> None:
        # UB of some element, not of a chosen one. The path is closed over too: a TIR path
        # condition (a guard, a written box) mentions the index of the lambda being built.
        cond = close_over_live_indices(zf.And(*self.path, cond) if self.path else cond)
        self.ub.append((cond, reason))

    def well_defined(self) -> z3.BoolRef:
        return zf.And(*[zf.Not(c) for c, _ in self.ub]) if self.ub else z3.BoolVal(True)

    def uf(self, name: str, *sorts: z3.SortRef) -> z3.FuncDeclRef:
        """An uninterpreted function shared by every side that uses the same name and sorts."""
        return shared_uf(name, *sorts)


_SHARED: dict[tuple[str, tuple[Any, ...]], z3.FuncDeclRef] = z3context.cache({})


def shared_uf(name: str, *sorts: z3.SortRef) -> z3.FuncDeclRef:
    key = (name, tuple(s.sexpr() for s in sorts))
    if key not in _SHARED:
        suffix = "_".join(s.sexpr().replace(" ", "").replace("(", "").replace(")", "")
                          for s in sorts)
        _SHARED[key] = z3.Function(f"{name}__{abs(hash(suffix)) % 10**8}", *sorts)
    return _SHARED[key]
