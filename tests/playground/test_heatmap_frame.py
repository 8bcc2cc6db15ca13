"""The grid's frame while the input's length changes: the view, the titles and the maps' corners stay where they are,
and every label, hover and click still lands on its own cell.

Each map and its gutter span one view unit, so a keystroke rescales the atlas inside a fixed frame instead of
re-framing the plot (which relaid out all four axes and repainted the whole view: about 1 ms of a 128-token frame).
"""

from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtCore import QEvent, QPoint, QPointF, QRect, Qt
from PySide6.QtGui import QMouseEvent
from PySide6.QtWidgets import QApplication
from qt_helpers import show_grid

from visualizer.state.snapshots import KindMaps
from visualizer.widgets.heatmap.atlas import AVG
from visualizer.widgets.heatmap.grid import AttentionGrid


@pytest.fixture
def grid(qtbot):
    return show_grid(qtbot, "encoder_self", (1100, 760))


def show_length(grid: AttentionGrid, n: int, layers: int = 2, heads: int = 4) -> None:
    """Maps for an input of n tokens, drawn and laid out as a user would see them."""
    rng = np.random.default_rng(n)
    values = rng.random((layers, heads, n, n)).astype(np.float32)
    values /= values.sum(-1, keepdims=True)
    labels = tuple(f"t{i}" for i in range(n))
    grid.set_maps(KindMaps("encoder_self", values, np.ones((n, n), bool), labels, labels))
    QApplication.processEvents()


def on_screen(grid: AttentionGrid, atlas: QPointF) -> QPointF:
    """A point in atlas coordinates in the grid's viewport pixels (fractional: mapFromScene rounds to a pixel)."""
    return grid.graphics.viewportTransform().map(grid.atlas_plot.to_scene(atlas))


def hover(grid: AttentionGrid, pos: QPoint) -> None:
    """The mouse moved to a viewport pixel (a real move event: QTest's moves after the first never arrive here)."""
    viewport = grid.graphics.viewport()
    none = Qt.MouseButton.NoButton
    QApplication.sendEvent(
        viewport,
        QMouseEvent(
            QEvent.Type.MouseMove,
            QPointF(pos),
            viewport.mapToGlobal(QPointF(pos)),
            none,
            none,
            Qt.KeyboardModifier.NoModifier,
        ),
    )


def view_to_screen(grid: AttentionGrid, x: float, y: float) -> QPointF:
    return grid.graphics.viewportTransform().map(grid.plot_item.getViewBox().mapViewToScene(QPointF(x, y)))


def axis_pixels(grid: AttentionGrid, side: str) -> np.ndarray:
    """What the user sees of one axis (its title texts), as RGB pixels."""
    axis = grid.plot_item.getAxis(side)
    rect = (
        grid.graphics.mapFromScene(axis.sceneBoundingRect())
        .boundingRect()
        .intersected(QRect(QPoint(0, 0), grid.graphics.viewport().size()))
    )
    image = grid.graphics.viewport().grab(rect).toImage()
    return np.array(
        [[image.pixelColor(x, y).getRgb()[:3] for x in range(image.width())] for y in range(image.height())]
    )


def test_a_new_length_leaves_the_frame_the_titles_and_the_maps_corners_in_place(grid):
    show_length(grid, 31)
    vb = grid.plot_item.getViewBox()
    framed, titles = vb.viewRange(), axis_pixels(grid, "top")
    corners = {
        (layer, head): on_screen(grid, grid.map_rect(layer, head).topLeft()) for layer in range(2) for head in range(4)
    }
    for n in (32, 33, 32):  # typing, and a backspace
        show_length(grid, n)
        assert vb.viewRange() == framed
        for key, before in corners.items():
            now = on_screen(grid, grid.map_rect(*key).topLeft())
            assert abs(now.x() - before.x()) < 0.5 and abs(now.y() - before.y()) < 0.5, (n, key, before, now)
        np.testing.assert_array_equal(axis_pixels(grid, "top"), titles)  # "H1 ... avg" not moved by a pixel


@pytest.mark.parametrize("lengths", [(3, 40, 4, 5), (12, 11, 12)])
def test_layer_and_head_titles_stay_centred_on_their_maps(grid, lengths):
    for n in lengths:
        show_length(grid, n)
        lay = grid.atlas_layout()
        heads = grid.plot_item.getAxis("top")._tickLevels[0]
        assert [text for _, text in heads] == ["H1", "H2", "H3", "H4", "avg"]
        for (value, text), head in zip(heads, [0, 1, 2, 3, AVG]):
            centre = on_screen(grid, grid.map_rect(0, head).center()).x()
            assert abs(view_to_screen(grid, value, 0).x() - centre) <= 0.5, (n, text)
        for (value, text), layer in zip(grid.plot_item.getAxis("left")._tickLevels[0], range(lay.n_layers)):
            centre = on_screen(grid, grid.map_rect(layer, 0).center()).y()
            assert text == f"L{layer + 1}" and abs(view_to_screen(grid, 0, value).y() - centre) <= 0.5, (n, text)


def test_titles_stay_centred_when_the_window_grows_after_typing(grid, qtbot):
    """A title left where it was (it would have moved by under half a pixel) is checked again at the new size."""
    grid.resize(grid.minimumSizeHint())
    QApplication.processEvents()
    for n in (10, 11):  # 11's titles within half a pixel of 10's at this size: 10's stay (about 2 px off at 2400 px)
        show_length(grid, n)
    grid.resize(2400, 1000)
    qtbot.waitUntil(lambda: grid.graphics.viewport().width() > 2000)
    QApplication.processEvents()
    for (value, text), head in zip(grid.plot_item.getAxis("top")._tickLevels[0], [0, 1, 2, 3, AVG]):
        centre = on_screen(grid, grid.map_rect(0, head).center()).x()
        assert abs(view_to_screen(grid, value, 0).x() - centre) <= 0.5, text


def test_token_labels_sit_on_their_own_rows_and_columns_at_every_length(grid):
    grid.resize(1800, 1000)  # room for every label of a short input
    for n in (5, 6, 4):
        show_length(grid, n, layers=2, heads=1)
        lay = grid.atlas_layout()
        rows, cols = grid.plot_item.getAxis("right")._tickLevels[0], grid.plot_item.getAxis("bottom")._tickLevels[0]
        assert len(rows) == 2 * n and len(cols) == 2 * n  # the head's map and the average, each layer
        for k, (value, text) in enumerate(rows):
            layer, i = divmod(k, n)
            assert text == f"t{i}"
            centre = on_screen(grid, QPointF(0, lay.row_off[layer] + i + 0.5)).y()
            assert view_to_screen(grid, 0, value).y() == pytest.approx(centre, abs=0.5)
        for k, (value, text) in enumerate(cols):
            column, j = divmod(k, n)
            assert text == f"t{j}"
            centre = on_screen(grid, QPointF(lay.col_off[column] + j + 0.5, 0)).x()
            assert view_to_screen(grid, value, 0).x() == pytest.approx(centre, abs=0.5)


def test_hover_names_the_cell_under_the_mouse_after_the_length_changes(grid, qtbot):
    for n in (7, 19, 8):
        show_length(grid, n)
        lay = grid.atlas_layout()
        for layer, head, i, j in [(1, 2, n - 1, 0), (0, AVG, 3, n - 2), (1, 0, 0, n - 1)]:
            rect = grid.map_rect(layer, head)
            pos = on_screen(grid, QPointF(rect.x() + j + 0.5, rect.y() + i + 0.5)).toPoint()
            qtbot.wait(40)  # pyqtgraph drops mouse moves that follow the last one within a frame
            hover(grid, pos)
            expected = grid.tooltip_text_at(layer, head, i, j)
            qtbot.waitUntil(lambda expected=expected: grid.image_item.toolTip() == expected)
        assert lay.tq == n
