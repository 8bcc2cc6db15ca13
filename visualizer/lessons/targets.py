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
    "playground.prediction": lambda app: app.playground.output_label,
}


def target_widget(app: Any, name: str | None) -> QWidget | None:
    return None if name is None else TARGETS[name](app)
