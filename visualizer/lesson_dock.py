"""The Lessons dock in the window: lessons loaded from resources/lessons, Help › Lessons (F9), the highlight frame.

The composition root calls `install_lessons` once the Playground, PE and Trainer tabs exist (a step's target is
found when the step runs, so the analyses' tabs installed after it are reached too). The lesson files are read on a
pool thread (a slow disk or a crafted file never holds up the window); the list fills in when they are read.
Whether the dock is open is remembered: the learner closing it or opening it from the Help menu is saved at once.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from PySide6.QtCore import QSettings, Qt
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QScrollArea, QWidget

from visualizer.controllers.preferences import string_list
from visualizer.lessons.runner import LessonRunner
from visualizer.lessons.schema import Lesson, load_lessons
from visualizer.lessons.targets import target_widget
from visualizer.widgets.lessons.first_card import FirstLessonCard
from visualizer.widgets.lessons.frame_overlay import Highlighter
from visualizer.widgets.lessons.panel import LessonDock, LessonPanel
from visualizer.workers.task_state import TaskState
from visualizer.workers.tasks import TaskSlot

VISIBLE_KEY = "lessons/visible"
FINISHED_KEY = "lessons/finished"  # the titles of the lessons the learner finished
CARD_KEY = "lessons/first_card_done"  # the first-launch card was answered (started or dismissed): never again
LESSONS_KEY = "F9"  # F1 lists the keys; F2, F5 and F10 are taken


@dataclass
class Lessons:
    """What the window holds for the lessons: the runner, the dock with its panel, the menu action, the frame."""

    runner: LessonRunner
    panel: LessonPanel
    dock: LessonDock
    action: QAction
    highlighter: Highlighter
    card: FirstLessonCard
    loading: TaskSlot  # reads the lesson files off the GUI thread

    @property
    def loaded(self) -> bool:
        """The lesson files were read: the list shows the lessons and names each file that could not be used."""
        return self.panel.loaded

    def show_lessons(self, result: tuple[list[Lesson], list[str]]) -> None:
        """The files were read: list the lessons, name the broken files, offer lesson one on a first start."""
        lessons, problems = result
        self.panel.set_lessons(lessons, problems)
        self.panel.mark_finished(finished_titles())
        self.card.setVisible(bool(lessons) and not QSettings().value(CARD_KEY, False, type=bool))

    def show_load_failure(self, line: str) -> None:
        """Reading the folder itself failed (the files are named one by one otherwise): said where lessons show."""
        self.panel.set_lessons([], [f"The lessons could not be read: {line}"])

    def open(self) -> None:
        """Help › Lessons: show the dock (remembered) and give it the keyboard."""
        self.dock.show()
        self.dock.raise_()
        self.panel.lesson_list.setFocus()
        QSettings().setValue(VISIBLE_KEY, True)

    def start_first(self) -> None:
        """The card's Start: the dock opens on the first lesson; the card is answered."""
        self.dismiss_card()
        self.open()
        if self.panel.lessons:
            self.panel.lesson_list.setCurrentRow(0)
            self.runner.start(self.panel.lessons[0])

    def dismiss_card(self) -> None:
        self.card.hide()
        QSettings().setValue(CARD_KEY, True)

    def finished(self, title: str) -> None:
        """The learner finished a lesson: ticked in the list, now and next time; after the last, the course's end."""
        titles = finished_titles() | {title}
        QSettings().setValue(FINISHED_KEY, sorted(titles))
        self.panel.mark_finished(titles)
        if self.panel.lessons and self.panel.lessons[-1].title == title:
            self.panel.show_course_end()

    def lesson_started(self) -> None:
        """A lesson runs: the first-launch card's offer is answered (it would only cover the grids the lesson uses)."""
        if self.card.isVisible():
            self.dismiss_card()

    def step_started(self, index: int) -> None:
        if index == 0:  # a lesson's first step: the lesson has started
            self.lesson_started()

    def closed(self) -> None:
        """The learner closed the dock: the lesson ends and the dock stays closed next time."""
        self.runner.stop()
        QSettings().setValue(VISIBLE_KEY, False)


def finished_titles() -> set[str]:
    return set(string_list(QSettings(), FINISHED_KEY))


def _point_at(highlighter: Highlighter, target: QWidget | None) -> None:
    """Frame the target and scroll it into view (the Masks section sits below the fold of the control column)."""
    highlighter.show_on(target)
    if target is None:
        return
    parent = target.parentWidget()
    while parent is not None and not isinstance(parent, QScrollArea):
        parent = parent.parentWidget()
    if parent is not None:
        parent.ensureWidgetVisible(target, 0, 0)


def _read_lessons(_state: TaskState, folder: Path) -> tuple[list[Lesson], list[str]]:
    return load_lessons(folder)


def install_lessons(app: Any, folder: Path) -> Lessons:
    """Dock the lessons' panel and start reading the lessons of `folder` (a broken file is named in the panel; the
    others load)."""
    win = app.window
    runner = LessonRunner(app, win)
    panel = LessonPanel(runner)
    dock = LessonDock(panel)
    win.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, dock)
    highlighter = Highlighter()
    runner.step_started.connect(lambda _index: highlighter.clear())
    runner.step_ready.connect(lambda _index: _point_at(highlighter, target_widget(app, runner.step.highlight)))
    runner.stopped.connect(highlighter.clear)
    action = win.add_action(
        win.help_menu, "&Lessons", lambda: None, LESSONS_KEY, tip="Guided lessons: the app shows, you do, it explains"
    )
    win.help_menu.removeAction(action)
    win.help_menu.insertAction(win.help_menu.actions()[0], action)  # first: where a newcomer looks
    card = FirstLessonCard()
    win.add_banner(card)
    loading = TaskSlot("Reading the lessons", panel)  # deleted with the panel: a late result is then dropped
    result = Lessons(runner, panel, dock, action, highlighter, card, loading)
    action.triggered.connect(result.open)
    card.start_requested.connect(result.start_first)
    card.dismissed.connect(result.dismiss_card)
    card.hide()  # until the lessons are read: lesson one may not exist
    dock.closed.connect(result.closed)
    runner.finished.connect(result.finished)
    runner.step_started.connect(result.step_started)
    dock.setVisible(bool(QSettings().value(VISIBLE_KEY, False, type=bool)))
    loading.finished.connect(result.show_lessons)
    loading.error_line.connect(result.show_load_failure)
    loading.submit(_read_lessons, folder)
    return result
