"""The one sentence a failure is told in, for the app's background work and the CLI alike (no torch, no Qt)."""

from __future__ import annotations


def first_line(exc: BaseException) -> str:
    """The error as one line for a status bar: its message's first line, or its type when it has none."""
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__


def failure_message(what: str, line: str) -> str:
    """The one sentence every failed background task shows: "<what> failed: <first line of the error>"."""
    return f"{what} failed: {line}"
