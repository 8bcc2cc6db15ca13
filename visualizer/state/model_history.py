"""Model > Undo and Redo as typed records: one model as the hub held it, and the command that swaps it back in.

Each replacement of the hub's model (Apply, Train from scratch, a task switch, a recovered training) is one
ModelSwap on the hub's QUndoStack. A swap holds the one model that is not the hub's: before the undo the replaced
one, after it the one undone (with whatever training it got meanwhile), so redo brings that back as it was.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from PySide6.QtGui import QUndoCommand

from core_model import Seq2SeqTransformer
from core_model.checkpoint_records import CheckpointExtra
from core_model.tasks import TaskSpec

UNDO_DEPTH = 5  # models kept for Model > Undo and Redo, each with its trained weights


@dataclass(frozen=True)
class ModelState:
    """Everything the hub says about one model: what it is, what it learned, where it is saved, unsaved training."""

    model: Seq2SeqTransformer
    task: TaskSpec
    origin: str
    history: list[dict]
    path: Path | None
    dirty: bool
    extra: CheckpointExtra


class ModelSwap(QUndoCommand):
    """One replacement of the hub's model; its text says what the user did ("architecture change")."""

    def __init__(self, other: ModelState, label: str, swap: Callable[[ModelState], ModelState]) -> None:
        super().__init__(label)
        self.other = other  # pushed: the new model; then always the one that is not the hub's
        self._swap = swap  # installs a state in the hub and returns the one it held

    def redo(self) -> None:  # Qt's name; QUndoStack.push calls it first, which makes the replacement
        self.other = self._swap(self.other)

    def undo(self) -> None:  # Qt's name
        self.other = self._swap(self.other)
