"""The module generator: `main` as a sequence of lets, then a return of every value nobody used.

`main`'s parameters are created on demand (when an expression needs a tensor no variable in
scope has, and it is small enough to be an input). Each let draws a type (often the type of a
value not used yet, so the new value can consume it), and binds a connective of that type;
runs of lets are put in dataflow blocks. Lets continue until the module has its chosen number
of op calls (op calls in private and local functions and in If branches count too). `main`
returns the values left unused, so the module has no dead top-level value.
"""
from __future__ import annotations

import dataclasses
import random
from typing import Any

import tvm
from tvm import relax

from generators.typed.exprgen import ExprGenerator, FunctionCtx, Frame, GenerationError, Options
from generators.typed.types import ALL_DTYPES, MAX_ELEMS, FuncTy, TensorTy, Ty, TypeGenerator

MAX_LETS_PER_OP = 20


class ModuleGenerator:
    """Generates one IRModule (`generate`) from a seed; see the module docstring."""

    def __init__(self, seed: int, min_ops: int, max_ops: int, opts: Options,
                 dtypes: tuple[str, ...] = ALL_DTYPES) -> None:
        if min_ops < 1 or max_ops < min_ops:
            raise ValueError(f"need 1 <= min_ops <= max_ops, got {min_ops}, {max_ops}")
        self.rng = random.Random(seed)
        self.target = self.rng.randint(min_ops, max_ops)
        self.tg = TypeGenerator(self.rng, dtypes)
        self.gen = ExprGenerator(self.rng, self.tg, self.target, opts)
        self.seed = seed

    def let_type(self) -> Ty:
        """Often the type of an unused tensor value (so the let can consume it), else a fresh
        tensor type, sometimes a scalar bool (a future If condition)."""
        g, rng = self.gen, self.rng
        unused = [e.ty for e in g.scope.visible()
                  if isinstance(e.ty, TensorTy) and e.uses == 0]
        r = rng.random()
        if unused and r < 0.5:
            return rng.choice(unused)
        if r < 0.55:
            return TensorTy((), "bool")
        return self.tg.tensor(max_elems=MAX_ELEMS // 4)

    def generate(self) -> tvm.ir.IRModule:
        g = self.gen
        g.funcs.append(FunctionCtx("main"))
        g.frames.append(Frame())
        fuel = g.opts.fuel
        lets = 0
        while g.ops_left > 0:
            lets += 1
            if lets > MAX_LETS_PER_OP * self.target:
                raise GenerationError(f"seed {self.seed}: no progress after {lets} lets")
            df = g.in_dataflow
            want_df = self.rng.random() < g.opts.p_dataflow
            if df and not want_df:
                g.close_dataflow()
            elif want_df and not df:
                g.open_dataflow()
            g.gen_let(self.let_type(), fuel)
        if g.in_dataflow:
            g.close_dataflow()
        frame = g.frames.pop()
        frame.close_block()
        fn = g.funcs.pop()
        outs = [e for e in g.scope.entries if e.uses == 0 and not isinstance(e.ty, FuncTy)]
        if not outs:
            raise GenerationError(f"seed {self.seed}: main has no unused value to return")
        body = outs[0].var if len(outs) == 1 else relax.Tuple([e.var for e in outs])
        body = g.bb.normalize(body)
        main = relax.Function(fn.params, relax.SeqExpr(frame.blocks, body), body.ty, is_pure=True)
        main = main.with_attr("global_symbol", "main")
        g.bb.add_func(main, "main")
        mod = g.bb.get()
        return relax.transform.Normalize()(mod)


def generate_module(seed: int, min_ops: int = 10, max_ops: int = 30, **options: Any
                    ) -> tvm.ir.IRModule:
    """See `generators.typed.generate`."""
    dtypes = tuple(options.pop("dtypes", ALL_DTYPES))
    ops = options.pop("ops", None)
    known = {f.name for f in dataclasses.fields(Options)}
    unknown = sorted(set(options) - known)
    if unknown:
        raise ValueError(f"unknown option(s) {', '.join(unknown)} for the typed generator "
                         f"(known: dtypes, {', '.join(sorted(known))})")
    opts = Options(**options)
    if ops is not None:
        opts.ops = tuple(o if o.startswith("relax.") else "relax." + o for o in ops)
    return ModuleGenerator(seed, min_ops, max_ops, opts, dtypes).generate()
