"""The whole app at the students' screen sizes: in every grid each head's role badge is drawn, whole or as its role,
in the strip above its map and inside the view, and no badge changes a pixel of any map's cells. Other views free
the strips (no badges there); back on the weights, the badges and their strips return; an export shows them."""

from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtCore import QRect, Qt
from PySide6.QtGui import QImage
from qt_helpers import start_app, wait_frame
from test_badge_uncover import map_box, map_pixels, without_badges
from test_grid_reuse_pixels import pixels

from visualizer.widgets.heads.badge_layer import shorter


@pytest.fixture(params=[(1280, 800), (1920, 1080)], ids=["1280x800", "1920x1080"])
def app(qtbot, request):
    app = start_app(qtbot, request.param)
    qtbot.waitUntil(lambda: bool(app.badges) and bool(app.badges["cross"].texts()), timeout=60_000)  # roles scored
    yield app
    app.hub.dirty = False
    app.training.shutdown(5000)
    app.window.close()


def click_grid_tab(qtbot, app, kind: str):
    """Click a grid's tab, as a person does; returns the grid once its badges are placed."""
    tabs, grid = app.playground.grid_tabs, app.playground.grids[kind]
    qtbot.mouseClick(tabs.tabBar(), Qt.MouseButton.LeftButton, pos=tabs.tabBar().tabRect(tabs.indexOf(grid)).center())
    qtbot.waitUntil(grid.graphics.isVisible)
    lay = grid.atlas_layout()
    qtbot.waitUntil(lambda: len(app.badges[kind].texts()) == lay.n_layers * lay.n_heads)
    return grid


def view_box(grid) -> QRect:
    """The plot's data area in viewport pixels: where the maps are, inside the axes."""
    vb = grid.plot_item.getViewBox()
    return grid.graphics.mapFromScene(vb.sceneBoundingRect()).boundingRect()


def check_badges_beside_every_cell(grid, badges) -> None:
    with_them, bare = pixels(grid), without_badges(grid, badges)
    lay = grid.atlas_layout()
    boxes = [map_box(grid, badges, layer, head) for layer in range(lay.n_layers) for head in (*range(lay.n_heads), -1)]
    for box in boxes:  # every cell of every map, the first query row included, shows whole
        np.testing.assert_array_equal(map_pixels(with_them, box), map_pixels(bare, box))
    to_device = badges.layer.deviceTransform(grid.graphics.viewportTransform())
    strip, cells = to_device.mapRect(lay.strip_rect(0, 0)), to_device.mapRect(grid.map_rect(0, 0))
    assert strip.height() < badges.layer.strip_height() + cells.height() / lay.tq  # the maps keep their room
    view = view_box(grid)
    for (key, whole), (rect, text) in zip(badges.texts().items(), badges.layer.fitted(to_device)):
        assert text and (text in shorter(whole) or whole.startswith(text.rstrip("…"))), (key, whole, text)
        drawn = rect.toAlignedRect()
        assert view.contains(drawn), (key, drawn, view)
        assert not any(drawn.intersects(box) for box in boxes), (key, drawn)
        assert drawn.bottom() < map_box(grid, badges, *key).top() < drawn.bottom() + 4, key  # right above its map
        assert (map_pixels(with_them, drawn) != map_pixels(bare, drawn)).any(), key  # the badge is painted


def test_every_badge_in_every_grid_is_drawn_above_its_map_and_covers_no_cell(qtbot, app):
    for kind in app.playground.grids:
        grid = click_grid_tab(qtbot, app, kind)
        check_badges_beside_every_cell(grid, app.badges[kind])


def maps_top(grid, badges) -> int:
    """The first map's top edge in viewport pixels, as last painted."""
    pixels(grid)  # painted: the view's matrix is brought up to date when it paints
    return map_box(grid, badges, 0, 0).top()


def test_other_views_free_the_strips_and_the_weights_view_brings_the_badges_back(qtbot, app, tmp_path):
    grid, badges = click_grid_tab(qtbot, app, "cross"), app.badges["cross"]
    combo = app.playground.view_modes.combo
    weights = combo.currentIndex()
    with_badges = maps_top(grid, badges)
    combo.setCurrentIndex(combo.findData("scores"))
    wait_frame(qtbot, app.session)
    qtbot.waitUntil(lambda: maps_top(grid, badges) < with_badges - 10)  # no strip: the maps move up
    assert not badges.layer.badges()

    combo.setCurrentIndex(weights)
    wait_frame(qtbot, app.session)
    qtbot.waitUntil(lambda: abs(maps_top(grid, badges) - with_badges) <= 1)
    check_badges_beside_every_cell(grid, badges)

    grid.export_png(tmp_path / "with.png")
    badges.layer.setVisible(False)
    grid.export_png(tmp_path / "without.png")
    badges.layer.setVisible(True)
    assert QImage(str(tmp_path / "with.png")) != QImage(str(tmp_path / "without.png"))  # the export has them


def test_a_resized_window_keeps_every_badge_above_its_map(qtbot, app):
    grid = click_grid_tab(qtbot, app, "cross")
    window = app.window
    for size in ((window.width(), window.height() - 160), (window.width() - 200, window.height() + 160)):
        before = grid.graphics.viewport().size()
        window.resize(*size)
        qtbot.waitUntil(lambda before=before: grid.graphics.viewport().size() != before)
        qtbot.waitUntil(lambda: all(text for _, text in fitted(grid, app.badges["cross"])))
        check_badges_beside_every_cell(grid, app.badges["cross"])


def fitted(grid, badges):
    return badges.layer.fitted(badges.layer.deviceTransform(grid.graphics.viewportTransform()))
