"""Run one plain function off the GUI thread and get its result back on the GUI thread as a signal."""
from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, QRunnable, QThreadPool, Signal, SignalInstance

from visualizer.workers.torch_threads import use_background_threads

log = logging.getLogger(__name__)


class JobSignals(QObject):
    """finished(result) or failed(message) is emitted exactly once per job."""

    finished = Signal(object)
    failed = Signal(str)


class _Job(QRunnable):
    def __init__(self, fn: Callable[[], Any], signals: JobSignals) -> None:
        super().__init__()
        self.fn, self.signals = fn, signals
        self.setAutoDelete(True)

    def run(self) -> None:  # Qt's name
        use_background_threads()
        try:
            result = self.fn()
        except Exception as exc:  # noqa: BLE001 - reported to the UI as text, never raised into the event loop
            log.warning("background job failed", exc_info=True)
            emit_safely(self.signals.failed, str(exc) or type(exc).__name__)
        else:
            emit_safely(self.signals.finished, result)


def emit_safely(signal: SignalInstance, *args: Any) -> bool:
    """Emit from a worker thread; False, dropping the value, when the signal's QObject is gone (the app is exiting
    and deleted it): PySide would raise "Signal source has been deleted" into the worker thread instead."""
    try:
        signal.emit(*args)
    except RuntimeError:
        log.debug("a background job's result was dropped: its receiver has been deleted", exc_info=True)
        return False
    return True


def wait_for_background_jobs(timeout_ms: int, pool: QThreadPool | None = None) -> bool:
    """Let the pool's jobs end while the app's objects still exist (before exit deletes them); False on timeout."""
    if (pool or QThreadPool.globalInstance()).waitForDone(timeout_ms):
        return True
    log.warning("background jobs were still running %d ms after the window closed", timeout_ms)
    return False


def run_in_background(fn: Callable[[], Any], on_done: Callable[[Any], None], on_error: Callable[[str], None],
                      pool: QThreadPool | None = None) -> JobSignals:
    """Start fn on the global thread pool; callbacks run on the thread that owns the returned signals (the GUI)."""
    signals = JobSignals()
    signals.keep_alive = signals  # held until delivery: callers need not keep a reference to get the callback
    release = lambda *_: setattr(signals, "keep_alive", None)  # noqa: E731
    signals.finished.connect(release)
    signals.failed.connect(release)
    signals.finished.connect(on_done)
    signals.failed.connect(on_error)
    (pool or QThreadPool.globalInstance()).start(_Job(fn, signals))
    return signals
