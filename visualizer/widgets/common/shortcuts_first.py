"""Window shortcuts that win over a text field's own use of the same keys.

A focused QLineEdit claims Ctrl+Left / Ctrl+Right (word moves) and Ctrl+Shift+Right (select a word) by accepting
Qt's ShortcutOverride event, so a window shortcut on those keys never fires while the field has the focus. For a
field of single symbols (the playground's Source), word moves are worth little and the focus sits there after
typing: declining the override for chosen keys hands them to the shortcut. Home and End still move the cursor.
"""

from __future__ import annotations

from collections.abc import Iterable

from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtGui import QKeyEvent, QKeySequence
from PySide6.QtWidgets import QWidget

KeyChord = tuple[int, int]  # (Qt.Key value, modifier flags without the keypad flag)


def _chord(key: Qt.Key | int, modifiers: Qt.KeyboardModifier) -> KeyChord:
    """The keypad flag is dropped: some platforms set it on arrow keys, and a shortcut's sequence never has it."""
    return int(getattr(key, "value", key)), int((modifiers & ~Qt.KeyboardModifier.KeypadModifier).value)


class ShortcutsFirst(QObject):
    """An event filter on `field`: for `keys`, the field declines the ShortcutOverride, so the shortcut fires."""

    def __init__(self, field: QWidget, keys: Iterable[QKeySequence]) -> None:
        super().__init__(field)
        # the stubs lack QKeySequence.__getitem__ (Qt's operator[]), which PySide6 has
        self.keys = {
            _chord(seq[0].key(), seq[0].keyboardModifiers())  # type: ignore[index]
            for seq in keys
            if seq.count() == 1
        }
        field.installEventFilter(self)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # Qt's name
        if event.type() == QEvent.Type.ShortcutOverride and isinstance(event, QKeyEvent):
            if _chord(event.key(), event.modifiers()) in self.keys:
                event.ignore()  # not claimed by the field: Qt goes on to the window's shortcut
                return True
        return False
