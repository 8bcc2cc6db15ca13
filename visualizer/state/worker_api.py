"""What the states need of background work (a task slot; a training worker); the composition root supplies them.

Typed here so that `state/` never imports `workers/`: workers depend on the state's message types, not back.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

import torch
from PySide6.QtCore import QObject, QThread, SignalInstance

from core_model.tasks import TaskSpec
from core_model.training import TrainConfig

from .snapshots import TrainingOutcome, WorkerOptions


class TrainingWorkerApi(Protocol):
    """A QObject that trains on its own thread, reports through signals and stops or pauses when asked."""

    progressed: SignalInstance  # ProgressSnapshot
    evaluated: SignalInstance  # EvalSnapshot
    probe_updated: SignalInstance  # ProbeSnapshot
    paused: SignalInstance  # TrainingOutcome (reason "paused")
    finished: SignalInstance  # TrainingOutcome: always the last signal of a run
    failed: SignalInstance  # a sentence for the status line
    out_of_memory: SignalInstance  # a sentence; the run may continue on the CPU
    weights_copied: SignalInstance  # TrainingOutcome (reason "running"): the weights asked for by request_weights
    outcome: TrainingOutcome | None

    def moveToThread(self, thread: QThread) -> bool: ...  # Qt's name
    def run(self) -> None: ...
    def request_stop(self) -> None: ...
    def request_pause(self) -> None: ...
    def request_resume(self) -> None: ...
    def request_weights(self) -> None: ...


WorkerFactory = Callable[[torch.nn.Module, TaskSpec, TrainConfig, torch.device, WorkerOptions], TrainingWorkerApi]


class TaskStateApi(Protocol):
    """What a task function `fn(state, *inputs)` is handed (workers/tasks.TaskState)."""

    @property
    def cancelled(self) -> bool: ...
    def check(self) -> None: ...  # raises the layer's Cancelled once cancel was asked for
    def report(self, snapshot: Any) -> None: ...
    def step(self, snapshot: Any) -> None: ...


class TaskSlotApi(Protocol):
    """One feature's background work, latest wins (workers/tasks.TaskSlot)."""

    what: str  # named in the failure sentence; a slot serving several kinds of task may rename it before submit

    progressed: SignalInstance  # what the task reported
    finished: SignalInstance  # its result
    failed: SignalInstance  # "<what> failed: <first line of the error>"
    cancelled: SignalInstance
    idle: SignalInstance  # the latest submission has ended

    @property
    def running(self) -> bool: ...
    def submit(self, fn: Callable[..., Any], *inputs: Any) -> int: ...
    def cancel(self) -> None: ...
    def shutdown(self, timeout_ms: int = 5000) -> bool: ...


class SlotFactory(Protocol):
    """workers/tasks.TaskSlot itself: `TaskSlot(what, parent, pause_gc=...)`."""

    def __call__(self, what: str, parent: QObject | None = None, *, pause_gc: bool = False) -> TaskSlotApi: ...
