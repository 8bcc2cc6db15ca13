"""Start a job on its own thread, cancel it, and join it at shutdown; the worker class is injected by the root.

`state/` never imports `workers/`: the composition root (and tests) pass the worker factory in.
"""
from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Protocol

from PySide6.QtCore import QObject, QThread, Signal, SignalInstance

log = logging.getLogger(__name__)


class JobWorkerApi(Protocol):
    """A QObject whose `run` calls a job on the thread it was moved to; see workers/job_worker.py."""

    progressed: SignalInstance
    finished: SignalInstance
    failed: SignalInstance

    def moveToThread(self, thread: QThread) -> bool: ...  # Qt's name
    def run(self) -> None: ...
    def request_stop(self) -> None: ...


Job = Callable[[Callable[[Any], None], Callable[[], bool]], Any]
JobWorkerFactory = Callable[[Job], JobWorkerApi]


class JobRunner(QObject):
    """At most one job at a time; the callbacks run on the GUI thread, each run's own callbacks only."""

    idle = Signal()  # the thread has ended: a new job may start

    def __init__(self, factory: JobWorkerFactory, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._factory = factory
        self._thread: QThread | None = None
        self._worker: JobWorkerApi | None = None
        self._callbacks: tuple[Callable[[Any], None], Callable[[Any], None], Callable[[str], None]] | None = None

    @property
    def busy(self) -> bool:
        return self._thread is not None

    def start(self, job: Job, on_progress: Callable[[Any], None], on_done: Callable[[Any], None],
              on_error: Callable[[str], None]) -> bool:
        """False when a job is still running (cancel it first)."""
        if self.busy:
            return False
        thread, worker = QThread(), self._factory(job)
        worker.moveToThread(thread)
        # bound methods of this GUI-thread QObject: Qt queues the worker's signals to the GUI thread
        worker.progressed.connect(self._on_progress)
        worker.finished.connect(self._on_done)
        worker.failed.connect(self._on_failed)
        thread.started.connect(worker.run)
        thread.finished.connect(self._on_thread_finished)
        self._thread, self._worker = thread, worker
        self._callbacks = (on_progress, on_done, on_error)
        thread.start()
        return True

    def _on_progress(self, snapshot: Any) -> None:
        if self._callbacks is not None:
            self._callbacks[0](snapshot)

    def _on_done(self, result: Any) -> None:
        self._end(lambda callbacks: callbacks[1](result))

    def _on_failed(self, message: str) -> None:
        self._end(lambda callbacks: callbacks[2](message))

    def _end(self, call: Callable[[tuple], None]) -> None:
        """The run's last callback: the thread is asked to end first, so `busy` is False once the thread has."""
        callbacks, self._callbacks = self._callbacks, None
        if self._thread is not None:
            self._thread.quit()
        if callbacks is not None:
            call(callbacks)

    def cancel(self) -> None:
        if self._worker is not None:
            self._worker.request_stop()

    def _on_thread_finished(self) -> None:
        thread, self._thread, self._worker = self._thread, None, None
        self.idle.emit()
        if thread is not None:
            thread.deleteLater()

    def shutdown(self, timeout_ms: int = 20000) -> bool:
        """Cancel, quit and wait (closeEvent, test teardown): no thread outlives its owner."""
        thread = self._thread
        if thread is None:
            return True
        self.cancel()
        thread.quit()
        if not thread.wait(timeout_ms):
            log.warning("a lab job did not stop within %d ms", timeout_ms)
            return False
        self._callbacks = None  # the owner is going away: nothing more is delivered
        self._on_thread_finished()
        return True
