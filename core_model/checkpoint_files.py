"""The file side of checkpoints: atomic writes with our own temporary names, and reads that say what is wrong.

A write goes to `<name>.<pid>.<random>.tmp` next to the target, then is renamed over it, so the previous file
survives any failure. A writer killed midway leaves its temporary behind; the next save to that target removes
such leftovers when their writer is gone or they are older than a minute, and never touches any other file.
"""
from __future__ import annotations

import logging
import os
import re
import stat
import sys
import tempfile
import time
import zipfile
from pathlib import Path
from typing import BinaryIO

import torch

from .checkpoint_validation import CheckpointError

log = logging.getLogger(__name__)
STALE_TEMP_AGE_S = 60.0  # a temporary untouched this long belongs to a save that is not coming back
MAX_FILE_BYTES = 2 * 2**30  # far above any checkpoint the app writes (weights are capped at MAX_MODEL_BYTES)
MESSAGE_CHARS = 300  # longest excerpt of a library's error message quoted back to the user
ZIP_MAGIC = b"PK\x03\x04"  # torch.save writes a zip archive


def temp_path_for(target: Path) -> tuple[int, Path]:
    """Create (open fd, path) of a fresh temporary next to `target`, named so cleanup can recognise it."""
    fd, tmp = tempfile.mkstemp(prefix=f"{target.name}.{os.getpid()}.", suffix=".tmp", dir=target.parent)
    return fd, Path(tmp)


def _temp_pattern(target: Path) -> re.Pattern[str]:
    """Our temporaries for `target`: today's `<name>.<pid>.<8 chars>.tmp` and the older `<name>.<8 chars>.tmp`."""
    return re.compile(rf"{re.escape(target.name)}\.(?:(\d+)\.)?[a-z0-9_]{{8}}\.tmp")


def _pid_alive(pid: int) -> bool:
    if sys.platform == "win32":  # os.kill would terminate the process there; rely on the age rule alone
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, ValueError):
        return True
    return True


def remove_stale_temps(target: Path, now: float | None = None) -> list[Path]:
    """Delete leftovers of killed saves to `target`: our naming only, plain files, writer dead or older than a minute."""
    now = time.time() if now is None else now
    pattern, removed = _temp_pattern(target), []
    try:
        entries = list(os.scandir(target.parent))
    except OSError:
        return removed
    for entry in entries:
        match = pattern.fullmatch(entry.name)
        if not match:
            continue
        try:
            info = entry.stat(follow_symlinks=False)
            if not stat.S_ISREG(info.st_mode):
                continue
            pid = int(match.group(1)) if match.group(1) else None
            if now - info.st_mtime > STALE_TEMP_AGE_S or (pid is not None and not _pid_alive(pid)):
                os.unlink(entry.path)
                removed.append(Path(entry.path))
                log.info("removed stale temporary %s", entry.path)
        except OSError as exc:
            log.warning("could not remove stale temporary %s: %s", entry.path, exc)
    return removed


def write_atomically(path: Path, payload: dict) -> None:
    """torch.save to a temporary next to `path`, fsync, rename over `path`; any failure removes the temporary.

    Every failure becomes CheckpointError naming the path and the cause (torch turns a full disk into
    RuntimeError, not OSError); KeyboardInterrupt and the like still propagate, after the cleanup.
    """
    tmp: Path | None = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        remove_stale_temps(path)
        fd, tmp = temp_path_for(path)
        with os.fdopen(fd, "wb") as fh:
            torch.save(payload, fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o644)  # mkstemp creates 0600; a checkpoint is an ordinary document
        os.replace(tmp, path)
    except BaseException as exc:
        if tmp is not None:
            try:
                tmp.unlink(missing_ok=True)
            except OSError as cleanup:
                log.warning("could not remove temporary %s: %s", tmp, cleanup)
        if isinstance(exc, Exception):
            raise CheckpointError(f"could not write {path}: {_cause(exc)}") from exc
        raise


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
    """torch.load(weights_only=True) of `path`, after checks that turn every kind of bad file into words."""
    try:
        info = path.stat()
    except FileNotFoundError:
        raise CheckpointError(f"{path} does not exist") from None
    except PermissionError:
        raise CheckpointError(f"{path} is not readable: permission denied") from None
    except OSError as exc:
        raise CheckpointError(f"{path} cannot be read: {exc.strerror or exc}") from None
    if stat.S_ISDIR(info.st_mode):
        raise CheckpointError(f"{path} is not a file (it is a folder)")
    if not stat.S_ISREG(info.st_mode):
        raise CheckpointError(f"{path} is not a file (it is a device, pipe or socket)")
    if info.st_size == 0:
        raise CheckpointError(f"{path.name} is not a readable checkpoint: the file is empty (0 bytes)")
    if info.st_size > MAX_FILE_BYTES:
        raise CheckpointError(f"{path.name} is {info.st_size / 2**30:.1f} GiB, larger than any checkpoint "
                              f"({MAX_FILE_BYTES // 2**30} GiB at most)")
    try:
        with open(path, "rb") as fh:
            check_archive(fh, path.name)
            fh.seek(0)
            return torch.load(fh, map_location="cpu", weights_only=True)
    except CheckpointError:
        raise
    except PermissionError:
        raise CheckpointError(f"{path} is not readable: permission denied") from None
    except MemoryError:
        raise CheckpointError(f"{path.name} needs more memory to read than is available") from None
    except Exception as exc:  # noqa: BLE001 - torch raises many types for bad files; all mean "unreadable"
        raise CheckpointError(_load_failure(path.name, exc)) from exc


def check_archive(fh: BinaryIO, name: str) -> None:
    """The file must be an intact zip holding a pickle (torch.save's format), read from its directory alone."""
    corrupt = f"{name} is not a readable checkpoint (corrupt or truncated)"
    if fh.read(len(ZIP_MAGIC)) != ZIP_MAGIC:
        raise CheckpointError(f"{corrupt}: it is not a PyTorch checkpoint archive")
    fh.seek(0)
    try:
        with zipfile.ZipFile(fh) as archive:
            entries = archive.infolist()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, OSError, EOFError, KeyError):
        raise CheckpointError(f"{corrupt}: its archive directory is missing or damaged "
                              "(the file was probably cut short)") from None
    if not any(e.filename.endswith("/data.pkl") for e in entries):
        raise CheckpointError(f"{name} is not a checkpoint: it is a zip archive without checkpoint data")
    if any(e.compress_type != zipfile.ZIP_STORED for e in entries):
        raise CheckpointError(f"{name} is not a checkpoint: its archive has compressed entries, "
                              "which torch.save never writes")
    if sum(e.file_size for e in entries) > MAX_FILE_BYTES:
        raise CheckpointError(f"{name}: its archive claims more than {MAX_FILE_BYTES // 2**30} GiB of data")


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
