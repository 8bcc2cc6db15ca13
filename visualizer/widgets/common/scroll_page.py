"""A page that scrolls as a whole when the window is shorter than its content needs.

On a 1280x800 laptop a tab's plots and tables would otherwise be squeezed to strips: a plot a few pixels high, or a
table showing four of its thirteen rows, reads as missing data. Its widgets set the height they need to stay
readable (their minimum height); below that the page scrolls, never a table inside it.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFrame, QScrollArea, QWidget


class ScrollPage(QScrollArea):
    """`content` filling the page's width; a vertical scroll bar appears only when the page is shorter than the
    content's minimum height (a horizontal one only below its minimum width)."""

    def __init__(self, content: QWidget, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("scroll_page")
        self.setWidget(content)
        self.setWidgetResizable(True)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAsNeeded)
        self.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAsNeeded)
