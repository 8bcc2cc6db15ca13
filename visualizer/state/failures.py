"""How the app and the CLI tell a failure: one sentence, and text made safe for a terminal (no torch, no Qt)."""

from __future__ import annotations

import logging
import traceback
from typing import Any


def first_line(exc: BaseException) -> str:
    """The error as one line for a status bar: its message's first line, or its type when it has none."""
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__


def failure_message(what: str, line: str) -> str:
    """The one sentence every failed background task shows: "<what> failed: <first line of the error>"."""
    return f"{what} failed: {line}"


def printable(text: str) -> str:
    """`text` safe to write to a terminal: control and other unprintable characters as their escapes ("\\x1b").

    A file's name may hold escape codes or a newline; written raw, it recolours the terminal or forges a log line.
    """
    return "".join(ch if ch.isprintable() else ascii(ch)[1:-1] for ch in text)


class PrintableFormatter(logging.Formatter):
    """Log lines whose message is escaped by `printable`. A traceback after it keeps its own lines (frames, source,
    the lines between chained errors), and each error's text in it is escaped the same way: an error often names a
    file."""

    def formatMessage(self, record: logging.LogRecord) -> str:  # logging's name
        record.message = printable(record.message)
        return super().formatMessage(record)

    def formatException(self, ei: Any) -> str:  # logging's name
        parts = []
        for chunk in traceback.TracebackException(*ei).format():
            own = chunk.startswith(_TRACEBACK_OWN)
            parts.append(chunk if own else printable(chunk.rstrip("\n")) + "\n")
        return "".join(parts).rstrip("\n")


# a traceback's own lines; any other chunk is an error's text ("ValueError: <message>"), which may say anything
_TRACEBACK_OWN = ("  File ", "Traceback ", "\nThe above exception", "\nDuring handling")
