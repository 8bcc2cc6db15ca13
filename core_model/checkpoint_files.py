"""The file side of checkpoints: atomic writes (atomic_files: symlinks followed, modes kept, temporaries cleaned)
that publish only a file the loader accepts, and reads that say what is wrong, files of earlier versions included.

Earlier versions stored a training-history row per step (a million rows or more), and torch's weights-only
unpickler is pure Python, too slow for millions of rows, so such a history is thinned before it is unpickled. The
rows are found in the pickled bytes by the layout torch.save (pickle protocol 2) gives a list of dicts of metric
name -> number, with regular expressions (C speed); the rows a checkpoint keeps (checkpoint_records.kept_rows) are
copied byte for byte, with every row that names a metric first (later rows refer back to the name; such a row leaves
the history again once it is read), and the shortened pickle goes, in a copy of the archive, to
torch.load(weights_only=True) and every usual check. Nothing here builds an object from the file: bytes that only
look like this layout give a pickle that the loader refuses or reads like any other file.
"""

from __future__ import annotations

import io
import logging
import pickle
import re
import struct
import zipfile
from array import array
from bisect import bisect_right
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import BinaryIO

import torch
from torch import _weights_only_unpickler

from .atomic_files import RefusedTarget, atomic_path, file_kind, remove_stale_temps
from .checkpoint_records import MAX_HISTORY_ROWS, kept_rows
from .checkpoint_validation import CheckpointError
from .zip_directory import entry_count

__all__ = [
    "MAX_FILE_BYTES",
    "MESSAGE_CHARS",
    "check_archive",
    "first_line",
    "read_payload",
    "remove_stale_temps",
    "write_atomically",
]
log = logging.getLogger(__name__)
MAX_FILE_BYTES = 2 * 2**30  # far above any checkpoint the app writes (weights are capped at MAX_MODEL_BYTES)
MESSAGE_CHARS = 300  # longest excerpt of a library's error message quoted back to the user
ZIP_MAGIC = b"PK\x03\x04"  # torch.save writes a zip archive
MAX_ENTRIES = 20_000  # a record per tensor: the largest model with a full movie holds a few thousand
# The pickle holds the history and extra data (tensors are separate records). The app writes at most
# MAX_HISTORY_ROWS rows, under 1 MB; the weights-only unpickler (pure Python, slow on large pickles) reads no larger.
MAX_PICKLE_BYTES = 4 * 2**20
# Earlier versions stored a row per step (a million rows take 105 MiB): such a pickle is read by thinning its history
# first (checkpoint_files, which scans the bytes once), up to this size; a larger one is refused unread.
MAX_LONG_PICKLE_BYTES = 128 * 2**20
# opcodes that import or build objects other than through GLOBAL (torch.save's protocol 2 never writes them)
OBJECT_OPCODES = frozenset({"OBJ", "NEWOBJ_EX", "STACK_GLOBAL", "EXT1", "EXT2", "EXT4", "PERSID"})
HISTORY_ROW_BYTES = 110  # one trainer history row, pickled after the weights (memo references take 5 bytes)


def write_atomically(path: Path, payload: dict) -> None:
    """torch.save to a temporary next to the real file, check it, fsync, rename over it; any failure removes the
    temporary.

    Every failure becomes CheckpointError naming the path and the cause (torch turns a full disk into
    RuntimeError, not OSError); a target that is not a regular file, or is read-only, is refused before anything is
    written. KeyboardInterrupt and the like still propagate, after the cleanup.
    """
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_path(path) as tmp:  # flushed to disk as it is renamed
            with open(tmp, "wb") as fh:
                torch.save(payload, fh)
            _check_written(tmp, path)
    except CheckpointError:
        raise
    except RefusedTarget as exc:
        raise CheckpointError(str(exc)) from None
    except Exception as exc:
        raise CheckpointError(f"could not write {path}: {_cause(exc)}") from exc


def _check_written(tmp: Path, path: Path) -> None:
    """The written file must pass what loading checks first (sizes, CRCs); a file it would refuse is not published."""
    with open(tmp, "rb") as fh:
        try:
            check_archive(fh, path.name, MAX_PICKLE_BYTES)
        except TooLarge as exc:
            raise CheckpointError(f"not saving {path}: {exc.detail}") from None
        except CheckpointError as exc:
            raise CheckpointError(f"not saving {path}: {exc}") from None


def _cause(exc: BaseException) -> str:
    """The cause of a failed write in words, from the exception's type: torch's writer reports a short write (a
    full disk) as RuntimeError."""
    if isinstance(exc, PermissionError):
        return "permission denied (the folder is read-only or not yours)"
    if isinstance(exc, OSError):
        return exc.strerror or str(exc) or type(exc).__name__
    if isinstance(exc, RuntimeError):
        return f"the file could not be written, the disk is probably full ({first_line(exc)})"
    return first_line(exc)


def read_payload(path: Path) -> object:
    """torch.load(weights_only=True) of `path`, after checks that turn every kind of bad file into words (a history
    of a row per step, from earlier versions, thinned before it is unpickled)."""
    try:
        info = path.stat()
    except FileNotFoundError:
        raise CheckpointError(f"{path} does not exist") from None
    except PermissionError:
        raise CheckpointError(f"{path} is not readable: permission denied") from None
    except OSError as exc:
        raise CheckpointError(f"{path} cannot be read: {exc.strerror or exc}") from None
    kind = file_kind(info.st_mode)
    if kind is not None:
        raise CheckpointError(f"{path} is not a file (it is {kind})")
    if info.st_size == 0:
        raise CheckpointError(f"{path.name} is not a readable checkpoint: the file is empty (0 bytes)")
    if info.st_size > MAX_FILE_BYTES:
        raise CheckpointError(
            f"{path.name} is {info.st_size / 2**30:.1f} GiB, larger than any checkpoint "
            f"({MAX_FILE_BYTES // 2**30} GiB at most)"
        )
    try:
        with open(path, "rb") as fh:
            source, short = _readable_archive(fh, path.name)
            try:
                payload = torch.load(source, map_location="cpu", weights_only=True)
            except pickle.UnpicklingError:  # refused by the weights-only loader: code, or malformed data
                if imports_code(_pickle_bytes(source)):
                    raise CheckpointError(
                        f"{path.name} contains code or objects that are not plain data; refusing to load it"
                    ) from None
                raise
            return short.without_name_rows(payload) if short else payload
    except CheckpointError:
        raise
    except PermissionError:
        raise CheckpointError(f"{path} is not readable: permission denied") from None
    except MemoryError:
        raise CheckpointError(f"{path.name} needs more memory to read than is available") from None
    except Exception as exc:  # noqa: BLE001 - torch raises many types for bad files; all mean "unreadable"
        raise CheckpointError(
            f"{path.name} is not a readable checkpoint (corrupt or truncated): {_damage(exc)}"
        ) from exc


def _readable_archive(fh: BinaryIO, name: str) -> tuple[BinaryIO, ShortHistory | None]:
    """The checked archive for torch.load: the file itself, or a copy whose long history is thinned (earlier
    versions' files), with what was done to it."""
    size = check_archive(fh, name)
    fh.seek(0)
    if size <= MAX_PICKLE_BYTES:
        return fh, None
    with zipfile.ZipFile(fh) as archive:
        pickles = [e for e in archive.infolist() if e.filename.endswith("/data.pkl")]
        short = shortened_history(archive.read(pickles[0])) if len(pickles) == 1 else None
        if short is None or len(short.data) > MAX_PICKLE_BYTES:
            how = (
                f"even with its history thinned to {MAX_HISTORY_ROWS:,} rows"
                if short
                else "and its history is not one the app can thin (rows of metric names and numbers)"
            )
            raise TooLarge(name, f"{_too_large(size, MAX_PICKLE_BYTES)}, {how}; refusing to read it")
        log.info(
            "%s: reading %d of its %d training-history rows (a row per step, as earlier versions kept)",
            name,
            short.kept,
            short.rows,
        )
        return archive_with(archive, pickles[0], short.data), short


class TooLarge(CheckpointError):
    """A file whose history and extra data exceed what a checkpoint may hold; `detail` says so without its name."""

    def __init__(self, name: str, detail: str) -> None:
        super().__init__(f"{name}: {detail}")
        self.detail = detail


def _too_large(size: int, limit: int) -> str:
    return (
        f"its training history and extra data take {size / 2**20:.1f} MiB, more than the "
        f"{limit // 2**20} MiB a checkpoint may hold"
    )


def check_archive(fh: BinaryIO, name: str, max_pickle_bytes: int = MAX_LONG_PICKLE_BYTES) -> int:
    """The file must be an intact zip holding a pickle (torch.save's format), its size judged from the archive's
    directory before anything is read; returns the pickle's size."""
    corrupt = f"{name} is not a readable checkpoint (corrupt or truncated)"
    if fh.read(len(ZIP_MAGIC)) != ZIP_MAGIC:
        raise CheckpointError(f"{corrupt}: it is not a PyTorch checkpoint archive")
    count = entry_count(fh)
    if count is not None and count > MAX_ENTRIES:  # None: zipfile says what is damaged, below
        raise CheckpointError(f"{name}: its archive lists {count:,} entries, more than the {MAX_ENTRIES:,} it may hold")
    fh.seek(0)
    try:
        archive = zipfile.ZipFile(fh)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, OSError, EOFError, KeyError):
        raise CheckpointError(
            f"{corrupt}: its archive directory is missing or damaged (the file was probably cut short)"
        ) from None
    with archive:
        entries = archive.infolist()
        pickles = [e for e in entries if e.filename.endswith("/data.pkl")]
        if not pickles:
            raise CheckpointError(f"{name} is not a checkpoint: it is a zip archive without checkpoint data")
        if any(e.compress_type != zipfile.ZIP_STORED for e in entries):
            raise CheckpointError(
                f"{name} is not a checkpoint: its archive has compressed entries, which torch.save never writes"
            )
        if sum(e.file_size for e in entries) > MAX_FILE_BYTES:
            raise CheckpointError(f"{name}: its archive claims more than {MAX_FILE_BYTES // 2**30} GiB of data")
        size = max(e.file_size for e in pickles)
        if size > max_pickle_bytes:
            rows = (
                f" (a history of about {max_pickle_bytes // HISTORY_ROW_BYTES:,} rows); refusing to read it"
                if max_pickle_bytes > MAX_PICKLE_BYTES
                else ""
            )
            raise TooLarge(name, f"{_too_large(size, max_pickle_bytes)}{rows}")
        check_crcs(archive, name)
    return size


def check_crcs(archive: zipfile.ZipFile, name: str) -> None:
    """Every record must match the CRC-32 written with it: torch.load reads damaged records without noticing."""
    try:
        damaged = archive.testzip()  # reads each record once; the file is small or about to be read whole anyway
    except (zipfile.BadZipFile, ValueError, OSError, EOFError, KeyError) as exc:
        raise CheckpointError(
            f"{name} is not a readable checkpoint (corrupt or truncated): its archive records "
            f"are damaged ({first_line(exc)})"
        ) from None
    if damaged is not None:
        record = damaged.split("/", 1)[-1][:80]
        what = (
            "its history and settings"
            if record == "data.pkl"
            else "its stored tensors (weights or attention maps)"
            if record.startswith("data/")
            else "its archive records"
        )
        raise CheckpointError(
            f"{name} is corrupt: {what} do not match the CRC-32 checksum stored when it was "
            f"saved (record {record} is damaged)"
        )


def _damage(exc: Exception) -> str:
    """What a failed torch.load of a checked archive means, from the exception's type: torch's reader raises
    RuntimeError for records it cannot read, its unpickler other types for pickled data it cannot follow."""
    if isinstance(exc, RuntimeError) and not isinstance(exc, RecursionError):
        return "its archive records are damaged or incomplete"
    return "its pickled data is malformed"


def _pickle_bytes(source: BinaryIO) -> bytes:
    """The pickle of a checked archive (check_archive found exactly one within the size limit)."""
    source.seek(0)
    with zipfile.ZipFile(source) as archive:
        return archive.read(next(e for e in archive.infolist() if e.filename.endswith("/data.pkl")))


def imports_code(data: bytes) -> bool:
    """Whether a pickle names a class or function the weights-only loader does not allow, or uses an opcode that
    builds arbitrary objects: what tells a file that holds code from one whose data is merely damaged."""
    import pickletools  # read only for a refused file: not worth its import at start-up

    try:  # torch's own list of what weights_only allows; private, so a torch without it allows nothing here
        allowed = set(_weights_only_unpickler._get_allowed_globals())
    except Exception:  # noqa: BLE001 - only the wording of a refusal depends on it
        allowed = set()
    try:
        for opcode, arg, _ in pickletools.genops(data):
            if opcode.name in OBJECT_OPCODES:
                return True
            if opcode.name in ("GLOBAL", "INST") and str(arg).replace(" ", ".", 1) not in allowed:
                return True
    except (ValueError, EOFError, struct.error):  # damaged data after the opcodes read so far
        return False
    return False


def first_line(exc: BaseException) -> str:
    """The first line of an exception's message, cut to MESSAGE_CHARS; its type name when it has none."""
    text = str(exc).strip().splitlines()
    return text[0][:MESSAGE_CHARS] if text else type(exc).__name__


MAX_ROWS = 1_300_000
MAX_ROW_METRICS = 16

_PUT = rb"(?:q.|r.{4})"  # BINPUT, LONG_BINPUT: the pickler memoises every dict and string it writes
_GET = rb"(?:h.|j.{4})"  # BINGET, LONG_BINGET: a metric name written before
_NAME = b"|".join(b"X" + re.escape(struct.pack("<I", n)) + b".{%d}" % n for n in range(1, 65))  # BINUNICODE, 1-64
_LONG = b"|".join(b"\\x8a" + re.escape(bytes([n])) + b".{%d}" % n for n in range(1, 9))  # LONG1 of 1-8 bytes
_NUMBER = rb"(?:G.{8}|K.|M.{2}|J.{4}|\x88|\x89|" + _LONG + rb")"  # float, int (1, 2, 4 bytes, long), True, False
_ENTRY = rb"(?:" + _GET + rb"|(?:" + _NAME + rb")" + _PUT + rb")" + _NUMBER
_ROW_PATTERN = rb"\}" + _PUT + rb"(?:\((?:" + _ENTRY + rb"){1,%d}+u|" % MAX_ROW_METRICS + _ENTRY + rb"s)"  # a dict
_ROW = re.compile(_ROW_PATTERN, re.DOTALL)
_HISTORY_KEY = b"X\x07\x00\x00\x00history"
_HEAD = re.compile(re.escape(_HISTORY_KEY) + _PUT + rb"\]" + _PUT, re.DOTALL)  # the key, then an empty list
# the list's items: batches of up to 1000 between MARK and APPENDS (a one-item list uses APPEND); possessive, so
# the scan never backtracks
_ROWS = re.compile(rb"(?:\((?:" + _ROW_PATTERN + rb")++e|" + _ROW_PATTERN + rb"a)*+", re.DOTALL)
_NEW_NAME = re.compile(rb"X[\x01-\x40]\x00\x00\x00")  # where a row may name a metric first; a false hit keeps a row


@dataclass(frozen=True)
class ShortHistory:
    """A checkpoint's pickle with fewer history rows: `kept` of its `rows`, and at `name_rows` (positions in the
    shortened list) the rows there only because they name a metric first."""

    data: bytes
    rows: int
    kept: int
    name_rows: frozenset[int]

    def without_name_rows(self, payload: object) -> object:
        """The payload read from `data` with the history it would have had if thinned after reading."""
        if not self.name_rows or not isinstance(payload, dict) or not isinstance(payload.get("history"), list):
            return payload
        return {**payload, "history": [row for j, row in enumerate(payload["history"]) if j not in self.name_rows]}


def shortened_history(data: bytes) -> ShortHistory | None:
    """`data` (a checkpoint's pickle) with its history cut to the rows a checkpoint keeps (plus any that name a
    metric first).

    None when the top-level key "history" is not followed by rows in torch.save's layout, or by more than MAX_ROWS.
    """
    at = data.find(_HISTORY_KEY)
    head = _HEAD.match(data, at) if at >= 0 else None
    if head is None:
        return None
    listed = _ROWS.match(data, head.end())  # matches always (possibly nothing): the pattern is a repetition
    first, end = head.end(), listed.end() if listed else head.end()
    starts = array("q", map(re.Match.start, islice(_ROW.finditer(data, first, end), MAX_ROWS + 1)))  # byte offsets
    if not 0 < len(starts) <= MAX_ROWS:
        return None
    evenly, naming = set(kept_rows(len(starts))), _naming_rows(data, starts, first, end)
    if naming is None:
        return None
    keep = sorted(evenly | naming)
    rows = b"".join(row.group() for i in keep if (row := _ROW.match(data, starts[i])))  # each found above
    name_rows = frozenset(j for j, i in enumerate(keep) if i not in evenly)
    return ShortHistory(data[:first] + b"(" + rows + b"e" + data[end:], len(starts), len(evenly), name_rows)


def _naming_rows(data: bytes, starts: array, first: int, end: int) -> set[int] | None:
    """The rows that may name a metric first (a byte pattern; a false hit keeps a row); None when there are so many
    that thinning would not shorten the history."""
    hits = list(islice(_NEW_NAME.finditer(data, first, end), MAX_HISTORY_ROWS + 1))
    if len(hits) > MAX_HISTORY_ROWS:
        return None
    return {max(0, bisect_right(starts, hit.start()) - 1) for hit in hits}


def archive_with(source: zipfile.ZipFile, entry: zipfile.ZipInfo, data: bytes) -> io.BytesIO:
    """A copy of the archive `source`, in memory, whose record `entry` holds `data` instead: for torch.load."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as copy:
        for info in source.infolist():
            record = zipfile.ZipInfo(info.filename, info.date_time)
            copy.writestr(record, data if info is entry else source.read(info))
    out.seek(0)
    return out
