"""What the training state needs of a training worker; the composition root supplies the real one.

Typed here so that `state/` never imports `workers/`: workers depend on the state's message types, not back.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

import torch
from PySide6.QtCore import QThread, SignalInstance

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
