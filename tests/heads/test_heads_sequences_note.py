"""Importance numbers scored on other sequences than the Sequences box now says are marked out of date, so a
learner who changes the box (or a lesson that puts it back) never reads the old numbers as the new box's."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from qt_helpers import shown_app, type_number

from core_model.shipped import resource_path


@pytest.fixture
def app(qtbot):
    app = shown_app(qtbot, resource_path("copy_rope.pt"))
    qtbot.waitUntil(lambda: app.session is not None and app.session.last_frame is not None, timeout=60_000)
    yield app
    app.hub.dirty = False
    app.window.close()


def test_changing_sequences_after_an_analysis_marks_its_numbers_until_it_matches_again(qtbot, app):
    win, view = app.window, app.heads_view
    with qtbot.waitActive(win):
        win.activateWindow()
    qtbot.keyClick(win, Qt.Key.Key_4, Qt.KeyboardModifier.ControlModifier)
    type_number(qtbot, view.n_box, 30)
    with qtbot.waitSignal(app.heads.frame_changed, timeout=120_000):
        qtbot.mouseClick(view.run_button, Qt.MouseButton.LeftButton)
    assert not view.stale.isVisible()
    type_number(qtbot, view.n_box, 200)
    assert view.stale.isVisible()
    assert "scored on 30 sequences (seed 1234)" in view.stale.text() and "now say 200" in view.stale.text()
    assert app.heads.analysis is not None  # the numbers stay, marked
    type_number(qtbot, view.n_box, 30)
    assert not view.stale.isVisible()
