"""The probe's attention while it is learnt: one map picked by kind, layer and head, and a timeline of snapshots."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF, Qt, Signal
from PySide6.QtGui import QCursor
from PySide6.QtWidgets import (
    QComboBox,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSlider,
    QStackedWidget,
    QToolTip,
    QVBoxLayout,
    QWidget,
)

from visualizer.state.snapshots import KIND_SHORT_TITLES, ProbeSnapshot
from visualizer.widgets.heatmap.token_axis import token_axes

PROBE_KINDS = (("encoder_self", "Encoder self-attention"), ("cross", "Cross-attention"))  # the movie's frames
PICKER_KINDS = (
    ("cross", "Cross-attention"),
    ("encoder_self", "Encoder self-attention"),
    ("decoder_self", "Decoder self-attention"),
)
MEAN = -1  # head choice: the mean of the heads that are on
MEAN_TEXT = "mean of heads on"
COMBO_CHROME_PX = 36  # a drop-down list's frame, margins and arrow beside its text
COLORMAP = "viridis"


class ProbeView(QWidget):
    """The probe's attention (kind, layer, head or mean of the heads that are on) over the stored snapshots."""

    step_shown = Signal(int)  # the step of the snapshot on screen (the curves put their cursor there)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.graphics = pg.GraphicsLayoutWidget()
        self.plot = self.graphics.addPlot(row=0, col=0, axisItems=token_axes(bottom="key", left="query"))
        self.image = pg.ImageItem(axisOrder="row-major")
        self.image.setColorMap(pg.colormap.get(COLORMAP))
        self.plot.addItem(self.image)
        self.plot.invertY(True)
        self.plot.setAspectLocked(True)
        self.plot.setMouseEnabled(False, False)
        self.plot.hideButtons()
        self.kind_combo, self.layer_combo, self.head_combo = QComboBox(), QComboBox(), QComboBox()
        for key, title in PICKER_KINDS:
            self.kind_combo.addItem(title, key)
        self.kind_combo.setToolTip("Which attention of the probe input to show")
        self.layer_combo.setToolTip("Which layer")
        self.head_combo.setToolTip("One head, or the mean of the heads that are switched on")
        # never narrower than "mean of heads on": its width when filled is not always measured again after the
        # entries change, and the splitter beside it would then cut it to "mean of"
        self.head_combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        self.head_combo.setMinimumWidth(self.head_combo.fontMetrics().horizontalAdvance(MEAN_TEXT) + COMBO_CHROME_PX)
        self._gates: dict[str, np.ndarray] = {}
        self.slider = QSlider(Qt.Orientation.Horizontal)
        self.slider.setToolTip("Replay the attention maps recorded during training")
        self.slider.setEnabled(False)
        self.step_label = QLabel("no snapshots yet")
        self.export_button = QPushButton("Export movie…")
        self.export_button.setToolTip(
            "Write the snapshots as PNG frames (and an animated GIF when Pillow is installed)"
        )
        self.export_button.setEnabled(False)
        self.placeholder = QLabel(
            "The probe input's attention appears here while the model trains: press "
            "Train from scratch to watch it form."
        )
        self.placeholder.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.placeholder.setWordWrap(True)
        self.stack = QStackedWidget()  # empty axes with made-up ranges say nothing: a sentence until data comes
        self.stack.addWidget(self.graphics)
        self.stack.addWidget(self.placeholder)
        self.stack.setCurrentWidget(self.placeholder)
        self._layout()
        self._snapshots: tuple[ProbeSnapshot, ...] = ()
        self._labels: tuple = ()
        self._title = ""  # the plot title shown (set again only when it changes)
        self.slider.valueChanged.connect(self._show_index)
        self.graphics.scene().sigMouseMoved.connect(self._on_mouse_moved)
        for combo in (self.kind_combo, self.layer_combo, self.head_combo):
            combo.currentIndexChanged.connect(self._on_pick)

    def _layout(self) -> None:
        # The picker and the timeline take two rows each, and the lists name what they pick ("layer 2 (last)",
        # "head 1"): beside the curves and the Lessons dock on a 1280x800 screen this column is under 300 px wide.
        picker = QGridLayout()
        picker.addWidget(self.kind_combo, 0, 0, 1, 2)
        picker.addWidget(self.layer_combo, 1, 0)
        picker.addWidget(self.head_combo, 1, 1)
        picker.setColumnStretch(2, 1)
        timeline = QHBoxLayout()
        timeline.addWidget(QLabel("Timeline"))
        timeline.addWidget(self.slider, 1)
        below = QHBoxLayout()
        below.addWidget(self.step_label, 1)
        below.addWidget(self.export_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(picker)
        layout.addWidget(self.stack, 1)
        layout.addLayout(timeline)
        layout.addLayout(below)

    def set_head_gates(self, gates: dict[str, np.ndarray]) -> None:
        """{kind: (L, H) bool} heads switched on (the playground's switches); the mean uses only those. They describe
        the current model, so with no snapshots they also give the picker its layers and heads."""
        self._gates = {k: np.asarray(v, bool) for k, v in gates.items()}
        self._sync_picker()
        self._show_index(self.slider.value())

    def selection(self) -> tuple[str, int, int]:
        """(kind, layer index, head index or MEAN)."""
        return (
            str(self.kind_combo.currentData()),
            max(0, self.layer_combo.currentIndex()),
            int(self.head_combo.currentData()) if self.head_combo.count() else MEAN,
        )

    def set_snapshots(self, snapshots: tuple[ProbeSnapshot, ...]) -> None:
        """Show these snapshots: a new set from its newest entry; more of the same run follow the newest entry
        unless the user is looking at an earlier one."""
        old, self._snapshots = self._snapshots, tuple(snapshots)
        grown = bool(old) and len(self._snapshots) >= len(old) and self._snapshots[0] is old[0]
        self._sync_picker()
        self._sync_slider(follow=not grown or self.slider.value() >= self.slider.maximum())

    def _shape(self) -> tuple[int, int] | None:
        """(layers, heads) of the chosen kind: the snapshots' model, or with none (a new model) the current one."""
        kind = self.selection()[0]
        if self._snapshots:
            return self._snapshots[-1].maps[kind].values.shape[:2]
        gates = self._gates.get(kind)
        return gates.shape if gates is not None else None

    def _sync_picker(self) -> None:
        """Layer and head choices for the model the snapshots come from (kept when the shape stays)."""
        shape = self._shape()
        if shape is None:
            return
        layers, heads = shape
        if self.layer_combo.count() == layers and self.head_combo.count() == heads + 1:
            return
        for combo in (self.layer_combo, self.head_combo):
            combo.blockSignals(True)
            combo.clear()
        self.layer_combo.addItems([f"layer {i + 1}{' (last)' if i == layers - 1 else ''}" for i in range(layers)])
        self.layer_combo.setCurrentIndex(layers - 1)
        self.head_combo.addItem(MEAN_TEXT, MEAN)
        for h in range(heads):
            self.head_combo.addItem(f"head {h + 1}", h)
        for combo in (self.layer_combo, self.head_combo):
            combo.blockSignals(False)

    def _on_pick(self) -> None:
        self._sync_picker()
        self._labels = ()
        self._show_index(self.slider.value())

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
            self.image.clear()

    def _show_index(self, index: int) -> None:
        if not 0 <= index < len(self._snapshots):
            return
        snap = self._snapshots[index]
        kind, layer, head = self.selection()
        self.image.setImage(
            pick_map(snap, kind, layer, head, self._gates.get(kind)), autoLevels=False, levels=(0.0, 1.0)
        )
        self._set_ticks(snap, kind)
        # short, as the Playground names a map: the picker above spells it out, and the column may be 270 px wide
        which = MEAN_TEXT if head == MEAN else f"H{head + 1}"
        title = f"{KIND_SHORT_TITLES[kind]} L{layer + 1} {which}"
        if title != self._title:  # the same title set again re-lays the plot out: a second paint per snapshot
            self._title = title
            self.plot.setTitle(title, size="10pt")
        self.step_label.setText(f"step {snap.step}")
        self.step_shown.emit(snap.step)

    def _set_ticks(self, snap: ProbeSnapshot, kind: str) -> None:
        m = snap.maps[kind]
        labels = (kind, m.query_labels, m.key_labels)
        if labels == self._labels:
            return
        self._labels = labels
        self.plot.getAxis("bottom").set_tokens(m.key_labels)  # every token or none (then the hover names them)
        self.plot.getAxis("left").set_tokens(m.query_labels)

    def hover_text(self, scene_pos: QPointF) -> str:
        """The cell under a scene point: "query 2 '7' -> key 5 '3': 0.412" ("" off the map)."""
        image = self.image.image
        if image is None or not self._labels or not self.plot.vb.sceneBoundingRect().contains(scene_pos):
            return ""
        _kind, queries, keys = self._labels
        point = self.plot.vb.mapSceneToView(scene_pos)
        i, j = int(np.floor(point.y())), int(np.floor(point.x()))
        if not (0 <= i < min(len(queries), image.shape[0]) and 0 <= j < min(len(keys), image.shape[1])):
            return ""
        return f"query {i} '{queries[i]}' -> key {j} '{keys[j]}': {float(image[i, j]):.3f}"

    def _on_mouse_moved(self, scene_pos: QPointF) -> None:
        text = self.hover_text(scene_pos)
        self.image.setToolTip(text)
        if text and QToolTip.isVisible():
            QToolTip.showText(QCursor.pos(), text, self.graphics)


def pick_map(snap: ProbeSnapshot, kind: str, layer: int, head: int, gates: np.ndarray | None = None) -> np.ndarray:
    """One head's map, or the mean of the heads that are on (all when none is): (Tq, Tk).

    `gates` (L, H) apply only when they have the snapshot's shape: gates and snapshots arrive on separate signals, so
    while the model changes shape the gates may already describe the new model and the snapshots still the old one.
    """
    all_values = snap.maps[kind].values  # (L, H, Tq, Tk)
    values = all_values[min(layer, all_values.shape[0] - 1)]  # (H, Tq, Tk)
    if head != MEAN:
        return values[min(head, values.shape[0] - 1)]
    if gates is not None and gates.shape == all_values.shape[:2] and layer < len(gates) and gates[layer].any():
        return values[gates[layer]].mean(axis=0)
    return values.mean(axis=0)


def head_mean(snap: ProbeSnapshot, kind: str) -> np.ndarray:
    """Last layer, averaged over heads: (Tq, Tk)."""
    return snap.maps[kind].values[-1].mean(axis=0)
