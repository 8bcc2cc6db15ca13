"""Typing never moves the maps: a legend line that comes and goes with the input's length keeps its room."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from qt_helpers import show_widget, start_app, wait_frame


@pytest.fixture
def app(qtbot):
    app = start_app(qtbot, (1280, 800))
    yield app
    app.window.close()


def type_keys(qtbot, app, keys) -> None:
    for key in keys:
        qtbot.keyClick(app.playground.input_panel.source, key)
        wait_frame(qtbot, app.session)


@pytest.mark.parametrize("kind", ["encoder_self", "cross"])
def test_the_maps_keep_their_place_while_a_short_source_is_typed(qtbot, app, kind):
    """At 1280 x 800 a six-symbol source's legend needs a line more than a five-symbol one's ("query and key labels
    too small" against "key labels too small"): typing back and forth moved the maps 14 px each key."""
    qtbot.waitUntil(lambda: app.heads.roles is not None, timeout=30_000)  # its badge legend adds a line, once
    view = app.playground
    view.grid_tabs.setCurrentWidget(view.grids[kind])
    source = view.input_panel.source
    source.selectAll()
    qtbot.keyClicks(source, "012345")
    wait_frame(qtbot, app.session)
    grid = view.grids[kind]
    legends, tops, heights = set(), set(), set()
    for key in [Qt.Key.Key_Backspace, Qt.Key.Key_7] * 3:
        type_keys(qtbot, app, [key])
        qtbot.wait(20)  # a layout pass the key asked for runs here
        legends.add(grid.header.legend_label.text())
        tops.add(grid.graphics.mapTo(grid, grid.graphics.rect().topLeft()).y())
        heights.add(grid.graphics.height())
    assert len(legends) == 2  # the legend did change with the length: the test sees the case it is about
    assert len(tops) == 1 and len(heights) == 1, f"the maps moved while typing: tops {tops}, heights {heights}"


def test_the_legend_slot_keeps_its_tallest_text_room_until_its_width_changes(qtbot):
    from PySide6.QtWidgets import QVBoxLayout, QWidget

    from visualizer.widgets.common.stable_label import WrapLabelSlot

    page = QWidget()
    slot = WrapLabelSlot("short")
    QVBoxLayout(page).addWidget(slot)
    show_widget(qtbot, page, (220, 300))
    one_line = slot.height()
    slot.setText("a legend long enough to wrap onto several lines at this narrow width, and then some more words")
    qtbot.wait(20)
    tall = slot.height()
    assert tall >= 3 * one_line - 2 and slot.label.height() == tall  # the whole text is shown
    slot.setText("short")
    qtbot.wait(20)
    assert slot.height() == tall and slot.text() == "short"  # typing back does not move what is below
    page.resize(600, 300)  # a new width: the slot fits its text again
    qtbot.waitUntil(lambda: slot.height() == one_line, timeout=2000)


def test_a_shorter_legend_stays_under_the_title_and_the_room_it_keeps_is_below_it(qtbot):
    from PySide6.QtGui import QColor

    from visualizer.widgets.heatmap.grid_header import GridHeader

    header = show_widget(qtbot, GridHeader(), (260, 200))
    qtbot.mouseClick(header.legend_toggle, Qt.MouseButton.LeftButton)  # the whole legend, wrapped
    header.set_legend("abbreviations that take a few lines of this narrow header to say, and then a few more words")
    qtbot.wait(20)
    header.set_legend("")  # back to the mode's shorter legend: the slot keeps its room
    qtbot.wait(20)
    slot = header.legend_label
    image = slot.grab().toImage()
    needed = slot.label.heightForWidth(slot.width())  # what the shorter text takes
    background = QColor(image.pixelColor(image.width() - 1, image.height() - 1))
    inked = [
        y for y in range(image.height()) if any(image.pixelColor(x, y) != background for x in range(image.width()))
    ]
    assert slot.height() > needed + 10 and inked and max(inked) < needed  # its lines at the top, the room below
