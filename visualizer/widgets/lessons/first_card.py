"""The one card a first launch shows above the tabs: an offer of the first lesson, easy to start or to dismiss."""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPushButton, QWidget

CARD_TEXT = "New here? A two-minute guided lesson shows what one attention map is, in this window."


class FirstLessonCard(QFrame):
    """Hidden unless offered; its buttons only say what the learner chose."""

    start_requested = Signal()
    dismissed = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("firstLessonCard")
        self.setStyleSheet("#firstLessonCard { background: #eef6ee; border-bottom: 1px solid #a5d6a7; }")
        self.label = QLabel(CARD_TEXT)
        self.label.setWordWrap(True)
        self.start_button = QPushButton("Start the first lesson")
        self.start_button.setToolTip("Open the Lessons panel (Help › Lessons, F9) and start lesson 1")
        self.dismiss_button = QPushButton("No thanks")
        self.dismiss_button.setToolTip("Hide this card for good; Help › Lessons (F9) has every lesson")
        lay = QHBoxLayout(self)
        lay.setContentsMargins(8, 4, 8, 4)
        lay.addWidget(self.label, 1)
        lay.addWidget(self.start_button)
        lay.addWidget(self.dismiss_button)
        self.start_button.clicked.connect(self.start_requested)
        self.dismiss_button.clicked.connect(self.dismissed)
        self.hide()
