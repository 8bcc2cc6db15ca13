"""A plot's legend in a row of its own above the plot, never over the curves.

pyqtgraph's legend sits inside the view box: wherever it is anchored it covers some curve, and the corners it
suits best (the ends of curves that rise or fall) are where a learner looks for the latest value. This one is laid
out above the view box, its samples in line with the plot's left edge, in as many columns as the width allows.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import pyqtgraph as pg
from PySide6.QtGui import QResizeEvent
from PySide6.QtWidgets import QSizePolicy, QWidget

GAP_PX = 8  # between the legend and the plot's title or top edge
TITLE_SIZE = "11pt"  # as pyqtgraph draws a plot's title
SPACING_PX = 5  # the legend's space between a sample and its label, and between columns (pyqtgraph's default)


class FixedLegend(pg.LegendItem):
    """A legend that stays in its layout cell: pyqtgraph's can be dragged, and a dragged one is anchored over the
    curves for good."""

    def hoverEvent(self, ev: object) -> None:  # pyqtgraph's name
        pass

    def mouseDragEvent(self, ev: object) -> None:  # pyqtgraph's name
        ev.ignore()  # type: ignore[attr-defined]


class LegendAbovePlot(pg.PlotWidget):
    """A PlotWidget whose legend (`legend`, also the plot item's, as addLegend leaves it) sits in a row above the
    plot, its samples in line with the plot's left edge, refitted to the width before the plot is laid out."""

    _fit: tuple[int, int, int, int] | None = None  # (axis_px, row_px, max_columns, rows) once built: a resize during
    # pyqtgraph's own __init__ comes before the legend exists

    def __init__(
        self,
        axis_px: int,
        row_px: int,
        rows: int = 1,
        max_columns: int = 0,
        title: str | None = None,
        legend_options: Mapping[str, object] | None = None,
        parent: QWidget | None = None,
        **plot_options: object,
    ) -> None:
        """axis_px fixes the left axis's width; `rows` rows of at least `row_px` are kept from the start, so the
        plot moves only when the entries need more; `max_columns` (0: any) caps the entries per row. A `title` goes
        above the legend: a plot's own title would sit between the legend and the curves it names."""
        super().__init__(parent, **plot_options)
        item = self.getPlotItem()
        item.getAxis("left").setWidth(axis_px)
        self.legend = FixedLegend(
            colCount=max(1, max_columns), verSpacing=0, horSpacing=SPACING_PX, **(legend_options or {})
        )
        self.legend.layout.setContentsMargins(axis_px, 0, 0, 0)
        self.legend.setSizePolicy(QSizePolicy.Policy.Maximum, QSizePolicy.Policy.Fixed)  # side by side, at left
        self.legend.setFixedHeight(rows * row_px)
        stack = pg.GraphicsLayout()
        self.setCentralItem(stack)  # takes the plot out of the view; the layout puts it back below the legend
        top = 0
        if title is not None:
            stack.addLabel(title, row=0, col=0, size=TITLE_SIZE)
            top = 1
        stack.addItem(self.legend, row=top, col=0)
        stack.addItem(item, row=top + 1, col=0)
        stack.layout.setRowStretchFactor(top + 1, 1)
        stack.layout.setRowSpacing(top, GAP_PX)
        item.legend = self.legend
        self._fit = (axis_px, row_px, max_columns, rows)
        self._export_whole_view()

    def _export_whole_view(self) -> None:
        """Right-click › Export... starts from the whole view, legend and title included.

        pyqtgraph preselects the plot item under the mouse, and this legend lies outside it: exported alone, the
        curves could not be named. Its dialog walks up from the item it is handed to the first plot or view box and
        falls back to the entire scene, so it is handed the layout that holds legend and plot."""
        scene, stack = self.scene(), self.centralWidget
        own = scene.getContextMenus  # the scene asks itself for its menu through this attribute on every right-click

        def menus(event: object) -> object:
            found = own(event)
            scene.contextMenuItem = stack
            return found

        scene.getContextMenus = menus

    def refit_legend(self) -> None:
        """Columns and rows for the entries now and this width (call after changing the entries)."""
        if self._fit is None:
            return
        axis_px, row_px, max_columns, rows = self._fit
        if fit_columns(self.legend, self.width(), axis_px, row_px, max_columns, rows):
            self.centralWidget.setGeometry(self.range)  # a narrower legend lets the layout shrink back to the view

    def close(self) -> bool:  # Qt's name
        """Take the legend and plot out of the layout before pyqtgraph clears the scene: deleting graphics widgets
        held by a layout through scene.clear() crashes PySide (pyqtgraph's PlotItem.close works around the same)."""
        self.getPlotItem().close()  # needs the scene; PlotWidget.close calling it again does nothing
        stack = self.centralWidget
        if isinstance(stack, pg.GraphicsLayout):
            stack.clear()
        return super().close()

    def resizeEvent(self, ev: QResizeEvent) -> None:  # Qt's name
        self.refit_legend()  # first: the view then lays the plot out at the new size, legend included
        super().resizeEvent(ev)


def fit_columns(
    legend: pg.LegendItem, width: float, axis_px: int, row_px: int, max_columns: int = 0, min_rows: int = 1
) -> bool:
    """The fewest rows that `width` allows for the widest entry (and at most `max_columns` columns, 0: any), filled
    alike, and their height: at least `min_rows` rows, so the plot keeps its place while the legend is empty. A
    legend wider than the view would widen the layout past it and cut the plot's right edge, where curves end.
    True when the legend changed."""
    entries = legend.items
    stack = legend.parentItem()
    left, _, right, _ = stack.layout.getContentsMargins() if stack is not None else (0.0, 0.0, 0.0, 0.0)
    room = width - left - right - axis_px + SPACING_PX  # n columns take n widths less one trailing space
    widest = max(
        (s.boundingRect().width() + t.boundingRect().width() + 2 * SPACING_PX for s, t in entries), default=1.0
    )
    fits = max(1, int(room // widest)) if entries else 1
    if max_columns:
        fits = min(fits, max_columns)
    rows = max(1, math.ceil(len(entries) / fits))
    columns = max(1, math.ceil(len(entries) / rows))  # the rows filled alike: eight entries as 4 + 4, not 7 + 1
    tallest = max((max(s.boundingRect().height(), t.boundingRect().height()) for s, t in entries), default=0.0)
    height = max(rows, min_rows) * max(row_px, math.ceil(tallest))  # a row never shorter than its label
    changed = False
    if columns != legend.columnCount:  # asked at every resize: a legend laid out again moves the plot
        legend.setColumnCount(columns)
        changed = True
    if height != legend.maximumHeight():
        legend.setFixedHeight(height)
        changed = True
    return changed
