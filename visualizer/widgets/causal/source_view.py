"""The Causal tab's per-source page: the logit lens, attribution maps beside attention maps, and their agreement.

Render only: the source field and Analyse hand text to AttributionState; its frame is drawn here. When gradient x
delta vanishes while occlusion does not, a note says why (saturation), which is the lesson of putting them together.
"""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import Qt
from PySide6.QtGui import QBrush, QColor, QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QProgressBar,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from core_model.attribution_agreement import METHODS
from visualizer.state.attribution import AttributionFrame, AttributionState
from visualizer.state.snapshots import InputError

from .lens_table import LensTable
from .source_maps import METHOD_TITLES, SourceMaps

RUN_KEY = "Ctrl+Return"
SATURATION_NOTE = (
    "Gradient × delta is almost 0 here while occlusion is not: the model is saturated. It is so sure of its answer "
    "that the log-probability hardly changes near the input, so the gradient at the input says little; integrated "
    "gradients walk from the baseline, where the change happens, and occlusion simply removes the symbol."
)
LENS_CAPTION = (
    "Logit lens: the token the decoder would write if it stopped after each decoder layer, and its probability. "
    "Shade = that probability (dark = sure, which is not the same as right); ✓ = the token the model does write."
)
MAPS_CAPTION = (
    "Attributions (rows: output tokens, columns: source tokens; red raises the output's log p, blue lowers it, one "
    "scale for the three) beside the attention views of the same pass (dark = 0, yellow = the map's maximum)."
)
AGREEMENT_CAPTION = (
    "Agreement: Spearman rank correlation between |attribution| and each attention view over the source's symbols, "
    "the mean over output positions (1 = same order, 0 = unrelated; hover for each position). Ranks among cells "
    "near 0 are mostly noise, and a saturated method's row ranks noise."
)
AGREEMENT_TIP = (
    "Spearman rank correlation, averaged over the output positions, between |attribution| and the attention view "
    "over the source's symbols (1 = same order, 0 = unrelated, -1 = reversed); hover for each position's value"
)


def fit_rows(table: QTableWidget) -> None:
    """Make a short table exactly as tall as its rows: a row scrolled out of view would read as missing."""
    table.resizeRowsToContents()
    header = table.horizontalHeader().sizeHint().height()
    table.setFixedHeight(header + table.verticalHeader().length() + 2 * table.frameWidth())


def _captioned(text: str, widget: QWidget) -> QWidget:
    """The widget under a one-line caption that says how to read it."""
    box = QWidget()
    layout = QVBoxLayout(box)
    layout.setContentsMargins(0, 0, 0, 0)
    caption = QLabel(text)
    caption.setWordWrap(True)
    layout.addWidget(caption)
    layout.addWidget(widget, 1)
    return box


class AgreementTable(QTableWidget):
    """Methods x attention views: the mean rank correlation; each position's in the tooltip."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.setSelectionMode(QAbstractItemView.SelectionMode.NoSelection)
        self.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Stretch)
        self.setToolTip(AGREEMENT_TIP)

    def set_agreement(self, table: dict[str, dict[str, list[float | None]]] | None, muted: str | None = None) -> None:
        """`muted`: a method whose row is greyed (a saturated gradient: its ranks are those of noise)."""
        self.clearContents()
        views = list(next(iter(table.values()))) if table else []
        self.setRowCount(len(table or {}))
        self.setColumnCount(len(views))
        self.setVerticalHeaderLabels([METHOD_TITLES[m] for m in (table or {})])
        self.setHorizontalHeaderLabels(views)
        for row, method in enumerate(table or {}):
            for col, view in enumerate(views):
                rhos = [r for r in table[method][view] if r is not None]
                item = QTableWidgetItem("—" if not rhos else f"{np.mean(rhos):+.2f}")
                item.setTextAlignment(Qt.AlignmentFlag.AlignCenter)
                per_position = ", ".join("—" if r is None else f"{r:+.2f}" for r in table[method][view])
                item.setToolTip(f"{METHOD_TITLES[method]} vs {view}, per output position: {per_position}")
                if method == muted:
                    item.setForeground(QBrush(QColor("#9e9e9e")))
                    item.setToolTip(
                        f"Saturated: this method is near 0 everywhere, so its ranks are noise. {per_position}"
                    )
                self.setItem(row, col, item)
        fit_rows(self)


class SourceView(QWidget):
    """Source, Analyse (with progress and Cancel); the lens, the maps, the agreement table and the notes."""

    def __init__(self, state: AttributionState, default_source: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.state = state
        self.source = QLineEdit(default_source)
        self.source.setObjectName("attribution_source")
        self.source.setToolTip(
            "The source: the model's own greedy output for it is what every number here explains. It follows the "
            "Playground's input until you edit it here"
        )
        self.error = QLabel()
        self.error.setObjectName("attribution_error")
        self.error.setStyleSheet("color: #c0392b;")
        self.error.setVisible(False)
        self.run_button = QPushButton("Analyse")
        self.run_button.setToolTip(f"Run the logit lens and the three attributions ({RUN_KEY})")
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setEnabled(False)
        self.progress = QProgressBar()
        self.progress.setRange(0, 1)
        self.progress.setTextVisible(False)  # "0%" when idle would read as a failed run
        self.progress.setVisible(False)
        self.status = QLabel()
        self.status.setObjectName("attribution_status")
        self.status.setWordWrap(True)
        self.saturation = QLabel(SATURATION_NOTE)
        self.saturation.setObjectName("saturation_note")
        self.saturation.setWordWrap(True)
        self.saturation.setStyleSheet("color: #7a4b00; background: #fff3cd; padding: 3px 6px;")
        self.saturation.setVisible(False)
        self.lens = LensTable()
        self.maps = SourceMaps()
        self.agreement = AgreementTable()
        self._layout()
        self._wire()
        self.show_frame(state.frame)

    def _layout(self) -> None:
        bar = QHBoxLayout()
        bar.addWidget(QLabel("Source:"))
        bar.addWidget(self.source, 2)
        for widget in (self.run_button, self.cancel_button):
            bar.addWidget(widget)
        bar.addWidget(self.progress, 1)
        layout = QVBoxLayout(self)
        layout.addLayout(bar)
        layout.addWidget(self.error)
        layout.addWidget(self.status)
        layout.addWidget(self.saturation)
        # the two tables keep the height of their rows (fit_rows); the maps take the rest
        layout.addWidget(_captioned(LENS_CAPTION, self.lens))
        layout.addWidget(_captioned(MAPS_CAPTION, self.maps), 1)
        layout.addWidget(_captioned(AGREEMENT_CAPTION, self.agreement))

    def _wire(self) -> None:
        st = self.state
        self.run_button.clicked.connect(self.run)
        self._edited = False  # typed into: the Playground's input no longer replaces it
        self.source.textEdited.connect(self._mark_edited)
        self.source.returnPressed.connect(self.run)
        run = QShortcut(QKeySequence(RUN_KEY), self, self.run, context=Qt.ShortcutContext.WidgetWithChildrenShortcut)
        run.setWhatsThis("Analyse (Lens and attribution page)")
        self.cancel_button.clicked.connect(st.cancel)
        st.frame_changed.connect(self.show_frame)
        st.running_changed.connect(self._on_running)
        st.progress_changed.connect(self._on_progress)
        st.message.connect(self.status.setText)
        st.input_error.connect(self.show_error)

    def _mark_edited(self) -> None:
        self._edited = True

    def follow_source(self, text: str) -> None:
        """Take the Playground's input as the source unless it was edited here."""
        if not self._edited:
            self.source.setText(text)

    def run(self) -> None:
        self.state.run(self.source.text())

    def show_error(self, error: InputError | None) -> None:
        self.error.setText("" if error is None else error.message)
        self.error.setVisible(error is not None)

    def _on_running(self, running: bool) -> None:
        self.run_button.setEnabled(not running)
        self.cancel_button.setEnabled(running)
        self.progress.setVisible(running)  # idle, an empty bar reads as a field to type into

    def _on_progress(self, done: int, total: int) -> None:
        self.progress.setRange(0, max(total, 1))
        self.progress.setValue(done)
        self.progress.setTextVisible(total > 0)
        self.progress.setFormat("gradients: %v of %m output tokens")

    def show_frame(self, frame: AttributionFrame | None) -> None:
        vocab = self.state.hub.task.vocabulary
        if frame is None:
            self.lens.set_lens(None, (), vocab.token)
            fit_rows(self.lens)
            self.maps.set_maps({}, set(), (), ())
            self.agreement.set_agreement(None)
            self.saturation.setVisible(False)
            self.status.setText(f"Press Analyse ({RUN_KEY}) for the logit lens and the three attributions.")
            return
        self.lens.set_lens(frame.lens, frame.output_tokens, vocab.token)
        fit_rows(self.lens)
        maps = {METHOD_TITLES[m]: getattr(frame.attribution, m) for m in METHODS} | frame.views
        signed = {METHOD_TITLES[m] for m in METHODS}
        self.maps.set_maps(maps, signed, frame.output_tokens, frame.source_tokens)
        self.agreement.set_agreement(frame.agreement, "gradient_x_delta" if frame.saturated else None)
        self.saturation.setVisible(frame.saturated)
