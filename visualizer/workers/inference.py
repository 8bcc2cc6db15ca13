"""The playground's inference thread: latest-wins coalescing of forward passes, results back on the GUI thread.

At most one job runs and at most one waits. A newer job replaces the waiting one (a burst of keys runs at most one
pass behind the newest text), and a finished job whose successor is already waiting is dropped unseen: its result
is stale. The jobs are plain functions over immutable requests (`visualizer.state.inference.run_pass`); this module
knows nothing about what they compute.
"""
from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QCoreApplication, QEventLoop, QObject, Qt, Signal

log = logging.getLogger(__name__)
_Item = tuple[Callable[[], Any], Callable[[Any], None], Callable[[str], None]]


class ThreadedRunner(QObject):
    """One daemon thread that runs the newest submitted job; `deliver`/`fail` run on the thread owning the runner."""

    _finished = Signal(object)  # (callback, value), emitted on the worker thread, queued to the GUI thread

    def __init__(self, name: str = "inference") -> None:
        super().__init__()
        self._cond = threading.Condition()
        self._pending: _Item | None = None
        self._running = False
        self._closed = False
        self._in_transit = 0  # results emitted but not yet handed to their callback on the GUI thread
        self.started_jobs = 0  # how many jobs began running (benchmarks count the passes a burst costs)
        self._finished.connect(self._hand_over, Qt.ConnectionType.QueuedConnection)
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)
        self._thread.start()

    @property
    def idle(self) -> bool:
        """Nothing waiting, nothing running, nothing on its way to the GUI thread."""
        with self._cond:
            return self._pending is None and not self._running and self._in_transit == 0

    def submit(self, job: Callable[[], Any], deliver: Callable[[Any], None], fail: Callable[[str], None]) -> None:
        """Queue `job`, replacing a job that has not started yet (latest wins)."""
        with self._cond:
            if self._closed:
                return
            self._pending = (job, deliver, fail)
            self._cond.notify()

    def wait_idle(self, timeout_s: float = 10.0) -> bool:
        """Process events until every submitted job is delivered (tests, benchmarks, shutdown); False on timeout."""
        deadline = time.monotonic() + timeout_s
        while not self.idle:
            if time.monotonic() > deadline:
                return False
            QCoreApplication.processEvents(QEventLoop.ProcessEventsFlag.AllEvents, 5)
        return True

    def shutdown(self, timeout_s: float = 5.0) -> None:
        """Drop what waits, let a running pass end, join the thread."""
        with self._cond:
            self._closed, self._pending = True, None
            self._cond.notify_all()
        self._thread.join(timeout_s)

    # ----- worker thread -----
    def _loop(self) -> None:
        while True:
            with self._cond:
                while self._pending is None and not self._closed:
                    self._cond.wait()
                if self._closed:
                    return
                (job, deliver, fail), self._pending = self._pending, None
                self._running = True
                self.started_jobs += 1
            try:
                callback, value = deliver, job()
            except Exception as exc:  # noqa: BLE001 - a failed pass reaches the user as a sentence
                log.warning("forward pass failed", exc_info=True)
                callback, value = fail, f"{type(exc).__name__}: {exc}"
            with self._cond:
                self._running = False
                stale = self._pending is not None or self._closed  # a newer job waits: this result is never drawn
                if not stale:
                    self._in_transit += 1
            if not stale:
                self._finished.emit((callback, value))

    # ----- GUI thread -----
    def _hand_over(self, item: tuple[Callable[[Any], None], Any]) -> None:
        callback, value = item
        try:
            callback(value)
        finally:
            with self._cond:
                self._in_transit -= 1
