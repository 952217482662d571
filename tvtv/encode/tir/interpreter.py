"""Encode a TIR PrimFunc body into the encoder's vocabulary: lambda-built tensors and
reductions (mlir-tv §5.2, loops of linalg carried to TIR's SBlocks).

A buffer's value is a `Tensor` (an SMT array over the flat row-major index). Statements run
in order; a block nested in loops is one *bulk write*: its store `buf[v0, .., vk] = e` under
loop ranges writes the box of the loop ranges, so the buffer becomes
`Lambda i. i in box ? e[v := unravel(i)] : old[i]` (no `If` when the box is the whole buffer).
A reduction block (iter vars of kind "R", an init statement, a body
`buf[I] = combine(buf[I], term)`) becomes `reduction.tir_reduce` of the init value and the
terms over the reduction loops' domain, the same terms and reduction functions the Relax
encoders build, so a Relax op and its legalization meet in one vocabulary.

Semantics (TVM's CPU code, see `intrinsics.py`): out-of-bounds loads and stores are UB; a
buffer element never written holds an arbitrary value (a fresh array per buffer), so a loop
that misses an output element gives a target that may differ from the source there;
`T.if_then_else` evaluates only the taken branch, `T.Select` both.

Supported shape of blocks: iter values that are loop variables (or constants), store indices
that are distinct loop/iter variables or constants, a true predicate, a single store per block
(plus the init). A plain store at computed indices (scatter's IR-builder TIR, which stores at
positions read from an index tensor) is unrolled over its loops' iterations, at most
`UNROLLED_STORES` (`write_unrolled`). A loop whose body allocates local buffers or runs a
`while` loop (the IR-builder TIR of topi.searchsorted, LegalizeOps' bucketize) is a *scalar
program*, run once over a symbolic iteration (`program.py`; its `while` unrolled until a solver
shows the condition false, at most `WHILE_ROUNDS` rounds). Three compiled kernels are modelled
(`extern_sort`, `extern_topk`): `tvm.contrib.sort.argsort`, which LegalizeOps calls for median,
and `tvm.contrib.sort.sort` and `tvm.contrib.sort.topk`, which DispatchSortScan calls for sort
and topk. Everything else raises `Unsupported` naming the PrimFunc and block.
"""
from __future__ import annotations

import dataclasses
import itertools
import math
from contextlib import contextmanager
from typing import Callable, Iterable, Iterator, Sequence

import numpy as np
import z3

from tvtv import z3fast as zf
from tvtv.absfp.dtypes import INT_FORMATS, check_supported, is_bool, is_float, is_int, numpy_dtype
from tvtv.encode import reduction
from tvtv.encode.context import EncodeContext
from tvtv.encode.ops.manipulate import wrapped_position
from tvtv.encode.ops.sorting import SORT_BOUND, sorted_along
from tvtv.encode.tensor import INDEX_BITS, Tensor, idx, ravel, unravel
from tvtv.encode.tir import index as IX
from tvtv.encode.tir import fold, index_values, intrinsics, ranges, row_major
from tvtv.encode.tir.program import ScalarProgram, needs_program, run_program
from tvtv.encode.tir.values import Loop, Reader, Sc, Val, undefined_tensor
from tvtv.errors import Unsupported
from tvtv.ir import tir as T

# Largest number of known constant cases a float value is tracked with (see `Sc.cases`).
CASES_BOUND = 16
# Largest number of iterations a store at computed indices is unrolled over
# (`PrimFuncEncoder.write_unrolled`).
UNROLLED_STORES = 512
# the dtypes tvm.contrib.sort.sort sorts (src/runtime/contrib/sort/sort.cc; any other is a
# fatal "Unsupported input dtype" at run time)
KERNEL_SORT_DTYPES = frozenset({"float16", "float32", "float64", "int32", "int64"})
# the data dtypes tvm.contrib.sort.topk takes (sort.cc; any other is a fatal error at run time)
KERNEL_TOPK_DTYPES = KERNEL_SORT_DTYPES | {"int8", "uint8"}
# a sort kernel's position at place j of a row holding a NaN: (row's elements, j) -> position
RowPositions = Callable[[list[z3.ExprRef], z3.BitVecRef], z3.ExprRef]


@dataclasses.dataclass
class _Produced:
    """What this side knows of an array a PrimFunc produced (`EncodeContext.tir_produced`,
    by the array's AST id; `arr` keeps the array alive, so the id is not reused).

    `readers`: the producer's body by shape, so a PrimFunc that consumes the output inlines it
    exactly as a fused PrimFunc inlines its intermediate buffer (FuseTIR's source and target
    then build equal terms); by shape, as a reshape keeps the array (`row_major`) but reads it
    with a multi-index of another rank. `range`: the range (`tvtv.encode.tir.ranges`) the
    producer proved for every element, so a consumer knows it too: a mean of a clip's output
    is finite (FuseTIR's seed-5 graph 24, `x - x` of that mean), as a fused PrimFunc that
    holds both knows it of its intermediate buffer."""

    arr: z3.ArrayRef
    readers: dict[tuple[int, ...], Reader] = dataclasses.field(default_factory=dict)
    range: ranges.Range = ranges.TOP


def _produced(ctx: EncodeContext, t: Tensor) -> _Produced | None:
    """What a PrimFunc on this side recorded of `t`'s array, if any."""
    entry = ctx.tir_produced.get(t.arr.get_id())
    return entry if entry is not None and z3.eq(entry.arr, t.arr) else None


def _known_reader(ctx: EncodeContext, t: Tensor) -> Reader | None:
    """The reader a PrimFunc on this side gave `t`'s array under `t`'s shape; under another
    shape, the first one recorded (its producer's), viewed in row-major order: so a tensor
    that relax.reshape relabelled is read as a legalized reshape's output is."""
    entry = _produced(ctx, t)
    if entry is None or not entry.readers:
        return None
    by_shape = entry.readers
    shape = tuple(t.shape)
    if shape not in by_shape:
        first, reader = next(iter(by_shape.items()))
        if math.prod(first) != t.numel:
            return None    # the same array holding another number of elements: not a view
        by_shape[shape] = row_major.reshaped(reader, first, shape)
    return by_shape[shape]


def _remember(ctx: EncodeContext, t: Tensor, reader: Reader,
              base: tuple[z3.ArrayRef, tuple[int, ...], Reader] | None = None,
              r: ranges.Range = ranges.TOP) -> None:
    """Record `reader` and the range `r` of `t`'s elements. `base`, for a row-major copy
    (`row_major`): the array, shape and reader of the tensor it copied, recorded first when
    nothing is recorded for that array yet, so a later reader of that tensor under its own
    shape (another consumer of a reshape's input) gets that reader back, not the copy's
    reader viewed twice."""
    entry = _produced(ctx, t)
    if entry is None:
        entry = _Produced(t.arr)
        ctx.tir_produced[t.arr.get_id()] = entry
        if base is not None and z3.eq(base[0], t.arr):
            entry.readers[base[1]] = base[2]
    entry.readers[tuple(t.shape)] = reader
    if r != ranges.TOP:
        entry.range = r


def _combination(store: T.Store, dtype: str) -> tuple[str, T.Expr, bool] | None:
    """(op, term, acc_first) of a reduction's update `acc = op(acc, term)` (or `op(term,
    acc)`, acc_first False), or None for another shape. `op` is a binary operator, or "and" /
    "or" for a bool sum / prod as LegalizeOps writes it: `acc or x`, `acc and x` (always a
    bool buffer, which `reduction.tir_reduce` folds exactly without `step`)."""
    v = store.value
    acc = T.Load(store.buffer, store.indices, dtype)
    if isinstance(v, T.Binary) and v.a == acc:
        return v.op, v.b, True
    if isinstance(v, T.Binary) and v.b == acc:
        return v.op, v.a, False
    if isinstance(v, T.Logic) and v.op in ("and", "or") and len(v.args) == 2 and acc in v.args:
        acc_first = v.args[0] == acc
        return v.op, v.args[1] if acc_first else v.args[0], acc_first
    return None


def _bind_rest(env: dict[str, Val], constant_loops: list[Loop],
               binding: dict[str, Loop | int]) -> None:
    """Complete the environment of a bulk write's element, given its written loops' indices:
    the loops it does not index stay at their start, iter vars follow their loops."""
    for lp in constant_loops:
        env[lp.var] = IX.constant(lp.lo)
    for var, b in binding.items():
        if isinstance(b, Loop):
            if b.var in env:
                env[var] = env[b.var]
        else:
            env[var] = IX.constant(b)


def _index_arithmetic(e: T.Expr) -> bool:
    """Is `e` integer arithmetic of variables and constants only (no load, no call)?"""
    if isinstance(e, (T.Var, T.IntImm)):
        return True
    if isinstance(e, T.Binary):
        return _index_arithmetic(e.a) and _index_arithmetic(e.b)
    if isinstance(e, T.Cast):
        return is_int(e.dtype) and _index_arithmetic(e.value)
    return False


def _array_reader(t: Tensor) -> Reader:
    return lambda ix: t.at(ravel([v.const if v.const is not None else v.term for v in ix],
                                 t.shape)) if t.shape else t.at(0)


class PrimFuncEncoder:
    def __init__(self, ctx: EncodeContext, pf: T.PrimFunc) -> None:
        self.ctx = ctx
        self.pf = pf
        self.where = pf.name
        self.buffers: dict[str, T.Buffer] = {b.id: b for b in pf.params}
        self.state: dict[str, Tensor] = {}
        # element of a buffer at a multi-index: the producer's body, inlined at each load
        self.readers: dict[str, Reader] = {}
        self.memo: dict[tuple, tuple[z3.ExprRef, tuple]] = {}
        # iter vars of enclosing blocks that only scope other loops and blocks, by id
        self.aliases: dict[str, Loop | int] = {}
        # an enclosing scope block's init and reduction loops, for the block inside it
        self.pending_init: tuple[T.Store, list[Loop], dict[str, Loop | int]] | None = None
        # accumulators of a multi-buffer reduction step: buffer -> (indices, current value)
        self.acc_override: dict[str, tuple[tuple[T.Expr, ...], z3.ExprRef]] = {}
        # the scalar program being run, if any (`program.run_program`)
        self.prog: ScalarProgram | None = None
        # buffer -> (its value, the range every element lies in), for a buffer one store
        # wrote whole (`ranges`); valid while `state` still holds that value
        self.ranges: dict[str, tuple[Tensor, ranges.Range]] = {}
        # buffer -> (array, shape, reader) of the tensor a row-major copy gave it (`row_major`)
        self.copied: dict[str, tuple[z3.ArrayRef, tuple[int, ...], Reader]] = {}

    # -- entry -----------------------------------------------------------------------------------
    def run(self, inputs: Sequence[Tensor], n_outputs: int) -> list[Tensor]:
        """Outputs of the PrimFunc called in destination-passing style on `inputs`."""
        params = self.pf.params
        if len(inputs) + n_outputs != len(params):
            raise Unsupported(f"call_tir of {self.pf.name} with {len(inputs)} inputs and "
                              f"{n_outputs} outputs for {len(params)} buffer parameters")
        for buf, t in zip(params, inputs):
            if tuple(buf.shape) != tuple(t.shape) or buf.dtype != t.dtype:
                raise Unsupported(f"call_tir of {self.pf.name}: argument {t.shape} {t.dtype} for "
                                  f"buffer {buf.name} {buf.shape} {buf.dtype}")
            self.state[buf.id] = t
            known = _known_reader(self.ctx, t) if t.numel > 0 else None
            self.readers[buf.id] = known if known is not None else _array_reader(t)
            produced = _produced(self.ctx, t)
            if produced is not None and produced.range != ranges.TOP:
                self.ranges[buf.id] = (t, produced.range)
        outs = params[len(inputs):]
        for buf in outs:
            self.set_undefined(buf)
        self.stmt(self.pf.body, [])
        results = [self.state[b.id] for b in outs]
        for b, t in zip(outs, results):
            # keyed by shape too: a reshape or squeeze that keeps the flat layout builds the
            # *same* array as its input, but its reader takes a multi-index of another rank
            _remember(self.ctx, t, self.readers[b.id], self.copied.get(b.id), self.range_of(b.id))
        return results

    def run_in_place(self, args: Sequence[Tensor]) -> list[Tensor]:
        """Every buffer parameter's value after the PrimFunc ran on `args`, called in
        destination-passing style (CallTIRRewrite's `cls.f(x, y, out)`): any parameter may be
        written; an element never written keeps the argument's value."""
        results = self.run(args, 0)
        assert not results
        finals = [self.state[b.id] for b in self.pf.params]
        for b, before, after in zip(self.pf.params, args, finals):
            if after is not before:   # written: later readers inline its producer, as in `run`
                _remember(self.ctx, after, self.readers[b.id], self.copied.get(b.id),
                          self.range_of(b.id))
        return finals

    def set_undefined(self, buf: T.Buffer) -> None:
        t = self.undefined(buf)
        self.state[buf.id] = t
        self.readers[buf.id] = _array_reader(t)

    def undefined(self, buf: T.Buffer) -> Tensor:
        """A buffer before any store: arbitrary contents (fresh per buffer and call)."""
        return undefined_tensor(self.ctx, buf.shape, buf.dtype, buf.name,
                                f"buffer {buf.name} of {self.pf.name}")

    def fail(self, what: str) -> Unsupported:
        return Unsupported(f"TIR {what} in PrimFunc {self.where}")

    # -- UB --------------------------------------------------------------------------------------
    # The UB guard rule: a UB condition holds only where the operation runs. An operation runs
    # under the path condition of its evaluation: the taken branch of `T.if_then_else`, the
    # written box of a bulk write, the extent combination of a varying-extent reduction, and,
    # for a producer's element inlined at a load, the consumer's path at that load together
    # with "the load's index is in bounds" (out of bounds, the load itself is the UB). The
    # path lives on the shared `EncodeContext.path`, not on this encoder: a reader of another
    # PrimFunc's output runs that PrimFunc's encoder, and the float model's own UB (a cast out
    # of range, an integer division by zero) goes straight to `ctx.add_ub`; both must see the
    # consumer's path. (A producer's element at an in-bounds index was already evaluated, over
    # every index, when the producer wrote it: its UB is recorded there unconditionally.)
    @property
    def guards(self) -> list[z3.BoolRef]:
        """The path condition in force (Relax `If` branches, then TIR guards)."""
        return self.ctx.path

    @contextmanager
    def guard(self, cond: z3.BoolRef) -> Iterator[None]:
        if z3.is_true(cond):
            yield
            return
        self.ctx.path.append(cond)
        try:
            yield
        finally:
            self.ctx.path.pop()

    def ub(self, cond: z3.BoolRef, why: str) -> None:
        """Record UB where `cond` holds on the current path (`EncodeContext.add_ub`
        conjoins the path)."""
        if z3.is_false(cond):
            return
        self.ctx.add_ub(cond, f"{why} in PrimFunc {self.where}")

    # -- statements ------------------------------------------------------------------------------
    def stmt(self, s: T.Stmt, loops: list[Loop]) -> None:
        if isinstance(s, T.Seq):
            for k, x in enumerate(s.stmts):
                if isinstance(x, (T.Alloc, T.While)):
                    # a local allocation scopes the rest of the sequence: a scalar program
                    run_program(self, T.Seq(s.stmts[k:]), loops)
                    return
                self.stmt(x, loops)
        elif isinstance(s, (T.Alloc, T.While)):
            run_program(self, s, loops)
        elif isinstance(s, T.For) and needs_program(s.body):
            lo = self.static_int(s.min, "loop start")
            ext = self.expr(s.extent, self.range_env(loops))
            if not isinstance(ext, IX.Ix) or ext.const is None:
                raise self.fail("loop of varying extent around a while loop or local buffer")
            if ext.const > 0:
                run_program(self, s.body, loops + [Loop(s.var.id, lo, ext.const)])
        elif isinstance(s, T.For):
            lo = self.static_int(s.min, "loop start")
            ext = self.expr(s.extent, self.range_env(loops))
            if not isinstance(ext, IX.Ix):
                raise self.fail("loop extent that is not an integer")
            if ext.const is not None:
                if ext.const > 0:
                    self.stmt(s.body, loops + [Loop(s.var.id, lo, ext.const)])
            else:
                values = self.extent_values(s.extent, loops)
                if max(values) > 0:
                    self.stmt(s.body, loops + [Loop(s.var.id, lo, max(values), s.extent, values)])
        elif isinstance(s, T.Block):
            self.block(s, loops)
        elif isinstance(s, T.Store):
            self.write(s, None, loops, {}, [])
        elif isinstance(s, T.Nop):
            pass
        elif isinstance(s, T.ExternSort):
            self.extern_sort(s, loops)
        elif isinstance(s, T.ExternTopK):
            self.extern_topk(s, loops)
        else:
            raise self.fail(f"statement {type(s).__name__}")

    def extern_sort(self, s: T.ExternSort, loops: list[Loop]) -> None:
        """The CPU kernels tvm.contrib.sort.argsort (topi.argsort) and tvm.contrib.sort.sort
        (DispatchSortScan's sort): std::stable_sort of each row with `<` (ascending) or `>`
        (descending), writing the row's positions, or its values, in that order to `out`.

        Off NaN that is the stable order of `sorting.sorted_along`, ties (-0.0/+0.0 too) in
        input order in both directions (measured on the VM: tests/test_ops_sorting.py). A NaN
        makes `<` no strict weak order (it compares false both ways), which leaves std::
        stable_sort's result unspecified: a row holding a NaN gets arbitrary positions in
        [0, n) (`nan_row_positions`: a function of the row, the same on both sides of a
        pass), and for sort the row's elements at those positions, so a source that pins
        that order (numpy's NaN-last order) differs from the target there. sort.cc's `sort`
        takes float16/32/64 and int32/int64 only (any other dtype is a fatal error at run
        time): other dtypes are unsupported here."""
        what = "tvm.contrib.sort.sort" if s.values else "tvm.contrib.sort.argsort"
        x, n = self.kernel_input(what, s.data, s.axis, loops)
        out = self.buffers[s.out]
        if s.values and (out.dtype != x.dtype or x.dtype not in KERNEL_SORT_DTYPES):
            raise self.fail(f"{what} of {x.dtype} into {out.dtype} (the kernel sorts "
                            f"{', '.join(sorted(KERNEL_SORT_DTYPES))} into the same dtype)")
        if not s.values and not is_int(out.dtype):
            raise self.fail(f"{what} into a buffer of {out.dtype}")
        order = sorted_along(self.ctx, x, s.axis, not s.ascending, n,
                             None if s.values else out.dtype)
        pos_dtype = "int32" if s.values else out.dtype
        chosen = self.nan_row_positions("sort", x, s.axis, n, s.ascending, pos_dtype)
        if chosen is not None:
            order = self.nan_rows_arbitrary(order, x, s.axis, n, chosen, pos_dtype, s.values)
        self.state[s.out] = order
        self.readers[s.out] = _array_reader(order)

    def extern_topk(self, s: T.ExternTopK, loops: list[Loop]) -> None:
        """The CPU kernel tvm.contrib.sort.topk (DispatchSortScan's topk): per row, a heap of
        the k best (value, position) pairs, then std::stable_sort of it, with comparators that
        order equal values by position (`stable_comparison`), written as values and/or
        positions. k < 1 means the whole row.

        Off NaN that is the first k of the stable order (`sorting.sorted_along`), ties
        (-0.0/+0.0 too) in input order, as the Relax topk encoder has it. A NaN compares false
        both ways and breaks the heap's and the sort's order: a row holding a NaN gets
        arbitrary positions in [0, n) (`nan_row_positions`) and, as values, the row's
        elements at those same positions (the kernel writes both from one pair). With k
        above the row's length the kernel writes the n pairs it has at a row stride of k, so
        the rest of each output row is memory nothing wrote (arbitrary)."""
        what = "tvm.contrib.sort.topk"
        x, n = self.kernel_input(what, s.data, s.axis, loops)
        if x.dtype not in KERNEL_TOPK_DTYPES:
            # measured on the VM: bfloat16 runs and returns values not of the row, int16
            # and others fail at run time (tests/test_ops_sorting.py, docs/findings.md)
            run = "runs and gives wrong values" if x.dtype == "bfloat16" else "fails at run time"
            raise self.fail(f"{what} of {x.dtype} (the kernel takes "
                            f"{', '.join(sorted(KERNEL_TOPK_DTYPES))}; {x.dtype} {run})")
        k = n if s.k < 1 else s.k
        values = self.buffers[s.values] if s.values is not None else None
        indices = self.buffers[s.indices] if s.indices is not None else None
        for out in (values, indices):
            if out is not None and out.shape[s.axis] != k:
                raise self.fail(f"{what} with k = {k} into {out.name}, whose axis {s.axis} "
                                f"has {out.shape[s.axis]} elements (the kernel writes rows "
                                f"{k} apart)")
        if values is not None and values.dtype != x.dtype:
            raise self.fail(f"{what} of {x.dtype} into values of {values.dtype}")
        if indices is not None and indices.dtype not in ("int32", "int64"):
            raise self.fail(f"{what} into indices of {indices.dtype}")
        pos_dtype = indices.dtype if indices is not None else "int32"
        chosen = self.nan_row_positions("topk", x, s.axis, k, s.ascending, pos_dtype)
        for out, as_values in ((values, True), (indices, False)):
            if out is None:
                continue
            order = sorted_along(self.ctx, x, s.axis, not s.ascending, min(k, n),
                                 None if as_values else out.dtype)
            if chosen is not None:
                order = self.nan_rows_arbitrary(order, x, s.axis, n, chosen, pos_dtype, as_values)
            if k > n:
                order = self.past_the_row(order, out, s.axis, n)
            self.state[out.id] = order
            self.readers[out.id] = _array_reader(order)

    def kernel_input(self, what: str, data: str, axis: int,
                     loops: list[Loop]) -> tuple[Tensor, int]:
        """A sort kernel's input tensor and its row length, for a call outside loops along an
        axis the encoding's pairwise comparisons can take."""
        if loops:
            raise self.fail(f"{what} inside a loop")
        x = self.state[data]
        n = x.shape[axis]
        if n > SORT_BOUND:
            raise self.fail(f"{what} along an axis of {n} elements (limit "
                            f"{SORT_BOUND}: the encoding compares every pair)")
        return x, n

    def nan_row_positions(self, kernel: str, x: Tensor, axis: int, length: int, ascending: bool,
                          dtype: str) -> RowPositions | None:
        """For a sort kernel on floats: the position (of `dtype`) it leaves at place j of a
        row holding a NaN, where its NaN-blind comparator gives no order. Unspecified, but
        the kernel is deterministic: one uninterpreted function of the row's values and j,
        shared by source and target (a fresh array per side would make the same kernel on
        both sides of a pass that keeps it, RewriteDataflowReshape's, differ). The order
        depends on the values only through comparisons, which the row's terms decide.
        None for integers, which have no NaN."""
        if not is_float(x.dtype):
            return None
        n = x.shape[axis]
        sort = self.ctx.dom(x.dtype).sort
        f = self.ctx.uf(f"tvtv_{kernel}_nan_order_{x.dtype}_{n}_{length}_"
                        f"{'asc' if ascending else 'desc'}_{dtype}",
                        *([sort] * n), idx(0).sort(), self.ctx.dom(dtype).sort)
        return lambda row, j: f(*row, j)

    def nan_rows_arbitrary(self, order: Tensor, x: Tensor, axis: int, n: int,
                           chosen: RowPositions, pos_dtype: str, as_values: bool) -> Tensor:
        """`order` where its row of `x` holds no NaN; elsewhere the positions `chosen` (in
        [0, n), else 0) or, `as_values`, the row's elements at them."""
        dom = self.ctx.dom(x.dtype)
        pdom = self.ctx.dom(pos_dtype)

        def elem(ix: list[z3.BitVecRef]) -> z3.ExprRef:
            row = [x.at_multi(ix[:axis] + [idx(m)] + ix[axis + 1:]) for m in range(n)]
            a = chosen(row, ix[axis])
            if as_values:   # the row's element at that position
                some = row[0]
                for m in range(1, n):
                    some = zf.If(a == pdom.const(m), row[m], some)
            else:
                some = zf.If(z3.ULT(a, pdom.const(n)), a, pdom.const(0))
            return zf.If(zf.Or(*[dom.is_nan(v) for v in row]), some, order.at_multi(ix))
        return Tensor.from_fn(order.shape, order.dtype, elem)

    def past_the_row(self, order: Tensor, out: T.Buffer, axis: int, n: int) -> Tensor:
        """`order` (n elements along `axis`) in `out`'s shape: positions n.. of each row are
        memory the kernel never wrote, arbitrary."""
        rest = undefined_tensor(self.ctx, out.shape, out.dtype, f"{out.name}_unwritten")

        def elem(ix: list[z3.BitVecRef]) -> z3.ExprRef:
            inside = ix[:axis] + [zf.If(z3.ULT(ix[axis], idx(n)), ix[axis], idx(0))] + ix[axis + 1:]
            return zf.If(z3.ULT(ix[axis], idx(n)), order.at_multi(inside), rest.at_multi(ix))
        return Tensor.from_fn(out.shape, out.dtype, elem)

    def adopt_init(self, store: T.Store, red: list[Loop], binding: dict[str, Loop | int]) -> T.Store:
        """The enclosing scope block's init, as the init of `store` (which must accumulate
        into the same element, over all of the scope's reduction loops)."""
        assert self.pending_init is not None
        init, outer_red, outer_binding = self.pending_init

        def resolve(e: T.Expr, b: dict[str, Loop | int]) -> object:
            if isinstance(e, T.Var) and e.id in b:
                x = b[e.id]
                return x.var if isinstance(x, Loop) else x
            if isinstance(e, T.IntImm):
                return e.value
            return None

        same = init.buffer == store.buffer and len(init.indices) == len(store.indices) and all(
            resolve(a, outer_binding) is not None and resolve(a, outer_binding) == resolve(b, binding)
            for a, b in zip(init.indices, store.indices))
        if not same or not {lp.var for lp in outer_red} <= {lp.var for lp in red}:
            raise self.fail("a block inside a reduction that does not accumulate into its element")
        self.pending_init = None
        return T.Store(store.buffer, store.indices, init.value)

    def range_env(self, loops: list[Loop]) -> dict[str, Val]:
        """Loop variables (and scope-block iter vars) as symbolic values with their ranges:
        evaluating an expression there gives its range over all iterations."""
        env: dict[str, Val] = {}
        for lp in loops:
            hi = lp.lo + lp.extent - 1
            env[lp.var] = IX.constant(lp.lo) if hi == lp.lo else \
                IX.Ix(z3.BitVec(f"tir_range_{lp.var}", INDEX_BITS), lp.lo, hi)
        self.bind_aliases(env)
        return env

    def bind_aliases(self, env: dict[str, Val]) -> None:
        """Give the scope blocks' iter vars (`self.aliases`) the values of the loops they
        name in `env`, or their constants."""
        for var, b in self.aliases.items():
            if isinstance(b, Loop):
                if b.var in env:
                    env[var] = env[b.var]
            else:
                env[var] = IX.constant(b)

    def extent_values(self, e: T.Expr, loops: list[Loop]) -> tuple[int, ...]:
        """Every value of loop extent `e` over the iterations of the enclosing loops it
        depends on (enumerated: there are few in pooling windows)."""
        names = index_values.variables(e)
        by_var = {lp.var: lp for lp in loops}
        deps: dict[str, Loop] = {}
        for name in names:
            b = self.aliases.get(name, by_var.get(name))
            if isinstance(b, Loop):
                deps[name] = b
        combos = math.prod(lp.extent for lp in deps.values())
        if combos > index_values.COMBINATIONS:
            raise self.fail(f"loop extent depending on {combos} iterations")
        spans = {name: (lp.lo, lp.lo + lp.extent - 1) for name, lp in deps.items()}
        # iter vars bound to a constant (`bind_aliases`)
        spans.update((name, (b, b)) for name, b in self.aliases.items()
                     if name in names and isinstance(b, int))
        values = index_values.values_over(e, spans, max(combos, 1))
        if values is None:
            raise self.fail(f"loop extent {e} that is not an integer function of the loops")
        return tuple(sorted({max(v, 0) for v in values}))

    def static_int(self, e: T.Expr, what: str) -> int:
        v = self.expr(e, {})
        if not isinstance(v, IX.Ix) or v.const is None:
            raise self.fail(f"non-constant {what}")
        return v.const

    def block(self, b: T.Block, loops: list[Loop]) -> None:
        outer = self.where
        self.where = f"{self.pf.name}, block {b.name!r}"
        try:
            pred = self.expr(b.predicate, {})
            if not (isinstance(pred, Sc) and z3.is_true(pred.term)):
                raise self.fail("block predicate")
            for buf in b.alloc:
                self.buffers[buf.id] = buf
                self.set_undefined(buf)
            if not b.iter_vars:
                if b.init is not None:
                    raise self.fail("init in a block without iter vars")
                self.stmt(b.body, loops)
                return
            by_var = {lp.var: lp for lp in loops}
            binding: dict[str, Loop | int] = {}
            red: list[Loop] = []
            for iv, value in zip(b.iter_vars, b.iter_values):
                if isinstance(value, T.Var) and value.id in by_var:
                    binding[iv.var.id] = by_var[value.id]
                    if iv.kind == "R":
                        red.append(by_var[value.id])
                elif isinstance(value, T.IntImm):
                    binding[iv.var.id] = value.value
                elif isinstance(value, T.Var) and value.id in self.aliases:
                    binding[iv.var.id] = self.aliases[value.id]
                    if iv.kind == "R" and isinstance(self.aliases[value.id], Loop):
                        red.append(self.aliases[value.id])   # type: ignore[arg-type]
                else:
                    raise self.fail(f"iter var {iv.var.id.split('%')[0]} bound to an expression")
            if len({lp.var for lp in red}) != len(red):
                raise self.fail("a loop bound to two reduction iter vars")
            stores = _stores_of(b.body)
            if stores is None:
                # a block that only scopes loops and blocks (adaptive pooling's outer block):
                # its iter vars name the enclosing loops for the blocks inside. With an init
                # and reduction iter vars, the one block inside accumulates onto that init
                # over the outer and its own reduction loops: one reduction over both.
                pending = None
                if b.init is not None or red:
                    inits = None if b.init is None else _stores_of(b.init)
                    if inits is None or len(inits) != 1 or not red:
                        raise self.fail(f"reduction block whose body is {type(b.body).__name__}")
                    pending = (inits[0], list(red), {**self.aliases, **binding})
                saved, saved_pending = dict(self.aliases), self.pending_init
                self.aliases.update(binding)
                self.pending_init = pending
                try:
                    self.stmt(b.body, loops)
                    if pending is not None and self.pending_init is not None:
                        raise self.fail("reduction init without a block accumulating onto it")
                finally:
                    self.aliases, self.pending_init = saved, saved_pending
                return
            inits = None if b.init is None else _stores_of(b.init)
            if b.init is not None and (inits is None or len(inits) != len(stores)):
                raise self.fail(f"init {type(b.init).__name__} that does not match the body's stores")
            if not red and b.init is not None:
                raise self.fail("init in a block without reduction iter vars")
            binding = {**self.aliases, **binding}
            if self.pending_init is not None and inits is None and len(stores) == 1:
                inits = [self.adopt_init(stores[0], red, binding)]
            if len(stores) == 1:
                self.write(stores[0], None if inits is None else inits[0], loops, binding, red)
            elif red and inits is not None:
                self.write_joint(stores, inits, loops, binding, red)
            else:
                written = {st.buffer for st in stores}
                if any(_mentions(st.value, w) for st in stores for w in written):
                    raise self.fail("several stores that read each other's buffers")
                for st in stores:
                    self.write(st, None, loops, binding, red)
        finally:
            self.where = outer

    # -- bulk writes -----------------------------------------------------------------------------
    def write(self, store: T.Store, init: T.Store | None, loops: list[Loop],
              binding: dict[str, Loop | int], red: list[Loop],
              value_fn: Callable[[dict[str, Val], list[IX.Ix]], z3.ExprRef] | None = None) -> None:
        """Run `store` under `loops` as one update of its buffer (see the module docstring).
        `value_fn(env, ix)`, when given, computes the stored element instead of the store's
        value (a multi-buffer reduction computes all its accumulators at once)."""
        if store.buffer not in self.state:
            raise self.fail(f"store to unknown buffer {store.buffer}")
        buf = self.buffers[store.buffer]
        by_var = {lp.var: lp for lp in loops}
        dims: list[Loop | int] = []
        for k, e in enumerate(store.indices):
            if isinstance(e, T.Var) and e.id in binding:
                dims.append(binding[e.id])
            elif isinstance(e, T.Var) and e.id in by_var:
                dims.append(by_var[e.id])
            elif isinstance(e, T.IntImm):
                dims.append(e.value)
            elif init is None and not red and value_fn is None:
                self.write_unrolled(store, loops, binding)
                return
            else:
                raise self.fail(f"store index {k} of {buf.name} that is not a loop variable")
        used = [d.var for d in dims if isinstance(d, Loop)]
        if len(set(used)) != len(used):
            raise self.fail(f"store to {buf.name} with a repeated index variable")
        red_vars = {lp.var for lp in red}
        if set(used) & red_vars:
            raise self.fail(f"store to {buf.name} indexed by a reduction variable")
        for lp in loops:
            if lp.var not in used and lp.var not in red_vars and lp.extent > 1:
                raise self.fail(f"loop {lp.var.split('%')[0]} rewrites {buf.name} "
                                f"{lp.extent} times")
        if len(dims) != len(buf.shape):
            raise self.fail(f"store to {buf.name} with {len(dims)} indices")
        # static bounds of the written box
        for d, (dim, size) in enumerate(zip(dims, buf.shape)):
            lo, hi = (dim.lo, dim.lo + dim.extent - 1) if isinstance(dim, Loop) else (dim, dim)
            if lo < 0 or hi >= size:
                self.ub(z3.BoolVal(True), f"store to {buf.name} out of bounds in dimension {d} "
                        f"([{lo}, {hi}] for size {size})")
        if init is not None and (init.buffer != store.buffer or init.indices != store.indices):
            raise self.fail("init that stores elsewhere than the reduction")
        shape = buf.shape
        constant_loops = [lp for lp in loops if lp.var not in used and lp.var not in red_vars]
        if init is None and not red and value_fn is None and \
                self.row_major_copy(store, buf, dims, binding, constant_loops):
            return
        old_reader = self.readers[store.buffer]

        def element(ix: list[IX.Ix]) -> z3.ExprRef:
            """The buffer's new element at multi-index `ix` (each within its dimension)."""
            env: dict[str, Val] = {}
            conds: list[z3.BoolRef] = []
            for d, (dim, size) in enumerate(zip(dims, shape)):
                v = ix[d]
                if isinstance(dim, Loop):
                    lo, hi = max(dim.lo, 0), min(dim.lo + dim.extent, size) - 1
                    if hi < lo:
                        return old_reader(ix)
                    if v.lo < lo:
                        conds.append(IX.le(IX.constant(lo), v))
                    if v.hi > hi:
                        conds.append(IX.le(v, IX.constant(hi)))
                    env[dim.var] = IX.Ix(v.term, max(v.lo, lo), min(v.hi, hi)) \
                        if max(v.lo, lo) != min(v.hi, hi) else IX.constant(max(v.lo, lo))
                else:
                    if not 0 <= dim < size:
                        return old_reader(ix)
                    if v.lo != v.hi or v.const != dim:
                        conds.append(IX.eq(v, IX.constant(dim)))
            _bind_rest(env, constant_loops, binding)
            guard = z3.simplify(zf.And(*conds)) if conds else z3.BoolVal(True)
            if z3.is_false(guard):
                return old_reader(ix)
            with self.guard(guard):
                if value_fn is not None:
                    value = value_fn(env, ix)
                elif red:
                    value = self.reduce(store, init, env, binding, red, old_reader, ix, buf)
                else:
                    value = self.scalar(self.expr(store.value, env), buf.dtype)
                if stored_range.finite and ranges.computes(store.value):
                    value = self.stated_range(value, buf.dtype, stored_range)
            return value if z3.is_true(guard) else zf.If(guard, value, old_reader(ix))

        def flat(i: z3.BitVecRef) -> z3.ExprRef:
            parts = unravel(i, shape) if shape else []
            return element([IX.Ix(t, 0, size - 1) if size > 1 else IX.constant(0)
                            for t, size in zip(parts, shape)])

        if value_fn is not None or not is_float(buf.dtype):
            stored_range = ranges.TOP
        elif red:
            stored_range = self.reduction_range(store, init, red, buf)
        else:
            stored_range = ranges.expr_range(store.value, self.range_of)
        self.state[store.buffer] = Tensor.from_flat(shape, buf.dtype, flat)
        self.readers[store.buffer] = element
        whole = all(dim.dyn is None and dim.lo <= 0 and dim.lo + dim.extent >= size
                    if isinstance(dim, Loop) else size == 1 for dim, size in zip(dims, shape))
        if stored_range != ranges.TOP and whole:
            self.ranges[store.buffer] = (self.state[store.buffer], stored_range)

    def row_major_copy(self, store: T.Store, buf: T.Buffer, dims: list[Loop | int],
                       binding: dict[str, Loop | int], constant_loops: list[Loop]) -> bool:
        """If `store` writes the whole of `buf` with another buffer's elements in row-major
        order (a legalized reshape, squeeze, expand_dims or flatten), make `buf` that
        buffer's array, as relax.reshape's encoder does, and say so (`row_major`)."""
        src = store.value
        if not (isinstance(src, T.Load) and src.buffer != store.buffer and src.buffer in self.state
                and src.buffer not in self.acc_override and self.prog is None):
            return False
        t = self.state[src.buffer]
        if t.dtype != buf.dtype or t.numel != math.prod(buf.shape) or t.numel == 0 \
                or len(src.indices) != t.ndim:
            return False
        for dim, size in zip(dims, buf.shape):
            whole = dim.dyn is None and dim.lo == 0 and dim.extent == size \
                if isinstance(dim, Loop) else dim == 0 and size == 1
            if not whole:
                return False
        out_ix = row_major.fresh_indices(buf.shape)
        env: dict[str, Val] = {dim.var: v for dim, v in zip(dims, out_ix) if isinstance(dim, Loop)}
        _bind_rest(env, constant_loops, binding)
        if not all(_index_arithmetic(e) for e in src.indices):
            return False   # (a loaded index would be read, and its UB recorded, at fresh indices)
        try:
            src_ix = [self.expr(e, env) for e in src.indices]
        except Unsupported:
            return False
        if not all(isinstance(v, IX.Ix) for v in src_ix) or not row_major.is_row_major(
                self.ctx, out_ix, buf.shape, src_ix, t.shape):   # type: ignore[arg-type]
            return False
        out = Tensor(tuple(buf.shape), buf.dtype, t.arr)
        self.state[store.buffer] = out
        self.readers[store.buffer] = row_major.reshaped(self.readers[src.buffer], t.shape,
                                                        buf.shape)
        root = self.copied.get(src.buffer)   # a copy of a copy: the first one's source
        self.copied[store.buffer] = root if root is not None and z3.eq(root[0], t.arr) \
            else (t.arr, tuple(t.shape), self.readers[src.buffer])
        r = self.range_of(src.buffer)
        if r != ranges.TOP:
            self.ranges[store.buffer] = (out, r)
        return True

    def reduction_range(self, store: T.Store, init: T.Store | None, red: list[Loop],
                        buf: T.Buffer) -> ranges.Range:
        """The range of a reduction `acc = op(acc, term)` over the loops `red`
        (`ranges.reduction_range`), starting from the init's value, or without one from the
        buffer's contents before the block. `TOP` for a shape `reduce` would not take."""
        parts = _combination(store, buf.dtype)
        if parts is None or _mentions(parts[1], store.buffer):
            return ranges.TOP
        op, term, acc_first = parts
        start = ranges.expr_range(init.value, self.range_of) if init is not None \
            else self.range_of(store.buffer)
        # a loop of varying extent counts its largest (`Loop.extent`): the rule covers fewer
        n = math.prod(lp.extent for lp in red)
        return ranges.reduction_range(op, start, ranges.expr_range(term, self.range_of), n,
                                      buf.dtype, acc_first)

    def stated_range(self, value: z3.ExprRef, dtype: str, r: ranges.Range) -> z3.ExprRef:
        """`value`, a stored element whose range `r` the TIR proves, with the range stated
        where the abstraction rung asks for it; elsewhere a note that it was not (the ladder
        then climbs to that rung when a counterexample stays unconfirmed)."""
        dom = self.ctx.dom(dtype)
        if not dom.states_ranges:
            return value
        level = self.ctx.abstraction
        if level is not None and level.ranges:
            return dom.bounded(value, r.magnitude, r.nan)
        self.ctx.notes.add(ranges.RANGES_NOTE)
        return value

    def range_of(self, buffer: str) -> ranges.Range:
        """The range every element of `buffer` lies in now (`ranges.TOP`: nothing known)."""
        entry = self.ranges.get(buffer)
        return entry[1] if entry is not None and entry[0] is self.state.get(buffer) else ranges.TOP

    def write_unrolled(self, store: T.Store, loops: list[Loop], binding: dict[str, Loop | int]) -> None:
        """Run `store` once per iteration of `loops`, in the loops' order, when its indices
        are not loop variables (the IR-builder TIR of scatter_elements and scatter_nd:
        `out[(v * 4 + i[v, w]) // 4, ...] = u[v, w]`, or a flat copy `out[v // 4, v % 4]`).
        Each iteration's value reads the buffer as the earlier iterations left it, so a later
        store to the same element wins and an accumulation (`out[p] = out[p] + u`) sees the
        earlier ones: the element is `If(ix == p_k, value_k, previous(ix))`. Parallel loops
        run as serial ones here, as everywhere in this interpreter. At most
        `UNROLLED_STORES` iterations."""
        if any(lp.dyn is not None for lp in loops):
            raise self.fail(f"store to {self.buffers[store.buffer].name} at computed indices "
                            f"under a loop of varying extent")
        n = math.prod(lp.extent for lp in loops)
        buf = self.buffers[store.buffer]
        if n > UNROLLED_STORES:
            raise self.fail(f"store to {buf.name} at computed indices in {n} iterations "
                            f"(at most {UNROLLED_STORES} are unrolled)")
        shape = buf.shape
        for point in itertools.product(*[range(lp.lo, lp.lo + lp.extent) for lp in loops]):
            env: dict[str, Val] = {lp.var: IX.constant(v) for lp, v in zip(loops, point)}
            for var, b in [*self.aliases.items(), *binding.items()]:
                if isinstance(b, Loop):
                    if b.var in env:
                        env[var] = env[b.var]
                else:
                    env[var] = IX.constant(b)
            at, in_bounds = self.indices(store.indices, shape, env, f"store to {buf.name}")
            # out of bounds the store is UB (recorded): it writes nothing in the model
            where = z3.simplify(zf.And(*in_bounds)) if in_bounds else z3.BoolVal(True)
            with self.guard(where):
                value = self.scalar(self.expr(store.value, env), buf.dtype)
            previous = self.readers[store.buffer]

            def element(ix: list[IX.Ix], at: list[IX.Ix] = at, value: z3.ExprRef = value,
                        where: z3.BoolRef = where, previous: Reader = previous) -> z3.ExprRef:
                hit = z3.simplify(zf.And(where, *[IX.eq(a, b) for a, b in zip(ix, at)]))
                if z3.is_false(hit):
                    return previous(ix)
                return value if z3.is_true(hit) else zf.If(hit, value, previous(ix))

            self.readers[store.buffer] = element

        final = self.readers[store.buffer]

        def flat(i: z3.BitVecRef) -> z3.ExprRef:
            parts = unravel(i, shape) if shape else []
            return final([IX.Ix(t, 0, size - 1) if size > 1 else IX.constant(0)
                          for t, size in zip(parts, shape)])

        self.state[store.buffer] = Tensor.from_flat(shape, buf.dtype, flat)

    def write_joint(self, stores: list[T.Store], inits: list[T.Store], loops: list[Loop],
                    binding: dict[str, Loop | int], red: list[Loop]) -> None:
        """A reduction block with several accumulators (argmax/argmin: index and value),
        all stored at the same indices: the exact left fold of the simultaneous update
        (every store's value reads the accumulators before the step) for at most
        `reduction.FOLD_BOUND` steps, an uninterpreted fold of the same step above
        (`uninterpreted_fold`)."""
        if any(lp.dyn is not None for lp in red):
            raise self.fail("multi-buffer reduction over a loop of varying extent")
        n = math.prod(lp.extent for lp in red)
        for st, it in zip(stores, inits):
            if it.buffer != st.buffer or it.indices != st.indices or st.indices != stores[0].indices:
                raise self.fail("multi-buffer reduction whose stores use different indices")
        if len({st.buffer for st in stores}) != len(stores):
            raise self.fail("multi-buffer reduction storing one buffer twice")
        cache: dict[tuple, tuple[list[z3.ExprRef], tuple]] = {}
        arg = self.arg_loop(stores, binding, red, n)
        # an argmax loop is unrolled as far as the specification's argmax is
        bound = reduction.FOLD_BOUND if arg is None else reduction.arg_fold_bound(self.ctx)
        uninterpreted = self.uninterpreted_fold(stores, binding, red, n) if n > bound else None

        def folded(env: dict[str, Val], ix: list[IX.Ix]) -> list[z3.ExprRef]:
            key = (tuple(v.term.get_id() for v in ix), tuple(g.get_id() for g in self.guards))
            if key in cache:
                return cache[key][0]
            accs = [self.scalar(self.expr(it.value, env), self.buffers[it.buffer].dtype)
                    for it in inits]
            initial = accs
            for k in range(n if uninterpreted is None else 0):
                env2 = self.red_env(env, binding, red, idx(k))
                saved = self.acc_override
                self.acc_override = {st.buffer: (st.indices, a) for st, a in zip(stores, accs)}
                try:
                    accs = [self.scalar(self.expr(st.value, env2), self.buffers[st.buffer].dtype)
                            for st in stores]
                finally:
                    self.acc_override = saved
            if uninterpreted is not None:
                accs = uninterpreted(env, accs)
            if arg is not None:
                accs = list(accs)
                vdtype = self.buffers[stores[arg.value_acc].buffer].dtype
                accs[arg.index_acc] = reduction.tir_arg_loop(
                    self.ctx, vdtype, n,
                    lambda r: self.scalar(self.expr(arg.value, self.red_env(env, binding, red, r)),
                                          vdtype),
                    arg.kind, initial[arg.index_acc], initial[arg.value_acc], accs[arg.index_acc])
            cache[key] = (accs, (tuple(v.term for v in ix), tuple(self.guards)))
            return accs

        for j, st in enumerate(stores):
            self.write(st, None, loops, binding, red,
                       value_fn=lambda env, ix, j=j: folded(env, ix)[j])

    def arg_loop(self, stores: list[T.Store], binding: dict[str, Loop | int], red: list[Loop],
                 n: int) -> fold.ArgReduction | None:
        """`stores` as TVM's argmax/argmin step (`fold.arg_reduction`) whose index element is
        the step number itself (k, or k0 * n1 + k1 over row-major loops from 0), so that
        `reduction.tir_arg_loop` states it; None for any other multi-buffer reduction, for an
        index that is not int64 (Relax's argmax gives int64), and above
        `reduction.MAXMIN_FOLD_BOUND` steps (the statement's conditions grow with n).
        The index is checked at every step on its constant value."""
        if n > reduction.MAXMIN_FOLD_BOUND:
            return None
        dtypes = [self.buffers[st.buffer].dtype for st in stores]
        arg = fold.arg_reduction(stores, dtypes)
        if arg is None or dtypes[arg.index_acc] != "int64":
            return None
        for k in range(n):
            try:
                at = self.scalar(self.expr(arg.index, self.red_env({}, binding, red, idx(k))), "int64")
            except (KeyError, Unsupported):
                return None     # it reads more than the reduction loops
            at = z3.simplify(at)
            if not (z3.is_bv_value(at) and at.as_signed_long() == k):
                return None
        return arg

    def uninterpreted_fold(self, stores: list[T.Store], binding: dict[str, Loop | int],
                           red: list[Loop], n: int
                           ) -> Callable[[dict[str, Val], list[z3.ExprRef]], list[z3.ExprRef]]:
        """The multi-buffer reduction of `stores` over more than `reduction.FOLD_BOUND` steps
        as uninterpreted functions (`fold.py`): accumulator j's result is `fold_<step>_j` of
        the initial accumulators and, for each element part of the step, the array of its
        values in loop order (index r < n; a fixed value above, so only the n values count).
        Returned as a function of the output element's environment and initial values."""
        dtypes = [self.buffers[st.buffer].dtype for st in stores]
        try:
            name, parts = fold.skeleton(stores, dtypes, n)
        except fold.NotAFold as e:
            raise self.fail(f"multi-buffer reduction of {n} steps (at most "
                            f"{reduction.FOLD_BOUND} are unrolled): {e}") from None
        self.ctx.notes.add(fold.NOTE)
        result_sorts = [self.ctx.dom(d).sort for d in dtypes]

        def apply(env: dict[str, Val], inits: list[z3.ExprRef]) -> list[z3.ExprRef]:
            arrays = []
            for part in parts:
                dtype = fold.dtype_of(part)
                arrays.append(reduction.term_array(
                    self.ctx, dtype, n, lambda r, part=part, dtype=dtype: self.scalar(
                        self.expr(part, self.red_env(env, binding, red, r)), dtype),
                    self.ctx.dom(dtype).zero()))
            args = [*inits, *arrays]
            sorts = [a.sort() for a in args]
            return [self.ctx.uf(f"{name}_{j}", *sorts, s)(*args)
                    for j, s in enumerate(result_sorts)]

        return apply

    def red_env(self, env: dict[str, Val], binding: dict[str, Loop | int], red: list[Loop],
                r: z3.BitVecRef) -> dict[str, Val]:
        """`env` with the reduction loops `red` (and the iter vars bound to them) at step `r`
        of their row-major iteration: constants where `r` is a numeral, index terms over `r`
        (each within its loop's range) otherwise."""
        red_shape = [lp.extent for lp in red]
        red_vars = [var for var, b in binding.items() if isinstance(b, Loop) and b in red]
        env2 = dict(env)
        if z3.is_bv_value(r):
            # a term index known now (unrolled terms): constant loop values, not
            # UDiv/URem terms of a constant (smaller terms, shared across readers)
            digits = np.unravel_index(r.as_long(), red_shape) if red_shape else ()
            for lp, dgt in zip(red, digits):
                env2[lp.var] = IX.constant(lp.lo + int(dgt))
        else:
            parts = unravel(r, red_shape) if len(red_shape) > 1 else [r]
            for lp, t in zip(red, parts):
                base = IX.Ix(t, 0, lp.extent - 1) if lp.extent > 1 else IX.constant(0)
                env2[lp.var] = IX.add(base, IX.constant(lp.lo)) if lp.lo else base
        for var in red_vars:
            env2[var] = env2[binding[var].var]   # type: ignore[union-attr]
        return env2

    def reduce(self, store: T.Store, init: T.Store | None, env: dict[str, Val],
               binding: dict[str, Loop | int], red: list[Loop], old_reader: Reader,
               ix: list[IX.Ix], buf: T.Buffer) -> z3.ExprRef:
        parts = _combination(store, buf.dtype)
        if parts is None:
            raise self.fail(f"reduction update of {buf.name} that is not combine(acc, term)")
        op, term, acc_first = parts
        if _mentions(term, store.buffer):
            raise self.fail(f"reduction term that reads its own accumulator {buf.name}")
        start = self.scalar(self.expr(init.value, env), buf.dtype) if init is not None \
            else old_reader(ix)
        dynamic = [lp for lp in red if lp.dyn is not None]
        if not dynamic:
            return self.reduce_static(op, term, acc_first, start, env, binding, red, buf)
        # extents that depend on the output index: one reduction per combination of extent
        # values, each over exactly its own terms (as the Relax encoders build them)
        exts = [self.expr(lp.dyn, env) for lp in dynamic]   # type: ignore[arg-type]
        for e in exts:
            if not isinstance(e, IX.Ix):
                raise self.fail("loop extent that is not an integer")
        choices = [[v for v in lp.values if e.lo <= v <= e.hi] or [lp.values[-1]]   # type: ignore[union-attr]
                   for lp, e in zip(dynamic, exts)]
        combos = list(itertools.product(*choices))
        if len(combos) > 16:
            raise self.fail(f"reduction with {len(combos)} combinations of loop extents")
        result: z3.ExprRef | None = None
        for combo in reversed(combos):
            sizes = dict(zip([lp.var for lp in dynamic], combo))
            fixed = [Loop(lp.var, lp.lo, sizes[lp.var]) if lp.var in sizes else lp for lp in red]
            binding2 = {var: (fixed[red.index(b)] if isinstance(b, Loop) and b in red else b)
                        for var, b in binding.items()}
            cond = z3.simplify(zf.And(*[IX.eq(e, IX.constant(c)) for e, c in zip(exts, combo)]))
            with self.guard(cond):   # UB (out-of-bounds taps) only where this extent holds
                value = self.reduce_static(op, term, acc_first, start, env, binding2,
                                           [lp for lp in fixed if lp.extent > 0], buf) \
                    if all(lp.extent > 0 for lp in fixed) else start
            result = value if result is None else zf.If(cond, value, result)
        assert result is not None
        return result

    def reduce_static(self, op: str, term: T.Expr, acc_first: bool, start: z3.ExprRef,
                      env: dict[str, Val], binding: dict[str, Loop | int], red: list[Loop],
                      buf: T.Buffer) -> z3.ExprRef:
        """`start` combined by `op` with `term` over the reduction loops `red`."""
        n = math.prod(lp.extent for lp in red)

        def red_env(r: z3.BitVecRef) -> dict[str, Val]:
            return self.red_env(env, binding, red, r)

        def elem(r: z3.BitVecRef) -> z3.ExprRef:
            return self.scalar(self.expr(term, red_env(r)), buf.dtype)

        if (op == "add" and isinstance(term, T.Binary) and term.op == "mul"
                and z3.eq(start, self.ctx.dom(buf.dtype).const(0.0 if is_float(buf.dtype) else 0))):
            # a sum of products from zero: the same `dot` the Relax encoders use
            def factor(e: T.Expr) -> reduction.Elem:
                def f(r: z3.BitVecRef) -> z3.ExprRef:
                    env2 = red_env(r)
                    return self.scalar(self.expr(e, env2), buf.dtype)
                return f
            return reduction.dot(self.ctx, buf.dtype, n, factor(term.a), factor(term.b))

        def step(a: z3.ExprRef, t: z3.ExprRef) -> z3.ExprRef:
            x, y = (a, t) if acc_first else (t, a)
            return self.scalar(self.binary(op, Sc(x, buf.dtype), Sc(y, buf.dtype), buf.dtype),
                               buf.dtype)

        return reduction.tir_reduce(self.ctx, op, buf.dtype, start, n, elem, step)

    # -- expressions -----------------------------------------------------------------------------
    def scalar(self, v: Val, dtype: str) -> z3.ExprRef:
        """`v` as an element of `dtype`'s domain."""
        if isinstance(v, Sc):
            if v.dtype != dtype:
                raise self.fail(f"value of dtype {v.dtype} where {dtype} is expected")
            return v.term
        if is_int(dtype):
            return IX.to_int(v, INT_FORMATS[dtype][0])
        if is_float(dtype):
            return self.ctx.model.cast(IX.to_int(v, 64), "int64", dtype)
        if is_bool(dtype):
            return v.term != 0
        raise self.fail(f"index value as {dtype}")

    def expr(self, e: T.Expr, env: dict[str, Val]) -> Val:
        if isinstance(e, T.Var):
            if e.id not in env:
                raise self.fail(f"variable {e.id.split('%')[0]} used outside its loop")
            return env[e.id]
        if isinstance(e, T.IntImm):
            if is_bool(e.dtype):
                return Sc(z3.BoolVal(bool(e.value)), "bool")
            if is_int(e.dtype) and -IX.LIMIT <= e.value < IX.LIMIT:
                return IX.constant(e.value)
            return Sc(self.ctx.dom(e.dtype).const(e.value), e.dtype)
        if isinstance(e, T.FloatImm):
            check_supported(e.dtype, f"PrimFunc {self.where}")
            # the term as every encoder writes this constant; the case value rounded to dtype
            value = float(np.asarray(e.value).astype(numpy_dtype(e.dtype)))
            return Sc(self.ctx.dom(e.dtype).const(e.value), e.dtype, ((z3.BoolVal(True), value),))
        if isinstance(e, T.Load):
            return self.load(e, env)
        if isinstance(e, T.Binary):
            wrapped = self.wrapped_mod(e, env)
            if wrapped is not None:
                return wrapped
            return self.binary(e.op, self.expr(e.a, env), self.expr(e.b, env), e.dtype)
        if isinstance(e, T.Compare):
            return self.compare(e.op, self.expr(e.a, env), self.expr(e.b, env))
        if isinstance(e, T.Logic):
            args = [self.truth(self.expr(a, env)) for a in e.args]
            if e.op == "not":
                return Sc(zf.Not(args[0]), "bool")
            return Sc(zf.And(*args) if e.op == "and" else zf.Or(*args), "bool")
        if isinstance(e, T.Select):
            c = self.truth(self.expr(e.cond, env))
            return self.choose(c, self.expr(e.true_value, env), self.expr(e.false_value, env),
                               e.dtype)
        if isinstance(e, T.IfThenElse):
            c = self.truth(self.expr(e.cond, env))
            c = z3.simplify(c)
            if z3.is_true(c):
                return self.expr(e.true_value, env)
            if z3.is_false(c):
                return self.expr(e.false_value, env)
            with self.guard(c):
                t = self.expr(e.true_value, env)
            with self.guard(zf.Not(c)):
                f = self.expr(e.false_value, env)
            return self.choose(c, t, f, e.dtype)
        if isinstance(e, T.Cast):
            v = self.expr(e.value, env)
            if isinstance(v, IX.Ix) and is_float(e.dtype) and v.hi - v.lo >= CASES_BOUND:
                exact = self.exact_cast(e.value, v, env, e.dtype)
                if exact is not None:
                    return exact
            return self.cast(v, e.dtype)
        if isinstance(e, T.Call):
            return self.call(e, env)
        raise self.fail(f"expression {type(e).__name__}")

    def truth(self, v: Val) -> z3.BoolRef:
        if isinstance(v, Sc):
            return v.term if is_bool(v.dtype) else self.ctx.dom(v.dtype).truthy(v.term)
        return v.term != 0

    def choose(self, c: z3.BoolRef, t: Val, f: Val, dtype: str) -> Val:
        if isinstance(t, IX.Ix) and isinstance(f, IX.Ix):
            return IX.select(c, t, f)
        return Sc(zf.If(c, self.scalar(t, dtype), self.scalar(f, dtype)), dtype)

    def indices(self, exprs: Sequence[T.Expr], shape: Sequence[int], env: dict[str, Val],
                what: str) -> tuple[list[IX.Ix], list[z3.BoolRef]]:
        """The index expressions of an access to a buffer of `shape`, each as an index in
        its dimension, and the conditions (not statically true) that they are in bounds;
        out of bounds is UB (recorded here). An index may be a loaded integer (take's and
        scatter's TIR read positions from an index tensor)."""
        ix: list[IX.Ix] = []
        in_bounds: list[z3.BoolRef] = []
        for d, (ie, size) in enumerate(zip(exprs, shape)):
            v = self.expr(ie, env)
            if isinstance(v, Sc):
                if not is_int(v.dtype):
                    raise self.fail(f"index of dtype {v.dtype}")
                bits, signed = INT_FORMATS[v.dtype]
                x = v.term
                ok = zf.And(x >= 0, x < size) if signed else z3.ULT(x, size)
                self.ub(zf.Not(ok), f"{what} out of bounds in dimension {d}")
                in_bounds.append(ok)
                x = z3.Extract(INDEX_BITS - 1, 0, x) if bits > INDEX_BITS else (
                    z3.ZeroExt(INDEX_BITS - bits, x) if bits < INDEX_BITS else x)
                ix.append(IX.Ix(x, 0, size - 1) if size > 1 else IX.constant(0))
                continue
            if v.lo < 0 or v.hi >= size:
                ok = zf.And(IX.le(IX.constant(0), v), IX.lt(v, IX.constant(size)))
                self.ub(zf.Not(ok), f"{what} out of bounds in dimension {d}")
                in_bounds.append(ok)
                lo, hi = max(v.lo, 0), min(v.hi, size - 1)
                v = IX.Ix(v.term, lo, hi) if lo < hi else IX.constant(lo)
            ix.append(v)
        return ix, in_bounds

    def load(self, e: T.Load, env: dict[str, Val]) -> Val:
        if self.prog is not None:
            if e.buffer in self.prog.locals:
                return self.prog.local_load(e, env)
            self.prog.loaded.add(e.buffer)
        if e.buffer in self.acc_override:
            indices, value = self.acc_override[e.buffer]
            if e.indices != indices:
                raise self.fail("a reduction step that reads its accumulator elsewhere")
            return Sc(value, self.buffers[e.buffer].dtype)
        if e.buffer not in self.state:
            raise self.fail(f"load from unknown buffer {e.buffer}")
        t = self.state[e.buffer]
        name = self.buffers[e.buffer].name
        if len(e.indices) != t.ndim:
            raise self.fail(f"load from {name} with {len(e.indices)} indices")
        ix, in_bounds = self.indices(e.indices, t.shape, env, f"load from {name}")
        # Keyed by AST ids: the entry keeps those ASTs (and the reader) alive, since Z3 reuses
        # the id of a freed AST (a stale hit would read another element: unsound).
        reader = self.readers[e.buffer]
        split = self.prog.case_split(ix, t.shape) if self.prog is not None else None
        if split is not None:
            # an index that is one of a few constants (a binary search's `mid`): one read
            # per value, each where its case holds, so the terms compare the same elements
            # `b[k]` a Relax encoder compares (no array read at a symbolic index)
            result: z3.ExprRef | None = None
            for cond, consts in reversed(split):
                with self.guard(cond):
                    at = [IX.constant(k) for k in consts]
                    keep = (reader, tuple(v.term for v in at), tuple(self.guards))
                    key = (e.buffer, id(reader), tuple(v.term.get_id() for v in at),
                           tuple(g.get_id() for g in self.guards))
                    if key not in self.memo:
                        self.memo[key] = (reader(at), keep)
                    value = self.memo[key][0]
                result = value if result is None else zf.If(cond, value, result)
            assert result is not None
            return Sc(result, t.dtype)
        # the element (a producer's body, inlined) is evaluated only where it is read: on
        # this path, at an in-bounds index (see the UB guard rule above)
        with self.guard(z3.simplify(zf.And(*in_bounds)) if in_bounds else z3.BoolVal(True)):
            keep = (reader, tuple(v.term for v in ix), tuple(self.guards))
            key = (e.buffer, id(reader), tuple(v.term.get_id() for v in ix),
                   tuple(g.get_id() for g in self.guards))
            if key not in self.memo:
                self.memo[key] = (reader(ix), keep)
            return Sc(self.memo[key][0], t.dtype)

    def wrapped_mod(self, e: T.Binary, env: dict[str, Val]) -> Val | None:
        """`truncmod(truncmod(x, n) + n, n)` with a constant n > 0 (take's "wrap" mode) on a
        loaded signed integer x: Python's x mod n, an index in [0, n), built as the Relax take
        encoder builds it (`wrapped_position`); None for any other expression. Exact: the
        inner remainder lies in (-n, n), so adding n cannot overflow where
        `wrapped_position` accepts n, and the outer truncmod of a value in (0, 2n) is its
        floor mod. Without it the solver compares two 64-bit divisions per element (take
        of 6 indices: a timeout after 10 s)."""
        def const(x: T.Expr) -> int | None:
            return x.value if isinstance(x, T.IntImm) else None
        if not (e.op == "mod" and is_int(e.dtype) and isinstance(e.a, T.Binary)
                and e.a.op == "add" and isinstance(e.a.a, T.Binary) and e.a.a.op == "mod"):
            return None
        n = const(e.b)
        if n is None or const(e.a.b) != n or const(e.a.a.b) != n:
            return None
        x = self.expr(e.a.a.a, env)
        if not isinstance(x, Sc) or x.dtype != e.dtype:
            return None
        pos = wrapped_position(x.term, e.dtype, n)
        if pos is None:
            return None
        return IX.Ix(pos, 0, n - 1) if n > 1 else IX.constant(0)

    def binary(self, op: str, a: Val, b: Val, dtype: str) -> Val:
        if isinstance(a, IX.Ix) and isinstance(b, IX.Ix) and is_int(dtype):
            try:
                return IX.BINARY[op](a, b)
            except Unsupported:
                pass   # beyond 32 bits or a symbolic divisor: compute in the dtype itself
        dom = self.ctx.dom(dtype)
        x, y = self.scalar(a, dtype), self.scalar(b, dtype)
        if op == "max":
            return Sc(intrinsics.tir_max(dom, x, y), dtype)
        if op == "min":
            return Sc(intrinsics.tir_min(dom, x, y), dtype)
        if op in ("add", "sub", "mul", "div"):
            if (is_float(dtype) and isinstance(a, Sc) and isinstance(b, Sc) and a.cases
                    and b.cases and len(a.cases) * len(b.cases) <= CASES_BOUND):
                fn = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide}[op]
                nd = numpy_dtype(dtype)
                with np.errstate(all="ignore"):
                    pairs = tuple((z3.simplify(zf.And(ca, cb)),
                                   float(fn(np.asarray(va, nd), np.asarray(vb, nd)).astype(nd)))
                                  for ca, va in a.cases for cb, vb in b.cases)
                pairs = tuple(pc for pc in pairs if not z3.is_false(pc[0])) or pairs[-1:]
                return self.folded(pairs, dtype)
            return Sc(getattr(dom, op)(x, y), dtype)
        if is_float(dtype) and op == "mod":
            # LLVM's frem: C fmod, exact, the dividend's sign (as the Relax `mod` encoder)
            return Sc(intrinsics.call(dom, "fmod", [x, y]), dtype)
        if is_int(dtype) and op in ("floordiv", "floormod", "mod"):
            fn = {"floordiv": "floor_div", "floormod": "floor_mod", "mod": "trunc_mod"}[op]
            return Sc(getattr(dom, fn)(x, y), dtype)
        raise self.fail(f"{op} on {dtype}")

    def compare(self, op: str, a: Val, b: Val) -> Val:
        if isinstance(a, IX.Ix) and isinstance(b, IX.Ix):
            return Sc(IX.COMPARE[op](a, b), "bool")
        dtype = a.dtype if isinstance(a, Sc) else b.dtype   # type: ignore[union-attr]
        dom = self.ctx.dom(dtype)
        x, y = self.scalar(a, dtype), self.scalar(b, dtype)
        return Sc(getattr(dom, op)(x, y), "bool")

    def cast(self, v: Val, dtype: str) -> Val:
        check_supported(dtype, f"PrimFunc {self.where}")
        if isinstance(v, IX.Ix):
            if is_int(dtype):
                bits, signed = INT_FORMATS[dtype]
                lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
                if lo <= v.lo and v.hi <= hi:
                    return v
            if is_float(dtype) and v.hi - v.lo < CASES_BOUND:
                return self.integer_cases(v, range(v.lo, v.hi + 1), dtype)
            return Sc(self.cast_scalar(IX.to_int(v, 64), "int64", dtype), dtype)
        return Sc(self.cast_scalar(v.term, v.dtype, dtype), dtype)

    def exact_cast(self, e: T.Expr, v: IX.Ix, env: dict[str, Val], dtype: str) -> Sc | None:
        """Index `v` (the value of `e`) cast to float `dtype` as one of few constants, when
        evaluating `e` on every combination of its variables' ranges gives at most
        CASES_BOUND values though `v`'s interval is wider (`index_values`); None otherwise."""
        spans = {name: (x.lo, x.hi) for name, x in env.items() if isinstance(x, IX.Ix)}
        values = index_values.values_over(e, spans, CASES_BOUND)
        return None if values is None else self.integer_cases(v, values, dtype)

    def integer_cases(self, v: IX.Ix, values: Iterable[int], dtype: str) -> Sc:
        """Index `v`, which takes only `values`, cast to float `dtype`: each value cast
        exactly (numpy rounds as LLVM's sitofp does), chosen by comparing v's term with it."""
        return self.folded(tuple((IX.eq(v, IX.constant(k)),
                                  float(np.asarray(k).astype(numpy_dtype(dtype))))
                                 for k in values), dtype)

    def folded(self, pairs: tuple[tuple[z3.BoolRef, float], ...], dtype: str) -> Sc:
        """The float that is `value` where `cond` holds, for the (cond, value) pairs."""
        dom = self.ctx.dom(dtype)
        term = dom.const(pairs[-1][1])
        for c, x in reversed(pairs[:-1]):
            term = zf.If(c, dom.const(x), term)
        return Sc(term, dtype, pairs)

    def cast_scalar(self, x: z3.ExprRef, src: str, dst: str) -> z3.ExprRef:
        return self.ctx.model.cast(x, src, dst)

    def index_shift(self, e: T.Call, args: list[Val]) -> Val | None:
        """An index shifted by a constant k in [0, width): `a >> k` is floordiv(a, 2^k)
        (the arithmetic shift rounds toward -inf), `a << k` is a * 2^k where that fits the
        dtype; kept an index with its range (the binary search's `lo + (hi - lo >> 1)`).
        None for anything else (then `bit_op`)."""
        a, b = args
        if not (isinstance(a, IX.Ix) and isinstance(b, IX.Ix) and is_int(e.dtype)
                and b.const is not None):
            return None
        bits, signed = INT_FORMATS[e.dtype]
        k = b.const
        if not 0 <= k < min(bits, INDEX_BITS - 1) or (not signed and a.lo < 0):
            return None
        lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
        try:
            if e.name == "shift_right":
                return IX.BINARY["floordiv"](a, IX.constant(1 << k))
            r = IX.BINARY["mul"](a, IX.constant(1 << k))
        except Unsupported:
            return None
        return r if lo <= r.lo and r.hi <= hi else None

    def bit_op(self, e: T.Call, args: list[Val]) -> Val:
        """Shifts and bitwise operations on integers, exactly (two's complement of the
        dtype's width). A shift by a negative amount or by the width or more is UB (LLVM's
        shl/ashr/lshr give poison there). On bool (LLVM i1: logical_xor legalizes to `a ^ b`)
        and, or, xor and not are the logical ones."""
        if e.dtype == "bool" and e.name in _BOOL_OPS:
            return Sc(_BOOL_OPS[e.name](*(self.scalar(a, "bool") for a in args)), "bool")
        if not is_int(e.dtype):
            raise self.fail(f"{e.name} on {e.dtype}")
        bits, signed = INT_FORMATS[e.dtype]
        xs = [self.scalar(a, e.dtype) for a in args]
        if e.name == "bitwise_not":
            return Sc(~xs[0], e.dtype)
        x, y = xs
        if e.name in ("shift_left", "shift_right"):
            bad = zf.Not(z3.ULT(y, z3.BitVecVal(bits, bits)))   # negative counts are huge unsigned
            self.ub(bad, f"{e.name} by a negative amount or by {bits} or more")
            if e.name == "shift_left":
                return Sc(x << y, e.dtype)
            return Sc(x >> y if signed else z3.LShR(x, y), e.dtype)
        op = {"bitwise_and": lambda a, b: a & b, "bitwise_or": lambda a, b: a | b,
              "bitwise_xor": lambda a, b: a ^ b}[e.name]
        return Sc(op(x, y), e.dtype)

    def reinterpret(self, e: T.Call, args: list[Val]) -> Val:
        """`T.reinterpret(dtype, v)`: v's bits read as `dtype`. Exact in the IEEE model (an
        int's bits as a float: every pattern is a float, NaNs included); the abstract model
        has no bit layout, so there it is `IEEEOnly`."""
        (a,) = args
        src = a.dtype if isinstance(a, Sc) else "int64"
        if getattr(self.ctx.model, "name", "") != "ieee":
            raise IEEEOnly(f"TIR reinterpret {src} -> {e.dtype} in PrimFunc {self.where} "
                           f"(bit patterns exist only in the IEEE model)")
        if is_int(src) and is_float(e.dtype):
            x = self.scalar(a, src)
            sort = self.ctx.dom(e.dtype).sort
            if x.size() != sort.ebits() + sort.sbits():
                raise self.fail(f"reinterpret {src} -> {e.dtype} of another width")
            return Sc(z3.fpBVToFP(x, sort), e.dtype)
        raise self.fail(f"reinterpret {src} -> {e.dtype}")

    def call(self, e: T.Call, env: dict[str, Val]) -> Val:
        if e.name == "likely":
            return self.expr(e.args[0], env)
        args = [self.expr(a, env) for a in e.args]
        if e.name in intrinsics.PREDICATES:
            (a,) = args
            if not isinstance(a, Sc) or not is_float(a.dtype):
                raise self.fail(f"{e.name} of a non-float")
            return Sc(intrinsics.PREDICATES[e.name](self.ctx.dom(a.dtype), a.term), "bool")
        if e.name in ("shift_left", "shift_right"):
            shifted = self.index_shift(e, args)
            if shifted is not None:
                return shifted
        if e.name in BIT_OPS:
            return self.bit_op(e, args)
        if e.name == "reinterpret":
            return self.reinterpret(e, args)
        if not is_float(e.dtype):
            raise self.fail(f"intrinsic {e.name} on {e.dtype}")
        dom = self.ctx.dom(e.dtype)
        try:
            return Sc(intrinsics.call(dom, e.name, [self.scalar(a, e.dtype) for a in args]), e.dtype)
        except Unsupported as err:
            raise self.fail(str(err)) from None


_BOOL_OPS: dict[str, Callable[..., z3.BoolRef]] = {
    "bitwise_and": z3.And, "bitwise_or": z3.Or, "bitwise_xor": z3.Xor, "bitwise_not": z3.Not}
BIT_OPS = ("shift_left", "shift_right", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not")


class IEEEOnly(Unsupported):
    """A construct only the bit-exact IEEE model gives a meaning (`T.reinterpret` of a float's
    bits): the refinement ladder re-encodes in the IEEE model instead of giving up."""

    ieee_only = True


def _subst(e: T.Expr, m: dict[str, T.Expr]) -> T.Expr:
    """`e` with the variables of `m` replaced by their expressions."""
    if isinstance(e, T.Var):
        return m.get(e.id, e)
    if isinstance(e, (T.IntImm, T.FloatImm)):
        return e
    changes = {}
    for f in dataclasses.fields(e):
        x = getattr(e, f.name)
        if isinstance(x, tuple):
            changes[f.name] = tuple(_subst(y, m) if not isinstance(y, (str, int, float)) else y
                                    for y in x)
        elif not isinstance(x, (str, int, float)) and x is not None:
            changes[f.name] = _subst(x, m)
    return dataclasses.replace(e, **changes)


def _stores_of(body: T.Stmt) -> list[T.Store] | None:
    """The stores of a block body made of `T.let`s followed by stores, with the lets
    substituted (each store then reads the state before the block's stores, as the lets
    do); None for a body with loops, blocks or conditionals."""
    items = list(body.stmts) if isinstance(body, T.Seq) else [body]
    lets: dict[str, T.Expr] = {}
    stores: list[T.Store] = []
    for x in items:
        if isinstance(x, T.Let) and not stores:
            lets[x.var.id] = _subst(x.value, lets)
        elif isinstance(x, T.Store):
            stores.append(T.Store(x.buffer, tuple(_subst(i, lets) for i in x.indices),
                                  _subst(x.value, lets)))
        else:
            return None
    return stores or None


def _mentions(e: T.Expr, buffer: str) -> bool:
    """Does expression `e` load from `buffer`?"""
    if isinstance(e, T.Load):
        return e.buffer == buffer or any(_mentions(x, buffer) for x in e.indices)
    for f in ("a", "b", "cond", "true_value", "false_value", "value"):
        sub = getattr(e, f, None)
        if sub is not None and not isinstance(sub, (int, float, str)) and _mentions(sub, buffer):
            return True
    return any(_mentions(x, buffer) for x in getattr(e, "args", ()))


def encode_prim_func(ctx: EncodeContext, pf: T.PrimFunc, inputs: Sequence[Tensor],
                     n_outputs: int) -> list[Tensor]:
    """The output tensors of `pf` called by `call_tir` on `inputs`."""
    return PrimFuncEncoder(ctx, pf).run(inputs, n_outputs)


def encode_prim_func_in_place(ctx: EncodeContext, pf: T.PrimFunc,
                              args: Sequence[Tensor]) -> list[Tensor]:
    """The values of `pf`'s buffer parameters after a destination-passing call on `args`."""
    return PrimFuncEncoder(ctx, pf).run_in_place(args)
