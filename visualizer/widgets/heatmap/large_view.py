"""One attention map shown large, with token labels on both axes, its own exports, the cell panel (click a cell
to take it apart) and mask painting (Paint mask, then click or drag over cells;
Ctrl+Z undoes a stroke, Ctrl+Shift+Z redoes it)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF, QRectF, Qt, Signal
from PySide6.QtGui import QCursor, QHideEvent, QShowEvent
from PySide6.QtWidgets import (
    QDialog,
    QHBoxLayout,
    QLabel,
    QSplitter,
    QToolTip,
    QVBoxLayout,
    QWidget,
)

from core_model.cell_decomposition import CellDecomposition
from visualizer.state.snapshots import KIND_TITLES, KindMaps
from visualizer.widgets.common import image_export as export
from visualizer.widgets.heatmap import exporters
from visualizer.widgets.heatmap.atlas import AVG, LISTED_HINT, cell_text
from visualizer.widgets.heatmap.cell_panel import CellPanel
from visualizer.widgets.heatmap.colours import DEFAULT_COLORMAP, RgbaImageItem, colour_indices, finite_range, make_lut
from visualizer.widgets.heatmap.dialog_place import keep_beside_docks
from visualizer.widgets.heatmap.grid_header import MODE_TEXT, caption_lines, mode_legend, pad_rows_attend, plain_label
from visualizer.widgets.heatmap.map_tools import HINT, PAINT_PEN, MapMouseTools, paint_buttons, painted_marks
from visualizer.widgets.heatmap.mask_backdrop import MASK_LEGEND, VIEW_BACKGROUND, MaskBackdrop
from visualizer.widgets.heatmap.token_axis import token_axes


class MapDialog(QDialog):
    """A single (Tq, Tk) map, large, with query labels on the left and key labels at the bottom."""

    cell_clicked = Signal(int, int)  # query, key: take this cell apart
    cells_painted = Signal(object, bool)  # frozenset of (query, key), erase?
    stroke_finished = Signal()
    undo_requested = Signal()
    redo_requested = Signal()

    def __init__(self, parent: QWidget | None = None, colormap: str = DEFAULT_COLORMAP) -> None:
        super().__init__(parent)
        self.setWindowTitle("Attention map")
        self.setAccessibleName("large map view")  # also how F1 names where its keys (P, Ctrl+Z...) work
        self.resize(640, 560)  # the cell tools, when attached, widen it
        self._painted: frozenset[tuple[int, int]] = frozenset()
        self._lut = make_lut(colormap)
        self._values = np.zeros((0, 0), np.float32)
        self._valid = np.zeros((0, 0), bool)
        self._shown = np.zeros((0, 0), np.float32)
        self._query_labels: tuple[str, ...] = ()
        self._key_labels: tuple[str, ...] = ()
        self._prefix = ""
        self._caption: list[str] = []
        self._mode = "weights"
        self.title_label = QLabel()
        self.legend_label = plain_label(MASK_LEGEND)  # what grey means in this view, as above the grids
        self.legend_label.setStyleSheet("color: gray")
        self.legend_label.setWordWrap(True)  # a long legend takes lines, never the dialog's width
        self.graphics = pg.GraphicsLayoutWidget()
        self.graphics.setBackground(VIEW_BACKGROUND)  # around the map: darker than a masked (grey) cell
        axes = token_axes(left="query", bottom="key", right="query position", top="key position")
        # no menu to build; every token labelled or none
        self.plot_item: pg.PlotItem = self.graphics.addPlot(row=0, col=0, enableMenu=False, axisItems=axes)
        self.image_item = RgbaImageItem(axisOrder="row-major")
        self.mask_backdrop = MaskBackdrop()  # masked cells are transparent: the grids' grey shows through them
        self.colorbar = pg.ColorBarItem(values=(0.0, 1.0), colorMap=pg.colormap.get(colormap), interactive=False)
        self.paint_marks = pg.ScatterPlotItem(symbol="x", size=9, pen=pg.mkPen(PAINT_PEN, width=2), brush=None)
        self.inspected_box = pg.PlotCurveItem(pen=pg.mkPen("#ff6d00", width=3))  # outline of the inspected cell
        self.cell_panel = CellPanel()
        self._build_plot()
        self._build_layout()
        self.graphics.scene().sigMouseMoved.connect(self._on_mouse_moved)
        self.mouse = MapMouseTools(self.graphics, self.cell_at, lambda: self._painted)
        self.mouse.cell_clicked.connect(self.cell_clicked)
        self.mouse.cells_painted.connect(self.cells_painted)
        self.mouse.stroke_finished.connect(self.stroke_finished)
        self.set_tools_enabled(False)

    def showEvent(self, event: QShowEvent) -> None:  # Qt's name
        super().showEvent(event)
        keep_beside_docks(self)

    def hideEvent(self, event: QHideEvent) -> None:  # Qt's name
        """Closed, the window forgets Paint mode: opened again (for another map, a later lesson) a click takes a cell
        apart, as its hint says, instead of painting a mask the user no longer means."""
        self.paint_button.setChecked(False)
        super().hideEvent(event)

    def set_tools_enabled(self, on: bool) -> None:
        """Show the cell panel and the paint tools (only where something answers their signals)."""
        for widget in (self.cell_panel, self.paint_button, self.undo_button, self.redo_button, self.hint_label):
            widget.setVisible(on)
        if on and self.width() < 1000:  # as tall as the screen allows: the steps beside the map are a long column
            screen = self.screen()
            height = 680 if screen is None else max(680, min(960, screen.availableGeometry().height() - 120))
            self.resize(1180, height)

    def _build_plot(self) -> None:
        """Matrix-display setup: query 0 on top, no mouse panning, token labels as ticks."""
        plot = self.plot_item
        plot.addItem(self.mask_backdrop)
        self.mask_backdrop.setZValue(-1)
        plot.addItem(self.image_item)
        plot.addItem(self.paint_marks)
        plot.addItem(self.inspected_box)
        plot.invertY(True)
        plot.showAxis("top")
        plot.showAxis("right")
        plot.setMouseEnabled(x=False, y=False)
        plot.setMenuEnabled(False)
        plot.hideButtons()
        self.graphics.addItem(self.colorbar, row=0, col=1)

    def _build_layout(self) -> None:
        """Title, plot, the tool and export buttons on the left; the cell panel on the right."""
        self.paint_button, self.undo_button, self.redo_button = paint_buttons()
        self.paint_button.toggled.connect(self._on_paint_toggled)
        self.undo_button.clicked.connect(self.undo_requested)
        self.redo_button.clicked.connect(self.redo_requested)
        self.empty_label = QLabel()  # rows whose every key is masked: the model gives them zeros
        self.empty_label.setStyleSheet("color: #b26a00;")
        self.hint_label = QLabel(HINT)
        self.hint_label.setWordWrap(True)
        tools = QHBoxLayout()
        tools.addWidget(self.paint_button)
        tools.addWidget(self.undo_button)
        tools.addWidget(self.redo_button)
        tools.addStretch(1)
        buttons = exporters.export_buttons(
            self, "map", {"PNG": self.export_png, "SVG": self.export_svg, "CSV": self.export_csv}
        )
        left = QWidget()
        layout = QVBoxLayout(left)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.title_label)
        layout.addWidget(self.legend_label)
        layout.addWidget(self.graphics, 1)
        layout.addWidget(self.empty_label)
        layout.addLayout(tools)
        layout.addWidget(self.hint_label)  # a line of its own: beside the buttons it wrapped to a word per line
        layout.addLayout(buttons)
        self.splitter = QSplitter(Qt.Orientation.Horizontal)
        self.splitter.addWidget(left)
        self.splitter.addWidget(self.cell_panel)
        self.splitter.setSizes([640, 520])
        QVBoxLayout(self).addWidget(self.splitter)

    def _on_paint_toggled(self, on: bool) -> None:
        self.mouse.painting = on
        self.graphics.setCursor(Qt.CursorShape.CrossCursor if on else Qt.CursorShape.ArrowCursor)

    def set_painted(self, cells: frozenset[tuple[int, int]]) -> None:
        """Mark the painted cells of this kind with an x (they are also blank: masked)."""
        self._painted = frozenset(cells)
        x, y = painted_marks(self._painted, self._values.shape)
        self.paint_marks.setData(x=x, y=y)

    def painted(self) -> frozenset[tuple[int, int]]:
        return self._painted

    def set_history(self, can_undo: bool, can_redo: bool) -> None:
        """Enable Undo paint and Redo paint while there is a stroke for them."""
        self.undo_button.setEnabled(can_undo)
        self.redo_button.setEnabled(can_redo)

    def show_cell(self, cell: CellDecomposition[np.ndarray] | None) -> None:
        """Draw a CellDecomposition (numpy) in the panel, with this map's labels and its figure for the cell."""
        if cell is None:
            self.cell_panel.show_cell(None)
            self.inspected_box.setData([], [])
            return
        i, j = cell.query, cell.key
        self.inspected_box.setData([j, j + 1, j + 1, j, j], [i, i, i + 1, i + 1, i])
        inside = i < self._values.shape[0] and j < self._values.shape[1]
        value = float(self._shown[i, j]) if inside else None
        self.cell_panel.show_cell(cell, self._query_labels, self._key_labels, value, self._mode)

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
        self._caption = [
            title,
            f"input (queries): {' '.join(map(str, query_labels))}",
            f"keys: {' '.join(map(str, key_labels))}",
        ]
        self.title_label.setText(title)
        self.setWindowTitle(title or "Attention map")
        lo, hi = finite_range(self._shown)
        self.image_item.setImage(self._lut[colour_indices(self._shown, lo, hi)], autoLevels=False)
        if self.colorbar.levels() != (lo, hi):
            self.colorbar.setLevels((lo, hi))
        self._set_labels(tuple(map(str, query_labels)), tuple(map(str, key_labels)))
        empty = (
            [f"{i} '{query_labels[int(i)]}'" for i in np.flatnonzero(~valid.any(axis=1))]
            if valid.ndim == 2 and valid.size
            else []
        )
        self.empty_label.setText(
            f"Quer{'ies' if len(empty) > 1 else 'y'} {', '.join(empty)} see{'s' * (len(empty) == 1)}"
            " no key at all: the model gives such a row all-zero weights."
            if empty
            else ""
        )
        self.empty_label.setVisible(bool(empty))
        if shape_changed:
            self.mask_backdrop.set_rects([QRectF(0, 0, values.shape[1], values.shape[0])])
            self.plot_item.getViewBox().setRange(xRange=(0, values.shape[1]), yRange=(0, values.shape[0]), padding=0)

    def show_grid_map(self, maps: KindMaps, average: np.ndarray, layer: int, head: int, mode_text: str) -> None:
        """Show map (layer, head) of a grid's maps; head -1 is the head average, given as `average` (Tq, Tk)."""
        if head == AVG:
            name, values, valid = f"L{layer + 1} avg", average, ~np.isnan(average)
        else:
            name, values, valid = f"L{layer + 1} H{head + 1}", maps.values[layer, head], maps.valid
        title = f"{KIND_TITLES.get(maps.kind, maps.kind)} — {name} ({mode_text})"
        self.set_matrix(values, valid, maps.query_labels, maps.key_labels, title, tooltip_prefix=name)
        mode = next((key for key, text in MODE_TEXT.items() if text == mode_text), mode_text)
        legend = mode_legend(mode, pad_rows_attend(maps))
        self._caption = caption_lines(title, maps, legend)
        self.legend_label.setText(legend)
        self._mode = mode if mode in ("weights", "scores") else mode_text  # else: shown

    def _set_labels(self, query_labels: tuple[str, ...], key_labels: tuple[str, ...]) -> None:
        """Every token whole, else abbreviated (B, E, P: the axis title keys them), else none (TokenAxis); the
        opposite axes number the positions, as the hover text and the lessons do: on a digit source the row
        labelled '3' may be query 1."""
        self._query_labels, self._key_labels = query_labels, key_labels
        for side, labels in (("left", query_labels), ("bottom", key_labels)):
            self.plot_item.getAxis(side).set_tokens(labels)
        for side, labels in (("right", query_labels), ("top", key_labels)):
            self.plot_item.getAxis(side).set_tokens([str(k) for k in range(len(labels))])

    def displayed_matrix(self) -> np.ndarray:
        """The numbers shown, NaN where blank. Shape (Tq, Tk)."""
        return self._shown.copy()

    def tooltip_text_at(self, i: int, j: int) -> str:
        """Hover text of cell (i, j), same format as the grid."""
        return cell_text(
            self._prefix,
            i,
            j,
            self._query_labels[i],
            self._key_labels[j],
            float(self._values[i, j]),
            not bool(self._valid[i, j]),
        )

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
        with self._axes_for_export():
            return exporters.export_captioned_png(self.graphics.ci, path, width, self._caption)

    def export_svg(self, path: str | Path) -> Path:
        with self._axes_for_export():
            return exporters.export_captioned_svg(self.graphics.ci, path, self._caption)

    @contextmanager
    def _axes_for_export(self) -> Iterator[None]:
        """Axes too small for their tokens point to the caption's token lists: an exported image cannot be hovered."""
        with ExitStack() as stack:
            for side in ("left", "bottom", "right", "top"):
                stack.enter_context(self.plot_item.getAxis(side).hidden_note_as(LISTED_HINT))
            yield

    def export_csv(self, path: str | Path) -> Path:
        return export.save_matrix_csv(path, self._shown, self._query_labels, self._key_labels)
