"""The Causal tab in the whole app: built on first show, seeded with the Playground's input, labelled with the Heads
tab's roles, and a click on a head shows that head's map large over the Playground."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from visualizer.composition import Application
from visualizer.widgets.common.role_labels import ROLE_LABELS
from visualizer.widgets.heatmap.large_view import MapDialog

ROOT = Path(__file__).resolve().parents[2]
ROPE = ROOT / "resources" / "copy_rope.pt"


@pytest.fixture
def app(qtbot):
    app = Application(checkpoint=ROPE, device="cpu")
    qtbot.addWidget(app.window)
    app.window.resize(1400, 900)
    app.window.show()
    app.start_loading()
    qtbot.waitUntil(lambda: app.heads is not None and app.heads.roles is not None, timeout=60000)
    yield app
    app.hub.dirty = False
    app.window.close()


def test_the_tab_is_built_when_shown_and_starts_from_the_playgrounds_input(qtbot, app):
    page, win = app.analysis.causal_page, app.window
    assert not page.built
    field = app.playground.input_panel.source
    field.selectAll()
    qtbot.keyClicks(field, "31415926")
    qtbot.waitUntil(lambda: app.session.source_text == "31415926", timeout=10_000)
    index = win.tabs.indexOf(page)
    assert win.tabs.tabText(index) == "Causal"
    qtbot.keyClick(win, Qt.Key.Key_6, Qt.KeyboardModifier.ControlModifier)  # View > 6 Causal
    assert win.tabs.currentWidget() is page and page.built
    view = page.content().patching
    assert view.clean.text() == "31415926"
    assert sum(a != b for a, b in zip(view.clean.text(), view.corrupt.text())) == 1


def _type(qtbot, field, text: str) -> None:
    field.selectAll()
    qtbot.keyClicks(field, text)


def test_both_pages_follow_the_playgrounds_input_until_edited_here(qtbot, app):
    """A learner who changes the Playground's input and comes back expects the Causal tab to be about it."""
    page, win = app.analysis.causal_page, app.window
    field = app.playground.input_panel.source
    win.tabs.setCurrentWidget(page)
    patching, source = page.content().patching, page.content().source
    win.tabs.setCurrentWidget(app.playground)
    _type(qtbot, field, "2718281")
    qtbot.waitUntil(lambda: app.session.source_text == "2718281", timeout=10_000)
    win.tabs.setCurrentWidget(page)
    assert (patching.clean.text(), source.source.text()) == ("2718281", "2718281")
    assert sum(a != b for a, b in zip(patching.clean.text(), patching.corrupt.text())) == 1
    _type(qtbot, patching.corrupt, "2718282")  # edited here: patching keeps its pair, the other page still follows
    win.tabs.setCurrentWidget(app.playground)
    _type(qtbot, field, "1234")
    qtbot.waitUntil(lambda: app.session.source_text == "1234", timeout=10_000)
    win.tabs.setCurrentWidget(page)
    assert (patching.clean.text(), patching.corrupt.text()) == ("2718281", "2718282")
    assert source.source.text() == "1234"


def test_roles_sit_beside_effects_and_a_click_shows_the_head_large(qtbot, app):
    win, page = app.window, app.analysis.causal_page
    win.tabs.setCurrentWidget(page)
    view = page.content().patching
    qtbot.mouseClick(view.run_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: view.status.text().startswith("Metric"), timeout=60_000)
    roles = {(r.kind, r.layer, r.head): r for r in app.heads.roles}
    table = view.heads.tables["cross"]
    role = roles[("cross", 1, 2)]
    assert table.item(1, 2).text().splitlines()[1] == f"{ROLE_LABELS[role.role]} fit {role.score:.2f}"
    rect = table.visualItemRect(table.item(1, 2))
    qtbot.mouseClick(table.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    assert win.tabs.currentWidget() is app.playground
    grid = app.playground.grids["cross"]
    qtbot.waitUntil(lambda: grid.findChild(MapDialog) is not None and grid.findChild(MapDialog).isVisible())
    assert "L2 H3" in grid.findChild(MapDialog).title_label.text()
    assert "cross layer 2 head 3" in win.statusBar().currentMessage()
    grid.findChild(MapDialog).close()
    QApplication.processEvents()


def test_at_1400x900_every_agreement_row_shows_and_no_idle_percentage(qtbot, app):
    """A method scrolled out of the short agreement table would read as missing; "0%" would read as a failed run."""
    page = app.analysis.causal_page
    app.window.tabs.setCurrentWidget(page)
    page.content().setCurrentIndex(1)
    view = page.content().source
    qtbot.mouseClick(view.run_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: view.status.text().startswith("Integrated"), timeout=60_000)
    QApplication.processEvents()
    table = view.agreement
    for row in range(table.rowCount()):
        assert table.viewport().rect().contains(table.visualItemRect(table.item(row, 0))), row
    assert table.rowCount() == 3 and not view.progress.isTextVisible()
