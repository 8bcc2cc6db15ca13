"""The Causal tab's per-source page: the logit lens, attribution maps beside attention maps, and their agreement.

Render only: the source field and Analyse hand text to AttributionState; its frame is drawn here. When gradient x
delta vanishes while occlusion does not, a note says why (saturation), which is the lesson of putting them together.
"""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import Qt
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QProgressBar,
    QPushButton,
    QSplitter,
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
AGREEMENT_TIP = (
    "Spearman rank correlation, averaged over the output positions, between |attribution| and the attention view "
    "over the source's symbols (1 = same order, 0 = unrelated, -1 = reversed); hover for each position's value"
)


class AgreementTable(QTableWidget):
    """Methods x attention views: the mean rank correlation; each position's in the tooltip."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.setSelectionMode(QAbstractItemView.SelectionMode.NoSelection)
        self.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Stretch)
        self.setToolTip(AGREEMENT_TIP)

    def set_agreement(self, table: dict[str, dict[str, list[float | None]]] | None) -> None:
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
                self.setItem(row, col, item)
        if table:  # every row in view: the table is short, and a scrolled-away method would read as missing
            self.setFixedHeight(
                self.horizontalHeader().height() + self.verticalHeader().length() + 2 * self.frameWidth()
            )


class SourceView(QWidget):
    """Source, Analyse (with progress and Cancel); the lens, the maps, the agreement table and the notes."""

    def __init__(self, state: AttributionState, default_source: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.state = state
        self.source = QLineEdit(default_source)
        self.source.setObjectName("attribution_source")
        self.source.setToolTip("The source: the model's own greedy output for it is what every number here explains")
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
        lens_box = QWidget()
        lens_layout = QVBoxLayout(lens_box)
        lens_layout.setContentsMargins(0, 0, 0, 0)
        lens_layout.addWidget(QLabel("Logit lens: what the decoder would write if it stopped after each layer"))
        lens_layout.addWidget(self.lens)
        split = QSplitter(Qt.Orientation.Vertical)
        for widget, stretch in ((lens_box, 1), (self.maps, 4), (self.agreement, 1)):
            split.addWidget(widget)
            split.setStretchFactor(split.count() - 1, stretch)
        layout = QVBoxLayout(self)
        layout.addLayout(bar)
        layout.addWidget(self.error)
        layout.addWidget(self.status)
        layout.addWidget(self.saturation)
        layout.addWidget(split, 1)

    def _wire(self) -> None:
        st = self.state
        self.run_button.clicked.connect(self.run)
        self.source.returnPressed.connect(self.run)
        run = QShortcut(QKeySequence(RUN_KEY), self, self.run, context=Qt.ShortcutContext.WidgetWithChildrenShortcut)
        run.setWhatsThis("Analyse (Lens and attribution page)")
        self.cancel_button.clicked.connect(st.cancel)
        st.frame_changed.connect(self.show_frame)
        st.running_changed.connect(self._on_running)
        st.progress_changed.connect(self._on_progress)
        st.message.connect(self.status.setText)
        st.input_error.connect(self.show_error)

    def run(self) -> None:
        self.state.run(self.source.text())

    def show_error(self, error: InputError | None) -> None:
        self.error.setText("" if error is None else error.message)
        self.error.setVisible(error is not None)

    def _on_running(self, running: bool) -> None:
        self.run_button.setEnabled(not running)
        self.cancel_button.setEnabled(running)

    def _on_progress(self, done: int, total: int) -> None:
        self.progress.setRange(0, max(total, 1))
        self.progress.setValue(done)
        self.progress.setTextVisible(total > 0)
        self.progress.setFormat("gradients: %v of %m output tokens")

    def show_frame(self, frame: AttributionFrame | None) -> None:
        vocab = self.state.hub.task.vocabulary
        if frame is None:
            self.lens.set_lens(None, (), vocab.token)
            self.maps.set_maps({}, set(), (), ())
            self.agreement.set_agreement(None)
            self.saturation.setVisible(False)
            return
        self.lens.set_lens(frame.lens, frame.output_tokens, vocab.token)
        maps = {METHOD_TITLES[m]: getattr(frame.attribution, m) for m in METHODS} | frame.views
        signed = {METHOD_TITLES[m] for m in METHODS}
        self.maps.set_maps(maps, signed, frame.output_tokens, frame.source_tokens)
        self.agreement.set_agreement(frame.agreement)
        self.saturation.setVisible(frame.saturated)
