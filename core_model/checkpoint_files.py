"""The file side of checkpoints: atomic writes (atomic_files: symlinks followed, modes kept, temporaries cleaned)
that publish only a file the loader accepts, and reads that say what is wrong.
"""

from __future__ import annotations

import logging
import zipfile
from pathlib import Path
from typing import BinaryIO

import torch

from .atomic_files import RefusedTarget, atomic_path, file_kind, remove_stale_temps
from .checkpoint_long_history import ShortHistory, archive_with, shortened_history
from .checkpoint_records import MAX_HISTORY_ROWS
from .checkpoint_validation import CheckpointError

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
# The pickle holds the history and extra data (tensors are separate records). The app writes at most
# MAX_HISTORY_ROWS rows, under 1 MB; the weights-only unpickler (pure Python, slow on large pickles) reads no larger.
MAX_PICKLE_BYTES = 4 * 2**20
# Earlier versions stored a row per step (a million rows take 105 MiB): such a pickle is read by thinning its history
# first (checkpoint_long_history, which scans the bytes once), up to this size; a larger one is refused unread.
MAX_LONG_PICKLE_BYTES = 128 * 2**20
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
        except CheckpointError as exc:
            raise CheckpointError(f"not saving {path}: {str(exc).removeprefix(f'{path.name}: ')}") from None


def _cause(exc: BaseException) -> str:
    """The cause of a failed write in words."""
    if isinstance(exc, PermissionError):
        return "permission denied (the folder is read-only or not yours)"
    if isinstance(exc, OSError):
        return exc.strerror or str(exc) or type(exc).__name__
    text = first_line(exc)
    if "file write failed" in text or "unexpected pos" in text:  # torch's words for a short write: disk full
        return f"the disk is probably full ({text})"
    return text


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
            payload = torch.load(source, map_location="cpu", weights_only=True)
            return short.without_name_rows(payload) if short else payload
    except CheckpointError:
        raise
    except PermissionError:
        raise CheckpointError(f"{path} is not readable: permission denied") from None
    except MemoryError:
        raise CheckpointError(f"{path.name} needs more memory to read than is available") from None
    except Exception as exc:  # noqa: BLE001 - torch raises many types for bad files; all mean "unreadable"
        raise CheckpointError(_load_failure(path.name, exc)) from exc


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
            raise CheckpointError(f"{_too_large(name, size, MAX_PICKLE_BYTES)}, {how}; refusing to read it")
        log.info(
            "%s: reading %d of its %d training-history rows (a row per step, as earlier versions kept)",
            name,
            short.kept,
            short.rows,
        )
        return archive_with(archive, pickles[0], short.data), short


def _too_large(name: str, size: int, limit: int) -> str:
    return (
        f"{name}: its training history and extra data take {size / 2**20:.1f} MiB, more than the "
        f"{limit // 2**20} MiB a checkpoint may hold"
    )


def check_archive(fh: BinaryIO, name: str, max_pickle_bytes: int = MAX_LONG_PICKLE_BYTES) -> int:
    """The file must be an intact zip holding a pickle (torch.save's format), its size judged from the archive's
    directory before anything is read; returns the pickle's size."""
    corrupt = f"{name} is not a readable checkpoint (corrupt or truncated)"
    if fh.read(len(ZIP_MAGIC)) != ZIP_MAGIC:
        raise CheckpointError(f"{corrupt}: it is not a PyTorch checkpoint archive")
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
            raise CheckpointError(f"{_too_large(name, size, max_pickle_bytes)}{rows}")
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


def _load_failure(name: str, exc: Exception) -> str:
    """The message for a torch.load failure: refused code, or damage described in words rather than torch's."""
    text, full = first_line(exc), str(exc)
    # every weights-only failure mentions `weights_only`; only a refused import (code) names a GLOBAL
    if "Unsupported global" in full or "GLOBAL" in full or "Unsupported operand" in full:
        return f"{name} contains code or objects that are not plain data; refusing to load it"
    if "weights_only" in text or isinstance(exc, (RecursionError, EOFError)):
        text = "its pickled data is malformed"  # torch's advice to retry without weights_only would mislead here
    elif "inline_container" in full or "PytorchStreamReader" in full or "enforce fail" in full:
        text = "its archive records are damaged or incomplete"
    return f"{name} is not a readable checkpoint (corrupt or truncated): {text}"


def first_line(exc: BaseException) -> str:
    """The first line of an exception's message, cut to MESSAGE_CHARS; its type name when it has none."""
    text = str(exc).strip().splitlines()
    return text[0][:MESSAGE_CHARS] if text else type(exc).__name__
