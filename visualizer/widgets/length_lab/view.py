"""The Length lab tab: pick two models, evaluate them at every length, click a length to see both models' maps.

The tab only draws and forwards choices; LengthLabState runs every computation on a worker thread.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtGui import QShowEvent
from PySide6.QtWidgets import (
    QComboBox,
    QFileDialog,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QProgressBar,
    QPushButton,
    QSpinBox,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from core_model.shipped import resource_path
from visualizer.state.length_lab import LengthLabState
from visualizer.state.length_lab_snapshots import SHIPPED, LabCurves, ModelSource, ProbePair
from visualizer.widgets.common.styles import WARNING_STYLE

from .maps import ProbeMaps
from .plot import COLOURS, LengthPlot

OPEN_FILE = "Open a checkpoint file…"
SCALINGS = (("None", "none"), ("Position interpolation (PI)", "pi"), ("NTK-aware", "ntk"))
SCALING_TIP = (
    "How a RoPE model is stretched past its training length at evaluation time (no retraining): PI "
    "multiplies positions by train_len / eval_len; NTK-aware enlarges the rotary base by "
    "s^(d/(d-2)), s = eval_len / train_len. Sinusoidal models are unaffected."
)


def _spin(low: int, high: int, value: int, tip: str) -> QSpinBox:
    box = QSpinBox()
    box.setRange(low, high)
    box.setValue(value)
    box.setToolTip(tip)
    return box


class LengthLabTab(QWidget):
    """Controls on top, the length plot, then the two models' maps for the clicked length."""

    def __init__(self, state: LengthLabState, parent: QWidget | None = None, *, auto_evaluate: bool = False) -> None:
        super().__init__(parent)
        self.state = state
        self._auto_evaluate = auto_evaluate  # the first time the tab is shown, evaluate the default pair
        self._in_memory: dict[str, ModelSource] = {}  # a box item's data -> the model trained here it names
        self.model_combos = [self._model_combo(i) for i in range(2)]
        self.scaling_combo = QComboBox()
        for text, key in SCALINGS:
            self.scaling_combo.addItem(text, key)
        self.scaling_combo.setToolTip(SCALING_TIP)
        self.n_spin = _spin(1, 100_000, state.n, "Random sources per length (as `eval --n`)")
        self.seed_spin = _spin(0, 2**31 - 1, state.seed, "Seed of the sources (as `eval --seed`)")
        self.evaluate_button = QPushButton("&Evaluate")
        self.evaluate_button.setToolTip("Score both models at every length from 1 to twice the training maximum")
        self.cancel_button = QPushButton("Cance&l")
        self.cancel_button.setToolTip("Stop after the current length (or training step)")
        self.progress = QProgressBar()
        self.progress.setFormat("idle")
        self.progress.setTextVisible(True)
        self.train_min, self.train_max = (
            _spin(1, 120, 1, "Shortest training source"),
            _spin(1, 120, 12, "Longest training source"),
        )
        self.train_steps = _spin(10, 100_000, 1500, "Optimisation steps of each model (batch 64)")
        self.train_button = QPushButton("T&rain both now")
        self.train_button.setToolTip(
            "Train a RoPE and a sinusoidal copy model (same architecture, same batches, "
            "one recipe: lr 6e-3, batch 64) on this length range, then evaluate both. "
            "The shared recipe suits RoPE better; the Trainer's sinusoidal default is "
            "lr 3e-3, batch 24"
        )
        self.plot = LengthPlot()
        self.kind_combo = QComboBox()
        self.kind_combo.addItem("Random symbols (seed 0)", "random")
        self.kind_combo.addItem("One repeated symbol (0000…)", "repeated")
        self.kind_combo.setToolTip("The source shown below for the clicked length")
        self.repeat_button = QPushButton("What does each model do with 0000000?")
        self.repeat_button.setToolTip("The repeated-symbol preset: seven 0s through both models")
        self.layer_combo = QComboBox()
        self.layer_combo.setToolTip(
            "Decoder layer whose cross-attention is shown (average of its heads); click a length on the plot first"
        )
        self.layer_combo.setPlaceholderText("—")  # no layers to choose before a length is clicked
        self.layer_combo.setEnabled(False)
        self.selected_label = QLabel("Click a length on the plot to see both models' cross-attention.")
        self.selected_label.setWordWrap(True)
        self.maps = ProbeMaps()
        # said when the Playground's task has no shipped pair: which pair this lab shows instead
        self.task_note = QLabel()
        self.task_note.setTextFormat(Qt.TextFormat.PlainText)
        self.task_note.setWordWrap(True)
        self.task_note.setStyleSheet(WARNING_STYLE)
        self.task_note.hide()
        self._layout()
        self._wire()
        self._length: int | None = None

    def _model_combo(self, slot: int) -> QComboBox:
        box = QComboBox()
        for label, name in SHIPPED:
            box.addItem(label, str(resource_path(name)))
        box.addItem(OPEN_FILE, None)
        box.setCurrentIndex(slot)
        box.setToolTip(f"Model {'AB'[slot]} (drawn in {'blue' if slot == 0 else 'orange'})")
        box.setStyleSheet(f"QComboBox {{ border-left: 6px solid {COLOURS[slot]}; }}")
        return box

    def _layout(self) -> None:
        grid = QGridLayout()
        grid.addWidget(QLabel("Model A:"), 0, 0)
        grid.addWidget(self.model_combos[0], 0, 1)
        grid.addWidget(QLabel("Model B:"), 0, 2)
        grid.addWidget(self.model_combos[1], 0, 3)
        grid.addWidget(QLabel("RoPE scaling:"), 0, 4)
        grid.addWidget(self.scaling_combo, 0, 5)
        row = QHBoxLayout()
        widget: QWidget
        for widget in (
            QLabel("Sources per length:"),
            self.n_spin,
            QLabel("Seed:"),
            self.seed_spin,
            self.evaluate_button,
            self.cancel_button,
        ):
            row.addWidget(widget)
        row.addStretch(1)
        train = QHBoxLayout()
        for widget in (
            QLabel("Or train both now on lengths"),
            self.train_min,
            QLabel("to"),
            self.train_max,
            QLabel("steps:"),
            self.train_steps,
            self.train_button,
        ):
            train.addWidget(widget)
        train.addStretch(1)
        below = QWidget()
        lower = QVBoxLayout(below)
        lower.setContentsMargins(0, 0, 0, 0)
        source_row = QHBoxLayout()
        for widget in (QLabel("Source:"), self.kind_combo, self.repeat_button, QLabel("Layer:"), self.layer_combo):
            source_row.addWidget(widget)
        source_row.addWidget(self.selected_label, 1)
        lower.addLayout(source_row)
        lower.addWidget(self.maps, 1)
        splitter = QSplitter(Qt.Orientation.Vertical)
        splitter.addWidget(self.plot)
        splitter.addWidget(below)
        splitter.setSizes([420, 380])
        layout = QVBoxLayout(self)
        layout.addWidget(self.task_note)
        layout.addLayout(grid)
        layout.addLayout(row)
        layout.addLayout(train)
        layout.addWidget(self.progress)  # a row of its own: its sentence fits beside the Lessons dock at 1280 px
        layout.addWidget(splitter, 1)

    def _wire(self) -> None:
        st = self.state
        for slot, box in enumerate(self.model_combos):
            box.activated.connect(lambda _i, slot=slot: self._on_model_chosen(slot))
        self.scaling_combo.currentIndexChanged.connect(lambda _i: st.set_scaling(self.scaling_combo.currentData()))
        self.n_spin.valueChanged.connect(lambda n: st.set_sampling(n=n))
        self.seed_spin.valueChanged.connect(lambda seed: st.set_sampling(seed=seed))
        self.evaluate_button.clicked.connect(st.evaluate)
        self.cancel_button.clicked.connect(st.cancel)
        self.train_button.clicked.connect(self._on_train)
        self.plot.length_clicked.connect(self._on_length)
        self.kind_combo.currentIndexChanged.connect(lambda _i: self._show_length())
        self.repeat_button.clicked.connect(self._on_repeated_preset)
        self.layer_combo.currentIndexChanged.connect(lambda _i: self._redraw_maps())
        st.frame_changed.connect(self.set_curves)
        st.progress_changed.connect(self._on_progress)
        st.message.connect(self.progress.setFormat)  # the lab's status line is its progress bar's text
        st.running_changed.connect(self._on_busy)
        st.probe_changed.connect(self._on_probe)
        st.note.connect(self.selected_label.setText)
        st.sources_changed.connect(self._on_sources)
        st.stale_changed.connect(self.plot.set_stale)
        self._on_busy(False)
        self._on_sources(st.sources)  # the boxes name the models the state holds, shipped or not

    def showEvent(self, event: QShowEvent) -> None:  # Qt's name
        super().showEvent(event)
        if self._auto_evaluate and self.state.curves is None and not self.state.busy:
            self._auto_evaluate = False
            self.state.evaluate()

    def follow_task(self, task: str) -> None:
        """The Playground's task: the state takes its shipped pair when it can; else the note says which it shows."""
        note = self.state.follow_task(task)
        self.task_note.setText(note)
        self.task_note.setVisible(bool(note))

    # ----- user actions -----
    def _on_model_chosen(self, slot: int) -> None:
        box = self.model_combos[slot]
        path = box.currentData()
        if path is None:
            name, _ = QFileDialog.getOpenFileName(self, f"Model {'AB'[slot]}", "", "Checkpoints (*.pt);;All files (*)")
            if not name:
                self._on_sources(self.state.sources)
                return
            path = name
            box.insertItem(box.count() - 1, Path(name).name, name)
            box.setCurrentIndex(box.count() - 2)
        if path in self._in_memory:  # weights trained here: there is no file to open
            self.state.set_source(slot, self._in_memory[path])
            return
        label = box.currentText().split(" (")[0]
        self.state.set_source(slot, ModelSource(label, Path(path)))

    def _on_train(self) -> None:
        lo, hi = self.train_min.value(), self.train_max.value()
        if lo > hi:
            self.selected_label.setText(f"The shortest training length ({lo}) is above the longest ({hi}).")
            return
        self.state.train_both(lo, hi, self.train_steps.value())

    def _on_length(self, length: int) -> None:
        self._length = length
        self.plot.mark(length)
        self._show_length()

    def _on_repeated_preset(self) -> None:
        self.kind_combo.setCurrentIndex(self.kind_combo.findData("repeated"))
        self._on_length(7)

    def _show_length(self) -> None:
        if self._length is not None:
            self.selected_label.setText(f"Length {self._length}: computing…")
            self.state.show_length(self._length, self.kind_combo.currentData())

    # ----- state -> view -----
    def set_curves(self, curves: LabCurves) -> None:
        self.plot.set_curves(curves)

    def _on_progress(self, done: int, total: int) -> None:
        self.progress.setRange(0, max(total, 1))
        self.progress.setValue(done if total else 0)

    def _on_busy(self, busy: bool) -> None:
        self.evaluate_button.setEnabled(not busy)
        self.train_button.setEnabled(not busy)
        self.cancel_button.setEnabled(busy)
        for box in self.model_combos:
            box.setEnabled(not busy)

    def _on_sources(self, sources: tuple[ModelSource, ModelSource]) -> None:
        for slot, source in enumerate(sources):
            box = self.model_combos[slot]
            key = str(source.path) if source.path is not None else f"trained:{source.label}"
            if source.path is None:
                self._in_memory[key] = source
            index = box.findData(key)
            if index < 0:
                box.insertItem(box.count() - 1, source.label, key)
                index = box.count() - 2
            box.setCurrentIndex(index)

    def _on_probe(self, pair: ProbePair) -> None:
        layers = max((p.cross.shape[0] for p in pair.probes if p is not None), default=0)
        if self.layer_combo.count() != layers:
            self.layer_combo.blockSignals(True)
            self.layer_combo.clear()
            self.layer_combo.addItems([f"{i + 1}" for i in range(layers)])
            self.layer_combo.setCurrentIndex(layers - 1)
            self.layer_combo.blockSignals(False)
        self.layer_combo.setEnabled(layers > 0)
        what = "one repeated symbol" if pair.kind == "repeated" else "random symbols"
        anchored = any(p is not None and len(p.encoder_input) > pair.length for p in pair.probes)
        note = " (an anchored model also reads <bos> and <eos>: the first and last columns)" if anchored else ""
        self.selected_label.setText(f"Length {pair.length}, {what}: cross-attention of each model's own answer{note}")
        self._redraw_maps()

    def _redraw_maps(self) -> None:
        pair = self.state.probe
        if pair is not None:
            self.maps.set_pair(pair, self.layer_combo.currentIndex() if self.layer_combo.count() else None)
