"""One attention map shown large, with token labels on both axes and its own exports."""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF
from PySide6.QtGui import QCursor
from PySide6.QtWidgets import QDialog, QHBoxLayout, QLabel, QPushButton, QToolTip, QVBoxLayout, QWidget

from visualizer.state.snapshots import KIND_TITLES, KindMaps
from visualizer.widgets.common import image_export as export
from visualizer.widgets.heatmap import exporters
from visualizer.widgets.heatmap.atlas import AVG, cell_text
from visualizer.widgets.heatmap.colours import DEFAULT_COLORMAP, RgbaImageItem, colour_indices, finite_range, make_lut
from visualizer.widgets.heatmap.exporters import ask_path_and_export
from visualizer.widgets.heatmap.grid_header import caption_lines
from visualizer.widgets.heatmap.mask_backdrop import MASK_LEGEND


def token_ticks(labels: Sequence[str]) -> list[list[tuple[float, str]]]:
    """Axis ticks at cell centres (pixel k spans [k, k+1]) for AxisItem.setTicks."""
    return [[(k + 0.5, str(label)) for k, label in enumerate(labels)]]


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
        self._caption: list[str] = []
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
        self._caption = [title, f"input (queries): {' '.join(map(str, query_labels))}",
                         f"keys: {' '.join(map(str, key_labels))}"]
        self.title_label.setText(title)
        self.setWindowTitle(title or "Attention map")
        lo, hi = finite_range(self._shown)
        self.image_item.setImage(self._lut[colour_indices(self._shown, lo, hi)], autoLevels=False)
        if self.colorbar.levels() != (lo, hi):
            self.colorbar.setLevels((lo, hi))
        self._set_labels(tuple(map(str, query_labels)), tuple(map(str, key_labels)))
        if shape_changed:
            self.plot_item.getViewBox().setRange(xRange=(0, values.shape[1]), yRange=(0, values.shape[0]), padding=0)

    def show_grid_map(self, maps: KindMaps, average: np.ndarray, layer: int, head: int, mode_text: str) -> None:
        """Show map (layer, head) of a grid's maps; head -1 is the head average, given as `average` (Tq, Tk)."""
        if head == AVG:
            name, values, valid = f"L{layer + 1} avg", average, ~np.isnan(average)
        else:
            name, values, valid = f"L{layer + 1} H{head + 1}", maps.values[layer, head], maps.valid
        title = f"{KIND_TITLES.get(maps.kind, maps.kind)} — {name} ({mode_text})"
        self.set_matrix(values, valid, maps.query_labels, maps.key_labels, title, tooltip_prefix=name)
        self._caption = caption_lines(title, maps, MASK_LEGEND)

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

    def caption(self) -> list[str]:
        """The lines the exported images carry: title (kind, map, mode), input and key tokens, model shape, legend."""
        return list(self._caption)

    def export_png(self, path: str | Path, width: int | None = None) -> Path:
        return exporters.export_captioned_png(self.graphics.ci, path, width, self._caption)

    def export_svg(self, path: str | Path) -> Path:
        return exporters.export_captioned_svg(self.graphics.ci, path, self._caption)

    def export_csv(self, path: str | Path) -> Path:
        return export.save_matrix_csv(path, self._shown, self._query_labels, self._key_labels)

    def _ask_png(self) -> None:
        ask_path_and_export(self, "Export map as PNG", "PNG image (*.png)", self.export_png)

    def _ask_svg(self) -> None:
        ask_path_and_export(self, "Export map as SVG", "SVG image (*.svg)", self.export_svg)

    def _ask_csv(self) -> None:
        ask_path_and_export(self, "Export map as CSV", "CSV file (*.csv)", self.export_csv)


class GridLargeView:
    """A grid's one large view: made on first use, reused, and kept on its (layer, head) as new maps arrive."""

    def __init__(self, parent: QWidget) -> None:
        self._parent = parent
        self._dialog: MapDialog | None = None
        self._target: tuple[int, int] | None = None

    def is_visible(self) -> bool:
        return self._dialog is not None and self._dialog.isVisible()

    def open(self, layer: int, head: int) -> MapDialog:
        """Aim the dialog at a map (the caller refreshes it with force=True, then shows it)."""
        if self._dialog is None:
            self._dialog = MapDialog(self._parent)
        self._target = (layer, head)
        return self._dialog

    def refresh(self, maps: KindMaps | None, shown: np.ndarray | None, mode_text: str, force: bool = False) -> None:
        """Show the target map of `maps`; `shown` is the grid's (L, H + 1, Tq, Tk) values, None when empty."""
        dialog, target = self._dialog, self._target
        if dialog is None or target is None or maps is None or not (force or dialog.isVisible()):
            return
        layer, head = target
        if layer < maps.n_layers and head < maps.n_heads and shown is not None:
            dialog.show_grid_map(maps, shown[layer, -1], layer, head, mode_text)
