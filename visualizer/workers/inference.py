"""The playground's inference thread: latest-wins coalescing of forward passes, results back on the GUI thread.

At most one job runs and at most one waits. A newer job replaces the waiting one (a burst of keys runs at most one
pass behind the newest text), and a finished job whose successor is already waiting is dropped unseen: its result
is stale. The next job starts once the previous result has been handed to the GUI thread (its callback returned;
the repaint follows on the event loop), so a pass does not race the GUI for the frame before it. Keys that arrive
while a pass runs mark a burst: when passes take at least SETTLE_S, the waiting job then starts when the typing
pauses (SETTLE_S) or after MAX_WAIT_PASSES passes' time; a quicker pass starts at once. "Passes take" is the longest
of the last RECENT_PASSES that succeeded: one quick pass (a shorter input) must not switch the rule off in the
middle of a burst. Ordered jobs (the decoder stepper's commands) form a queue in front of that slot: they run one
after another in the order given, each result is delivered, and each one drops a waiting plain job (its request
already describes the newer state). The jobs are
plain functions over immutable requests (`visualizer.state.inference.run_pass`); this module knows nothing about
what they compute.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QCoreApplication, QEventLoop, QObject, Qt, Signal

from visualizer.workers.torch_threads import INFERENCE_THREADS, use_torch_threads

log = logging.getLogger(__name__)
SETTLE_S = 0.025  # during a burst, a pause in the typing this long starts the next pass (fast keys: 10-20 ms apart)
MAX_WAIT_PASSES = 3.0  # ... and it never waits longer than this many times a pass's duration
RECENT_PASSES = 3  # how many pass durations decide whether a burst waits for a pause
_Item = tuple[Callable[[], Any], Callable[[Any], None], Callable[[str], None]]


class ThreadedRunner(QObject):
    """One daemon thread that runs the newest submitted job; `deliver`/`fail` run on the thread owning the runner."""

    _finished = Signal(object)  # (callback, value), emitted on the worker thread, queued to the GUI thread

    def __init__(self, name: str = "inference") -> None:
        super().__init__()
        self._cond = threading.Condition()
        self._pending: _Item | None = None
        self._ordered: deque[_Item] = deque()  # run before the pending job, oldest first, never dropped
        self._running = False
        self._closed = False
        self._in_transit = 0  # results emitted but not yet handed to their callback on the GUI thread
        self.started_jobs = 0  # how many jobs began running (benchmarks count the passes a burst costs)
        self._submitted_at = 0.0  # monotonic time of the newest plain job
        self._burst = False  # a plain job arrived while a pass was running: the user types faster than passes run
        self._recent_passes: deque[float] = deque(maxlen=RECENT_PASSES)  # seconds, newest last
        self._finished.connect(self._hand_over, Qt.ConnectionType.QueuedConnection)
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)
        self._thread.start()

    @property
    def idle(self) -> bool:
        """Nothing waiting, nothing running, nothing on its way to the GUI thread."""
        with self._cond:
            return self._pending is None and not self._ordered and not self._running and self._in_transit == 0

    def submit(self, job: Callable[[], Any], deliver: Callable[[Any], None], fail: Callable[[str], None]) -> None:
        """Queue `job`, replacing a job that has not started yet (latest wins)."""
        with self._cond:
            if self._closed:
                return
            self._pending = (job, deliver, fail)
            self._submitted_at = time.monotonic()
            self._burst = self._burst or self._running
            self._cond.notify()

    def submit_ordered(
        self, job: Callable[[], Any], deliver: Callable[[Any], None], fail: Callable[[str], None]
    ) -> None:
        """Queue `job` behind earlier ordered jobs; it replaces a plain job that has not started yet."""
        with self._cond:
            if self._closed:
                return
            self._ordered.append((job, deliver, fail))
            self._pending = None
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
            self._ordered.clear()
            self._cond.notify_all()
        self._thread.join(timeout_s)

    # ----- worker thread -----
    def _loop(self) -> None:
        threads_chosen = False  # set before the first job: torch is imported by then, not at start-up
        while True:
            with self._cond:
                # a result still on its way to the GUI thread holds the next job back: that pass would compete with
                # drawing for the CPU and then read older text than the one that waits after the drawing
                while (self._pending is None and not self._ordered or self._in_transit) and not self._closed:
                    self._cond.wait()
                if self._closed:
                    return
                # waiting pays only for passes longer than the pause it waits for: started at once, the final
                # text's maps come at most two passes after its key, sooner than a SETTLE_S wait plus one pass
                if self._burst and not self._ordered and self._pass_s() >= SETTLE_S:
                    self._settle()
                    if self._closed:
                        return
                self._burst = False
                ordered = bool(self._ordered)
                if ordered:
                    job, deliver, fail = self._ordered.popleft()
                else:
                    (job, deliver, fail), self._pending = self._pending, None
                self._running = True
                self.started_jobs += 1
            if not threads_chosen:
                use_torch_threads(INFERENCE_THREADS)
                threads_chosen = True
            started, ok = time.monotonic(), True
            try:
                callback, value = deliver, job()
            except Exception as exc:  # noqa: BLE001 - a failed pass reaches the user as a sentence
                log.warning("forward pass failed", exc_info=True)
                callback, value, ok = fail, f"{type(exc).__name__}: {exc}", False
            with self._cond:
                self._running = False
                if ok:  # a failed job says nothing about how long passes take
                    self._recent_passes.append(time.monotonic() - started)
                # a plain job with a newer job waiting is stale: its result is never drawn
                stale = self._closed or (not ordered and (self._pending is not None or bool(self._ordered)))
                if not stale:
                    self._in_transit += 1
            if not stale:
                self._finished.emit((callback, value))

    def _pass_s(self) -> float:
        """How long a pass takes now (lock held): the longest of the last few, 0 before the first."""
        return max(self._recent_passes, default=0.0)

    def _settle(self) -> None:
        """Hold the waiting job (lock held) until the typing pauses for SETTLE_S, or for at most MAX_WAIT_PASSES
        passes: a pass started mid-burst is stale before it ends. A burst of 8 keys 10 ms apart on a 33 ms model
        then costs 1-2 passes after the first instead of 3, and its final maps arrive no later."""
        deadline = time.monotonic() + max(SETTLE_S, MAX_WAIT_PASSES * self._pass_s())
        while not self._closed and not self._ordered:
            now = time.monotonic()
            wake = min(self._submitted_at + SETTLE_S, deadline)
            if now >= wake:
                return
            self._cond.wait(wake - now)

    # ----- GUI thread -----
    def _hand_over(self, item: tuple[Callable[[Any], None], Any]) -> None:
        callback, value = item
        try:
            callback(value)
        finally:
            with self._cond:
                self._in_transit -= 1
                self._cond.notify()
