"""`tvtv stats DIR`: graph metrics (GenCoG, Isra, HIRGen) of a folder of modules."""
from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    """Add this module's commands to `app` (not written yet)."""
