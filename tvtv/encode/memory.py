"""Relax after CallTIRRewrite: tensors are objects in storage, and PrimFunc calls write them in
place. This is the world of the `default` pipeline's later passes (CallTIRRewrite,
StaticPlanBlockMemory, LowerAllocTensor, KillAfterLastUse, LowerRuntimeBuiltin, VMShapeLower).

The model, after what TVM 0.27's VM does (measured on the VM where noted):
- A `Storage` is a block of `nbytes` bytes (`R.memory.alloc_storage`, `R.vm.alloc_storage`).
  Their size argument counts bytes whatever their dtype: StaticPlanBlockMemory gives a (2, 3)
  float32 tensor a storage of size 24.
- A `Cell` is a tensor object: `nbytes` bytes at `offset` in a storage, whose current value
  is a `Tensor`. `R.builtin.alloc_tensor` makes a cell on a storage of its own. Before any
  write, a cell's elements are arbitrary: a fresh array, as a TIR buffer never written.
- A destination-passing call of a PrimFunc (`P.PrimCall`, CallTIRRewrite's `cls.add(x, y,
  alloc)`) runs its body on the arguments' current values
  (`tvtv.encode.tir.encode_prim_func_in_place`). Each argument it writes takes the new value.
- Writing a cell clobbers the other cells that overlap it in the same storage. A view of the
  same bytes with the same dtype (`vm.builtin.reshape`'s result) sees the new elements. Any
  other overlapping view becomes arbitrary (fresh): an over-approximation, so a proof stays
  sound. Bytes are not reinterpreted across dtypes.
- Two overlapping cells passed to one call, one of them written: TIR assumes distinct buffers
  and the result depends on the loop order, so what the call writes is arbitrary (fresh).
- A write inside a Relax `If` branch is guarded by the branch's path: `If(path, new, old)`.
- `kill_tensor`, `kill_storage`, `vm.kill_object` end a variable (the VM sets its register to
  null): a later use of that variable is a runtime error, i.e. UB. The object lives on while
  another variable or tensor refers to it (the VM counts references), so killing a storage
  does not end its tensors.
- A PrimFunc that writes a tensor that is not a cell (a function parameter) is unsupported.

Handlers are registered by TVM op name (`MEMORY_OPS`) and by packed-function name
(`PACKED_CALLS`); `tvtv.encode.function.FunctionEncoder` dispatches to them.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

import z3

from tvtv import z3fast as zf
from tvtv.absfp.dtypes import check_supported, numpy_dtype
from tvtv.encode.abstraction import opaque_here
from tvtv.encode.tensor import Tensor
from tvtv.encode.tir import encode_prim_func_in_place
from tvtv.encode.tir.values import undefined_tensor
from tvtv.encode.values import PrimScalar, Shape, Value
from tvtv.errors import Unsupported
from tvtv.ir import program as P
from tvtv.ir import tir as T

if TYPE_CHECKING:
    from tvtv.encode.function import FunctionEncoder

@dataclass(eq=False)
class BranchScope:
    """A Relax If branch being encoded: `outer` are the variables bound before it."""

    outer: frozenset[str]


@dataclass(eq=False)
class Storage:
    """A block of `nbytes` bytes and the tensor objects made on it; `scope` is the If branch
    it was allocated in (None: the function's body)."""

    nbytes: int
    scope: BranchScope | None = None
    cells: list["Cell"] = field(default_factory=list)


@dataclass(eq=False)
class Cell:
    """A tensor object: `nbytes` bytes at `offset` of `storage`, holding `value`."""

    storage: Storage
    offset: int
    value: Tensor
    # written since it was made (itself or an overlapping cell): its elements are no longer
    # the arbitrary ones of a fresh tensor
    written: bool = False

    @property
    def nbytes(self) -> int:
        return self.value.numel * numpy_dtype(self.value.dtype).itemsize

    def overlaps(self, other: "Cell") -> bool:
        return (self.storage is other.storage and self is not other
                and self.offset < other.offset + other.nbytes
                and other.offset < self.offset + self.nbytes)

    def same_bytes(self, other: "Cell") -> bool:
        return (self.storage is other.storage and self.offset == other.offset
                and self.nbytes == other.nbytes and self.value.dtype == other.value.dtype)


class Null:
    """`R.null_value()` (VMShapeLower's empty shape heap)."""


NULL = Null()


@dataclass(frozen=True)
class Killed:
    """A variable after `kill_*`: `what` names it; `referent` is what it referred to."""

    what: str
    referent: Any


def read(v: Any) -> Value:
    """The value of a reference now: a cell's current tensor (tuples element-wise)."""
    if isinstance(v, Cell):
        return v.value
    if isinstance(v, tuple):
        return tuple(read(x) for x in v)
    if isinstance(v, (Storage, Null)):
        raise Unsupported(f"a {type(v).__name__.lower()} used as a value")
    return v


def _scope(enc: "FunctionEncoder") -> BranchScope | None:
    return enc.branches[-1] if enc.branches else None


def detach(v: Any, scope: BranchScope) -> Value:
    """The value of what an If branch returns (`FunctionEncoder.branch`): tensor objects on
    storage made in the branch are read; any other object is unsupported."""
    if isinstance(v, tuple):
        return tuple(detach(x, scope) for x in v)
    if isinstance(v, Cell) and v.storage.scope is scope:
        return v.value
    if isinstance(v, (Cell, Storage, Null)):
        raise Unsupported("an If branch returns a tensor object made outside it (memory model): "
                          "not modelled")
    return v


def fresh(ctx: Any, shape: tuple[int, ...], dtype: str, what: str) -> Tensor:
    """A tensor of arbitrary elements (memory no write has defined)."""
    return undefined_tensor(ctx, shape, dtype, what)


def _guarded(ctx: Any, cell: Cell, new: Tensor, here: BranchScope | None) -> Tensor:
    """`new`, or the cell's old value off the current path (a write inside an `If` branch).
    A cell on storage made in the innermost branch `here` needs no guard: nothing outside
    the branch reaches it but the branch's result, which the If merges under its condition
    (`detach`); unguarded, both sides of a check build the same terms."""
    old = cell.value
    if not ctx.path or here is not None and cell.storage.scope is here:
        return new
    return Tensor(old.shape, old.dtype, zf.If(zf.And(*ctx.path), new.arr, old.arr))


def write(ctx: Any, cell: Cell, new: Tensor, here: BranchScope | None = None) -> None:
    """Store `new` into `cell`, clobbering the cells that overlap it (module docstring);
    `here` is the innermost If branch being encoded."""
    for other in cell.storage.cells:
        if not other.overlaps(cell):
            continue
        if other.same_bytes(cell):
            seen = Tensor(other.value.shape, other.value.dtype, new.arr)
        else:
            seen = fresh(ctx, other.value.shape, other.value.dtype, "clobbered")
        other.value = _guarded(ctx, other, seen, here)
        other.written = True
    cell.value = _guarded(ctx, cell, new, here)
    cell.written = True


def _ints(v: Value, what: str) -> tuple[int, ...]:
    if isinstance(v, Shape):
        return v.dims
    if isinstance(v, PrimScalar) and isinstance(v.concrete, int):
        return (v.concrete,)
    raise Unsupported(f"{what}: expected a static shape or integer, got {type(v).__name__}")


def _dtype(v: Value, what: str) -> str:
    if isinstance(v, PrimScalar) and v.dtype == "dtype":
        return str(v.concrete)
    raise Unsupported(f"{what}: expected a dtype")


def _new_cell(enc: "FunctionEncoder", storage: Storage, offset: int, shape: tuple[int, ...],
              dtype: str, what: str) -> Cell:
    cell = Cell(storage, offset, fresh(enc.ctx, shape, dtype, what))
    if offset < 0 or offset + cell.nbytes > storage.nbytes:
        # the VM refuses a tensor that does not fit its storage (a runtime error)
        enc.ctx.add_ub(z3.BoolVal(True), f"{what}: {cell.nbytes} bytes at offset {offset} "
                                         f"exceed a storage of {storage.nbytes} bytes")
    storage.cells.append(cell)
    return cell


# -- ops by TVM name ---------------------------------------------------------------------------
MemoryOp = Callable[["FunctionEncoder", P.OpCall, dict], Any]
MEMORY_OPS: dict[str, MemoryOp] = {}


def memory_op(*names: str) -> Callable[[MemoryOp], MemoryOp]:
    def deco(fn: MemoryOp) -> MemoryOp:
        for n in names:
            MEMORY_OPS[n] = fn
        return fn
    return deco


@memory_op("relax.builtin.alloc_tensor")
def _builtin_alloc_tensor(enc: "FunctionEncoder", call: P.OpCall, env: dict) -> Cell:
    # (shape, dtype, runtime_device_index, storage_scope): a tensor with a storage of its own
    shape = _ints(enc.expr(call.args[0], env), "alloc_tensor shape")
    dtype = _dtype(enc.expr(call.args[1], env), "alloc_tensor dtype")
    check_supported(dtype, "alloc_tensor")
    storage = Storage(math.prod(shape) * numpy_dtype(dtype).itemsize, _scope(enc))
    return _new_cell(enc, storage, 0, shape, dtype, "alloc_tensor")


@memory_op("relax.memory.alloc_storage", "relax.vm.alloc_storage")
def _alloc_storage(enc: "FunctionEncoder", call: P.OpCall, env: dict) -> Storage:
    # memory: (size, virtual_device_index, storage_scope, dtype); vm: (size, device, dtype,
    # scope). The size is in bytes either way (module docstring).
    return Storage(math.prod(_ints(enc.expr(call.args[0], env), "alloc_storage size")),
                   _scope(enc))


@memory_op("relax.memory.alloc_tensor", "relax.vm.alloc_tensor")
def _alloc_tensor(enc: "FunctionEncoder", call: P.OpCall, env: dict) -> Cell:
    # (storage, offset, shape, dtype[, runtime_device_index])
    storage = enc.ref(call.args[0], env)
    if not isinstance(storage, Storage):
        raise Unsupported(f"{call.op} on a {type(storage).__name__}, expected a storage")
    offset = _ints(enc.expr(call.args[1], env), "alloc_tensor offset")[0]
    shape = _ints(enc.expr(call.args[2], env), "alloc_tensor shape")
    dtype = _dtype(enc.expr(call.args[3], env), "alloc_tensor dtype")
    return _new_cell(enc, storage, offset, shape, dtype, "alloc_tensor")


@memory_op("relax.memory.kill_storage", "relax.memory.kill_tensor", "relax.vm.kill_object")
def _kill(enc: "FunctionEncoder", call: P.OpCall, env: dict) -> tuple:
    arg = call.args[0]
    if not isinstance(arg, P.VarRef):
        raise Unsupported(f"{call.op} of an expression, expected a variable")
    if enc.branches and arg.vid in enc.branches[-1].outer:
        # which variables are dead after the If would depend on the branch taken (one bound
        # inside the branch ends with it anyway)
        raise Unsupported(f"{call.op} of a variable bound outside the If branch")
    referent = enc.ref(arg, env)       # killing a killed variable is a use of it
    env[arg.vid] = Killed(arg.vid.split("%")[0], referent)
    return ()


@memory_op("relax.null_value")
def _null(enc: "FunctionEncoder", call: P.OpCall, env: dict) -> Null:
    return NULL


# -- packed functions by name -------------------------------------------------------------------
PackedCall = Callable[["FunctionEncoder", P.ExternCall, dict], Any]
PACKED_CALLS: dict[str, PackedCall] = {}


def packed(name: str) -> Callable[[PackedCall], PackedCall]:
    def deco(fn: PackedCall) -> PackedCall:
        PACKED_CALLS[name] = fn
        return fn
    return deco


@packed("vm.builtin.check_tensor_info")
def _check_tensor_info(enc: "FunctionEncoder", call: P.ExternCall, env: dict) -> tuple:
    # (tensor, ndim, dtype, error context): the VM raises unless the tensor has that rank and
    # dtype (an empty dtype: any). Static here: a failing check is an error on every run.
    t = read(enc.ref(call.args[0], env))
    ndim = _ints(enc.expr(call.args[1], env), "check_tensor_info ndim")[0]
    dtype = _dtype(enc.expr(call.args[2], env), "check_tensor_info dtype")
    if not isinstance(t, Tensor):
        raise Unsupported(f"check_tensor_info of a {type(t).__name__}")
    if ndim != -1 and t.ndim != ndim or dtype not in ("", "void") and t.dtype != dtype:
        enc.ctx.add_ub(z3.BoolVal(True), f"check_tensor_info fails: {t.shape} {t.dtype} "
                                         f"against rank {ndim} {dtype}")
    return ()


# vm.builtin.match_shape's per-dimension codes (tvm.relax.testing.runtime_builtin.MatchShapeCode)
_ASSERT_EQUAL_TO_IMM, _NO_OP = 0, 2


@packed("vm.builtin.match_shape")
def _match_shape(enc: "FunctionEncoder", call: P.ExternCall, env: dict) -> tuple:
    # (value, shape heap, ndim, then (code, value) per dimension, error context). With static
    # shapes VMShapeLower only asserts dimensions equal to immediates.
    t = read(enc.ref(call.args[0], env))
    shape = t.shape if isinstance(t, Tensor) else t.dims if isinstance(t, Shape) else None
    if shape is None:
        raise Unsupported(f"match_shape of a {type(t).__name__}")
    ndim = _ints(enc.expr(call.args[2], env), "match_shape ndim")[0]
    ok = ndim == len(shape)
    for k in range(ndim):
        code = _ints(enc.expr(call.args[3 + 2 * k], env), "match_shape code")[0]
        value = _ints(enc.expr(call.args[4 + 2 * k], env), "match_shape value")[0]
        if code == _ASSERT_EQUAL_TO_IMM:
            ok = ok and k < len(shape) and shape[k] == value
        elif code != _NO_OP:
            raise Unsupported(f"match_shape with code {code} (symbolic shapes)")
    if not ok:
        enc.ctx.add_ub(z3.BoolVal(True), f"match_shape fails on {shape}")
    return ()


@packed("vm.builtin.reshape")
def _reshape(enc: "FunctionEncoder", call: P.ExternCall, env: dict) -> Any:
    # a view of the same bytes: writing either is seen by the other (`write`)
    src = enc.ref(call.args[0], env)
    shape = _ints(enc.expr(call.args[1], env), "reshape shape")
    t = read(src)
    if not isinstance(t, Tensor) or math.prod(shape) != t.numel:
        raise Unsupported(f"vm.builtin.reshape of {type(t).__name__} to {shape}")
    view = Tensor(shape, t.dtype, t.arr)
    if not isinstance(src, Cell):
        return view
    cell = Cell(src.storage, src.offset, view)
    src.storage.cells.append(cell)
    return cell


def packed_call(enc: "FunctionEncoder", call: P.ExternCall, env: dict) -> Any:
    handler = PACKED_CALLS.get(call.name)
    if handler is None:
        raise Unsupported(f"packed function {call.name!r}")
    return handler(enc, call, env)


# -- destination-passing PrimFunc calls ---------------------------------------------------------
def prim_call(enc: "FunctionEncoder", call: P.PrimCall, env: dict) -> tuple:
    """Run PrimFunc `call.prim` on its arguments in place (module docstring)."""
    pf = enc.prim_func(call.prim)
    refs = [enc.ref(a, env) for a in call.args]
    values = []
    for k, r in enumerate(refs):
        v = read(r)
        if not isinstance(v, Tensor):
            raise Unsupported(f"PrimFunc {call.prim}: argument {k} is a {type(v).__name__}")
        values.append(v)
    finals = _opaque_call(enc, call, pf, refs, values) \
        if opaque_here(enc.abstraction, call.prim_hash) else None
    if finals is None:
        finals = encode_prim_func_in_place(enc.ctx, pf, values)
    cells = [r for r in refs if isinstance(r, Cell)]
    for k, (r, before, after) in enumerate(zip(refs, values, finals)):
        if after is before:
            continue
        if not isinstance(r, Cell):
            raise Unsupported(f"PrimFunc {call.prim} writes its argument {k}, which is not a "
                              f"tensor allocated in the function")
        if any(r.overlaps(c) for c in cells) or sum(c is r for c in cells) > 1:
            after = fresh(enc.ctx, after.shape, after.dtype, "aliased")
        write(enc.ctx, r, after, _scope(enc))
    return ()


def _opaque_call(enc: "FunctionEncoder", call: P.PrimCall, pf: T.PrimFunc, refs: list[Any],
                 values: list[Tensor]) -> list[Tensor] | None:
    """At the opaque rung, the arguments after the call as `call_tir` would give them: when the
    PrimFunc writes exactly its last k parameters (CallTIRRewrite's outputs) and those are
    fresh cells (arbitrary elements, as `call_tir`'s outputs are), they become
    UF_{hash,j}(the first inputs) as in `FunctionEncoder.call_tir`, so the call and the
    `call_tir` it was lowered from are the same terms. Otherwise None (encode the body): a
    cell written before holds values a PrimFunc reading its output would see."""
    written = T.written_buffers(pf.body)
    ids = [b.id for b in pf.params]
    k = len(ids)
    while k > 0 and ids[k - 1] in written:
        k -= 1
    if k == len(ids) or any(i in written for i in ids[:k]) \
            or not all(isinstance(r, Cell) and not r.written for r in refs[k:]):
        return None
    outs = enc.opaque_outputs(call.prim, call.prim_hash, values[:k],
                              [P.TensorType(v.shape, v.dtype) for v in values[k:]])
    return values[:k] + outs
