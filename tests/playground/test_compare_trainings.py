"""A/B compare says when A and B are different trainings, starts such a pair side by side, and draws A at once.

Driven through the real page: the Compare button, the Load B button, the view combo with the keyboard. Asserts on
what a person sees: which page is shown, the combo's choice, the visible notes and where they sit, the drawn maps.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from PySide6.QtCore import QPoint, Qt
from PySide6.QtWidgets import QLabel
from qt_helpers import show_playground, wait_frame

from core_model import ModelConfig, build_model
from core_model.checkpoint import save_checkpoint
from core_model.tasks import TaskSpec
from visualizer.state.compare import CompareSession
from visualizer.state.model_hub import ModelHub
from visualizer.state.playground import PlaygroundSession
from visualizer.workers.tasks import TaskSlot

CONFIG = ModelConfig(d_model=32, n_heads=4, d_ff=64, n_encoder_layers=2, n_decoder_layers=2)
WARNING = "head numbers need not correspond"


@pytest.fixture
def view(qtbot, tmp_path):
    b_file = save_checkpoint(tmp_path / "other_run.pt", build_model(CONFIG, seed=11), extra={"task": {"task": "copy"}})
    hub = ModelHub(build_model(CONFIG, seed=3), TaskSpec(), device=torch.device("cpu"), origin="test model A")
    session = PlaygroundSession(hub)
    compare = CompareSession(session, TaskSlot)
    widget = show_playground(qtbot, session, compare=compare, ask_b_path=lambda _parent: str(b_file))
    wait_frame(qtbot, session)
    return widget


def warnings_shown(panel) -> list[QLabel]:
    return [label for label in panel.findChildren(QLabel) if label.isVisible() and WARNING in label.text()]


def pick_view(qtbot, panel, view: str) -> None:
    """Choose a view in the combo with the keyboard, as a user does."""
    panel.view.setFocus()
    key = Qt.Key.Key_Down if view == "difference" else Qt.Key.Key_Up
    qtbot.keyClick(panel.view, key)
    assert panel.view.currentData() == view


def load_b(qtbot, panel, source: str) -> None:
    panel.source.setCurrentIndex(panel.source.findData(source))
    with qtbot.waitSignal(panel.compare.frame_changed, timeout=10000):
        qtbot.mouseClick(panel.load_button, Qt.MouseButton.LeftButton)


def open_compare(qtbot, view):
    qtbot.mouseClick(view.compare_button, Qt.MouseButton.LeftButton)
    return view.compare_panel


def test_a_is_drawn_as_soon_as_compare_opens_without_waiting_for_b(qtbot, view):
    panel = open_compare(qtbot, view)
    assert panel.grid_a.isVisible() and panel.grid_b.isVisible()
    assert panel.grid_a.stack.currentWidget() is not panel.grid_a.placeholder
    a = view.session.last_snapshot.maps["encoder_self"]
    np.testing.assert_allclose(
        np.nan_to_num(panel.grid_a.displayed_matrix(1, 2)), np.where(a.valid, a.values[1, 2], 0), atol=1e-6
    )
    image = panel.grid_a.grab().toImage()
    colours = {image.pixel(x, y) for x in range(0, image.width(), 3) for y in range(0, image.height(), 3)}
    assert len(colours) > 20  # maps drawn, not a blank page with one sentence
    assert panel.grid_b.placeholder.isVisible() and "No model B yet" in panel.grid_b.placeholder.text()
    with qtbot.waitSignal(panel.compare.a_ready, timeout=10000):
        view.session.set_source("2101")  # still no B: A follows the input by itself
    assert panel.grid_a.current_maps().key_labels[:4] == ("2", "1", "0", "1")


def test_different_trainings_are_said_and_start_side_by_side(qtbot, view):
    panel = open_compare(qtbot, view)
    pick_view(qtbot, panel, "difference")  # picked before this pair existed
    load_b(qtbot, panel, "file")
    assert panel.view.currentData() == "side_by_side" and panel.compare.view == "side_by_side"
    assert panel.grid_b.isVisible() and not panel.grid_diff.isVisible()
    assert warnings_shown(panel) == [panel.trainings_side]
    pick_view(qtbot, panel, "difference")  # the user's explicit pick for this pair
    assert panel.grid_diff.isVisible()
    note = warnings_shown(panel)
    assert note == [panel.trainings_diff] and "subtract unrelated heads" in note[0].text()
    note_bottom = note[0].mapTo(panel, QPoint(0, note[0].height())).y()
    grid_top = panel.grid_diff.mapTo(panel, QPoint(0, 0)).y()
    assert 0 <= grid_top - note_bottom <= 20  # right above the A − B map
    with qtbot.waitSignal(panel.compare.frame_changed, timeout=10000):
        view.session.set_source("2101")
    assert panel.view.currentData() == "difference" and panel.grid_diff.isVisible()  # the pick stands
    assert warnings_shown(panel) == [panel.trainings_diff]


def test_the_same_training_says_nothing_until_a_becomes_another_model(qtbot, view):
    panel = open_compare(qtbot, view)
    view.session.set_head_enabled("cross", 0, 1, False)
    load_b(qtbot, panel, "ablated")  # the same weights with a head switched off: heads do correspond
    pick_view(qtbot, panel, "difference")
    assert panel.grid_diff.isVisible() and warnings_shown(panel) == []
    with qtbot.waitSignal(panel.compare.frame_changed, timeout=10000):
        view.session.set_source("2101")
    assert panel.view.currentData() == "difference" and warnings_shown(panel) == []
    with qtbot.waitSignal(panel.compare.frame_changed, timeout=10000):
        view.session.hub.new_untrained(CONFIG, seed=5)  # A is now another model; B still the old weights
    assert panel.view.currentData() == "side_by_side" and panel.grid_b.isVisible()
    assert warnings_shown(panel) == [panel.trainings_side]
