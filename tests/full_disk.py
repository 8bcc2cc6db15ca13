"""A nearly full disk, faked at the OS boundary: the kernel's file-size limit (RLIMIT_FSIZE) ends every file this
process writes at a given size, so a write past it fails (EFBIG) in Qt's C++ as in Python, as a write past the free
space fails (ENOSPC). Python ignores SIGXFSZ, so the write returns the error instead of the signal ending the run."""

from __future__ import annotations

import errno
import os
import signal
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

resource = pytest.importorskip("resource")  # POSIX only
NO_ROOM = os.strerror(errno.EFBIG)  # what the OS says when a write meets the limit ("File too large")


@contextmanager
def room_for(size: int) -> Iterator[None]:
    """While inside, no file this process writes can grow past `size` bytes; the limit is lifted on leaving."""
    assert signal.getsignal(signal.SIGXFSZ) == signal.SIG_IGN, "SIGXFSZ would end the test run at the first short write"
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (size, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
