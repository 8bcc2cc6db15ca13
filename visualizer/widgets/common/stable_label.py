"""Labels whose new text repaints only themselves: no layout pass, no window-wide repaint per keystroke."""

from __future__ import annotations

from PySide6.QtCore import QSize, Qt
from PySide6.QtGui import QAction, QGuiApplication, QResizeEvent
from PySide6.QtWidgets import QLabel, QSizePolicy, QWidget


class LabelSlot(QWidget):
    """A one-line QLabel placed by hand in a slot of fixed height that stretches horizontally.

    `QLabel.setText` calls `updateGeometry()`; inside a layout that invalidates every ancestor layout, and on
    every keystroke the main window then re-laid out and repainted all of itself. Here
    the label has no layout: its parent takes the LayoutRequest and ignores it. Text too long is clipped, so
    callers put the whole text in the tooltip.
    """

    label_class: type[QLabel] = QLabel  # a subclass may paint its text its own way

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.label = self.label_class(self)
        self.setFixedHeight(self.label.fontMetrics().height() + 6)
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed)

    def sizeHint(self) -> QSize:  # Qt's name
        return QSize(200, self.height())

    def resizeEvent(self, event: QResizeEvent) -> None:  # Qt's name
        self.label.setGeometry(self.rect())
        super().resizeEvent(event)


class ElidedLabelSlot(LabelSlot):
    """A LabelSlot whose text ends in "…" where it does not fit; with a `copy_title`, right-click copies it whole.

    Why not a selectable label clipped at the edge: selection keeps a text document of the whole line, laid out again
    on every keystroke, and a line cut mid-token would not say that more follows.
    """

    def __init__(self, copy_title: str | None = None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._full = ""
        self.copy_action: QAction | None = None
        if copy_title is not None:
            self.copy_action = QAction(copy_title, self.label)
            self.copy_action.triggered.connect(lambda: QGuiApplication.clipboard().setText(self._full))
            self.label.addAction(self.copy_action)
            self.label.setContextMenuPolicy(Qt.ContextMenuPolicy.ActionsContextMenu)

    def set_text(self, text: str) -> None:
        """Show `text`, elided to the slot's width (full_text() keeps it whole)."""
        self._full = text
        self.label.setAccessibleDescription(text)  # a screen reader gets the whole line
        self._elide()

    def full_text(self) -> str:
        return self._full

    def resizeEvent(self, event: QResizeEvent) -> None:  # Qt's name
        super().resizeEvent(event)
        self._elide()

    def _elide(self) -> None:
        width = max(self.label.contentsRect().width() - 4, 0)  # a little room: the last glyph never touches the edge
        self.label.setText(self.label.fontMetrics().elidedText(self._full, Qt.TextElideMode.ElideRight, width))


def fix_label_size(label: QLabel, widest_text: str) -> QLabel:
    """Give a label the fixed size of its widest expected text, so updates never re-lay out its parent.

    A widget whose minimum and maximum sizes are equal does not invalidate its parent's layout on
    `updateGeometry()` (QWidget's rule); the status bar's forward-time label otherwise relaid the status bar
    out on every keystroke.
    """
    metrics = label.fontMetrics()
    margins = label.contentsMargins()
    label.setFixedSize(
        metrics.horizontalAdvance(widest_text) + margins.left() + margins.right() + 4,
        metrics.height() + margins.top() + margins.bottom() + 2,
    )
    return label


class WrapLabelSlot(LabelSlot):
    """A LabelSlot whose label wraps, and which is as tall as the most lines its texts have needed at its present
    width.

    A legend whose text changes with the input (a note that token labels are too small comes and goes at some
    lengths) would otherwise wrap to one line more, then one less, on alternate keystrokes: everything below it
    jumped, and the window was laid out and painted again each time. Only a taller text, or a new width, changes
    the slot's height; a new width also lets it shrink back to what its text needs.
    """

    def __init__(self, text: str = "", parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.label.setTextFormat(Qt.TextFormat.PlainText)
        self.label.setWordWrap(True)
        self.label.setAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop)  # room to spare goes below
        self._width = -1  # the width the slot's height was fitted to
        self.setText(text)

    def text(self) -> str:
        return self.label.text()

    def setText(self, text: str) -> None:  # QLabel's name: the slot stands where a label stood
        if text != self.label.text():
            self.label.setText(text)
            self._fit(keep=True)

    def resizeEvent(self, event: QResizeEvent) -> None:  # Qt's name
        super().resizeEvent(event)
        if event.size().width() != self._width:
            self._fit(keep=False)

    def _fit(self, keep: bool) -> None:
        width = self.width()
        needed = self.label.heightForWidth(width) if width > 0 else self.label.sizeHint().height()
        if keep and width == self._width:
            needed = max(needed, self.maximumHeight())
        self._width = width
        if needed != self.maximumHeight():
            self.setFixedHeight(needed)
        self.label.setGeometry(self.rect())
