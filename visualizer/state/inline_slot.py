"""A task slot that runs each task at once on the caller's thread: deterministic, for tests and scripts without an
event loop. The app injects the task layer's TaskSlot (visualizer/workers/tasks.py) instead; this one has its API
and its one failure sentence, and never has anything waiting, so nothing is ever stale."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, Signal

from visualizer.state.failures import failure_message, first_line

log = logging.getLogger(__name__)


class _InlineState:
    """The TaskStateApi of a task that runs to its end on the caller's thread: never cancelled."""

    def __init__(self, report: Callable[[Any], None]) -> None:
        self.report = self.step = report

    cancelled = False

    def check(self) -> None:
        return None


class InlineSlot(QObject):
    """TaskSlotApi, inline: `submit` returns after the outcome's signals have been emitted."""

    progressed = Signal(object)
    finished = Signal(object)
    failed = Signal(str)  # "<what> failed: <first line of the error>"
    error_line = Signal(str)  # that first line alone
    cancelled = Signal()
    overtaken = Signal()  # never: the context cannot change while a task runs on the caller's thread
    idle = Signal()

    def __init__(
        self,
        what: str,
        parent: QObject | None = None,
        *,
        pause_gc: bool = False,
        coalesce: bool = False,
        context: Callable[[], object] | None = None,
    ) -> None:
        """The options of a SlotFactory; inline, nothing ever waits or goes stale, so they change nothing."""
        super().__init__(parent)
        self.what, self.started, self.running = what, 0, False

    def submit(self, fn: Callable[..., Any], *inputs: Any) -> None:
        self.started += 1
        try:
            result = fn(_InlineState(self.progressed.emit), *inputs)
        except Exception as exc:  # noqa: BLE001 - reported as the sentence the task layer uses
            log.warning("%s failed", self.what, exc_info=True)
            line = first_line(exc)
            self.error_line.emit(line)
            self.failed.emit(failure_message(self.what, line))
        else:
            self.finished.emit(result)
        self.idle.emit()

    def submit_ordered(self, fn: Callable[..., Any], *inputs: Any) -> None:
        self.submit(fn, *inputs)

    def cancel(self) -> None:
        return None

    def discard(self) -> None:
        return None

    def shutdown(self, timeout_ms: int = 5000) -> bool:
        return True
