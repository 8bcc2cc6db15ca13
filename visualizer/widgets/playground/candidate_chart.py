"""The next-token chart of the decoder stepper: top-k candidates as horizontal bars; a click forces a token.

Render only: it is handed (token id, label, probability) triples and emits the id the user picked.
"""

from __future__ import annotations

import logging

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import QWidget

log = logging.getLogger(__name__)

BAR_THICKNESS = 0.7  # bar extent along y; rows sit at integer y
X_MAX = 1.18  # room right of a full bar for its value label


class CandidateChart(pg.PlotWidget):
    """Horizontal bars of the next-token probabilities; clicking a bar (or its label) forces that token."""

    candidate_clicked = Signal(int)  # token id

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._ids: list[int] = []
        self._shown: tuple | None = (
            None  # what the bars show, to 1/1000: a keystroke that changes nothing visible skips
        )
        self._labels: tuple[str, ...] | None = None
        self._title: str | None = None
        self._text_colour = self.palette().color(QPalette.ColorRole.WindowText)
        self.setBackground(self.palette().color(QPalette.ColorRole.Base))
        item = self.getPlotItem()
        item.setMouseEnabled(x=False, y=False)
        item.setMenuEnabled(False)
        item.hideButtons()
        item.invertY(True)  # best candidate on top
        item.setXRange(0.0, X_MAX, padding=0)
        for name in ("left", "bottom"):
            item.getAxis(name).setTextPen(self._text_colour)
        item.getAxis("left").setStyle(tickLength=0)  # a mark into the plot before a bare "0.00" read as a minus sign
        item.getAxis("bottom").setLabel("probability")
        self._bars = pg.BarGraphItem(
            x0=np.zeros(0), width=np.zeros(0), y=np.zeros(0), height=BAR_THICKNESS, brush="#5c8ddb", pen=None
        )
        item.addItem(self._bars)
        self._texts: list[pg.TextItem] = []  # pooled value labels
        self.scene().sigMouseClicked.connect(self._on_scene_clicked)
        self.setToolTip("Click a bar (or its token label) to force that token as the next output")

    def set_candidates(self, top_k: tuple[tuple[int, str, float], ...]) -> None:
        """Show the candidates in place (empty: no bars)."""
        shown = tuple((token_id, label, round(p, 3)) for token_id, label, p in top_k)
        if shown == self._shown:  # bars and 2-decimal texts would not change by a pixel: no repaint
            return
        self._shown = shown
        self._ids = [token_id for token_id, _, _ in top_k]
        probs = np.array([p for _, _, p in top_k], dtype=np.float64)
        rows = np.arange(len(top_k), dtype=np.float64)
        brushes = ["#2f6fd0" if i == 0 else "#8fb3ea" for i in range(len(top_k))]  # greedy pick stands out
        self._bars.setOpts(x0=np.zeros(len(top_k)), width=probs, y=rows, height=BAR_THICKNESS, brushes=brushes)
        labels = tuple(label for _, label, _ in top_k)
        if labels != self._labels:  # ticks, range and title re-lay the plot out: only when they change
            self._labels = labels
            self.getPlotItem().getAxis("left").setTicks([[(float(i), label) for i, label in enumerate(labels)]])
            self.getPlotItem().setYRange(-0.5, max(len(top_k), 1) - 0.5, padding=0.02)
        self._update_texts(probs)

    def set_title(self, title: str) -> None:
        """The caption above the bars (set only when it changes: pyqtgraph re-lays the plot out for a title)."""
        if title != self._title:
            self._title = title
            self.setTitle(title)

    def _update_texts(self, probs: np.ndarray) -> None:
        while len(self._texts) < len(probs):
            text = pg.TextItem(anchor=(0, 0.5), color=self._text_colour)
            self.getPlotItem().addItem(text)
            self._texts.append(text)
        for i, text in enumerate(self._texts):
            text.setVisible(i < len(probs))
            if i < len(probs):
                value = f"{probs[i]:.2f}"
                if text.toPlainText() != value:
                    text.setText(value)
                text.setPos(float(probs[i]) + 0.01, float(i))

    def _on_scene_clicked(self, event) -> None:
        """Map a left click on the plot area or the token axis to the candidate row under it."""
        if event.button() != Qt.MouseButton.LeftButton or not self._ids or not self.isEnabled():
            return
        item = self.getPlotItem()
        pos = event.scenePos()
        on_axis = item.getAxis("left").sceneBoundingRect().contains(pos)
        if not (on_axis or item.vb.sceneBoundingRect().contains(pos)):
            return
        y = item.vb.mapSceneToView(pos).y()
        index = int(round(y))
        if 0 <= index < len(self._ids) and abs(y - index) <= BAR_THICKNESS / 2:
            log.debug("candidate %d clicked (token id %d)", index, self._ids[index])
            event.accept()
            self.candidate_clicked.emit(self._ids[index])
