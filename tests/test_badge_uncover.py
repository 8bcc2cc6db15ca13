"""A role badge sits on a map's top-right cells: with the mouse on that map, the map shows whole, badge gone; the
other maps keep theirs, and an export shows every badge wherever the mouse is."""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import QPoint, QPointF, QRect
from PySide6.QtGui import QImage
from qt_helpers import readout, rest_mouse_on_cell
from test_grid_reuse_pixels import badged_grid, maps, pixels

SHOWN = maps(8, seed=3)


def map_pixels(grid, image: np.ndarray, layer: int, head: int) -> np.ndarray:
    """The viewport pixels inside one map's rectangle."""
    rect = grid.map_rect(layer, head)
    corners = [
        grid.graphics.mapFromScene(grid.atlas_plot.to_scene(QPointF(x, y)))
        for x, y in ((rect.left(), rect.top()), (rect.right(), rect.bottom()))
    ]
    box = QRect(corners[0], corners[1]).normalized().adjusted(2, 2, -2, -2)  # inside the map's edge
    return image[box.top() : box.bottom(), box.left() : box.right()]


def without_badges(grid, badges) -> np.ndarray:
    """The same grid, mouse and layout with no badge drawn at all."""
    badges.layer.setVisible(False)
    try:
        return pixels(grid)
    finally:
        badges.layer.setVisible(True)


def test_the_map_under_the_mouse_shows_without_its_badge_and_the_others_keep_theirs(qtbot):
    grid, badges = badged_grid(qtbot, SHOWN)
    rest_mouse_on_cell(qtbot, grid, 0, 1, 6, 2)  # a cell far from the badge's corner
    hovered, bare = pixels(grid), without_badges(grid, badges)
    np.testing.assert_array_equal(map_pixels(grid, hovered, 0, 1), map_pixels(grid, bare, 0, 1))
    for other in ((0, 0), (1, 1)):  # a badge on every other map
        assert (map_pixels(grid, hovered, *other) != map_pixels(grid, bare, *other)).any()

    rest_mouse_on_cell(qtbot, grid, 1, 2, 6, 2)  # to another map: the first one's badge comes back
    again, bare = pixels(grid), without_badges(grid, badges)
    assert (map_pixels(grid, again, 0, 1) != map_pixels(grid, bare, 0, 1)).any()
    np.testing.assert_array_equal(map_pixels(grid, again, 1, 2), map_pixels(grid, bare, 1, 2))


def test_an_export_shows_every_badge_with_the_mouse_on_a_map(qtbot, tmp_path):
    grid, _ = badged_grid(qtbot, SHOWN)
    grid.graphics.viewport().setFocus()
    away = tmp_path / "away.png"
    qtbot.mouseMove(grid.header, QPoint(5, 5))
    grid.export_png(away)
    rest_mouse_on_cell(qtbot, grid, 0, 1, 6, 2)
    over = tmp_path / "over.png"
    grid.export_png(over)
    assert QImage(str(away)) == QImage(str(over))


def test_the_hovered_maps_role_moves_into_the_readout_while_its_badge_is_hidden(qtbot):
    grid, badges = badged_grid(qtbot, SHOWN)
    label = grid.header.hover_label
    cell = rest_mouse_on_cell(qtbot, grid, 0, 1, 6, 2)
    role = badges.texts()[(0, 1)]
    assert label.isVisible() and label.text() == f"{cell} · its badge: {role}"

    badges.set_roles(())  # no roles (another model): nothing is hidden, nothing to say
    qtbot.waitUntil(lambda: label.text() == cell)
    assert readout(grid) == cell

    qtbot.mouseMove(grid.header, QPoint(5, 5))  # off the maps: no readout, no note
    qtbot.waitUntil(lambda: label.text().strip() == "")
