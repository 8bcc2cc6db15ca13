"""Views that fill in only after a run say what fills them while they are empty, as a learner sees it: the sentence is
drawn in the middle of the empty box, says a run is under way while one is, and is gone once there are numbers."""

from __future__ import annotations

from typing import Protocol

import numpy as np
import pytest
import torch
from PySide6.QtCore import Qt
from PySide6.QtGui import QFont, QImage, QPainter, QPalette
from PySide6.QtWidgets import QApplication, QWidget

from core_model.checkpoint import load_checkpoint
from core_model.shipped import resource_path
from visualizer.state.causal_attribution import AttributionState
from visualizer.state.causal_patching import PatchState
from visualizer.state.heads import HeadsState
from visualizer.state.model_hub import ModelHub
from visualizer.widgets.causal.source_view import SourceView
from visualizer.widgets.causal.view import PatchingView
from visualizer.widgets.common.empty_hint import MARGIN
from visualizer.widgets.heads.view import HeadsView
from visualizer.workers.tasks import TaskSlot

COPY = resource_path("copy_rope.pt")
RELOADED = resource_path("reverse_rope.pt")  # a new model: the numbers shown no longer describe it


@pytest.fixture
def hub():
    ckpt = load_checkpoint(COPY)
    return ModelHub(ckpt.build("cpu").eval(), ckpt.task, device=torch.device("cpu"), origin="copy_rope.pt", path=COPY)


def as_array(image: QImage) -> np.ndarray:
    """(height, width, 4) bytes of a 32-bit image."""
    image = image.convertToFormat(QImage.Format.Format_ARGB32)
    rows = np.frombuffer(image.constBits(), np.uint8).reshape(image.height(), image.bytesPerLine())
    return rows[:, : image.width() * 4].reshape(image.height(), image.width(), 4).copy()


class Hinted(Protocol):
    """A view that draws a hint while empty: HintTable, SourceMaps."""

    def hint(self) -> str: ...

    def set_hint(self, text: str) -> None: ...

    def viewport(self) -> QWidget: ...


def with_and_without_hint(view: Hinted, viewport: QWidget) -> tuple[QImage, QImage]:
    """The viewport as a person sees it, and as it looks with the view's hint taken away."""
    hint = view.hint()
    shown = viewport.grab().toImage()
    view.set_hint("")
    bare = viewport.grab().toImage()
    view.set_hint(hint)
    return shown, bare


def draws_nothing(view: Hinted, viewport: QWidget) -> bool:
    """Taking the hint away changes no pixel: the view shows its numbers and no sentence."""
    shown, bare = with_and_without_hint(view, viewport)
    return bool((as_array(shown) == as_array(bare)).all())


def shows_sentence(view: Hinted, viewport: QWidget, text: str) -> bool:
    """Exactly `text` is drawn, centred and word-wrapped, in italics and the placeholder colour: the bare view with that
    sentence painted over it here is the very image on screen (a changed word, colour or place differs)."""
    shown, bare = with_and_without_hint(view, viewport)
    expected = bare.convertToFormat(QImage.Format.Format_ARGB32)
    painter = QPainter(expected)
    italic = QFont(viewport.font())
    italic.setItalic(True)
    painter.setFont(italic)
    painter.setPen(viewport.palette().color(QPalette.ColorRole.PlaceholderText))
    area = viewport.rect().adjusted(MARGIN, MARGIN, -MARGIN, -MARGIN)
    painter.drawText(area, int(Qt.AlignmentFlag.AlignCenter | Qt.TextFlag.TextWordWrap), text)
    painter.end()
    shown_px, bare_px = as_array(shown), as_array(bare)
    return bool((shown_px != bare_px).any() and (as_array(expected) == shown_px).all())


def said_when_run_starts(state, view: Hinted, text: str) -> list[bool]:
    """Whether `view` shows exactly `text` the moment `state`'s run starts (the view heard of it first), one entry per
    start."""
    seen: list[bool] = []
    state.running_changed.connect(lambda on: on and seen.append(shows_sentence(view, view.viewport(), text)))
    return seen


def show(qtbot, widget: QWidget, size: tuple[int, int]) -> None:
    qtbot.addWidget(widget)
    widget.resize(*size)
    with qtbot.waitExposed(widget):
        widget.show()
    QApplication.processEvents()


def test_the_heads_maps_say_press_analyse_then_analysing_then_show_numbers(qtbot, hub):
    state = HeadsState(hub, TaskSlot)
    view = HeadsView(state)
    show(qtbot, view, (1280, 760))
    state.set_sequences(8, 1234)
    try:
        for table in view.maps.tables.values():
            assert table.rowCount() == 0
            assert shows_sentence(
                table,
                table.viewport(),
                "Filled by Analyse heads: one cell per head, the change when that head alone is switched off.",
            )
        table = view.maps.tables["cross"]
        seen = said_when_run_starts(
            state, table, "Analysing: the cells fill in once every head has been switched off in turn."
        )
        with qtbot.waitSignal(state.running_changed, timeout=10_000):
            qtbot.mouseClick(view.run_button, Qt.MouseButton.LeftButton)
        assert seen == [True]
        qtbot.waitUntil(lambda: state.analysis is not None and view.run_button.isEnabled(), timeout=60_000)
        for table in view.maps.tables.values():
            assert table.rowCount() == 2
            assert draws_nothing(table, table.viewport())  # numbers, no sentence
    finally:
        state.shutdown()


def test_the_patching_tables_say_press_patch_until_a_patch_fills_them(qtbot, hub):
    state = PatchState(hub, TaskSlot)
    view = PatchingView(state, "0123")
    show(qtbot, view, (1280, 760))
    try:
        for table in view.heads.tables.values():
            assert shows_sentence(table, table.viewport(), "Filled by Patch: each head's effect on the answer.")
        positions = view.positions
        assert shows_sentence(
            positions,
            positions.viewport(),
            "Filled by Patch: the effect at each encoder layer and source position.",
        )
        table = view.heads.tables["cross"]
        seen = said_when_run_starts(
            state, table, "Patching: the cells fill in when every head and position has been patched."
        )
        qtbot.mouseClick(view.run_button, Qt.MouseButton.LeftButton)
        qtbot.waitUntil(lambda: view.status.text().startswith("Metric"), timeout=30_000)
        assert seen == [True]
        for table in (*view.heads.tables.values(), positions):
            assert table.rowCount() > 0
            assert draws_nothing(table, table.viewport())
        reverse = load_checkpoint(RELOADED)
        hub.set_model(reverse.build(), reverse.task, origin="reverse_rope.pt")  # the numbers no longer describe it
        for table in view.heads.tables.values():
            assert shows_sentence(table, table.viewport(), "Filled by Patch: each head's effect on the answer.")
    finally:
        state.shutdown()


def test_the_attribution_maps_say_press_analyse_until_a_run_fills_them(qtbot, hub):
    state = AttributionState(hub, TaskSlot)
    state.ig_steps = 4
    view = SourceView(state, "0123")
    show(qtbot, view, (1280, 760))
    maps = view.maps
    try:
        assert shows_sentence(
            maps,
            maps.viewport(),
            "Filled by Analyse: the three attributions of this source beside the attention maps of the same pass.",
        )
        seen = said_when_run_starts(
            state, maps, "Analysing: the maps show here once every output token's gradients are done."
        )
        qtbot.keyClick(view.source, Qt.Key.Key_Return)
        qtbot.waitUntil(lambda: view.status.text().startswith("Integrated gradients"), timeout=60_000)
        assert seen == [True]
        assert maps.plots
        assert draws_nothing(maps, maps.viewport())
        reverse = load_checkpoint(RELOADED)
        hub.set_model(reverse.build(), reverse.task, origin="reverse_rope.pt")
        assert not maps.plots
        assert shows_sentence(
            maps,
            maps.viewport(),
            "Filled by Analyse: the three attributions of this source beside the attention maps of the same pass.",
        )
    finally:
        state.shutdown()
