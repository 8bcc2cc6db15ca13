"""The Lessons dock: pick a lesson, read the step, do it in the app, read the explanation, go on.

Render only: it shows what the LessonRunner says and asks it to start, go back or go on. Every text here comes from
a lesson file or names one, so every label shows plain text: a file's `<img>` or `<a href>` is shown as written,
never rendered, loaded or followed.
"""

from __future__ import annotations

from PySide6.QtCore import QPoint, Qt, QTimer, Signal
from PySide6.QtGui import QCloseEvent
from PySide6.QtWidgets import (
    QCheckBox,
    QDockWidget,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QScrollArea,
    QVBoxLayout,
    QWidget,
)

from visualizer.lessons.restore import KEPT
from visualizer.lessons.runner import LessonRunner
from visualizer.lessons.schema import Lesson
from visualizer.widgets.common.rich_text import plain_tooltip

ERROR_STYLE = "color: #a94442;"
EXPLAIN_STYLE = "background: #eef6ee; border-left: 3px solid #4a9a4a; padding: 4px;"
DOCK_WIDTH = 300  # beside the grids at 1280 px: the Playground's controls keep their 440 px
KEEP_TEXT = "Keep the changes this lesson made"
COURSE_DONE = (
    "You have finished the last lesson, and with it the course. Every lesson stays in the list above to play "
    "again. On your own now: the Circuits and Length lab tabs have more to try, and F1 lists every key."
)


def _wrapped(text: str = "", style: str = "") -> QLabel:
    label = QLabel(text)
    label.setTextFormat(Qt.TextFormat.PlainText)
    label.setWordWrap(True)
    label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    label.setStyleSheet(style)
    return label


class LessonPanel(QWidget):
    """The lesson list, then the current step: "Step 2 of 5", what to do, the explanation, Back and Next."""

    def __init__(self, runner: LessonRunner) -> None:
        """Empty until `set_lessons`: the lessons are read off the GUI thread while the window is already up."""
        super().__init__()
        self.runner = runner
        self.lessons: list[Lesson] = []
        self.loaded = False
        self.lesson_list = QListWidget()
        self.lesson_list.setWordWrap(True)  # a long title wraps in the narrow dock instead of scrolling sideways
        self.lesson_list.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.lesson_list.setMaximumHeight(150)
        self.start_button = QPushButton("Start lesson")
        self.problems_label = _wrapped(style=ERROR_STYLE)
        self.problems_label.hide()
        self.title_label, self.progress_label = _wrapped(style="font-weight: bold;"), _wrapped()
        self.say_label, self.status_label = _wrapped(), _wrapped(style="color: gray;")
        self.explain_label = _wrapped(style=EXPLAIN_STYLE)
        self.back_button, self.next_button = QPushButton("Back"), QPushButton("Next")
        self.next_lesson_button = QPushButton("Next lesson")
        self.next_lesson_button.setToolTip("Finish this lesson and start the next one")
        self.next_lesson_button.hide()
        self.keep_box = QCheckBox(KEEP_TEXT)
        self.keep_box.setToolTip(
            f"Ticked, the lesson's end leaves {KEPT} as the lesson set them; unticked, they come back as you had "
            "them before the lesson (a model the lesson replaced comes back too, the lesson's one Model › Undo away)"
        )
        self.end_label = _wrapped(style="color: gray;")  # what the end of the last lesson put back
        self.end_label.hide()
        self._lay_out()
        self.lesson_list.itemActivated.connect(lambda _item: self._start_selected())
        self.start_button.clicked.connect(self._start_selected)
        self.back_button.clicked.connect(runner.back)
        self.next_button.clicked.connect(runner.next)
        self.next_lesson_button.clicked.connect(self._start_next_lesson)
        self.keep_box.toggled.connect(self._keep_toggled)
        runner.ended.connect(self._show_end)
        runner.step_started.connect(self._show_step)
        runner.step_ready.connect(self._show_ready)
        runner.step_done.connect(self._show_done)
        runner.failed.connect(self._show_failure)
        runner.stopped.connect(self._show_no_lesson)
        self._show_no_lesson()

    def set_lessons(self, lessons: list[Lesson], problems: list[str]) -> None:
        """The lessons that loaded, listed, and one line per file that did not (its name and what is wrong)."""
        self.lessons, self.loaded = lessons, True
        self.lesson_list.clear()
        for lesson in lessons:
            item = QListWidgetItem(f"{lesson.order}. {lesson.title}")
            item.setToolTip(plain_tooltip(lesson.summary))
            self.lesson_list.addItem(item)
        if lessons:
            self.lesson_list.setCurrentRow(0)
        self.problems_label.setText("\n".join(problems))
        self.problems_label.setVisible(bool(problems))
        if self.runner.lesson is None:
            self._show_no_lesson()

    def _lay_out(self) -> None:
        buttons = QHBoxLayout()
        buttons.addWidget(self.back_button)
        buttons.addStretch(1)
        buttons.addWidget(self.next_button)
        buttons.addWidget(self.next_lesson_button)
        layout = QVBoxLayout(self)
        for widget in (self.lesson_list, self.start_button, self.problems_label, self.title_label):
            layout.addWidget(widget)
        for widget in (self.progress_label, self.say_label, self.status_label, self.explain_label):
            layout.addWidget(widget)
        layout.addLayout(buttons)
        layout.addWidget(self.keep_box)
        layout.addWidget(self.end_label)
        layout.addStretch(1)

    def mark_finished(self, titles: set[str]) -> None:
        """A tick before each lesson the learner finished, so the list shows where they are."""
        for row, lesson in enumerate(self.lessons):
            done = lesson.title in titles
            item = self.lesson_list.item(row)
            item.setText(f"{'✓ ' if done else ''}{lesson.order}. {lesson.title}")
            item.setToolTip(plain_tooltip(lesson.summary + (" (finished)" if done else "")))

    def show_course_end(self) -> None:
        """The last lesson of the list was finished: say the course is over, and where to go from here."""
        self.title_label.setText("Course complete")
        self.explain_label.setText(COURSE_DONE)
        self.explain_label.show()

    def _start_selected(self) -> None:
        row = self.lesson_list.currentRow()
        if 0 <= row < len(self.lessons):
            self.runner.start(self.lessons[row])

    def _following(self) -> int | None:
        """The row of the lesson after the running one, None on the last."""
        lesson = self.runner.lesson
        rows = [i for i, candidate in enumerate(self.lessons) if candidate is lesson]
        return rows[0] + 1 if rows and rows[0] + 1 < len(self.lessons) else None

    def _start_next_lesson(self) -> None:
        """Finish this lesson (ticked, its changes put back or kept as chosen), then start the next one."""
        row = self._following()
        self.runner.next()
        if row is not None and self.runner.lesson is None:
            self.lesson_list.setCurrentRow(row)
            self.runner.start(self.lessons[row])

    def _keep_toggled(self, on: bool) -> None:
        self.runner.keep_changes = on

    def _show_end(self, line: str) -> None:
        self.end_label.setText(line)
        self.end_label.setVisible(bool(line))

    def _show_no_lesson(self) -> None:
        if not self.loaded:
            self.title_label.setText("Loading the lessons…")
        else:
            self.title_label.setText("Pick a lesson and press Start lesson." if self.lessons else "No lessons found.")
        for label in (self.progress_label, self.say_label, self.status_label, self.explain_label):
            label.clear()
        self.explain_label.hide()
        self.back_button.setEnabled(False)
        self.next_button.setEnabled(False)
        self.next_lesson_button.hide()
        self.keep_box.hide()

    def _show_step(self, index: int) -> None:
        lesson = self.runner.lesson
        assert lesson is not None
        self.title_label.setText(lesson.title)
        self.progress_label.setText(f"Step {index + 1} of {len(lesson.steps)}")
        self.say_label.setText(lesson.steps[index].say)
        self.status_label.setStyleSheet("color: gray;")
        self.status_label.setText("Setting up the app…")
        self.explain_label.clear()
        self.explain_label.hide()
        self.back_button.setEnabled(index > 0)
        self.next_button.setEnabled(False)
        last = index + 1 == len(lesson.steps)
        self.next_button.setText("Finish" if last else "Next")
        self.next_lesson_button.setVisible(last and self._following() is not None)
        self.next_lesson_button.setEnabled(False)
        if index == 0:
            self.keep_box.setChecked(self.runner.keep_changes)  # a new lesson starts unticked
        self.keep_box.show()
        self.end_label.hide()

    def _show_ready(self, _index: int) -> None:
        waiting = self.runner.step.until is not None
        self.status_label.setText("Your turn: do it in the window." if waiting else "")

    def _show_done(self, _index: int, explanation: str) -> None:
        self.status_label.setText("Done." if self.runner.step.until is not None else "")
        self.explain_label.setText(explanation)
        self.explain_label.setVisible(bool(explanation))
        self.next_button.setEnabled(True)
        self.next_lesson_button.setEnabled(True)
        if explanation:
            QTimer.singleShot(0, self, self.scroll_to_explanation)  # once the new text is laid out

    def scroll_to_explanation(self) -> None:
        """Bring the explanation into the dock's view, down to the Next button where it all fits, else from its
        first line: the numbers it quotes stand below the step's text, past the fold of a laptop's dock."""
        parent = self.parentWidget()
        scroll = parent.parentWidget() if parent is not None else None
        if not isinstance(scroll, QScrollArea) or not self.explain_label.isVisible():
            return
        bar, seen = scroll.verticalScrollBar(), scroll.viewport().height()
        top = self.explain_label.mapTo(self, QPoint(0, 0)).y()
        bottom = self.next_button.mapTo(self, QPoint(0, self.next_button.height())).y()
        if top >= bar.value() and bottom <= bar.value() + seen:
            return  # already in view
        bar.setValue(top if bottom - top > seen else bottom - seen)

    def _show_failure(self, message: str) -> None:
        self.status_label.setStyleSheet(ERROR_STYLE)
        self.status_label.setText(message)


class LessonDock(QDockWidget):
    """The panel as a closable dock; `closed` says the learner closed it (the app remembers that)."""

    closed = Signal()

    def __init__(self, panel: LessonPanel) -> None:
        super().__init__("Lessons")
        self.setObjectName("lessons dock")  # saveState needs a name
        scroll = QScrollArea()  # a longer explanation scrolls: it never widens the dock or moves the grids
        scroll.setWidgetResizable(True)
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        scroll.setFrameShape(QScrollArea.Shape.NoFrame)
        scroll.setWidget(panel)
        self.setWidget(scroll)
        self.setFeatures(QDockWidget.DockWidgetFeature.DockWidgetClosable)
        self.setMinimumWidth(DOCK_WIDTH)
        self.setMaximumWidth(DOCK_WIDTH + 120)

    def closeEvent(self, event: QCloseEvent) -> None:  # Qt's name
        super().closeEvent(event)
        self.closed.emit()
