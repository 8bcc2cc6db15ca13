"""The probe's attention while it is learnt: last layer, mean of heads, and a timeline over the snapshots."""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QSlider, QStackedWidget, QVBoxLayout, QWidget

from visualizer.state.snapshots import ProbeSnapshot

PROBE_KINDS = (("encoder_self", "Encoder self-attention"), ("cross", "Cross-attention"))
COLORMAP = "viridis"


class ProbeView(QWidget):
    """The probe's last-layer attention (mean over heads) and a timeline over the stored snapshots."""

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
        self._snapshots: tuple[ProbeSnapshot, ...] = ()
        self._labels: tuple = ()
        self.slider.valueChanged.connect(self._show_index)

    def set_snapshots(self, snapshots: tuple[ProbeSnapshot, ...]) -> None:
        """Show these snapshots: a new set from its newest entry; more of the same run follow the newest entry
        unless the user is looking at an earlier one."""
        old, self._snapshots = self._snapshots, tuple(snapshots)
        grown = bool(old) and len(self._snapshots) >= len(old) and self._snapshots[0] is old[0]
        self._sync_slider(follow=not grown or self.slider.value() >= self.slider.maximum())

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
