"""The Causal tab's place in the window: a page built the first time it is shown (most sessions never open it)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from PySide6.QtCore import Signal
from PySide6.QtGui import QShowEvent

from core_model.head_roles import HeadRole
from visualizer.state.causal_attribution import AttributionState
from visualizer.state.causal_patching import PatchState
from visualizer.widgets.lazy_tab import LazyTab

if TYPE_CHECKING:  # its modules import pyqtgraph's plots: loaded when the page is first built
    from visualizer.widgets.causal.tab import CausalTab


class CausalPage(LazyTab):
    """Holds the two states until the tab is built; passes the Heads tab's roles on and a chosen head out."""

    head_chosen = Signal(str, int, int)  # kind, layer, head: show that head's maps in the Playground

    def __init__(self, patching: PatchState, attribution: AttributionState, default_source: Callable[[], str]) -> None:
        """default_source: the Playground's input, read each time the page is shown."""
        self._states = (patching, attribution)
        self._source = default_source
        self._roles: tuple[HeadRole, ...] | None = None
        super().__init__(self._make)

    def _make(self) -> CausalTab:
        from visualizer.widgets.causal.source_view import SourceView
        from visualizer.widgets.causal.tab import CausalTab
        from visualizer.widgets.causal.view import PatchingView

        patching, attribution = self._states
        source = self._source()
        tab = CausalTab(PatchingView(patching, source), SourceView(attribution, source))
        tab.patching.set_roles(self._roles)
        tab.patching.head_chosen.connect(self.head_chosen)
        return tab

    def showEvent(self, event: QShowEvent) -> None:  # Qt's name
        super().showEvent(event)  # builds the page the first time
        if self.built:
            self.tab().follow_source(self._source())

    def tab(self) -> CausalTab:
        return self.content()  # type: ignore[return-value]

    def set_roles(self, roles: tuple[HeadRole, ...] | None) -> None:
        """The Heads tab's roles of the current model, shown beside each head's effect."""
        self._roles = roles
        if self.built:
            self.tab().patching.set_roles(roles)
