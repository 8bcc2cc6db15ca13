"""The legend under the token chips: what their colours and the dashed, underlined border mean."""

from __future__ import annotations

from PySide6.QtCore import QRect, Qt
from PySide6.QtGui import QColor, QFont, QPainter, QPaintEvent, QPen
from PySide6.QtWidgets import QWidget

from .chip import CHIP_COLOURS
from .token_chips import GAP, PAD

LEGEND = (
    ("correct", False, "right"),
    ("wrong", False, "wrong"),
    ("unknown", False, "no expectation"),
    ("expected", False, "expected"),
    ("unknown", True, "forced by you"),
)
LEGEND_WIDTH = 380  # wraps into rows that fit the narrowest control column
TITLE = "Legend:"  # without it the row of coloured words reads as a row of buttons


class ChipLegend(QWidget):
    """What the chip colours and the dashed, underlined border mean, painted with the chips' own colours."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        metrics = self.fontMetrics()
        height = metrics.height() + 6
        self._items: list[tuple[QRect, str, bool, str]] = []
        indent = metrics.horizontalAdvance(TITLE) + 2 * GAP
        self._title = QRect(0, 0, indent, height)
        x, y = indent, 0
        for state, forced, text in LEGEND:
            w = metrics.horizontalAdvance(text) + 2 * PAD
            if x > indent and x + w > LEGEND_WIDTH:
                x, y = indent, y + height + GAP
            self._items.append((QRect(x, y, w, height), state, forced, text))
            x += w + GAP
        self.setFixedSize(LEGEND_WIDTH, y + height + 1)
        self._forced_font = QFont(self.font())
        self._forced_font.setUnderline(True)
        self.setToolTip(
            "Output chips: green = matches the expected token, red = differs, grey = no expected token. "
            "A dashed, underlined chip is a token you forced."
        )

    def texts(self) -> list[str]:
        return [text for _, _, _, text in self._items]

    def paintEvent(self, event: QPaintEvent) -> None:  # Qt's name
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        painter.drawText(self._title, Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft, TITLE)
        for rect, state, forced, text in self._items:
            background, colour = CHIP_COLOURS[state]
            painter.setBrush(QColor(background))
            painter.setPen(QPen(QColor("#000000"), 2, Qt.PenStyle.DashLine) if forced else Qt.PenStyle.NoPen)
            painter.drawRoundedRect(rect.adjusted(1, 1, -1, -1), 4, 4)
            painter.setPen(QColor(colour))
            painter.setFont(self._forced_font if forced else self.font())
            painter.drawText(rect, Qt.AlignmentFlag.AlignCenter, text)
        painter.end()
