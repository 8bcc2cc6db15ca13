"""A bar above the tabs offering unsaved training found at start-up: Restore it or Discard, never in the way."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPushButton, QWidget

RESTORE_TIP = "Open this training as the current model, with its curves, as unsaved work"
DISCARD_TIP = "Delete the recovered training for good"


class RecoveryBanner(QFrame):
    """Hidden until `offer`; its buttons only say what the user chose."""

    restore_requested = Signal()
    discard_requested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("recoveryBanner")
        self.setStyleSheet("#recoveryBanner { background: #dbeafe; border-bottom: 1px solid #93c5fd; }")
        self.label = QLabel()
        self.label.setTextFormat(Qt.TextFormat.PlainText)  # the offer names the model's origin, often a file name
        self.label.setWordWrap(True)
        self.restore_button = QPushButton("Restore it")
        self.restore_button.setToolTip(RESTORE_TIP)
        self.discard_button = QPushButton("Discard")
        self.discard_button.setToolTip(DISCARD_TIP)
        lay = QHBoxLayout(self)
        lay.setContentsMargins(8, 4, 8, 4)
        lay.addWidget(self.label, 1)
        lay.addWidget(self.restore_button)
        lay.addWidget(self.discard_button)
        self.restore_button.clicked.connect(self.restore_requested)
        self.discard_button.clicked.connect(self.discard_requested)
        self.hide()

    def offer(self, text: str, restorable: bool = True) -> None:
        """Show `text`; an unreadable file can only be discarded."""
        self.label.setText(text)
        self.restore_button.setVisible(restorable)
        self.show()

    def set_restore_blocked(self, reason: str) -> None:
        """Disable Restore while `reason` holds (e.g. training runs), saying why in its tooltip; "" enables it."""
        self.restore_button.setEnabled(not reason)
        self.restore_button.setToolTip(reason or RESTORE_TIP)
