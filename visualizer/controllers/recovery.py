"""Recovery saves of unsaved training, like an editor's autosave, and the offer to restore them at the next launch.

While there is training nobody saved, it is written to this app's recovery file every AUTOSAVE_INTERVAL_S (the
running weights come from the training worker, copied between two steps) and at once when a signal ends the app.
The file is deleted once the work is saved or let go (a clean close, File > Open after Discard, ...); a save
while a run trains on leaves it, since the run's newer weights are only there.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import torch
from PySide6.QtCore import QObject, QTimer, Signal

from core_model.tasks import TaskSpec
from visualizer.controllers.recovery_files import (
    RecoveryPayload,
    RecoveryStore,
    last_step,
    recovery_folder,
    recovery_meta,
)
from visualizer.controllers.recovery_offer import RecoveryOffer
from visualizer.state.model_hub import ModelHub
from visualizer.state.snapshots import ModelInfo, TrainingOutcome
from visualizer.state.training import TrainingState
from visualizer.widgets.common.recovery_banner import RecoveryBanner
from visualizer.workers.tasks import run_task

log = logging.getLogger(__name__)
AUTOSAVE_INTERVAL_S = 120.0  # how much running training a kill can cost at most
STOP_TIMEOUT_MS = 10_000  # how long quitting on a signal waits for the training thread to hand its weights back
TRAINING_ELSEWHERE = ("running", "stopping")  # the run's newest weights are in the training thread, not the hub


class Recovery(QObject):
    """Keeps this app's recovery file in step with its unsaved training, and offers files earlier apps left."""

    written = Signal(str)  # the recovery file's path, after each write

    def __init__(
        self,
        hub: ModelHub,
        training: TrainingState,
        show_message: Callable[..., None],
        confirm_discard: Callable[[str], bool],
        parent: QObject | None = None,
        *,
        folder: Path | None = None,
        interval_s: float = AUTOSAVE_INTERVAL_S,
    ) -> None:
        super().__init__(parent)
        self.hub, self.training, self._status = hub, training, show_message
        self.store = RecoveryStore(folder or recovery_folder())
        self.banner = RecoveryBanner()  # the composition root places it in the window
        self.offer = RecoveryOffer(hub, training, self.banner, confirm_discard, self._status, self.adopt)
        self._has_file = False  # a write or adoption was asked for since the last deletion
        self._written_generation: int | None = None  # the hub state last written
        self._asked_progress: object = None  # the progress report current when the running weights were asked for
        self._closed = False  # the app is closing: a copy still on its way must not bring the file back
        self._holds_running = False  # the newest write asked for holds a run's weights, newer than the hub's
        self.stop_timeout_ms = STOP_TIMEOUT_MS
        self._timer = QTimer(self)
        self._timer.timeout.connect(self._tick)
        self.interval_s = interval_s
        hub.info_changed.connect(self._on_info)
        training.weights_copied.connect(self._write_running)

    @property
    def interval_s(self) -> float:
        return self._timer.interval() / 1000

    @interval_s.setter
    def interval_s(self, seconds: float) -> None:
        self._timer.start(max(1, round(seconds * 1000)))

    def start(self) -> None:
        """Offer what earlier apps left (the model is ready)."""
        self.offer.start(self.store.folder, self.store.path)

    # ----- writing -----
    def _tick(self) -> None:
        """Write unsaved training newer than the last write: the running weights, else the hub's."""
        training, hub = self.training, self.hub
        if training.state == "running":
            progress = training.progress
            if progress is not None and progress is not self._asked_progress and training.request_weights():
                self._asked_progress = progress  # the copy arrives as weights_copied
        elif training.state != "stopping" and hub.dirty and hub.generation != self._written_generation:
            self._write(self._hub_payload)

    def _write_running(self, outcome: TrainingOutcome) -> None:
        task = self.training.task or self.hub.task
        self._write(lambda: self._payload(outcome.state_dict, list(outcome.history), task, outcome.step))
        self._holds_running = True

    def _hub_payload(self) -> RecoveryPayload:
        state = {k: v.detach().to("cpu", copy=True) for k, v in self.hub.model.state_dict().items()}
        self._written_generation, self._holds_running = self.hub.generation, False
        return self._payload(state, list(self.hub.history), self.hub.task, last_step(self.hub.history))

    def _payload(
        self, state: dict[str, torch.Tensor], history: list[dict], task: TaskSpec, step: int
    ) -> RecoveryPayload:
        """What File > Save would write for these weights, and when and where they came from."""
        hub = self.hub
        extra = hub.extra.with_task(task).merged(self.training.to_extra())
        extra = replace(extra, recovery=recovery_meta(step, hub.origin))
        return RecoveryPayload(hub.config, state, history, extra)

    def _write(self, copy: Callable[[], RecoveryPayload], *, wait: bool = False) -> None:
        """Write what `copy` returns in the background (or now, with `wait`); a failure is said in the status bar,
        never raised: this runs from timers, the training thread's hand-over and the quit on a signal."""
        if self._closed:
            return
        try:
            payload, serial = copy(), self.store.request()
            self._has_file = True
            if wait:
                self._written(self.store.write(payload, serial))
            else:
                run_task(
                    "Writing the recovery file", lambda: self.store.write(payload, serial), self._written, self._failed
                )
        except Exception as exc:  # noqa: BLE001 - torch may raise RuntimeError or MemoryError, not CheckpointError
            self._failed(str(exc) or type(exc).__name__)

    def _written(self, wrote: bool) -> None:
        if wrote:
            log.info("unsaved training kept in %s", self.store.path)
            self.written.emit(str(self.store.path))

    def _failed(self, message: str) -> None:
        log.warning("could not write the recovery file: %s", message)
        self._written_generation = None  # try again at the next tick
        self._status(f"Could not keep a recovery copy of the unsaved training: {message}", 10_000)

    def adopt(self, orphan: Path) -> None:
        """A restored file becomes this app's own: kept until the work is saved or let go."""
        self.store.adopt(orphan, self.store.request())
        self._has_file, self._written_generation = True, self.hub.generation

    # ----- deleting -----
    def _on_info(self, info: ModelInfo) -> None:
        """Saved, or replaced after the user let it go: nothing is left to recover, unless a run is training on
        (File > Save during a run writes the hub's weights, and the file holds newer ones)."""
        if not info.dirty and self.training.state not in TRAINING_ELSEWHERE:
            self._discard()

    def _discard(self) -> None:
        if self._has_file:
            self.store.delete(self.store.request())
            self._has_file, self._written_generation, self._asked_progress = False, None, None
            self._holds_running = False

    # ----- ending -----
    def keep_unsaved(self) -> None:
        """A signal ends the app and nobody can be asked: stop training (its weights reach the hub), write them."""
        self._timer.stop()
        if self.training.busy and not self.training.shutdown(self.stop_timeout_ms):
            log.warning(
                "training did not stop within %d ms; its weights are kept if it stops while the window closes",
                self.stop_timeout_ms,
            )
        if self._hub_is_newest():
            self._write(self._hub_payload, wait=True)

    def _hub_is_newest(self) -> bool:
        """The hub holds unsaved training no older than the file's: a run that has not stopped may have newer there."""
        return self.hub.dirty and not (self.training.busy and self._holds_running)

    def finish(self, keep: bool) -> None:
        """The app closes, its training stopped: keep the unsaved training for the next launch (`keep`), or delete
        the file (the user saved or discarded)."""
        self._timer.stop()
        if keep and self._hub_is_newest() and self.hub.generation != self._written_generation:
            self._write(self._hub_payload, wait=True)  # weights handed back after keep_unsaved stopped waiting
        elif not keep:
            self._discard()
        self._closed = True
        self.offer.release()
        self.store.release()
