"""Errors that reach the user as one line: what went wrong and where."""
from __future__ import annotations

import re


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


# TVM's printer puts this note on a line of its own inside a printed expression, so an error
# message that prints an expression with a tensor ("... but received T.te.tensor_load(
# metadata[...], ...) of type T.int32", LegalizeOps of logical_and on int32) ends on that
# note's continuation instead of the sentence
_METADATA_NOTE = "# Metadata omitted. Use show_meta=True in script() method to show it."


def tvm_message(err: BaseException) -> str:
    """The line of a TVM error message that says what went wrong: its last line, with the
    printer's metadata notes taken out of the sentence they interrupt."""
    text = re.sub(r"\n?" + re.escape(_METADATA_NOTE) + r"\n?", " ", str(err))
    lines = [" ".join(line.split()) for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else type(err).__name__


# Python errors that no check of an input raises, only code that is wrong about what it
# holds: raised inside a pass, TVM crashed rather than rejected the module. FastMathTransform
# (a Python pass) reads `call.op.name` of every call and raises AttributeError on a call of a
# GlobalVar, a well-formed module's private function (docs/findings.md). TVM's other errors
# (InternalError from a failed check, ValueError, TypeError) stay rejections: LegalizeOps
# refuses an int32 logical_and through a failed check.
CRASH_ERRORS: tuple[type[BaseException], ...] = (
    AttributeError, KeyError, IndexError, NameError, AssertionError, ZeroDivisionError,
    RecursionError)


def pass_crashed(err: BaseException) -> bool:
    """Did a pass fail by one of `CRASH_ERRORS`? (TVM's C++ code raises these too, through
    its FFI, for a missing attribute or key or an index out of range: a crash as well.)"""
    return isinstance(err, CRASH_ERRORS)


def failure_reason(subject: str, err: BaseException, where: str = "") -> str:
    """Why `subject` ("the pass", "the pipeline") stopped on TVM's error `err` (`where`: in
    which pass): "... crashed (AttributeError in TVM's code): ..." for `pass_crashed`,
    "... failed: ..." otherwise, with TVM's sentence (`tvm_message`)."""
    if pass_crashed(err):
        return f"{subject} crashed{where} ({type(err).__name__} in TVM's code): {tvm_message(err)}"
    return f"{subject} failed{where}: {tvm_message(err)}"
