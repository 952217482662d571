"""Graph inputs on which computed tensors take given values: the pre-image `tvtv.lift` needs
when a refuted operator lemma's call reads a computed value (argmax over `exp(x) @ wᵀ`).

The bindings the values are computed from are encoded in the IEEE model, on symbolic inputs,
and one query asks for finite inputs under which those tensors equal the lemma's inputs x*
bit for bit, with nothing defined as undefined and no NaN/inf in any tensor on the way (a
per-operation run). Two things keep the solver's answer close to what execution computes:
- small float sums are unrolled in index order (the last rung of the ladder, one of the
  orders the specification allows);
- every uninterpreted float function (exp, tanh, sigmoid, ...) is only applied where the
  model defines its value: at the first finite special point of its rule (exp(+0) = 1,
  tanh(+0) = +0, log(1) = 0, `tvtv/absfp/special.py`), where every C library agrees;
- every sum first gets at most one nonzero term, so that its value is the same in every
  summation order (then, failing that, any terms).
The answer is a candidate only: `tvtv.lift` claims a counterexample only when execution on
the VM shows it (and the source's IEEE evaluation, where every summation order counts, gives
the value that differs). Sums of more terms than `UNROLL_BOUND` stay uninterpreted, so their
values are the solver's choice: such a candidate usually fails there, and nothing is claimed.
"""
from __future__ import annotations

import math
from typing import Any, Callable, Sequence

import numpy as np
import z3

from tvtv import z3fast as zf
from tvtv.absfp import special
from tvtv.absfp.dtypes import is_float, numpy_dtype
from tvtv.absfp.ieee import IEEEModel
from tvtv.confirm import py_value
from tvtv.encode.context import EncodeContext
from tvtv.encode.evaluate import _IEEE_UF, _outermost_where
from tvtv.encode.abstraction import Abstraction
from tvtv.encode.function import FunctionEncoder, input_value
from tvtv.encode.tensor import INDEX_BITS, Tensor
from tvtv.encode.values import flatten
from tvtv.errors import TvtvError
from tvtv.ir import program as P
from tvtv.solvers import cvc5_bits, z3_bits

# seconds for the one query (a candidate only saves the whole-graph check's time)
TIMEOUT = 10.0
# tensors on the way whose elements are kept finite by the query, at most (beyond, the
# candidate's run is still checked by execution)
MAX_LIVE_ELEMENTS = 4096
# the last rung of the ladder: PrimFunc bodies, sums of products, small sums unrolled
LEVEL = Abstraction("body", "sum", unroll=True)

# the finite points a unary rule may define (`IEEEFloats.unary`'s cases)
_POINTS = {"+0": 0.0, "-0": -0.0, "+1": 1.0, "-1": -1.0}


def prefix(fn: P.Function, names: Sequence[str]) -> P.Function | None:
    """`fn` cut after the last binding of `names` (binding or parameter names), returning
    those values as a tuple; None when a name is not bound exactly once in `fn`'s own
    bindings or parameters."""
    bindings = fn.body.bindings
    refs: list[P.VarRef] = []
    last = 0
    for name in names:
        params = [p for p in fn.params if p.name == name]
        bound = [k for k, b in enumerate(bindings) if b.name == name]
        if len(params) + len(bound) != 1:
            return None
        if params:
            refs.append(P.VarRef(params[0].vid))
            continue
        refs.append(P.VarRef(bindings[bound[0]].vid))
        last = max(last, bound[0] + 1)
    types = tuple(_type_of(fn, r.vid) for r in refs)
    body = P.Body(bindings[:last], P.TupleExpr(tuple(refs)))
    return P.Function(fn.name, fn.params, body, P.TupleType(types), {}, True)


def _type_of(fn: P.Function, vid: str) -> P.Type:
    for p in fn.params:
        if p.vid == vid:
            return p.ty
    return next(b.ty for b in fn.body.bindings if b.vid == vid)


def preimage(prog: P.Program, fname: str, names: Sequence[str], targets: Sequence[np.ndarray],
             timeout: float = TIMEOUT, masks: Sequence[Sequence[int] | None] | None = None
             ) -> dict[str, np.ndarray] | None:
    """Values of `fname`'s parameters under which its bindings (or parameters) `names` equal
    `targets` (name k only at the flat positions `masks[k]`, where given), found in the IEEE
    model as the module doc says; None when the query is unsat, undecided in `timeout`
    seconds (per attempt), or cannot be encoded. Parameters the named values are not
    computed from are left out."""
    fn = prog.functions.get(fname)
    cut = None if fn is None else prefix(fn, names)
    if cut is None:
        return None
    query = _query(prog, cut, targets, masks)
    if query is None:
        return None
    facts, scalars, fixed, read = query
    # cvc5, not Z3: on zero graph 29's argmax (two rows of eight products summed in index
    # order, each sum equal to -FLT_MAX / 2) cvc5 found inputs in 3.3 s, Z3 gave unknown
    # after 60 s. First with at most one nonzero term in every sum: such a sum has that
    # term's value in every summation order, which is what confirmation asks of a sum
    # (`tvtv.encode.evaluate.order_free_sum`); failing that, any inputs.
    sparse = [zf.Or(zf.fpIsZero(a), zf.fpIsZero(b))
              for terms in _sums(facts) for i, a in enumerate(terms) for b in terms[i + 1:]]
    bits = _solve(facts + sparse, timeout) if sparse else None
    if bits is None:
        bits = _solve(facts, timeout)
    if bits is None:
        return None
    out: dict[str, np.ndarray] = {}
    for p in cut.params:
        consts, dtype, shape = scalars[p.name]
        if not any(c.decl().name() in read for c in consts):
            continue             # not read on the way: the caller fills it
        vals = [_bits_of(fixed[c]) if c in fixed else bits.get(c.decl().name(), 0) for c in consts]
        out[p.name] = _from_bits(vals, dtype).reshape(shape)
    return out


# seconds Z3 gets before cvc5 on a pre-image query
Z3_FIRST = 2.0


def _solve(facts: list[z3.BoolRef], timeout: float) -> dict[str, int] | None:
    """The bits of a model of `facts`: Z3 for `Z3_FIRST` seconds, then cvc5. Where the
    values only move data (zero seed-5 graph 4: a row of `broadcast_to(concat(x9,
    repeat(x3)))` equal to -FLT_MAX), Z3 answers in 0.24 s and cvc5 not in 10 s; on sums
    of products (graph 29) it is the other way round."""
    return z3_bits(facts, min(Z3_FIRST, timeout)) or cvc5_bits(facts, timeout)


Scalars = dict[str, tuple[list[z3.ExprRef], str, tuple[int, ...]]]
# `read_elements`' mark for a read of a whole input array
WHOLE = object()


def read_elements(prog: P.Program, fname: str, output: int, index: tuple[int, ...]
                  ) -> dict[str, list[int]] | None:
    """The input elements (flat positions, by parameter) that element `index` of `fname`'s
    output `output` is computed from, read off its term on symbolic inputs (at `LEVEL`, so
    small sums and argmax are folds over their elements); None where it reads an input at a
    position that is not a numeral, or a whole input (an uninterpreted function of the
    array), or cannot be encoded. A refuted lemma's counterexample shows its difference at
    one element: only the inputs that element reads need to be reached (`tvtv.lift`)."""
    fn = prog.functions.get(fname)
    if fn is None:
        return None
    ctx = EncodeContext(IEEEModel(), exact_pair_sums=True)
    try:
        inputs = [input_value(p.name, p.ty, ctx) for p in fn.params]
        outs = flatten(FunctionEncoder(prog, ctx, LEVEL).call(fn, inputs))
        t = outs[output]
        flat = int(np.ravel_multi_index(index, t.shape)) if t.shape else 0
        term = z3.simplify(t.at(flat))
    except (TvtvError, NotImplementedError, KeyError, IndexError, ValueError, z3.Z3Exception):
        return None
    arrays = {}
    for p, v in zip(fn.params, inputs):
        if not isinstance(v, Tensor):
            return None
        a = z3.simplify(v.at(z3.BitVec("tvtv_read_probe", INDEX_BITS)))
        if not (z3.is_select(a) and z3.is_const(a.arg(0))):
            return None          # (not an array variable read at the index)
        arrays[a.arg(0).get_id()] = p.name

    def pick(e: z3.ExprRef) -> Any:
        """What `e` says about the reads: an input element (name, index term), the whole
        array or a quantifier (None: look inside)."""
        if z3.is_select(e) and e.arg(0).get_id() in arrays:
            return arrays[e.arg(0).get_id()], e.arg(1)
        if (z3.is_const(e) and e.get_id() in arrays) or z3.is_quantifier(e):
            return WHOLE
        return None

    reads: dict[str, set[int]] = {name: set() for name in arrays.values()}
    for _, found in _outermost_where(term, pick):
        # the whole array (an argument of a function, a quantifier's body) or an element
        # at a position that is not a numeral: which elements matter is not known
        if found is WHOLE or not z3.is_bv_value(found[1]):
            return None
        reads[found[0]].add(found[1].as_long())
    return {name: sorted(ks) for name, ks in reads.items()}


def _query(prog: P.Program, cut: P.Function, targets: Sequence[np.ndarray],
           masks: Sequence[Sequence[int] | None] | None = None
           ) -> tuple[list[z3.BoolRef], Scalars, dict[z3.ExprRef, z3.ExprRef], set[str]] | None:
    """The pre-image query of `cut`'s values equal to `targets` (target k only at the flat
    positions `masks[k]` where that is not None): (facts over one scalar
    constant per input element, those constants by parameter with its dtype and shape, the
    constants a pin fixes and their points, the names of the constants the values are
    computed from); None when it cannot be encoded."""
    model = IEEEModel()
    ctx = EncodeContext(model, exact_pair_sums=True)
    ctx.live_values = []
    model.on_ub = ctx.add_ub
    try:
        inputs = [input_value(p.name, p.ty, ctx) for p in cut.params]
        outs = flatten(FunctionEncoder(prog, ctx, LEVEL).call(cut, inputs))
    except (TvtvError, NotImplementedError, KeyError, z3.Z3Exception):
        return None
    if len(outs) != len(targets) or any(tuple(t.shape) != tuple(np.shape(x))
                                        for t, x in zip(outs, targets)) \
            or not all(isinstance(v, Tensor) for v in inputs):
        return None              # (a tuple parameter: not tried)

    def finite(t: Tensor) -> list[z3.BoolRef]:
        dom = ctx.dom(t.dtype)
        return [zf.Not(zf.Or(dom.is_nan(t.at(k)), dom.is_inf(t.at(k)))) for k in range(t.numel)] \
            if is_float(t.dtype) else []

    facts: list[z3.BoolRef] = [ctx.well_defined()]
    for j, (t, want) in enumerate(zip(outs, targets)):
        dom = ctx.dom(t.dtype)
        flat = np.ravel(np.asarray(want))
        mask = None if masks is None else masks[j]
        facts += [dom.same(t.at(k), dom.const(py_value(flat[k])))
                  for k in (range(t.numel) if mask is None else mask)]
    # a per-operation run: no NaN/inf in a tensor on the way, nor in the inputs
    budget = MAX_LIVE_ELEMENTS
    for t in ctx.live_values:
        if t is not None and t.numel <= budget:
            budget -= t.numel
            facts += finite(t)
    n_core = len(facts)          # what the named values are computed from, then the inputs
    facts += [f for v in inputs for f in finite(v)]
    # (simplified first: lambda-built tensors read at numerals become their elements' terms)
    facts = zf.simplify_all(facts)
    pins = _pins(facts)
    if pins is None:
        return None
    # input elements as scalar constants (Z3 and cvc5 solve FP over array selects poorly),
    # and a pin on an input element substituted by its point (the rule's case split folds)
    scalars: Scalars = {}
    subst: list[tuple[z3.ExprRef, z3.ExprRef]] = []
    for p, v in zip(cut.params, inputs):
        consts = [z3.Const(f"{p.name}[{k}]", ctx.dom(v.dtype).sort) for k in range(v.numel)]
        scalars[p.name] = (consts, v.dtype, v.shape)
        subst += [(v.at(k), c) for k, c in enumerate(consts)]
    # (one substitution for all: z3py's checks every pair again for every term, `zf.substitute_all`)
    both = zf.substitute_all(facts + pins, subst)
    facts, pins = both[:len(facts)], both[len(facts):]
    fixed = dict(_fixed(pins))
    read = _const_names(facts[:n_core]) | {c.decl().name() for c in fixed}
    if fixed:
        facts = zf.simplify_all(zf.substitute_all(facts + pins, list(fixed.items())))
    else:
        facts = facts + pins
    return [f for f in facts if not z3.is_true(f)], scalars, fixed, read


def _sums(facts: Sequence[z3.ExprRef]) -> list[list[z3.ExprRef]]:
    """The terms of each float sum unrolled in `facts` (`tvtv.encode.reduction.reduce_sum`:
    +0.0 + x_0 + ... + x_{n-1}): a maximal chain of additions down to +0.0, read through the
    simplifier's reordering of each addition's two operands. An addition of two chains (a
    binary add of two sums) is none. Only a search bias rests on this (`preimage`)."""
    memo: dict[int, list[z3.ExprRef] | None] = {}

    def is_add(t: z3.ExprRef) -> bool:
        return z3.is_app(t) and t.decl().kind() == z3.Z3_OP_FPA_ADD

    def chain(t: z3.ExprRef) -> list[z3.ExprRef] | None:
        if z3.is_fp_value(t) and t.isZero() and not t.isNegative():
            return []
        if not is_add(t):
            return None
        if t.get_id() not in memo:
            a, b = t.arg(1), t.arg(2)
            ca, cb = chain(a), chain(b)
            memo[t.get_id()] = (None if ca is not None and cb is not None
                                else ca + [b] if ca is not None else cb + [a] if cb is not None
                                else None)
        return memo[t.get_id()]

    sums: list[list[z3.ExprRef]] = []

    def visit(t: z3.ExprRef) -> list[z3.ExprRef] | None:
        terms = chain(t) if is_add(t) else None
        if terms is not None and len(terms) > 1:
            sums.append(terms)
        return terms                 # the chain's own additions are not sums of their own

    _walk(facts, visit)
    return sums


def _walk(facts: Sequence[z3.ExprRef], visit: Callable[[z3.ExprRef], Any]) -> None:
    """`visit` each distinct application in `facts` once, top down; it returns the subterms
    to go on with (None: the application's arguments)."""
    seen: set[int] = set()
    stack = list(facts)
    while stack:
        t = stack.pop()
        if t.get_id() in seen or not z3.is_app(t):
            continue
        seen.add(t.get_id())
        more = visit(t)
        stack.extend(t.children() if more is None else more)


def _const_names(facts: Sequence[z3.ExprRef]) -> set[str]:
    """The names of the uninterpreted constants in `facts`."""
    names: set[str] = set()

    def visit(t: z3.ExprRef) -> None:
        if z3.is_const(t) and t.decl().kind() == z3.Z3_OP_UNINTERPRETED:
            names.add(t.decl().name())

    _walk(facts, visit)
    return names


def _bits_of(value: z3.ExprRef) -> int:
    """The bits of a float numeral."""
    return z3.simplify(z3.fpToIEEEBV(value)).as_long()


def _from_bits(bits: Sequence[int], dtype: str) -> np.ndarray:
    """An array of `dtype` holding the given bit patterns (two's complement for integers)."""
    nd = np.dtype(numpy_dtype(dtype))
    if nd == np.bool_:
        return np.array([bool(b) for b in bits])
    width = nd.itemsize * 8
    raw = np.array([b & ((1 << width) - 1) for b in bits], dtype=f"u{nd.itemsize}")
    return raw.view(nd)


def _fixed(pins: Sequence[z3.BoolRef]) -> list[tuple[z3.ExprRef, z3.ExprRef]]:
    """(constant, point) for the pins that fix a constant itself (`c == point`, either way
    round after simplification)."""
    out = []
    for pin in pins:
        if not z3.is_eq(pin):
            continue
        for c, point in ((pin.arg(0), pin.arg(1)), (pin.arg(1), pin.arg(0))):
            if z3.is_const(c) and c.decl().kind() == z3.Z3_OP_UNINTERPRETED and z3.is_fp_value(point):
                out.append((c, point))
                break
    return out


def _pins(facts: Sequence[z3.ExprRef]) -> list[z3.BoolRef] | None:
    """For each application of an uninterpreted unary float function in `facts`: its
    argument is the first finite point where the function's rule defines a finite value (one
    point, so that a pin on an input element is a substitution). None when a function has
    no such point (no pre-image is sought through it)."""
    pins: list[z3.BoolRef] = []
    unpinnable: list[str] = []

    def visit(t: z3.ExprRef) -> None:
        if t.decl().kind() != z3.Z3_OP_UNINTERPRETED or t.num_args() != 1:
            return
        m = _IEEE_UF.match(t.decl().name())
        rule = special.UNARY_RULES.get(m.group(1)) if m else None
        if rule is None or not isinstance(t.arg(0), z3.FPRef):
            return
        arg = t.arg(0)
        points = [_POINTS[k] for k, v in rule.specials.items()
                  if k in _POINTS and (v == "x" or isinstance(v, float) and math.isfinite(v))]
        if points:
            pins.append(arg == z3.FPVal(points[0], arg.sort()))
        else:
            unpinnable.append(t.decl().name())

    _walk(facts, visit)
    return None if unpinnable else pins
