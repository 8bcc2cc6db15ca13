"""The Heads tab: run the analysis (N sequences, seed), see importance maps and the roles table."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QProgressBar,
    QPushButton,
    QSpinBox,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from core_model.head_importance import MAX_SEQUENCES
from core_model.head_roles import probe_description
from visualizer.state.heads import HeadsState
from visualizer.widgets.common.role_labels import READS_MEANING
from visualizer.widgets.common.styles import WARNING_STYLE

from .importance_map import ImportanceMaps
from .roles_table import RolesTable

ROLE_LEGEND = (
    "Roles (teacher forced on the sequences above): "
    + READS_MEANING
    + ", 1 = always there; self / prev / first/<bos> = mean "
    "weight on the query's own position, the one before it, the first one; <eos>/pad = weight on <eos> or padding; "
    "broad = entropy / log(number of keys) (1 = uniform). A head's role is its highest score, except: broad under "
    "0.5, or a best score under 0.25, is other (focused, on keys no pattern names; its score is its broad score)."
)
STALE_STYLE = WARNING_STYLE


class HeadsView(QWidget):
    """Analyse button, progress and cancel, importance maps and the roles table; it only draws the state."""

    head_chosen = Signal(str, int, int)  # forwarded from the maps: the composition ablates it in the Playground

    def __init__(self, state: HeadsState, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.state = state
        self.n_box = QSpinBox()
        self.n_box.setRange(1, MAX_SEQUENCES)
        self.n_box.setValue(state.n)
        self.n_box.setKeyboardTracking(False)  # one change per edit (Enter, focus out, arrows), not per digit
        self.n_box.setToolTip("How many task sequences every head is scored on (the CLI's --n)")
        self.seed_box = QSpinBox()
        self.seed_box.setRange(0, 2**31 - 1)  # a spin box holds a 32-bit signed number; the CLI's seeds go to 2**32-1
        self.seed_box.setValue(state.seed)
        self.seed_box.setKeyboardTracking(False)
        self.seed_box.setToolTip(
            f"Seed of the task sequences (the CLI's --seed): same seed, same numbers; 0 to {2**31 - 1} here"
        )
        self.run_button = QPushButton("&Analyse heads")
        self.run_button.setToolTip("Switch each head off in turn and measure loss and exact match (Ctrl+Shift+A)")
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setToolTip("Stop the analysis after the head being ablated now")
        self.cancel_button.setEnabled(False)
        self.progress = QProgressBar()
        self.progress.setRange(0, 1)
        self.progress.setValue(0)
        self.progress.setTextVisible(False)  # idle, "0%" reads as a run that stalled
        self.status = QLabel("")
        self.status.setTextFormat(Qt.TextFormat.PlainText)
        self.stale = QLabel("")  # flags an analysis of another model (or task) until the next one finishes
        self.stale.setTextFormat(Qt.TextFormat.PlainText)
        self.stale.setWordWrap(True)
        self.stale.setStyleSheet(STALE_STYLE)
        self.sequences = QLabel("")  # which sequences every number here is scored on (the JSON's `sequences`)
        self.sequences.setWordWrap(True)
        self.sequences.setTextFormat(Qt.TextFormat.PlainText)
        self.maps = ImportanceMaps()
        self.roles = RolesTable()
        legend = QLabel(ROLE_LEGEND)
        legend.setWordWrap(True)
        legend.setTextFormat(Qt.TextFormat.PlainText)
        legend.setStyleSheet("color: gray")
        self._layout(legend)
        self._wire()
        self.roles.set_roles(state.roles)
        self.maps.set_analysis(state.analysis)
        self._show_sequences()
        self._show_stale(state.stale)

    def _layout(self, legend: QLabel) -> None:
        bar = QHBoxLayout()
        for w in (
            QLabel("Sequences:"),
            self.n_box,
            QLabel("Seed:"),
            self.seed_box,
            self.run_button,
            self.cancel_button,
        ):
            bar.addWidget(w)
        bar.addWidget(self.progress, 1)
        split = QSplitter(Qt.Orientation.Vertical)
        split.addWidget(self.maps)
        split.addWidget(self.roles)
        split.setStretchFactor(0, 3)
        split.setStretchFactor(1, 2)
        layout = QVBoxLayout(self)
        layout.addLayout(bar)
        layout.addWidget(self.sequences)
        layout.addWidget(self.status)
        layout.addWidget(self.stale)
        layout.addWidget(split, 1)
        layout.addWidget(legend)

    def _wire(self) -> None:
        st = self.state
        self.run_button.clicked.connect(self.run)
        self.cancel_button.clicked.connect(st.cancel)
        self.maps.head_chosen.connect(self.head_chosen)
        st.frame_changed.connect(self.maps.set_analysis)
        st.frame_changed.connect(self.roles.set_analysis)
        st.roles_changed.connect(self.roles.set_roles)
        st.roles_changed.connect(self._show_sequences)  # follows every model (and task) change
        st.running_changed.connect(self._on_running)
        st.progress_changed.connect(self._on_progress)
        st.message.connect(self.status.setText)
        st.stale_changed.connect(self._show_stale)
        self.n_box.valueChanged.connect(self._on_sequences)
        self.seed_box.valueChanged.connect(self._on_sequences)

    def run(self) -> None:
        if not self.state.start():
            self.status.setText("An analysis is already running.")

    def _on_sequences(self) -> None:
        self.state.set_sequences(self.n_box.value(), self.seed_box.value())
        self._show_sequences()

    def _show_sequences(self, *_: object) -> None:
        """Name the sequences' distribution: the training one, runs of repeated symbols included, not eval's."""
        text = probe_description(self.state.hub.task, self.state.n, self.state.seed)["description"]
        self.sequences.setText(f"Roles and importance are scored on {text}.")

    def _show_stale(self, text: str) -> None:
        self.stale.setText(text)
        self.stale.setVisible(bool(text))

    def _on_running(self, running: bool) -> None:
        self.run_button.setEnabled(not running)
        self.cancel_button.setEnabled(running)
        for box in (self.n_box, self.seed_box):
            box.setEnabled(not running)
        self.maps.set_running(running)
        if running:
            self.status.setText("Switching each head off in turn...")

    def _on_progress(self, done: int, total: int) -> None:
        self.progress.setTextVisible(total > 1)
        self.progress.setRange(0, max(total, 1))
        self.progress.setValue(done)
        self.progress.setFormat(f"{max(done - 1, 0)}/{total - 1} heads ablated" if total > 1 else "")
