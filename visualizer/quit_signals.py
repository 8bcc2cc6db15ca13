"""SIGINT, SIGTERM and SIGHUP reach the Qt event loop as a signal, so the app can save unsaved work and quit.

Python runs its signal handlers only when the interpreter gets control, which Qt's event loop rarely gives it: a
Ctrl+C would wait for the next slot and then raise KeyboardInterrupt there. The C-level handler writes each signal
number to a socket (`signal.set_wakeup_fd`); a QSocketNotifier on the other end wakes the event loop, which reads
the numbers and emits `received`. The Python-level handler itself does nothing.
"""

from __future__ import annotations

import logging
import signal
import socket
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType

from PySide6.QtCore import QObject, QSocketNotifier, Signal

from visualizer.headless.interrupts import QUIT_SIGNAL_NAMES

log = logging.getLogger(__name__)


def quit_signals() -> list[signal.Signals]:
    """The quit signals this platform has (Windows has no SIGHUP)."""
    return [getattr(signal, name) for name in QUIT_SIGNAL_NAMES if hasattr(signal, name)]


def _noted(signum: int, _frame: FrameType | None) -> None:
    """The Python-level handler: the work happens in the event loop, woken through the wakeup socket."""


class SignalWatcher(QObject):
    """Turns the quit signals into `received(signum)` on the GUI thread while installed."""

    received = Signal(int)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._reader, self._writer = socket.socketpair()
        for end in (self._reader, self._writer):
            end.setblocking(False)
        self._previous_fd = signal.set_wakeup_fd(self._writer.fileno(), warn_on_full_buffer=False)
        self._previous = {signum: signal.signal(signum, _noted) for signum in quit_signals()}
        self._notifier = QSocketNotifier(self._reader.fileno(), QSocketNotifier.Type.Read, self)
        self._notifier.activated.connect(self._read)

    def _read(self) -> None:
        try:
            data = self._reader.recv(64)
        except (BlockingIOError, InterruptedError):
            return
        for signum in data:
            if signum in self._previous:
                log.info("%s received", signal.Signals(signum).name)
                self.received.emit(signum)

    def uninstall(self) -> None:
        """Give the signals back to the handlers (and wakeup fd) that were there before."""
        self._notifier.setEnabled(False)
        for signum, handler in self._previous.items():
            signal.signal(signum, signal.SIG_DFL if handler is None else handler)  # None: set outside Python
        signal.set_wakeup_fd(self._previous_fd)
        self._reader.close()
        self._writer.close()


@contextmanager
def signals_quit_via(slot: Callable[[int], None]) -> Iterator[SignalWatcher]:
    """While inside, a quit signal calls `slot(signum)` from the event loop; the old handlers come back after."""
    watcher = SignalWatcher()
    watcher.received.connect(slot)
    try:
        yield watcher
    finally:
        watcher.uninstall()
