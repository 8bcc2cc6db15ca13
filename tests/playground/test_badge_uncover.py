"""Role badges stand in a blank strip above each row of maps, so every cell shows whole with the badges on: the
first query row's last keys (where a badge used to sit) as much as any other, whether the mouse is on a map or not.
The readout line names the cell alone, an export shows every badge wherever the mouse is, and without roles the
strips are gone: the grid draws what a grid that never had badges draws."""

from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtCore import QPoint, QRect
from PySide6.QtGui import QImage
from qt_helpers import rest_mouse_on_cell, show_grid
from test_grid_reuse_pixels import SIZE, badged_grid, maps, pixels

SHOWN = maps(8, seed=3)


def map_box(grid, badges, layer: int, head: int) -> QRect:
    """Every viewport pixel that one map's cells touch."""
    to_device = badges.layer.deviceTransform(grid.graphics.viewportTransform())
    return to_device.mapRect(grid.map_rect(layer, head)).toAlignedRect()


def map_pixels(image: np.ndarray, box: QRect) -> np.ndarray:
    return image[box.top() : box.bottom() + 1, box.left() : box.right() + 1]


def without_badges(grid, badges) -> np.ndarray:
    """The same grid, mouse and layout with no badge drawn at all."""
    badges.layer.setVisible(False)
    try:
        return pixels(grid)
    finally:
        badges.layer.setVisible(True)


def every_map(grid) -> list[tuple[int, int]]:
    lay = grid.atlas_layout()
    return [(layer, head) for layer in range(lay.n_layers) for head in (*range(lay.n_heads), -1)]


@pytest.mark.parametrize("causal", [False, True])
def test_every_cell_of_every_map_shows_whole_with_the_badges_on_the_mouse_anywhere(qtbot, causal):
    shown = maps(8, seed=3, causal=causal)
    grid, badges = badged_grid(qtbot, shown)
    qtbot.mouseMove(grid.header, QPoint(5, 5))  # the mouse off the maps, then on the first query row's last key
    for rest in (None, (0, 1, 0, 7)):
        if rest is not None:
            rest_mouse_on_cell(qtbot, grid, *rest)
        with_them, bare = pixels(grid), without_badges(grid, badges)
        assert np.count_nonzero(with_them != bare) > 0  # the badges are drawn
        for layer, head in every_map(grid):
            box = map_box(grid, badges, layer, head)
            np.testing.assert_array_equal(map_pixels(with_them, box), map_pixels(bare, box), f"{(layer, head)}")


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


def test_the_readout_names_the_hovered_cell_alone_its_badge_still_above_its_map(qtbot):
    grid, badges = badged_grid(qtbot, SHOWN)
    label = grid.header.hover_label
    cell = rest_mouse_on_cell(qtbot, grid, 0, 1, 0, 7)
    assert label.isVisible() and label.text() == cell and cell.startswith("L1 H2 query 0")
    to_device = badges.layer.deviceTransform(grid.graphics.viewportTransform())
    drawn = dict(zip(badges.texts(), badges.layer.fitted(to_device)))
    rect, text = drawn[(0, 1)]
    assert text == badges.texts()[(0, 1)]  # the hovered map's badge is drawn in full
    assert rect.bottom() <= map_box(grid, badges, 0, 1).top()  # above its map


def test_without_roles_the_strips_go_and_the_grid_draws_as_one_that_never_had_badges(qtbot):
    grid, badges = badged_grid(qtbot, SHOWN)
    with_strips = grid.atlas_layout().map_rect(0, 0).top()
    badges.set_roles(())  # another model, not scored yet
    assert grid.atlas_layout().map_rect(0, 0).top() < with_strips

    plain = show_grid(qtbot, "cross", SIZE)
    plain.set_maps(SHOWN)
    assert not np.count_nonzero(pixels(grid) != pixels(plain))


def test_square_cells_held_small_by_the_width_keep_every_badge_above_its_map(qtbot):
    """Square cells on a wide grid are sized by its width, not its height: the strips still hold the badges."""
    grid, badges = badged_grid(qtbot, SHOWN, size=(900, 620))
    grid.set_square_cells(True)
    with_them, bare = pixels(grid), without_badges(grid, badges)
    to_device = badges.layer.deviceTransform(grid.graphics.viewportTransform())
    assert all(text for _, text in badges.layer.fitted(to_device))  # every badge drawn
    for layer, head in every_map(grid):
        box = map_box(grid, badges, layer, head)
        assert abs(box.width() - box.height()) <= 2  # square cells: 8 keys by 8 queries
        np.testing.assert_array_equal(map_pixels(with_them, box), map_pixels(bare, box), f"{(layer, head)}")


def test_typing_never_moves_the_first_row_of_maps_with_the_badges_on(qtbot):
    """The strips are as tall as a badge at every input length, so the first row of maps starts where it did,
    whatever the length (a strip of whole cell rows grew by a row at some lengths and moved every map down by it)."""
    grid, badges = badged_grid(qtbot, maps(6, seed=0))
    tops = []
    for n in (6, 7, 9, 12, 16, 24, 7, 6):
        grid.set_maps(maps(n, seed=n))
        badges.refresh()
        pixels(grid)  # painted: the view's matrix is up to date
        to_device = badges.layer.deviceTransform(grid.graphics.viewportTransform())
        assert all(text for _, text in badges.layer.fitted(to_device)), n  # every badge drawn
        tops.append(to_device.mapRect(grid.map_rect(0, 0)).top())
    assert np.ptp(tops) < 1.0, tops  # under a pixel
