"""A sentence in the middle of a view that has nothing to show yet.

Tables and map areas that fill in only after a run (Analyse heads, Patch, Analyse) would otherwise be plain white boxes
before it, which a learner reads as "broken" or "the model has nothing here". Each says what fills it and by which
button; the line above the view says how to run it.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QFont, QPainter, QPaintEvent, QPalette
from PySide6.QtWidgets import QTableWidget, QWidget

MARGIN = 12  # px between the sentence and the view's edges


def draw_empty_hint(viewport: QWidget, text: str) -> None:
    """Paint `text` centred and word-wrapped in `viewport`, in italics and the palette's placeholder colour (as an
    empty field's placeholder is drawn), so it never reads as a value or as a greyed cell."""
    painter = QPainter(viewport)
    painter.setFont(hint_font(viewport))
    painter.setPen(viewport.palette().color(QPalette.ColorRole.PlaceholderText))
    area = viewport.rect().adjusted(MARGIN, MARGIN, -MARGIN, -MARGIN)
    painter.drawText(area, int(Qt.AlignmentFlag.AlignCenter | Qt.TextFlag.TextWordWrap), text)
    painter.end()


def hint_font(viewport: QWidget) -> QFont:
    """The viewport's font in italics: a sentence about the view, set apart from the values it will hold."""
    font = QFont(viewport.font())
    font.setItalic(True)
    return font


class EmptyHint:
    """Mixin for a scroll-area view (a table, a graphics view): its hint, drawn over its viewport while `is_empty`.

    Put it before the Qt class in the bases: its paintEvent draws the view, then the sentence over it.
    """

    _hint = ""

    def hint(self) -> str:
        """The sentence drawn while the view is empty ("" draws nothing)."""
        return self._hint

    def set_hint(self, text: str) -> None:
        """A new sentence (a run started or ended): repainted now, as an empty view has nothing else to repaint."""
        if text != self._hint:
            self._hint = text
            self.viewport().update()  # type: ignore[attr-defined]

    def is_empty(self) -> bool:
        raise NotImplementedError

    def paintEvent(self, event: QPaintEvent) -> None:  # Qt's name
        super().paintEvent(event)  # type: ignore[misc]
        if self._hint and self.is_empty():
            draw_empty_hint(self.viewport(), self._hint)  # type: ignore[attr-defined]


class HintTable(EmptyHint, QTableWidget):
    """A table that says what fills it while it has no cells."""

    def __init__(self, hint: str = "", parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._hint = hint

    def is_empty(self) -> bool:
        """No cell to show: rows without columns (or the reverse) draw nothing either."""
        return self.rowCount() == 0 or self.columnCount() == 0
