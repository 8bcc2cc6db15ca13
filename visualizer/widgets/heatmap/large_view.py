"""One attention map shown large, with token labels on both axes; also the colouring helpers the grid shares."""
from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF
from PySide6.QtGui import QCursor, QImage
from PySide6.QtWidgets import (
    QDialog, QFileDialog, QHBoxLayout, QLabel, QMessageBox, QPushButton, QToolTip, QVBoxLayout, QWidget,
)

from visualizer.widgets.common import image_export as export

log = logging.getLogger(__name__)

N_COLOURS = 256
BLANK_INDEX = N_COLOURS  # LUT row that is fully transparent: masked cells and gutters
DIM_OFFSET = N_COLOURS + 1  # added to a colour index to pick the dimmed (ablated-head) copy of the colormap
DEFAULT_COLORMAP = "viridis"


def make_lut(name: str = DEFAULT_COLORMAP) -> np.ndarray:
    """Colour table (2 * 257, 4) uint8: the colormap, a transparent row, a dimmed colormap, a transparent row."""
    base = pg.colormap.get(name).getLookupTable(0.0, 1.0, N_COLOURS, alpha=True).astype(np.uint8)
    base[:, 3] = 255
    dim = base.copy()
    dim[:, :3] = (base[:, :3].astype(np.float32) * 0.3 + 90).astype(np.uint8)  # washed-out grey
    blank = np.zeros((1, 4), np.uint8)
    return np.ascontiguousarray(np.concatenate([base, blank, dim, blank]))


def colour_scale(values: np.ndarray, lo: np.ndarray | float, hi: np.ndarray | float,
                 out: np.ndarray | None = None) -> np.ndarray:
    """LUT indices as float32 (floor on cast) for values scaled to [lo, hi]; NaN -> BLANK_INDEX.

    lo/hi broadcast against values (scalars, or per-map (L, C, 1, 1)); `out` (float32, values' shape) avoids
    allocating on every frame.
    """
    lo = np.asarray(lo, np.float32)
    span = np.asarray(hi, np.float32) - lo
    flat = span <= 0  # a constant map: show it mid-scale rather than dividing by zero
    lo = np.where(flat, lo - 0.5, lo).astype(np.float32)
    scale = (N_COLOURS / np.where(flat, 1.0, span)).astype(np.float32)
    scaled = np.subtract(values, lo, out=out, dtype=np.float32)
    scaled *= scale
    np.clip(scaled, 0, N_COLOURS - 1, out=scaled)  # NaN stays NaN
    np.copyto(scaled, BLANK_INDEX, where=np.isnan(scaled))
    return scaled


def colour_indices(values: np.ndarray, lo: np.ndarray | float, hi: np.ndarray | float) -> np.ndarray:
    """LUT indices (uint16) for values scaled to [lo, hi]; NaN becomes BLANK_INDEX."""
    return colour_scale(values, lo, hi).astype(np.uint16)


def finite_range(values: np.ndarray) -> tuple[float, float]:
    """(min, max) over finite entries; (0, 1) when nothing is finite."""
    if values.size:
        lo, hi = float(np.fmin.reduce(values, axis=None)), float(np.fmax.reduce(values, axis=None))  # skip NaN
        if np.isfinite(lo) and np.isfinite(hi):
            return lo, hi
    finite = values[np.isfinite(values)]  # rare: infinities present, or nothing but NaN
    if finite.size == 0:
        return 0.0, 1.0
    return float(finite.min()), float(finite.max())


def cell_text(prefix: str, i: int, j: int, query: str, key: str, value: float, masked: bool) -> str:
    """The hover text of one cell: "L1 H2 query 3 'a' -> key 0 '<bos>': 0.873" ("masked" for blank cells)."""
    shown = "masked" if masked else f"{value:.3f}"
    return f"{prefix} query {i} '{query}' -> key {j} '{key}': {shown}"


def token_ticks(labels: Sequence[str]) -> list[list[tuple[float, str]]]:
    """Axis ticks at cell centres (pixel k spans [k, k+1]) for AxisItem.setTicks."""
    return [[(k + 0.5, str(label)) for k, label in enumerate(labels)]]


class RgbaImageItem(pg.ImageItem):
    """ImageItem for RGBA uint8 images coloured by us: converted once per update to Qt's fastest format.

    pyqtgraph hands Qt an RGBA8888 QImage, which the raster engine converts on every paint; premultiplied
    ARGB32 draws about twice as fast (measured here: 1.0 vs 1.9 ms to draw a 6x9-map atlas at 1100x700 px).
    Any other image (float, levels, LUT) takes pyqtgraph's normal path.
    """

    def render(self) -> None:
        image = self.image
        if (image is None or image.ndim != 3 or image.shape[2] != 4 or image.dtype != np.uint8
                or self.levels is not None or self.lut is not None or self.axisOrder != "row-major"
                or self.autoDownsample or image.size == 0):
            super().render()
            return
        rgba = np.ascontiguousarray(image)
        height, width = rgba.shape[:2]
        wrapped = QImage(rgba.data, width, height, width * 4, QImage.Format.Format_RGBA8888)
        self.qimage = wrapped.convertToFormat(QImage.Format.Format_ARGB32_Premultiplied)  # a copy: owns its pixels
        self._renderRequired = False  # pyqtgraph 0.14 ImageItem.render() bookkeeping
        self._unrenderable = False


class MapDialog(QDialog):
    """A single (Tq, Tk) map, large, with query labels on the left and key labels at the bottom."""

    def __init__(self, parent: QWidget | None = None, colormap: str = DEFAULT_COLORMAP) -> None:
        super().__init__(parent)
        self.setWindowTitle("Attention map")
        self.resize(640, 560)
        self._lut = make_lut(colormap)
        self._values = np.zeros((0, 0), np.float32)
        self._valid = np.zeros((0, 0), bool)
        self._shown = np.zeros((0, 0), np.float32)
        self._query_labels: tuple[str, ...] = ()
        self._key_labels: tuple[str, ...] = ()
        self._prefix = ""
        self.title_label = QLabel()
        self.graphics = pg.GraphicsLayoutWidget()
        self.plot_item: pg.PlotItem = self.graphics.addPlot(row=0, col=0)
        self.image_item = RgbaImageItem(axisOrder="row-major")
        self.colorbar = pg.ColorBarItem(values=(0.0, 1.0), colorMap=pg.colormap.get(colormap), interactive=False)
        self._build_plot()
        self._build_layout()
        self.graphics.scene().sigMouseMoved.connect(self._on_mouse_moved)

    def _build_plot(self) -> None:
        """Matrix-display setup: query 0 on top, no mouse panning, token labels as ticks."""
        plot = self.plot_item
        plot.addItem(self.image_item)
        plot.invertY(True)
        plot.setMouseEnabled(x=False, y=False)
        plot.setMenuEnabled(False)
        plot.hideButtons()
        plot.getAxis("left").setLabel("query")
        plot.getAxis("bottom").setLabel("key")
        self.graphics.addItem(self.colorbar, row=0, col=1)

    def _build_layout(self) -> None:
        """Title, plot, and a row of export buttons."""
        buttons = QHBoxLayout()
        for text, slot in (("Export PNG...", self._ask_png), ("Export SVG...", self._ask_svg),
                           ("Export CSV...", self._ask_csv)):
            button = QPushButton(text)
            button.clicked.connect(slot)
            buttons.addWidget(button)
        buttons.addStretch(1)
        layout = QVBoxLayout(self)
        layout.addWidget(self.title_label)
        layout.addWidget(self.graphics, 1)
        layout.addLayout(buttons)

    def set_matrix(
        self,
        values: np.ndarray,
        valid: np.ndarray,
        query_labels: Sequence[str],
        key_labels: Sequence[str],
        title: str,
        tooltip_prefix: str = "",
    ) -> None:
        """Show a new map in place (same items, new image and ticks).

        Shape:
            values: (Tq, Tk) float; valid: (Tq, Tk) bool, False cells are drawn blank (transparent).
        """
        values = np.asarray(values, np.float32)
        valid = np.asarray(valid, bool)
        shape_changed = values.shape != self._values.shape
        self._values, self._valid = values, valid
        self._shown = np.where(valid & np.isfinite(values), values, np.nan).astype(np.float32)
        self._prefix = tooltip_prefix or title
        self.title_label.setText(title)
        self.setWindowTitle(title or "Attention map")
        lo, hi = finite_range(self._shown)
        self.image_item.setImage(self._lut[colour_indices(self._shown, lo, hi)], autoLevels=False)
        if self.colorbar.levels() != (lo, hi):
            self.colorbar.setLevels((lo, hi))
        self._set_labels(tuple(map(str, query_labels)), tuple(map(str, key_labels)))
        if shape_changed:
            self.plot_item.getViewBox().setRange(xRange=(0, values.shape[1]), yRange=(0, values.shape[0]), padding=0)

    def _set_labels(self, query_labels: tuple[str, ...], key_labels: tuple[str, ...]) -> None:
        """Update axis ticks only when the tokens changed (axes re-layout is the slow part)."""
        if query_labels != self._query_labels:
            self.plot_item.getAxis("left").setTicks(token_ticks(query_labels))
            self._query_labels = query_labels
        if key_labels != self._key_labels:
            self.plot_item.getAxis("bottom").setTicks(token_ticks(key_labels))
            self._key_labels = key_labels

    def displayed_matrix(self) -> np.ndarray:
        """The numbers shown, NaN where blank. Shape (Tq, Tk)."""
        return self._shown.copy()

    def tooltip_text_at(self, i: int, j: int) -> str:
        """Hover text of cell (i, j), same format as the grid."""
        return cell_text(self._prefix, i, j, self._query_labels[i], self._key_labels[j],
                         float(self._values[i, j]), not bool(self._valid[i, j]))

    def cell_at(self, scene_pos: QPointF) -> tuple[int, int] | None:
        """(query, key) under a scene position, or None outside the map."""
        point = self.plot_item.getViewBox().mapSceneToView(scene_pos)
        i, j = int(np.floor(point.y())), int(np.floor(point.x()))
        rows, cols = self._values.shape
        return (i, j) if 0 <= i < rows and 0 <= j < cols else None

    def _on_mouse_moved(self, scene_pos: QPointF) -> None:
        cell = self.cell_at(scene_pos)
        text = self.tooltip_text_at(*cell) if cell is not None else ""
        self.image_item.setToolTip(text)
        if text and QToolTip.isVisible():
            QToolTip.showText(QCursor.pos(), text, self.graphics)

    def export_png(self, path: str | Path, width: int | None = None) -> Path:
        return export.export_item_png(self.graphics.ci, path, width)

    def export_svg(self, path: str | Path) -> Path:
        return export.export_item_svg(self.graphics.ci, path)

    def export_csv(self, path: str | Path) -> Path:
        return export.save_matrix_csv(path, self._shown, self._query_labels, self._key_labels)

    def _ask_png(self) -> None:
        ask_path_and_export(self, "Export map as PNG", "PNG image (*.png)", self.export_png)

    def _ask_svg(self) -> None:
        ask_path_and_export(self, "Export map as SVG", "SVG image (*.svg)", self.export_svg)

    def _ask_csv(self) -> None:
        ask_path_and_export(self, "Export map as CSV", "CSV file (*.csv)", self.export_csv)


def ask_path_and_export(parent: QWidget, caption: str, file_filter: str, action: Callable[[str], object]) -> None:
    """Non-native save dialog, then the export; a failure goes to a message box, never an exception."""
    path, _ = QFileDialog.getSaveFileName(parent, caption, "", file_filter,
                                          options=QFileDialog.Option.DontUseNativeDialog)
    if not path:
        return
    try:
        action(path)
    except OSError as exc:
        log.warning("%s failed: %s", caption, exc)
        QMessageBox.warning(parent, caption, str(exc))
