"""The Positional encoding tab's place in the window: built the first time it is shown or asked for.

Its four plots would be built in every start-up for a tab many sessions never open. Until then the loaded
model's PE waits here and is applied when the tab is built.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from visualizer.state.pe_lab import PELabState
from visualizer.widgets.lazy_tab import LazyTab

if TYPE_CHECKING:  # its module imports pyqtgraph
    from visualizer.widgets.pe_lab.tab import PETab


class PEPage(LazyTab["PETab"]):
    """The tab page; `tab()` builds the PETab on demand (File > Export of the PE plots, tests)."""

    def __init__(self, state: PELabState) -> None:
        self._state = state
        self._model_pe: tuple[str, int, float, int] | None = None  # applied when the tab is built
        super().__init__(self._make)

    def _make(self) -> PETab:
        from visualizer.widgets.pe_lab.tab import PETab

        tab = PETab(self._state)
        if self._model_pe is not None:
            tab.set_model_pe(*self._model_pe)
        return tab

    def tab(self) -> PETab:
        return self.content()

    def set_model_pe(self, kind: str, d_model: int, base: float, head_dim: int) -> None:
        """The loaded model's PE: shown at once if the tab is built, else when it is."""
        self._model_pe = (kind, d_model, base, head_dim)
        if self.built:
            self.tab().set_model_pe(kind, d_model, base, head_dim)
