"""Solver back ends: Z3 (the default), cvc5, or both with a cross-check.

The encoders build Z3 terms. cvc5 gets the same query as SMT-LIB 2 text (Z3's printer) read by
cvc5's own parser. Two things need translating: Z3's arrays built as `lambda`s, which SMT-LIB
arrays cannot be in cvc5, become fresh array constants with a universally quantified
definition (`forall i. A[i] = body(i)`, after beta-reducing selects of lambdas); and symbols
Z3 names with `!` are quoted. A lambda that refers to an enclosing lambda's index cannot be
lifted that way and makes the cvc5 query unsupported.

cvc5 decides; when it says *sat*, the counterexample is read from Z3's model of the same
query (Z3 is asked with the same timeout; if it cannot find one the query stays undecided).
`both` asks both solvers and records a disagreement (one says sat, the other unsat), which
the verdict reports instead of trusting either, as mlir-tv's "inconsistent output" does.
`z3+cvc5` asks cvc5 briefly before Z3 about the IEEE model's queries (`Query.cvc5_first`, set
by `tvtv.refinement`): cvc5's FP bit-blasting proves some that Z3 does not, and only its
unsat is taken; anything else goes on to Z3.

Z3 itself is asked in stages (`Z3_STRATEGIES`, `z3_slices`): its default solver first, briefly,
then its `qfufbv` tactic, then the default solver again with the time left. Each stage is a
complete Z3 solver on the same facts, so the first sat or unsat answer is the query's answer.
A query may name its own order (`Query.strategies`): a check asks its element queries (and,
apart, its group queries) first with the strategy that answered the last one of that kind a
later stage decided (`tvtv.refinement._check`).

Z3's memory is bounded per process (`limit_z3_memory`, set when this module is imported): a
stage that would hold more gives up ("max. memory exceeded") and the query goes on to the next
stage or ends undecided, instead of the process growing until it is killed.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Sequence

import z3

from tvtv import machine
from tvtv import z3fast as zf
from tvtv.errors import Unsupported

# "z3+cvc5": Z3, and in the IEEE model cvc5 briefly before it (`Query.cvc5_first`)
SOLVERS = ("z3", "cvc5", "both", "z3+cvc5")
PORTFOLIO = "z3+cvc5"

# Z3's memory per process, in MiB (`limit_z3_memory`). Z3's `memory_high_watermark_mb` makes
# a check whose allocations pass the mark give up with reason "max. memory exceeded" (its
# `memory_max_size` aborts the whole process instead). Measured: a qfufbv query of a product
# of six 1,024-bit vectors held 7.3 GiB at its 30 s timeout, and gave up after 0.6 s at
# 264 MiB with a 200 MiB mark; zero graph 8 of seed 0 without op-rounding grew past 15 GiB
# in 3 minutes (its worker would be killed and the case lost), and with a 3,000 MiB mark
# stayed under 3.3 GiB and was decided `unknown` in 107 s.
Z3_MEMORY_ENV = "TVTV_Z3_MEMORY_MB"
MEMORY_EXCEEDED = "max. memory exceeded"


def z3_memory_mb(share: int | None = None) -> int:
    """The bound on Z3's memory in this process, in MiB: `TVTV_Z3_MEMORY_MB` when set, else
    `share` bytes (a worker's part of its limit), else a third of the machine's memory (at
    least 2 GiB): two workers and the VM children they start fit."""
    env = os.environ.get(Z3_MEMORY_ENV)
    if env:
        return int(env)
    if share is not None:
        return share >> 20
    return max(2048, (machine.memory_bytes() // 3) >> 20)


def limit_z3_memory(mb: int | None = None) -> None:
    """Bound the memory Z3 holds in this process at `mb` MiB (default `z3_memory_mb()`): a
    solver stage past it answers unknown ("max. memory exceeded")."""
    z3.set_param("memory_high_watermark_mb", mb if mb is not None else z3_memory_mb())


limit_z3_memory()

# Z3's strategies, tried in turn on one query: a portfolio in time, not in parallel (two cores,
# and checks already run two jobs). Neither is better on every query tvtv asks:
# - "smt", Z3's default solver, decides nearly all of them fast: on the zero pipeline's 30
#   seed-0 graphs, 3,134 queries took 28 s in all and one took over 1 s. On one zero graph's
#   symbolic-index query it took 0.2 s where the tactic timed out after 60 s.
# - "qfufbv", Z3's tactic for quantifier-free bit-vectors with uninterpreted functions
#   (simplification, Ackermann reduction of the functions, bit-blasting to SAT), decides the
#   element queries relu's NaN difference leaves at a matmul's sum of products
#   (tests/test_lemmas.py's `Graph`) in 0.9-2.1 s each, where the default took 4-18 s.
# `z3_slices` gives the first strategy FIRST_SLICE seconds, the second half of what is left
# (at least SECOND_SLICE), and the first again the rest. `bench/z3_strategies.py` measures it.
Z3_STRATEGIES: tuple[str, ...] = ("smt", "qfufbv")
FIRST_SLICE = 1.0
SECOND_SLICE = 2.0
# a stage shorter than this is not started
MIN_SLICE = 0.05
# cvc5's time on a query before Z3 (`Query.cvc5_first`, the "z3+cvc5" solver): it proves the
# IEEE queries it helps with in seconds (FastMathTransform's fast_softmax over one element:
# 1-2 s each). Not the default: FastMathTransform's Isra seed-23 sweep (8 graphs, `--jobs 2
# --case-timeout 120`) took 1.30x the wall time so (173 s against 133 s; 1.57x with cvc5 after
# Z3 instead, for as long as Z3's query), every verdict the same (2026-12-05)
CVC5_FIRST_SECONDS = 10.0


def z3_slices(timeout: float, strategies: Sequence[str] = ()) -> list[tuple[str, float]]:
    """The stages of a Z3 query of `timeout` seconds: (strategy, seconds) in order, if each
    stage before used all of its time."""
    strategies = tuple(strategies) or Z3_STRATEGIES
    if len(strategies) == 1 or timeout <= FIRST_SLICE + MIN_SLICE:
        return [(strategies[0], timeout)]
    first = FIRST_SLICE
    left = timeout - first
    second = min(left, max(SECOND_SLICE, left / 2))
    stages = [(strategies[0], first), (strategies[1], second)]
    if left - second >= MIN_SLICE:
        stages.append((strategies[0], left - second))
    return stages


def _z3_solver(strategy: str) -> z3.Solver:
    """A fresh Z3 solver for `strategy`: "smt" (the default solver) or a tactic's name."""
    return z3.Solver() if strategy == "smt" else z3.Tactic(strategy).solver()


class Query:
    """One satisfiability query: `add` facts, `check`, then `model` (a Z3 model) if sat."""

    def __init__(self, backend: str = "z3", timeout: float = 30.0,
                 strategies: Sequence[str] = (), cvc5_first: bool = False,
                 deadline: float | None = None) -> None:
        if backend not in SOLVERS or backend == PORTFOLIO:   # (`cvc5_first` asks for it)
            raise ValueError(f"unknown solver {backend!r} (choose from {', '.join(SOLVERS)})")
        self.backend = backend
        self.timeout = timeout
        # Z3's strategies in the order `z3_slices` tries them (empty: `Z3_STRATEGIES`)
        self.strategies = tuple(strategies)
        self.facts: list[z3.BoolRef] = []
        self.answers: dict[str, str] = {}
        self.disagreement: str | None = None
        self._reason = ""
        self._answered: z3.Solver | None = None   # the Z3 stage that decided, for its model
        self.strategy = ""                         # ... and its strategy
        # with backend "z3": ask cvc5 first, for at most CVC5_FIRST_SECONDS and not past
        # `deadline` (a perf_counter time); only its unsat is taken (a sat answer has no Z3
        # model to decode), else Z3 is asked. `decided_by` is "cvc5" when it decided.
        self.cvc5_first = cvc5_first
        self.deadline = deadline
        self.decided_by = ""

    def add(self, *facts: z3.BoolRef) -> None:
        self.facts.extend(facts)

    def reason_unknown(self) -> str:
        return self._reason

    def sexpr(self) -> str:
        """The facts as SMT-LIB text."""
        q = z3.Solver()
        q.add(*self.facts)
        return q.sexpr()

    def model(self) -> z3.ModelRef:
        if self._answered is None:
            raise z3.Z3Exception("no Z3 model: the query was not found satisfiable by Z3")
        return self._answered.model()

    def _check_z3(self) -> tuple[z3.CheckSatResult, str]:
        """Z3's answer in stages (`z3_slices`), and the last stage's reason when unknown."""
        deadline = time.perf_counter() + self.timeout
        solvers: dict[str, z3.Solver] = {}
        reason = ""
        out_of_memory = ""   # a stage that gave up on memory is named in the reason
        for strategy, seconds in z3_slices(self.timeout, self.strategies):
            seconds = min(seconds, deadline - time.perf_counter())
            if seconds < MIN_SLICE and solvers:
                break
            if strategy not in solvers:      # the default solver is asked again as it is
                solvers[strategy] = _z3_solver(strategy)
                solvers[strategy].add(*self.facts)
            q = solvers[strategy]
            q.set("timeout", max(1, int(seconds * 1000)))
            r = q.check()
            if r != z3.unknown:
                self._answered, self.strategy = q, strategy
                return r, ""
            reason = q.reason_unknown()
            if reason == MEMORY_EXCEEDED:
                out_of_memory = f"{strategy}: {MEMORY_EXCEEDED} ({Z3_MEMORY_ENV})"
        if out_of_memory:
            reason = out_of_memory if reason == MEMORY_EXCEEDED else f"{reason}; {out_of_memory}"
        return z3.unknown, reason

    def check(self) -> z3.CheckSatResult:
        if self.backend == "z3":
            if self.cvc5_first and self._check_cvc5_first() == z3.unsat:
                return z3.unsat
            r, self._reason = self._check_z3()
            self.answers["z3"] = str(r)
            if r == z3.unknown and "cvc5" in self.answers:
                self._reason += f"; cvc5 before it: {self.answers['cvc5']}"
            return r
        c, why = cvc5_answer(self.facts, self.timeout)
        self.answers["cvc5"] = str(c)
        if self.backend == "cvc5" and c != z3.sat:
            if c == z3.unknown:
                self._reason = why
            return c
        z, z_reason = self._check_z3()    # cvc5 said sat (a model is needed), or both are asked
        self.answers["z3"] = str(z)
        if z != z3.unknown and c != z3.unknown and z != c:
            self.disagreement = f"z3 says {z}, cvc5 says {c}"
            self._reason = "solvers disagree: " + self.disagreement
            return z3.unknown
        if z == z3.unknown and c == z3.sat:
            self._reason = "cvc5 found the query satisfiable but z3 gave no model to decode"
            return z3.unknown
        if z == z3.unknown and c == z3.unknown:
            self._reason = f"z3: {z_reason}; {why}"
        return z if z != z3.unknown else c

    def _check_cvc5_first(self) -> z3.CheckSatResult:
        """cvc5's answer before Z3's (`cvc5_first`); not asked (unknown) past the deadline."""
        seconds = min(self.timeout, CVC5_FIRST_SECONDS)
        if self.deadline is not None:
            seconds = min(seconds, self.deadline - time.perf_counter())
        if seconds < MIN_SLICE:
            return z3.unknown
        c = cvc5_answer(self.facts, seconds)[0]
        self.answers["cvc5"] = str(c)
        if c == z3.unsat:
            self.decided_by = "cvc5"
        return c


# ------------------------------------------------------------------------------------------------
# translation to cvc5
# ------------------------------------------------------------------------------------------------
def _open_vars(e: z3.ExprRef, depth: int = 0) -> bool:
    """Does `e` mention a de Bruijn variable bound outside it (index ≥ depth)?"""
    seen: set[tuple[int, int]] = set()
    stack = [(e, depth)]
    while stack:
        t, d = stack.pop()
        key = (t.get_id(), d)
        if key in seen:
            continue
        seen.add(key)
        if z3.is_var(t):
            if z3.get_var_index(t) >= d:
                return True
        elif z3.is_quantifier(t):
            stack.append((t.body(), d + t.num_vars()))
        elif z3.is_app(t):
            stack.extend((c, d) for c in t.children())
    return False


def _find_lambda(terms: Sequence[z3.ExprRef]) -> z3.QuantifierRef | None:
    """A closed lambda occurring in `terms` (innermost first), or None."""
    seen: set[int] = set()
    stack = list(terms)
    found: z3.QuantifierRef | None = None
    while stack:
        t = stack.pop()
        if t.get_id() in seen:
            continue
        seen.add(t.get_id())
        if z3.is_quantifier(t):
            if t.is_lambda() and not _open_vars(t):
                found = t
            stack.append(t.body())
        elif z3.is_app(t):
            stack.extend(t.children())
    return found


def lift_lambdas(facts: Sequence[z3.BoolRef], limit: int = 2000) -> list[z3.BoolRef]:
    """Equisatisfiable facts without lambda terms: each closed lambda becomes a fresh array
    with a quantified definition."""
    facts = zf.simplify_all(facts)
    defs: list[z3.BoolRef] = []
    for k in range(limit):
        lam = _find_lambda(facts + defs)
        if lam is None:
            return facts + defs
        arr = z3.Const(f"tvtv_lifted_{k}", lam.sort())
        dom = lam.sort().domain()
        i = z3.Const(f"tvtv_lifted_{k}_i", dom)
        body = z3.simplify(zf.Select(lam, i))
        facts = zf.substitute_all(facts, [(lam, arr)])
        defs = zf.substitute_all(defs, [(lam, arr)])
        defs.append(z3.ForAll([i], zf.Select(arr, i) == body))
    raise Unsupported(f"more than {limit} lambda terms to lift")


_BANG = re.compile(r"(?<![|\w#?])([A-Za-z_][\w.\-]*![\w!.\-]*)")
# Z3's simplifier writes bit-vector division and remainder as its internal `bvudiv_i`,
# `bvurem_i`, `bvsdiv_i`, `bvsrem_i` and `bvsmod_i` (index arithmetic: a floor_mod by a
# constant), which cvc5's parser does not know: every FuseTIR query of a pooled or reshaped
# graph failed to parse under `--solver cvc5`. Under Z3's default `hi_div0` they mean the
# SMT-LIB operators, division by zero included (Z3 proves each equal to its standard twin
# for all operands: tests/test_solvers_cvc5.py), so the standard names are written instead.
_INTERNAL_DIVISION = re.compile(r"\((bv[us]div|bv[us]rem|bvsmod)_i(?=[\s)])")


def to_smtlib(facts: Sequence[z3.BoolRef]) -> str:
    """The query as SMT-LIB 2 text that cvc5's parser reads."""
    s = z3.Solver()
    s.add(*lift_lambdas(facts))
    text = s.to_smt2()
    if "(lambda" in text:
        raise Unsupported("a lambda refers to an enclosing lambda's index")
    text = _INTERNAL_DIVISION.sub(r"(\1", text)
    return "(set-logic ALL)\n" + _BANG.sub(r"|\1|", text)


# how an undecided query's reason starts when cvc5 rejected it (`cvc5_answer`)
CVC5_ERROR = "cvc5 rejected the query: "
# ... and when tvtv could not write it in SMT-LIB for cvc5 (`to_smtlib`'s Unsupported)
CVC5_UNWRITABLE = "tvtv cannot write the query for cvc5: "
# reasons of an undecided answer that reached no time limit: a verdict does not call them
# timeouts
NOT_A_TIMEOUT = (CVC5_ERROR, CVC5_UNWRITABLE)


def cvc5_answer(facts: Sequence[z3.BoolRef], timeout: float) -> tuple[z3.CheckSatResult, str]:
    """cvc5's answer to the conjunction of `facts`, and why it is unknown (its timeout, a
    query tvtv cannot translate, or cvc5's own error message); in this process: a process
    per query would cost its start (about 0.2 s) each time. cvc5's own limit held on the
    checks' queries measured (ten FuseTIR seed-0 graphs under `--solver cvc5`: at most
    0.2 s over it), unlike on a pre-image's (`cvc5_text_bits`)."""
    from tvtv import cvc5_child

    try:
        text = to_smtlib(facts)
    except Unsupported as err:
        return z3.unknown, CVC5_UNWRITABLE + str(err)
    answer = cvc5_child.run(text, int(timeout * 1000))[0]
    if answer in ("sat", "unsat"):
        return (z3.sat if answer == "sat" else z3.unsat), ""
    if answer.startswith("(error"):
        return z3.unknown, CVC5_ERROR + " ".join(answer.split())[:200]
    if answer == "":
        return z3.unknown, CVC5_ERROR + "no answer"
    if "TIMEOUT" in answer:          # cvc5 prints "unknown (TIMEOUT)" at its limit
        return z3.unknown, f"cvc5: timeout after {timeout:g} s"
    return z3.unknown, f"cvc5: {answer}"


def z3_bits(facts: Sequence[z3.BoolRef], timeout: float) -> dict[str, int] | None:
    """`cvc5_bits`, asked of Z3 (in this process; its limit holds): the bits of its model's
    value of each float, bit-vector or Boolean constant (by name) when it finds the
    conjunction of `facts` satisfiable within `timeout` seconds; None otherwise."""
    s = z3.Solver()
    s.set("timeout", max(1, int(timeout * 1000)))
    s.add(*facts)
    if s.check() != z3.sat:
        return None
    model = s.model()
    bits: dict[str, int] = {}
    for d in model.decls():
        if d.arity() != 0:
            continue
        v = model[d]
        if z3.is_fp_value(v):
            v = z3.simplify(z3.fpToIEEEBV(v))
        if z3.is_bv_value(v):
            bits[d.name()] = v.as_long()
        elif z3.is_true(v) or z3.is_false(v):
            bits[d.name()] = int(z3.is_true(v))
    return bits


# seconds a cvc5 process (`cvc5_child`) gets beyond its own limit before it is killed (its
# start and import of cvc5 take about 0.2 s)
CVC5_CHILD_GRACE = 2.0


def cvc5_bits(facts: Sequence[z3.BoolRef], timeout: float) -> dict[str, int] | None:
    """When cvc5 finds the conjunction of `facts` satisfiable within `timeout` seconds: the
    bits of its model's value of each float or bit-vector constant (by name); None otherwise.
    (cvc5 decides some FP queries in seconds where Z3 times out after a minute:
    `tvtv.preimage`.) Run in a process of its own, killed at the deadline: cvc5's own limit
    was overrun five times over (`tvtv/cvc5_child.py`)."""
    try:
        text = to_smtlib(facts)
    except Unsupported:
        return None
    return cvc5_text_bits(text, timeout)


def cvc5_text_bits(text: str, timeout: float) -> dict[str, int] | None:
    """`cvc5_bits` of an SMT-LIB query's text: cvc5 in a process of its own
    (`tvtv/cvc5_child.py`), killed `CVC5_CHILD_GRACE` seconds after `timeout`."""
    child = Path(__file__).with_name("cvc5_child.py")
    try:
        run = subprocess.run([sys.executable, "-I", str(child)],
                             input=f"{max(1, int(timeout * 1000))}\n{text}", text=True,
                             capture_output=True, timeout=timeout + CVC5_CHILD_GRACE)
        out = json.loads(run.stdout) if run.returncode == 0 else None
    except (subprocess.TimeoutExpired, json.JSONDecodeError, OSError):
        return None
    if out is None or out.get("answer") != "sat":
        return None
    return {str(k): int(v) for k, v in out["bits"].items()}
