"""Exact match and token accuracy against source length for two models on one plot; the training ranges shaded.

Updated in place with setData as points arrive; a click picks the nearest planned length.
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF, Qt, Signal
from PySide6.QtWidgets import QWidget

from visualizer.state.length_lab_snapshots import LabCurves
from visualizer.widgets.common.legend_above import LegendAbovePlot

COLOURS = ("#1f77b4", "#d95f02")  # model A blue, model B orange (colour-blind safe pair)
SCALING_NAMES = {"none": "", "pi": " + PI", "ntk": " + NTK"}
SCALING_TITLES = {"none": "none", "pi": "PI", "ntk": "NTK-aware"}
LEGEND_ROW_PX = 22  # one legend row: a 9 pt label and its sample
AXIS_PX = 44  # the score axis: its title and "0.2" ... "1.0"
FADED = 80  # alpha of out-of-date curves: faded and dotted, still told apart by hue


class LengthPlot(LegendAbovePlot):
    """Two curves per model (solid: exact match, dashed: token accuracy); `length_clicked(int)` on a click."""

    length_clicked = Signal(int)

    def __init__(self, parent: QWidget | None = None) -> None:
        # one model per row where the width allows, both rows kept from the start: the plot does not move when the
        # first point arrives
        legend = {"labelTextColor": "#222"}
        super().__init__(
            AXIS_PX, LEGEND_ROW_PX, rows=2, max_columns=2, legend_options=legend, parent=parent, background="w"
        )
        item = self.getPlotItem()
        item.setLabel("bottom", "source length (symbols)")
        item.setLabel("left", "score (0 to 1)")
        item.showGrid(x=True, y=True, alpha=0.25)
        item.setYRange(0.0, 1.02, padding=0.04)  # room for the "0" label at the foot of the axis
        # lengths from 1 until the evaluation's plan arrives: pyqtgraph's default range would read -0.4 to 0.4
        item.setXRange(0.5, 16.5, padding=0.01)
        item.getAxis("bottom").enableAutoSIPrefix(False)
        item.setMouseEnabled(x=False, y=False)
        item.hideButtons()
        self.regions = [
            pg.LinearRegionItem(movable=False, brush=pg.mkBrush(120, 120, 120, 28), pen=pg.mkPen(None)) for _ in COLOURS
        ]  # grey: two equal ranges look like one, different ones show a step
        for region in self.regions:
            region.setZValue(-10)
            region.hide()
            item.addItem(region)
        self.exact = [item.plot(symbol="o", symbolSize=6) for _ in COLOURS]
        self.token = [item.plot() for _ in COLOURS]
        self.stale: tuple[bool, ...] = ()  # per model: its curves are out of date
        self._style_curves()
        self.marker = pg.InfiniteLine(angle=90, pen=pg.mkPen("#555", width=1, style=Qt.PenStyle.DotLine))
        self.marker.hide()
        item.addItem(self.marker)
        self.region_label = pg.TextItem("", color="#444", anchor=(1, 1))
        item.addItem(self.region_label)
        self._lengths: tuple[int, ...] = ()
        self._labelled: tuple | None = None  # what the legend and shading were last drawn for
        self._curves: LabCurves | None = None
        self.scene().sigMouseClicked.connect(self._on_click)
        self.setToolTip("Click a length to see both models' cross-attention for one source of that length")

    def set_curves(self, curves: LabCurves) -> None:
        """Draw the points so far (in place) and label the curves with the models and the RoPE scaling.

        Only the curves' data change per point: the legend, shading and axis range are rebuilt when the models,
        the scaling or the lengths change: rebuilding them per point would hold the GUI thread up at every point.
        """
        self._curves = curves
        if curves.lengths != self._lengths:
            self._lengths = curves.lengths
            self.getPlotItem().setXRange(0.5, max(curves.lengths) + 0.5, padding=0.01)
        for slot in range(len(COLOURS)):
            points = curves.points[slot] if slot < len(curves.points) else ()
            xs = np.array([p.length for p in points], float)
            self.exact[slot].setData(xs, np.array([p.exact_match for p in points], float))
            self.token[slot].setData(xs, np.array([p.token_accuracy for p in points], float))
        drawn = tuple(slot < len(curves.points) and bool(curves.points[slot]) for slot in range(len(COLOURS)))
        key = (curves.labels, curves.scaling, curves.positional, curves.train_ranges, drawn)
        if key != self._labelled:
            self._labelled = key
            self._label(curves, drawn)

    def set_stale(self, stale: tuple[bool, ...]) -> None:
        """Out-of-date curves (their settings changed since they were computed): faded, dotted, and titled so."""
        stale = tuple(stale)
        if stale == self.stale:
            return
        self.stale = stale
        self._style_curves()
        c = self._curves
        title = (
            ""
            if not any(stale) or c is None
            else (
                f"Out of date (faded): computed for RoPE scaling {SCALING_TITLES[c.scaling]}, "
                f"{c.n} sources per length, "
                f"seed {c.seed}; the settings changed: press Evaluate"
            )
        )
        self.getPlotItem().setTitle(title or None, color="#b00020", size="10pt")

    def _style_curves(self) -> None:
        """Solid exact match with points, dashed token accuracy; faded and dotted while out of date. Two models often
        score alike (1.0 over the trained lengths): the first is drawn wider, under the second, so both show."""
        for slot, colour in enumerate(COLOURS):
            stale = slot < len(self.stale) and self.stale[slot]
            c = pg.mkColor(colour)
            if stale:
                c.setAlpha(FADED)
            exact_style = Qt.PenStyle.DotLine if stale else Qt.PenStyle.SolidLine
            token_style = Qt.PenStyle.DotLine if stale else Qt.PenStyle.DashLine
            wide = 1.8 if slot == 0 else 1.0  # the first model wider, under the second: equal scores show both
            self.exact[slot].setPen(pg.mkPen(c, width=2.5 * wide, style=exact_style))
            self.exact[slot].setSymbolBrush(c)
            self.exact[slot].setSymbolPen(c)
            self.exact[slot].setSymbolSize(6 + 4 * (slot == 0))
            self.token[slot].setPen(pg.mkPen(c, width=1.5 * wide, style=token_style))
            for curve in (self.exact[slot], self.token[slot]):
                curve.setZValue(slot)

    def _label(self, curves: LabCurves, drawn: tuple[bool, ...]) -> None:
        """The legend (a model enters it with its first point: an entry with no curve reads as a failed model) and
        the shaded training ranges."""
        self.legend.clear()
        for slot in range(len(COLOURS)):
            if slot >= len(curves.labels):
                self.regions[slot].hide()
                continue
            scaled = SCALING_NAMES[curves.scaling] if curves.positional[slot] == "rope" else ""
            name = f"{curves.labels[slot]}{scaled}"
            if drawn[slot]:
                self.legend.addItem(self.exact[slot], f"{name}: exact match")
                self.legend.addItem(self.token[slot], f"{name}: token accuracy")
            lo, hi = curves.train_ranges[slot]
            self.regions[slot].setRegion((lo - 0.5, hi + 0.5))
            self.regions[slot].show()
        self.refit_legend()
        ranges = sorted(set(curves.train_ranges))
        text = " and ".join(f"{lo}-{hi}" for lo, hi in ranges)
        self.region_label.setText(f"shaded: trained lengths {text}")
        self.region_label.setPos(max(hi for _, hi in ranges) + 0.4, 0.02)

    def mark(self, length: int | None) -> None:
        """The length whose maps are shown (None: none)."""
        self.marker.setVisible(length is not None)
        if length is not None:
            self.marker.setPos(length)

    def _on_click(self, event) -> None:
        item = self.getPlotItem()
        pos: QPointF = event.scenePos()
        if not self._lengths or not item.vb.sceneBoundingRect().contains(pos):
            return
        x = item.vb.mapSceneToView(pos).x()
        length = int(round(x))
        if self._lengths[0] <= length <= self._lengths[-1]:
            self.length_clicked.emit(length)

    def scene_point(self, length: int, y: float = 0.5) -> QPointF:
        """Where (length, y) lies in the scene: the inverse of the mapping a click on the plot goes through."""
        return self.getPlotItem().vb.mapViewToScene(QPointF(length, y))
