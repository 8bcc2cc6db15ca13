"""A tab page that builds its real content the first time it is shown (or asked for), not at start-up.

The Length lab's plots cost ~0.3 s to build, a fifth of launch-to-model-ready, for a tab most sessions never open.
"""
from __future__ import annotations

from collections.abc import Callable

from PySide6.QtGui import QShowEvent
from PySide6.QtWidgets import QVBoxLayout, QWidget


class LazyTab(QWidget):
    """An empty page holding `build()`'s widget once it has been shown or `content()` was called."""

    def __init__(self, build: Callable[[], QWidget], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._build: Callable[[], QWidget] | None = build
        self._content: QWidget | None = None
        self._layout = QVBoxLayout(self)
        self._layout.setContentsMargins(0, 0, 0, 0)

    @property
    def built(self) -> bool:
        return self._content is not None

    def content(self) -> QWidget:
        """The real page, built now if it was not yet."""
        if self._content is None:
            assert self._build is not None
            build, self._build = self._build, None
            self._content = build()
            self._layout.addWidget(self._content)
            if self.isVisible():  # added to a page on screen: show it now, not on a later turn of the event loop
                self._content.show()
        return self._content

    def showEvent(self, event: QShowEvent) -> None:  # Qt's name
        self.content()
        super().showEvent(event)
