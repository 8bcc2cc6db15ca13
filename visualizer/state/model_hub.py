"""The single owner of the app's model: who may use it, what it is, whether it has unsaved training."""

from __future__ import annotations

import copy
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch
from PySide6.QtCore import QObject, Signal
from PySide6.QtGui import QUndoStack

from core_model import ModelConfig, Seq2SeqTransformer, build_model
from core_model.checkpoint_records import as_record
from core_model.recipe import TrainedLengths, describe_trained, stored_trained_lengths
from core_model.shipped import is_shipped
from core_model.tasks import TaskSpec
from visualizer.state.model_history import UNDO_DEPTH, ModelState, ModelSwap
from visualizer.state.origins import NEW_ARCHITECTURE, is_untrained
from visualizer.state.snapshots import ModelInfo

log = logging.getLogger(__name__)
__all__ = ["UNDO_DEPTH", "ModelHub"]


class ModelHub(QObject):
    """Holds the inference model. Training works on its own copy and hands weights back when it pauses or stops."""

    model_changed = Signal()  # architecture, weights or task changed: everything that shows the model redraws
    info_changed = Signal(object)  # ModelInfo
    training_active_changed = Signal(bool)

    def __init__(
        self,
        model: Seq2SeqTransformer,
        task: TaskSpec,
        *,
        device: torch.device,
        origin: str,
        history: list[dict] | None = None,
        path: Path | None = None,
        extra: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__()
        self.device = device
        self._model, self.task, self.origin = model.to(device).eval(), task, origin
        self.history: list[dict] = list(history or [])
        self.extra = as_record(extra)  # what a save writes beside the weights and history
        self.path, self.dirty, self._training = path, False, False
        self.undo_stack = QUndoStack(self)  # Model > Undo and Redo: one ModelSwap per replacement
        self.undo_stack.setUndoLimit(UNDO_DEPTH)  # the oldest falls off, its model with it
        self.undo_stack.indexChanged.connect(self._after_swap)
        self._swapped = False  # a command swapped models: say so once the stack has moved (its texts are right)
        self._generation = 0

    @property
    def generation(self) -> int:
        """Bumped whenever the model, its weights or its task change: equal numbers mean the same model state."""
        return self._generation

    @property
    def model(self) -> Seq2SeqTransformer:
        return self._model

    @property
    def config(self) -> ModelConfig:
        return self._model.config

    @property
    def undo_depth(self) -> int:
        """How many earlier models restore_previous() can bring back, newest first."""
        return self.undo_stack.index()

    @property
    def undo_label(self) -> str | None:
        """What restore_previous() would undo ("architecture change", "Train from scratch"); None: nothing."""
        return self.undo_stack.undoText() if self.undo_stack.canUndo() else None

    @property
    def redo_label(self) -> str | None:
        """What restore_next() would redo (the label of the last undone replacement); None: nothing."""
        return self.undo_stack.redoText() if self.undo_stack.canRedo() else None

    @property
    def trained_lengths(self) -> TrainedLengths | None:
        """The source lengths the weights were trained on (None: untrained, or a file that does not say)."""
        return stored_trained_lengths(self.extra, self.history)

    def trained_lengths_text(self) -> str:
        """What the model summary says: "1-16", "untrained" or "unknown", never a range it cannot know."""
        untrained = not self.history and is_untrained(self.origin)
        return describe_trained(self.trained_lengths, untrained)

    @property
    def own_work(self) -> bool:
        """The model is the user's own: unsaved training, a file of theirs, or training here saved nowhere (not a
        shipped or a fresh untrained one): replacing it asks first."""
        own_file = self.path is not None and not is_shipped(self.path)
        return self.dirty or own_file or bool(self.history and self.path is None)

    @property
    def training_active(self) -> bool:
        return self._training

    def info(self) -> ModelInfo:
        return ModelInfo(
            self.config,
            self.task,
            self.origin,
            self._model.parameter_count(),
            str(self.device),
            self.path,
            self.dirty,
            is_untrained(self.origin),
        )

    def _changed(self) -> None:
        self._generation += 1
        self.model_changed.emit()
        self.info_changed.emit(self.info())

    def set_model(
        self,
        model: Seq2SeqTransformer,
        task: TaskSpec,
        *,
        origin: str,
        history: list[dict] | None = None,
        path: Path | None = None,
        dirty: bool = False,
        extra: Mapping[str, Any] | None = None,
        undo_as: str | None = None,
    ) -> None:
        """Replace the model wholesale (load, new architecture). With `undo_as`, what the user did (read after
        "Undo ": "architecture change", "Train from scratch"), restore_previous() can bring the old one back."""
        state = ModelState(model, task, origin, list(history or []), path, dirty, as_record(extra))
        if undo_as is None:
            self._install(state)
            self._changed()
        else:
            self.undo_stack.push(ModelSwap(state, undo_as, self._swap))  # its redo makes the replacement

    def _install(self, state: ModelState) -> ModelState:
        """Make `state` the hub's model and return the one it replaces."""
        old = ModelState(self._model, self.task, self.origin, self.history, self.path, self.dirty, self.extra)
        self._model, self.task, self.origin = state.model.to(self.device).eval(), state.task, state.origin
        self.history, self.path, self.dirty = list(state.history), state.path, state.dirty
        self.extra = state.extra
        return old

    def _swap(self, state: ModelState) -> ModelState:
        """A command's swap: installed now, announced once the stack has moved (undoText is right by then)."""
        self._swapped = True
        return self._install(state)

    def _after_swap(self, _index: int) -> None:
        if self._swapped:
            self._swapped = False
            self._changed()

    def new_untrained(
        self, config: ModelConfig, task: TaskSpec | None = None, seed: int = 0, undo_as: str = "architecture change"
    ) -> None:
        """A fresh model for a changed architecture: it knows nothing until trained. The old one can be restored."""
        self.set_model(build_model(config, seed=seed), task or self.task, origin=NEW_ARCHITECTURE, undo_as=undo_as)

    def restore_previous(self) -> bool:
        """Undo the newest model replacement (up to UNDO_DEPTH deep); False when there is nothing to restore."""
        if not self.undo_stack.canUndo():
            return False
        self.undo_stack.undo()
        return True

    def restore_next(self) -> bool:
        """Redo the last undone replacement: its model comes back as it was undone; False when there is none."""
        if not self.undo_stack.canRedo():
            return False
        self.undo_stack.redo()
        return True

    def previous_model(self) -> tuple[Seq2SeqTransformer, TaskSpec, str] | None:
        """The model restore_previous() would bring back (model, task, origin), left in place (A/B compare)."""
        if not self.undo_stack.canUndo():
            return None
        command = self.undo_stack.command(self.undo_stack.index() - 1)
        assert isinstance(command, ModelSwap)  # the only command the hub's stack holds
        old = command.other
        return old.model, old.task, old.origin

    def training_copy(self) -> Seq2SeqTransformer:
        """A deep copy the trainer may own while the hub keeps serving inference."""
        return copy.deepcopy(self._model)

    def adopt_weights(
        self,
        state_dict: dict[str, torch.Tensor],
        history: list[dict],
        *,
        origin: str = "trained here",
        task: TaskSpec | None = None,
    ) -> None:
        """Take trained weights back (copied: the trainer keeps training its own tensors) and the task they learned."""
        self._model.load_state_dict({k: v.detach().clone() for k, v in state_dict.items()})
        self.task = task or self.task
        self.extra = self.extra.with_task(self.task)  # the lengths these weights now know
        self._model.eval()
        self.history, self.origin, self.dirty = list(history), origin, True
        self._changed()

    def mark_saved(self, path: Path) -> None:
        self.path, self.dirty = path, False
        self.info_changed.emit(self.info())

    def set_training_active(self, active: bool) -> None:
        if active != self._training:
            self._training = active
            self.training_active_changed.emit(active)

    def set_device(self, device: torch.device) -> None:
        """Move the inference model (the status bar shows the device)."""
        self._model.to(device)  # may raise (e.g. out of memory): then nothing changed
        self.device = device
        self.model_changed.emit()  # the same model and weights elsewhere: the generation stays
        self.info_changed.emit(self.info())
