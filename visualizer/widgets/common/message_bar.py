"""A status bar whose passing message ends with "…" a gap short of the permanent labels, never running into them.

QStatusBar clips a long message at the first permanent widget, so its last visible letters abut the model summary
and read as part of it ("…until it is tra" + "rope PE, …"). This bar cuts the message with "…" a gap before them, at
every width, and shows the whole message as the bar's tooltip; `currentMessage()` stays whole.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QRect, Qt
from PySide6.QtGui import QHelpEvent, QPainter, QPaintEvent
from PySide6.QtWidgets import QSizeGrip, QStatusBar, QStyle, QStyleOption, QToolTip, QWidget

LEFT_PX = 6  # where QStatusBar starts its message
GAP_PX = 16  # between the message's end and the first permanent label


class MessageBar(QStatusBar):
    """QStatusBar with the message elided to the room left of the permanent widgets."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._cut = False  # the painted message was shortened: the tooltip gives it whole

    def _permanent(self) -> list[QWidget]:
        """The widgets on show beside a message: Qt hides the others while one is shown."""
        children = self.findChildren(QWidget, options=Qt.FindChildOption.FindDirectChildrenOnly)
        return [w for w in children if w.isVisible() and not isinstance(w, QSizeGrip)]

    def message_rect(self) -> QRect:
        """Where the message is drawn: from the left edge to GAP_PX before the first visible permanent widget."""
        right = min((w.x() - GAP_PX for w in self._permanent()), default=self.width() - 12)
        return QRect(LEFT_PX, 0, max(0, right - LEFT_PX), self.height())

    def shown_message(self) -> str:
        """The message as painted: whole, or cut with "…" to fit message_rect()."""
        rect = self.message_rect()
        return self.fontMetrics().elidedText(self.currentMessage(), Qt.TextElideMode.ElideRight, rect.width())

    def paintEvent(self, event: QPaintEvent) -> None:  # Qt's name
        if not self.currentMessage():
            self._cut = False
            super().paintEvent(event)
            return
        painter = QPainter(self)
        option = QStyleOption()
        option.initFrom(self)
        self.style().drawPrimitive(QStyle.PrimitiveElement.PE_PanelStatusBar, option, painter, self)
        for widget in self._permanent():  # the frames QStatusBar draws around its items
            frame = QStyleOption()
            frame.rect, frame.palette = widget.geometry().adjusted(-2, -1, 2, 1), self.palette()
            self.style().drawPrimitive(QStyle.PrimitiveElement.PE_FrameStatusBarItem, frame, painter, widget)
        shown = self.shown_message()
        self._cut = shown != self.currentMessage()
        painter.setPen(self.palette().windowText().color())
        painter.drawText(
            self.message_rect(),
            int(Qt.AlignmentFlag.AlignLeading | Qt.AlignmentFlag.AlignVCenter | Qt.TextFlag.TextSingleLine),
            shown,
        )

    def event(self, event: QEvent) -> bool:  # Qt's name
        if event.type() == QEvent.Type.ToolTip and self._cut and self.currentMessage():
            assert isinstance(event, QHelpEvent)
            QToolTip.showText(event.globalPos(), self.currentMessage(), self)
            return True
        return super().event(event)
