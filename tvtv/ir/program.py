"""tvtv's own picture of a Relax module: plain Python data, no TVM objects.

The encoder works on these classes only, so that a change of TVM's API touches
`tvtv/ir/relax_reader.py` and nothing else. Every variable has a unique id
(Relax allows the same name twice); `name` is kept for reports.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Union

import numpy as np


@dataclass(frozen=True)
class TensorType:
    """A tensor of static `shape` and element `dtype` (a TVM dtype string)."""

    shape: tuple[int, ...]
    dtype: str

    def __str__(self) -> str:
        return f"Tensor({self.shape}, {self.dtype})"


@dataclass(frozen=True)
class TupleType:
    fields: tuple["Type", ...]

    def __str__(self) -> str:
        return "Tuple(" + ", ".join(str(f) for f in self.fields) + ")"


@dataclass(frozen=True)
class OpaqueType:
    """A type tvtv does not model (shapes, objects, functions, symbolic shapes)."""

    text: str

    def __str__(self) -> str:
        return self.text


Type = Union[TensorType, TupleType, OpaqueType]


@dataclass(frozen=True)
class VarRef:
    vid: str


@dataclass(frozen=True)
class Const:
    """A scalar or tensor constant; `value` is a numpy array of the constant's dtype."""

    value: np.ndarray
    dtype: str

    def __hash__(self) -> int:  # numpy arrays are not hashable; identity is fine here
        return id(self)


@dataclass(frozen=True)
class PrimValue:
    """A raw scalar argument (e.g. clip's bounds or an `R.prim_value`)."""

    value: Union[int, float, bool]
    dtype: str


@dataclass(frozen=True)
class ShapeValue:
    values: tuple[int, ...]


@dataclass(frozen=True)
class OpCall:
    """A call of a Relax operator, `op` being its registered name (e.g. "relax.add")."""

    op: str
    args: tuple["Expr", ...]
    attrs: dict[str, Any]
    ty: Type
    ty_args: tuple[Type, ...] = ()

    def __hash__(self) -> int:
        return id(self)


@dataclass(frozen=True)
class FuncCall:
    """A call of a Relax function of the module by its global name."""

    func: str
    args: tuple["Expr", ...]
    ty: Type


@dataclass(frozen=True)
class LocalCall:
    """A call of a function-valued variable (a nested function bound in the body)."""

    callee: "Expr"
    args: tuple["Expr", ...]
    ty: Type


@dataclass(frozen=True)
class CallTIR:
    """`R.call_tir(prim, args, out_ty)`. `prim_hash` is the PrimFunc's structural hash."""

    prim: str
    prim_hash: int
    args: tuple["Expr", ...]
    ty: Type


@dataclass(frozen=True)
class PrimCall:
    """A PrimFunc called directly in destination-passing style, as CallTIRRewrite lowers
    `call_tir` (`cls.add(x, y, alloc)`): every argument is a buffer the PrimFunc may write."""

    prim: str
    prim_hash: int
    args: tuple["Expr", ...]
    ty: Type


@dataclass(frozen=True)
class ExternCall:
    """`R.call_packed("name", args...)`: a call of a function of the VM runtime by name."""

    name: str
    args: tuple["Expr", ...]
    ty: Type


@dataclass(frozen=True)
class TupleExpr:
    fields: tuple["Expr", ...]


@dataclass(frozen=True)
class GetItem:
    tuple_value: "Expr"
    index: int


@dataclass(frozen=True)
class IfExpr:
    cond: "Expr"
    then_body: "Body"
    else_body: "Body"
    ty: Type


@dataclass(frozen=True)
class FuncExpr:
    """A nested (local) Relax function used as a value."""

    func: "Function"


@dataclass(frozen=True)
class GlobalRef:
    """A global function used as a value (not called)."""

    name: str


Expr = Union[VarRef, Const, PrimValue, ShapeValue, OpCall, FuncCall, LocalCall, CallTIR,
             PrimCall, ExternCall, TupleExpr, GetItem, IfExpr, FuncExpr, GlobalRef]


@dataclass(frozen=True)
class Binding:
    """`var = value`; with `match_cast` set it is `R.match_cast(value, match_cast)`."""

    vid: str
    name: str
    value: Expr
    ty: Type
    match_cast: Type | None = None


@dataclass(frozen=True)
class Body:
    bindings: tuple[Binding, ...]
    result: Expr


@dataclass(frozen=True)
class Param:
    vid: str
    name: str
    ty: Type


@dataclass(frozen=True)
class Function:
    name: str
    params: tuple[Param, ...]
    body: Body
    ret_ty: Type
    attrs: dict[str, Any] = field(default_factory=dict)
    public: bool = True


@dataclass(frozen=True)
class PrimFuncInfo:
    """A PrimFunc: its structural hash, and its body in tvtv's TIR picture (`tvtv.ir.tir`)
    or why it could not be read (`tir_error`)."""

    name: str
    structural_hash: int
    tir: Any = None
    tir_error: str | None = None


@dataclass
class Program:
    """A whole module: Relax functions by global name and the PrimFuncs they call."""

    functions: dict[str, Function]
    prim_funcs: dict[str, PrimFuncInfo]

    def public_functions(self) -> list[Function]:
        return [f for f in self.functions.values() if f.public]
