"""What a task of the task layer holds while it runs (its state) and how its outcome is worded and sent.

Split from `tasks.py`, which owns the threads: nothing here starts one.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import SignalInstance

from visualizer.state.failures import failure_message, first_line  # the one failure sentence, for every runner

log = logging.getLogger(__name__)
__all__ = ["Cancelled", "TaskState", "emit_safely", "failure_message", "first_line"]


class Cancelled(Exception):
    """Raised by TaskState.check() once the task's cancel was requested; raised from a core_model entry's progress
    callback it stops the entry there (core_model.stopping), so `state.step` is every entry's progress. Not a
    core_model Stop: importing core_model would import torch on the GUI thread at start-up."""


def emit_safely(signal: SignalInstance, *args: Any) -> bool:
    """Emit from a worker thread; False, dropping the value, when the signal's QObject has been deleted (PySide would
    raise "Signal source has been deleted" into the worker thread instead)."""
    try:
        signal.emit(*args)
    except RuntimeError:
        log.debug("a task's message was dropped: its receiver has been deleted", exc_info=True)
        return False
    return True


class TaskState:
    """What a task holds while it runs: where to report, and whether it should stop. Thread-safe."""

    def __init__(self, send: Callable[[Any], bool]) -> None:
        self._send = send
        self._cancel = threading.Event()

    @property
    def cancelled(self) -> bool:
        return self._cancel.is_set()

    def cancel(self) -> None:
        """Ask the task to stop at its next poll (any thread)."""
        self._cancel.set()

    def check(self) -> None:
        """Raise Cancelled when the task should stop: one call between units of work."""
        if self._cancel.is_set():
            raise Cancelled

    def report(self, snapshot: Any) -> None:
        """Send an immutable snapshot (progress or a partial result) to the GUI thread; a slot deleted meanwhile
        has cancelled the task already."""
        if not self._send(snapshot):
            self._cancel.set()

    def step(self, snapshot: Any) -> None:
        """The hook of a step-wise loop: stop if asked, else report the step and stop if nobody is listening."""
        self.check()
        self.report(snapshot)
        self.check()
