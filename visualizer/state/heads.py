"""The Heads view's model: which analysis runs, its progress, and the last results (roles, importance).

Roles are cheap (one teacher-forced pass) and refresh on every model change, for the badges on the playground's
maps; importance (one greedy evaluation per head) runs when the user asks, cancellable. Both use the same N seeded
sequences and the same core_model functions as `attention-playground heads`, so the numbers are the CLI's.
"""
from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Protocol

import torch
from PySide6.QtCore import QObject, Signal, SignalInstance

from core_model.head_importance import HeadAnalysis
from core_model.head_roles import HeadRole
from core_model.model import Seq2SeqTransformer
from core_model.tasks import TaskSpec

from .model_hub import ModelHub

log = logging.getLogger(__name__)
DEFAULT_N, DEFAULT_SEED = 200, 1234  # the CLI's defaults
MODEL_CHANGED = "The model changed while the heads were analysed: run it again for this model."


def model_name(hub: ModelHub) -> tuple[str, str]:
    """The model and its task as the Heads tab names them: ("copy_rope.pt", "copy")."""
    path, origin = hub.path, hub.origin
    if path is None or path.name in origin:  # "trained checkpoint copy_rope.pt": the file alone says it
        name = origin if path is None else path.name
    else:  # trained further here: the file it came from, and how it differs
        name = f"{path.name}, {origin}"
    return name, hub.task.task


class HeadsJobApi(Protocol):
    """What the state needs of a job (workers/heads_worker.HeadsJob; the composition root injects it)."""

    progressed: SignalInstance
    finished: SignalInstance
    failed: SignalInstance
    cancelled: SignalInstance

    def start(self) -> None: ...
    def cancel(self) -> None: ...
    def wait(self, timeout_ms: int) -> bool: ...


JobFactory = Callable[[Seq2SeqTransformer, TaskSpec, int, int, torch.device, bool], HeadsJobApi]


class HeadsState(QObject):
    analysis_changed = Signal(object)  # HeadAnalysis | None (None: none yet, or the model changed since)
    roles_changed = Signal(object)  # tuple[HeadRole, ...] | None
    progress_changed = Signal(int, int)  # done, total (0, 0: idle)
    running_changed = Signal(bool)
    message = Signal(str)
    stale_changed = Signal(str)  # why the last analysis no longer describes the model; "" once one does


    def __init__(self, hub: ModelHub, make_job: JobFactory, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.hub, self._make_job = hub, make_job
        self.n, self.seed = DEFAULT_N, DEFAULT_SEED
        self.analysis: HeadAnalysis | None = None
        self.roles: tuple[HeadRole, ...] | None = None
        self.analysed: tuple[str, str] | None = None  # model_name() of the last finished analysis
        self.stale = ""  # what stale_changed last said
        self._job: HeadsJobApi | None = None
        self._roles_job: HeadsJobApi | None = None
        self._generation = hub.generation  # the model the results belong to (a device move keeps it)
        hub.model_changed.connect(self._on_model_changed)

    @property
    def running(self) -> bool:
        return self._job is not None

    def set_sequences(self, n: int, seed: int) -> None:
        """How many sequences and which seed the next analysis uses (the CLI's --n and --seed)."""
        if n < 1 or seed < 0:
            raise ValueError(f"n must be >= 1 and seed >= 0, got n={n}, seed={seed}")
        changed = (n, seed) != (self.n, self.seed)
        self.n, self.seed = n, seed
        if changed:
            self.refresh_roles()

    def start(self) -> bool:
        """Run roles and importance on a copy of the hub's model (the job copies it); False when one is already running."""
        if self._job is not None:
            return False
        job = self._new_job(roles_only=False)
        generation = self.hub.generation
        job.progressed.connect(self.progress_changed)
        job.finished.connect(lambda result: self._on_analysis(result, generation))
        job.failed.connect(lambda text: self._end(text))
        job.cancelled.connect(lambda: self._end("Head importance cancelled; the previous result (if any) stays."
                                                if generation == self.hub.generation else MODEL_CHANGED))
        self._job = job
        self.running_changed.emit(True)
        self.progress_changed.emit(0, 1)
        job.start()
        return True

    def cancel(self) -> None:
        if self._job is not None:
            self._job.cancel()

    def shutdown(self, timeout_ms: int = 5000) -> bool:
        """Cancel the analysis and wait for it and the roles job (closing the window): none outlives its receivers."""
        jobs = [job for job in (self._job, self._roles_job) if job is not None]
        for job in jobs:
            job.cancel()
        if all(job.wait(timeout_ms) for job in jobs):
            return True
        log.warning("a head analysis did not stop within %d ms", timeout_ms)
        return False

    def refresh_roles(self) -> None:
        """Score the roles of the hub's model again (in the background); roles_changed follows."""
        job = self._new_job(roles_only=True)
        generation = self.hub.generation
        job.finished.connect(lambda roles: self._on_roles(roles, generation, job))
        job.failed.connect(self.message)
        self._roles_job = job  # the newest wins: an older job's result is dropped in _on_roles
        job.start()

    def _new_job(self, roles_only: bool) -> HeadsJobApi:
        return self._make_job(self.hub.model, self.hub.task, self.n, self.seed, self.hub.device, roles_only)

    def _on_analysis(self, result: HeadAnalysis, generation: int) -> None:
        if generation != self.hub.generation:
            self._end(MODEL_CHANGED)
            return
        self.analysis, self.analysed = result, model_name(self.hub)
        self._set_stale("")
        self.analysis_changed.emit(result)
        self._end(f"Analysed {len(result.heads)} heads of {self.analysed[0]} on {self.n} {self.analysed[1]} "
                  f"sequences (seed {self.seed}).")

    def _on_roles(self, roles: tuple[HeadRole, ...], generation: int, job: Any) -> None:
        if job is not self._roles_job or generation != self.hub.generation:
            return
        self._roles_job = None
        self.roles = roles
        self.roles_changed.emit(roles)

    def _end(self, text: str) -> None:
        self._job = None
        self.running_changed.emit(False)
        self.progress_changed.emit(0, 0)
        self.message.emit(text)

    def _set_stale(self, text: str) -> None:
        self.stale = text
        self.stale_changed.emit(text)

    def _on_model_changed(self) -> None:
        if self.hub.generation == self._generation:  # the same model and weights on another device: all still true
            return
        self._generation = self.hub.generation
        self.cancel()
        if self.analysed is not None:  # its numbers are dropped below; what they were of stays said until the next
            (name, task), now = self.analysed, model_name(self.hub)
            change = f"the model is now {now[0]} ({now[1]} task)" if now != self.analysed else "its weights changed"
            self._set_stale(f"Out of date: the last analysis scored {name} on {task} sequences; {change}. Its "
                            "importance numbers are cleared: press Analyse heads to score this model.")
            self.message.emit("")  # "Analysed ..." is about the old model: the stale note says what it was
        if self.analysis is not None:
            self.analysis = None
            self.analysis_changed.emit(None)
        if self.roles is not None:  # the old model's badges must not sit on the new model's maps meanwhile
            self.roles = None
            self.roles_changed.emit(None)
        self.refresh_roles()
