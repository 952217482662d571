"""`tvtv minimize FILE --pass NAME`: delta debugging of a counterexample."""
from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    """Add this module's commands to `app` (not written yet)."""
