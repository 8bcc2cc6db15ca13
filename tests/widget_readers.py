"""Test readers of what a widget shows, through its public Qt/pyqtgraph API (item texts, bar items, labels)."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF, QRectF
from PySide6.QtGui import QColor, QTextDocument
from PySide6.QtWidgets import QPushButton

FORCE_BUTTON = "force_button"  # the objectName DecoderPanel gives its force buttons


def table_row_texts(table, row: int) -> list[str]:
    """The texts of one QTableWidget row, left to right."""
    return [table.item(row, c).text() for c in range(table.columnCount())]


def table_cell_text(table, row: int, column: int) -> str:
    """The text of one QTableWidget cell ("" where the cell is empty)."""
    item = table.item(row, column)
    return "" if item is None else item.text()


def badge_corners(badges) -> dict[tuple[int, int], QPointF]:
    """(layer, head) -> the atlas point each role badge stands on: its map's top-right corner (the badge is drawn in
    the strip just above it)."""
    texts = badges.texts()  # places the badges first where a frame arrived while the grid was hidden
    return dict(zip(texts, (corner for corner, _ in badges.layer.badges())))


def bar_items(plot: pg.PlotWidget) -> list[pg.BarGraphItem]:
    """The bar items drawn in a plot, in the order they were added."""
    return [item for item in plot.getPlotItem().items if isinstance(item, pg.BarGraphItem)]


def bar_heights(chart: pg.PlotWidget, index: int = 0) -> np.ndarray:
    """The heights of the bars of series `index` (its `index`-th bar item)."""
    return np.asarray(bar_items(chart)[index].opts["height"], np.float64)


def candidate_widths(chart: pg.PlotWidget) -> np.ndarray:
    """The lengths of a candidate chart's horizontal bars (the probabilities), top row first."""
    (bars,) = bar_items(chart)
    return np.asarray(bars.opts["width"], np.float64)


def candidate_rect(chart: pg.PlotWidget, index: int) -> QRectF:
    """Horizontal bar `index` of a candidate chart in view (data) coordinates, as its bar item draws it."""
    (bars,) = bar_items(chart)
    opts, height = bars.opts, float(bars.opts["height"])
    return QRectF(float(opts["x0"][index]), float(opts["y"][index]) - height / 2, float(opts["width"][index]), height)


def force_buttons(panel) -> list[QPushButton]:
    """The decoder panel's force buttons on show, best candidate first (the order they were made and laid out)."""
    return [b for b in panel.findChildren(QPushButton, FORCE_BUTTON) if not b.isHidden()]


def chip_states(panel) -> list[tuple[str, str]]:
    """(label, state) per output chip of a decoder panel; state is "correct", "wrong" or "unknown"."""
    return [(chip.text, chip.state) for chip in panel.token_chips.chips(0)]


def plain_text(label) -> str:
    """What a rich-text QLabel reads as, without its markup."""
    doc = QTextDocument()
    doc.setHtml(label.text())
    return doc.toPlainText()


def step_texts(panel) -> dict[str, str]:
    """What each label of a cell panel says (header, every step, the hovered dimension), as plain text."""
    labels = {"header": panel.header, **panel.steps, "dimension": panel.dim_info}
    return {name: plain_text(label) for name, label in labels.items()}


def axis_title(axis: pg.AxisItem) -> str:
    """The title a pyqtgraph axis shows, as plain text ("" where its title row is hidden or blank)."""
    if not axis.label.isVisibleTo(axis):
        return ""
    return axis.label.toPlainText().strip()  # pyqtgraph appends a space (the units' place); a blank title is &nbsp;


def shown_groups(dialog) -> list[tuple[str, list[tuple[str, str]]]]:
    """What a ShortcutDialog shows, read from its labels in layout order: (heading, [(keys, what)])."""
    groups: list[tuple[str, list[tuple[str, str]]]] = []
    content = dialog.scroll_area.widget()
    grid = content.layout() if content is not None else None
    for row in range(grid.rowCount() if grid is not None else 0):
        first, second = grid.itemAtPosition(row, 0), grid.itemAtPosition(row, 1)
        label = first.widget() if first is not None else None
        if label is None:
            continue
        if label.objectName() == "shortcut_heading":
            groups.append((label.text(), []))
        elif groups and second is not None:
            groups[-1][1].append((label.text(), second.widget().text()))
    return groups


def legend_curves(plot: pg.PlotWidget) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """The curves a plot's legend names, by the name shown, with the data each one draws."""
    return {label.text: sample.item.getData() for sample, label in plot.getPlotItem().legend.items}


def near_colour(seen: QColor, colour: QColor, tolerance: int) -> bool:
    """Whether a pixel shows `colour`, within `tolerance` per channel (antialiased edges and dashes blend)."""
    return max(abs(seen.red() - colour.red()), abs(seen.green() - colour.green()), abs(seen.blue() - colour.blue())) < (
        tolerance
    )
