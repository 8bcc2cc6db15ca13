"""The Circuits tab's place in the window: a page built the first time it is shown."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import Signal

from core_model.head_roles import HeadRole
from visualizer.state.circuits import CircuitsState
from visualizer.state.snapshots import MapsSnapshot, PlaygroundFrame
from visualizer.widgets.lazy_tab import LazyTab

if TYPE_CHECKING:
    from visualizer.widgets.circuits.view import CircuitsView


class CircuitsPage(LazyTab):
    """Holds the state until the tab is built; passes the Heads tab's roles on and a chosen head out."""

    head_chosen = Signal(str, int, int)  # kind, layer, head: show that head in the Playground

    def __init__(self, state: CircuitsState) -> None:
        self._state = state
        self._roles: tuple[HeadRole, ...] | None = None
        self._run: MapsSnapshot | None = None
        super().__init__(self._make, scrolls=True)  # its tables show every row: the page scrolls on a laptop

    def _make(self) -> CircuitsView:
        from visualizer.widgets.circuits.view import CircuitsView

        view = CircuitsView(self._state)
        view.set_roles(self._roles)
        view.set_run(self._run)
        view.head_chosen.connect(self.head_chosen)
        return view

    def view(self) -> CircuitsView:
        return self.content()  # type: ignore[return-value]

    def set_roles(self, roles: tuple[HeadRole, ...] | None) -> None:
        """The Heads tab's roles of the current model, shown beside each head."""
        self._roles = roles
        if self.built:
            self.view().set_roles(roles)

    def set_run(self, frame: PlaygroundFrame | None) -> None:
        """The Playground's last pass: the selected head's map from it sits beside its position table."""
        self._run = frame.maps if frame is not None else None
        if self.built:
            self.view().set_run(self._run)
