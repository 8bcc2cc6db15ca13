"""The composition root's analysis tabs: Heads, Causal and Circuits, each state paired with its view, and their links.

Called once by the composition root (composition.py) after the Playground is built. The Heads tab's roles label
the playground's maps (badges) and the Causal and Circuits tabs' heads; a click on a head in any of them shows it in
the Playground (Heads: switched off, to see what removing it does; Causal and Circuits: its maps, large).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from PySide6.QtWidgets import QTabWidget, QWidget

from visualizer.state.causal_attribution import AttributionState
from visualizer.state.causal_patching import PatchState
from visualizer.state.circuits import CircuitsState
from visualizer.state.heads import HeadsState
from visualizer.state.model_hub import ModelHub
from visualizer.state.playground import PlaygroundSession
from visualizer.widgets.causal.page import CausalPage
from visualizer.widgets.circuits.page import CircuitsPage
from visualizer.widgets.heads.badges import RoleBadges
from visualizer.widgets.heads.view import HeadsView
from visualizer.widgets.playground.view import PlaygroundView
from visualizer.workers.tasks import TaskSlot


class _Window(Protocol):
    tabs: QTabWidget

    def add_tab(self, widget: QWidget, title: str) -> int: ...
    def show_message(self, text: str, timeout_ms: int = 5000) -> None: ...


@dataclass
class AnalysisTabs:
    """The Heads, Causal and Circuits tabs' states and views (the app keeps them for closing, tests read them)."""

    heads: HeadsState
    heads_view: HeadsView
    badges: dict[str, RoleBadges]
    patching: PatchState
    attribution: AttributionState
    causal_page: CausalPage
    circuits: CircuitsState
    circuits_page: CircuitsPage

    def shutdown(self, timeout_ms: int) -> None:
        """Their jobs end before the objects they report to."""
        for state in (self.heads, self.patching, self.attribution, self.circuits):
            state.shutdown(timeout_ms)


def build_analysis_tabs(
    hub: ModelHub, session: PlaygroundSession, playground: PlaygroundView, window: _Window
) -> AnalysisTabs:
    """Add the Heads tab, make the Causal and Circuits pages (built when first shown), link them to the Playground."""
    heads = HeadsState(hub, TaskSlot)
    heads_view = HeadsView(heads)
    window.add_tab(heads_view, "Heads")  # no Alt+H: the Help menu has it (Ctrl+4)
    badges = {kind: RoleBadges(grid) for kind, grid in playground.grids.items()}
    for overlay in badges.values():
        heads.roles_changed.connect(overlay.set_roles)
        session.frame_changed.connect(overlay.on_frame)
    heads_view.head_chosen.connect(_ablate_in(session, playground, window))
    patching, attribution = PatchState(hub, TaskSlot), AttributionState(hub, TaskSlot)
    page = CausalPage(patching, attribution, lambda: session.source_text)  # the root adds it after the Length lab
    heads.roles_changed.connect(page.set_roles)
    page.head_chosen.connect(_show_in(playground, window))
    circuits = CircuitsState(hub, TaskSlot)
    circuits_page = CircuitsPage(circuits)  # the root adds it after the Causal page
    heads.roles_changed.connect(circuits_page.set_roles)
    circuits_page.head_chosen.connect(_show_in(playground, window))
    session.frame_changed.connect(circuits_page.set_run)  # the run's map beside each head's position table
    circuits_page.set_run(session.last_frame)
    heads.refresh_roles()
    return AnalysisTabs(heads, heads_view, badges, patching, attribution, page, circuits, circuits_page)


def _ablate_in(
    session: PlaygroundSession, playground: PlaygroundView, window: _Window
) -> Callable[[str, int, int], None]:
    def ablate(kind: str, layer: int, head: int) -> None:
        """A click on the importance map: switch that head off in the Playground and show its grid."""
        session.set_head_enabled(kind, layer, head, False)
        window.tabs.setCurrentWidget(playground)
        playground.show_grid(kind)
        window.show_message(f"Ablated {kind} layer {layer + 1} head {head + 1} (right-click a map to restore)")

    return ablate


def _show_in(playground: PlaygroundView, window: _Window) -> Callable[[str, int, int], None]:
    def show(kind: str, layer: int, head: int) -> None:
        """A click on a patching effect or a circuits head: its map, large, over the Playground's grid of its kind."""
        window.tabs.setCurrentWidget(playground)
        playground.show_grid(kind)
        playground.grids[kind].open_large_view(layer, head)
        window.show_message(f"{kind} layer {layer + 1} head {head + 1}, on the Playground's input")

    return show
