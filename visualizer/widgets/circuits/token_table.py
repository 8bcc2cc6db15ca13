"""A token x token circuit table (QK or OV): two significant digits a cell, the full value on hover, a diverging colour.

Render only. White is 0, green positive, red negative, darkest at the table's largest |value|, so a learner reads
the sign and the pattern (a diagonal, a column) at a glance; the diagonal's numbers are bold (the same token twice).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from PySide6.QtCore import Qt
from PySide6.QtGui import QBrush, QColor, QFont, QResizeEvent
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QTableWidget, QTableWidgetItem, QWidget

from visualizer.widgets.causal.effect_tables import effect_colour

from .table_fit import spread_columns

Tip = Callable[[str, str, float], str]  # (row token, column token, value) -> the cell's tooltip


def cell_text(value: float) -> str:
    """Two significant digits or more, as narrow as that allows: "-3.4", "43", "132" (never "-0.0")."""
    places = 1 if abs(value) < 9.95 else 0  # 9.96 would round to "10.0"
    return f"{round(value, places) + 0.0:.{places}f}"


class TokenTable(QTableWidget):
    """Rows and columns named by tokens; `set_table` fills it, an empty matrix clears it."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.setSelectionMode(QAbstractItemView.SelectionMode.NoSelection)
        self.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Fixed)  # spread_columns sets them
        self.horizontalHeader().setMinimumSectionSize(8)
        self.verticalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Stretch)
        self.verticalHeader().setMinimumSectionSize(8)
        self.scale = 0.0  # the largest |value|: the darkest colour
        smaller = QFont(self.font())
        smaller.setPointSizeF(smaller.pointSizeF() - 1)  # 13 columns of "-14.6" beside the side panels at 1280 x 800
        self.setFont(smaller)

    def set_table(self, matrix: np.ndarray, row_tokens: Sequence[str], column_tokens: Sequence[str], tip: Tip) -> None:
        """matrix (rows, columns), labelled by the tokens; tip(row token, column token, value) gives each tooltip."""
        self.clearContents()
        rows, columns = matrix.shape if matrix.size else (0, 0)
        self.setRowCount(rows)
        self.setColumnCount(columns)
        self.setHorizontalHeaderLabels(list(column_tokens[:columns]))
        self.setVerticalHeaderLabels(list(row_tokens[:rows]))
        self.scale = float(np.abs(matrix).max()) if matrix.size else 0.0
        bold = QFont(self.font())
        bold.setBold(True)
        for i in range(rows):
            for j in range(columns):
                value = float(matrix[i, j])
                item = QTableWidgetItem(cell_text(value))
                item.setTextAlignment(Qt.AlignmentFlag.AlignCenter)
                item.setBackground(QBrush(effect_colour(value / self.scale if self.scale > 0 else 0.0)))
                item.setForeground(QBrush(QColor(0, 0, 0)))
                item.setToolTip(tip(row_tokens[i], column_tokens[j], value))
                if i == j:
                    item.setFont(bold)
                self.setItem(i, j, item)
        spread_columns(self)

    def resizeEvent(self, event: QResizeEvent) -> None:  # Qt's name
        super().resizeEvent(event)
        spread_columns(self)
