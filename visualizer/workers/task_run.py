"""One submission run on a pool thread: the task called with its TaskState, and exactly one outcome sent.

The outcome is "finished" with the task's result, "cancelled" when it stopped as asked (however it stopped), or
"failed" with the slot's name and the error's first line. A failure is logged with its traceback as a fault, unless
it is one of the slot's refusals (the input's fault, said by the slot's owner): that traceback goes to debug only.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from contextlib import nullcontext
from typing import Any, Protocol

from visualizer.workers.gc_policy import gc_paused
from visualizer.workers.task_state import Cancelled, TaskState, first_line

log = logging.getLogger(__name__)
Task = Callable[..., Any]  # fn(state: TaskState, *inputs) -> result
Job = tuple[Task, tuple, object]  # a submission: fn, its inputs, the slot's context then


class RunSettings(Protocol):
    """What a run reads of its slot (TaskSlot)."""

    what: str  # the slot's name, the failure sentence's subject
    pause_gc: bool  # hold the garbage-collector pause while the task runs
    threads: Callable[[], None]  # called on the pool thread before the task (torch's thread count)
    refusals: tuple[type[Exception], ...]  # errors that are the input's fault


class TaskRun:
    """One submission, called on a pool thread: runs the task and sends exactly one outcome."""

    def __init__(self, job: Job, send: Callable[[str, Any], bool], slot: RunSettings, ordered: bool):
        self.fn, self.inputs, self.context = job  # context: the slot's context when the task was submitted
        self.send, self.ordered = send, ordered
        self.what, self.pause_gc, self.threads, self.refusals = slot.what, slot.pause_gc, slot.threads, slot.refusals
        self.state = TaskState(lambda snapshot: send("progress", snapshot))
        self.seconds = 0.0  # how long the task ran, set before its outcome is sent
        self.done = threading.Event()

    def __call__(self) -> None:
        try:
            kind, payload = self._outcome()
            self.send(kind, payload)
        finally:
            self.done.set()

    def _outcome(self) -> tuple[str, Any]:
        """Run the task; the collector hold (when asked) ends before the outcome is sent."""
        self.threads()
        started = time.monotonic()
        try:
            with gc_paused() if self.pause_gc else nullcontext():  # a full collection mid-task would stall the GUI
                return "finished", self.fn(self.state, *self.inputs)
        except Exception as exc:  # noqa: BLE001 - reported as a sentence, never raised into the event loop
            if isinstance(exc, Cancelled) or self.state.cancelled:  # stopped as asked, in whatever way it stopped
                return "cancelled", None
            if isinstance(exc, self.refusals):  # the input's fault, said by the slot's owner: no traceback to show
                log.debug("%s refused its input", self.what, exc_info=True)
            else:
                log.warning("%s failed", self.what, exc_info=True)
            return "failed", (self.what, first_line(exc))
        finally:
            self.seconds = time.monotonic() - started
