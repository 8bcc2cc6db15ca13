"""The Trainer tab's place in the window: built the first time it is shown or asked for.

Its form, curves and probe would be built in every start-up for a tab that only matters once someone trains.
Training itself lives in TrainingState, which runs without the tab; the tab reads the state's curves, snapshots
and run state when it is built.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np
from PySide6.QtCore import SignalInstance

from visualizer.state.model_hub import ModelHub
from visualizer.state.training import TrainingState
from visualizer.state.worker_api import SlotFactory
from visualizer.widgets.lazy_tab import LazyTab
from visualizer.widgets.training.keys import install_shortcuts

if TYPE_CHECKING:  # its module imports pyqtgraph
    from visualizer.widgets.training.tab import TrainerTab


class TrainerPage(LazyTab["TrainerTab"]):
    """The tab page; `tab()` builds the TrainerTab on demand with what the composition root handed in. The probe
    hears of the Playground's head switches (its "mean of heads on") from the moment it exists."""

    def __init__(
        self,
        hub: ModelHub,
        state: TrainingState,
        gates: Callable[[], dict[str, np.ndarray]],
        gates_changed: SignalInstance,
        *,
        confirm_discard: Callable[[str], bool] | None = None,
        make_slot: SlotFactory,
        picked: Callable[[], str] | None = None,
        task_picked: SignalInstance | None = None,
    ) -> None:
        """picked and task_picked: the Playground's task and its signal; the form follows it once built."""
        self._hub, self._state = hub, state
        self._picked, self._task_picked = picked, task_picked
        self._gates, self._gates_changed = gates, gates_changed
        self._confirm_discard = confirm_discard  # the app's Save, Discard or Cancel; None: the tab asks itself
        self._make_slot = make_slot  # the app's task layer: the movie export runs off the GUI thread
        super().__init__(self._make)
        self.shortcuts = install_shortcuts(self, self.tab)  # here from the start: F1 lists them before a first visit

    def _make(self) -> TrainerTab:
        from visualizer.widgets.training.tab import TrainerTab

        tab = TrainerTab(
            self._hub,
            self._state,
            own_shortcuts=False,
            confirm_discard=self._confirm_discard,
            make_slot=self._make_slot,
            picked=self._picked,
        )
        if self._task_picked is not None:
            self._task_picked.connect(tab.follow_task)
        self._gates_changed.connect(tab.probe.set_head_gates)
        tab.probe.set_head_gates(self._gates())
        return tab

    def tab(self) -> TrainerTab:
        return self.content()
