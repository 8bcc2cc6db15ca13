"""A tab page that builds its real content the first time it is shown (or asked for), not at start-up.

The Length lab's plots cost ~0.3 s to build, a fifth of launch-to-model-ready, for a tab most sessions never open.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from PySide6.QtGui import QShowEvent
from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget

from visualizer.widgets.common.wheel_guard import guard_wheel

log = logging.getLogger(__name__)


class LazyTab(QWidget):
    """An empty page holding `build()`'s widget once it has been shown or `content()` was called.

    A build that fails says why on the page (as a failed start-up would) and is tried again on the next show.
    """

    def __init__(self, build: Callable[[], QWidget], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._build = build
        self._content: QWidget | None = None
        self._layout = QVBoxLayout(self)
        self._layout.setContentsMargins(0, 0, 0, 0)
        self.error_label = QLabel()
        self.error_label.setWordWrap(True)
        self.error_label.setVisible(False)
        self._layout.addWidget(self.error_label)

    @property
    def built(self) -> bool:
        return self._content is not None

    def content(self) -> QWidget:
        """The real page, built now if it was not yet; raises what the build raised."""
        if self._content is None:
            self._content = self._build()
            guard_wheel(self._content)  # as the window does for the tabs it is given whole
            self.error_label.setVisible(False)
            self._layout.addWidget(self._content)
            if self.isVisible():  # added to a page on screen: show it now, not on a later turn of the event loop
                self._content.show()
        return self._content

    def showEvent(self, event: QShowEvent) -> None:  # Qt's name
        try:
            self.content()
        except Exception as exc:  # noqa: BLE001 - a page that cannot be built says why instead of staying blank
            log.warning("could not build this tab", exc_info=True)
            self.error_label.setText(
                f"This tab could not be built ({type(exc).__name__}: {exc}). Switch tabs to try again."
            )
            self.error_label.setVisible(True)
        super().showEvent(event)
