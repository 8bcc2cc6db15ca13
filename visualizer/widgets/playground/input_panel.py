"""Source text, task and target prefix, with the validation message shown right under the field."""

from __future__ import annotations

import html

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QComboBox, QFormLayout, QLabel, QLineEdit, QSpinBox, QWidget

from core_model.shipped import has_shipped
from core_model.tasks import TASKS
from visualizer.state.playground import MAX_EXTRA_PADS
from visualizer.state.snapshots import InputError, InputValues
from visualizer.widgets.common.stable_label import ElidedLabelSlot
from visualizer.widgets.common.styles import WARNING_STYLE

ERROR_STYLE = "QLineEdit { border: 2px solid #d9534f; }"
OUTSIDE_STYLE = "color: #b35c00; font-weight: bold;"  # amber: a warning, not the red of an error
TASK_TIP = (
    "What the output should be: decoded tokens are marked right or wrong against it.\n"
    "Picking a task loads the shipped model trained on it (asks first if you have your own);\n"
    "a task marked (no model yet) gets an untrained model to train in the Trainer tab"
)
NO_MODEL_MARK = " (no model yet)"  # after a task's name in the chooser when no trained model for it ships
TASK_LOCKED_TIP = "Stop training to change the task: the Trainer tab is training this model on its task"


class InputPanel(QWidget):
    """Emits what the user typed; shows errors and the task's expected output it is told about."""

    source_edited = Signal(str)
    prefix_edited = Signal(str)
    task_selected = Signal(str)
    pads_changed = Signal(int)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.source = QLineEdit()
        self.source.setPlaceholderText("e.g. 0123456789")  # the picked task's example (_show_task)
        self.source.setToolTip(
            "Source sequence, one symbol per character (spaces are ignored). Maps update as you type."
        )
        self.source.setClearButtonEnabled(True)
        self.error = QLabel()
        self.error.setWordWrap(True)
        self.error.setStyleSheet("color: #c9302c;")
        self.error.setTextFormat(Qt.TextFormat.RichText)
        self.error.hide()
        self._error: InputError | None = None
        self.task = QComboBox()
        for name, definition in TASKS.items():  # every task of the registry; picking one loads its shipped model
            self.task.addItem(name if has_shipped(name) else name + NO_MODEL_MARK, name)
            self.task.setItemData(self.task.count() - 1, definition.description, Qt.ItemDataRole.ToolTipRole)
        self.task.setToolTip(TASK_TIP)
        # what the picked task asks: its one-line description, two lines at most in the column (its explanation is
        # in the tooltip); it changes with the task only, never per keystroke
        self.asks = QLabel()
        self.asks.setTextFormat(Qt.TextFormat.PlainText)
        self.asks.setWordWrap(True)
        self.asks.setStyleSheet("color: #444;")
        # where the model for the task stands, only when there is something to say ("no trained model ships ...")
        self.task_note = QLabel()
        self.task_note.setWordWrap(True)
        self.task_note.setTextFormat(Qt.TextFormat.PlainText)
        self.task_note.setStyleSheet(WARNING_STYLE)
        self.task_note.hide()
        # new text per keystroke: a fixed slot never re-lays out the column nor widens it for a long source;
        # text too long for the slot is elided and shown whole in the tooltip and the decoder's Expected chips.
        # Right-click copies it whole; mouse selection would copy the elided text, and a selectable label keeps a
        # text document laid out again on every keystroke
        self.expected_slot = ElidedLabelSlot("Copy expected output")
        self.expected = self.expected_slot.label
        self.expected.setTextFormat(Qt.TextFormat.PlainText)  # tokens such as <eos> are text, never tags
        self.expected_slot.set_text("—")
        # the lengths the model was trained on, and whether this source lies outside them (a note, never a refusal)
        self.trained_slot = ElidedLabelSlot()
        self.trained = self.trained_slot.label
        self.trained.setTextFormat(Qt.TextFormat.PlainText)
        self._outside = False
        self.prefix = QLineEdit()
        self.prefix.setPlaceholderText("optional: tokens forced at the start of decoding")
        self.prefix.setToolTip("Optional target prefix: these tokens are forced before the decoder continues")
        self.pads = QSpinBox()
        self.pads.setRange(0, MAX_EXTRA_PADS)
        self.pads.setToolTip(
            "Append this many <pad> tokens to the source (and teacher-forced target) so the padding "
            "masks have something to hide"
        )
        form = QFormLayout(self)
        form.setContentsMargins(4, 4, 4, 4)
        form.addRow("&Source:", self.source)
        form.addRow("", self.error)
        form.addRow("T&ask:", self.task)  # Alt+T is the Trainer tab
        form.addRow("Asks:", self.asks)
        form.addRow("", self.task_note)
        form.addRow("Expected:", self.expected_slot)
        form.addRow("Trained on:", self.trained_slot)
        form.addRow("Target prefi&x:", self.prefix)  # Alt+P is the Playground tab
        form.addRow("Extra <pad>s:", self.pads)
        self.source.textEdited.connect(self.source_edited)
        self.prefix.textEdited.connect(self.prefix_edited)
        for edit in (self.source, self.prefix):
            edit.textChanged.connect(lambda _text: self._error is not None and self._write_error())
        self.task.currentIndexChanged.connect(lambda _i: self.task_selected.emit(self.task.currentData()))
        self.pads.valueChanged.connect(self.pads_changed)

    def show_values(self, values: InputValues) -> None:
        """Show the session's inputs without emitting edits; a field already showing its value is left alone (its
        cursor and selection stay where the person left them)."""
        for w in (self.source, self.prefix, self.task, self.pads):
            w.blockSignals(True)
        try:
            if self.source.text() != values.source:
                self.source.setText(values.source)
            if self.prefix.text() != values.prefix:
                self.prefix.setText(values.prefix)
            self.task.setCurrentIndex(max(0, self.task.findData(values.task)))
            self._show_task(values.task)
            self.pads.setValue(values.pads)
        finally:
            for w in (self.source, self.prefix, self.task, self.pads):
                w.blockSignals(False)

    def _show_task(self, name: str) -> None:
        """The picked task's one line under the chooser, its explanation in the tooltip, its example as the hint."""
        definition = TASKS[name]
        if self.asks.text() != definition.description:
            self.asks.setText(definition.description)
            self.asks.setToolTip(
                f"<p>{html.escape(definition.description)}</p><p>{html.escape(definition.explanation)}</p>"
            )
            example = definition.example(definition.default_symbols, definition.training_lengths[1])
            self.source.setPlaceholderText(f"e.g. {example}")

    def set_task_note(self, note: str) -> None:
        """Where the model for the picked task stands ("" hides the line)."""
        self.task_note.setText(note)
        self.task_note.setVisible(bool(note))

    def set_error(self, error: InputError | None) -> None:
        """Show (or clear) the message at the field it is about: red border, the offending symbol marked in red."""
        self._error = error
        field = self.prefix if error is not None and error.field == "prefix" else self.source
        for w in (self.source, self.prefix):
            w.setStyleSheet(ERROR_STYLE if (error is not None and w is field) else "")
        self.error.setVisible(error is not None)
        self._write_error()

    def _write_error(self) -> None:
        """The message, the field's text as it is now with the offending symbol marked (typing on after an error
        keeps the same error, and the excerpt must follow the text), and what the rest of the window still shows."""
        error = self._error
        if error is None:
            self.error.setText("")
            return
        field = self.prefix if error.field == "prefix" else self.source
        what = (
            "the Expected line, the maps and the prediction" if field is self.source else "the maps and the prediction"
        )
        still = (
            f"<br>Until it is fixed, {what} show the last valid {error.field}: "
            f"<tt>{html.escape(error.showing_briefly, quote=False)}</tt>"
        )
        self.error.setText(
            html.escape(error.message, quote=False) + self._highlight(field.text(), error.position) + still
        )

    @staticmethod
    def _highlight(text: str, pos: int | None) -> str:
        """A short excerpt of the input with the character at 0-based `pos` marked, or "" without a position."""
        if pos is None or not 0 <= pos < len(text):
            return ""
        lo, hi = max(0, pos - 20), min(len(text), pos + 21)
        before, bad, after = (html.escape(t, quote=False) for t in (text[lo:pos], text[pos], text[pos + 1 : hi]))
        return (
            f"<br><tt>{'…' if lo else ''}{before}<span style='background:#d9534f;color:white'>{bad}</span>"
            f"{after}{'…' if hi < len(text) else ''}</tt>"
        )

    def set_task_locked(self, locked: bool) -> None:
        """While training runs the task is the one being trained: the combo is disabled and says so."""
        self.task.setEnabled(not locked)
        self.task.setToolTip(TASK_LOCKED_TIP if locked else TASK_TIP)

    def set_expected(self, tokens: tuple[str, ...]) -> None:
        text = " ".join(tokens) or "—"
        self.expected.setToolTip(f"The task's expected output for this source:\n{text}")
        self.expected_slot.set_text(text)

    def set_length_note(self, line: str, tip: str, outside: bool) -> None:
        """The trained lengths and where this source stands to them; outside them the line is amber and bold."""
        if line != self.trained_slot.full_text():
            self.trained_slot.set_text(line)
        if tip != self.trained.toolTip():
            self.trained.setToolTip(tip)
        if outside != self._outside:  # a style change re-polishes the label: only when the state flips
            self._outside = outside
            self.trained.setStyleSheet(OUTSIDE_STYLE if outside else "")
