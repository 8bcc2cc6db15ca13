"""Redo in the large view's paint mode: Ctrl+Shift+Z paints an undone stroke again, whole, and a new stroke drops it;
driven by real drags and keys, checked on the painted cells the view and the session show."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from PySide6.QtCore import Qt
from qt_helpers import show_playground
from test_cell_view import drag, open_dialog

from core_model import MaskSpec, ModelConfig, build_model
from core_model.tasks import TaskSpec
from visualizer.state.model_hub import ModelHub
from visualizer.state.playground import PlaygroundSession
from visualizer.widgets.playground.view import PlaygroundView

CTRL, SHIFT = Qt.KeyboardModifier.ControlModifier, Qt.KeyboardModifier.ShiftModifier


@pytest.fixture
def view(qtbot) -> PlaygroundView:
    model = build_model(ModelConfig(d_model=16, n_heads=2, d_ff=32), seed=3).eval()
    session = PlaygroundSession(ModelHub(model, TaskSpec(), device=torch.device("cpu"), origin="test model"))
    widget = show_playground(qtbot, session, (1200, 800))
    yield widget
    for grid in widget.grids.values():  # a large view left open would take later tests' mouse
        if grid.large_view.is_visible():
            grid.large_view._dialog.close()


def _key(qtbot, dialog, modifiers) -> None:
    with qtbot.waitActive(dialog):
        dialog.activateWindow()
    qtbot.keyClick(dialog, Qt.Key.Key_Z, modifiers)


def test_ctrl_shift_z_paints_the_undone_stroke_again(qtbot, view):
    dialog = open_dialog(qtbot, view, "cross", 0, 1)
    assert not dialog.redo_button.isEnabled()
    qtbot.mouseClick(dialog.paint_button, Qt.MouseButton.LeftButton)
    first, second = [(0, 0), (1, 0)], [(2, 1), (2, 2)]
    drag(qtbot, dialog, first)
    drag(qtbot, dialog, second)
    both = frozenset(first + second)
    assert dialog.painted() == both and not dialog.redo_button.isEnabled()
    _key(qtbot, dialog, CTRL)  # undo the second stroke, whole
    qtbot.waitUntil(lambda: view.session.masks.cross_painted == frozenset(first))
    assert dialog.redo_button.isEnabled() and dialog.undo_button.isEnabled()
    assert not np.isnan(dialog.displayed_matrix()[2, 1])
    _key(qtbot, dialog, CTRL | SHIFT)  # the Redo paint key
    qtbot.waitUntil(lambda: view.session.masks.cross_painted == both)
    assert dialog.painted() == both and np.isnan(dialog.displayed_matrix()[2, 1])
    assert "4 cross" in view.mask_panel.painted_label.text()
    assert not dialog.redo_button.isEnabled()
    _key(qtbot, dialog, CTRL)
    qtbot.waitUntil(lambda: view.session.masks.cross_painted == frozenset(first))  # a key animates the click
    _key(qtbot, dialog, CTRL)
    qtbot.waitUntil(lambda: view.session.masks.cross_painted == frozenset())
    assert not dialog.undo_button.isEnabled() and dialog.redo_button.isEnabled()
    qtbot.mouseClick(dialog.redo_button, Qt.MouseButton.LeftButton)
    assert dialog.painted() == frozenset(first)


def test_a_new_stroke_or_reset_masks_drops_the_redo(qtbot, view):
    dialog = open_dialog(qtbot, view, "cross", 0, 0)
    qtbot.mouseClick(dialog.paint_button, Qt.MouseButton.LeftButton)
    drag(qtbot, dialog, [(0, 1)])
    _key(qtbot, dialog, CTRL)
    qtbot.waitUntil(dialog.redo_button.isEnabled)
    drag(qtbot, dialog, [(1, 1)])
    assert not dialog.redo_button.isEnabled() and dialog.painted() == {(1, 1)}
    _key(qtbot, dialog, CTRL)
    qtbot.waitUntil(dialog.redo_button.isEnabled)
    qtbot.mouseClick(view.mask_panel.reset_button, Qt.MouseButton.LeftButton)
    assert view.session.masks == MaskSpec() and not dialog.redo_button.isEnabled()
    assert not dialog.undo_button.isEnabled()
