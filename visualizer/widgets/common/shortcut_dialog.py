"""Help > Keyboard shortcuts (F1): every key, grouped under where it works, in a window that fits the screen."""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import QRect, Qt
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QGridLayout,
    QLabel,
    QScrollArea,
    QVBoxLayout,
    QWidget,
)

INTRO = (
    "Keys under a tab work while that tab is shown; the first group works anywhere. In the Source and Target "
    "prefix fields Ctrl+Left and Ctrl+Right step the decoder (Home and End move the cursor there)."
)
MAX_WIDTH = 760
SCREEN_MARGIN = 40  # room for the window manager's title bar and a panel at the screen's edge
Group = tuple[str, Sequence[tuple[str, str]]]


class ShortcutDialog(QDialog):
    """A non-modal list: headings in bold, one line per action (its keys, what they do), scrolling when long."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Keyboard shortcuts")
        self.setAccessibleName("keyboard shortcuts")
        intro = QLabel(INTRO)
        intro.setWordWrap(True)
        self.scroll_area = QScrollArea()
        self.scroll_area.setWidgetResizable(True)
        self.scroll_area.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.close)
        lay = QVBoxLayout(self)
        lay.addWidget(intro)
        lay.addWidget(self.scroll_area, 1)
        lay.addWidget(buttons)
        self._content: QWidget | None = None

    def set_groups(self, groups: Sequence[Group]) -> None:
        """Show `groups` (heading, [(keys, what)]) in their order, replacing what was shown."""
        content = QWidget()
        grid = QGridLayout(content)
        grid.setHorizontalSpacing(16)
        grid.setColumnStretch(1, 1)
        row = 0
        for heading, entries in groups:
            title = QLabel(heading)
            title.setObjectName("shortcut_heading")
            font = title.font()
            font.setBold(True)
            font.setPointSizeF(font.pointSizeF() * 1.1)
            title.setFont(font)
            title.setContentsMargins(0, 10 if row else 0, 0, 2)
            grid.addWidget(title, row, 0, 1, 2)
            row += 1
            for keys, what in entries:
                key_label, what_label = QLabel(keys), QLabel(what)
                key_label.setObjectName("shortcut_keys")
                what_label.setObjectName("shortcut_what")
                for label in (key_label, what_label):
                    label.setTextFormat(Qt.TextFormat.PlainText)  # "<eos>" is text, never a tag
                    label.setAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop)
                bold = key_label.font()
                bold.setBold(True)
                key_label.setFont(bold)
                what_label.setWordWrap(True)
                grid.addWidget(key_label, row, 0)
                grid.addWidget(what_label, row, 1)
                row += 1
        grid.setRowStretch(row, 1)
        self.scroll_area.setWidget(content)  # the old content is deleted with the scroll area's previous widget
        self._content = content

    def fit_to_screen(self) -> None:
        """As tall as the list, never taller than the screen; centred on the parent window, inside the screen.

        Called again once shown: only then is the window manager's frame (title bar, borders) known.
        """
        parent = self.parentWidget()
        screen = (parent.screen() if parent is not None else None) or QGuiApplication.primaryScreen()
        room = screen.availableGeometry()
        frame = self.frameGeometry().size() - self.geometry().size()  # (0, 0) until shown
        width = min(MAX_WIDTH, room.width() - SCREEN_MARGIN)
        layout = self.layout()
        assert layout is not None  # given its column in __init__
        layout.activate()
        chrome = self.sizeHint().height() - self.scroll_area.sizeHint().height()
        wanted = self._content.sizeHint().height() + 2 * self.scroll_area.frameWidth() if self._content else 0
        height = min(wanted + chrome, room.height() - SCREEN_MARGIN - frame.height())
        outer = QRect(0, 0, width + frame.width(), height + frame.height())
        outer.moveCenter(parent.frameGeometry().center() if parent is not None else room.center())
        outer.moveLeft(max(room.left(), min(outer.left(), room.right() + 1 - outer.width())))
        outer.moveTop(max(room.top(), min(outer.top(), room.bottom() + 1 - outer.height())))
        self.resize(width, height)
        self.move(outer.topLeft())  # move() places the frame, resize() sizes the inside
