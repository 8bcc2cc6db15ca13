"""The one task layer: every piece of background work in the app is a plain function run through a TaskSlot.

A task is `fn(state, *inputs)` (Orange's `run(inputs, state)` shape). It runs on a pool thread, reports snapshots
with `state.report(...)` (progress or partial results) and polls `state.cancelled` (or calls `state.check()`, which
raises Cancelled) between units of work. It never touches Qt. A TaskSlot, a QObject on the GUI thread, owns one
feature's tasks: submitting a new one supersedes the older (its cancel is requested and its outcome is dropped unseen:
a token per submission is the one stale-result check), `cancel()` stops the latest cooperatively, and `shutdown()`
cancels and waits a bounded time. Outcomes arrive as queued signals on the GUI thread; a slot that was deleted
meanwhile simply receives nothing, and the task is told to stop.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, Qt, QThreadPool, Signal, SignalInstance, Slot

from visualizer.workers.gc_policy import GcHold
from visualizer.workers.torch_threads import use_background_threads

log = logging.getLogger(__name__)
Task = Callable[..., Any]  # fn(state: TaskState, *inputs) -> result


class Cancelled(Exception):
    """Raised by TaskState.check() once the task's cancel was requested."""


def first_line(exc: BaseException) -> str:
    """The error as one line for a status bar: its message's first line, or its type when it has none."""
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__


def failure_message(what: str, exc: BaseException) -> str:
    """The one sentence every failed task shows: "<what> failed: <first line of the error>"."""
    return f"{what} failed: {first_line(exc)}"


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


class _Run:
    """One submission, called on a pool thread: runs the task and sends exactly one outcome."""

    def __init__(
        self, fn: Task, inputs: tuple, state: TaskState, send: Callable[[str, Any], bool], what: str, pause_gc: bool
    ) -> None:
        self.fn, self.inputs, self.state, self.send, self.what, self.pause_gc = fn, inputs, state, send, what, pause_gc
        self.done = threading.Event()

    def __call__(self) -> None:
        try:
            kind, payload = self._outcome()
            self.send(kind, payload)
        finally:
            self.done.set()

    def _outcome(self) -> tuple[str, Any]:
        """Run the task; the collector hold (when asked) ends before the outcome is sent."""
        use_background_threads()
        hold = GcHold() if self.pause_gc else None  # a full collection mid-task would stall the GUI
        try:
            return "finished", self.fn(self.state, *self.inputs)
        except Exception as exc:  # noqa: BLE001 - reported as a sentence, never raised into the event loop
            if isinstance(exc, Cancelled) or self.state.cancelled:  # stopped as asked, in whatever way it stopped
                return "cancelled", None
            log.warning("%s failed", self.what, exc_info=True)
            return "failed", failure_message(self.what, exc)
        finally:
            if hold is not None:
                hold.end()


class _Relay(QObject):
    """One submission's line to its slot: the pool thread emits it; Qt queues it to the slot's thread."""

    sent = Signal(int, str, object)  # token, kind ("progress", "finished", "failed", "cancelled"), payload


class TaskSlot(QObject):
    """One feature's background work: the latest submission wins; its outcome arrives here on the GUI thread.

    Exactly one of finished / failed / cancelled follows each submission that is not superseded, then `idle`.
    """

    progressed = Signal(object)  # what the task reported, in order
    finished = Signal(object)  # the task's return value
    failed = Signal(str)  # failure_message(what, error)
    cancelled = Signal()  # the task stopped after cancel()
    idle = Signal()  # the latest submission has ended: a new one may start

    def __init__(
        self, what: str, parent: QObject | None = None, *, pause_gc: bool = False, pool: QThreadPool | None = None
    ) -> None:
        super().__init__(parent)
        self.what, self._pause_gc, self._pool = what, pause_gc, pool or QThreadPool.globalInstance()
        self._token = 0
        self._current: tuple[int, TaskState] | None = None
        self._live: dict[int, _Run] = {}  # submissions whose thread has not ended (superseded ones too)
        live = self._live  # not self: the handler runs while this object is being destroyed
        self.destroyed.connect(lambda: [run.state.cancel() for run in list(live.values())])

    @property
    def running(self) -> bool:
        """The latest submission has not delivered its outcome yet."""
        return self._current is not None

    @property
    def active(self) -> int:
        """Submissions whose task has not ended, superseded ones included (tests wait for 0)."""
        return len(self._live)

    def submit(self, fn: Task, *inputs: Any) -> int:
        """Start fn(state, *inputs) now; an earlier submission still running is cancelled and its outcome dropped."""
        self._supersede()
        self._token += 1
        token, relay = self._token, _Relay()
        relay.sent.connect(self._deliver, Qt.ConnectionType.QueuedConnection)  # cut by Qt if this slot is deleted
        relay.moveToThread(None)  # bound to no thread: the pool thread may emit it and drop it

        def send(kind: str, payload: Any) -> bool:
            return emit_safely(relay.sent, token, kind, payload)

        run = _Run(fn, inputs, TaskState(lambda snapshot: send("progress", snapshot)), send, self.what, self._pause_gc)
        self._current, self._live[token] = (token, run.state), run
        pool = self._pool
        if (
            pool.activeThreadCount() >= pool.maxThreadCount()
        ):  # every task starts at once: none queues behind a long one
            pool.setMaxThreadCount(pool.activeThreadCount() + 1)
        pool.start(run)
        return token

    def cancel(self) -> None:
        """Ask the latest task to stop; its cancelled (or, if it returns a partial result, finished) still follows."""
        if self._current is not None:
            self._current[1].cancel()

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

    def _supersede(self) -> None:
        """The current submission becomes stale: asked to stop, its outcome never shown."""
        if self._current is not None:
            self._current[1].cancel()
            self._current = None
        self._token += 1

    @Slot(int, str, object)  # a real slot: the relay's connection is plain Qt, with no Python receiver object
    def _deliver(self, token: int, kind: str, payload: Any) -> None:
        if kind != "progress":
            self._live.pop(token, None)
        if self._current is None or token != self._current[0]:
            return  # a superseded or shut-down submission: dropped unseen
        if kind == "progress":
            self.progressed.emit(payload)
            return
        self._current = None
        if kind == "finished":
            self.finished.emit(payload)
        elif kind == "failed":
            self.failed.emit(payload)
        else:
            self.cancelled.emit()
        self.idle.emit()


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
    slot.keep_alive = slot  # released on delivery: callers need not keep a reference to get the callback
    slot.finished.connect(on_done)
    slot.failed.connect(lambda message: on_error(message.removeprefix(f"{what} failed: ")))
    slot.idle.connect(lambda: setattr(slot, "keep_alive", None))
    slot.submit(lambda _state: fn())
    return slot


def wait_for_tasks(timeout_ms: int, pool: QThreadPool | None = None) -> bool:
    """Let running tasks end while the app's objects still exist (before exit deletes them); False on timeout."""
    if (pool or QThreadPool.globalInstance()).waitForDone(timeout_ms):
        return True
    log.warning("background tasks were still running %d ms after the window closed", timeout_ms)
    return False
