"""The Trainer form in a scroll area of its own, so the buttons and the run's progress below it stay in sight."""

from __future__ import annotations

from PySide6.QtCore import QSize
from PySide6.QtWidgets import QScrollArea, QSizePolicy, QWidget


class FormScroll(QScrollArea):
    """As tall as the form where the column has room (no empty box above the buttons), shorter and scrolling where
    it has not; never narrower than the form.

    QScrollArea's own size hint stops at about 24 lines of text, which cut the form short on a tall screen.
    """

    def __init__(self, form: QWidget, min_width: int = 380) -> None:
        super().__init__()
        self.setWidget(form)
        self.setWidgetResizable(True)
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Maximum)
        bar = self.verticalScrollBar().sizeHint().width()  # room for it: without, a sideways bar appears too
        self.setMinimumWidth(max(min_width, form.minimumSizeHint().width() + bar + 2 * self.frameWidth()))

    def sizeHint(self) -> QSize:  # Qt's name
        form = self.widget()
        if form is None:
            return super().sizeHint()
        return QSize(self.minimumWidth(), form.sizeHint().height() + 2 * self.frameWidth())
