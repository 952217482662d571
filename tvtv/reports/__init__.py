"""Reports users act on: findings grouped by cause, a self-contained HTML page, standalone
reproducer scripts and a terminal summary. `finalize` is what `tvtv check --out DIR` calls."""
from __future__ import annotations

from pathlib import Path
from typing import Any


def finalize(out_dir: Path, report: Any, pass_name: str, minimize: bool, **kwargs: Any) -> Any:
    """See `tvtv.reports.finalize.finalize` (imported lazily: it needs TVM and jinja2)."""
    from tvtv.reports.finalize import finalize as _finalize
    return _finalize(out_dir, report, pass_name, minimize, **kwargs)


__all__ = ["finalize"]
