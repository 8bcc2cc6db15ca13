"""Model > architecture changes and devices: a changed architecture loads its shipped model or builds a new one."""
from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

import torch
from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QMessageBox, QWidget

from core_model import ModelConfig
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


class ArchitectureController(QObject):
    """Turns "the user wants this architecture" into a model in the hub, asking before trained work is lost."""

    config_refused = Signal()  # the change was refused or cancelled: the controls must show the hub's model again

    def __init__(self, hub: ModelHub, training: TrainingState, status: Callable[[str, int], None],
                 parent: QWidget) -> None:
        super().__init__(parent)
        self.hub, self.training, self._status, self._parent = hub, training, status, parent

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
        run_in_background(lambda: find_shipped_checkpoint(config), lambda found: self._apply(config, found),
                          lambda message: self._apply(config, None))

    def _apply(self, config: ModelConfig, found: tuple[Path, Checkpoint] | None) -> None:
        """Use the matching shipped model when there is one, else a new untrained model; say which."""
        hub = self.hub
        if found is not None:
            path, ckpt = found
            try:
                model = ckpt.build(hub.device)  # the task was checked when the file was read
            except CheckpointError as exc:
                log.warning("the shipped model %s could not be built: %s", path.name, exc)
                found = None
        if found is not None:
            hub.set_model(model, ckpt.task,
                          origin=f"trained checkpoint {path.name}", history=ckpt.history, path=path,
                          extra=ckpt.extra, keep_previous=True)
            self.training.restore(ckpt.history, ckpt.extra)
            self._status(f"Loaded the shipped trained model for this architecture ({path.name}).", LONG_MS)
        else:
            hub.new_untrained(config)
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
