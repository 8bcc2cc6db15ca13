"""The one task layer: every piece of background work in the app is a plain function run through a TaskSlot.

A task is `fn(state, *inputs)` (Orange's `run(inputs, state)` shape). It runs on a pool thread, reports snapshots
with `state.report(...)` (progress or partial results) and polls `state.cancelled` (or calls `state.check()`, which
raises Cancelled) between units of work. It never touches Qt. A TaskSlot, a QObject on the GUI thread, owns one
feature's tasks: submitting a new one supersedes the older (its cancel is requested and its outcome is dropped unseen:
a token per submission), `cancel()` stops the latest cooperatively, and `shutdown()` cancels and waits a bounded
time. A slot given a `context` (the hub's model) holds back a result whose context changed since it was submitted
and emits `overtaken`: a feature need not check that its result still fits the model. Outcomes arrive as queued
signals on the GUI thread; a slot that was deleted meanwhile receives nothing, and the task is told to stop.

A coalescing slot (`coalesce=True`: the keystroke path, model B, a cell) never runs two tasks at once: a newer
submission replaces the single waiting one, the running one's stale outcome is dropped, and the waiting task starts
once that outcome was handled on the GUI thread (so it does not compete with drawing it). `submit_ordered` queues
tasks that run in order in front of the waiting one, each delivered. An optional Pacing may delay the waiting task.
"""

from __future__ import annotations

import logging
import math
import time
from collections import deque
from collections.abc import Callable
from typing import Any, Protocol

from PySide6.QtCore import QObject, Qt, QThreadPool, QTimer, Signal, Slot

from visualizer.workers.task_run import Job, Task, TaskRun
from visualizer.workers.task_state import emit_safely, failure_message
from visualizer.workers.torch_threads import use_background_threads

log = logging.getLogger(__name__)
_ONE_OFFS: set[TaskSlot] = set()  # run_task's slots, held until they report


class Pacing(Protocol):
    """When a coalescing slot starts its waiting task (the keystroke path waits for a pause in the typing)."""

    def submitted(self, running: bool) -> None: ...  # a plain submission arrived; whether a task was running
    def delay_s(self) -> float: ...  # how long the waiting task should still wait; 0: start it now
    def started(self) -> None: ...  # a task started
    def ran(self, seconds: float) -> None: ...  # a task finished (not failed) after this long on its thread


class _Relay(QObject):
    """One submission's line to its slot: the pool thread emits it; Qt queues it to the slot's thread."""

    sent = Signal(int, str, object)  # token, kind ("progress", "finished", "failed", "cancelled"), payload


class TaskSlot(QObject):
    """One feature's background work: the latest submission wins; its outcome arrives here on the GUI thread.

    Exactly one of finished / failed / cancelled / overtaken follows each submission not superseded, then `idle`.
    """

    progressed = Signal(object)  # what the task reported, in order
    finished = Signal(object)  # the task's return value
    failed = Signal(str)  # the one sentence: "<what> failed: <first line of the error>"
    error_line = Signal(str)  # the same failure's first line alone, for a caller whose own sentence says what failed
    cancelled = Signal()  # the task stopped after cancel()
    overtaken = Signal()  # the task finished, but the context it was submitted in has changed: its result is dropped
    idle = Signal()  # the latest submission has ended (a coalescing slot: nothing is left to run)

    def __init__(
        self,
        what: str,
        parent: QObject | None = None,
        *,
        pause_gc: bool = False,
        pool: QThreadPool | None = None,
        coalesce: bool = False,
        pacing: Pacing | None = None,
        threads: Callable[[], None] = use_background_threads,
        context: Callable[[], object] = lambda: None,
        refusals: tuple[type[Exception], ...] = (),
    ) -> None:
        """pacing implies coalesce; threads: called on the pool thread before each task (torch's thread count);
        context: what a result depends on besides its inputs, read on the GUI thread at submission and delivery;
        refusals: errors that say the input is bad (a refused file), not that the app is: the owner logs its one
        line, so the traceback is logged at debug only (any other error is logged with it, as a fault)."""
        super().__init__(parent)
        self.what, self.pause_gc, self.threads, self.context = what, pause_gc, threads, context
        self.refusals = refusals
        self._pool = pool or QThreadPool.globalInstance()
        self._coalesce, self._pacing = coalesce or pacing is not None, pacing
        self.started = 0  # how many tasks began (benchmarks count the passes a burst of keys costs)
        self._token = 0
        self._current: tuple[int, TaskRun] | None = None
        self._handing_over = False  # an outcome's signals are being handled: the next task starts after them
        self._waiting: Job | None = None  # a coalescing slot's next plain task
        self._ordered: deque[Job] = deque()  # ... and its ordered ones, run first, oldest first
        self._live: dict[int, TaskRun] = {}  # submissions whose thread has not ended (superseded ones too)
        live = self._live  # not self: the handler runs while this object is being destroyed

        def cancel_live() -> None:
            for run in list(live.values()):
                run.state.cancel()

        self.destroyed.connect(cancel_live)
        self._timer = QTimer(self)  # a paced slot's waiting task starts when it fires
        self._timer.setSingleShot(True)
        self._timer.setTimerType(Qt.TimerType.PreciseTimer)
        self._timer.timeout.connect(self._start_next)

    @property
    def running(self) -> bool:
        """Some submission has not delivered its outcome yet (or, coalescing, still waits to run)."""
        return self._current is not None or self._waiting is not None or bool(self._ordered)

    @property
    def active(self) -> int:
        """Submissions whose task has not ended, superseded ones included (tests wait for 0)."""
        return len(self._live)

    def submit(self, fn: Task, *inputs: Any) -> None:
        """Start fn(state, *inputs); an earlier submission still running is superseded (coalescing: it goes on, its
        outcome dropped, and this one waits for it, replacing any other waiting one)."""
        job = (fn, inputs, self.context())
        if not self._coalesce:
            self._supersede()
            self._launch(job, ordered=False)
            return
        if self._pacing is not None:
            self._pacing.submitted(self._current is not None)
        self._waiting = job
        self._start_next()

    def submit_ordered(self, fn: Task, *inputs: Any) -> None:
        """A coalescing slot's task that runs after the ordered ones before it, its outcome always delivered (as
        `overtaken` when its context changed); it replaces the waiting plain task (whose inputs it describes)."""
        self._ordered.append((fn, inputs, self.context()))
        self._waiting = None
        self._start_next()

    def cancel(self) -> None:
        """Ask the latest task to stop; its cancelled (or, if it returns a partial result, finished) still follows."""
        if self._current is not None:
            self._current[1].state.cancel()

    def discard(self) -> None:
        """Drop the latest submission (the user went back): its cancel is requested and nothing of it is shown."""
        self._supersede()

    def shutdown(self, timeout_ms: int = 5000) -> bool:
        """Cancel everything and wait for the threads (closing the window); nothing is delivered afterwards."""
        self._supersede()
        for run in list(self._live.values()):
            run.state.cancel()
        deadline = time.monotonic() + timeout_ms / 1000
        ended = all(run.done.wait(max(0.0, deadline - time.monotonic())) for run in list(self._live.values()))
        if not ended:
            log.warning("%s did not stop within %d ms", self.what, timeout_ms)
        return ended

    def _launch(self, job: Job, ordered: bool) -> None:
        self._token += 1
        token, relay = self._token, _Relay()
        relay.sent.connect(self._deliver, Qt.ConnectionType.QueuedConnection)  # cut by Qt if this slot is deleted
        # bound to no thread: the pool thread may emit it and drop it (Qt takes nullptr; the stubs say QThread only)
        relay.moveToThread(None)  # type: ignore[arg-type]

        def send(kind: str, payload: Any) -> bool:
            return emit_safely(relay.sent, token, kind, payload)

        run = TaskRun(job, send, self, ordered)
        self._current, self._live[token] = (token, run), run
        self.started += 1
        pool = self._pool
        if pool.activeThreadCount() >= pool.maxThreadCount():  # every task starts at once: none queues behind another
            pool.setMaxThreadCount(pool.activeThreadCount() + 1)
        pool.start(run)

    def _start_next(self) -> None:
        """A coalescing slot with nothing running starts its next task: an ordered one, else the waiting one."""
        if self._current is not None or self._handing_over:
            return
        if self._ordered:
            job, ordered = self._ordered.popleft(), True
        elif self._waiting is not None:
            delay = self._pacing.delay_s() if self._pacing is not None else 0.0
            if delay > 0:
                self._timer.start(max(1, math.ceil(delay * 1000)))
                return
            job, ordered, self._waiting = self._waiting, False, None
        else:
            return
        self._timer.stop()
        if self._pacing is not None:
            self._pacing.started()
        self._launch(job, ordered)

    def _supersede(self) -> None:
        """The current submission becomes stale: asked to stop, its outcome never shown; nothing waits any more."""
        if self._current is not None:
            self._current[1].state.cancel()
            self._current = None
        self._waiting = None
        self._ordered.clear()
        self._timer.stop()
        self._token += 1

    @Slot(int, str, object)  # a real slot: the relay's connection is plain Qt, with no Python receiver object
    def _deliver(self, token: int, kind: str, payload: Any) -> None:
        run = self._live.get(token) if kind == "progress" else self._live.pop(token, None)
        if self._current is None or token != self._current[0] or run is None:
            return  # a superseded or shut-down submission: dropped unseen
        if kind == "progress":
            self.progressed.emit(payload)
            return
        self._current = None
        if self._pacing is not None and kind == "finished":
            self._pacing.ran(run.seconds)
        if kind == "finished" and run.context != self.context():
            kind = "overtaken"
        if run.ordered or (self._waiting is None and not self._ordered):  # else stale: a newer task waits
            self._handing_over = True
            try:
                self._emit_outcome(kind, payload)
            finally:
                self._handing_over = False
        self._start_next()
        if not self._coalesce or not self.running:
            self.idle.emit()

    def _emit_outcome(self, kind: str, payload: Any) -> None:
        if kind == "finished":
            self.finished.emit(payload)
        elif kind == "failed":
            what, line = payload
            self.error_line.emit(line)
            self.failed.emit(failure_message(what, line))
        elif kind == "overtaken":
            self.overtaken.emit()
        else:
            self.cancelled.emit()


def one_warm_thread() -> QThreadPool:
    """A pool of one thread that never expires, for a coalescing slot on a hot path (the keystroke passes): each
    task runs on the same warm thread, as the global pool's first-in-first-out reuse of idle threads would not."""
    pool = QThreadPool()
    pool.setMaxThreadCount(1)
    pool.setExpiryTimeout(-1)
    return pool


def run_task(
    what: str,
    fn: Callable[[], Any],
    on_done: Callable[[Any], None],
    on_error: Callable[[str], None],
    pool: QThreadPool | None = None,
) -> TaskSlot:
    """A one-off task with callbacks (open a file, build a model): its own slot, kept alive until it reports.
    on_error receives the error's first line: the caller's sentence ("Could not open x.pt") says what failed."""
    slot = TaskSlot(what, pool=pool)
    _ONE_OFFS.add(slot)  # released on delivery: callers need not keep a reference to get the callback
    slot.finished.connect(on_done)
    slot.error_line.connect(on_error)
    slot.idle.connect(lambda: _ONE_OFFS.discard(slot))
    slot.submit(lambda _state: fn())
    return slot


def wait_for_tasks(timeout_ms: int, pool: QThreadPool | None = None) -> bool:
    """Let running tasks end while the app's objects still exist (before exit deletes them); False on timeout."""
    if (pool or QThreadPool.globalInstance()).waitForDone(timeout_ms):
        return True
    log.warning("background tasks were still running %d ms after the window closed", timeout_ms)
    return False
