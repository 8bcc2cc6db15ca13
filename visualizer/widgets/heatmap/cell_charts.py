"""Small charts of the cell panel: bars per dimension (or per key) and the weighted-values image, each able to
highlight one column so that hovering a dimension lights it up everywhere."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF, Qt, Signal

from visualizer.widgets.heatmap.token_axis import TokenAxis

BAR_COLOURS = ("#90a4ae", "#1e88e5")  # first series grey (e.g. before RoPE), second blue (after / the only one)
PICKED = "#e65100"  # the inspected key in the row chart
HIGHLIGHT = (255, 193, 7, 90)  # translucent amber band over the hovered dimension
CHART_HEIGHT = 120
LEGEND_ROW, LEGEND_WIDTH, LEGEND_HEIGHT = 4, 240, 22  # a row under the axis title: over the bars it hid some


class BarChart(pg.PlotWidget):
    """Bars per index for one or two series side by side; emits the index under the mouse. Over tokens (keys) every
    bar is labelled or none is, and the bar under the mouse is named in the tooltip."""

    hovered = Signal(int)  # index under the mouse, -1 off the bars

    def __init__(self, x_label: str, tokens: bool = False) -> None:
        axis = TokenAxis("bottom", x_label, offset=0.0, hidden_note="hover a bar to name it") if tokens else None
        super().__init__(axisItems={"bottom": axis} if axis is not None else None)
        self._token_axis = axis
        self._labels: list[str] = []
        self.setMinimumHeight(CHART_HEIGHT)
        self.setMaximumHeight(CHART_HEIGHT + 20)
        self.setMenuEnabled(False)
        self.setMouseEnabled(x=False, y=False)
        self.hideButtons()
        if axis is None:
            self.getPlotItem().setLabel("bottom", x_label)
        self.showGrid(y=True, alpha=0.25)
        self.addLine(y=0, pen=pg.mkPen("#888", width=1))
        self._bars: list[pg.BarGraphItem] = []
        self._series: dict[str, np.ndarray] = {}
        self._n = 0
        self.band = pg.LinearRegionItem(values=(0, 0), movable=False, brush=pg.mkBrush(*HIGHLIGHT), pen=pg.mkPen(None))
        self.band.setVisible(False)
        self.addItem(self.band)
        self.legend = pg.LegendItem(colCount=2, labelTextSize="8pt", brush=pg.mkBrush(0, 0, 0, 190), frame=False)
        self.legend.layout.setContentsMargins(4, 0, 4, 0)
        self.legend.setMaximumSize(LEGEND_WIDTH, LEGEND_HEIGHT)
        self.legend.hide()  # in the layout only while two series need naming
        self.scene().sigMouseMoved.connect(self._on_mouse_moved)

    def set_series(
        self, series: Sequence[tuple[str, np.ndarray]], picked: int | None = None, ticks: Sequence[str] | None = None
    ) -> None:
        """One or two named series of equal length, drawn as bars; `picked` draws that bar in orange."""
        for item in self._bars:
            self.removeItem(item)
        self._bars = []
        self.legend.clear()
        self._series = {name: np.asarray(values, np.float64) for name, values in series}
        self._n = len(series[0][1]) if series else 0
        width = 0.8 / max(len(series), 1)
        for s, (name, values) in enumerate(series):
            x = np.arange(self._n) - 0.4 + width * (s + 0.5)
            shown = np.where(np.isfinite(values), values, 0.0)
            brushes = [
                pg.mkBrush(PICKED if k == picked else BAR_COLOURS[s + (len(series) == 1)]) for k in range(self._n)
            ]  # `brush` too: the legend draws that one
            colour = BAR_COLOURS[s + (len(series) == 1)]
            bar = pg.BarGraphItem(x=x, height=shown, width=width, brushes=brushes, brush=colour, pen=pg.mkPen(None))
            self.addItem(bar)
            self._bars.append(bar)
            if len(series) > 1:
                self.legend.addItem(bar, name)
        self._place_legend(len(series) > 1)
        self._labels = [str(t) for t in ticks] if ticks is not None else []
        if self._token_axis is not None:
            self._token_axis.set_tokens(self._labels)
        else:  # dimension numbers: a numeric axis, every k-th
            step = max(1, self._n // 16)
            self.getAxis("bottom").setTicks([[(k, str(k)) for k in range(0, self._n, step)]])
        self.setXRange(-0.6, self._n - 0.4, padding=0)
        finite = np.concatenate([v[np.isfinite(v)] for v in self._series.values()] + [np.zeros(1)])
        lo, hi = float(finite.min()), float(finite.max())
        pad = 0.08 * max(hi - lo, 1e-9)
        self.setYRange(lo - pad, hi + pad, padding=0)

    def _place_legend(self, shown: bool) -> None:
        """The legend in a row of its own under the plot (the chart grows by that row), or out of the layout."""
        layout = self.getPlotItem().layout
        if shown == self.legend.isVisible():
            return
        if shown:
            layout.addItem(self.legend, LEGEND_ROW, 1, alignment=Qt.AlignmentFlag.AlignHCenter)
        else:
            layout.removeItem(self.legend)
        self.legend.setVisible(shown)
        if shown:  # the plot keeps the height a chart without a legend gets
            self.setFixedHeight(CHART_HEIGHT + 20 + LEGEND_HEIGHT)
        else:
            self.setMinimumHeight(CHART_HEIGHT)
            self.setMaximumHeight(CHART_HEIGHT + 20)

    def values(self, name: str) -> np.ndarray:
        """The numbers a series was drawn from (the bar heights, NaN-free)."""
        return self._series[name].copy()

    def set_highlight(self, index: int | None) -> None:
        visible = index is not None and 0 <= index < self._n
        self.band.setVisible(visible)
        if index is not None and visible:
            self.band.setRegion((index - 0.5, index + 0.5))

    def _on_mouse_moved(self, scene_pos: QPointF) -> None:
        point = self.getPlotItem().getViewBox().mapSceneToView(scene_pos)
        index = int(np.floor(point.x() + 0.5))
        inside = 0 <= index < self._n and self.sceneBoundingRect().contains(scene_pos)
        if self._labels:
            values = next(iter(self._series.values()))
            self.setToolTip(f"key {index} '{self._labels[index]}': {values[index]:.4g}" if inside else "")
        self.hovered.emit(index if inside else -1)


class MatrixChart(pg.PlotWidget):
    """The weighted values w_k v_k as an image, keys down, dimensions across (diverging colours around 0)."""

    hovered = Signal(int)  # dimension under the mouse, -1 outside

    def __init__(self) -> None:
        super().__init__(axisItems={"left": TokenAxis("left", "key", hidden_note="hover a row to name it")})
        self.setMinimumHeight(CHART_HEIGHT + 20)
        self.setMenuEnabled(False)
        self.setMouseEnabled(x=False, y=False)
        self.hideButtons()
        self.getPlotItem().invertY(True)
        self.getPlotItem().setLabel("bottom", "dimension d")
        self._keys: list[str] = []
        self.image = pg.ImageItem(axisOrder="row-major")
        self.image.setColorMap(pg.colormap.get("CET-D1"))
        self.addItem(self.image)
        self.band = pg.LinearRegionItem(
            values=(0, 1), movable=False, brush=pg.mkBrush(*HIGHLIGHT), pen=pg.mkPen("#ffc107")
        )
        self.band.setVisible(False)
        self.addItem(self.band)
        self.row_line = pg.LinearRegionItem(
            values=(0, 1),
            orientation="horizontal",
            movable=False,
            brush=pg.mkBrush(None),
            pen=pg.mkPen(PICKED, width=2),
        )
        self.addItem(self.row_line)
        self._matrix = np.zeros((0, 0))
        self.scene().sigMouseMoved.connect(self._on_mouse_moved)

    def set_matrix(self, matrix: np.ndarray, key_labels: Sequence[str], picked: int) -> None:
        self._matrix = np.asarray(matrix, np.float64)
        limit = float(np.abs(self._matrix).max()) if self._matrix.size else 1.0
        self.image.setImage(self._matrix, levels=(-limit or -1.0, limit or 1.0))
        rows, cols = self._matrix.shape
        self._keys = [str(k) for k in key_labels]
        self.getAxis("left").set_tokens(self._keys[:rows])
        step = max(1, cols // 16)
        self.getAxis("bottom").setTicks([[(d + 0.5, str(d)) for d in range(0, cols, step)]])
        self.row_line.setRegion((picked, picked + 1))
        self.getPlotItem().getViewBox().setRange(xRange=(0, cols), yRange=(0, rows), padding=0)

    def set_highlight(self, index: int | None) -> None:
        visible = index is not None and 0 <= index < self._matrix.shape[1]
        self.band.setVisible(visible)
        if index is not None and visible:
            self.band.setRegion((index, index + 1))

    def _on_mouse_moved(self, scene_pos: QPointF) -> None:
        point = self.getPlotItem().getViewBox().mapSceneToView(scene_pos)
        d, k = int(np.floor(point.x())), int(np.floor(point.y()))
        inside = 0 <= d < self._matrix.shape[1] and 0 <= k < self._matrix.shape[0]
        key = self._keys[k] if inside and k < len(self._keys) else ""
        self.setToolTip(f"key {k} '{key}', dimension {d}: {self._matrix[k, d]:.4g}" if inside else "")
        self.hovered.emit(d if inside else -1)
