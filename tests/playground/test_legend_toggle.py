"""Above the maps, the legend takes one grey line until the reader opens it: at 1280x800 five lines of small print
pushed the maps down to a few pixels a cell. Opened, it says everything it said before, on every grid at once."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QPoint, Qt
from qt_helpers import shown_app, wait_frame

from core_model.shipped import resource_path
from visualizer.widgets.heads.badges import BADGE_LEGEND
from visualizer.widgets.heatmap.mask_backdrop import MASK_LEGEND


@pytest.fixture
def app(qtbot):
    app = shown_app(qtbot, resource_path("copy_rope.pt"), size=(1280, 800))
    qtbot.waitUntil(lambda: app.hub is not None, timeout=60_000)
    qtbot.waitUntil(lambda: app.heads.roles is not None and bool(app.badges["cross"].texts()), timeout=60_000)
    app.playground.grid_tabs.setCurrentWidget(app.playground.grids["cross"])
    wait_frame(qtbot, app.session)
    yield app
    app.hub.dirty = False
    app.window.close()


def grey_lines_above_the_maps(grid) -> int:
    """How many whole lines of text fit between the title and the hover readout (the widgets' heights)."""
    header = grid.header
    top = header.title_label.geometry().bottom()
    bottom = header.hover_label.geometry().top()
    return (bottom - top) // header.title_label.fontMetrics().lineSpacing()


def test_at_1280x800_the_legend_is_one_line_and_its_tooltip_holds_all_of_it(qtbot, app):
    grid = app.playground.grids["cross"]
    header = grid.header
    assert grey_lines_above_the_maps(grid) == 1
    assert header.legend_line.isVisible() and not header.legend_label.isVisible()
    shown = header.legend_line.label.text()
    assert shown.startswith(MASK_LEGEND[:20]) and shown.endswith("…")  # the first sentence, then more to read
    assert header.legend_toggle.isVisible() and header.legend_toggle.text() == "Legend ▸"
    tip = header.legend_line.toolTip()
    assert tip.startswith(MASK_LEGEND) and BADGE_LEGEND in tip  # hovering the line reads every sentence
    maps_top = grid.graphics.mapTo(app.window, QPoint(0, 0)).y()
    title_top = header.title_label.mapTo(app.window, QPoint(0, 0)).y()
    assert maps_top - title_top < 5 * header.title_label.fontMetrics().lineSpacing()  # title, legend, readout


def test_the_legend_button_opens_every_grid_s_legend_and_closes_it_again(qtbot, app):
    view = app.playground
    cross = view.grids["cross"]
    maps_top = cross.graphics.mapTo(app.window, QPoint(0, 0)).y()
    qtbot.mouseClick(cross.header.legend_toggle, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: cross.header.legend_label.isVisible())
    assert cross.header.legend_toggle.text() == "Legend ▾" and not cross.header.legend_line.isVisible()
    assert app.badges["cross"].legend.isVisible() and app.badges["cross"].legend.text() == BADGE_LEGEND
    assert cross.header.legend_label.text().startswith(MASK_LEGEND)
    qtbot.waitUntil(lambda: grey_lines_above_the_maps(cross) >= 4)  # wrapped, with the badges' legend
    assert cross.graphics.mapTo(app.window, QPoint(0, 0)).y() > maps_top  # the maps make room for it

    encoder = view.grids["encoder_self"]
    view.grid_tabs.setCurrentWidget(encoder)
    wait_frame(qtbot, app.session)
    assert encoder.header.legend_label.isVisible() and encoder.header.legend_toggle.text() == "Legend ▾"

    qtbot.mouseClick(encoder.header.legend_toggle, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: encoder.header.legend_line.isVisible())
    qtbot.waitUntil(lambda: grey_lines_above_the_maps(encoder) == 1)  # laid out again
    assert not encoder.header.legend_label.isVisible()
    view.grid_tabs.setCurrentWidget(cross)
    qtbot.waitUntil(lambda: cross.header.legend_line.isVisible())
    assert not app.badges["cross"].legend.isVisible() and cross.header.legend_toggle.text() == "Legend ▸"
