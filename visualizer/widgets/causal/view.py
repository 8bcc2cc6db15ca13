"""The Causal tab: activation patching. Two sources, one changed symbol apart; which heads carry the answer.

Render only: the fields and the Patch button hand text to PatchState; its frame is drawn as effect tables.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSpinBox,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from core_model.config import MAX_LEN
from core_model.head_roles import HeadRole
from visualizer.state.causal_patching import PatchFrame, PatchInputError, PatchState

from .effect_tables import HeadEffectTables, PositionTable

RUN_KEY = "Ctrl+Return"
HEADS_HINT = "Filled by Patch: each head's effect on the answer."
POSITIONS_HINT = "Filled by Patch: the effect at each encoder layer and source position."
RUNNING_HINT = "Patching: the cells fill in when every head and position has been patched."
SWEEP_CAPTION = (
    "Encoder residual stream, patched at one source position after each encoder layer (1 = everything the change "
    "did is still at that position after that layer; spread over several positions = attention has moved it):"
)
ERROR_STYLE = "color: #c0392b;"
EXPLANATION = (
    "Both sources are teacher-forced with the clean source's expected output. The metric at the output position is "
    "m = log p(clean token) − log p(corrupted token). A head's effect is (m_patched − m_corrupted) / (m_clean − "
    "m_corrupted) when its output, at every query position, is copied from the clean run into the corrupted one: "
    "1 = this head alone restores the clean answer, 0 = it carries nothing the change touched, below 0 = it works "
    "against it. Green = carries the answer, red = works against it. Effects need not add up to 1: each head is "
    'patched alone, and heads that share the work each restore only part of it; "all heads" patches a layer\'s '
    "heads at once. Grey: decoder layer 1's "
    "self-attention gets the same teacher-forced input in both runs, so this test cannot reach it. Under each "
    "effect: the head's role from the "
    "Heads tab and how well it fits it (0-1), a different scale: a head can fit a clear role and carry nothing. The "
    "Heads tab's Δ asks another question (how much worse the model gets with the head switched off, over many "
    "sequences), so the two can rank heads differently. Click a head to see its map large in the Playground."
)


def _error_label(name: str) -> QLabel:
    label = QLabel()
    label.setObjectName(name)
    label.setStyleSheet(ERROR_STYLE)
    label.setWordWrap(True)
    label.setVisible(False)
    return label


class PatchingView(QWidget):
    """Clean and corrupted source, output position, Patch; the head tables and the encoder position sweep."""

    head_chosen = Signal(str, int, int)  # kind, layer, head: the composition shows that head's maps

    def __init__(self, state: PatchState, default_source: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.state = state
        self.clean = QLineEdit(default_source)
        self.clean.setObjectName("patch_clean")
        self.clean.setToolTip(
            "The clean source: the model's answer for it is the one patching tries to restore. It follows the "
            "Playground's input until you edit either source here"
        )
        self.corrupt = QLineEdit(state.propose(default_source))
        self.corrupt.setObjectName("patch_corrupt")
        self.corrupt.setToolTip("The corrupted source: as long as the clean one, with a symbol or two changed")
        self.propose_button = QPushButton("Change one symbol")
        self.propose_button.setToolTip(
            "Corrupt the clean source: the symbol nearest the middle becomes the next one that changes the task's "
            "answer; two neighbours swap where no one-symbol change keeps the source valid (brackets)"
        )
        self.position = QSpinBox()
        self.position.setObjectName("patch_position")
        self.position.setRange(-1, MAX_LEN - 1)  # any decoder position a model can have
        self.position.setSpecialValueText("first difference")
        self.position.setValue(-1)
        self.position.setToolTip("The output position the metric reads (0-based); default: the first that differs")
        self.position.setMinimumWidth(self.position.fontMetrics().horizontalAdvance("first difference") + 40)
        self.run_button = QPushButton("Patch")
        self.run_button.setToolTip(f"Patch every head and every encoder position ({RUN_KEY})")
        self.errors = {field: _error_label(f"patch_error_{field}") for field in ("clean", "corrupt", "position")}
        self.status = QLabel()
        self.status.setObjectName("patch_status")
        self.status.setTextFormat(Qt.TextFormat.PlainText)
        self.status.setWordWrap(True)
        self.heads = HeadEffectTables()
        self.heads.set_hint(HEADS_HINT)
        self.positions = PositionTable()
        self.positions.set_hint(POSITIONS_HINT)
        explanation = QLabel(EXPLANATION)
        explanation.setWordWrap(True)
        explanation.setStyleSheet("color: #444")
        self._layout(explanation)
        self._wire()
        self.show_frame(state.frame)

    def _layout(self, explanation: QLabel) -> None:
        form = QFormLayout()
        for label, field, extra in (
            ("Clean:", self.clean, None),
            ("Corrupted:", self.corrupt, self.propose_button),
            ("Output position:", self.position, self.run_button),
        ):
            row = QHBoxLayout()
            row.addWidget(field, 0 if field is self.position else 1)
            if field is self.position:
                row.addStretch(1)
            if extra is not None:
                row.addWidget(extra)
            cell = QVBoxLayout()
            cell.addLayout(row)
            key = {self.clean: "clean", self.corrupt: "corrupt", self.position: "position"}[field]
            cell.addWidget(self.errors[key])
            form.addRow(label, cell)
        split = QSplitter(Qt.Orientation.Vertical)
        split.addWidget(self.heads)
        sweep = QWidget()
        sweep_layout = QVBoxLayout(sweep)
        sweep_layout.setContentsMargins(0, 0, 0, 0)
        caption = QLabel(SWEEP_CAPTION)
        caption.setWordWrap(True)  # a long caption must not set the window's minimum width
        sweep_layout.addWidget(caption)
        sweep_layout.addWidget(self.positions, 1)
        split.addWidget(sweep)
        split.setStretchFactor(0, 3)
        split.setStretchFactor(1, 2)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(self.status)
        layout.addWidget(split, 1)
        layout.addWidget(explanation)

    def _wire(self) -> None:
        st = self.state
        self.run_button.clicked.connect(self.run)
        self._edited = False  # typed into either field: the Playground's input no longer replaces them
        self.clean.textEdited.connect(self._mark_edited)
        self.corrupt.textEdited.connect(self._mark_edited)
        run = QShortcut(QKeySequence(RUN_KEY), self, self.run, context=Qt.ShortcutContext.WidgetWithChildrenShortcut)
        run.setWhatsThis("Patch (Patching page)")
        self.clean.returnPressed.connect(self.run)
        self.corrupt.returnPressed.connect(self.run)
        self.propose_button.clicked.connect(lambda: self.corrupt.setText(st.propose(self.clean.text())))
        self.heads.head_chosen.connect(self.head_chosen)
        st.frame_changed.connect(self.show_frame)
        st.running_changed.connect(self._on_running)
        st.message.connect(self.status.setText)
        st.input_error.connect(self.show_error)

    def set_roles(self, roles: tuple[HeadRole, ...] | None) -> None:
        self.heads.set_roles(roles)

    def _on_running(self, running: bool) -> None:
        """Patch is pressed once at a time; empty tables say a run is filling them, else how to fill them."""
        self.run_button.setEnabled(not running)
        self.heads.set_hint(RUNNING_HINT if running else HEADS_HINT)
        self.positions.set_hint(RUNNING_HINT if running else POSITIONS_HINT)

    def _mark_edited(self) -> None:
        self._edited = True

    def follow_source(self, text: str) -> None:
        """Take the Playground's input as the clean source, and propose its corruption, unless edited here."""
        if not self._edited and text != self.clean.text():
            self.clean.setText(text)
            self.corrupt.setText(self.state.propose(text))

    def run(self) -> None:
        position = self.position.value()
        self.state.run(self.clean.text(), self.corrupt.text(), None if position < 0 else position)

    def show_error(self, error: PatchInputError | None) -> None:
        """The message under the field it belongs to; every other field's cleared."""
        for field, label in self.errors.items():
            shown = error is not None and error.field == field
            label.setText(error.message if shown and error is not None else "")
            label.setVisible(shown)

    def show_frame(self, frame: PatchFrame | None) -> None:
        if frame is None:  # empty tables say nothing: say what fills them
            self.heads.set_effects(())
            self.positions.set_sweep((), (), ())
            self.status.setText(f"Press Patch ({RUN_KEY}) to patch every head and every encoder position.")
            return
        self.heads.set_effects(frame.result.heads, frame.result.layers)
        self.positions.set_sweep(frame.result.positions.tolist(), frame.source_tokens, frame.corrupt_tokens)
