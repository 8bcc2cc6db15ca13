"""The control column: titled sections the user can fold away to make room for the others, in a scroll area."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFrame, QScrollArea, QSizePolicy, QStyle, QToolButton, QVBoxLayout, QWidget

MIN_COLUMN_WIDTH = 440  # the control column is at least this wide


class Section(QFrame):
    """A header button (arrow and title) over a body; clicking the header shows or hides the body."""

    def __init__(self, title: str, body: QWidget, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.body = body
        self.header = QToolButton()
        self.header.setText(title)
        self.header.setCheckable(True)
        self.header.setChecked(True)
        self.header.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.header.setArrowType(Qt.ArrowType.DownArrow)
        self.header.setAutoRaise(True)
        self.header.setStyleSheet("QToolButton { font-weight: bold; border: none; }")
        self.header.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.header.setToolTip(f"Show or hide the {title} section")
        self.header.toggled.connect(self.set_expanded)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(4, 2, 4, 4)
        lay.setSpacing(2)
        lay.addWidget(self.header)
        lay.addWidget(body)

    def set_expanded(self, expanded: bool) -> None:
        """Show (True) or fold away (False) the body; the header stays."""
        self.header.setChecked(expanded)
        self.header.setArrowType(Qt.ArrowType.DownArrow if expanded else Qt.ArrowType.RightArrow)
        self.body.setVisible(expanded)


def scroll_column(column: QWidget) -> QScrollArea:
    """The control column in a scroll area wide enough for its widest row with the scroll bar shown: it scrolls
    vertically, never sideways, and no row is cut off at the right."""
    scroll = QScrollArea()
    scroll.setWidget(column)
    scroll.setWidgetResizable(True)
    bar = scroll.style().pixelMetric(QStyle.PixelMetric.PM_ScrollBarExtent)
    scroll.setMinimumWidth(max(MIN_COLUMN_WIDTH, column.minimumSizeHint().width() + 2 * scroll.frameWidth() + bar))
    scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
    return scroll
