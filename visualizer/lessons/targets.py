"""The widgets a lesson step can point at (vocabulary.HIGHLIGHTS), found in the running app."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtWidgets import QWidget

TARGETS: dict[str, Callable[[Any], QWidget]] = {  # the names of vocabulary.HIGHLIGHTS (a test holds them together)
    "playground.encoder_self": lambda app: app.playground.grids["encoder_self"],
    "playground.decoder_self": lambda app: app.playground.grids["decoder_self"],
    "playground.cross": lambda app: app.playground.grids["cross"],
    "playground.grid_tabs": lambda app: app.playground.grid_tabs,
    "playground.source": lambda app: app.playground.input_panel.source,
    "playground.view": lambda app: app.playground.view_modes,
    "playground.prediction": lambda app: app.playground.output_slot,
    "playground.masks": lambda app: app.playground.sections["Masks"],
    "playground.model": lambda app: app.playground.sections["Model"],
    "playground.restore_heads": lambda app: app.playground.restore_heads,
    "heads.analyse": lambda app: app.heads_view.run_button,
    "heads.importance": lambda app: app.heads_view.maps,
    "trainer.scratch": lambda app: app.trainer_tab.scratch_button,
    "trainer.forming": lambda app: app.trainer_tab.forming,
    "lengthlab.repeat": lambda app: app.length_lab_tab.repeat_button,
    "causal.patch": lambda app: app.analysis.causal_page.content().patching.run_button,
    "causal.heads": lambda app: app.analysis.causal_page.content().patching.heads,
    "causal.attribute": lambda app: app.analysis.causal_page.content().source.run_button,
}


def target_widget(app: Any, name: str | None) -> QWidget | None:
    return None if name is None else TARGETS[name](app)
