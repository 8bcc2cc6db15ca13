"""Model > architecture changes and devices: a changed architecture loads its shipped model or builds a new one.

Building (up to d_model 1024, 8+8 layers: ~100 M parameters) happens on the thread pool; the window stays live and
says so in the status bar. The newest request wins: a build that finishes after a newer request was made is dropped,
as is one whose hub got another model meanwhile (File > Open, Undo, training). What the controller says about a
model leaves the status bar when the model changes, and Model > Undo and Redo name what they undo and redo.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, replace

import torch
from PySide6.QtCore import QObject, Signal
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QMessageBox, QWidget

from core_model import ModelConfig
from core_model.recipe import anchored_by_default
from core_model.shipped import has_shipped
from core_model.tasks import TaskSpec
from visualizer.controllers.history_actions import show_history
from visualizer.controllers.model_builds import BuiltModel, build_for
from visualizer.state.model_hub import ModelHub
from visualizer.state.origins import NEW_ARCHITECTURE, checkpoint_origin
from visualizer.state.playground_task import RECIPE_READY, fresh_task, task_on_model
from visualizer.state.training import TrainingState
from visualizer.workers.tasks import TaskSlot

log = logging.getLogger(__name__)
SHORT_MS, MEDIUM_MS, LONG_MS = 5000, 6000, 12000  # how long a status message stays: longer for more to read
SWITCH_QUESTION = (
    "Load the shipped {task} model?\n\nIt replaces the current model ({origin}); Model > Undo "
    "switch to the {task} task (Ctrl+Alt+Z) brings yours back. Keep yours to see how it does on "
    "{task}."
)
ARCHITECTURE_CHANGE = "architecture change"  # what Model > Undo undoes after Apply
UNTRAINED_MESSAGE = (
    "Built a new, untrained model for the changed architecture: its maps mean nothing until it is "
    "trained (Trainer tab) or a matching checkpoint is opened. Model > Undo architecture "
    "change (Ctrl+Alt+Z) brings the previous model back."
)
UNTRAINED_ORIGIN = NEW_ARCHITECTURE  # what ModelHub.new_untrained calls such a model
NONE_SHIPS = "No trained model ships for {task} yet"
NONE_FITS = "No shipped {task} model has this architecture"  # one ships for another (its encoding, its sizes)
BUILD_QUESTION = (
    "{why}, and the current model ({origin}) cannot read its symbols.\n\n"
    "Replace it by an untrained {task} model to train in the Trainer tab? Model > Undo switch to the {task} "
    "task (Ctrl+Alt+Z) brings yours back."
)
NO_MODEL_MESSAGE = (
    "{why}: built an untrained {task} model (its maps mean nothing until it is trained); "
    + RECIPE_READY
    + ". Model > Undo (Ctrl+Alt+Z) brings the previous model back."
)


def _ask_build_untrained(parent: QWidget, text: str) -> bool:
    """True when the user agrees to replace their own model by an untrained one for a task it cannot read; tests
    replace this function."""
    box = QMessageBox(QMessageBox.Icon.Question, "Build an untrained model?", text, parent=parent)
    build = box.addButton("&Build an untrained model", QMessageBox.ButtonRole.AcceptRole)
    box.addButton("&Keep my model", QMessageBox.ButtonRole.RejectRole)
    box.setDefaultButton(build)
    box.exec()
    return box.clickedButton() is build


def _ask_load_shipped(parent: QWidget, text: str) -> bool:
    """True when the user agrees to replace their own model by a shipped one; tests replace this function."""
    box = QMessageBox(QMessageBox.Icon.Question, "Load the shipped model?", text, parent=parent)
    load = box.addButton("&Load the shipped model", QMessageBox.ButtonRole.AcceptRole)
    box.addButton("&Keep my model", QMessageBox.ButtonRole.RejectRole)
    box.setDefaultButton(load)
    box.exec()
    return box.clickedButton() is load


def _why_untrained(task: str) -> str:
    """Why a picked task gets an untrained model: none ships for it, or none of this architecture."""
    return (NONE_FITS if has_shipped(task) else NONE_SHIPS).format(task=task)


@dataclass(frozen=True)
class _TaskPick:
    """A task the user picked, whether the hub's model then was the user's own work (ask before replacing it), and,
    when that model cannot read the task, the task's recipe for an untrained model should none ship."""

    task: str
    own_work: bool
    fresh: TaskSpec | None = None


class ArchitectureController(QObject):
    """Turns "the user wants this architecture" into a model in the hub, asking before trained work is lost."""

    config_refused = Signal()  # the change was refused or cancelled: the controls must show the hub's model again
    building_changed = Signal(bool)  # True from a request until its build arrives (before the hub takes it) or ends

    def __init__(
        self,
        hub: ModelHub,
        training: TrainingState,
        status: Callable[[str, int], None],
        parent: QWidget,
        withdraw: Callable[[str], None] = lambda _text: None,
        current_task: Callable[[], str] | None = None,
    ) -> None:
        """current_task: the task the user has picked (the Playground's), whose shipped model a build looks for;
        by default the hub's."""
        super().__init__(parent)
        self.hub, self.training, self._status, self._parent = hub, training, status, parent
        self._withdraw = withdraw  # takes a message off the status bar if it still shows it
        self._said: tuple[str, int] | None = None  # the last message about a model, and that model's generation
        hub.model_changed.connect(self._forget_stale_message)
        model = lambda: hub.generation  # noqa: E731 - a build or load made for a model replaced since is overtaken
        self._builds = TaskSlot("Building the model", self, context=model)  # the newest request wins
        self._builds.finished.connect(self._apply)
        self._builds.failed.connect(self._failed)
        self._builds.overtaken.connect(self._overtaken)
        self._task_loads = TaskSlot("Loading the shipped model", self, context=model)  # the newest task picked wins
        self._task_loads.finished.connect(self._task_loaded)
        self._task_loads.failed.connect(lambda message: self._status(message, LONG_MS))
        self._history_actions: tuple[QAction, QAction] | None = None  # Model > Undo and Redo, once tracked
        self._current_task = current_task or (lambda: hub.task.task)

    @property
    def pending(self) -> int:
        """Builds still running, dropped ones included (tests wait for 0)."""
        return self._builds.active

    def request(self, config: ModelConfig) -> None:
        """Build (or load the shipped) model for `config` in the background, after asking when needed."""
        if self.hub.training_active:
            QMessageBox.information(
                self._parent, "Training in progress", "Stop training before changing the architecture."
            )
            self.config_refused.emit()
            return
        if self.hub.dirty:
            buttons = QMessageBox.StandardButton
            answer = QMessageBox.question(
                self._parent,
                "Discard trained weights?",
                "The current model has unsaved training. Building a new architecture replaces it.\n\nSave it first "
                "with File > Save, or continue and discard it?",
                buttons.Discard | buttons.Cancel,
                buttons.Cancel,
            )
            if answer != buttons.Discard:
                self.config_refused.emit()
                return
        self.building_changed.emit(True)
        self._status(
            f"Building the model (d_model {config.d_model}, {config.n_encoder_layers}+"
            f"{config.n_decoder_layers} layers, {config.n_heads} heads)\u2026 the window stays usable",
            0,
        )
        self._builds.submit(
            lambda state, config, task, device: build_for(config, task, device, lambda: not state.cancelled),
            config,
            self._current_task(),
            self.hub.device,
        )

    def request_task(self, task: str, *, ask: bool = True) -> None:
        """The user picked a task: load the shipped model for it and the current architecture, when there is one.

        Automatic while the model is a shipped or a fresh untrained one; otherwise (own checkpoint, unsaved
        training) the user is asked (with `ask` False, as at start-up, nothing changes), and the old model stays one
        undo away either way. The files are read and the model built off the GUI thread.
        """
        hub = self.hub
        self._task_loads.discard()  # an earlier pick still being read is not the user's choice any more
        if hub.training_active or hub.task.task == task:
            return
        own_work = hub.own_work
        if own_work and not ask:
            return
        config = hub.config
        fresh = None
        if task_on_model(hub.task, task, config.vocab_size) is None:  # a model of the task's own, shipped or new
            fresh = fresh_task(task, config.positional, config.max_len)
            if fresh is not None:
                config = replace(config, vocab_size=max(config.vocab_size, fresh.vocab_size))
        pick = _TaskPick(task, own_work, fresh)
        self._task_loads.submit(
            lambda _state, config, name, device: (pick, build_for(config, name, device, shipped_only=fresh is None)),
            config,
            task,
            hub.device,
        )

    def _task_loaded(self, result: tuple[_TaskPick, BuiltModel | None]) -> None:
        """The newest pick's shipped model (the slot drops older picks' loads and those overtaken by another model),
        unless there is none for this architecture or training started."""
        pick, built = result
        hub = self.hub
        if built is None or hub.training_active:
            return
        if pick.own_work and not self._parent.isVisible():
            return  # the window closed while the file was read: no question may outlive it
        untrained = built.shipped is None
        if pick.own_work:
            ask, text = (_ask_build_untrained, BUILD_QUESTION) if untrained else (_ask_load_shipped, SWITCH_QUESTION)
            if not ask(self._parent, text.format(task=pick.task, origin=hub.origin, why=_why_untrained(pick.task))):
                return
        self._take(built, f"switch to the {pick.task} task", pick.fresh if untrained else None)

    def cancel(self) -> None:
        """The user went back to the loaded architecture (Revert): a build still running is dropped when it ends."""
        if self._builds.running:
            self._builds.discard()
            self.building_changed.emit(False)
            self._status("Kept the loaded model; the architecture being built is dropped", MEDIUM_MS)

    def _failed(self, message: str) -> None:
        self.building_changed.emit(False)
        self._status(message, LONG_MS)
        self.config_refused.emit()

    def _apply(self, built: BuiltModel | None) -> None:
        """Use the newest build (the slot drops older ones and those overtaken by another model), unless training
        started meanwhile."""
        if built is None:
            return
        if self.hub.training_active:
            self._overtaken()
            return
        self.building_changed.emit(False)
        self._take(built, ARCHITECTURE_CHANGE)

    def _overtaken(self) -> None:
        """The hub got another model (or training started) while the build ran: nothing changes, and we say so."""
        self.building_changed.emit(False)
        self._status("The model changed while the new architecture was being built: press Apply again", MEDIUM_MS)
        self.config_refused.emit()

    def _take(self, built: BuiltModel, undo_as: str, fresh: TaskSpec | None = None) -> None:
        """Give the hub the built model (the old one stays one undo away) and say which it is; an untrained one
        learns `fresh`, a picked task's recipe, when given."""
        hub = self.hub
        if built.shipped is not None:
            path, ckpt = built.shipped
            hub.set_model(
                built.model,
                ckpt.task,
                origin=checkpoint_origin(path.name, shipped=True),
                history=ckpt.history,
                path=path,
                extra=ckpt.extra,
                undo_as=undo_as,
            )
            self.training.restore(ckpt.history, ckpt.extra)
            self._say(
                f"Loaded the shipped trained {ckpt.task.task} model for this architecture ({path.name}).", LONG_MS
            )
        elif fresh is not None:
            hub.set_model(built.model, fresh, origin=UNTRAINED_ORIGIN, undo_as=undo_as)
            self._say(NO_MODEL_MESSAGE.format(task=fresh.task, why=_why_untrained(fresh.task)), LONG_MS)
        else:
            # the task's anchors follow the new encoding, as the recipe's do: RoPE reads <bos> ... <eos>
            task = replace(hub.task, anchored=anchored_by_default(built.model.config.positional))
            hub.set_model(built.model, task, origin=UNTRAINED_ORIGIN, undo_as=undo_as)
            self._say(UNTRAINED_MESSAGE, LONG_MS)

    def _say(self, text: str, timeout_ms: int) -> None:
        """A status message about the hub's present model: withdrawn once that model is replaced."""
        self._status(text, timeout_ms)
        self._said = (text, self.hub.generation)

    def _forget_stale_message(self) -> None:
        if self._said is not None and self._said[1] != self.hub.generation:
            self._withdraw(self._said[0])
            self._said = None

    def restore_previous(self) -> None:
        """Model > Undo: bring back the model before the newest replacement and say which one it is."""
        self._step("Undid", self.hub.undo_label, self.hub.restore_previous, "There is no previous model to restore")

    def restore_next(self) -> None:
        """Model > Redo: bring back the model the last Undo replaced, as it was then, and say which one it is."""
        self._step("Redid", self.hub.redo_label, self.hub.restore_next, "There is no undone model change to redo")

    def _step(self, done: str, label: str | None, step: Callable[[], bool], nothing: str) -> None:
        if not step():
            self._status(nothing, SHORT_MS)
            return
        name = self.hub.path.name if self.hub.path is not None else self.hub.origin
        self._say(f"{done} {label}: the model is {name} again ({self.hub.task.task} task).", MEDIUM_MS)

    def track_undo(self, undo: QAction, redo: QAction) -> None:
        """Keep Model > Undo's and Redo's texts, tips and states naming what they would do, whatever replaced the
        model."""
        self._history_actions = (undo, redo)
        self.hub.model_changed.connect(self._show_history)  # a bound slot: disconnected when this controller goes
        self._show_history()

    def _show_history(self) -> None:
        if self._history_actions is not None:
            show_history(self.hub, *self._history_actions)

    def switch_device(self, name: str) -> None:
        """Move the inference model (training picks its own device in the Trainer tab)."""
        try:
            self.hub.set_device(torch.device(name))
        except (RuntimeError, ValueError) as exc:
            QMessageBox.warning(self._parent, "Device", f"Could not move the model to {name}: {exc}")
            return
        self._status(f"Inference now runs on {name}", MEDIUM_MS)
