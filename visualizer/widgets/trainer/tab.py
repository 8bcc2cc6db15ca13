"""The Trainer tab: a validated form, run controls, live curves and the probe's attention as it learns."""
from __future__ import annotations

import importlib.util
import logging
import weakref
from dataclasses import replace
from pathlib import Path

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QObject, Qt, QTimer, Signal
from PySide6.QtGui import QColor, QFont, QImage, QKeySequence, QPainter, QShortcut
from PySide6.QtWidgets import (
    QComboBox, QDoubleSpinBox, QFileDialog, QFormLayout, QGridLayout, QGroupBox, QHBoxLayout, QLabel, QLineEdit,
    QMessageBox, QProgressBar, QPushButton, QScrollArea, QSlider, QSpinBox, QStackedWidget, QVBoxLayout, QWidget,
)

from core_model.device import available_devices
from core_model.tasks import TASK_NAMES, TaskSpec
from core_model.training import TrainConfig
from core_model.vocab import SYMBOL_POOL, VocabularyError
from visualizer.state.model_hub import ModelHub
from visualizer.state.training import MetricSeries, TrainingState
from visualizer.workers.background import run_in_background
from visualizer.state.snapshots import ProbeSnapshot

log = logging.getLogger(__name__)
SCHEDULES = (("Warm-up + cosine", "warmup_cosine"), ("Constant", "constant"), ("Noam (paper §5.3)", "noam"))
STATE_TEXT = {"idle": "Idle", "running": "Running", "paused": "Paused", "stopping": "Stopping…",
              "finished": "Finished", "failed": "Failed"}
PROBE_KINDS = (("encoder_self", "Encoder self-attention"), ("cross", "Cross-attention"))
COLORMAP = "viridis"
CELL_PX, FRAME_MS = 16, 200  # movie: pixels per attention cell, GIF frame duration
CURVE_REFRESH_MS = 250  # curves redraw at most 4 times a second while training: each redraw costs ~10 ms
IDLE_FORMAT, RUN_FORMAT = "not training", "step %v / %m"


def _ask_yes_no(parent: QWidget, title: str, text: str) -> bool:
    """A real question box in the app; tests replace this function."""
    answer = QMessageBox.question(parent, title, text, QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No)
    return answer == QMessageBox.StandardButton.Yes


def _choose_folder(parent: QWidget) -> str | None:
    """Folder for the movie frames (non-native dialog); tests replace this function."""
    folder = QFileDialog.getExistingDirectory(parent, "Export attention movie to folder", "",
                                              QFileDialog.Option.DontUseNativeDialog)
    return folder or None


def _spin(low: int, high: int, tip: str) -> QSpinBox:
    box = QSpinBox()
    box.setRange(low, high)
    box.setToolTip(tip)
    return box


def _dspin(low: float, high: float, decimals: int, step: float, tip: str) -> QDoubleSpinBox:
    box = QDoubleSpinBox()
    box.setDecimals(decimals)
    box.setRange(low, high)
    box.setSingleStep(step)
    box.setToolTip(tip)
    return box


def default_probe(task: TaskSpec) -> str:
    """The task's symbols in order, repeated or cut to its longest length ("0123456789" for the default task)."""
    symbols = SYMBOL_POOL[:task.n_symbols]
    return (symbols * (task.max_len // len(symbols) + 1))[:task.max_len]


class TrainerForm(QGroupBox):
    """Hyperparameters with inline errors (a red label next to the field); emits `changed` on every edit."""

    changed = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("Task and training", parent)
        self.task_combo = QComboBox()
        self.task_combo.addItems(list(TASK_NAMES))
        self.min_len_spin = _spin(1, 510, "Shortest source sequence")
        self.max_len_spin = _spin(1, 510, "Longest source sequence (plus <bos>/<eos> it must fit the model's max_len)")
        self.symbols_spin = _spin(1, len(SYMBOL_POOL), "Number of task symbols (the model needs vocab_size >= symbols + 3)")
        self.batch_spin = _spin(1, 4096, "Sequences per optimisation step")
        self.steps_spin = _spin(1, 1_000_000, "Optimisation steps of this run")
        self.schedule_combo = QComboBox()
        for text, key in SCHEDULES:
            self.schedule_combo.addItem(text, key)
        self.lr_spin = _dspin(1e-6, 10.0, 6, 1e-4, "Peak learning rate (constant and warm-up + cosine)")
        self.noam_spin = _dspin(0.001, 100.0, 3, 0.1, "Noam factor: lr = factor * d_model^-0.5 * min(...)")
        self.warmup_spin = _spin(0, 1_000_000, "Warm-up steps (Noam needs at least 1)")
        self.smoothing_spin = _dspin(0.0, 0.99, 2, 0.05, "Label smoothing (the paper uses 0.1)")
        self.dropout_spin = _dspin(0.0, 0.9, 2, 0.05, "Dropout of the training copy (no parameters: weights carry over)")
        self.seed_spin = _spin(0, 2**31 - 1, "Seed of the training batches")
        self.device_combo = QComboBox()
        self.device_combo.addItems(available_devices())
        self.probe_edit = QLineEdit("0123456789")
        self.probe_edit.setToolTip("Source whose attention maps are recorded during training")
        self.build_button = QPushButton("Build matching model")
        self.build_button.setToolTip("Replace the current model by an untrained one whose vocabulary fits the task")
        self.errors: dict[str, QLabel] = {}
        self._layout_rows()
        for box in (self.min_len_spin, self.max_len_spin, self.symbols_spin, self.batch_spin, self.steps_spin,
                    self.warmup_spin, self.seed_spin, self.lr_spin, self.noam_spin, self.smoothing_spin, self.dropout_spin):
            box.valueChanged.connect(self.changed)
        for combo in (self.task_combo, self.schedule_combo, self.device_combo):
            combo.currentIndexChanged.connect(self.changed)
        self.probe_edit.textChanged.connect(self.changed)
        self.schedule_combo.currentIndexChanged.connect(self._on_schedule)

    def _layout_rows(self) -> None:
        form = QFormLayout(self)
        rows = (("Task", "task", self.task_combo), ("Min length", "min_len", self.min_len_spin),
                ("Max length", "max_len", self.max_len_spin), ("Symbols", "symbols", self.symbols_spin),
                ("Batch size", "batch", self.batch_spin), ("Steps", "steps", self.steps_spin),
                ("Schedule", "schedule", self.schedule_combo), ("Learning rate", "lr", self.lr_spin),
                ("Noam factor", "noam", self.noam_spin), ("Warm-up steps", "warmup", self.warmup_spin),
                ("Label smoothing", "smoothing", self.smoothing_spin), ("Dropout", "dropout", self.dropout_spin),
                ("Seed", "seed", self.seed_spin), ("Device", "device", self.device_combo),
                ("Probe input", "probe", self.probe_edit))
        for label, key, field in rows:
            row = QWidget()
            line = QHBoxLayout(row)
            line.setContentsMargins(0, 0, 0, 0)
            line.addWidget(field, 1)
            error = QLabel()
            error.setStyleSheet("color: #c62828;")
            error.setWordWrap(True)
            error.hide()
            line.addWidget(error, 2)
            if key == "symbols":
                line.addWidget(self.build_button)
                self.build_button.hide()
            self.errors[key] = error
            form.addRow(label, row)

    def _on_schedule(self) -> None:
        noam = self.schedule() == "noam"
        self.noam_spin.setEnabled(noam)
        self.lr_spin.setEnabled(not noam)

    def schedule(self) -> str:
        return str(self.schedule_combo.currentData())

    def set_values(self, task: TaskSpec, config: TrainConfig, dropout: float, device: str) -> None:
        """Fill the form (no signals per field: one `changed` at the end)."""
        self.blockSignals(True)
        self.task_combo.setCurrentText(task.task)
        self.symbols_spin.setValue(task.n_symbols)
        self.max_len_spin.setValue(task.max_len)
        self.min_len_spin.setValue(task.min_len)
        for box, value in ((self.batch_spin, config.batch_size), (self.steps_spin, config.steps),
                           (self.warmup_spin, config.warmup_steps), (self.seed_spin, config.seed),
                           (self.lr_spin, config.lr), (self.noam_spin, config.noam_factor),
                           (self.smoothing_spin, config.label_smoothing), (self.dropout_spin, dropout)):
            box.setValue(value)
        self.schedule_combo.setCurrentIndex(max(0, self.schedule_combo.findData(config.schedule)))
        names = [self.device_combo.itemText(i) for i in range(self.device_combo.count())]
        match = [n for n in names if n == device or n.split(":")[0] == device]
        self.device_combo.setCurrentText(match[0] if match else "cpu")
        self.probe_edit.setText(default_probe(task))
        self.blockSignals(False)
        self._on_schedule()
        self.changed.emit()

    def task_spec(self) -> TaskSpec:
        """The task as typed (raises ValueError when the lengths cross)."""
        return TaskSpec(self.task_combo.currentText(), self.symbols_spin.value(), self.min_len_spin.value(),
                        self.max_len_spin.value())

    def train_config(self) -> TrainConfig:
        return TrainConfig(
            batch_size=self.batch_spin.value(), steps=self.steps_spin.value(), lr=self.lr_spin.value(),
            schedule=self.schedule(), warmup_steps=self.warmup_spin.value(), noam_factor=self.noam_spin.value(),
            label_smoothing=self.smoothing_spin.value(), seed=self.seed_spin.value(),
            device=self.device_combo.currentText())

    def validate(self, vocab_size: int, model_max_len: int) -> bool:
        """Cross-field checks against the current model; shows each problem next to its field."""
        found = {key: "" for key in self.errors}
        lo, hi, symbols = self.min_len_spin.value(), self.max_len_spin.value(), self.symbols_spin.value()
        if lo > hi:
            found["max_len"] = f"must be at least the min length ({lo})"
        elif hi + 2 > model_max_len:
            found["max_len"] = f"the model handles at most {model_max_len - 2}"
        if symbols + 3 > vocab_size:
            found["symbols"] = (f"the model knows {vocab_size - 3} symbols (vocab_size {vocab_size}); "
                                f"build a new model with vocab_size {symbols + 3}")
        if self.schedule() == "noam" and self.warmup_spin.value() < 1:
            found["warmup"] = "Noam needs at least 1 warm-up step"
        found["probe"] = self._probe_error(symbols, model_max_len)
        for key, text in found.items():
            self.errors[key].setText(text)
            self.errors[key].setVisible(bool(text))
        self.build_button.setVisible(bool(found["symbols"]))
        return not any(found.values())

    def _probe_error(self, symbols: int, model_max_len: int) -> str:
        text = self.probe_edit.text()
        try:
            ids = TaskSpec(n_symbols=symbols).vocabulary.encode(text)
        except VocabularyError as exc:
            return str(exc)
        if not ids:
            return "type at least one symbol"
        if len(ids) + 2 > model_max_len:
            return f"at most {model_max_len - 2} symbols"
        return ""


class ProbeView(QWidget):
    """The probe's last-layer attention (mean over heads) and a timeline over the stored snapshots."""

    step_shown = Signal(int)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.graphics = pg.GraphicsLayoutWidget()
        cmap = pg.colormap.get(COLORMAP)
        self.plots: dict[str, pg.PlotItem] = {}
        self.images: dict[str, pg.ImageItem] = {}
        for col, (kind, title) in enumerate(PROBE_KINDS):
            plot = self.graphics.addPlot(row=0, col=col, title=f"{title} (last layer, mean of heads)")
            image = pg.ImageItem(axisOrder="row-major")
            image.setColorMap(cmap)
            plot.addItem(image)
            plot.invertY(True)
            plot.setAspectLocked(True)
            plot.setMouseEnabled(False, False)
            plot.hideButtons()
            self.plots[kind], self.images[kind] = plot, image
        self.slider = QSlider(Qt.Orientation.Horizontal)
        self.slider.setToolTip("Replay the attention maps recorded during training")
        self.slider.setEnabled(False)
        self.step_label = QLabel("no snapshots yet")
        self.export_button = QPushButton("Export movie…")
        self.export_button.setToolTip("Write the snapshots as PNG frames (and an animated GIF when Pillow is installed)")
        self.export_button.setEnabled(False)
        bar = QHBoxLayout()
        bar.addWidget(QLabel("Timeline"))
        bar.addWidget(self.slider, 1)
        bar.addWidget(self.step_label)
        bar.addWidget(self.export_button)
        self.placeholder = QLabel("The probe input's attention appears here while the model trains: press Train.")
        self.placeholder.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.placeholder.setWordWrap(True)
        self.stack = QStackedWidget()  # empty axes with made-up ranges say nothing: a sentence until data comes
        self.stack.addWidget(self.graphics)
        self.stack.addWidget(self.placeholder)
        self.stack.setCurrentWidget(self.placeholder)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.stack, 1)
        layout.addLayout(bar)
        self._snapshots: list[ProbeSnapshot] = []
        self._labels: tuple = ()
        self.slider.valueChanged.connect(self._show_index)

    def set_snapshots(self, snapshots: list[ProbeSnapshot]) -> None:
        """Take the list (shared with the state, appended to by it) and show its newest entry."""
        self._snapshots = snapshots
        self._sync_slider(follow=True)

    def snapshot_added(self) -> None:
        """Follow the newest snapshot unless the user is looking at an earlier one."""
        self._sync_slider(follow=self.slider.value() >= self.slider.maximum())

    def _sync_slider(self, follow: bool) -> None:
        n = len(self._snapshots)
        self.slider.blockSignals(True)
        self.slider.setRange(0, max(0, n - 1))
        if follow:
            self.slider.setValue(max(0, n - 1))
        self.slider.blockSignals(False)
        self.slider.setEnabled(n > 1)
        self.export_button.setEnabled(n > 0)
        self.stack.setCurrentWidget(self.graphics if n else self.placeholder)
        if n:
            self._show_index(self.slider.value())
        else:
            self.step_label.setText("no snapshots yet")
            for image in self.images.values():
                image.clear()

    def _show_index(self, index: int) -> None:
        if not 0 <= index < len(self._snapshots):
            return
        snap = self._snapshots[index]
        for kind, image in self.images.items():
            image.setImage(head_mean(snap, kind), autoLevels=False, levels=(0.0, 1.0))
        self._set_ticks(snap)
        self.step_label.setText(f"step {snap.step}")
        self.step_shown.emit(snap.step)

    def _set_ticks(self, snap: ProbeSnapshot) -> None:
        labels = tuple((m.query_labels, m.key_labels) for m in snap.maps.values())
        if labels == self._labels:
            return
        self._labels = labels
        for kind, plot in self.plots.items():
            m = snap.maps[kind]
            plot.getAxis("bottom").setTicks([[(j + 0.5, t) for j, t in enumerate(m.key_labels)]])
            plot.getAxis("left").setTicks([[(i + 0.5, t) for i, t in enumerate(m.query_labels)]])


def head_mean(snap: ProbeSnapshot, kind: str) -> np.ndarray:
    """Last layer, averaged over heads: (Tq, Tk)."""
    return snap.maps[kind].values[-1].mean(axis=0)


def render_frame(snap: ProbeSnapshot, cell: int = CELL_PX) -> QImage:
    """One movie frame: the probe maps side by side under a 'step N' caption."""
    lut = pg.colormap.get(COLORMAP)
    tiles = [np.repeat(np.repeat(lut.map(np.clip(head_mean(snap, k), 0, 1), mode="byte"), cell, 0), cell, 1)
             for k, _ in PROBE_KINDS]  # each (Tq*cell, Tk*cell, 4)
    pad, header = 12, 46
    width = sum(t.shape[1] for t in tiles) + pad * (len(tiles) + 1)
    height = max(t.shape[0] for t in tiles) + header + pad
    canvas = np.full((height, width, 4), 255, np.uint8)
    lefts = []
    for tile in tiles:
        x = pad + sum(t.shape[1] + pad for t in tiles[:len(lefts)])
        canvas[header:header + tile.shape[0], x:x + tile.shape[1]] = tile
        lefts.append(x)
    image = QImage(canvas.data, width, height, 4 * width, QImage.Format.Format_RGBA8888).copy()
    painter = QPainter(image)
    painter.setPen(QColor("black"))
    painter.setFont(QFont("DejaVu Sans", 11))
    painter.drawText(pad, 18, f"step {snap.step}")
    painter.setFont(QFont("DejaVu Sans", 8))
    for x, (_, title) in zip(lefts, PROBE_KINDS):
        painter.drawText(x, header - 6, title.replace("-attention", ""))
    painter.end()
    return image


def write_movie(snapshots: list[ProbeSnapshot], folder: Path) -> dict:
    """PNG frames into `folder`, plus movie.gif when Pillow is importable; returns what was written."""
    folder.mkdir(parents=True, exist_ok=True)
    frames = []
    for i, snap in enumerate(snapshots):
        path = folder / f"frame_{i:04d}_step_{snap.step}.png"
        if not render_frame(snap).save(str(path)):
            raise OSError(f"could not write {path}")
        frames.append(path)
    gif = None
    if frames and importlib.util.find_spec("PIL") is not None:
        from PIL import Image

        images = [Image.open(p).convert("RGB") for p in frames]
        gif = folder / "movie.gif"
        images[0].save(gif, save_all=True, append_images=images[1:], duration=FRAME_MS, loop=0)
    return {"folder": str(folder), "frames": len(frames), "gif": str(gif) if gif else None}


class _Curves(QWidget):
    """Loss, accuracy and learning-rate plots; curves are created once and updated with setData."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.loss_plot = pg.PlotWidget(title="Loss")
        self.metric_plot = pg.PlotWidget(title="Accuracy")
        self.lr_plot = pg.PlotWidget(title="Learning rate")
        self.lr_plot.setMaximumHeight(160)
        self.metric_plot.setYRange(0.0, 1.0)
        for plot in (self.loss_plot, self.metric_plot):
            plot.addLegend(offset=(-10, 10))
        for plot in (self.loss_plot, self.metric_plot, self.lr_plot):
            plot.setLabel("bottom", "step")  # no grid: its lines cost ~9 ms per plot and frame (54 of 62 ms)
        dots = dict(symbol="o", symbolSize=6)
        self.curves = {
            "loss": self.loss_plot.plot(pen=pg.mkPen("#4c9be8", width=1), name="training loss"),
            "eval_loss": self.loss_plot.plot(pen=pg.mkPen("#f0a030", width=2), symbolBrush="#f0a030", name="evaluation loss", **dots),
            "token_accuracy": self.metric_plot.plot(pen=pg.mkPen("#4c9be8", width=1), name="token accuracy (training)"),
            "eval_token_accuracy": self.metric_plot.plot(pen=pg.mkPen("#f0a030", width=2), symbolBrush="#f0a030",
                                                         name="token accuracy (evaluation)", **dots),
            "eval_exact_match": self.metric_plot.plot(pen=pg.mkPen("#5cb85c", width=2), symbolBrush="#5cb85c",
                                                      name="greedy exact match", **dots),
            "lr": self.lr_plot.plot(pen=pg.mkPen("#c678dd", width=1)),
        }
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        for plot, stretch in ((self.loss_plot, 2), (self.metric_plot, 2), (self.lr_plot, 1)):
            layout.addWidget(plot, stretch)

    def set_series(self, series: MetricSeries) -> None:
        """Push the whole series into the existing curves."""
        x, ex = np.asarray(series.steps, float), np.asarray(series.eval_steps, float)
        for key, (xs, ys) in {"loss": (x, series.loss), "token_accuracy": (x, series.token_accuracy),
                              "lr": (x, series.lr), "eval_loss": (ex, series.eval_loss),
                              "eval_token_accuracy": (ex, series.eval_token_accuracy),
                              "eval_exact_match": (ex, series.eval_exact_match)}.items():
            self.curves[key].setData(xs, np.asarray(ys, float))


class TrainerTab(QWidget):
    """Form, Train/Pause/Stop, progress, curves and the probe movie; all work runs in TrainingState's thread."""

    movie_exported = Signal(dict)  # {"folder", "frames", "gif"}

    def __init__(self, hub: ModelHub, state: TrainingState, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.hub, self.state = hub, state
        self.form = TrainerForm()
        self.curves = _Curves()
        self.probe = ProbeView()
        self._build_controls()
        self._layout()
        self._jobs: set[QObject] = set()
        self._pending_oom: str | None = None
        self._model_ref = None
        self._wire()
        self._load_form_from_hub()
        self._on_metrics()
        self.probe.set_snapshots(state.snapshots)
        self._on_state(state.state)

    def _build_controls(self) -> None:
        self.train_button = QPushButton("Train")
        self.train_button.setToolTip("Train a copy of the current model with these settings (Ctrl+Return)")
        self.pause_button = QPushButton("Pause")
        self.pause_button.setToolTip("Pause or resume; while paused the other tabs use the weights so far (Ctrl+P)")
        self.stop_button = QPushButton("Stop")
        self.stop_button.setToolTip("Stop after the current step and keep the weights so far (Esc or Ctrl+.)")
        self.state_label = QLabel()
        self.progress_bar = QProgressBar()
        self.progress_bar.setFormat(IDLE_FORMAT)  # until a run (or a loaded history) gives it steps
        self.progress_bar.setRange(0, 1)
        self.progress_bar.setValue(0)
        self._curve_timer = QTimer(self)  # coalesces curve redraws while a run streams progress
        self._curve_timer.setSingleShot(True)
        self._curve_timer.setInterval(CURVE_REFRESH_MS)
        self._curve_timer.timeout.connect(self._draw_curves)
        self.speed_label, self.elapsed_label, self.eta_label = QLabel("– tokens/s"), QLabel("elapsed –"), QLabel("ETA –")
        self.status_label = QLabel()
        self.status_label.setWordWrap(True)
        self.status_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        context = Qt.ShortcutContext.WidgetWithChildrenShortcut
        self.shortcuts = []
        for keys, slot in ((("Ctrl+Return", "Ctrl+Enter"), self._on_train), (("Ctrl+P",), self._on_pause_resume),
                           (("Esc", "Ctrl+."), self.state.stop)):
            for key in keys:
                shortcut = QShortcut(QKeySequence(key), self)
                shortcut.setContext(context)
                shortcut.activated.connect(slot)
                self.shortcuts.append(shortcut)

    def _layout(self) -> None:
        buttons = QHBoxLayout()
        for w in (self.train_button, self.pause_button, self.stop_button):
            buttons.addWidget(w)
        buttons.addWidget(self.state_label, 1)
        stats = QGridLayout()
        stats.addWidget(self.progress_bar, 0, 0, 1, 3)
        for col, label in enumerate((self.speed_label, self.elapsed_label, self.eta_label)):
            stats.addWidget(label, 1, col)
        left = QWidget()
        column = QVBoxLayout(left)
        column.addWidget(self.form)
        column.addLayout(buttons)
        column.addLayout(stats)
        column.addWidget(self.status_label)
        column.addStretch(1)
        scroll = QScrollArea()
        scroll.setWidget(left)
        scroll.setWidgetResizable(True)
        scroll.setMinimumWidth(380)
        right = QVBoxLayout()
        right.addWidget(self.curves, 3)
        right.addWidget(self.probe, 2)
        layout = QHBoxLayout(self)
        layout.addWidget(scroll, 0)
        layout.addLayout(right, 1)

    def _wire(self) -> None:
        self.train_button.clicked.connect(self._on_train)
        self.pause_button.clicked.connect(self._on_pause_resume)
        self.stop_button.clicked.connect(self.state.stop)
        self.form.changed.connect(self._refresh_buttons)
        self.form.build_button.clicked.connect(self._on_build_model)
        self.probe.export_button.clicked.connect(self._on_export)
        self.state.state_changed.connect(self._on_state)
        self.state.metrics_appended.connect(self._on_metrics)
        self.state.snapshot_added.connect(lambda _i: self.probe.snapshot_added())
        self.state.snapshots_reset.connect(lambda: self.probe.set_snapshots(self.state.snapshots))
        self.state.message.connect(self.status_label.setText)
        self.state.out_of_memory.connect(self._on_out_of_memory)
        self.hub.model_changed.connect(self._on_model_changed)

    def _load_form_from_hub(self) -> None:
        """Start from the model's task and, when a checkpoint stored one, its training recipe."""
        self._model_ref = weakref.ref(self.hub.model)
        stored = self.hub.extra.get("train_config")
        try:
            config = TrainConfig(**stored) if isinstance(stored, dict) else TrainConfig()
        except (TypeError, ValueError):
            config = TrainConfig()
        self.form.set_values(self.hub.task, config, self.hub.config.dropout, str(self.hub.device))

    def _on_model_changed(self) -> None:
        if self._model_ref is not None and self._model_ref() is self.hub.model:
            self._refresh_buttons()  # same model, new weights
        elif not self.state.busy:
            self._load_form_from_hub()

    def _refresh_buttons(self) -> None:
        valid = self.form.validate(self.hub.config.vocab_size, self.hub.config.max_len)
        state = self.state.state
        busy = self.state.busy
        self.train_button.setEnabled(valid and not busy)
        self.pause_button.setEnabled(state in ("running", "paused"))
        self.pause_button.setText("Resume" if state == "paused" else "Pause")
        self.stop_button.setEnabled(state in ("running", "paused"))
        self.form.setEnabled(not busy)

    def _on_state(self, state: str) -> None:
        self.state_label.setText(STATE_TEXT.get(state, state))
        if state != "running" and self._curve_timer.isActive():  # paused or ended: show every point now
            self._curve_timer.stop()
            self._draw_curves()
        self._refresh_buttons()
        if state == "failed" and self._pending_oom is not None:
            text, self._pending_oom = self._pending_oom, None
            if _ask_yes_no(self, "Out of GPU memory", f"{text}\n\nContinue on the CPU from the last good weights?"):
                self.state.continue_on_cpu()

    def _on_train(self) -> None:
        if not self.train_button.isEnabled():
            return
        try:
            config, task = self.form.train_config(), self.form.task_spec()
        except ValueError as exc:  # the inline checks should have caught it; say so rather than crash
            self.status_label.setText(f"Cannot start training: {exc}")
            return
        self.progress_bar.setFormat(RUN_FORMAT)
        self.progress_bar.setRange(0, config.steps)
        self.progress_bar.setValue(0)
        self.status_label.setText("")
        self.state.start(config, task, probe_text=self.form.probe_edit.text(), dropout=self.form.dropout_spin.value())

    def _on_pause_resume(self) -> None:
        if self.state.state == "running":
            self.state.pause()
        elif self.state.state == "paused":
            self.state.resume()

    def _on_metrics(self) -> None:
        """Progress figures at once; curves now when idle, else at most every CURVE_REFRESH_MS."""
        if self.state.state != "running":
            self._curve_timer.stop()
            self._draw_curves()
        elif not self._curve_timer.isActive():
            self._curve_timer.start()
        p = self.state.progress
        if p is None:
            self.progress_bar.setFormat(IDLE_FORMAT)
            self.progress_bar.setRange(0, 1)
            self.progress_bar.setValue(0)
            return
        self.progress_bar.setFormat(RUN_FORMAT)
        self.progress_bar.setRange(0, p.total)
        self.progress_bar.setValue(p.step)
        self.speed_label.setText(f"{p.tokens_per_s:,.0f} tokens/s")
        self.elapsed_label.setText(f"elapsed {_clock(p.elapsed_s)}")
        self.eta_label.setText(f"ETA {_clock(p.eta_s)}")

    def _draw_curves(self) -> None:
        self.curves.set_series(self.state.series)

    def _on_out_of_memory(self, text: str) -> None:
        self._pending_oom = text  # asked once the run has handed its weights back (state "failed")

    def _on_build_model(self) -> None:
        """A new untrained model whose vocabulary fits the chosen number of symbols."""
        if self.state.busy:
            return
        if self.hub.dirty and not _ask_yes_no(self, "Replace the model",
                                              "The current model has unsaved training. Replace it anyway?"):
            return
        symbols = self.form.symbols_spin.value()
        try:
            task = self.form.task_spec()
        except ValueError:
            task = replace(self.hub.task, n_symbols=symbols)
        self.hub.new_untrained(replace(self.hub.config, vocab_size=symbols + 3), task)
        self.status_label.setText(f"Built an untrained model with vocab_size {symbols + 3}; train it here.")

    def _on_export(self) -> None:
        folder = _choose_folder(self)
        if folder:
            self.export_movie(Path(folder))

    def export_movie(self, folder: Path) -> None:
        """Write the snapshot movie in the background; `movie_exported` reports it."""
        snapshots = list(self.state.snapshots)
        if not snapshots:
            return
        self.probe.export_button.setEnabled(False)

        def done(result: dict) -> None:
            self._jobs.discard(job)
            self.probe.export_button.setEnabled(True)
            gif = f" and {Path(result['gif']).name}" if result["gif"] else " (install Pillow for an animated GIF)"
            self.status_label.setText(f"Exported {result['frames']} frames to {result['folder']}{gif}.")
            self.movie_exported.emit(result)

        def failed(text: str) -> None:
            self._jobs.discard(job)
            self.probe.export_button.setEnabled(True)
            self.status_label.setText(f"Could not export the movie: {text}")

        job = run_in_background(lambda: write_movie(snapshots, folder), done, failed)
        self._jobs.add(job)


def _clock(seconds: float) -> str:
    seconds = max(0, int(round(seconds)))
    hours, rest = divmod(seconds, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}" if hours else f"{rest // 60}:{rest % 60:02d}"
