"""While stepping, the grids outline the newest decoder position in red, and their legend says what the red frame is:
beside the decoder panel's chips, where red means "wrong", an unexplained red frame reads as a mistake."""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import Qt
from PySide6.QtGui import QImage
from qt_helpers import start_app, wait_frame

OUTLINE = "red outline = the newest decoder position (it reads the token decoded last, or <bos>)"


def red_pixels(grid) -> int:
    """How many pixels of the grid's view are the outline's red (#ff3030)."""
    image = grid.graphics.grab().toImage().convertToFormat(QImage.Format.Format_RGBA8888)
    rows = np.frombuffer(image.constBits(), np.uint8).reshape(image.height(), image.bytesPerLine())
    rgba = rows[:, : image.width() * 4].reshape(image.height(), image.width(), 4)
    return int(((rgba[..., 0] > 230) & (rgba[..., 1] < 80) & (rgba[..., 2] < 80)).sum())


def test_the_red_outline_is_named_in_the_legend_while_stepping_and_gone_with_it(qtbot):
    app = start_app(qtbot, size=(1280, 800))
    view, panel = app.playground, app.playground.decoder_panel
    cross = view.grids["cross"]
    view.grid_tabs.setCurrentWidget(cross)
    wait_frame(qtbot, app.session)
    assert OUTLINE not in cross.header.legend_label.text() and red_pixels(cross) == 0
    qtbot.mouseClick(panel.mode_buttons["stepping"], Qt.MouseButton.LeftButton)
    wait_frame(qtbot, app.session)
    qtbot.mouseClick(panel.buttons["step"], Qt.MouseButton.LeftButton)
    wait_frame(qtbot, app.session)
    legend = cross.header.legend_label
    qtbot.waitUntil(lambda: red_pixels(cross) > 0)  # the newest position's row, outlined in every map
    assert OUTLINE in legend.text()
    line = cross.header.legend_line.label  # the one line the collapsed legend shows leads with it
    assert line.isVisible() and line.text().startswith("red outline = the newest decoder position")
    encoder_legend = view.grids["encoder_self"].header.legend_label.text()
    assert OUTLINE not in encoder_legend  # no decoder position there, and the maps do not change per Step: it says so
    assert "stepping: the encoder reads the source alone; Decoder self and Cross gain a row per Step" in encoder_legend
    qtbot.mouseClick(panel.mode_buttons["teacher"], Qt.MouseButton.LeftButton)
    wait_frame(qtbot, app.session)
    qtbot.waitUntil(lambda: red_pixels(cross) == 0)
    assert OUTLINE not in legend.text()
    assert "stepping" not in view.grids["encoder_self"].header.legend_label.text()
    app.hub.dirty = False
