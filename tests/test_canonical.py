"""Canonical forms (tvtv/encode/canonical.py) and the abstract model's exact x*±1: they only
decide which output elements need the solver, so they must keep meaning (checked by Z3) and
make the pairs the legalized loops produce identical."""
from __future__ import annotations

import z3

from tvtv import z3fast as zf
from tvtv.absfp.abstract import AbstractModel
from tvtv.encode.canonical import Canonicalizer


def test_or_and_eq_orders_meet():
    x, y = z3.BitVecs("x y", 8)
    c = Canonicalizer()
    a = z3.Or(x == 0, x == 0x80, y == 1)
    b = z3.Or(y == 1, x == 0x80, x == 0)
    assert z3.eq(c(a), c(b))
    assert z3.eq(c(z3.If(x == y, x, y)), c(z3.If(y == x, x, y)))


def test_non_commutative_operators_keep_their_order():
    x, y = z3.BitVecs("x y", 8)
    c = Canonicalizer()
    assert not z3.eq(c(x - y), c(y - x))
    assert not z3.eq(c(z3.UDiv(x, y)), c(z3.UDiv(y, x)))
    assert not z3.eq(c(z3.Concat(x, y)), c(z3.Concat(y, x)))


def test_canonical_form_means_the_same():
    x, y, z = z3.BitVecs("x y z", 8)
    p = z3.Bool("p")
    c = Canonicalizer()
    terms = [z3.If(z3.Or(p, x == y + z), x * (y | z), (z & x) - y),
             z3.If(z3.And(x != 0, z3.Or(y == 3, p)), z3.Concat(x, y), z3.Concat(y + x, z ^ y)),
             z3.Distinct(x + 1, y, z)]
    for t in terms:
        s = z3.Solver()
        s.add(c(t) != t)
        assert s.check() == z3.unsat


def test_abstract_times_one_is_exact():
    m = AbstractModel(6, ["float32"])
    d = m.domain("float32")
    x = z3.BitVec("x", 7)
    assert z3.eq(z3.simplify(d.mul(x, d.const(-1.0))), z3.simplify(d.neg(x)))
    assert z3.eq(d.mul(d.const(1.0), x), x)
    # x * 2 stays a product (an uninterpreted magnitude function)
    assert "absfp_mul" in z3.simplify(d.mul(x, d.const(2.0))).sexpr()



def test_abstract_times_one_is_exact_beside_a_large_term():
    """`_unit_sign` simplifies only small terms: a large operand is not walked, and the
    constant beside it is still recognized (in either position)."""
    m = AbstractModel(6, ["float32"])
    d = m.domain("float32")
    big = z3.BitVec("x", 7)
    for k in range(40):      # a chain of 40 additions: far above UNIT_TERM_NODES
        big = d.add(big, z3.BitVec(f"y{k}", 7))
    assert z3.eq(d.mul(big, d.const(1.0)), big)
    assert z3.eq(z3.simplify(d.mul(d.const(-1.0), big)), z3.simplify(d.neg(big)))
    # and a large term that is no constant stays a product
    assert "absfp_mul" in d.mul(big, big).sexpr()


def test_at_most_counts_distinct_subterms():
    from tvtv import z3raw
    x, y = z3.BitVecs("x y", 8)
    assert z3raw.at_most(x, 1) and not z3raw.at_most(x + y, 2)
    assert z3raw.at_most(x + y, 3)
    shared = (x + y) * (x + y)          # one shared subterm: 4 distinct nodes, not 7
    assert z3raw.at_most(shared, 4) and not z3raw.at_most(shared, 3)
    i = z3.BitVec("i", 8)
    assert not z3raw.at_most(z3.Lambda([i], i + x + y), 3)   # through a lambda's body


def _legalized_pair_differences(build) -> tuple[int, int]:
    """(differing elements, elements) of a single-op module against its legalization."""
    from tvm import relax

    from tvtv import refinement
    from tvtv.encode.abstraction import abstraction_level, ladder
    from tvtv.ir import relax_reader
    mod = build()
    tgt = relax.transform.LegalizeOps()(mod)
    sp, tp = relax_reader.read_module(mod), relax_reader.read_module(tgt)
    refinement._RUN.set(refinement.Options())
    with abstraction_level(ladder("auto")[1]):
        enc = refinement._encode(sp, sp.functions["main"], tp, tp.functions["main"], "abstract", None)
    a, b = enc.src.outputs[0], enc.tgt.outputs[0]
    return len(refinement._differing_elements(enc, enc.model.domain(a.dtype), a, b)), a.numel


def _single(op, shapes, **kw):
    from tvm import relax

    def build():
        bb = relax.BlockBuilder()
        xs = [relax.Var(f"x{k}", relax.TensorType(s, "float32")) for k, s in enumerate(shapes)]
        with bb.function("main", xs):
            bb.emit_func_output(bb.emit(op(*xs, **kw)))
        return bb.get()
    return build


def test_legalized_ops_meet_the_relax_terms_without_a_solver():
    # measured before canonical forms and exact x*-1: 2/6, 1/6, 7/8, 2/4 and 6/6 elements
    # needed the solver; each such element costs 0.1-0.2 s in a fused graph
    from tvm import relax
    O = relax.op
    cases = [_single(O.add, [(2, 3), (3,)]), _single(O.exp, [(2, 3)]),
             _single(O.matmul, [(2, 3), (3, 4)]),
             _single(O.nn.conv2d, [(1, 1, 3, 3), (1, 1, 2, 2)]),
             _single(O.negative, [(2, 3)]), _single(O.sqrt, [(2, 3)])]
    for build in cases:
        differing, n = _legalized_pair_differences(build)
        assert differing == 0, (build, differing, n)


def test_deep_terms_do_not_hit_the_recursion_limit():
    x, y = z3.BitVecs("x y", 8)
    t = x
    for k in range(5000):            # a chain far deeper than Python's recursion limit
        t = z3.If(z3.Or(t == k % 7, y == 1), t + 1, y)
    c = Canonicalizer()
    assert c._canon(t).eq(c._canon(t))
    s = z3.Solver()
    s.add(c._canon(t) != t)
    assert s.check() == z3.unsat


def _max_row(fp: str, assume: tuple[str, ...]):
    """The Relax max over a row of 16 and its legalized loop (init -FLT_MAX), encoded."""
    from tvm import relax

    from tvtv.encode.abstraction import Abstraction, abstraction_level
    from tvtv.encode.function import operator_lemmas
    from tvtv.ir import relax_reader, tvm_bridge
    from tvtv.refinement import _RUN, Options, _encode
    bb = relax.BlockBuilder()
    x = relax.Var("x", relax.TensorType((1, 16), "float32"))
    with bb.function("main", [x]):
        bb.emit_func_output(bb.emit(relax.op.max(x, axis=-1)))
    single = bb.get()
    legal = tvm_bridge.apply(tvm_bridge.relax_pass("LegalizeOps"), single)
    s, t = relax_reader.read_module(single), relax_reader.read_module(legal)
    token = _RUN.set(Options(assume=assume))
    try:
        with operator_lemmas(None), abstraction_level(Abstraction("body", "uf")):
            return _encode(s, s.functions["main"], t, t.functions["main"], fp, None)
    finally:
        _RUN.reset(token)


def test_input_facts_decide_atoms_and_keep_meaning():
    """Under no-nan and no-inf, "x[k] is NaN/inf" is false: numpy's max (NaN when any term
    is) and TVM's loop from -FLT_MAX (which differs only on -inf and NaN) then become one
    term, so the lemma needs no solver. Without the facts they stay apart, and each canonical
    form equals its term on every input the premises admit."""
    from tvtv.absfp import assumptions
    from tvtv.encode.values import flatten
    from tvtv.refinement import _preconditions
    for fp in ("ieee", "abstract"):
        enc = _max_row(fp, ("no-nan", "no-inf"))
        tensors = [t for _, _, v in enc.inputs for t in flatten(v)]
        facts = assumptions.atom_facts(("no-nan", "no-inf"), enc.model, tensors)
        assert len(facts) >= 16
        src, tgt = enc.src.value.at(0), enc.tgt.value.at(0)
        plain = Canonicalizer()
        assert not z3.eq(plain(src), plain(tgt))
        c = Canonicalizer(facts)
        assert z3.eq(c(src), c(tgt)), fp
        for term in (src, tgt):
            s = z3.Solver()
            s.add(*_preconditions(enc), c(term) != term)
            assert s.check() == z3.unsat
        assert assumptions.atom_facts(("no-signed-zeros",), enc.model, tensors) == {}


def test_input_facts_of_an_element_are_kept_and_forgotten_with_the_context():
    """`atom_facts` keeps each element's facts (a case's checks meet the same elements): a
    second call gives what the atoms themselves give, element by element, and so does a call
    in a fresh Z3 context, where the kept facts of the old one are gone."""
    from tvtv import z3context
    from tvtv.absfp import assumptions
    from tvtv.encode.values import flatten
    assume = ("no-nan", "no-inf")

    def direct(enc) -> set[int]:
        out: set[int] = set()
        for t in [t for _, _, v in enc.inputs for t in flatten(v)]:
            dom = enc.model.domain(t.dtype)
            for k in range(t.numel):
                atoms = assumptions.decided_atoms(assume, dom, z3.simplify(t.at(k)))
                out |= set(assumptions.false_atom_facts(atoms))
        return out

    for fp in ("ieee", "abstract"):
        enc = _max_row(fp, assume)
        tensors = [t for _, _, v in enc.inputs for t in flatten(v)]
        first = assumptions.atom_facts(assume, enc.model, tensors)
        assert assumptions._ELEMENT_FACTS
        again = assumptions.atom_facts(assume, enc.model, tensors)
        assert set(first) == set(again) == direct(enc)
        assert all(z3.is_false(v) for _, v in again.values())
        # no-nan alone decides fewer atoms: not the facts kept for both
        nan_only = assumptions.atom_facts(("no-nan",), enc.model, tensors)
        assert 0 < len(nan_only) < len(first)
    with z3context.scope():
        assert not assumptions._ELEMENT_FACTS
        enc = _max_row("abstract", assume)
        tensors = [t for _, _, v in enc.inputs for t in flatten(v)]
        assert set(assumptions.atom_facts(assume, enc.model, tensors)) == direct(enc)


class ReferenceCanonicalizer:
    """The canonical form as first written, through z3py objects (one Python object per
    visited term): the oracle the raw-pointer walk must agree with term for term, and the
    baseline of `bench/canonical.py`. No facts."""

    def __init__(self) -> None:
        self._memo: dict[int, tuple[z3.ExprRef, z3.ExprRef]] = {}

    def __call__(self, term: z3.ExprRef) -> z3.ExprRef:
        return self._canon(z3.simplify(term))

    def _canon(self, root: z3.ExprRef) -> z3.ExprRef:
        from tvtv.encode.canonical import COMMUTATIVE
        memo = self._memo
        stack: list[tuple[z3.ExprRef, bool]] = [(root, False)]
        while stack:
            e, children_done = stack.pop()
            key = e.get_id()
            if key in memo:
                continue
            if not (z3.is_app(e) and e.num_args() > 0):
                memo[key] = (e, e)
                continue
            if not children_done:
                stack.append((e, True))
                stack.extend((c, False) for c in e.children() if c.get_id() not in memo)
                continue
            children = e.children()
            kids = [memo[c.get_id()][1] for c in children]
            if e.decl().kind() in COMMUTATIVE:
                kids.sort(key=lambda c: (c.hash(), c.get_id()))
            if not any(not k.eq(c) for k, c in zip(kids, children)):
                memo[key] = (e, e)
                continue
            kind = e.decl().kind()
            rebuilt = (z3.Or(*kids) if kind == z3.Z3_OP_OR else z3.And(*kids)
                       if kind == z3.Z3_OP_AND else z3.Distinct(*kids)
                       if kind == z3.Z3_OP_DISTINCT else e.decl()(*kids))
            memo[key] = (e, rebuilt)
        return memo[root.get_id()][1]


def legalized_elements(build) -> list[z3.ExprRef]:
    """Every output element of a single-op module and of its legalization (abstract model,
    PrimFunc bodies): real terms of the shapes the canonical form meets in a check."""
    from tvm import relax

    from tvtv import refinement
    from tvtv.encode.abstraction import abstraction_level, ladder
    from tvtv.encode.function import operator_lemmas
    from tvtv.ir import relax_reader
    mod = build()
    tgt = relax.transform.LegalizeOps()(mod)
    sp, tp = relax_reader.read_module(mod), relax_reader.read_module(tgt)
    token = refinement._RUN.set(refinement.Options())
    try:
        with operator_lemmas(None), abstraction_level(ladder("auto")[1]):
            enc = refinement._encode(sp, sp.functions["main"], tp, tp.functions["main"],
                                     "abstract", None)
    finally:
        refinement._RUN.reset(token)
    a, b = enc.src.outputs[0], enc.tgt.outputs[0]
    return [t for j in range(a.numel) for t in (a.at(j), b.at(j))]


def test_raw_walk_agrees_with_the_z3py_walk_term_for_term():
    """The C-API walk builds exactly the terms the z3py walk built (same order of the
    commutative arguments, same rebuilt operators), on real legalized elements and on n-ary
    and/or/distinct/bvadd."""
    from tvm import relax
    O = relax.op
    terms = []
    for build in (_single(O.nn.softmax, [(2, 6)]), _single(O.nn.conv2d, [(1, 2, 3, 3), (2, 2, 2, 2)]),
                  _single(O.nn.layer_norm, [(2, 4), (4,), (4,)], axes=[-1])):
        terms += legalized_elements(build)
    x, y, z, w = z3.BitVecs("x y z w", 8)
    terms += [z3.Or(x == 1, z == 2, y == 3, w == 4), z3.And(w == x, y != z, x == 0),
              z3.Distinct(w, z, y, x), w + z + y + x, x * y * z]
    new, ref = Canonicalizer(), ReferenceCanonicalizer()
    for t in terms:
        # one simplified term for both: z3.simplify's argument order follows AST ids, so two
        # calls may differ once other terms were built in between
        st = z3.simplify(t)
        assert z3.eq(new._canon(st), ref._canon(st)), t.sexpr()[:200]


def test_memo_keeps_its_terms_alive():
    """Terms canonicalized and then dropped by the caller keep their ids reserved while the
    canonicalizer lives: a reused id would hand a new term the canonical form of an old one."""
    import gc
    c = Canonicalizer()

    def canon_fresh(k: int) -> tuple[z3.ExprRef, z3.ExprRef]:
        v = z3.BitVec(f"v{k}", 8)
        t = z3.Or(v == k % 256, v + 3 == (k + 1) % 256, z3.ULT(v, 7))
        return t, c(t)

    for k in range(200):
        canon_fresh(k)            # dropped at once by this caller
    gc.collect()
    for k in range(1000, 1200):   # new terms, built after the old ones were dropped
        t, ct = canon_fresh(k)
        assert f"v{k}" in ct.sexpr() and f"v{k - 1000} " not in ct.sexpr() + " "
        s = z3.Solver()
        s.add(ct != t)
        assert s.check() == z3.unsat
    del c
    gc.collect()


def test_many_gives_each_term_its_canonical_form():
    """`many` canonicalizes terms together (shared subterms simplified once): each result
    means its term, the Or/Eq orders still meet, and different terms stay apart."""
    x, y, z = z3.BitVecs("x y z", 8)
    shared = (x + y) * z
    terms = [z3.If(z3.Or(x == y, shared == 3), shared, x), z3.If(z3.Or(3 == shared, y == x), shared, x),
             shared + 1, shared - 1, z3.Concat(x, shared)]
    forms = Canonicalizer().many(terms)
    assert len(forms) == len(terms)
    for term, form in zip(terms, forms):
        s = z3.Solver()
        s.add(form != term)
        assert s.check() == z3.unsat
    assert z3.eq(forms[0], forms[1])
    assert not z3.eq(forms[2], forms[3])
    alone = Canonicalizer()
    assert all(z3.eq(f, alone(t)) for f, t in zip(forms, terms))
    assert Canonicalizer().many([]) == []


def test_abstract_constants_are_known_not_to_be_special():
    """The abstract model's constants have symbolic magnitudes that its preconditions keep
    off 0, inf and NaN (`AbstractFloats.constant_atoms`): with those atoms as facts, a
    constant's special-value tests fold (zero graph 6 kept them on both sides, arranged
    otherwise), each form means its term under the preconditions, and a variable's tests,
    which nothing decides, stay."""
    from tvtv.absfp.assumptions import false_atom_facts
    m = AbstractModel(6, ["float32"])
    d = m.domain("float32")
    x, y = z3.BitVecs("x y", 7)
    half, one = d.const(0.5), d.const(1.0)
    terms = [z3.If(z3.Or(d.is_nan(half), d.is_inf(one)), x, y), z3.If(d.is_zero(half), x, y),
             d.add(half, one), z3.If(d.is_nan(x), x, y)]
    facts = false_atom_facts(m.false_atoms())
    forms = [Canonicalizer(facts)(t) for t in terms]
    assert z3.eq(forms[0], y) and z3.eq(forms[1], y)
    assert "absfp_float32_c" in forms[2].sexpr()
    assert not z3.eq(forms[3], y) and not z3.eq(forms[3], x)          # x's tests stay
    assert not z3.eq(Canonicalizer()(terms[0]), y)                  # without the facts, too
    for term, form in zip(terms, forms):
        s = z3.Solver()
        s.add(*m.preconditions(), form != term)
        assert s.check() == z3.unsat


def test_pairs_meet_exactly_where_their_canonical_forms_do():
    """`pairs` walks only the pairs that simplifying alone leaves apart: each pair is one term
    exactly when `many`'s forms of it are, each form means its term, and a pair only the walk
    joins (Or/Eq argument orders) or none joins (different terms) is decided as by `many`."""
    from tvm import relax
    x, y, z = z3.BitVecs("x y z", 8)
    shared = (x + y) * z
    xs = [shared + 0, z3.If(z3.Or(x == y, shared == 3), shared, x), shared + 1]
    ys = [shared, z3.If(z3.Or(3 == shared, y == x), shared, x), shared - 1]
    elems = legalized_elements(_single(relax.op.nn.softmax, [(2, 3)]))
    xs, ys = xs + elems[0::2], ys + elems[1::2]
    forms = Canonicalizer().pairs(xs, ys)
    many = Canonicalizer().many(xs + ys)
    n = len(xs)
    assert [z3.eq(a, b) for a, b in forms] == [z3.eq(many[k], many[n + k]) for k in range(n)]
    assert [z3.eq(a, b) for a, b in forms[:3]] == [True, True, False]
    for term, form in zip(xs[:3] + ys[:3], [f for f, _ in forms[:3]] + [g for _, g in forms[:3]]):
        s = z3.Solver()
        s.add(form != term)
        assert s.check() == z3.unsat
    assert Canonicalizer().pairs([], []) == []


def _finite_facts(xs, nan: bool = True, inf: bool = True):
    """`atom_facts`-style premises: "x is NaN" / "x is ±inf" false for each x."""
    facts = {}
    for x in xs:
        for atom, wanted in ((z3.fpIsNaN(x), nan), (z3.fpIsInf(x), inf)):
            if wanted:
                facts[atom.get_id()] = (atom, z3.BoolVal(False))
    return facts


def _means_the_same(c, facts, terms) -> None:
    for t in terms:
        s = z3.Solver()
        s.add(*[z3.Not(atom) for atom, _ in facts.values()], c(t) != t)
        assert s.check() == z3.unsat, t


def test_float_classes_decide_max_from_lowest_finite():
    """TVM's max loop from -FLT_MAX and the specification's max from -inf meet on finite
    inputs (IEEE 754: a < -FLT_MAX only for -inf; NaN compares false), also through ite,
    negation and absolute value, and through min from +FLT_MAX; every form means its term
    under the premises."""
    F = z3.Float32()
    xs = [z3.FP(f"x{k}", F) for k in range(3)]
    low, high = z3.FPVal(-3.4028234663852886e38, F), z3.FPVal(3.4028234663852886e38, F)
    ninf = z3.fpMinusInfinity(F)

    def tvm_max(a, b):          # TIR max as measured on the VM: ite(b < a, a, b)
        return z3.If(z3.fpLT(b, a), a, b)

    def tvm_min(a, b):
        return z3.If(z3.fpLT(a, b), a, b)
    loop = low
    for x in xs:
        loop = tvm_max(loop, x)
    padded = tvm_max(tvm_max(loop, low), low)     # a window's padding: max(acc, -FLT_MAX)
    spec = tvm_max(tvm_max(xs[0], xs[1]), xs[2])
    # the specification's guard: a NaN or -inf maximum stays -inf
    guarded = z3.If(z3.And(z3.Not(spec == ninf), z3.Not(spec == z3.fpNaN(F))), spec, ninf)
    neg = tvm_max(low, -z3.If(z3.fpLT(xs[0], xs[1]), xs[0], xs[1]))
    absolute = tvm_max(low, z3.fpAbs(xs[2]))
    lowest = tvm_min(tvm_min(high, xs[0]), xs[1])
    facts = _finite_facts(xs)
    c = Canonicalizer(facts)
    assert z3.eq(c(loop), c(spec))
    assert z3.eq(c(padded), c(spec))
    assert z3.eq(c(guarded), c(spec))
    assert z3.eq(c(neg), c(-z3.If(z3.fpLT(xs[0], xs[1]), xs[0], xs[1])))
    assert z3.eq(c(absolute), c(z3.fpAbs(xs[2])))
    assert z3.eq(c(lowest), c(tvm_min(xs[0], xs[1])))
    _means_the_same(c, facts, [loop, padded, spec, guarded, neg, absolute, lowest])


def test_float_classes_keep_what_premises_do_not_decide():
    """Twins: without no-inf the loop from -FLT_MAX differs at -inf; a sum may overflow to
    -inf, so max(-FLT_MAX, x + y) is kept; a special numeral keeps its own class."""
    F = z3.Float32()
    x, y = z3.FP("x", F), z3.FP("y", F)
    low, high = z3.FPVal(-3.4028234663852886e38, F), z3.FPVal(3.4028234663852886e38, F)

    def tvm_max(a, b):
        return z3.If(z3.fpLT(b, a), a, b)
    only_nan = _finite_facts([x, y], inf=False)
    c = Canonicalizer(only_nan)
    assert not z3.eq(c(tvm_max(low, x)), c(x))
    assert not z3.eq(c(tvm_max(x, low)), c(x))
    _means_the_same(c, only_nan, [tvm_max(low, x), tvm_max(x, low), z3.fpIsInf(x),
                                  x == z3.fpMinusInfinity(F)])
    facts = _finite_facts([x, y])
    c = Canonicalizer(facts)
    total = z3.fpAdd(z3.RNE(), x, y)
    assert not z3.eq(c(tvm_max(low, total)), c(total))
    assert z3.is_false(c(z3.fpIsNaN(x)))
    for special, infinite in ((z3.fpMinusInfinity(F), True), (z3.fpPlusInfinity(F), True),
                              (z3.fpNaN(F), False)):
        picked = z3.If(z3.fpLT(x, y), x, special)
        assert not z3.is_false(c(z3.fpIsInf(picked) if infinite else z3.fpIsNaN(picked)))
        forms = [picked, -picked, z3.fpAbs(picked), z3.fpAbs(-picked)]
        _means_the_same(c, facts, [z3.fpIsInf(picked), z3.fpIsNaN(picked)]
                        + [tvm_max(low, f) for f in forms] + [tvm_max(f, low) for f in forms]
                        + [z3.If(z3.fpLT(f, high), f, high) for f in forms])


def test_ieee_multiplication_and_division_by_one_fold():
    """`x * 1`, `1 * x` and `x / 1` are x for every IEEE value (NaN, ±inf, ±0 included) and
    become x's canonical form; the twins keep their terms: division by 2.0, `1 / x`, and
    multiplication by a value that is not the numeral 1.0."""
    x, y = z3.FPs("x y", z3.Float32())
    rm = z3.RNE()
    one, two = z3.FPVal(1.0, z3.Float32()), z3.FPVal(2.0, z3.Float32())
    c = Canonicalizer()
    folded = [z3.fpMul(rm, x, one), z3.fpMul(rm, one, x), z3.fpDiv(rm, x, one),
              z3.fpDiv(z3.RTZ(), z3.fpAdd(rm, x, y), one)]
    for term, want in zip(folded, [x, x, x, z3.fpAdd(rm, x, y)]):
        form = c(term)
        assert z3.eq(form, c(want)), term
        s = z3.Solver()
        s.add(z3.Not(term == form))        # Z3's = on floats: the same value, NaN = NaN
        assert s.check() == z3.unsat, term
    for term in (z3.fpDiv(rm, x, two), z3.fpDiv(rm, one, x), z3.fpMul(rm, x, y),
                 z3.fpMul(rm, x, z3.FPVal(-1.0, z3.Float32()))):
        assert not z3.eq(c(term), c(x)), term


def test_self_difference_meets_the_zero_tvm_folds_it_to():
    """TVM's simplifier folds a fused `x - x` to the numeral 0 (docs/findings.md). Under
    no-nan and no-inf the models' `sub(x, x)` (`self_difference`) becomes that +0 in
    canonical form, so a FuseTIR check needs no solver for it (measured: a log_softmax of
    `x - x` chain, 100 queries and 200 s before, 1 query and 3 s after); the general form
    x + (-x), which means the same, does not meet it, and without the facts neither does
    sub(x, x). Each form keeps its term's meaning under the premises."""
    from tvtv.absfp import assumptions
    from tvtv.absfp.ieee import IEEEModel
    from tvtv.encode.tensor import Tensor
    for model in (AbstractModel(8), IEEEModel()):
        dom = model.domain("float32")
        x = dom.var("x")
        facts = assumptions.atom_facts(("no-nan", "no-inf"), model, [Tensor.scalar(x, "float32")])
        assert facts
        zero = Canonicalizer()(dom.const(0.0))
        c = Canonicalizer(facts)
        short = dom.sub(x, x)
        if isinstance(model, IEEEModel):
            # the IEEE model's add builds x + (-x) as the short form (the specification's
            # `x - max` over one element, tests/test_numeral_cases.py); the general form is
            # the plain sum
            assert z3.eq(dom.add(x, dom.neg(x)), short)
            general = z3.fpAdd(z3.RNE(), x, z3.fpNeg(x))
        else:
            general = dom.add(x, dom.neg(x))
        assert z3.eq(c(short), zero), model
        assert not z3.eq(Canonicalizer(facts)(general), zero), model
        assert not z3.eq(Canonicalizer()(short), zero), model
        for t in (short, general):
            s = z3.Solver()
            s.add(*model.preconditions(), *[z3.Not(a) for a, _ in facts.values()], c(t) != t)
            assert s.check() == z3.unsat, (model, t)


def _clamp(p, sort):
    """Relax dequantize's clamp to the finite range (tvtv/encode/ops/quantization.py)."""
    eb, sb = sort.ebits(), sort.sbits()
    top = z3.fpFP(z3.BitVecVal(0, 1), z3.BitVecVal(2 ** eb - 2, eb), z3.BitVecVal(2 ** (sb - 1) - 1, sb - 1))
    low = z3.fpNeg(top)
    return z3.If(z3.fpLT(p, low), low, z3.If(z3.fpLT(top, p), top, p))


def test_bounded_products_decide_a_clamp():
    """Integers converted to floats are finite with a bound from their width, and sums and
    products of bounded finite terms stay finite while the bound fits the format (rounding is
    monotone): the clamp after dequantize's `float32(x - zp) * float32(scale_f16)` is the
    product itself when the scale is not inf (measured: the legalized dequantize's 6
    elements, 7-12 s and sometimes over 20 s in the solver, are one term now). NaN stays
    possible (a NaN scale), and every form means its term under the premises."""
    F16, F32 = z3.Float16(), z3.Float32()
    rm = z3.RNE()
    d = z3.BitVec("d", 32)
    s, t = z3.FP("s", F16), z3.FP("t", F16)
    u8 = z3.BitVec("u8", 8)
    facts = _finite_facts([s, t], nan=False)
    c = Canonicalizer(facts)
    product = z3.fpMul(rm, z3.fpSignedToFP(rm, d, F32), z3.fpToFP(rm, s, F32))
    assert z3.eq(c(_clamp(product, F32)), c(product))
    # an unsigned byte plus a float16 in float32, times -2.5: still far from FLT_MAX
    mixed = z3.fpMul(rm, z3.fpAdd(rm, z3.fpUnsignedToFP(rm, u8, F32), z3.fpToFP(rm, t, F32)),
                     z3.FPVal(-2.5, F32))
    assert z3.eq(c(_clamp(mixed, F32)), c(mixed))
    assert not z3.is_false(c(z3.fpIsNaN(product)))        # NaN * x is NaN
    assert z3.is_false(c(z3.fpIsInf(product)))
    _means_the_same(c, facts, [_clamp(product, F32), _clamp(mixed, F32), z3.fpIsInf(product),
                               z3.fpIsInf(mixed)])


def test_bounds_that_may_overflow_keep_the_clamp():
    """Twins: where the bound passes the format's largest finite value the clamp stays, and
    the solver shows the overflow: int16 + int16 in float16 reaches -65536 (past 65504,
    rounds to -inf), int64 to float16, float16 * float16 in float16, a float32 leaf times 2,
    and a scale that may be inf (no fact for it)."""
    F16, F32 = z3.Float16(), z3.Float32()
    rm = z3.RNE()
    a, b = z3.BitVecs("a b", 16)
    w = z3.BitVec("w", 64)
    s, t = z3.FP("s", F16), z3.FP("t", F16)
    x = z3.FP("x", F32)
    facts = _finite_facts([s, t, x])
    c = Canonicalizer(facts)
    overflowing = [
        z3.fpAdd(rm, z3.fpSignedToFP(rm, a, F16), z3.fpSignedToFP(rm, b, F16)),
        z3.fpSignedToFP(rm, w, F16),
        z3.fpMul(rm, s, t),
        z3.fpMul(rm, x, z3.FPVal(2.0, F32)),
        z3.fpMul(rm, z3.fpSignedToFP(rm, a, F16), z3.FP("free", F16)),
    ]
    for p in overflowing:
        sort = p.sort()
        assert not z3.eq(c(_clamp(p, sort)), c(p)), p
        assert not z3.is_false(c(z3.fpIsInf(p))), p
        q = z3.Solver()
        q.add(*[z3.Not(atom) for atom, _ in facts.values()], z3.fpIsInf(p))
        assert q.check() == z3.sat, p
    _means_the_same(c, facts, [_clamp(p, p.sort()) for p in overflowing])
    # a sum of int8 values in float16 fits: decided
    small = z3.fpAdd(rm, z3.fpSignedToFP(rm, z3.Extract(7, 0, a), F16),
                     z3.fpSignedToFP(rm, z3.Extract(7, 0, b), F16))
    assert z3.is_false(c(z3.fpIsInf(small)))
    _means_the_same(c, facts, [z3.fpIsInf(small), _clamp(small, F16)])


def test_live_values_premised_finite_make_their_self_difference_zero():
    """Under per-operation, on runs without NaN/inf inside, a computed value's x - x is +0:
    `live_facts` gives the canonicalizer that premise for the live tensors, simplified with
    the terms, where the value's own atoms spread over its case splits (the abstract model's
    product). The forms mean their terms under the run facts (Z3),
    and without per-operation, or for a value that is not live, nothing is decided."""
    from tvtv.absfp import assumptions
    from tvtv.absfp.ieee import IEEEModel
    from tvtv.encode.tensor import Tensor
    assume = ("no-nan", "no-inf", "per-operation")
    for model in (AbstractModel(8), IEEEModel()):
        dom = model.domain("float32")
        x, y = dom.var("x"), dom.var("y")
        v, w = dom.mul(x, y), dom.add(x, y)
        live = [Tensor.scalar(v, "float32")]
        facts = assumptions.live_facts(assume, model, live)
        assert facts, model
        zero = Canonicalizer()(dom.const(0.0))
        c = Canonicalizer({}, facts)
        assert z3.eq(c(dom.sub(v, v)), zero), model
        clipped = dom.minimum(dom.maximum(dom.sub(v, v), dom.const(-1.0)), dom.const(1.0))
        assert not z3.eq(c(dom.sub(w, w)), zero), model      # w is not live
        assert [z3.eq(f, zero) for f in c.many([dom.sub(w, w), dom.sub(v, v)])] == [False, True]
        premises = assumptions.run_facts(assume, model, live)
        for t in (dom.sub(v, v), dom.is_nan(v), dom.sub(w, w), dom.add(dom.sub(v, v), w),
                  clipped):
            s = z3.Solver()
            s.add(*model.preconditions(), *premises, c(t) != t)
            assert s.check() == z3.unsat, (model, t)
        assert not assumptions.live_facts(("no-nan", "no-inf"), model, live)
        inputs = [Tensor.scalar(x, "float32"), Tensor.scalar(y, "float32")]
        assert not z3.eq(Canonicalizer(assumptions.atom_facts(assume, model, inputs))(dom.sub(v, v)),
                         zero), model       # finite inputs alone: x * y may overflow
        assert len(assumptions.live_facts(("no-nan", "per-operation"), model, live)) == 1



def test_a_premised_disjunction_flattened_into_another_is_decided_by_its_disjuncts(monkeypatch):
    """A live value's "is NaN" spreads over its case splits as a disjunction, and Z3 flattens
    it into a disjunction around it: `or(is_nan(v), r)` is no term holding the premise's form
    (a float16 cast of `v - v` tests it beside its own cases: zero seed-5 graph 18). The
    premise "that disjunction is false" makes each disjunct false, so the term becomes r;
    with the premise's form alone as a fact, it stays. The form means the term under the run
    facts (Z3)."""
    from tvtv.absfp import assumptions
    from tvtv.absfp.ieee import IEEEModel
    from tvtv.encode import canonical
    from tvtv.encode.tensor import Tensor
    assume = ("no-nan", "no-inf", "per-operation")
    r = z3.Bool("r")
    for model in (AbstractModel(8), IEEEModel()):
        dom = model.domain("float32")
        x, y = dom.var("x"), dom.var("y")
        v = dom.mul(x, y)
        live = [Tensor.scalar(v, "float32")]
        facts = assumptions.live_facts(assume, model, live)
        term = zf.Or(dom.is_nan(v), r)
        # the abstract product's "is NaN" spreads over its case splits (IEEE's is one atom)
        spread = z3.is_or(z3.simplify(dom.is_nan(v)))
        assert spread == isinstance(model, AbstractModel)
        assert z3.eq(Canonicalizer({}, facts)(term), r), model
        premises = assumptions.run_facts(assume, model, live)
        s = z3.Solver()
        s.add(*model.preconditions(), *premises, Canonicalizer({}, facts)(term) != term)
        assert s.check() == z3.unsat, model
        with monkeypatch.context() as m:
            def form_only(form, value, facts):     # the premise's form as its only fact
                if z3.is_app(form) and not (z3.is_true(form) or z3.is_false(form)):
                    facts[form.get_id()] = (form, value)
            m.setattr(canonical, "_implied", form_only)
            assert z3.eq(Canonicalizer({}, facts)(term), r) != spread, model
