"""A coloured frame drawn over the widget a lesson step talks about; the mouse passes through it to the widget."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtGui import QColor, QPainter, QPaintEvent, QPen
from PySide6.QtWidgets import QWidget
from shiboken6 import Shiboken

FRAME_COLOUR = QColor("#ff8c00")  # orange: apart from the maps' colormaps and the white hover outline
FRAME_WIDTH = 3


class FrameOverlay(QWidget):
    """Sits on top of its target as a transparent child, follows its size, and paints only a frame."""

    def __init__(self, target: QWidget) -> None:
        super().__init__(target)
        self.target = target
        self.setAttribute(Qt.WidgetAttribute.WA_TransparentForMouseEvents)
        self.setAttribute(Qt.WidgetAttribute.WA_NoSystemBackground)
        self.setObjectName("lesson highlight")
        self.setGeometry(target.rect())
        target.installEventFilter(self)
        self.raise_()
        self.show()

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # Qt's name
        if event.type() == QEvent.Type.Resize:
            self.setGeometry(self.target.rect())
        elif event.type() == QEvent.Type.ChildAdded:
            self.raise_()  # a child added later (a grid's plot) would cover the frame
        return False

    def paintEvent(self, _event: QPaintEvent) -> None:  # Qt's name
        painter = QPainter(self)
        painter.setPen(QPen(FRAME_COLOUR, FRAME_WIDTH))
        half = FRAME_WIDTH // 2
        painter.drawRect(self.rect().adjusted(half, half, -half - 1, -half - 1))


class Highlighter:
    """At most one frame at a time: on the widget named by the current step, or none."""

    def __init__(self) -> None:
        self.overlay: FrameOverlay | None = None

    def show_on(self, target: QWidget | None) -> None:
        self.clear()
        if target is not None:
            self.overlay = FrameOverlay(target)

    def clear(self) -> None:
        if self.overlay is not None and Shiboken.isValid(self.overlay):  # gone with its target otherwise
            self.overlay.target.removeEventFilter(self.overlay)
            self.overlay.deleteLater()
        self.overlay = None
