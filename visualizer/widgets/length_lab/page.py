"""The Length lab's place in the window: a tab page built the first time it is shown, and its View menu entry."""

from __future__ import annotations

from typing import TYPE_CHECKING

from visualizer.state.length_lab import LengthLabState
from visualizer.widgets.lazy_tab import LazyTab, TabWindow, install_page

if TYPE_CHECKING:  # its module imports pyqtgraph: loaded when the page is first built
    from visualizer.widgets.length_lab.view import LengthLabTab


class LengthLabPage(LazyTab):
    """The tab page; `tab()` builds the LengthLabTab on demand, which evaluates the state's pair when first shown."""

    def __init__(self, state: LengthLabState) -> None:
        self._state = state
        super().__init__(self._make)

    def _make(self) -> LengthLabTab:
        from visualizer.widgets.length_lab.view import LengthLabTab

        return LengthLabTab(self._state, auto_evaluate=True)

    def tab(self) -> LengthLabTab:
        return self.content()  # type: ignore[return-value]


def install_length_lab(state: LengthLabState, win: TabWindow) -> LengthLabPage:
    """Add the (not yet built) Length lab tab and its Ctrl+N entry in the View menu."""
    page = LengthLabPage(state)
    install_page(page, "Length lab", win)
    return page
