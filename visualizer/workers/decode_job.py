"""One cancellable decoding job (beam search or sampling) on the thread pool, with per-step progress."""
from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, QRunnable, QThreadPool, Signal

from visualizer.workers.background import emit_safely
from visualizer.workers.torch_threads import use_background_threads

log = logging.getLogger(__name__)


class Cancelled(Exception):
    """Raised inside the job's step hook once cancel() was asked for."""


class DecodeJob(QObject):
    """Runs fn(on_step) off the GUI thread; exactly one of finished / failed / cancelled follows."""

    progressed = Signal(int)  # the output position about to be decoded
    finished = Signal(object)
    failed = Signal(str)
    cancelled = Signal()

    def __init__(self, fn: Callable[[Callable[[int], None]], Any]) -> None:
        super().__init__()
        self._fn = fn
        self._stop = threading.Event()
        self.done = threading.Event()

    @classmethod
    def launch(cls, fn: Callable[[Callable[[int], None]], Any], pool: QThreadPool | None = None) -> DecodeJob:
        """Create and start a job (the state's job starter)."""
        job = cls(fn)
        (pool or QThreadPool.globalInstance()).start(_Runnable(job))
        return job

    def cancel(self) -> None:
        """Ask the job to stop before its next step."""
        self._stop.set()

    def wait(self, timeout_ms: int) -> bool:
        """Block until the job has ended (closing the window waits for it); False on timeout."""
        return self.done.wait(timeout_ms / 1000)

    def _on_step(self, position: int) -> None:
        if self._stop.is_set() or not emit_safely(self.progressed, position):  # nobody left to report to: stop
            raise Cancelled

    def run_here(self) -> None:
        """The job's body (on a pool thread)."""
        use_background_threads()
        try:
            result = self._fn(self._on_step)
        except Cancelled:
            emit_safely(self.cancelled)
        except Exception as exc:  # noqa: BLE001 - reported to the UI as a sentence, never raised into the event loop
            log.warning("decoding job failed", exc_info=True)
            emit_safely(self.failed, str(exc) or type(exc).__name__)
        else:
            emit_safely(self.finished, result)
        finally:
            self.done.set()


class _Runnable(QRunnable):
    def __init__(self, job: DecodeJob) -> None:
        super().__init__()
        self.job = job
        self.setAutoDelete(True)

    def run(self) -> None:  # Qt's name
        self.job.run_here()
