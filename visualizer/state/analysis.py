"""The seam every analysis tab's state stands on: inputs checked on the GUI thread, one run in the task layer with
progress and cancel, and a result that belongs to the weights it was computed on.

A subclass says what it runs (`_start` with a task function that calls its core_model entry) and how a finished
result becomes the frame its view draws (`_frame_for`, `_summary`); everything else is here, once: the signals a
view listens to, the sentences for a cancelled, failed or overtaken run, and the one stale-result guard (a new
model clears the frame and drops a run still going, saying so; the same weights moved to another device keep both).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, Signal

from .model_hub import ModelHub
from .worker_api import SlotFactory


class AnalysisState(QObject):
    """One analysis of the hub's model. `frame` is the last result as its view draws it (None: none yet, or the
    model changed since); `running` while a run is in the task layer."""

    frame_changed = Signal(object)  # the subclass's frame | None
    running_changed = Signal(bool)
    progress_changed = Signal(int, int)  # done, total (0, 0: idle)
    message = Signal(str)  # one sentence for the tab's status line
    CLEARED = "The model changed."  # a new model cleared the result: the subclass says what to press for this one
    DROPPED = "The model changed while this ran."  # a new model dropped a run, or one ended for a model replaced
    CANCELLED = "Cancelled; the previous result (if any) stays."
    IDLE_CLEARED: str | None = None  # said on a new model when there was no result and no run (None: nothing)

    def __init__(self, hub: ModelHub, make_slot: SlotFactory, what: str, parent: QObject | None = None) -> None:
        """what: the run's name in the task layer and in its failure sentence ("Patching failed: ...")."""
        super().__init__(parent)
        self.hub = hub
        self.frame: Any = None
        self._generation = hub.generation  # the weights the frame, and a run going, belong to
        self._slot = make_slot(what, self, context=lambda: hub.generation)
        self._slot.progressed.connect(self._on_progress)
        self._slot.finished.connect(self._on_finished)
        self._slot.failed.connect(self._end)
        self._slot.cancelled.connect(lambda: self._end(self.CANCELLED))
        self._slot.overtaken.connect(lambda: self._end(self.DROPPED))
        hub.model_changed.connect(self._on_model_changed)

    @property
    def running(self) -> bool:
        return self._slot.running

    def cancel(self) -> None:
        self._slot.cancel()

    def shutdown(self, timeout_ms: int = 5000) -> bool:
        """Cancel the run and wait for it (closing the window): none outlives its receivers."""
        return self._slot.shutdown(timeout_ms)

    def _start(self, status: str, fn: Callable[..., Any], *inputs: Any, total: int = 1) -> None:
        """Run `fn(task_state, *inputs)` in the task layer (a run going is superseded); `status` goes to the status
        line meanwhile (none: the line keeps what it says), and the progress starts at 0 of `total`."""
        self.running_changed.emit(True)
        self.progress_changed.emit(0, total)
        if status:
            self.message.emit(status)
        self._slot.submit(fn, *inputs)

    def _frame_for(self, result: Any) -> Any:
        """The frame the view draws for a finished run's result."""
        raise NotImplementedError

    def _summary(self, frame: Any) -> str:
        """The status line's sentence once `frame` is shown."""
        return ""

    def _progress_text(self, done: int, total: int) -> str:
        """What the status line says while `done` of `total` are done ("": it keeps what it says)."""
        return ""

    def _on_progress(self, done_total: tuple[int, int]) -> None:
        done, total = done_total
        self.progress_changed.emit(done, total)
        text = self._progress_text(done, total)
        if text:
            self.message.emit(text)

    def _on_finished(self, result: Any) -> None:
        self.frame = self._frame_for(result)
        self.frame_changed.emit(self.frame)
        self._end(self._summary(self.frame))

    def _end(self, text: str) -> None:
        self.running_changed.emit(False)
        self.progress_changed.emit(0, 0)
        self.message.emit(text)

    def _new_model(self) -> None:
        """A subclass's own part of a model change (after the frame is cleared and a run dropped)."""

    def _on_model_changed(self) -> None:
        if self._generation == self.hub.generation:  # the same weights on another device: the result still holds
            return
        self._generation = self.hub.generation
        cleared = self.frame is not None
        if cleared:
            self.frame = None
            self.frame_changed.emit(None)
            self.message.emit(self.CLEARED)
        if self._slot.running:  # its result would be for the model gone: dropped, and the reason said
            self._slot.discard()
            self._end(self.DROPPED)
        elif not cleared and self.IDLE_CLEARED is not None:  # a refusal or a failure about the old model stands
            self.message.emit(self.IDLE_CLEARED)
        self._new_model()
