"""Model > architecture changes and devices: a changed architecture loads its shipped model or builds a new one.

Building (up to d_model 1024, 8+8 layers: ~100 M parameters) happens on the thread pool; the window stays live and
says so in the status bar. The newest request wins: a build that finishes after a newer request was made is dropped,
as is one whose hub got another model meanwhile (File > Open, Undo, training).
"""
from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch
from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QMessageBox, QWidget

from core_model import ModelConfig, Seq2SeqTransformer, build_model
from core_model.checkpoint import Checkpoint, CheckpointError
from core_model.shipped import find_shipped_checkpoint
from visualizer.state.model_hub import ModelHub
from visualizer.state.training import TrainingState
from visualizer.workers.background import run_in_background

log = logging.getLogger(__name__)
SHORT_MS, MEDIUM_MS, LONG_MS = 5000, 6000, 12000  # how long a status message stays: longer for more to read
UNTRAINED_MESSAGE = ("Built a new, untrained model for the changed architecture: its maps mean nothing until it is "
                     "trained (Trainer tab) or a matching checkpoint is opened. Model > Undo architecture "
                     "change (Ctrl+Alt+Z) brings the previous model back.")
UNTRAINED_ORIGIN = "untrained (new architecture)"  # what ModelHub.new_untrained calls such a model
_BUILDING = threading.Lock()  # one build at a time: a seeded build forks torch's global generator


@dataclass(frozen=True)
class BuiltModel:
    """A model ready for the hub, made off the GUI thread: the shipped one for the architecture, or a new one."""

    model: Seq2SeqTransformer
    shipped: tuple[Path, Checkpoint] | None  # None: untrained


def build_for(config: ModelConfig, device: torch.device,
              wanted: Callable[[], bool] = lambda: True) -> BuiltModel | None:
    """The shipped trained model for `config` when there is one, else a new untrained one (seed 0); slow, no Qt.

    None when `wanted()` says, once this build's turn comes, that a newer request replaced it.
    """
    with _BUILDING:
        return _build(config, device) if wanted() else None


def _build(config: ModelConfig, device: torch.device) -> BuiltModel:
    found = find_shipped_checkpoint(config)
    if found is not None:
        path, ckpt = found
        try:
            return BuiltModel(ckpt.build(device), found)  # the task was checked when the file was read
        except CheckpointError as exc:
            log.warning("the shipped model %s could not be built: %s", path.name, exc)
    return BuiltModel(build_model(config, seed=0).to(device).eval(), None)


class ArchitectureController(QObject):
    """Turns "the user wants this architecture" into a model in the hub, asking before trained work is lost."""

    config_refused = Signal()  # the change was refused or cancelled: the controls must show the hub's model again
    building_changed = Signal(bool)  # True from a request until its build arrives (before the hub takes it) or ends

    def __init__(self, hub: ModelHub, training: TrainingState, status: Callable[[str, int], None],
                 parent: QWidget) -> None:
        super().__init__(parent)
        self.hub, self.training, self._status, self._parent = hub, training, status, parent
        self._newest = 0  # serial of the newest build request; older builds are dropped when they finish
        self.pending = 0  # builds still running (tests wait for 0)

    def request(self, config: ModelConfig) -> None:
        """Build (or load the shipped) model for `config` in the background, after asking when needed."""
        if self.hub.training_active:
            QMessageBox.information(self._parent, "Training in progress",
                                    "Stop training before changing the architecture.")
            self.config_refused.emit()
            return
        if self.hub.dirty:
            buttons = QMessageBox.StandardButton
            answer = QMessageBox.question(
                self._parent, "Discard trained weights?",
                "The current model has unsaved training. Building a new architecture replaces it.\n\nSave it first "
                "with File > Save, or continue and discard it?", buttons.Discard | buttons.Cancel, buttons.Cancel)
            if answer != buttons.Discard:
                self.config_refused.emit()
                return
        self._newest += 1
        self.pending += 1
        self.building_changed.emit(True)
        serial, generation, device = self._newest, self.hub.generation, self.hub.device
        self._status(f"Building the model (d_model {config.d_model}, {config.n_encoder_layers}+"
                     f"{config.n_decoder_layers} layers, {config.n_heads} heads)\u2026 the window stays usable", 0)
        run_in_background(lambda: build_for(config, device, lambda: serial == self._newest),
                          lambda built: self._apply(serial, generation, built),
                          lambda message: self._failed(serial, message))

    def cancel(self) -> None:
        """The user went back to the loaded architecture (Revert): a build still running is dropped when it ends."""
        if self.pending:
            self._newest += 1
            self.building_changed.emit(False)
            self._status("Kept the loaded model; the architecture being built is dropped", MEDIUM_MS)

    def _failed(self, serial: int, message: str) -> None:
        self.pending -= 1
        if serial == self._newest:
            self.building_changed.emit(False)
            self._status(f"Could not build the model: {message}", LONG_MS)
            self.config_refused.emit()

    def _apply(self, serial: int, generation: int, built: BuiltModel | None) -> None:
        """Use the newest build, unless the hub got another model or training started meanwhile; say which."""
        self.pending -= 1
        if serial != self._newest or built is None:
            return  # the user asked for another architecture since: that one wins
        self.building_changed.emit(False)
        hub = self.hub
        if hub.training_active or hub.generation != generation:
            self._status("The model changed while the new architecture was being built: press Apply again",
                         MEDIUM_MS)
            self.config_refused.emit()
            return
        if built.shipped is not None:
            path, ckpt = built.shipped
            hub.set_model(built.model, ckpt.task,
                          origin=f"trained checkpoint {path.name}", history=ckpt.history, path=path,
                          extra=ckpt.extra, keep_previous=True)
            self.training.restore(ckpt.history, ckpt.extra)
            self._status(f"Loaded the shipped trained model for this architecture ({path.name}).", LONG_MS)
        else:
            hub.set_model(built.model, hub.task, origin=UNTRAINED_ORIGIN, keep_previous=True)
            self._status(UNTRAINED_MESSAGE, LONG_MS)

    def restore_previous(self) -> None:
        if not self.hub.restore_previous():
            self._status("There is no previous model to restore", SHORT_MS)

    def switch_device(self, name: str) -> None:
        """Move the inference model (training picks its own device in the Trainer tab)."""
        try:
            self.hub.set_device(torch.device(name))
        except (RuntimeError, ValueError) as exc:
            QMessageBox.warning(self._parent, "Device", f"Could not move the model to {name}: {exc}")
            return
        self._status(f"Inference now runs on {name}", MEDIUM_MS)
