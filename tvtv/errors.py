"""Errors that reach the user as one line: what went wrong and where."""
from __future__ import annotations


class TvtvError(Exception):
    """Base class of tvtv's own errors."""


class InputError(TvtvError):
    """Bad input: an unreadable or malformed file, an unknown pass name, a missing constant.

    The CLI prints `str(err)` on one line and exits with status 3.
    """


class Unsupported(TvtvError):
    """Something the encoder does not model yet (an op, a dtype, a language feature).

    It makes the verdict `unknown` with this message as the reason; it is never a pass.
    """
