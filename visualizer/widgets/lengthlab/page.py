"""The Length lab's place in the window: a tab page built the first time it is shown, and its View menu entry."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from PySide6.QtCore import QObject
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QMenu, QTabWidget, QWidget

from visualizer.state.length_lab import LengthLabState
from visualizer.widgets.lazy_tab import LazyTab

if TYPE_CHECKING:  # its module imports pyqtgraph: loaded when the page is first built
    from visualizer.widgets.lengthlab.view import LengthLabTab


class _Window(Protocol):
    """What the lab needs of the main window (which sits above the widgets)."""

    tabs: QTabWidget
    view_menu: QMenu

    def add_tab(self, widget: QWidget, title: str) -> int: ...

    def add_action(
        self, menu: QMenu, text: str, slot: Callable[[], object], shortcut: str | None = None, tip: str = ""
    ) -> QAction: ...


class LengthLabPage(LazyTab):
    """The tab page; `state` is None until the lab is first built."""

    def __init__(self, owner: QObject) -> None:
        self.state: LengthLabState | None = None
        self._owner = owner
        super().__init__(self._make)

    def _make(self) -> LengthLabTab:
        from visualizer.widgets.lengthlab.view import make_length_lab

        self.state, tab = make_length_lab(self._owner)
        return tab

    def built_state(self) -> LengthLabState:
        """The lab's state, building the page if it was not yet."""
        self.content()
        assert self.state is not None
        return self.state


def install_length_lab(owner: QObject, win: _Window) -> LengthLabPage:
    """Add the (not yet built) Length lab tab and its Ctrl+N entry in the View menu."""
    page = LengthLabPage(owner)
    index = win.add_tab(page, "Length lab")
    action = win.add_action(
        win.view_menu, f"&{index + 1} Length lab", lambda _c=False: win.tabs.setCurrentIndex(index), f"Ctrl+{index + 1}"
    )
    win.view_menu.insertAction(next(a for a in win.view_menu.actions() if a.isSeparator()), action)
    return page
