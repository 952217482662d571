"""cvc5 on one SMT-LIB query in a process of its own, so that its time limit holds.

cvc5's `tlimit-per` is only checked at its resource checkpoints, and some floating-point
queries spend far longer between them: a pre-image query of zero seed-5 graph 13 (two
matmul outputs asked to be -FLT_MAX) ran 53 s under a 10 s limit, twice per lift attempt.
`tvtv.solvers.cvc5_bits` therefore runs this file as a script (`python -I`: it imports
nothing of tvtv, only cvc5) and kills it at the deadline.

Protocol: the first line of stdin is the time limit in milliseconds, the rest the query;
stdout is one JSON object, {"answer": "sat" | "unsat" | "unknown", "bits": {name: int}}, the
bits of the model's value of each declared float, bit-vector or Boolean constant when sat.
"""
from __future__ import annotations

import json
import sys
from typing import Any


def run(text: str, limit_ms: int, models: bool = False) -> tuple[str, Any, Any]:
    """(cvc5's last output on `text`, `(error "...")` when it failed to parse it, its solver,
    its symbol manager), with `limit_ms` as its per-check limit. In this process: also
    `tvtv.solvers.cvc5_answer`'s way of asking."""
    import cvc5

    tm = cvc5.TermManager()
    slv = cvc5.Solver(tm)
    slv.setOption("tlimit-per", str(max(1, limit_ms)))
    # constant arrays (`(as const ...)`: a padded buffer, an init value) need cvc5's
    # experimental array solver; without it every FuseTIR query holding one ended in
    # "Cannot handle assertion with term of kind STORE_ALL"
    slv.setOption("arrays-exp", "true")
    if models:
        slv.setOption("produce-models", "true")
    sm = cvc5.SymbolManager(tm)
    parser = cvc5.InputParser(slv, sm)
    parser.setStringInput(cvc5.InputLanguage.SMT_LIB_2_6, text, "tvtv")
    answer = ""
    try:
        while True:
            cmd = parser.nextCommand()
            if cmd.isNull():
                break
            out = cmd.invoke(slv, sm)
            if out.strip():
                answer = out.strip()
    except RuntimeError as err:    # a parse error: answered as cvc5 answers its own errors
        return f'(error "{" ".join(str(err).split())}")', slv, sm
    return answer, slv, sm


def solve(text: str, limit_ms: int) -> dict:
    """cvc5's answer to `text` and, when sat, its model's bits by constant name."""
    answer, slv, sm = run(text, limit_ms, models=True)
    bits: dict[str, int] = {}
    if answer == "sat":
        for term in sm.getDeclaredTerms():
            v = slv.getValue(term)
            if v.isFloatingPointValue():
                v = v.getFloatingPointValue()[2]
            if v.isBitVectorValue():
                bits[term.getSymbol()] = int(v.getBitVectorValue(2), 2)
            elif v.isBooleanValue():
                bits[term.getSymbol()] = int(v.getBooleanValue())
    return {"answer": answer if answer in ("sat", "unsat") else "unknown", "bits": bits}


if __name__ == "__main__":
    first, _, rest = sys.stdin.read().partition("\n")
    json.dump(solve(rest, int(first)), sys.stdout)
