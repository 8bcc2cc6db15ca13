"""The composition root's analyses, as one table: each analysis's state and the tab page that shows it, installed by
the root in one loop, in the order the table lists them (their View menu entries and Ctrl+N follow that order).

Called once by the composition root (composition.py) after the Playground is built. A state is made at once (the
Heads tab's roles label the Playground's maps from the start); a view is built the first time its tab is shown,
except the Heads view, whose state's roles and sequences it shows from the first frame. The Heads tab's roles also
label the Causal and Circuits tabs' heads, and a click on a head in any of them goes to one of the root's two head
links: Heads switches that head off in the Playground, Causal and Circuits show its maps there, large.

Adding an analysis: a state on state/analysis.AnalysisState calling one core_model entry, a view that draws its
frames, and a row here (see docs/ARCHITECTURE.md, "Adding an analysis").
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from PySide6.QtCore import QObject
from PySide6.QtWidgets import QTabWidget, QWidget

from visualizer.state.causal_attribution import AttributionState
from visualizer.state.causal_patching import PatchState
from visualizer.state.circuits import CircuitsState
from visualizer.state.heads import HeadsState
from visualizer.state.length_lab import LengthLabState
from visualizer.state.length_lab_snapshots import shipped_sources
from visualizer.state.model_hub import ModelHub
from visualizer.state.playground import PlaygroundSession
from visualizer.state.snapshots import PlaygroundFrame
from visualizer.widgets.heads.badges import RoleBadges
from visualizer.widgets.heads.view import HeadsView
from visualizer.widgets.lazy_tab import LazyTab
from visualizer.widgets.playground.view import PlaygroundView
from visualizer.workers.tasks import TaskSlot

if TYPE_CHECKING:  # their modules import pyqtgraph's plots: loaded when a tab is first built
    from visualizer.widgets.causal.tab import CausalTab
    from visualizer.widgets.circuits.view import CircuitsView
    from visualizer.widgets.length_lab.view import LengthLabTab

HeadLink = Callable[[str, int, int], None]  # kind, layer, head


class _Window(Protocol):
    tabs: QTabWidget

    def show_message(self, text: str, timeout_ms: int = 5000) -> None: ...


@dataclass(frozen=True)
class AnalysisTab:
    """One row of the table: the tab's title and its page (the view itself, or a LazyTab that builds it)."""

    title: str
    page: QWidget


@dataclass
class AnalysisTabs:
    """The analyses' states and pages (the app keeps them for closing; lessons and tests read them)."""

    heads: HeadsState
    heads_view: HeadsView
    badges: dict[str, RoleBadges]
    length_lab: LengthLabState
    length_lab_page: LazyTab[LengthLabTab]
    patching: PatchState
    attribution: AttributionState
    causal_page: LazyTab[CausalTab]
    circuits: CircuitsState
    circuits_page: LazyTab[CircuitsView]

    @property
    def table(self) -> tuple[AnalysisTab, ...]:
        """The tabs in the order the root installs them."""
        return (
            AnalysisTab("Heads", self.heads_view),
            AnalysisTab("Length lab", self.length_lab_page),
            AnalysisTab("Causal", self.causal_page),
            AnalysisTab("Circuits", self.circuits_page),
        )

    def shutdown(self, timeout_ms: int) -> None:
        """Their jobs end before the objects they report to."""
        for state in (self.heads, self.patching, self.attribution, self.circuits, self.length_lab):
            state.shutdown(timeout_ms)


def build_analysis_tabs(
    hub: ModelHub, session: PlaygroundSession, playground: PlaygroundView, window: _Window, parent: QObject
) -> AnalysisTabs:
    """Every analysis's state and page, linked to the Playground; the root adds the pages (`AnalysisTabs.table`)."""
    show, ablate = _show_in(playground, window), _ablate_in(session, playground, window)
    heads = HeadsState(hub, TaskSlot)
    heads_view = HeadsView(heads)
    heads_view.head_chosen.connect(ablate)
    badges = {kind: RoleBadges(grid) for kind, grid in playground.grids.items()}
    for overlay in badges.values():
        heads.roles_changed.connect(overlay.set_roles)
        session.frame_changed.connect(overlay.on_frame)
    length_lab = LengthLabState(TaskSlot, shipped_sources(), parent)
    patching, attribution = PatchState(hub, TaskSlot), AttributionState(hub, TaskSlot)
    circuits = CircuitsState(hub, TaskSlot)
    causal_page = LazyTab(
        lambda: _causal_tab(patching, attribution, session.source_text, show),
        shown=lambda tab: tab.follow_source(session.source_text),  # the Playground's input, each time it shows
        keys=(("Ctrl+Return", "Patch (Patching page)"), ("Ctrl+Return", "Analyse (Lens and attribution page)")),
    )
    circuits_page = LazyTab(  # scrolls: its tables show every row
        lambda: _circuits_view(circuits, show), scrolls=True, keys=(("Ctrl+Return", "Compute the circuits"),)
    )
    for page in (causal_page, circuits_page):
        heads.roles_changed.connect(lambda roles, page=page: page.deliver("roles", lambda v: v.set_roles(roles)))
    session.frame_changed.connect(lambda frame: _deliver_run(circuits_page, frame))
    _deliver_run(circuits_page, session.last_frame)  # the run's map beside each head's position table
    heads.refresh_roles()
    return AnalysisTabs(
        heads,
        heads_view,
        badges,
        length_lab,
        LazyTab(  # a fifth of the start-up, were it built at once
            lambda: _length_lab_tab(length_lab),
            keys=(("Alt+E", "Evaluate"), ("Alt+L", "Cancel"), ("Alt+R", "Train both now")),
        ),
        patching,
        attribution,
        causal_page,
        circuits,
        circuits_page,
    )


def _causal_tab(patching: PatchState, attribution: AttributionState, source: str, show: HeadLink) -> CausalTab:
    from visualizer.widgets.causal.source_view import SourceView
    from visualizer.widgets.causal.tab import CausalTab
    from visualizer.widgets.causal.view import PatchingView

    tab = CausalTab(PatchingView(patching, source), SourceView(attribution, source))
    tab.patching.head_chosen.connect(show)
    return tab


def _circuits_view(state: CircuitsState, show: HeadLink) -> CircuitsView:
    from visualizer.widgets.circuits.view import CircuitsView

    view = CircuitsView(state)
    view.head_chosen.connect(show)
    return view


def _length_lab_tab(state: LengthLabState) -> LengthLabTab:
    from visualizer.widgets.length_lab.view import LengthLabTab

    return LengthLabTab(state, auto_evaluate=True)  # evaluates the shipped pair when first shown


def _deliver_run(page: LazyTab[CircuitsView], frame: PlaygroundFrame | None) -> None:
    """The Playground's last pass: the selected head's map from it sits beside its position table."""
    maps = frame.maps if frame is not None else None
    page.deliver("run", lambda view: view.set_run(maps))


def _ablate_in(session: PlaygroundSession, playground: PlaygroundView, window: _Window) -> HeadLink:
    def ablate(kind: str, layer: int, head: int) -> None:
        """A click on the importance map: switch that head off in the Playground and show its grid."""
        session.set_head_enabled(kind, layer, head, False)
        window.tabs.setCurrentWidget(playground)
        playground.show_grid(kind)
        window.show_message(f"Ablated {kind} layer {layer + 1} head {head + 1} (right-click a map to restore)")

    return ablate


def _show_in(playground: PlaygroundView, window: _Window) -> HeadLink:
    def show(kind: str, layer: int, head: int) -> None:
        """A click on a patching effect or a circuits head: its map, large, over the Playground's grid of its kind."""
        window.tabs.setCurrentWidget(playground)
        playground.show_grid(kind)
        playground.grids[kind].open_large_view(layer, head)
        window.show_message(f"{kind} layer {layer + 1} head {head + 1}, on the Playground's input")

    return show
