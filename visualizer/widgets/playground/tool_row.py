"""The grid tools (Restore all heads, the colour scale) beside the view choice, or on a row of their own when the
grids' column is too narrow for both (at 1280 px with the Lessons panel open). The Prediction line has a row of its
own either way, so no button squeezes it to nothing.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject
from PySide6.QtWidgets import QBoxLayout, QHBoxLayout, QWidget


class ToolRow(QObject):
    """Keeps `box` (the tools) at the end of `view_row` while `column` is wide enough, else in `below_row`."""

    def __init__(self, tools: list[QWidget], column: QWidget, view_row: QBoxLayout, below_row: QBoxLayout) -> None:
        super().__init__(column)
        self.box = QWidget()
        layout = QHBoxLayout(self.box)
        layout.setContentsMargins(0, 0, 0, 0)
        for widget in tools:
            layout.addWidget(widget)
        layout.addStretch(1)
        self.box.setMinimumWidth(1)  # no say in the column's minimum width: a narrow column moves it instead
        self._column, self._view_row, self._below_row = column, view_row, below_row
        self.below = False  # the tools sit on the row under the view choice
        view_row.addWidget(self.box)
        column.installEventFilter(self)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # Qt's name
        if watched is self._column and event.type() == QEvent.Type.Resize:
            self.place(self._column.width())
        return False

    def place(self, width: int) -> None:
        """Beside the view choice when the row with the tools fits `width`, else on the row below."""
        tools = self._view_row.spacing() + self.box.sizeHint().width()
        row = self._view_row.sizeHint().width() - (0 if self.below else tools)
        together = row + tools
        below = together > width
        if below == self.below:
            return
        self.below = below
        (self._view_row if below else self._below_row).removeWidget(self.box)
        (self._below_row if below else self._view_row).addWidget(self.box)
