"""Scalar programs: IR-builder TIR that runs a small program per iteration of a loop.

topi.searchsorted (LegalizeOps' bucketize) lowers to one-element local buffers
(`T.alloc_local`), a `while` loop over them, `if` statements, and a final store
`out[v] = local[0]`, per iteration of a loop. `PrimFuncEncoder.stmt` hands such a loop
(`needs_program`) to `run_program`, which runs the body ONCE, symbolically:

- the loop variables are one live index `tir_iter!d` over the iteration space (registered like
  a lambda's index, so a UB condition that mentions it is closed over: "for some iteration",
  the rule every bulk write follows);
- local buffers are Python lists of their elements' current values;
- `if` runs both branches on copies under its guards and merges them with `choose`;
- `while` is unrolled until a solver shows its condition false on every input (`WHILE_ROUNDS`
  at most, else `Unsupported`);
- a load whose index is one of a few constants (a binary search's `mid`) reads each constant
  position under its condition (`case_split`), so the terms compare the same elements a Relax
  encoder compares;
- a store to another buffer must be at the iteration's own position (flat index = iteration
  number + a constant: `out[v]`, or `out[v // 3, v % 3]`): after the program the buffer
  becomes `Lambda p. p in range ? value[t := p - c] : old` (`commit`).

Expressions, loads of non-local buffers, guards and UB go through the `PrimFuncEncoder`.
"""
from __future__ import annotations

import math
from contextlib import nullcontext
from typing import TYPE_CHECKING, Sequence

import z3

from tvtv import z3fast as zf
from tvtv.absfp.dtypes import INT_FORMATS, check_supported, is_int
from tvtv.encode.tensor import INDEX, INDEX_BITS, Tensor, idx, live_index, ravel, unravel
from tvtv.encode.tir import index as IX
from tvtv.encode.tir.int_cases import and_, int_cases
from tvtv.encode.tir.values import Loop, Sc, Val, fresh_undef_name
from tvtv.errors import Unsupported
from tvtv.ir import tir as T

if TYPE_CHECKING:
    from tvtv.encode.tir.interpreter import PrimFuncEncoder

# Rounds a while loop is unrolled for at most, the solver's time per "can the condition still
# hold" query (ms), the largest local buffer, and the largest loop unrolled inside a program.
WHILE_ROUNDS = 64
WHILE_SOLVER_MS = 2000
LOCAL_ELEMENTS = 16
PROGRAM_UNROLL = 64
# A load whose index is one of at most this many constants reads each (`case_split`).
CASE_SPLIT = 128


def needs_program(s: T.Stmt) -> bool:
    """Does a loop body allocate local buffers or run a while loop (a scalar program)?"""
    if isinstance(s, (T.Alloc, T.While)):
        return True
    if isinstance(s, T.Seq):
        return any(needs_program(x) for x in s.stmts)
    if isinstance(s, T.For):
        return needs_program(s.body)
    if isinstance(s, T.IfStmt):
        return needs_program(s.then_case) or (
            s.else_case is not None and needs_program(s.else_case))
    return False


def run_program(enc: PrimFuncEncoder, body: T.Stmt, loops: list[Loop]) -> None:
    """Run `body` once per iteration of `loops` as a scalar program (see the module's
    docstring), then commit its stores to `enc`'s buffers."""
    if any(lp.dyn is not None for lp in loops):
        raise enc.fail("while loop or local buffer under a loop of varying extent")
    if enc.prog is not None:
        raise enc.fail("nested scalar program")
    n = math.prod(lp.extent for lp in loops)
    if n <= 0:
        return
    with (live_index(n, "tir_iter") if n > 1 else nullcontext(None)) as live:
        env: dict[str, Val] = {}
        if live is not None:
            digits = unravel(live, [lp.extent for lp in loops])
            for lp, d in zip(loops, digits):
                env[lp.var] = IX.constant(lp.lo) if lp.extent == 1 else \
                    IX.add(IX.Ix(d, 0, lp.extent - 1), IX.constant(lp.lo))
        else:
            for lp in loops:
                env[lp.var] = IX.constant(lp.lo)
        enc.bind_aliases(env)
        prog = ScalarProgram(enc, live, n)
        enc.prog = prog
        try:
            prog.stmt(body, env)
            both = set(prog.stores) & prog.loaded
            if both:
                name = enc.buffers[sorted(both)[0]].name
                raise enc.fail(f"loop that reads and writes {name} in its scalar program")
        finally:
            enc.prog = None
    for buffer, (ix, value, where) in prog.stores.items():
        prog.commit(buffer, ix, value, where)


class ScalarProgram:
    """The state of a scalar program being run for `enc` (`run_program`)."""

    def __init__(self, enc: PrimFuncEncoder, live: z3.BitVecRef | None, n: int) -> None:
        self.enc = enc
        self.live = live            # the iteration number (None: a single iteration)
        self.n = n                  # the number of iterations
        self.base = len(enc.ctx.path)   # length of the path when the program began
        self.locals: dict[str, list[Val]] = {}
        # stores to other buffers: buffer -> (indices, value, condition)
        self.stores: dict[str, tuple[list[IX.Ix], z3.ExprRef, z3.BoolRef]] = {}
        self.loaded: set[str] = set()
        self.loop_depth = 0         # inside a while or for loop of the program
        self.witness: z3.ModelRef | None = None   # a model where a while condition held last
        self.cases: dict = {}       # `int_cases` memo

    def stmt(self, s: T.Stmt, env: dict[str, Val]) -> None:
        """Run statement `s` of the scalar program on `self.locals` (`env` holds the
        loop variables and the `T.let`s in scope; a `T.let` adds to it)."""
        if isinstance(s, T.Seq):
            for x in s.stmts:
                self.stmt(x, env)
        elif isinstance(s, T.Alloc):
            buf = s.buffer
            size = math.prod(buf.shape)
            if size > LOCAL_ELEMENTS:
                raise self.enc.fail(f"local buffer {buf.name} of {size} elements (at most "
                                    f"{LOCAL_ELEMENTS})")
            check_supported(buf.dtype, f"buffer {buf.name} of {self.enc.pf.name}")
            self.enc.buffers[buf.id] = buf
            sort = self.enc.ctx.dom(buf.dtype).sort
            elems: list[Val] = []
            for k in range(size):
                name = fresh_undef_name(self.enc.ctx.side, f"{buf.name}_{k}")
                # arbitrary, and per iteration: a fresh array read at the iteration
                term = z3.Const(name, sort) if self.live is None else \
                    zf.Select(z3.Array(name, INDEX, sort), self.live)
                elems.append(Sc(term, buf.dtype))
            self.locals[buf.id] = elems
        elif isinstance(s, T.Let):
            env[s.var.id] = self.enc.expr(s.value, env)
        elif isinstance(s, T.Store):
            if s.buffer in self.locals:
                self.local_store(s, env)
            else:
                self.program_store(s, env)
        elif isinstance(s, T.IfStmt):
            c = z3.simplify(self.enc.truth(self.enc.expr(s.cond, env)))
            if z3.is_true(c):
                self.stmt(s.then_case, dict(env))
                return
            if z3.is_false(c):
                if s.else_case is not None:
                    self.stmt(s.else_case, dict(env))
                return
            saved = self.locals
            self.locals = copy_locals(saved)
            with self.enc.guard(c):
                self.stmt(s.then_case, dict(env))
            then_locals = self.locals
            self.locals = copy_locals(saved)
            if s.else_case is not None:
                with self.enc.guard(zf.Not(c)):
                    self.stmt(s.else_case, dict(env))
            self.locals = self.merge_locals(c, then_locals, self.locals, saved)
        elif isinstance(s, T.While):
            self.run_while(s, env)
        elif isinstance(s, T.For):
            lo = self.enc.expr(s.min, env)
            ext = self.enc.expr(s.extent, env)
            if not (isinstance(lo, IX.Ix) and isinstance(ext, IX.Ix)
                    and lo.const is not None and ext.const is not None):
                raise self.enc.fail("loop of symbolic range in a scalar program")
            if ext.const > PROGRAM_UNROLL:
                raise self.enc.fail(f"loop of {ext.const} iterations in a scalar program (at most "
                                    f"{PROGRAM_UNROLL} are unrolled)")
            self.loop_depth += 1
            try:
                for k in range(ext.const):
                    self.stmt(s.body, {**env, s.var.id: IX.constant(lo.const + k)})
            finally:
                self.loop_depth -= 1
        elif isinstance(s, T.Nop):
            pass
        else:
            raise self.enc.fail(f"statement {type(s).__name__} in a scalar program")

    def run_while(self, s: T.While, env: dict[str, Val]) -> None:
        """Unroll `while cond: body`: a round runs the body (on a copy of the locals, under
        the condition) and keeps its result where the condition held. Before each round a
        solver (the path and the iteration range as facts) asks whether the condition can
        still hold; unsat means the loop has ended on every input. Not shown to end within
        `WHILE_ROUNDS` rounds: `Unsupported`."""
        self.loop_depth += 1
        try:
            for rnd in range(WHILE_ROUNDS + 1):
                c = z3.simplify(self.enc.truth(self.enc.expr(s.cond, env)))
                if z3.is_false(c) or not self.may_hold(c):
                    return
                if rnd == WHILE_ROUNDS:
                    raise Unsupported(f"while loop in PrimFunc {self.enc.where} not shown to end "
                                      f"within {WHILE_ROUNDS} iterations")
                saved = self.locals
                self.locals = copy_locals(saved)
                with self.enc.guard(c):
                    self.stmt(s.body, dict(env))
                self.locals = self.merge_locals(c, self.locals, saved, saved)
        finally:
            self.loop_depth -= 1

    def may_hold(self, c: z3.BoolRef) -> bool:
        """Can `c` hold on the current path for some iteration (and inputs)? Unknown
        (a timeout) counts as yes."""
        facts = list(self.enc.ctx.path)
        if self.live is not None:
            facts.append(z3.ULT(self.live, idx(self.n)))
        query = zf.And(*facts, c)
        if self.witness is not None and z3.is_true(self.witness.eval(query, model_completion=True)):
            return True   # the inputs that kept the loop going last round still do
        solver = z3.Solver()
        solver.set("timeout", WHILE_SOLVER_MS)
        solver.add(query)
        result = solver.check()
        if result == z3.sat:
            self.witness = solver.model()
        return result != z3.unsat

    def merge_locals(self, c: z3.BoolRef, a: dict[str, list[Val]], b: dict[str, list[Val]],
                     scope: dict[str, list[Val]]) -> dict[str, list[Val]]:
        """The locals of `scope` (those allocated outside the branches): `a`'s values where
        `c` holds, `b`'s elsewhere."""
        out: dict[str, list[Val]] = {}
        for buf in scope:
            dtype = self.enc.buffers[buf].dtype
            out[buf] = [x if same_val(x, y) else self.enc.choose(c, x, y, dtype)
                        for x, y in zip(a[buf], b[buf])]
        return out

    def case_split(self, ix: list[IX.Ix], shape: Sequence[int]) -> list[tuple[z3.BoolRef, list[int]]] | None:
        """The in-bounds values a multi-index takes, each with the condition under which it
        takes it (disjoint conditions), when every index is an if-then-else tree of at most
        `CASE_SPLIT` constants (`_int_cases`); None otherwise or for constant indices."""
        if all(v.const is not None for v in ix):
            return None
        combos: list[tuple[z3.BoolRef, list[int]]] = [(z3.BoolVal(True), [])]
        for v, size in zip(ix, shape):
            if v.const is not None:
                cases: list[tuple[z3.BoolRef, int]] | None = [(z3.BoolVal(True), v.const)]
            else:
                cases = int_cases(v.term, CASE_SPLIT, self.cases)
            if cases is None:
                return None
            cases = [(c, k) for c, k in cases if 0 <= k < size]
            combos = [(and_(c0, c), ks + [k]) for c0, ks in combos for c, k in cases]
            if len(combos) > CASE_SPLIT:
                return None
        return combos or None

    def local_flat(self, e: T.Load | T.Store, env: dict[str, Val], what: str) -> tuple[IX.Ix, list[Val]]:
        """The flat position of an access to a local buffer (out of bounds is UB, recorded)
        and the buffer's current elements."""
        buf = self.enc.buffers[e.buffer]
        if len(e.indices) != len(buf.shape):
            raise self.enc.fail(f"{what} {buf.name} with {len(e.indices)} indices")
        ix, _ = self.enc.indices(e.indices, buf.shape, env, f"{what} {buf.name}")
        flat = IX.constant(0)
        stride = 1
        for v, size in reversed(list(zip(ix, buf.shape))):
            flat = IX.add(flat, IX.mul(v, IX.constant(stride)))
            stride *= size
        return flat, self.locals[e.buffer]

    def local_load(self, e: T.Load, env: dict[str, Val]) -> Val:
        flat, elems = self.local_flat(e, env, "load from")
        dtype = self.enc.buffers[e.buffer].dtype
        lo, hi = max(flat.lo, 0), min(flat.hi, len(elems) - 1)
        if hi < lo:
            return elems[0]   # out of bounds on every path: UB (recorded)
        result = elems[hi]
        for k in range(hi - 1, lo - 1, -1):
            result = self.enc.choose(IX.eq(flat, IX.constant(k)), elems[k], result, dtype)
        return result

    def local_store(self, s: T.Store, env: dict[str, Val]) -> None:
        buf = self.enc.buffers[s.buffer]
        value = self.enc.expr(s.value, env)
        if isinstance(value, IX.Ix) and is_int(buf.dtype):
            bits, signed = INT_FORMATS[buf.dtype]
            lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
            if not lo <= value.lo <= value.hi <= hi:
                value = Sc(self.enc.scalar(value, buf.dtype), buf.dtype)
        elif not (isinstance(value, Sc) and value.dtype == buf.dtype):
            value = Sc(self.enc.scalar(value, buf.dtype), buf.dtype)
        flat, elems = self.local_flat(s, env, "store to")
        for k in range(max(flat.lo, 0), min(flat.hi, len(elems) - 1) + 1):
            elems[k] = value if flat.const is not None else \
                self.enc.choose(IX.eq(flat, IX.constant(k)), value, elems[k], buf.dtype)

    def program_store(self, s: T.Store, env: dict[str, Val]) -> None:
        """A store to a buffer other than the locals: recorded with its path condition (the
        guards since the program began) and committed after the program (`commit`)."""
        if s.buffer not in self.enc.state:
            raise self.enc.fail(f"store to unknown buffer {s.buffer}")
        buf = self.enc.buffers[s.buffer]
        if self.loop_depth:
            raise self.enc.fail(f"store to {buf.name} inside a loop of a scalar program")
        if s.buffer in self.stores:
            raise self.enc.fail(f"two stores to {buf.name} in a scalar program")
        if len(s.indices) != len(buf.shape):
            raise self.enc.fail(f"store to {buf.name} with {len(s.indices)} indices")
        ix, in_bounds = self.enc.indices(s.indices, buf.shape, env, f"store to {buf.name}")
        where = z3.simplify(zf.And(*in_bounds)) if in_bounds else z3.BoolVal(True)
        with self.enc.guard(where):
            value = self.enc.scalar(self.enc.expr(s.value, env), buf.dtype)
        path = self.enc.ctx.path[self.base:]
        where = z3.simplify(zf.And(*path, where)) if path else where
        self.stores[s.buffer] = (ix, value, where)

    def commit(self, buffer: str, ix: list[IX.Ix], value: z3.ExprRef, where: z3.BoolRef) -> None:
        """Write the scalar program's store to `buffer` for every iteration at once."""
        live, n = self.live, self.n
        buf = self.enc.buffers[buffer]
        shape = buf.shape
        flat = z3.simplify(ravel([v.term for v in ix], shape)) if shape else idx(0)
        at0 = flat if live is None else z3.simplify(z3.substitute(flat, (live, idx(0))))
        if not z3.is_bv_value(at0) or at0.as_long() >= 1 << (INDEX_BITS - 1):
            raise self.enc.fail(f"store to {buf.name} at a position that is not the loop's "
                                f"iteration plus a constant")
        c = at0.as_long()
        if live is not None and not z3.eq(flat, z3.simplify(live + idx(c))):
            solver = z3.Solver()
            solver.set("timeout", WHILE_SOLVER_MS)
            solver.add(z3.ULT(live, idx(n)), flat != live + idx(c))
            if solver.check() != z3.unsat:
                raise self.enc.fail(f"store to {buf.name} at a position that is not the loop's "
                                    f"iteration plus a constant")
        old_reader = self.enc.readers[buffer]

        def element(p_ix: list[IX.Ix]) -> z3.ExprRef:
            p = ravel([v.term for v in p_ix], shape) if shape else idx(0)
            if live is None:
                hit = z3.simplify(zf.And(p == idx(c), where))
                v, h = value, hit
            else:
                k = p - idx(c) if c else p
                rng = [] if c == 0 and n >= math.prod(shape) else \
                    [z3.ULE(idx(c), p), z3.ULT(p, idx(c + n))]
                h = z3.simplify(zf.And(*rng, z3.substitute(where, (live, k))))
                v = z3.substitute(value, (live, k))
            if z3.is_true(h):
                return v
            if z3.is_false(h):
                return old_reader(p_ix)
            return zf.If(h, v, old_reader(p_ix))

        def flat_elem(i: z3.BitVecRef) -> z3.ExprRef:
            parts = unravel(i, shape) if shape else []
            return element([IX.Ix(t, 0, size - 1) if size > 1 else IX.constant(0)
                            for t, size in zip(parts, shape)])

        self.enc.state[buffer] = Tensor.from_flat(shape, buf.dtype, flat_elem)
        self.enc.readers[buffer] = element


def copy_locals(locals_: dict[str, list[Val]]) -> dict[str, list[Val]]:
    return {k: list(v) for k, v in locals_.items()}


def same_val(a: Val, b: Val) -> bool:
    if a is b:
        return True
    if isinstance(a, IX.Ix) and isinstance(b, IX.Ix):
        return a.lo == b.lo and a.hi == b.hi and z3.eq(a.term, b.term)
    return isinstance(a, Sc) and isinstance(b, Sc) and a.dtype == b.dtype and z3.eq(a.term, b.term)
