"""Writing a user-chosen file so that a failure never leaves a partial file or touches anything but that file.

`atomic_path(target)` yields a temporary next to the real target (symlinks followed), named
`<name>.saving-<pid>-<8 chars>.tmp` (plus the target's extension when a writer picks its format from the name). On a
clean exit the temporary is flushed to disk, given the target's permission bits (a new file: those the user's
umask allows) and renamed over the target, and the folder is flushed so that the rename survives a power cut; on
any failure the temporary is removed and the previous file stays as it was. A folder, pipe, device or socket at the
target is refused before anything is written, and so is a read-only file: a rename needs only the folder's
permission and would replace it silently. A writer killed midway leaves its temporary behind; the next write to
that target removes such leftovers when their writer is gone or they are older than a minute, and never touches any
other file (only names this writer makes are recognised).

`write_bytes_atomically(target, data)` is the way to publish bytes made in memory (an encoded image): it writes them
with os.write, where every short write is seen, and renames only a temporary holding all of them. A writer that
buffers inside a library can lose its last write on a full disk and still report success (Qt's QImage.save does).
"""

from __future__ import annotations

import errno
import logging
import os
import re
import stat
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

log = logging.getLogger(__name__)
STALE_TEMP_AGE_S = 60.0  # a temporary untouched this long belongs to a write that is not coming back
TEMP_MARK = "saving"  # <name>.saving-<pid>-<8 chars>.tmp: a name no person gives a file by chance
_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a named pipe (FIFO)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


class RefusedTarget(OSError):
    """The target cannot be replaced: a folder, pipe or device would be destroyed, or the file is read-only."""


def file_kind(mode: int) -> str | None:
    """What a non-regular file is, in words ("a folder", "a named pipe (FIFO)", ...); None for a regular file."""
    if stat.S_ISREG(mode):
        return None
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def real_target(path: str | os.PathLike) -> Path:
    """The file a write to `path` replaces: symlinks followed to the real file, which must be absent, or regular
    and writable (a file without any write permission counts as read-only even for root, who may write anything)."""
    given = Path(path)
    real = Path(os.path.realpath(given))
    try:
        info = os.stat(real)  # stat, not open: a FIFO is inspected without blocking
    except FileNotFoundError:
        return real
    kind = file_kind(info.st_mode)
    via = f" (a link to {real})" if real != Path(os.path.abspath(given)) else ""
    if kind is not None:
        raise RefusedTarget(f"refusing to write {given}{via}: it is {kind}, not a regular file")
    if not info.st_mode & 0o222 or not os.access(real, os.W_OK):
        raise RefusedTarget(f"{given}{via} is read-only; make it writable or save under another name")
    return real


@contextmanager
def atomic_path(path: str | os.PathLike, *, keep_suffix: bool = False) -> Iterator[Path]:
    """Yield a temporary path to write; on a clean exit it replaces the real target, on any failure it is removed.

    `keep_suffix` ends the temporary's name with the target's extension, for writers that pick the format from
    the name (pyqtgraph's exporters, QImage.save, Pillow). Raises RefusedTarget before creating anything when
    the target is not a regular file or is read-only.
    """
    target = real_target(path)
    remove_stale_temps(target)
    tmp = temp_path_for(target, keep_suffix)
    try:
        yield tmp
        _flush_to_disk(tmp)
        os.chmod(tmp, _mode_for(target))
        os.replace(tmp, target)
    except BaseException:
        try:
            tmp.unlink(missing_ok=True)
        except OSError as cleanup:
            log.warning("could not remove temporary %s: %s", tmp, cleanup)
        raise
    _flush_folder(target.parent)


def write_bytes_atomically(path: str | os.PathLike, data: bytes) -> int:
    """Make `data` the whole content of `path`, or raise OSError and leave the previous file as it was.

    Raises RefusedTarget as atomic_path does; OSError (ENOSPC, EFBIG, ...) when a write fails or the temporary ends
    up shorter than `data`. Returns the number of bytes written.
    """
    with atomic_path(path) as tmp:
        fd = os.open(tmp, os.O_WRONLY | os.O_TRUNC)
        try:
            _write_all(fd, data)
            size = os.fstat(fd).st_size
        finally:
            os.close(fd)
        if size != len(data):  # a file system that took a write it did not keep
            raise OSError(errno.EIO, f"only {size} of {len(data)} bytes reached the file")
    return len(data)


def _write_all(fd: int, data: bytes) -> None:
    """os.write until every byte is in: a short count is retried, so a full disk ends in the OSError it raises."""
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        if written <= 0:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        view = view[written:]


def temp_path_for(target: Path, keep_suffix: bool = False) -> Path:
    """Create an empty temporary next to `target`, named so that cleanup can recognise it."""
    suffix = ".tmp" + (target.suffix if keep_suffix else "")
    fd, tmp = tempfile.mkstemp(prefix=f"{target.name}.{TEMP_MARK}-{os.getpid()}-", suffix=suffix, dir=target.parent)
    os.close(fd)
    return Path(tmp)


def _flush_to_disk(path: Path) -> None:
    """fsync, so that the rename never publishes a file whose bytes are still only in memory."""
    fd = os.open(path, os.O_RDWR)  # a writable descriptor: Windows refuses fsync on a read-only one
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _flush_folder(folder: Path) -> None:
    """fsync the folder, so that the rename itself is on disk; where a folder cannot be opened (Windows), skip it."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass  # some file systems refuse fsync on a folder; the rename still happened
    finally:
        os.close(fd)


def _mode_for(target: Path) -> int:
    """The permission bits the written file gets: the replaced file's, else what the umask allows a new file."""
    try:
        return stat.S_IMODE(os.stat(target).st_mode) & 0o777
    except FileNotFoundError:
        return 0o666 & ~current_umask()


def current_umask() -> int:
    """The process umask, read without changing it where the system shows it (os.umask sets it for all threads)."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o077)  # the most private value for the instant it is set
    os.umask(mask)
    return mask


def _temp_pattern(target: Path) -> re.Pattern[str]:
    """Our temporaries for `target`: `<name>.saving-<pid>-<8 chars>.tmp`, optionally followed by its extension."""
    extension = f"(?:{re.escape(target.suffix)})?" if target.suffix else ""
    return re.compile(rf"{re.escape(target.name)}\.{TEMP_MARK}-(\d+)-[a-z0-9_]{{8}}\.tmp{extension}")


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
    """Delete leftovers of killed writes to `target`: our naming only, plain files, writer gone or over a minute old."""
    now = time.time() if now is None else now
    pattern = _temp_pattern(target)
    removed: list[Path] = []
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
            if now - info.st_mtime > STALE_TEMP_AGE_S or not _pid_alive(int(match.group(1))):
                os.unlink(entry.path)
                removed.append(Path(entry.path))
                log.info("removed stale temporary %s", entry.path)
        except OSError as exc:
            log.warning("could not remove stale temporary %s: %s", entry.path, exc)
    return removed
