"""The expression generator: the Relax type checker run in reverse, with fuel.

`ExprGenerator.gen_expr(T, fuel)` returns a leaf expression (variable or constant) of type `T`,
emitting the bindings that compute it into the function body under construction. It chooses
between base cases (a variable in scope of type `T`, a constant, a new parameter of the
function) and connectives, each generating its sub-expressions top-down from the types the
typing rule demands:

* op call: an op whose recognizer accepts `T`; its solver gives the argument types;
* tuple literal (for a tuple type), and TupleGetItem from a tuple type containing `T`;
* If: a scalar bool condition and two branches (each a SeqExpr) of type `T`;
* a nested (local) function returning `T`, bound to a variable and called; later calls may reuse
  it; a private global function returning `T` (new, or reused when one exists);
* match_cast to `T`, from a value of type `T`, or from a less specific type (R.Tensor(ndim=k) or
  R.Tensor(dtype)): a parameter of a private or local function declared with it;
* dataflow blocks: a run of bindings wrapped in `with R.dataflow()`, inside which If and
  function definitions are not allowed; values used after the block are bound to output vars.

Fuel bounds the nesting depth (at 0 only base cases remain) and `ops_left` the number of op
calls in the module. All choices come from the generator's one `random.Random`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np
import tvm
from tvm import relax

from generators.typed.opinfo import EXPR, INDICES, POSITIVE, ArgSpec, OpInfo
from generators.typed.registry import OPS
from generators.typed.types import (BOOL, BOOL_SCALAR, FLOATS, INPUT_MAX_ELEMS, MAX_ELEMS,
                                    FuncTy, TensorTy, TupleTy, Ty, TypeGenerator, from_relax,
                                    to_relax, total_size)

# Scalar constants exactly representable in every float dtype generated.
NICE_FLOATS = (-2.0, -1.5, -1.0, -0.5, -0.25, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0)


class GenerationError(RuntimeError):
    """The generator broke its own invariant (e.g. a solver's solution does not type-check)."""


@dataclass
class Options:
    """Generation policy: weights of the connectives and other knobs."""

    fuel: int = 5
    w_op: float = 6.0
    w_tuple: float = 2.0
    w_getitem: float = 0.6
    w_if: float = 0.5
    w_local_func: float = 0.35
    w_call_local: float = 1.0
    w_private_func: float = 0.3
    w_call_private: float = 1.0
    w_match_cast: float = 0.5
    p_dataflow: float = 0.5
    """Probability that a run of bindings is put in a dataflow block."""
    p_reuse_unused: float = 0.7
    """Probability of taking an unused variable of the right type when one exists."""
    p_const: float = 0.15
    """Weight of a constant among the base cases (parameters and variables weigh 1)."""
    p_wide_param: float = 0.4
    """Probability that a new parameter of a non-main function is declared less specific
    (R.Tensor(ndim=k) or R.Tensor(dtype)); it is match_cast to its static type where first
    needed. This is the generator's only source of less specific types: a binding annotated
    with a wider type (`v: R.Tensor(ndim=2) = R.exp(x)`) does not survive TVMScript's
    print/parse round trip (the parser puts the wider type on the call too), and a function
    declared to return a wider type is narrowed by Normalize while its GlobalVar keeps the
    wide type."""
    capture: bool = False
    """Let local functions capture variables of the enclosing scope. Off by default: in TVM
    0.27 a module whose local function captures a variable passes the well-formed check and
    LambdaLift but `relax.build` then fails ("Argument 0 type mismatch: expected R.Tensor(...),
    given R.Any" in DeriveCallRetType)."""
    ops: Optional[tuple[str, ...]] = None
    """Restrict op calls to these op names (default: the whole registry)."""
    planner_safe_if: bool = True
    """Allocate no intermediate tensor inside an If branch: a branch's only op call is its
    result. Works around a TVM 0.27 bug: StaticPlanBlockMemory (run by `relax.build`) defines a
    storage in the branch where an intermediate dies and reuses it after the If, where it is
    undefined when the other branch ran; the VM then segfaults in StorageObj::AllocTensor."""


@dataclass
class Entry:
    """A variable in scope: its Relax var, static type (None if less specific), use count."""

    var: Any
    ty: Any
    uses: int = 0


@dataclass
class Scope:
    parent: Optional["Scope"]
    entries: list[Entry] = field(default_factory=list)

    def visible(self) -> list[Entry]:
        """Entries of this scope and its ancestors, innermost last."""
        out: list[Entry] = []
        s: Optional[Scope] = self
        chain = []
        while s is not None:
            chain.append(s)
            s = s.parent
        for sc in reversed(chain):
            out.extend(sc.entries)
        return out


@dataclass
class Frame:
    """A SeqExpr under construction: finished blocks plus the open one."""

    blocks: list[Any] = field(default_factory=list)
    bindings: list[Any] = field(default_factory=list)
    dataflow: bool = False
    outer_scope: Optional[Scope] = None  # the scope outputs of the open dataflow block go to

    def close_block(self) -> None:
        if self.bindings:
            cls = relax.DataflowBlock if self.dataflow else relax.BindingBlock
            self.blocks.append(cls(self.bindings))
        self.bindings = []
        self.dataflow = False


@dataclass
class FunctionCtx:
    """A function under construction: its parameters (created on demand) and their types."""

    name: str
    params: list[Any] = field(default_factory=list)
    param_tys: list[Ty] = field(default_factory=list)
    allow_wide_params: bool = False


class ExprGenerator:
    """Generates Relax expressions of required types into functions of one module."""

    def __init__(self, rng: Any, tg: TypeGenerator, ops_left: int, opts: Options) -> None:
        self.rng = rng
        self.tg = tg
        self.opts = opts
        self.ops_left = ops_left
        self.bb = relax.BlockBuilder()
        self.op_names = list(OPS) if opts.ops is None else [n for n in OPS if n in opts.ops]
        self.counters: dict[str, int] = {}
        self.privates: list[tuple[Any, FuncTy]] = []   # (GlobalVar, type), in creation order
        self.scope = Scope(None)
        self.frames: list[Frame] = []
        self.funcs: list[FunctionCtx] = []
        self.in_branch = 0        # If branches we are inside (of the current function)
        self.branch_top = False   # the next connective is the result of a branch

    # -- names, scopes, frames -------------------------------------------------------------
    def fresh(self, prefix: str) -> str:
        k = self.counters.get(prefix, 0)
        self.counters[prefix] = k + 1
        return f"{prefix}{k}"

    @property
    def frame(self) -> Frame:
        return self.frames[-1]

    @property
    def in_dataflow(self) -> bool:
        return self.frame.dataflow

    def push_scope(self, isolated: bool = False) -> Scope:
        """Enter a child scope (a new root if `isolated`); returns the scope to restore."""
        saved = self.scope
        self.scope = Scope(None if isolated else saved)
        return saved

    def pop_scope(self, saved: Scope) -> None:
        self.scope = saved

    def open_dataflow(self) -> None:
        self.frame.close_block()
        self.frame.dataflow = True
        self.frame.outer_scope = self.scope
        self.scope = Scope(self.scope)

    def close_dataflow(self) -> None:
        assert self.frame.dataflow and self.frame.outer_scope is not None
        self.scope = self.frame.outer_scope
        self.frame.outer_scope = None
        self.frame.close_block()

    # -- emitting ----------------------------------------------------------------------------
    def emit(self, value: Any, ty: Any, output: bool = False, annotate: Any = None) -> Any:
        """Bind `value` (whose type must be `ty`) to a new variable and put it in scope.

        In a dataflow block the variable is a DataflowVar unless `output`, and then it stays in
        scope after the block. `annotate` declares the variable with that less specific type."""
        value = self.bb.normalize(value)
        inferred = from_relax(value.ty) if not isinstance(ty, FuncTy) else ty
        if inferred != ty:
            raise GenerationError(f"expected type {ty}, TVM infers {value.ty} for {value}")
        df_local = self.in_dataflow and not output
        name = self.fresh("lv" if df_local else ("f" if isinstance(ty, FuncTy) else "v"))
        rty = annotate if annotate is not None else value.ty
        var = relax.DataflowVar(name, rty) if df_local else relax.Var(name, rty)
        self.frame.bindings.append(relax.VarBinding(var, value))
        self._enter(var, None if annotate is not None else ty, output)
        return var

    def _enter(self, var: Any, ty: Any, output: bool) -> Entry:
        e = Entry(var, ty)
        if output and self.in_dataflow and self.frame.outer_scope is not None:
            self.frame.outer_scope.entries.append(e)
        else:
            self.scope.entries.append(e)
        return e

    def emit_match_cast(self, src: Any, ty: TensorTy, output: bool) -> Any:
        df_local = self.in_dataflow and not output
        var_cls = relax.DataflowVar if df_local else relax.Var
        var = var_cls(self.fresh("lv" if df_local else "v"), to_relax(ty))
        self.frame.bindings.append(relax.MatchCast(var, src, to_relax(ty)))
        self._enter(var, ty, output)
        return var

    # -- base cases ---------------------------------------------------------------------------
    def candidates(self, ty: Ty) -> list[Entry]:
        return [e for e in self.scope.visible() if e.ty == ty]

    def const(self, ty: Ty, kind: str = EXPR, bound: int = 0) -> Any:
        """A constant of `ty`: small random values; `POSITIVE`: 1..4; `INDICES`: 0..bound-1."""
        if isinstance(ty, TupleTy):
            return relax.Tuple([self.const(f) for f in ty.fields])
        assert isinstance(ty, TensorTy)
        n = ty.size
        if kind == POSITIVE:
            vals: list[Any] = [self.rng.randint(1, 4) for _ in range(n)]
        elif kind == INDICES:
            vals = [self.rng.randrange(bound) for _ in range(n)]
        elif ty.dtype == BOOL:
            vals = [self.rng.random() < 0.5 for _ in range(n)]
        elif ty.dtype in FLOATS:
            vals = [self.rng.choice(NICE_FLOATS) for _ in range(n)]
        else:
            vals = [self.rng.randint(-4, 4) for _ in range(n)]
        if ty.ndim == 0:
            return relax.const(vals[0], ty.dtype)
        if ty.dtype == "bfloat16":
            import ml_dtypes
            arr = np.array(vals, dtype=np.float32).astype(ml_dtypes.bfloat16).reshape(ty.shape)
        else:
            arr = np.array(vals, dtype=ty.dtype).reshape(ty.shape)
        return relax.const(arr, ty.dtype)

    def new_param(self, ty: TensorTy) -> Any:
        """A new parameter of the current function; a non-main function may declare it less
        specific and match_cast it back to `ty` where it is first needed."""
        fn = self.funcs[-1]
        name = self.fresh("p")
        if fn.allow_wide_params and self.rng.random() < self.opts.p_wide_param:
            p = relax.Var(name, self.tg.widen(ty))
            fn.params.append(p)
            fn.param_tys.append(ty)
            return self.emit_match_cast(p, ty, output=False)
        p = relax.Var(name, to_relax(ty))
        fn.params.append(p)
        fn.param_tys.append(ty)
        e = Entry(p, ty, uses=1)
        root = self.scope
        while root.parent is not None:   # parameters live in the function's root scope
            root = root.parent
        root.entries.append(e)
        return p

    def base(self, ty: Ty, no_const: bool = False) -> Any:
        """A variable, parameter or constant of type `ty` (no new op calls)."""
        cands = self.candidates(ty)
        unused = [e for e in cands if e.uses == 0]
        if unused and self.rng.random() < self.opts.p_reuse_unused:
            e = self.rng.choice(unused)
            e.uses += 1
            return e.var
        options: list[tuple[str, float]] = []
        if cands:
            options.append(("var", 1.0))
        if isinstance(ty, TensorTy) and ty.size <= INPUT_MAX_ELEMS:
            options.append(("param", 1.0))
        if isinstance(ty, TupleTy):
            options.append(("tuple", 1.0))
        if not no_const or not options:
            options.append(("const", self.opts.p_const if options else 1.0))
        kind = self.rng.choices([k for k, _ in options], weights=[w for _, w in options])[0]
        if kind == "var":
            e = self.rng.choice(cands)
            e.uses += 1
            return e.var
        if kind == "param":
            assert isinstance(ty, TensorTy)
            return self.new_param(ty)
        if kind == "tuple":
            assert isinstance(ty, TupleTy)
            return self.use(self.emit(relax.Tuple([self.base(f) for f in ty.fields]), ty))
        if isinstance(ty, TupleTy):
            # bound, not inline: TVMScript folds `(c0, c1)[i]` of an inline tuple to `ci`, so
            # the module would not survive a print/parse round trip
            return self.use(self.emit(self.const(ty), ty))
        return self.const(ty)

    def use(self, var: Any) -> Any:
        for e in reversed(self.scope.visible()):
            if e.var.same_as(var):
                e.uses += 1
                break
        return var

    # -- the generator --------------------------------------------------------------------------
    def gen_expr(self, ty: Ty, fuel: int, no_const: bool = False) -> Any:
        """A leaf expression of type `ty` (bindings it needs are emitted)."""
        if fuel <= 0 or total_size(ty) > MAX_ELEMS:
            return self.base(ty, no_const)
        unused = [e for e in self.candidates(ty) if e.uses == 0]
        p_base = 0.25 if self.ops_left > 0 else 0.9
        if unused and self.rng.random() < self.opts.p_reuse_unused:
            p_base = 0.8
        if self.rng.random() < p_base:
            return self.base(ty, no_const)
        return self.use(self.gen_connective(ty, fuel))

    def connectives(self, ty: Ty, fuel: int) -> list[tuple[str, float]]:
        o, out = self.opts, []
        ops_ok = not (o.planner_safe_if and self.in_branch and not self.branch_top)
        if self.ops_left > 0 and ops_ok and self.recognizing(ty):
            out.append(("op", o.w_op))
        if isinstance(ty, TupleTy):
            out.append(("tuple", o.w_tuple))
        if fuel >= 2:
            out.append(("getitem", o.w_getitem))
            out.append(("private_func", o.w_private_func))
            if not self.in_dataflow:
                out.append(("if", o.w_if))
                out.append(("local_func", o.w_local_func))
        if isinstance(ty, TensorTy):
            out.append(("match_cast", o.w_match_cast))
        if self.local_funcs(ty):
            out.append(("call_local", o.w_call_local))
        if self.private_funcs(ty):
            out.append(("call_private", o.w_call_private))
        return out

    def recognizing(self, ty: Ty) -> list[OpInfo]:
        return [OPS[n] for n in self.op_names if OPS[n].recognize(ty)]

    def gen_connective(self, ty: Ty, fuel: int, output: bool = False) -> Any:
        """A new variable of type `ty` bound to a connective (never a base case)."""
        options = self.connectives(ty, fuel)
        self.branch_top = False
        if not options:  # e.g. a tuple type with no budget left: a base case, maybe a constant
            return self.base(ty)
        kind = self.rng.choices([k for k, _ in options], weights=[w for _, w in options])[0]
        return getattr(self, "gen_" + kind)(ty, fuel, output)

    # connectives: each returns the new variable
    def gen_op(self, ty: Ty, fuel: int, output: bool, annotate: Any = None) -> Any:
        infos = self.recognizing(ty)
        info = self.rng.choices(infos, weights=[i.weight for i in infos])[0]
        self.ops_left -= 1
        sol = info.solve(ty, self.tg)
        args = [self.gen_arg(a, fuel - 1) for a in sol.args]
        return self.emit(info.build(args, sol.attrs), ty, output, annotate)

    def gen_arg(self, spec: ArgSpec, fuel: int) -> Any:
        if spec.kind == EXPR:
            return self.gen_expr(spec.ty, fuel)
        return self.const(spec.ty, spec.kind, spec.bound)

    def gen_tuple(self, ty: Ty, fuel: int, output: bool) -> Any:
        assert isinstance(ty, TupleTy)
        return self.emit(relax.Tuple([self.gen_expr(f, fuel - 1) for f in ty.fields]), ty, output)

    def gen_getitem(self, ty: Ty, fuel: int, output: bool) -> Any:
        tup_ty, index = self.tg.tuple_containing(ty)
        if self.ops_left > 0 and self.recognizing(tup_ty) and self.rng.random() < 0.7:
            tup = self.use(self.gen_connective(tup_ty, fuel - 1))   # e.g. split, batch_norm
        else:
            tup = self.gen_expr(tup_ty, fuel - 1)
        return self.emit(relax.TupleGetItem(tup, index), ty, output)

    def gen_if(self, ty: Ty, fuel: int, output: bool) -> Any:
        cond = self.gen_expr(BOOL_SCALAR, fuel - 1, no_const=True)
        branches = [self.gen_seq(ty, fuel - 1) for _ in range(2)]
        return self.emit(relax.If(cond, branches[0], branches[1]), ty, output)

    def gen_seq(self, ty: Ty, fuel: int) -> Any:
        """A SeqExpr of type `ty` in a child scope (an If branch)."""
        saved = self.push_scope()
        self.frames.append(Frame())
        self.in_branch += 1
        self.branch_top = True
        result = self.gen_body_result(ty, fuel)
        self.branch_top = False
        self.in_branch -= 1
        frame = self.frames.pop()
        frame.close_block()
        self.pop_scope(saved)
        return relax.SeqExpr(frame.blocks, result)

    def gen_body_result(self, ty: Ty, fuel: int) -> Any:
        """The result of a body: maybe computed in a dataflow block of its own."""
        if fuel > 0 and self.ops_left > 0 and not self.in_dataflow and \
                self.rng.random() < self.opts.p_dataflow:
            self.open_dataflow()
            var = self.gen_connective(ty, fuel, output=True)
            if isinstance(var, relax.DataflowVar):   # a base case: make it visible outside
                var = self.emit(var, ty, output=True)
            self.close_dataflow()
            return var
        if fuel > 0 and self.ops_left > 0 and self.rng.random() < 0.6:
            return self.gen_connective(ty, fuel)
        return self.gen_expr(ty, fuel)

    def gen_function(self, name: str, ty: Ty, fuel: int, isolated: bool) -> tuple[Any, FuncTy]:
        """A function returning `ty` whose parameters are created on demand."""
        saved = self.push_scope(isolated=isolated)
        self.funcs.append(FunctionCtx(name, allow_wide_params=True))
        self.frames.append(Frame())
        # a function body is planned on its own (local functions are lifted before the build)
        in_branch, self.in_branch, self.branch_top = self.in_branch, 0, False
        result = self.gen_body_result(ty, fuel)
        self.in_branch = in_branch
        frame = self.frames.pop()
        frame.close_block()
        fn_ctx = self.funcs.pop()
        self.pop_scope(saved)
        func = relax.Function(fn_ctx.params, relax.SeqExpr(frame.blocks, result), to_relax(ty),
                              is_pure=True)
        return func, FuncTy(tuple(fn_ctx.param_tys), ty)

    def gen_local_func(self, ty: Ty, fuel: int, output: bool) -> Any:
        func, fty = self.gen_function(self.fresh("lf"), ty, fuel - 1,
                                      isolated=not self.opts.capture)
        f = self.emit(func, fty)
        return self.call(f, fty, fuel, output)

    def call(self, f: Any, fty: FuncTy, fuel: int, output: bool) -> Any:
        args = [self.gen_expr(p, fuel - 1) for p in fty.params]
        return self.emit(relax.Call(f, args), fty.ret, output)

    def local_funcs(self, ty: Ty) -> list[Entry]:
        return [e for e in self.scope.visible() if isinstance(e.ty, FuncTy) and e.ty.ret == ty]

    def gen_call_local(self, ty: Ty, fuel: int, output: bool) -> Any:
        e = self.rng.choice(self.local_funcs(ty))
        e.uses += 1
        return self.call(e.var, e.ty, fuel, output)

    def private_funcs(self, ty: Ty) -> list[tuple[Any, FuncTy]]:
        return [(gv, t) for gv, t in self.privates if t.ret == ty]

    def gen_private_func(self, ty: Ty, fuel: int, output: bool) -> Any:
        """A call of a new private global function returning `ty`."""
        frames, self.frames = self.frames, []   # a global function is built on its own
        name = self.fresh("pf")
        func, fty = self.gen_function(name, ty, fuel - 1, isolated=True)
        self.frames = frames
        gv = self.bb.add_func(func, name)
        self.privates.append((gv, fty))
        return self.call(gv, fty, fuel, output)

    def gen_call_private(self, ty: Ty, fuel: int, output: bool) -> Any:
        gv, fty = self.rng.choice(self.private_funcs(ty))
        return self.call(gv, fty, fuel, output)

    def gen_match_cast(self, ty: Ty, fuel: int, output: bool) -> Any:
        assert isinstance(ty, TensorTy)
        # never a constant: a variable bound to a constant breaks TVM 0.27's VM codegen
        # ("Expected the object to be killed to be stored in a register ... kConstIdx")
        src = self.gen_expr(ty, fuel - 1, no_const=True)
        if isinstance(src, tvm.ir.GenericConst):   # nothing else fits: the constant itself
            return src
        return self.emit_match_cast(src, ty, output)

    # -- lets (the RFC's `let v = e1; e2`) --------------------------------------------------------
    def gen_let(self, ty: Ty, fuel: int) -> Any:
        """Bind a new value of type `ty` (a connective) in the current frame and keep it in scope;
        later expressions may use it."""
        return self.gen_connective(ty, fuel, output=True)
