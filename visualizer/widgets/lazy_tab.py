"""A tab page that builds its real content the first time it is shown (or asked for), not at start-up.

Building a tab's plots is a visible part of launch-to-model-ready (the Length lab's most of all), paid by every
session for tabs many sessions never open (docs/BENCHMARKS.md measures start-up). What other tabs send the content
before it exists (the Heads tab's roles, the Playground's last run) waits on the page (`deliver`) and reaches the
content when it is built, so no tab needs a page class of its own to hold it. The keys the content will answer are
declared with the page (`keys`), so the keyboard-shortcut list names them without building anything.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Generic, Protocol, TypeVar

from PySide6.QtGui import QAction, QShowEvent
from PySide6.QtWidgets import QLabel, QMenu, QTabWidget, QVBoxLayout, QWidget

from visualizer.widgets.common.scroll_page import ScrollPage
from visualizer.widgets.common.wheel_guard import guard_wheel

log = logging.getLogger(__name__)


W = TypeVar("W", bound=QWidget)


class LazyTab(QWidget, Generic[W]):
    """An empty page holding `build()`'s widget once it has been shown or `content()` was called.

    A build that fails says why on the page (as a failed start-up would) and is tried again on the next show.
    """

    def __init__(
        self,
        build: Callable[[], W],
        parent: QWidget | None = None,
        *,
        scrolls: bool = False,
        shown: Callable[[W], None] | None = None,
        keys: tuple[tuple[str, str], ...] = (),
    ) -> None:
        """shown: called with the content each time the page is shown (after building it the first time).
        keys: (key, what it does) for each key the built content has (buttons' shortcuts, QShortcuts), as Help >
        Keyboard shortcuts lists them before the content exists; a test builds every page and holds the two equal."""
        super().__init__(parent)
        self.keys = keys
        self._build = build
        self._scrolls = scrolls  # the page scrolls as a whole below its content's minimum height (ScrollPage)
        self._shown = shown
        self._content: W | None = None
        self._waiting: dict[str, Callable[[W], None]] = {}  # what `deliver` holds for the content, by kind
        self._layout = QVBoxLayout(self)
        self._layout.setContentsMargins(0, 0, 0, 0)
        self.error_label = QLabel()
        self.error_label.setWordWrap(True)
        self.error_label.setVisible(False)
        self._layout.addWidget(self.error_label)

    @property
    def built(self) -> bool:
        return self._content is not None

    def content(self) -> W:
        """The real page, built now if it was not yet; raises what the build raised."""
        if self._content is None:
            content = self._build()
            for give in self._waiting.values():
                give(content)
            guard_wheel(content)  # as the window does for the tabs it is given whole
            self.error_label.setVisible(False)
            self._layout.addWidget(ScrollPage(content) if self._scrolls else content)
            if self.isVisible():  # added to a page on screen: show it now, not on a later turn of the event loop
                content.show()
            self._content = content  # only now: a build or a hand-over that raised is tried again on the next show
        return self._content

    def deliver(self, kind: str, give: Callable[[W], None]) -> None:
        """Hand the content something (`give(content)`) now if it is built, else when it is; of each `kind` only the
        latest waits, as the content would only keep the latest."""
        self._waiting[kind] = give
        if self._content is not None:
            give(self._content)

    def showEvent(self, event: QShowEvent) -> None:  # Qt's name
        try:
            content = self.content()
            if self._shown is not None:
                self._shown(content)
        except Exception as exc:  # noqa: BLE001 - a page that cannot be built says why instead of staying blank
            log.warning("could not build this tab", exc_info=True)
            self.error_label.setText(
                f"This tab could not be built ({type(exc).__name__}: {exc}). Switch tabs to try again."
            )
            self.error_label.setVisible(True)
        super().showEvent(event)


class TabWindow(Protocol):
    """What a page needs of the main window (which sits above the widgets) to add itself."""

    tabs: QTabWidget
    view_menu: QMenu

    def add_tab(self, widget: QWidget, title: str) -> int: ...

    def add_action(
        self, menu: QMenu, text: str, slot: Callable[[], object], shortcut: str | None = None, tip: str = ""
    ) -> QAction: ...


def install_page(page: QWidget, title: str, win: TabWindow) -> int:
    """Add a tab page and its Ctrl+N entry among the View menu's tabs (before its first separator); its index."""
    index = win.add_tab(page, title)

    def show_page(_checked: bool = False) -> None:
        win.tabs.setCurrentIndex(index)

    action = win.add_action(win.view_menu, f"&{index + 1} {title}", show_page, f"Ctrl+{index + 1}")
    win.view_menu.insertAction(next(a for a in win.view_menu.actions() if a.isSeparator()), action)
    return index
