"""Plays a lesson in the running app: sets each step up, waits for the learner's action, explains it with live numbers.

Nothing here blocks the GUI thread: a set-up action that starts work (loading a checkpoint, a forward pass) reports
back through the app's own signals, and the step counts as set up only then. The panel shows what this object says.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, Signal

from visualizer.lessons.actions import ACTION_RUNNERS
from visualizer.lessons.events import Payload, live_values
from visualizer.lessons.listeners import EVENT_LISTENERS
from visualizer.lessons.restore import KEPT, LessonChanges
from visualizer.lessons.schema import Call, Lesson, Step

log = logging.getLogger(__name__)
# Steps that point to a Playground grid keep its large map window open: the learner reads or paints the map there.
GRID_TARGETS = ("playground.cross", "playground.decoder_self", "playground.encoder_self")


class LessonRunner(QObject):
    """One lesson at a time: its current step, whether that step is set up and done, and its explanation."""

    step_started = Signal(int)  # the step's index; its set-up runs now
    step_ready = Signal(int)  # set up: the app waits for the learner
    step_done = Signal(int, str)  # the learner did it (again): the explanation with the numbers of this time
    failed = Signal(str)  # a set-up action could not run: a sentence for the panel
    stopped = Signal()  # no lesson is running (closed, or finished after its last step)
    finished = Signal(str)  # the learner pressed Finish on the last step: the lesson's title
    ended = Signal(str)  # after stopped: a sentence saying what the lesson's end put back (empty: nothing)

    def __init__(self, app: Any, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._app = app
        self.lesson: Lesson | None = None
        self.index = -1
        self.ready = self.done = False
        self.explanation = ""
        self.payload: Payload = {}
        self._generation = 0  # a set-up callback from a step left since is ignored
        self._stop_listening: Callable[[], None] | None = None
        self.changes = LessonChanges(app)  # the app as the lesson found it, put back when it ends
        self.keep_changes = False  # the learner chose to keep what the lesson changed (the panel's tick box)

    @property
    def step(self) -> Step:
        assert self.lesson is not None
        return self.lesson.steps[self.index]

    def start(self, lesson: Lesson) -> None:
        """Start `lesson` (a lesson still running ends first, and what it changed is put back)."""
        if self.lesson is not None:
            self.stop()
        self.changes.take()
        self.lesson, self.keep_changes = lesson, False
        self.go(0)

    def go(self, index: int) -> None:
        """Enter step `index`: run its set-up, then listen for its event."""
        assert self.lesson is not None and 0 <= index < len(self.lesson.steps)
        self._leave_step()
        self.index, self.ready, self.done, self.explanation, self.payload = index, False, False, "", {}
        if not (self.step.highlight or "").startswith(GRID_TARGETS):  # a step about another part of the window
            self.changes.close_large_views()
        self.step_started.emit(index)
        self._set_up(list(self.step.setup), self._generation)

    def next(self) -> None:
        """The following step, or the end of the lesson after the last one."""
        if self.lesson is not None and self.index + 1 < len(self.lesson.steps):
            self.go(self.index + 1)
            return
        title = self.lesson.title if self.lesson is not None else None
        self.stop()
        if title is not None:
            self.finished.emit(title)

    def back(self) -> None:
        if self.lesson is not None and self.index > 0:
            self.go(self.index - 1)

    def stop(self) -> None:
        """End the lesson (finished or left midway): what it changed comes back, unless the learner keeps it."""
        running = self.lesson is not None
        self._leave_step()
        self.lesson, self.index, self.ready, self.done = None, -1, False, False
        if self.keep_changes:
            self.changes.forget()
            line = f"Kept as the lesson left them: {KEPT}." if running else ""
        else:
            restored = self.changes.restore()
            line = f"Put back as you had it before the lesson: {_listed(restored)}." if restored else ""
        self.stopped.emit()
        self.ended.emit(line)

    def _leave_step(self) -> None:
        self._generation += 1
        if self._stop_listening is not None:
            self._stop_listening()
            self._stop_listening = None

    def _set_up(self, calls: list[Call], generation: int) -> None:
        """Run the actions one after another, each when the one before reported done."""
        if generation != self._generation:
            return  # the learner moved on while this step was being set up
        if not calls:
            self._listen()
            return
        call = calls.pop(0)
        self.changes.before_action(call.name)

        def after(problem: str | None) -> None:
            if generation != self._generation:
                return
            if problem:
                log.warning("lesson step %d: %s failed: %s", self.index + 1, call.name, problem)
                self.failed.emit(f"This step could not set up the app ({call.name}): {problem}")
                return
            self._set_up(calls, generation)

        ACTION_RUNNERS[call.name](self._app, call.params, after)

    def _listen(self) -> None:
        self.ready = True
        until = self.step.until
        if until is not None:
            generation = self._generation

            def heard(payload: Payload) -> None:  # an occurrence finishing after the learner left the step is late
                if generation == self._generation:
                    self._explain(payload)

            self._stop_listening = EVENT_LISTENERS[until.name](self._app, until.params, heard)
        self.step_ready.emit(self.index)
        if until is None:
            self._explain({})

    def _explain(self, payload: Payload) -> None:
        """The step is done; every later occurrence refreshes the explanation with its own numbers."""
        self.done, self.payload = True, payload
        self.explanation = self.step.explain.format(**live_values(self._app), **payload)
        self.step_done.emit(self.index, self.explanation)


def _listed(labels: list[str]) -> str:
    """ "a", "a and b", "a, b and c"."""
    return labels[0] if len(labels) == 1 else ", ".join(labels[:-1]) + " and " + labels[-1]
