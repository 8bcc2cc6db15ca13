"""The seam every analysis tab's state stands on: inputs checked on the GUI thread, one run in the task layer with
progress and cancel, and a result that belongs to what it was computed from (the hub's weights, unless a state
names its own: `_belongs_to`).

A subclass says what it runs (`_start` with a task function that calls its core_model entry) and how a finished
result becomes the frame its view draws (`_frame_for`, `_summary`); everything else is here, once: the signals a
view listens to, the sentences for a cancelled, failed or overtaken run, and the one stale-result guard
(`_check_belongs`). By default a new model clears the frame and drops a run still going, saying so (the same
weights moved to another device keep both); a state that KEEPS_STALE keeps a stale frame on screen, marked, and
lets a run going finish.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, Signal

from .model_hub import ModelHub
from .worker_api import SlotFactory


def _nothing() -> None:
    """A slot context that never changes: a result is delivered whatever changed while it ran."""


class AnalysisState(QObject):
    """One analysis, of the hub's model unless the state loads its own (hub None). `frame` is the last result as its
    view draws it (None: none yet, or it went stale and was cleared); `running` while a run is in the task layer."""

    frame_changed = Signal(object)  # the subclass's frame | None
    running_changed = Signal(bool)
    progress_changed = Signal(int, int)  # done, total (0, 0: idle)
    message = Signal(str)  # one sentence for the tab's status line
    CLEARED = "The model changed."  # a new model cleared the result: the subclass says what to press for this one
    DROPPED = "The model changed while this ran."  # a new model dropped a run, or one ended for a model replaced
    CANCELLED = "Cancelled; the previous result (if any) stays."
    IDLE_CLEARED: str | None = None  # said on a new model when there was no result and no run (None: nothing)
    KEEPS_STALE = False  # True: a stale frame stays, marked by `_stale_kept`, and a run going finishes and is shown

    def __init__(
        self,
        hub: ModelHub | None,
        make_slot: SlotFactory,
        what: str,
        parent: QObject | None = None,
        *,
        pause_gc: bool = False,
    ) -> None:
        """what: the run's name in the task layer and in its failure sentence ("Patching failed: ..."); hub: None for
        a state that analyses models of its own (its `_belongs_to` names what its results belong to, and it calls
        `_check_belongs` when that may have changed); pause_gc: hold the collector while a run goes."""
        super().__init__(parent)
        self._hub = hub
        self.frame: Any = None
        self._owner: object = None  # `_belongs_to()` when the frame (and a run going, unless KEEPS_STALE) began
        context = _nothing if self.KEEPS_STALE else self._belongs_to
        self._slot = make_slot(what, self, pause_gc=pause_gc, context=context)
        self._slot.progressed.connect(self._on_progress)
        self._slot.finished.connect(self._on_finished)
        self._slot.failed.connect(self._on_failed)
        self._slot.cancelled.connect(self._on_cancelled)
        self._slot.overtaken.connect(lambda: self._end(self.DROPPED))
        if hub is not None:
            self._owner = hub.generation
            hub.model_changed.connect(self._check_belongs)

    @property
    def hub(self) -> ModelHub:
        """The hub whose model is analysed (a state that loads its own models has none)."""
        assert self._hub is not None, f"{type(self).__name__} analyses models of its own, not the hub's"
        return self._hub

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
        """What a run reported: here (done, total); a state whose frame arrives in parts takes its own items."""
        done, total = done_total
        self.progress_changed.emit(done, total)
        text = self._progress_text(done, total)
        if text:
            self.message.emit(text)

    def _on_finished(self, result: Any) -> None:
        self.frame = self._frame_for(result)
        self.frame_changed.emit(self.frame)
        self._end(self._summary(self.frame))

    def _on_failed(self, text: str) -> None:
        """The task layer's one sentence: "<what> failed: <first line of the error>"."""
        self._end(text)

    def _on_cancelled(self) -> None:
        self._end(self.CANCELLED)

    def _end(self, text: str, done: int = 0, total: int = 0) -> None:
        """The run is over: `text` on the status line, the progress left at `done` of `total` (0, 0: idle)."""
        self.running_changed.emit(False)
        self.progress_changed.emit(done, total)
        self.message.emit(text)

    def _belongs_to(self) -> object:
        """What a result belongs to besides its run's inputs, compared by `_check_belongs`: the hub's weights."""
        return self.hub.generation

    def _new_model(self) -> None:
        """A subclass's own part of a model change (after the frame is cleared and a run dropped)."""

    def _stale_kept(self, now: object) -> None:
        """A KEEPS_STALE state's part of the guard: its frame, which belongs to `_owner`, stays; mark it stale
        where that is not `now` (and no longer where it is again)."""
        raise NotImplementedError

    def _check_belongs(self) -> None:
        """The one stale-result guard, run when what a result belongs to may have changed (the hub's model, or a
        KEEPS_STALE state's settings): a frame for something else than `_belongs_to()` now is cleared and a run
        going dropped, each said; or, KEEPS_STALE, both kept and the frame marked."""
        now = self._belongs_to()
        if self.KEEPS_STALE:
            self._stale_kept(now)
            return
        if now == self._owner:  # the same weights on another device: the result still holds
            return
        self._owner = now
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
