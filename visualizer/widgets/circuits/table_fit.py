"""Widths that fit a table's text: a side table as wide as its columns, token columns as wide as their numbers.

A number or a token cut to "…" would be misread; a column much wider than its text wastes the room the other
panels need at 1280 x 800.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QFont, QFontMetrics
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QTableWidget, QTableWidgetItem

CELL_PAD, HEADER_PAD = 9, 10  # pixels beside a cell's or a header's text: Qt's margins (3 + 3) and a little air


def make_side_table(table: QTableWidget, tip: str) -> None:
    """A read-only list picked one row at a time, rows as tall as a line, as wide as its columns (fit_width)."""
    table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
    table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
    table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
    table.verticalHeader().setVisible(False)
    table.verticalHeader().setDefaultSectionSize(table.fontMetrics().height() + 6)
    table.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
    table.setToolTip(tip)


def drawn_font(table: QTableWidget, item: QTableWidgetItem) -> QFont:
    """The font a cell is drawn in: its own when it has one (the bold diagonal), else the table's."""
    font = item.data(Qt.ItemDataRole.FontRole)
    return font if isinstance(font, QFont) else table.font()


def natural_widths(table: QTableWidget) -> list[int]:
    """Each column's width for its widest cell (in that cell's own font) and its header."""
    header = table.horizontalHeader()
    widths = []
    for column in range(table.columnCount()):
        title = table.horizontalHeaderItem(column)
        width = header.fontMetrics().horizontalAdvance(title.text() if title else "") + HEADER_PAD
        for row in range(table.rowCount()):
            item = table.item(row, column)
            if item is not None:
                width = max(width, QFontMetrics(drawn_font(table, item)).horizontalAdvance(item.text()) + CELL_PAD)
        widths.append(width)
    return widths


def fit_width(table: QTableWidget, stretch: int) -> None:
    """Columns at their natural widths (`stretch` takes the room left over); the table at least as wide as them,
    the vertical scroll bar's room included."""
    header = table.horizontalHeader()
    widths = natural_widths(table)
    for column, width in enumerate(widths):
        mode = QHeaderView.ResizeMode.Stretch if column == stretch else QHeaderView.ResizeMode.Fixed
        header.setSectionResizeMode(column, mode)
        if column != stretch:
            table.setColumnWidth(column, width)
    extra = 2 * table.frameWidth() + table.verticalScrollBar().sizeHint().width()
    if table.verticalHeader().isVisible():
        extra += table.verticalHeader().sizeHint().width()
    table.setMinimumWidth(sum(widths) + extra)


def spread_columns(table: QTableWidget) -> None:
    """Columns at their natural widths, the room left over shared evenly (none left: the table scrolls)."""
    widths = natural_widths(table)
    if not widths:
        return
    spare = max(0, table.viewport().width() - sum(widths))
    for column, width in enumerate(widths):
        table.setColumnWidth(column, width + spare // len(widths))
