"""A lesson file read within bounds: a file that breaks one is refused before it costs the app time or memory.

A lesson folder is whatever a teacher put there, so every bound is checked before the work it bounds: the file's
kind and size before reading it, the nesting and the length of every text before checking a field, a placeholder's
format width and precision before trying it (schema.py). Qt-free: the app calls this on a pool thread.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from core_model.atomic_files import file_kind

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10: the same parser, from PyPI (a dependency there)
    import tomli as tomllib

MAX_FILE_BYTES = 1 << 20  # 1 MiB; the longest shipped lesson is under 10 KB
MAX_NESTING = 8  # tables and arrays inside one another; a lesson needs 5 (file, steps, a step, setup, an action)
MAX_TEXT_CHARS = 20_000  # any one text (a step's say or explain, a title); the shipped ones stay under 1,500
MAX_STEPS = 200  # of one lesson; the shipped ones have at most 6
MAX_SETUP_ACTIONS = 50  # of one step; the shipped ones run at most 7
MAX_FORMAT_DIGITS = 3  # a placeholder's width and precision: {weight:.3f} or {map:>12}, never {weight:.999999999f}


class LessonError(ValueError):
    """A lesson file that cannot be used; the message names the file and the field."""


def read_lesson_text(path: Path) -> str:
    """The file's text, only from a regular file of at most MAX_FILE_BYTES (a FIFO or a device is never read:
    opened without blocking, checked with fstat, so a path swapped after a check is still caught)."""
    name = path.name
    too_big = f"lesson {name}: the file is larger than {MAX_FILE_BYTES // 1024:,} KiB; a lesson is a short text"
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise LessonError(f"lesson {name}: cannot read it ({exc.strerror or exc})") from None
    try:
        info = os.fstat(fd)
        if (kind := file_kind(info.st_mode)) is not None:
            raise LessonError(f"lesson {name}: not a file (it is {kind}); a lesson is a .toml text file")
        if info.st_size > MAX_FILE_BYTES:
            raise LessonError(too_big)
        data = _read_at_most(fd, MAX_FILE_BYTES + 1)  # one byte past the bound: a file still growing is caught
    except OSError as exc:
        raise LessonError(f"lesson {name}: cannot read it ({exc.strerror or exc})") from None
    finally:
        os.close(fd)
    if len(data) > MAX_FILE_BYTES:
        raise LessonError(too_big)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise LessonError(f"lesson {name}: cannot read it ({exc})") from None


def _read_at_most(fd: int, limit: int) -> bytes:
    chunks, size = [], 0
    while size < limit and (chunk := os.read(fd, min(1 << 16, limit - size))):
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


def parse_toml(text: str, name: str) -> dict[str, Any]:
    """The TOML table of a lesson file; the parser recurses once per nesting level, so a file nested hundreds of
    levels deep ends in RecursionError, named here like any other mistake."""
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise LessonError(f"lesson {name}: not valid TOML ({exc})") from None
    except RecursionError:
        raise LessonError(f"lesson {name}: nested deeper than {MAX_NESTING} levels of tables and arrays") from None


def check_bounds(data: dict[str, Any], where: str) -> None:
    """Nesting and text length over the whole table, without recursion, before any field is checked; `where` is
    "lesson a.toml: " and the message names the field ("lesson a.toml: steps[3].say: ...")."""
    pending: list[tuple[object, str, int]] = [(data, "", 1)]
    while pending:
        value, key, depth = pending.pop()
        field = where + (key or "the file")
        if isinstance(value, str) and len(value) > MAX_TEXT_CHARS:
            raise LessonError(f"{field}: {len(value):,} characters; a text may have at most {MAX_TEXT_CHARS:,}")
        if not isinstance(value, (dict, list)):
            continue
        if depth > MAX_NESTING:
            raise LessonError(f"{field}: nested deeper than {MAX_NESTING} levels of tables and arrays")
        if isinstance(value, dict):
            children = [(f"{key}.{k}" if key else str(k), v) for k, v in value.items()]
        else:
            children = [(f"{key}[{i}]", v) for i, v in enumerate(value)]
        pending.extend((child, child_key, depth + 1) for child_key, child in children)
