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
from core_model.shipped import find_shipped_checkpoint, is_shipped
from visualizer.state.model_hub import ModelHub
from visualizer.state.training import TrainingState
from visualizer.workers.background import run_in_background

log = logging.getLogger(__name__)
SHORT_MS, MEDIUM_MS, LONG_MS = 5000, 6000, 12000  # how long a status message stays: longer for more to read
SWITCH_QUESTION = ("Load the shipped {task} model?\n\nIt replaces the current model ({origin}); Model > Undo "
                   "architecture change (Ctrl+Alt+Z) brings yours back. Keep yours to see how it does on {task}.")
UNTRAINED_MESSAGE = ("Built a new, untrained model for the changed architecture: its maps mean nothing until it is "
                     "trained (Trainer tab) or a matching checkpoint is opened. Model > Undo architecture "
                     "change (Ctrl+Alt+Z) brings the previous model back.")


def _ask_load_shipped(parent: QWidget, text: str) -> bool:
    """True when the user agrees to replace their own model by a shipped one; tests replace this function."""
    box = QMessageBox(QMessageBox.Icon.Question, "Load the shipped model?", text, parent=parent)
    load = box.addButton("&Load the shipped model", QMessageBox.ButtonRole.AcceptRole)
    box.addButton("&Keep my model", QMessageBox.ButtonRole.RejectRole)
    box.setDefaultButton(load)
    box.exec()
    return box.clickedButton() is load


class ArchitectureController(QObject):
    """Turns "the user wants this architecture" into a model in the hub, asking before trained work is lost."""

    config_refused = Signal()  # the change was refused or cancelled: the controls must show the hub's model again

    def __init__(self, hub: ModelHub, training: TrainingState, status: Callable[[str, int], None],
                 parent: QWidget) -> None:
        super().__init__(parent)
        self.hub, self.training, self._status, self._parent = hub, training, status, parent
        self.current_task: Callable[[], str] = lambda: hub.task.task  # the composition root points it at the task combo

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
        task = self.current_task()
        run_in_background(lambda: find_shipped_checkpoint(config, task), lambda found: self._apply(config, found),
                          lambda message: self._apply(config, None))

    def request_task(self, task: str, *, ask: bool = True) -> None:
        """The user picked a task: load the shipped model for it and the current architecture, when there is one.

        Automatic while the model is a shipped or a fresh untrained one; otherwise (own checkpoint, unsaved
        training) the user is asked (with `ask` False, as at start-up, nothing changes), and the old model stays one
        undo away either way. The files are read off the GUI thread.
        """
        hub = self.hub
        if hub.training_active or hub.task.task == task:
            return
        own_work = hub.dirty or (hub.path is not None and not is_shipped(hub.path)) or bool(hub.history and hub.path is None)
        if own_work and not ask:
            return
        config = hub.config
        generation = hub.generation

        def found(result: tuple[Path, Checkpoint] | None) -> None:
            if result is None or hub.generation != generation or hub.training_active:
                return  # no shipped model for this architecture and task, or the model changed meanwhile
            if own_work and not _ask_load_shipped(self._parent, SWITCH_QUESTION.format(task=task, origin=hub.origin)):
                return
            self._apply(config, result)

        run_in_background(lambda: find_shipped_checkpoint(config, task), found, lambda message: None)

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
            self._status(f"Loaded the shipped trained {ckpt.task.task} model for this architecture ({path.name}).",
                         LONG_MS)
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
