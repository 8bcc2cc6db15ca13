"""What the Causal tab's two states share: one task slot bound to the hub's model, and what a new model does to it.

A result belongs to the weights it was computed on: a new model clears it and drops a run still going, saying so.
The same weights moved to another device keep both.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QObject, Signal

from .model_hub import ModelHub


class CausalJob(QObject):
    """The base of PatchState and AttributionState. A subclass makes `_slot` (its factory needs the object as its
    parent), keeps in `_asked` a tuple whose first item is the generation it last ran on, and says in `_end` how a
    run ended."""

    frame_changed = Signal(object)  # the subclass's frame | None (None: nothing yet, or the model changed since)
    running_changed = Signal(bool)
    message = Signal(str)
    CLEARED = "The model changed."  # said when a new model clears the result: what to press for this one
    DROPPED = "The model changed while this ran."  # said when a new model drops a run still going

    def __init__(self, hub: ModelHub, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.hub = hub
        self.frame: Any = None
        self._slot: Any = None
        self._asked: tuple = (hub.generation,)
        hub.model_changed.connect(self._on_model_changed)

    @property
    def running(self) -> bool:
        return self._slot.running

    def cancel(self) -> None:
        self._slot.cancel()

    def shutdown(self, timeout_ms: int = 5000) -> bool:
        return self._slot.shutdown(timeout_ms)

    def _end(self, text: str) -> None:
        raise NotImplementedError

    def _on_model_changed(self) -> None:
        if self._asked[0] == self.hub.generation:  # the same weights on another device: the result still holds
            return
        if self.frame is not None:
            self.frame = None
            self.frame_changed.emit(None)
            self.message.emit(self.CLEARED)
        if self._slot.running:  # its result would be for the model gone: dropped, and the reason said
            self._slot.discard()
            self._end(self.DROPPED)
