"""Each shipped lesson played in the real window at 1280x800, as a learner does it: Help > Lessons (F9), Start,
Next, the mouse on a cell. Each step completes only on its own action, and every number the explanation quotes is
one the app shows for that cell (the readout above the grid, the row of the map as drawn)."""

from __future__ import annotations

import re

import numpy as np
import pytest
from PySide6.QtCore import QEvent, QPointF, QSettings, Qt
from PySide6.QtGui import QMouseEvent
from PySide6.QtWidgets import QAbstractButton, QApplication
from qt_helpers import readout, rest_mouse_on_cell, shown_app, wait_frame

from core_model.shipped import resource_path
from visualizer.lessons.vocabulary import EVENTS, TABS
from visualizer.shortcut_list import shortcut_groups

NUMBER = re.compile(r"\d+(?:\.\d+)?")


@pytest.fixture
def app(qtbot):
    app = shown_app(qtbot, resource_path("copy_rope.pt"))
    qtbot.waitUntil(lambda: app.lessons is not None and app.lessons.loaded, timeout=60_000)  # read off the GUI thread
    # the heads' roles, analysed after loading, add a legend line above the grids: the cells move once, then stay
    qtbot.waitUntil(lambda: app.heads.roles is not None and bool(app.badges["cross"].texts()), timeout=60_000)
    wait_frame(qtbot, app.session)
    yield app
    app.hub.dirty = False
    app.window.close()


def open_lessons(qtbot, app):
    with qtbot.waitActive(app.window):
        app.window.activateWindow()
    qtbot.keyClick(app.window, Qt.Key.Key_F9)
    qtbot.waitUntil(app.lessons.dock.isVisible)
    return app.lessons.panel


def start(qtbot, app, title: str):
    panel = open_lessons(qtbot, app)
    row = next(i for i in range(panel.lesson_list.count()) if panel.lesson_list.item(i).text().endswith(title))
    panel.lesson_list.setCurrentRow(row)
    qtbot.mouseClick(panel.start_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: app.lessons.runner.ready, timeout=30_000)
    wait_frame(qtbot, app.session)  # a lesson that opens a model or sets a source: its maps are drawn after it is ready
    return panel


def press_next(qtbot, app, panel) -> None:
    assert panel.next_button.isEnabled()
    qtbot.mouseClick(panel.next_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: app.lessons.runner.ready or app.lessons.runner.lesson is None, timeout=30_000)


def hover(qtbot, grid, layer: int, head: int, i: int, j: int) -> str:
    """Rest the mouse on a cell; returns the readout above the grid once it names that cell."""
    return rest_mouse_on_cell(qtbot, grid, layer, head, i, j)


def numbers_match_the_app(text: str, readout: str, grid, layer: int, head: int, i: int) -> str:
    """Every number of the explanation is one the readout shows or the row's sum as drawn; returns the weight."""
    weight = readout.rsplit(": ", 1)[1]
    row_sum = f"{np.nansum(grid.displayed_matrix(layer, head)[i], dtype=np.float64):.3f}"
    shown = set(NUMBER.findall(readout)) | {row_sum}
    quoted = NUMBER.findall(text)
    assert weight in quoted and set(quoted) <= shown, (text, readout, row_sum)
    return weight


def test_f9_opens_the_dock_and_closing_it_is_remembered(qtbot, app):
    assert not app.lessons.dock.isVisible()  # closed until asked for
    assert any(
        keys == "F9" and what == "Help › Lessons" for _, group in shortcut_groups(app.window) for keys, what in group
    )
    open_lessons(qtbot, app)
    assert QSettings().value("lessons/visible", type=bool) is True
    dock = app.lessons.dock
    assert (
        dock.geometry().left()
        > app.playground.grid_stack.mapTo(app.window, app.playground.grid_stack.rect().topRight()).x() - 2
    )
    close = next(b for b in dock.findChildren(QAbstractButton) if b.isVisible() and b.parent() is dock)
    qtbot.mouseClick(close, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: not dock.isVisible())
    assert QSettings().value("lessons/visible", type=bool) is False


def test_every_tab_a_lesson_may_bring_forward_is_a_tab_of_the_window(qtbot, app):
    """The lesson vocabulary's tab names are checked without the app; each is a title the window's tab bar shows
    (a tab no lesson names need not be listed there)."""
    shown = {app.window.tabs.tabText(i).replace("&", "") for i in range(app.window.tabs.count())}
    assert set(TABS) <= shown and "Heads" in TABS


def test_every_lesson_title_fits_one_line_of_the_list(qtbot, app):
    panel = open_lessons(qtbot, app)
    lines = panel.lesson_list.fontMetrics().lineSpacing()
    items = [panel.lesson_list.item(i) for i in range(panel.lesson_list.count())]
    wrapped = [item.text() for item in items if panel.lesson_list.visualItemRect(item).height() >= 2 * lines]
    assert len(items) == 8 and not wrapped


def test_lesson_one_explains_the_hovered_cell_with_the_numbers_the_app_shows(qtbot, app):
    panel, runner = start(qtbot, app, "What one attention map is"), app.lessons.runner
    grid = app.playground.grids["cross"]
    assert panel.progress_label.text() == "Step 1 of 2" and app.session.source_text == "3141"
    assert app.playground.grid_tabs.currentWidget() is grid and app.playground.view_modes.mode() == "weights"
    assert app.lessons.highlighter.overlay.parentWidget() is grid and app.lessons.highlighter.overlay.isVisible()
    assert panel.explain_label.text().startswith("The model is copy_rope.pt, reading the source 3141. ")
    press_next(qtbot, app, panel)
    assert panel.progress_label.text() == "Step 2 of 2" and not panel.next_button.isEnabled() and not runner.done
    place = grid.geometry()
    for layer, head, i, j in ((1, 0, 2, 3), (0, 2, 4, 1)):  # the text follows the mouse: a second cell, new numbers
        cell_text = hover(qtbot, grid, layer, head, i, j)
        qtbot.waitUntil(lambda cell_text=cell_text: runner.done and runner.payload["readout"] == cell_text)
        assert grid.geometry() == place and readout(grid) == cell_text  # the text moved nothing
        text = panel.explain_label.text()
        assert text.startswith(f"In L{layer + 1} H{head + 1}, query {i} ") and f"on key {j} " in text
        numbers_match_the_app(text, cell_text, grid, layer, head, i)
        assert "adds up to 1.000" in text  # a softmax row
        assert set(runner.payload) == set(EVENTS["cell_hovered"].payload)
    assert panel.next_button.isEnabled() and panel.next_button.text() == "Finish"
    qtbot.mouseClick(panel.next_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: runner.lesson is None)
    assert (
        panel.title_label.text() == "Pick a lesson and press Start lesson." and app.lessons.highlighter.overlay is None
    )
    items = [panel.lesson_list.item(row).text() for row in range(panel.lesson_list.count())]
    assert items[0] == "✓ 1. What one attention map is" and not any(t.startswith("✓") for t in items[1:])
    assert QSettings().value("lessons/finished") in (["What one attention map is"], "What one attention map is")


def large_cell_size(dialog) -> tuple[int, int]:
    """The pixels one cell of a large view spans on screen, across and down."""
    from qt_helpers import cell_pos

    a, b = cell_pos(dialog, 0, 0), cell_pos(dialog, 1, 1)
    return b.x() - a.x(), b.y() - a.y()


def rest_on_large_cell(qtbot, runner, dialog, i: int, j: int) -> None:
    """Rest the mouse on a cell of a large view, as rest_mouse_on_cell does on a grid, until the step hears it."""
    from qt_helpers import cell_pos

    viewport, spot = dialog.graphics.viewport(), QPointF(cell_pos(dialog, i, j))
    qtbot.mouseMove(viewport, spot.toPoint())

    def rested() -> bool:  # a resting hand's move events
        none = Qt.MouseButton.NoButton
        move = QMouseEvent(
            QEvent.Type.MouseMove, spot, viewport.mapToGlobal(spot), none, none, Qt.KeyboardModifier.NoModifier
        )
        QApplication.sendEvent(viewport, move)
        return runner.done and (runner.payload["query"], runner.payload["key"]) == (i, j)

    qtbot.waitUntil(rested, timeout=10_000)


@pytest.mark.parametrize(
    ("title", "first", "maps"),
    [
        ("What one attention map is", 1, [(1, 1)]),
        ("Copying is a diagonal", 1, [(1, 1), (1, 1)]),
        ("Position: sinusoidal and RoPE", 0, [(0, 3), (1, 1)]),
    ],
)
def test_a_hover_step_opens_its_map_large_first_and_says_so(qtbot, app, title, first, maps):
    """The grid's cells are a few pixels at 1280x800: a step asking to rest the mouse on one opens its map large
    (cells of at least 12 px, beside the panel), says so, and a cell there completes it."""
    panel, runner = start(qtbot, app, title), app.lessons.runner
    for _ in range(first):
        press_next(qtbot, app, panel)
    large = app.playground.grids["cross"].large_view
    for n, (layer, head) in enumerate(maps):
        qtbot.waitUntil(lambda: large.is_visible() and large.target == (layer, head))  # noqa: B023
        dialog = large.dialog
        qtbot.waitExposed(dialog)
        say = panel.say_label.text()
        assert f"L{layer + 1} H{head + 1}" in say and "large" in say and not runner.done, runner.payload
        assert min(large_cell_size(dialog)) >= 12
        dock_left = app.lessons.dock.mapToGlobal(app.lessons.dock.rect().topLeft()).x()
        assert dialog.frameGeometry().right() < dock_left  # the panel's text stays readable beside it
        offset = 0 if "(query i, key i)" in say or "key i. " in say else 1  # the cell the step asks for
        row = 3
        rest_on_large_cell(qtbot, runner, dialog, row, row + offset)
        text, tip = panel.explain_label.text(), dialog.tooltip_text_at(row, row + offset)
        assert runner.payload["map"] == f"L{layer + 1} H{head + 1}" and f"query {row} " in text
        assert tip.rsplit(": ", 1)[1] in NUMBER.findall(text)  # the weight the large view's tooltip gives
        if n + 1 < len(maps):
            press_next(qtbot, app, panel)
    dialog.close()


def test_lesson_two_completes_only_on_the_diagonal_of_the_last_layer(qtbot, app):
    panel, runner = start(qtbot, app, "Copying is a diagonal"), app.lessons.runner
    grid = app.playground.grids["cross"]
    assert app.session.source_text == "31415" and grid.current_maps().values.shape[0] == 2
    press_next(qtbot, app, panel)
    hover(qtbot, grid, 1, 1, 2, 2)  # last layer, off the diagonal
    hover(qtbot, grid, 0, 1, 2, 3)  # the diagonal, first layer
    assert not runner.done and not panel.explain_label.isVisible()
    cell_text = hover(qtbot, grid, 1, 1, 2, 3)  # the diagonal of the last layer: the step is done
    qtbot.waitUntil(lambda: runner.done)
    text = panel.explain_label.text()
    on_diagonal = float(numbers_match_the_app(text, cell_text, grid, 1, 1, 2))
    assert text.startswith("L2 H2: query 2 puts ") and "the source symbol '4'" in text
    press_next(qtbot, app, panel)
    assert panel.progress_label.text() == "Step 3 of 3" and not runner.done
    pad_row = grid.current_maps().query_labels.index("<pad>")
    assert f"query {pad_row} '<pad>' -> key {pad_row} " in hover(qtbot, grid, 1, 1, pad_row, pad_row)
    hover(qtbot, grid, 1, 1, 0, 0)  # the <bos> row
    assert not runner.done  # only a digit's row completes the step
    cell_text = hover(qtbot, grid, 1, 1, 2, 2)
    qtbot.waitUntil(lambda: runner.done)
    text = panel.explain_label.text()
    off_diagonal = float(numbers_match_the_app(text, cell_text, grid, 1, 1, 2))
    assert "query 2 '1' -> key 2 '1'" in cell_text  # key i holds the symbol query i reads as its input
    assert text.startswith("L2 H2: query 2 ('1') puts only ") and off_diagonal < on_diagonal


def test_with_the_panel_open_at_1280_the_prediction_keeps_its_room_and_the_tools_move_below(qtbot, app):
    pg = app.playground
    slot, restore = pg.output_slot, pg.restore_heads
    assert app.window.width() == 1280 and not pg.tool_row.below  # room for the tools beside the view choice
    row = pg.view_modes.mapTo(app.window, pg.view_modes.rect().topLeft()).y()
    assert restore.mapTo(app.window, restore.rect().topLeft()).y() == pytest.approx(row, abs=8)
    open_lessons(qtbot, app)
    qtbot.waitUntil(lambda: pg.tool_row.below and restore.width() > 0)
    qtbot.waitUntil(lambda: restore.mapTo(app.window, restore.rect().topLeft()).y() > row + 10)  # a row lower
    assert restore.isVisible() and restore.width() >= restore.sizeHint().width()
    text = pg.output_label.text()
    needed = pg.output_label.fontMetrics().horizontalAdvance(text)
    assert text and slot.width() >= min(needed, 200)  # the prediction line is not squeezed to nothing
    image = slot.grab().toImage()
    background = image.pixelColor(image.width() - 1, image.height() - 1)
    drawn = [image.pixelColor(x, y) for x in range(min(needed, slot.width())) for y in range(image.height())]
    assert any(colour != background for colour in drawn)  # its text is drawn
    app.lessons.dock.close()
    qtbot.waitUntil(lambda: not pg.tool_row.below)
