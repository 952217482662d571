"""`tvtv stats DIR`: graph metrics (GenCoG, Isra, HIRGen) of a folder of modules.

Every ``*.py`` file in DIR (sorted by name) is read as TVMScript with
`tvtv.ir.tvm_bridge.load_module` (tensor constants from ``NAME.consts.npz``) and imported into
the shared graph IR (`generators.importer`); `generators.metrics.all_metrics` measures the set.

A file that cannot be read or imported is skipped with one warning line on stderr naming it,
and the others are still measured (one bad file in a folder of a thousand generated graphs
should not hide the other 999); ``--strict`` turns the first such file into an error (exit
status 3). No readable module at all is an error (exit status 3).
"""
from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path
from typing import Any, Optional

import typer


def read_graphs(folder: Path, strict: bool = False) -> tuple[list[Any], list[tuple[str, str]]]:
    """The graphs of the modules in `folder` and the (file, reason) pairs of skipped files.
    Raises InputError for a missing folder, for a bad file when `strict`, and when nothing
    could be read."""
    from generators.importer import import_module
    from tvtv.errors import InputError
    from tvtv.ir import tvm_bridge

    if not folder.is_dir():
        raise InputError(f"{folder}: not a folder")
    files = sorted(p for p in folder.glob("*.py") if p.is_file())
    if not files:
        raise InputError(f"{folder}: no TVMScript (*.py) files")
    graphs, skipped = [], []
    for path in files:
        try:
            graphs.append(import_module(tvm_bridge.load_module(path)))
        except Exception as err:  # InputError, UnsupportedModule, TVM errors: one line each
            reason = " ".join(str(err).split()) or type(err).__name__
            if not reason.startswith(str(path)):
                reason = f"{path.name}: {reason}"
            if strict:
                raise InputError(reason) from None
            skipped.append((path.name, reason))
    if not graphs:
        raise InputError(f"{folder}: none of the {len(files)} files could be read "
                         f"(first: {skipped[0][1]})")
    return graphs, skipped


def register(app: typer.Typer) -> None:
    """Add the `stats` command to `app`."""

    @app.command()
    def stats(folder: Path = typer.Argument(..., help="folder of TVMScript modules (*.py)"),
              json_path: Optional[Path] = typer.Option(None, "--json",
                                                       help="write the metrics here as JSON"),
              strict: bool = typer.Option(False, "--strict",
                                          help="a file that cannot be read is an error")) -> None:
        """Print the diversity metrics (Isra, HIRGen, GenCoG) of the modules in FOLDER."""
        from tvtv.cli import _guard, console

        def run() -> int:
            from rich.table import Table

            from generators.metrics import METRIC_HELP, all_metrics

            graphs, skipped = read_graphs(folder, strict)
            for _, reason in skipped:
                print(f"tvtv: warning: skipped {reason}", file=sys.stderr)
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                metrics = all_metrics(graphs)
            for w in caught:  # e.g. a metric left out: one line each
                print(f"tvtv: warning: {' '.join(str(w.message).split())}", file=sys.stderr)
            table = Table(title=f"metrics of {len(graphs)} modules in {folder}", show_edge=False)
            table.add_column("metric")
            table.add_column("value", justify="right")
            table.add_column("meaning")
            for k, v in metrics.items():
                text = f"{v:.0f}" if float(v).is_integer() else f"{v:.4g}"
                table.add_row(k, text, METRIC_HELP.get(k, ""))
            console.print(table)
            if json_path is not None:
                json_path.write_text(json.dumps(
                    {"folder": str(folder), "modules": len(graphs),
                     "skipped": [{"file": f, "reason": r} for f, r in skipped],
                     "metrics": metrics}, indent=2) + "\n")
                console.print(f"metrics written to {json_path}", markup=False)
            return 0
        _guard(run)
