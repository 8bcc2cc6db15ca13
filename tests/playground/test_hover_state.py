"""The hover readout and outline describe the map on screen now, or nothing; exports never carry them.

Hover a cell, then let a new frame arrive (new input, another view, an ablated head): the mouse did not move, so no
mouse event corrects the readout. A readout left in place would name a row the new map no longer has ("L2 H2
query 12 '<pad>'" over a five-row map), or say "masked" in the rollout view, where nothing is masked. Leaving the maps
clears it. Where the mouse was is no part of an exported picture either.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PySide6.QtCore import QPoint, QPointF, Qt
from PySide6.QtGui import QAction, QCursor, QImage
from PySide6.QtWidgets import QFileDialog
from qt_helpers import readout, rest_mouse_on_cell, retype, shown_menu, start_app, wait_frame

WHITE = 0xFFFFFFFF  # the hover outline's colour (the role badges' text is white too, in short strokes)
OUTLINED = 40  # pixels: a white line at least this long is the outline of a hovered row, never a letter


def show_cross(qtbot, app):
    """Click the Cross tab, as a person does; returns its grid once drawn."""
    tabs = app.playground.grid_tabs
    grid = app.playground.grids["cross"]
    qtbot.mouseClick(tabs.tabBar(), Qt.MouseButton.LeftButton, pos=tabs.tabBar().tabRect(tabs.indexOf(grid)).center())
    qtbot.waitUntil(grid.graphics.isVisible)
    return grid


def cell_pos(grid, layer: int, head: int, i: int, j: int) -> QPoint:
    """The viewport pixel at the centre of a cell."""
    rect = grid.map_rect(layer, head)
    return grid.graphics.mapFromScene(grid.atlas_plot.to_scene(QPointF(rect.x() + j + 0.5, rect.y() + i + 0.5)))


def hover(qtbot, grid, layer: int, head: int, i: int, j: int) -> None:
    rest_mouse_on_cell(qtbot, grid, layer, head, i, j)


def outlined(grid) -> bool:
    """Whether the grid's view shows the hover outline: a straight white line along a map's row."""
    image = grid.graphics.grab().toImage().convertToFormat(QImage.Format.Format_ARGB32)
    pixels = np.frombuffer(image.constBits(), np.uint32, image.sizeInBytes() // 4)
    white = pixels.reshape(image.height(), image.bytesPerLine() // 4)[:, : image.width()] == WHITE
    edges = np.diff(np.pad(white.astype(np.int8), ((0, 0), (1, 1))), axis=1)  # +1 where a run starts, -1 after it
    starts, ends = np.nonzero(edges == 1), np.nonzero(edges == -1)
    return bool(np.any(ends[1] - starts[1] >= OUTLINED))  # rows scanned in order: the k-th start pairs the k-th end


def cursor_cell_text(grid) -> str:
    """What the readout should say for the cell under the mouse now ("" over a gutter or off the maps)."""
    viewport = grid.graphics.viewport()
    cell = grid.cell_at(grid.graphics.mapToScene(viewport.mapFromGlobal(QCursor.pos())))
    return "" if cell is None else grid.tooltip_text_at(*cell)


def test_leaving_the_maps_clears_the_readout_and_the_outline(qtbot):
    app = start_app(qtbot)
    grid = show_cross(qtbot, app)
    hover(qtbot, grid, 1, 1, 12, 5)
    assert readout(grid).startswith("L2 H2 query 12 '<pad>' -> key 5 '4': ")
    assert outlined(grid)  # the row and column outlined
    source = app.playground.input_panel.source
    qtbot.mouseMove(source, source.rect().center())  # off the grid, to the Source field
    qtbot.waitUntil(lambda: readout(grid) == "")
    assert not outlined(grid)
    qtbot.mouseClick(source, Qt.MouseButton.LeftButton)
    retype(qtbot, source, "31")
    wait_frame(qtbot, app.session)
    assert readout(grid) == "" and not outlined(grid)
    app.hub.dirty = False


def test_typing_under_a_still_mouse_names_the_cell_of_the_new_map(qtbot):
    """The mouse rests on row 12 of a 13-row map while the keyboard shortens the input to two symbols: the new map
    has five rows, so the readout names whatever lies under the mouse now, never "query 12"."""
    app = start_app(qtbot)
    grid = show_cross(qtbot, app)
    hover(qtbot, grid, 1, 1, 12, 5)
    source = app.playground.input_panel.source
    source.setFocus()  # the keyboard, not the mouse, goes to the Source field
    source.selectAll()
    qtbot.keyClicks(source, "31")
    wait_frame(qtbot, app.session)
    assert grid.current_maps().values.shape[2] == 5  # rows 0-4 only
    text = readout(grid)
    assert "query 12" not in text
    assert text == cursor_cell_text(grid)
    assert outlined(grid) == bool(text)  # outlined exactly when a cell is named
    app.hub.dirty = False


def test_a_new_view_under_a_still_mouse_names_the_cell_anew(qtbot):
    """Hover a masked <pad> key in the weights view, then show rollout (no cell is masked there) without moving."""
    app = start_app(qtbot)
    grid = show_cross(qtbot, app)
    hover(qtbot, grid, 1, 1, 3, 12)
    assert readout(grid) == "L2 H2 query 3 '2' -> key 12 '<pad>': masked"
    combo = app.playground.view_modes.combo
    combo.setCurrentIndex(combo.findData("rollout"))
    qtbot.waitUntil(lambda: app.session.last_frame.maps.mode == "rollout")
    wait_frame(qtbot, app.session)
    qtbot.waitUntil(lambda: readout(grid) == cursor_cell_text(grid))  # its maps may sit lower
    text = readout(grid)
    assert text.startswith("L2 H2 query ") and "-> key 12 '<pad>': " in text and "masked" not in text
    app.hub.dirty = False


def test_ablating_from_the_menu_names_the_cell_under_the_mouse_not_the_one_clicked(qtbot):
    """Right-click > Ablate L2 H2 (cross): the mouse went to the menu, so the new frame's readout follows the mouse."""
    app = start_app(qtbot)
    grid = show_cross(qtbot, app)
    hover(qtbot, grid, 1, 1, 4, 4)
    clicked = readout(grid)
    qtbot.mouseClick(grid.graphics.viewport(), Qt.MouseButton.RightButton, pos=cell_pos(grid, 1, 1, 4, 4))
    qtbot.waitUntil(lambda: shown_menu(grid) is not None)
    menu = shown_menu(grid)
    ablate = next(a for a in menu.actions() if a.text() == "Ablate L2 H2 (cross)")
    qtbot.mouseMove(menu, menu.actionGeometry(ablate).center())  # the mouse is on the menu now
    ablate.trigger()
    menu.close()
    qtbot.waitUntil(lambda: grid.is_ablated(1, 1))
    wait_frame(qtbot, app.session)
    text = readout(grid)
    assert text != clicked.strip() and text == cursor_cell_text(grid)
    assert outlined(grid) == bool(text)
    app.hub.dirty = False


def export(app, monkeypatch, fmt: str, path: Path) -> bytes:
    """File > Export > Current attention grid as PNG / SVG, answering the save dialog with `path`."""
    monkeypatch.setattr(QFileDialog, "getSaveFileName", lambda *a, **k: (str(path), ""))
    text = {"png": "Current attention grid as &PNG…", "svg": "Current attention grid as &SVG…"}[fmt]
    action = next(a for a in app.window.findChildren(QAction) if a.text() == text)
    action.trigger()
    return path.read_bytes()


def test_exported_grid_images_leave_out_the_hover_outline_and_hint(qtbot, monkeypatch, tmp_path):
    """The same grid exported with and without a hovered cell gives the same files; their caption, which lists the
    tokens, points there instead of saying "hover" (an image has no mouse)."""
    app = start_app(qtbot)
    grid = show_cross(qtbot, app)
    qtbot.waitUntil(lambda: bool(app.badges) and bool(app.badges["cross"].texts()), timeout=60_000)  # heads analysed
    hover(qtbot, grid, 0, 0, 2, 2)
    source = app.playground.input_panel.source
    qtbot.mouseMove(source, source.rect().center())  # off the maps: nothing hovered
    qtbot.waitUntil(lambda: not outlined(grid))
    assert "key labels too small to draw here: hover a cell" in grid.header.legend_label.text()
    plain = {fmt: export(app, monkeypatch, fmt, tmp_path / f"plain.{fmt}") for fmt in ("png", "svg")}
    hover(qtbot, grid, 1, 1, 6, 6)
    assert outlined(grid)
    hovered = {fmt: export(app, monkeypatch, fmt, tmp_path / f"hovered.{fmt}") for fmt in ("png", "svg")}
    assert outlined(grid)  # still outlined on screen after the export
    assert QImage.fromData(hovered["png"]) == QImage.fromData(plain["png"])
    svg = hovered["svg"].decode()
    assert svg == plain["svg"].decode()
    assert "key labels too small to draw here: the tokens are listed above" in svg and "hover" not in svg
    app.hub.dirty = False


def test_maps_that_move_under_a_still_mouse_are_named_anew(qtbot):
    """A taller or shorter view moves the cells under a mouse that did not move: the readout follows the maps."""
    app = start_app(qtbot)
    grid = show_cross(qtbot, app)
    before = hover(qtbot, grid, 1, 1, 3, 5)
    window = app.window
    window.resize(window.width(), window.height() - 90)  # the grid loses height: every row gets shorter
    qtbot.waitUntil(lambda: cursor_cell_text(grid) not in ("", before))  # another cell lies under the mouse now
    qtbot.waitUntil(lambda: readout(grid) == cursor_cell_text(grid))
    assert outlined(grid)
    app.hub.dirty = False
