"""The large view draws masked cells and special tokens as the grids do: grey with its legend, and a key that names
every abbreviation.

Transparent masked cells over the black background would read as black: strong zero attention, where the query
may not look at all. So they are grey, and the legend is on screen, not only in the exported caption.
"""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import QEvent, QPointF, Qt
from PySide6.QtGui import QImage, QMouseEvent
from PySide6.QtWidgets import QApplication, QLabel
from qt_helpers import start_app, wait_frame

from visualizer.widgets.heatmap.large_view import MapDialog
from visualizer.widgets.heatmap.mask_backdrop import MASK_FILL

GREY = (MASK_FILL.red(), MASK_FILL.green(), MASK_FILL.blue())


def open_large_view(qtbot, app, kind: str, layer: int, head: int) -> MapDialog:
    """Click the grid's tab, then double-click one of its maps, as a person does."""
    tabs, grid = app.playground.grid_tabs, app.playground.grids[kind]
    qtbot.mouseClick(tabs.tabBar(), Qt.MouseButton.LeftButton, pos=tabs.tabBar().tabRect(tabs.indexOf(grid)).center())
    qtbot.waitUntil(grid.graphics.isVisible)
    rect = grid.map_rect(layer, head)
    viewport = grid.graphics.viewport()
    pos = grid.graphics.mapFromScene(grid.atlas_plot.to_scene(QPointF(rect.x() + 1.5, rect.y() + 1.5)))
    qtbot.mouseClick(viewport, Qt.MouseButton.LeftButton, pos=pos)
    left, none = Qt.MouseButton.LeftButton, Qt.MouseButton.NoButton
    # Qt's real order after the first click is DblClick, Release (QTest.mouseDClick sends a Press first, which
    # pyqtgraph's scene turns into a plain second click)
    for event_type, held in ((QEvent.Type.MouseButtonDblClick, left), (QEvent.Type.MouseButtonRelease, none)):
        QApplication.sendEvent(
            viewport,
            QMouseEvent(
                event_type, QPointF(pos), viewport.mapToGlobal(QPointF(pos)), left, held, Qt.KeyboardModifier.NoModifier
            ),
        )
    qtbot.waitUntil(lambda: grid.findChild(MapDialog) is not None and grid.findChild(MapDialog).isVisible())
    dialog = grid.findChild(MapDialog)
    qtbot.waitUntil(lambda: dialog.plot_item.getAxis("bottom").label.toPlainText().strip() != "key")  # titled
    return dialog


def cell_colour(dialog: MapDialog, i: int, j: int) -> tuple[int, int, int]:
    """The colour drawn at the centre of cell (query i, key j) of the large view, read from the screen."""
    view = dialog.graphics
    scene = dialog.plot_item.getViewBox().mapViewToScene(QPointF(j + 0.5, i + 0.5))
    point = view.mapFromScene(scene)
    image = view.viewport().grab().toImage().convertToFormat(QImage.Format.Format_RGB32)
    scale = image.width() / view.viewport().width()
    colour = image.pixelColor(int(point.x() * scale), int(point.y() * scale))
    return colour.red(), colour.green(), colour.blue()


def visible_texts(dialog: MapDialog) -> list[str]:
    return [label.text() for label in dialog.findChildren(QLabel) if label.isVisible()]


def grey_pixels(png: QImage) -> int:
    image = png.convertToFormat(QImage.Format.Format_RGB32)
    pixels = np.frombuffer(image.constBits(), np.uint32, image.sizeInBytes() // 4)
    return int(np.count_nonzero(pixels == (0xFF000000 | GREY[0] << 16 | GREY[1] << 8 | GREY[2])))


def test_masked_pad_keys_are_grey_with_the_legend_and_the_key_names_the_specials(qtbot, tmp_path):
    """Cross-attention at launch: keys 12 and 13 are <pad>, masked for every query."""
    app = start_app(qtbot)
    dialog = open_large_view(qtbot, app, "cross", 1, 1)
    maps = app.playground.grids["cross"].current_maps()
    assert maps.key_labels[12:] == ("<pad>", "<pad>") and not maps.valid[:, 12:].any()
    for i in (0, 6, 12):
        for j in (12, 13):
            assert cell_colour(dialog, i, j) == GREY, f"masked cell ({i}, {j}) drawn grey"
    assert cell_colour(dialog, 6, 3) != GREY  # an attended cell keeps its colour
    # rows 12 and 13 are <pad> queries, coloured: the legend says why
    assert maps.query_labels[-2:] == ("<pad>", "<pad>") and maps.valid[-2:].any()
    legend = "■ grey = masked (the query cannot attend to that key) · <pad> rows still attend, while no token"
    assert any(text.startswith(legend) for text in visible_texts(dialog))
    axis = dialog.plot_item.getAxis("bottom")
    assert axis.label.toPlainText().strip() == "key (B = <bos>, E = <eos>, P = <pad>)"
    assert grey_pixels(QImage(str(dialog.export_png(tmp_path / "large.png")))) > 1000  # the export shows them too
    app.hub.dirty = False


def test_the_legend_follows_the_view(qtbot):
    """Rollout masks no cell: its large view says so and draws the <pad> keys in the scale's colours."""
    app = start_app(qtbot)
    dialog = open_large_view(qtbot, app, "cross", 1, 1)
    combo = app.playground.view_modes.combo
    combo.setCurrentIndex(combo.findData("rollout"))
    qtbot.waitUntil(lambda: app.session.last_frame.maps.mode == "rollout")
    wait_frame(qtbot, app.session)
    qtbot.waitUntil(lambda: "rollout" in dialog.title_label.text())
    assert any(text.startswith("no cell is masked in rollout") for text in visible_texts(dialog))
    assert not any("grey = masked" in text for text in visible_texts(dialog))
    assert cell_colour(dialog, 6, 12) != GREY
    combo.setCurrentIndex(combo.findData("scores"))
    qtbot.waitUntil(lambda: "scores" in dialog.title_label.text())
    legend = "■ grey = masked (score −∞: the query cannot attend to that key) · <pad> rows still attend"
    assert any(text.startswith(legend) for text in visible_texts(dialog))
    assert cell_colour(dialog, 6, 12) == GREY
    app.hub.dirty = False
