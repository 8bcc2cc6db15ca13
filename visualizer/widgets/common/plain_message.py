"""A message box whose text is shown as written, for a text that holds a file name, a checkpoint field or an error.

QMessageBox guesses rich text from the first tag it sees and its label opens external links, so a file named
`<h1>x</h1><a href="http://e">y</a>.pt` would show a heading and a link that starts the browser.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QMessageBox, QWidget


def show_plain_message(parent: QWidget | None, icon: QMessageBox.Icon, title: str, text: str) -> None:
    """A modal box with one OK button; returns once it is answered."""
    box = QMessageBox(icon, title, text, QMessageBox.StandardButton.Ok, parent)
    box.setTextFormat(Qt.TextFormat.PlainText)
    box.exec()
