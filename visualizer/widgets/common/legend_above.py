"""A plot's legend in a row of its own above the plot, never over the curves.

pyqtgraph's legend sits inside the view box: wherever it is anchored it covers some curve, and the corners it
suits best (the ends of curves that rise or fall) are where a learner looks for the latest value. This one is laid
out above the view box, its samples in line with the plot's left edge, in as many columns as the width allows.
"""

from __future__ import annotations

import math

import pyqtgraph as pg
from PySide6.QtWidgets import QSizePolicy

GAP_PX = 8  # between the legend and the plot's title or top edge
TITLE_SIZE = "11pt"  # as pyqtgraph draws a plot's title
SPACING_PX = 5  # pyqtgraph's default between a sample and its label, and between columns


def legend_above(
    widget: pg.PlotWidget,
    axis_px: int,
    row_px: int,
    rows: int = 1,
    columns: int = 1,
    title: str | None = None,
    **options: object,
) -> pg.LegendItem:
    """Put a new LegendItem above `widget`'s plot and return it (also as the plot item's `legend`, as addLegend does).

    axis_px fixes the left axis's width so the samples line up with the plot; `rows` rows of `row_px` are kept from
    the start (the plot moves only when `fit_columns` needs more of them). A `title` goes above the legend, where a
    plot's own title would sit between the legend and the curves it names.
    """
    item = widget.getPlotItem()
    item.getAxis("left").setWidth(axis_px)
    legend = pg.LegendItem(colCount=columns, verSpacing=0, **options)
    legend.layout.setContentsMargins(axis_px, 0, 0, 0)
    legend.setSizePolicy(QSizePolicy.Policy.Maximum, QSizePolicy.Policy.Fixed)  # entries side by side, at left
    legend.setFixedHeight(rows * row_px)
    stack = pg.GraphicsLayout()
    widget.setCentralItem(stack)  # takes the plot out of the view; the layout puts it back below the legend
    top = 0
    if title is not None:
        stack.addLabel(title, row=0, col=0, size=TITLE_SIZE)
        top = 1
    stack.addItem(legend, row=top, col=0)
    stack.addItem(item, row=top + 1, col=0)
    stack.layout.setRowStretchFactor(top + 1, 1)
    stack.layout.setRowSpacing(top, GAP_PX)
    item.legend = legend
    return legend


def fit_columns(legend: pg.LegendItem, width: float, axis_px: int, row_px: int) -> None:
    """The fewest rows that `width` allows for the widest entry, filled alike, and their height (at least one row,
    so the plot keeps its place while the legend is empty)."""
    entries = legend.items
    widest = max(
        (sample.boundingRect().width() + label.boundingRect().width() + 2 * SPACING_PX for sample, label in entries),
        default=1.0,
    )
    fits = max(1, min(len(entries), int((width - axis_px) // widest))) if entries else 1
    rows = max(1, math.ceil(len(entries) / fits))
    columns = max(1, math.ceil(len(entries) / rows))  # the rows filled alike: eight entries as 4 + 4, not 7 + 1
    height = rows * row_px
    if columns != legend.columnCount:  # asked at every resize: a legend laid out again moves the plot
        legend.setColumnCount(columns)
    if height != legend.maximumHeight():
        legend.setFixedHeight(height)
