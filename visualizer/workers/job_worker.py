"""One long job (a length sweep, a probe, training two models) on its own QThread, with progress and cancel.

The job is a plain function `job(report, should_stop)` (Orange's `run(inputs, state)` shape): it calls `report`
with immutable snapshots as it goes and polls `should_stop` between units of work. This QObject only turns those
calls into signals; it knows nothing of what the job computes.
"""
from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, Signal, Slot

from visualizer.workers.gc_policy import gc_paused
from visualizer.workers.torch_threads import use_background_threads

log = logging.getLogger(__name__)
Job = Callable[[Callable[[Any], None], Callable[[], bool]], Any]


class JobWorker(QObject):
    """Moved to a QThread by its owner; `run` is connected to the thread's `started`."""

    progressed = Signal(object)  # whatever immutable snapshot the job reports
    finished = Signal(object)  # the job's result (also after a stop: the partial result)
    failed = Signal(str)  # a sentence for the status line

    def __init__(self, job: Job) -> None:
        super().__init__()
        self._job = job
        self._stop = threading.Event()

    @Slot()
    def run(self) -> None:
        use_background_threads()
        with gc_paused():  # a full collection mid-job would stall the GUI
            try:
                result = self._job(self.progressed.emit, self._stop.is_set)
            except Exception as exc:  # noqa: BLE001 - reported as a sentence, never raised into the event loop
                log.warning("background job failed", exc_info=True)
                self.failed.emit(f"{type(exc).__name__}: {exc}" if not isinstance(exc, ValueError) else str(exc))
            else:
                self.finished.emit(result)

    def request_stop(self) -> None:
        """Thread-safe: the job sees it at its next poll."""
        self._stop.set()
