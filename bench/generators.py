"""Benchmark: graphs per second of each graph generator, and each generator's diversity
metrics next to the DeclGen baseline.

Isra's paper reports 10,000 graphs of 1 to 30 operations in 19.4 s (515 graphs/s, on a laptop
i5-1135G7, writing ONNX models). Here every generator in `generators.GENERATORS` that imports
makes graph i of a run for i = 0..N-1 (seed `derive_seed(seed, i)`, 1..30 ops by default),
round-robin across generators, so that the noise of the shared machine falls on all of them
alike; only ratios between generators are meaningful. Two rates per generator:

* ``gen/s``: making the graph (a `Graph`, or a Relax module for generators that build Relax
  directly);
* ``gen+emit/s``: plus emitting it as a Relax IRModule with TVM checking every type.

Generators that fail to import (the ones still being written) are skipped with a note. Two
DeclGen columns: ``declgen`` (per-operation acceptance, the registry's default) and
``declgen-graph`` (the papers' DeclGen: whole graphs accepted or rejected), with their
acceptance rates. Then one table of metrics (Isra's eleven, HIRGen's three, GenCoG's two when
`generators.gencog.diversity` is there) per generator, over the same N graphs.

Run from the repository root:

    .venv/bin/python bench/generators.py            # N = 200 graphs per generator
    .venv/bin/python bench/generators.py --n 1000 --max-ops 30 --json bench/generators.json
    .venv/bin/python bench/generators.py --generators isra,simple,declgen
"""
from __future__ import annotations

import argparse
import json
import sys
import time
import traceback
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

import generators  # noqa: E402
from generators import derive_seed  # noqa: E402
from generators.graph import Graph  # noqa: E402

console = Console(highlight=False)


def candidates(names: list[str]) -> dict[str, Callable[..., Any]]:
    """name -> generate function, for the generators that import (a note for the others)."""
    from generators.declgen import generate as declgen

    out: dict[str, Callable[..., Any]] = {}
    for name in names:
        if name == "declgen-graph":
            out[name] = lambda seed, lo, hi, **kw: declgen(seed, lo, hi, mode="graph", **kw)
            continue
        gen = generators.GENERATORS.get(name)
        if gen is None:
            console.print(f"[yellow]unknown generator {name}, skipped[/yellow]")
            continue
        try:
            gen(derive_seed(12345, 0), 1, 3)  # imports the module; a smoke test
        except Exception as err:  # noqa: BLE001  (a generator still being written)
            console.print(f"[yellow]skipped {name}: {type(err).__name__}: {err}[/yellow]",
                          markup=True)
            continue
        out[name] = gen
    return out


def to_module(g: Any) -> Any:
    from generators.emit import emit
    return emit(g) if isinstance(g, Graph) else g


def to_graph(g: Any) -> Graph:
    from generators.importer import import_module
    return g if isinstance(g, Graph) else import_module(g)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=200, help="graphs per generator (default 200)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--min-ops", type=int, default=1)
    ap.add_argument("--max-ops", type=int, default=30)
    ap.add_argument("--generators", default=",".join([*generators.GENERATORS, "declgen-graph"]),
                    help="comma-separated names (default: all, plus declgen-graph)")
    ap.add_argument("--json", type=Path, default=None, help="write the results here")
    args = ap.parse_args()

    from generators.declgen import DeclStats
    from generators.metrics import METRIC_HELP, all_metrics

    gens = candidates([g for g in args.generators.split(",") if g])
    stats = {name: DeclStats() for name in gens if name.startswith("declgen")}
    made: dict[str, list[Any]] = {name: [] for name in gens}
    t_gen = dict.fromkeys(gens, 0.0)
    t_emit = dict.fromkeys(gens, 0.0)
    failures: dict[str, list[str]] = {name: [] for name in gens}
    for i in range(args.n):  # round-robin: every generator sees the same machine load
        seed = derive_seed(args.seed, i)
        for name, gen in gens.items():
            kw = {"stats": stats[name]} if name in stats else {}
            try:
                t0 = time.perf_counter()
                g = gen(seed, args.min_ops, args.max_ops, **kw)
                t1 = time.perf_counter()
                to_module(g)
                t2 = time.perf_counter()
            except Exception as err:  # noqa: BLE001  (count, keep going)
                failures[name].append(f"graph {i}: {type(err).__name__}: {err}")
                continue
            t_gen[name] += t1 - t0
            t_emit[name] += t2 - t0
            made[name].append(g)

    table = Table(title=f"generation speed, {args.n} graphs of {args.min_ops}..{args.max_ops} "
                        f"ops per generator (one interleaved run)", show_edge=False)
    for col in ("generator", "graphs", "failed", "gen/s", "gen+emit/s", "10k graphs (s)",
                "vs isra", "acceptance"):
        table.add_column(col, justify="left" if col == "generator" else "right")
    rate = {n: len(made[n]) / t_gen[n] if t_gen[n] else 0.0 for n in gens}
    results: dict[str, Any] = {"n": args.n, "min_ops": args.min_ops, "max_ops": args.max_ops,
                               "generators": {}}
    for name in gens:
        ok = len(made[name])
        emit_rate = ok / t_emit[name] if t_emit[name] else 0.0
        acc = f"{stats[name].acceptance:.1%}" if name in stats else "-"
        rel = f"{rate[name] / rate['isra']:.2f}x" if rate.get("isra") else "-"
        table.add_row(name, str(ok), str(len(failures[name])), f"{rate[name]:.1f}",
                      f"{emit_rate:.1f}", f"{1e4 / rate[name]:.1f}" if rate[name] else "-",
                      rel, acc)
        results["generators"][name] = {
            "graphs": ok, "failed": len(failures[name]), "gen_per_s": rate[name],
            "gen_emit_per_s": emit_rate, "failures": failures[name][:5],
            **({"accepted": stats[name].accepted, "rejected": stats[name].rejected}
               if name in stats else {})}
    console.print(table)
    console.print("Isra's paper: 10,000 graphs of 1..30 ops in 19.4 s (515 graphs/s, ONNX).",
                  markup=False)
    for name in gens:
        for f in failures[name][:3]:
            console.print(f"  {name}: {f}", markup=False)

    metrics = {}
    for name in gens:
        if made[name]:
            try:
                metrics[name] = all_metrics([to_graph(g) for g in made[name]])
            except Exception as err:  # noqa: BLE001  (e.g. a module the importer cannot read)
                console.print(f"no metrics for {name}: {type(err).__name__}: {err}",
                              markup=False)
    mt = Table(title="metrics over the same graphs (op corpus: generators.signatures)",
               show_edge=False)
    mt.add_column("metric")
    for name in metrics:
        mt.add_column(name, justify="right")
    keys = list(dict.fromkeys(k for m in metrics.values() for k in m))
    for k in keys:
        cells = []
        for name in metrics:
            v = metrics[name].get(k)
            cells.append("-" if v is None else (f"{v:.0f}" if float(v).is_integer()
                                                else f"{v:.4g}"))
        mt.add_row(k, *cells)
    console.print(mt)
    console.print("; ".join(f"{k}: {METRIC_HELP[k]}" for k in keys if k in METRIC_HELP),
                  markup=False)
    results["metrics"] = metrics
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")
        console.print(f"written to {args.json}", markup=False)


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        traceback.print_exc()
        sys.exit(130)
