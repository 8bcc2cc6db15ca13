"""The Lessons dock in the window: lessons loaded from resources/lessons, Help › Lessons (F9), the highlight frame.

The composition root calls `install_lessons` once the tabs exist. Whether the dock is open is remembered: the
learner closing it or opening it from the Help menu is saved at once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import QSettings, Qt
from PySide6.QtGui import QAction

from core_model.shipped import resource_path
from visualizer.lessons.runner import LessonRunner
from visualizer.lessons.schema import load_lessons
from visualizer.lessons.targets import target_widget
from visualizer.widgets.lessons.frame_overlay import Highlighter
from visualizer.widgets.lessons.panel import LessonDock, LessonPanel

VISIBLE_KEY = "lessons/visible"
LESSONS_KEY = "F9"  # F1 lists the keys; F2, F5 and F10 are taken


@dataclass
class Lessons:
    """What the window holds for the lessons: the runner, the dock with its panel, the menu action, the frame."""

    runner: LessonRunner
    panel: LessonPanel
    dock: LessonDock
    action: QAction
    highlighter: Highlighter

    def open(self) -> None:
        """Help › Lessons: show the dock (remembered) and give it the keyboard."""
        self.dock.show()
        self.dock.raise_()
        self.panel.lesson_list.setFocus()
        QSettings().setValue(VISIBLE_KEY, True)

    def closed(self) -> None:
        """The learner closed the dock: the lesson ends and the dock stays closed next time."""
        self.runner.stop()
        QSettings().setValue(VISIBLE_KEY, False)


def install_lessons(app: Any) -> Lessons:
    """Load the shipped lessons (a broken file is named in the panel; the others load) and dock their panel."""
    win = app.window
    lessons, problems = load_lessons(resource_path("lessons"))
    runner = LessonRunner(app, win)
    panel = LessonPanel(runner, lessons, problems)
    dock = LessonDock(panel)
    win.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, dock)
    highlighter = Highlighter()
    runner.step_started.connect(lambda _index: highlighter.clear())
    runner.step_ready.connect(lambda _index: highlighter.show_on(target_widget(app, runner.step.highlight)))
    runner.stopped.connect(highlighter.clear)
    action = win.add_action(
        win.help_menu, "&Lessons", lambda: None, LESSONS_KEY, tip="Guided lessons: the app shows, you do, it explains"
    )
    win.help_menu.removeAction(action)
    win.help_menu.insertAction(win.help_menu.actions()[0], action)  # first: where a newcomer looks
    result = Lessons(runner, panel, dock, action, highlighter)
    action.triggered.connect(result.open)
    dock.closed.connect(result.closed)
    dock.setVisible(bool(QSettings().value(VISIBLE_KEY, False, type=bool)))
    return result
