"""The refinement check: does the target function refine the source function?

Target refines source when, for every input, the source is undefined, or the target is
defined and every output element of the target equals the source's (NaN = NaN; +0 ≠ -0),
with the same output shapes and dtypes. As in mlir-tv (vcgen.cpp) it is asked as separate
queries: first UB (`src defined ∧ tgt undefined`), then one query per output tensor
(`∃ i < numel: ¬same(src[i], tgt[i])`). A satisfiable query is a counterexample, turned into
concrete inputs by the float model's `decode`.

Abstraction ladder for this level of the encoder: the abstract float model first; when it
reports a counterexample that the IEEE evaluation of the same inputs does not confirm, the
check is repeated in the IEEE model (`levels` in the result records what was used).
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np
import z3

from tvtv.absfp.abstract import AbstractModel
from tvtv.absfp.dtypes import numpy_dtype
from tvtv.absfp.ieee import IEEEModel
from tvtv.absfp.interface import FloatModel
from tvtv.absfp.width import magnitude_bits
from tvtv.encode.context import EncodeContext
from tvtv.encode.function import FunctionEncoder, concrete_value, input_value
from tvtv.encode.tensor import INDEX_BITS, Tensor, idx, unravel
from tvtv.encode.values import Value, flatten
from tvtv.errors import Unsupported
from tvtv.ir import program as P
from tvtv.report import COUNTEREXAMPLE, PROVED, UNKNOWN, Counterexample, Result

FP_MODELS = ("abstract", "ieee")


@dataclass
class Options:
    """How to check. `timeout` is seconds per solver query."""

    fp: str = "abstract"
    timeout: float = 30.0
    mag_bits: int | None = None
    refine_to_ieee: bool = True
    confirm: bool = True

    def __post_init__(self) -> None:
        if self.fp not in FP_MODELS:
            raise ValueError(f"unknown float model {self.fp!r} (choose from {', '.join(FP_MODELS)})")


class _Timeout(Exception):
    pass


@dataclass
class _Side:
    ctx: EncodeContext
    outputs: list[Tensor]
    value: Value


@dataclass
class _Encoded:
    model: FloatModel
    inputs: list[tuple[str, P.Type, Value]]
    src: _Side
    tgt: _Side
    level: str
    notes: set[str] = field(default_factory=set)


def _make_model(fp: str, programs: Sequence[P.Program], mag_bits: int | None) -> tuple[FloatModel, str]:
    if fp == "ieee":
        return IEEEModel(), "fp: ieee"
    k, exact = (mag_bits, True) if mag_bits else magnitude_bits(programs)
    note = f"fp: abstract, {k} magnitude bits" + ("" if exact else " (capped)")
    return AbstractModel(k), note


def _encode_side(program: P.Program, fn: P.Function, args: list[Value], model: FloatModel,
                 side: str) -> _Side:
    ctx = EncodeContext(model, side)
    model.on_ub = ctx.add_ub
    value = FunctionEncoder(program, ctx).call(fn, args)
    return _Side(ctx, flatten(value), value)


def _encode(src_prog: P.Program, src_fn: P.Function, tgt_prog: P.Program, tgt_fn: P.Function,
            fp: str, mag_bits: int | None, concrete: dict[str, Any] | None = None) -> _Encoded:
    model, level = _make_model(fp, [src_prog, tgt_prog], mag_bits)
    ctx0 = EncodeContext(model)
    inputs = []
    for p in src_fn.params:
        if concrete is not None:
            v = concrete_value(concrete[p.name], p.ty, ctx0)
        else:
            v = input_value(p.name, p.ty, ctx0)
        inputs.append((p.name, p.ty, v))
    args = [v for _, _, v in inputs]
    src = _encode_side(src_prog, src_fn, args, model, "src")
    tgt = _encode_side(tgt_prog, tgt_fn, args, model, "tgt")
    return _Encoded(model, inputs, src, tgt, level, src.ctx.notes | tgt.ctx.notes)


def _solver(timeout: float) -> z3.Solver:
    s = z3.Solver()
    s.set("timeout", max(1, int(timeout * 1000)))
    return s


def _check(s: z3.Solver) -> z3.CheckSatResult:
    r = s.check()
    if r == z3.unknown:
        raise _Timeout(s.reason_unknown())
    return r


def _decode_inputs(enc: _Encoded, m: z3.ModelRef, extra: Sequence[tuple[z3.ExprRef, str]] = ()
                   ) -> tuple[dict[str, Any], list[Any]]:
    """Concrete inputs (numpy arrays) and the values of `extra` terms, decoded together so
    abstract magnitudes map to one consistent set of reals."""
    terms: list[tuple[z3.ExprRef, str]] = []
    layout: list[tuple[str, Any]] = []

    def collect(v: Value) -> Any:
        if isinstance(v, tuple):
            return tuple(collect(x) for x in v)
        start = len(terms)
        terms.extend((v.at(k), v.dtype) for k in range(v.numel))
        return (start, v.shape, v.dtype)

    shapes = {name: collect(v) for name, _, v in enc.inputs}
    n_in = len(terms)
    values = enc.model.decode(m, terms + list(extra))

    def build(spec: Any) -> Any:
        if isinstance(spec, tuple) and spec and isinstance(spec[0], tuple):
            return tuple(build(s) for s in spec)
        if isinstance(spec, tuple) and len(spec) == 3 and isinstance(spec[1], tuple):
            start, shape, dtype = spec
            n = math.prod(shape)
            return np.array(values[start:start + n], dtype=numpy_dtype(dtype)).reshape(shape)
        return tuple(build(s) for s in spec)

    return {name: build(spec) for name, spec in shapes.items()}, values[n_in:]


def _static_mismatch(src: list[Tensor], tgt: list[Tensor]) -> tuple[str, str, int | None] | None:
    if len(src) != len(tgt):
        return "shape", f"source returns {len(src)} tensors, target {len(tgt)}", None
    for k, (a, b) in enumerate(zip(src, tgt)):
        if a.shape != b.shape:
            return "shape", f"output {k}: source shape {a.shape}, target shape {b.shape}", k
        if a.dtype != b.dtype:
            return "dtype", f"output {k}: source dtype {a.dtype}, target dtype {b.dtype}", k
    return None


def _find_counterexample(enc: _Encoded, timeout: float) -> Counterexample | None:
    """None when refinement holds; raises _Timeout when a query is undecided."""
    pre = enc.model.preconditions()
    wd_src, wd_tgt = enc.src.ctx.well_defined(), enc.tgt.ctx.well_defined()

    static = _static_mismatch(enc.src.outputs, enc.tgt.outputs)
    if static is not None:
        kind, message, k = static
        s = _solver(timeout)
        s.add(*pre, wd_src)
        if _check(s) == z3.unsat:
            return None  # the source is always undefined: anything refines it
        inputs, _ = _decode_inputs(enc, s.model())
        return Counterexample(kind, message, inputs, output=k)

    # 1. UB: the target is undefined where the source is defined.
    if enc.tgt.ctx.ub:
        s = _solver(timeout)
        s.add(*pre, wd_src, z3.Not(wd_tgt))
        if _check(s) == z3.sat:
            m = s.model()
            reasons = [why for c, why in enc.tgt.ctx.ub if z3.is_true(m.eval(c, model_completion=True))]
            inputs, _ = _decode_inputs(enc, m)
            return Counterexample("ub", "target is undefined where the source is defined: "
                                  + "; ".join(sorted(set(reasons))), inputs)

    # 2. Each output: some element differs.
    for k, (a, b) in enumerate(zip(enc.src.outputs, enc.tgt.outputs)):
        if a.numel == 0 or z3.eq(a.arr, b.arr):
            continue  # the same SMT term: equal by construction
        i = z3.BitVec(f"tvtv_out{k}_index", INDEX_BITS)
        dom = enc.model.domain(a.dtype)
        s = _solver(timeout)
        s.add(*pre, wd_src, wd_tgt, z3.ULT(i, idx(a.numel)), z3.Not(dom.same(a.at(i), b.at(i))))
        if _check(s) == z3.sat:
            m = s.model()
            flat = m.eval(i, model_completion=True).as_long()
            inputs, (sv, tv) = _decode_inputs(enc, m, [(a.at(flat), a.dtype), (b.at(flat), b.dtype)])
            index = tuple(int(x) for x in np.unravel_index(flat, a.shape)) if a.shape else ()
            return Counterexample("value", f"output {k} differs at index {index}", inputs,
                                  output=k, index=index, source_value=sv, target_value=tv)
    return None


def separates(src_prog: P.Program, src_fn: P.Function, tgt_prog: P.Program, tgt_fn: P.Function,
              cex: Counterexample, timeout: float = 10.0) -> bool | None:
    """Do `cex.inputs`, evaluated in the IEEE model, separate source and target for every
    interpretation of the uninterpreted functions? None when undecided."""
    try:
        enc = _encode(src_prog, src_fn, tgt_prog, tgt_fn, "ieee", None, cex.inputs)
    except Unsupported:
        return None
    wd_src, wd_tgt = enc.src.ctx.well_defined(), enc.tgt.ctx.well_defined()
    s = _solver(timeout)
    if cex.kind in ("shape", "dtype"):
        s.add(z3.Not(wd_src))
    elif cex.kind == "ub":
        s.add(z3.Not(z3.And(wd_src, z3.Not(wd_tgt))))
    else:
        a, b = enc.src.outputs[cex.output], enc.tgt.outputs[cex.output]
        flat = int(np.ravel_multi_index(cex.index, a.shape)) if a.shape else 0
        dom = enc.model.domain(a.dtype)
        s.add(wd_src, wd_tgt, dom.same(a.at(flat), b.at(flat)))
    r = s.check()
    return None if r == z3.unknown else r == z3.unsat


def check_function(src_prog: P.Program, tgt_prog: P.Program, name: str, options: Options,
                   pass_name: str | None = None, label: str | None = None) -> Result:
    """Check that `tgt_prog[name]` refines `src_prog[name]`."""
    start = time.perf_counter()
    label = label or name

    def result(verdict: str, reason: str | None = None, cex: Counterexample | None = None,
               levels: list[str] | None = None) -> Result:
        return Result(label, pass_name, verdict, time.perf_counter() - start, reason, cex,
                      options.fp, levels or [])

    src_fn, tgt_fn = src_prog.functions.get(name), tgt_prog.functions.get(name)
    if src_fn is None:
        return result(UNKNOWN, f"function {name} not in the source")
    if tgt_fn is None:
        return result(UNKNOWN, f"function {name} not in the target")
    if [p.ty for p in src_fn.params] != [p.ty for p in tgt_fn.params]:
        return result(UNKNOWN, f"function {name}: the signature changed: "
                      f"({', '.join(str(p.ty) for p in src_fn.params)}) -> "
                      f"({', '.join(str(p.ty) for p in tgt_fn.params)})")

    levels: list[str] = []
    fp = options.fp
    abstract_cex: Counterexample | None = None
    while True:
        timeout = options.timeout if abstract_cex is None else min(options.timeout, 10.0)
        try:
            enc = _encode(src_prog, src_fn, tgt_prog, tgt_fn, fp, options.mag_bits)
            levels.append(enc.level)
            levels.extend(sorted(enc.notes))
            cex = _find_counterexample(enc, timeout)
        except Unsupported as err:
            return result(UNKNOWN, f"unsupported: {err}", levels=levels)
        except _Timeout as err:
            if abstract_cex is not None:
                # the IEEE model could not decide: the abstract counterexample stands
                # (unconfirmed by the abstraction; execution may still confirm it)
                levels.append("fp: ieee timed out")
                return result(COUNTEREXAMPLE, abstract_cex.message, abstract_cex, levels)
            return result(UNKNOWN, f"timeout after {timeout:g} s per query ({err})",
                          levels=levels)
        if cex is None:
            return result(PROVED, levels=levels)
        if options.confirm:
            cex.confirmed_ieee = separates(src_prog, src_fn, tgt_prog, tgt_fn, cex,
                                           timeout=min(options.timeout, 10.0))
        if fp == "abstract" and options.refine_to_ieee and cex.confirmed_ieee is not True:
            fp = "ieee"   # the abstraction may have invented this difference: refine
            abstract_cex = cex
            continue
        return result(COUNTEREXAMPLE, cex.message, cex, levels)


def check_programs(src: P.Program, tgt: P.Program, options: Options, pass_name: str | None = None,
                   label: str | None = None) -> list[Result]:
    """Check every public function of the source against the target's function of that name."""
    results = []
    for fn in src.public_functions():
        name = fn.name if label is None else (label if len(src.public_functions()) == 1
                                              else f"{label}:{fn.name}")
        results.append(check_function(src, tgt, fn.name, options, pass_name, name))
    if not results:
        results.append(Result(label or "<module>", pass_name, UNKNOWN, 0.0,
                              "the source module has no public Relax function"))
    return results
