"""The Circuits tab: the head list, the selected head's QK and OV tables, and the strongest composition links.

Render only: Compute hands the work to CircuitsState (a task slot, progress and Cancel) and its frame is drawn here.
The first time the tab is shown for a model (or a new model arrives while it is shown) it computes by itself: reading
the circuits of a shipped model takes a fraction of a second, off the GUI thread.
"""

from __future__ import annotations

from functools import partial

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QKeySequence, QShortcut, QShowEvent
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QProgressBar,
    QPushButton,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from core_model.circuits import HeadRef
from core_model.head_roles import HeadRole
from visualizer.state.circuits import PRESS, CircuitsFrame, CircuitsState

from . import captions
from .composition_table import CompositionTable
from .head_list import HeadList
from .token_table import TokenTable

RUN_KEY = "Ctrl+Return"


def _label(text: str = "", name: str = "") -> QLabel:
    label = QLabel(text)
    label.setWordWrap(True)
    label.setObjectName(name)
    return label


def _column(*widgets: QWidget, stretch: tuple[int, ...] = ()) -> QWidget:
    """Widgets stacked in one column; `stretch` gives each its share of the height (0 by default)."""
    box = QWidget()
    layout = QVBoxLayout(box)
    layout.setContentsMargins(0, 0, 0, 0)
    for i, widget in enumerate(widgets):
        layout.addWidget(widget, stretch[i] if i < len(stretch) else 0)
    return box


class CircuitsView(QWidget):
    """Compute (progress, Cancel), a status line; heads | QK over OV | composition, side by side."""

    head_chosen = Signal(str, int, int)  # kind, layer, head: show that head in the Playground

    def __init__(self, state: CircuitsState, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.state = state
        self.frame: CircuitsFrame | None = None
        self._shown_for = -1  # the hub generation the tab last computed by itself for
        self.run_button = QPushButton("Compute")
        self.run_button.setToolTip(f"Read every head's circuits and composition from the weights ({RUN_KEY})")
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setEnabled(False)
        self.progress = QProgressBar()
        self.progress.setTextVisible(False)
        self.progress.setVisible(False)
        self.status = _label(PRESS[0].upper() + PRESS[1:], "circuits_status")
        self.heads = HeadList()
        self.show_button = QPushButton("Show in Playground")
        self.show_button.setToolTip("The selected head's attention map, large, on the Playground's input")
        self.qk, self.ov = TokenTable(), TokenTable()
        self.qk_caption, self.ov_caption = _label(name="qk_caption"), _label(name="ov_caption")
        self.composition = CompositionTable()
        self.composition_note = _label(name="composition_note")
        self._layout()
        self._wire()
        self.show_frame(state.frame)

    def _layout(self) -> None:
        bar = QHBoxLayout()
        for widget in (self.run_button, self.cancel_button):
            bar.addWidget(widget)
        bar.addWidget(self.progress, 1)
        bar.addStretch()
        splitter = self.splitter = QSplitter(Qt.Orientation.Horizontal)
        splitter.setChildrenCollapsible(False)
        splitter.addWidget(_column(self.heads, self.show_button, stretch=(1,)))
        included = _label(captions.INCLUDED, "circuits_included")
        included.setStyleSheet("color: #555;")
        splitter.addWidget(
            _column(self.qk_caption, self.qk, self.ov_caption, self.ov, included, stretch=(0, 1, 0, 1, 0))
        )
        splitter.addWidget(
            _column(_label(captions.COMPOSITION_CAPTION), self.composition, self.composition_note, stretch=(0, 1))
        )
        for index, share in enumerate((0, 1, 0)):  # the side tables keep their width (fit_width), QK and OV the rest
            splitter.setStretchFactor(index, share)
        layout = QVBoxLayout(self)
        layout.addWidget(_label(captions.INTRO, "circuits_intro"))
        layout.addLayout(bar)
        layout.addWidget(self.status)
        layout.addWidget(splitter, 1)

    def _wire(self) -> None:
        st = self.state
        self.run_button.clicked.connect(st.compute)
        self.cancel_button.clicked.connect(st.cancel)
        run = QShortcut(QKeySequence(RUN_KEY), self, st.compute, context=Qt.ShortcutContext.WidgetWithChildrenShortcut)
        run.setWhatsThis("Compute the circuits")  # as shortcut_list.LAZY_TAB_KEYS lists it
        st.frame_changed.connect(self.show_frame)
        st.running_changed.connect(self._on_running)
        st.progress_changed.connect(self._on_progress)
        st.message.connect(self.status.setText)
        self.heads.head_selected.connect(self.show_head)
        self.heads.head_chosen.connect(self.head_chosen)
        self.show_button.clicked.connect(self.heads.choose_selected)
        self.composition.target_selected.connect(self.heads.select)

    def showEvent(self, event: QShowEvent) -> None:  # Qt's name
        super().showEvent(event)
        self._compute_if_due()

    def _compute_if_due(self) -> None:
        """Compute once per model while the tab is on screen; a cancelled run is not restarted behind one's back."""
        generation = self.state.hub.generation
        due = self.state.frame is None and not self.state.running and self._shown_for != generation
        if due and self.isVisible():
            self._shown_for = generation
            self.state.compute()

    def set_roles(self, roles: tuple[HeadRole, ...] | None) -> None:
        """The Heads tab's roles of the current model, beside each head."""
        self.heads.set_roles(roles)

    def show_frame(self, frame: CircuitsFrame | None) -> None:
        self.frame = frame
        self.heads.set_heads(() if frame is None else frame.heads)
        if frame is None:  # a new model: read it now if the tab is on screen
            QTimer.singleShot(0, self, self._compute_if_due)
        self.composition.set_frame(frame)
        self.show_button.setEnabled(frame is not None)
        if frame is None:
            self.composition_note.setText("")
            return
        self.composition_note.setText(
            captions.composition_note(
                len(self.composition.links), len(frame.composition), frame.above_baseline, frame.baseline
            )
        )

    def show_head(self, ref: HeadRef | None) -> None:
        """The head's QK and OV tables (None: empty tables)."""
        frame = self.frame
        if frame is None or ref is None:
            for table, caption in ((self.qk, self.qk_caption), (self.ov, self.ov_caption)):
                table.setRowCount(0)
                table.setColumnCount(0)
                caption.setText("")
            return
        circuit, tokens = frame.circuit(ref), frame.tokens
        self.qk.set_table(circuit.qk, tokens, tokens, partial(captions.qk_tip, ref))
        self.ov.set_table(circuit.ov, tokens, tokens, partial(captions.ov_tip, ref))
        self.qk_caption.setText(captions.qk_caption(ref, self.qk.scale))
        self.ov_caption.setText(captions.ov_caption(ref, self.ov.scale))

    def _on_running(self, running: bool) -> None:
        self.run_button.setEnabled(not running)
        self.cancel_button.setEnabled(running)
        self.progress.setVisible(running)
        if not running:  # a run cancelled by a new model: read the new one if the tab is on screen
            QTimer.singleShot(0, self, self._compute_if_due)

    def _on_progress(self, done: int, total: int) -> None:
        self.progress.setRange(0, max(total, 1))
        self.progress.setValue(done)
        self.progress.setTextVisible(total > 0)
        self.progress.setFormat("step %v of %m")
