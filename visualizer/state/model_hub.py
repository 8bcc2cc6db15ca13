"""The single owner of the app's model: who may use it, what it is, whether it has unsaved training."""

from __future__ import annotations

import copy
import logging
from collections import deque
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
from PySide6.QtCore import QObject, Signal

from core_model import ModelConfig, Seq2SeqTransformer, build_model
from core_model.recipe import TrainedLengths, describe_trained, stored_trained_lengths
from core_model.tasks import TaskSpec
from visualizer.state.snapshots import ModelInfo

log = logging.getLogger(__name__)
UNDO_DEPTH = 5  # models kept for Model > Undo, each with its trained weights and what replaced it


@dataclass(frozen=True)
class UndoEntry:
    """A replaced model that Model > Undo can bring back as it was, and what replaced it ("Train from scratch")."""

    model: Seq2SeqTransformer
    task: TaskSpec
    origin: str
    history: list[dict]
    path: Path | None
    dirty: bool
    extra: dict
    label: str


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
        extra: dict | None = None,
    ) -> None:
        super().__init__()
        self.device = device
        self._model, self.task, self.origin = model.to(device).eval(), task, origin
        self.history: list[dict] = list(history or [])
        self.extra: dict = dict(extra or {})
        self.path, self.dirty, self._training = path, False, False
        self._undo: deque[UndoEntry] = deque(maxlen=UNDO_DEPTH)  # newest last; the oldest falls off
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
        return len(self._undo)

    @property
    def undo_label(self) -> str | None:
        """What restore_previous() would undo ("architecture change", "Train from scratch"); None: nothing."""
        return self._undo[-1].label if self._undo else None

    @property
    def trained_lengths(self) -> TrainedLengths | None:
        """The source lengths the weights were trained on (None: untrained, or a file that does not say)."""
        return stored_trained_lengths(self.extra, self.history)

    def trained_lengths_text(self) -> str:
        """What the model summary says: "1-16", "untrained" or "unknown", never a range it cannot know."""
        untrained = not self.history and self.origin.startswith("untrained")
        return describe_trained(self.trained_lengths, untrained)

    @property
    def training_active(self) -> bool:
        return self._training

    def info(self) -> ModelInfo:
        return ModelInfo(
            self.config, self.task, self.origin, self._model.parameter_count(), str(self.device), self.path, self.dirty
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
        extra: dict | None = None,
        undo_as: str | None = None,
    ) -> None:
        """Replace the model wholesale (load, new architecture). With `undo_as`, what the user did (read after
        "Undo ": "architecture change", "Train from scratch"), restore_previous() can bring the old one back."""
        if undo_as is not None:
            self._undo.append(
                UndoEntry(self._model, self.task, self.origin, self.history, self.path, self.dirty, self.extra, undo_as)
            )
        self._model, self.task, self.origin = model.to(self.device).eval(), task, origin
        self.history, self.path, self.dirty = list(history or []), path, dirty
        self.extra = dict(extra or {})
        self._changed()

    def new_untrained(
        self, config: ModelConfig, task: TaskSpec | None = None, seed: int = 0, undo_as: str = "architecture change"
    ) -> None:
        """A fresh model for a changed architecture: it knows nothing until trained. The old one can be restored."""
        self.set_model(
            build_model(config, seed=seed), task or self.task, origin="untrained (new architecture)", undo_as=undo_as
        )

    def restore_previous(self) -> bool:
        """Undo the newest model replacement (up to UNDO_DEPTH deep); False when there is nothing to restore."""
        if not self._undo:
            return False
        old = self._undo.pop()
        self.set_model(
            old.model, old.task, origin=old.origin, history=old.history, path=old.path, dirty=old.dirty, extra=old.extra
        )
        return True

    def previous_model(self) -> tuple[Seq2SeqTransformer, TaskSpec, str] | None:
        """The model restore_previous() would bring back (model, task, origin), left in place (A/B compare)."""
        if not self._undo:
            return None
        old = self._undo[-1]
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
        self.extra = {**self.extra, "task": asdict(self.task)}  # the lengths these weights now know
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
