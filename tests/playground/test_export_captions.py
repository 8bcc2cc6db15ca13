"""Exported images say everything and nothing false: a caption line longer than the image wraps (every word inside
the image, none cut at its right edge), and the large view's exported axes point to the caption's token lists
instead of asking to hover a cell (an image cannot be hovered)."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import numpy as np
import pytest
from PySide6.QtGui import QColor, QFont, QFontMetricsF, QImage, QPainter
from PySide6.QtWidgets import QApplication
from qt_helpers import show_grid

from visualizer.state.snapshots import KindMaps
from visualizer.widgets.common.image_export import caption_font_px
from visualizer.widgets.heatmap.atlas import HOVER_HINT, LISTED_HINT

SVG = "{http://www.w3.org/2000/svg}"
WIDTH = 520  # narrower than the rollout title and the legend's notes


def _maps(n: int) -> KindMaps:
    rng = np.random.default_rng(n)
    values = rng.random((2, 4, n, n)).astype(np.float32)
    values /= values.sum(-1, keepdims=True)
    labels = tuple(str(k % 10) for k in range(n))
    return KindMaps("encoder_self", values, np.ones((n, n), bool), labels, labels)


@pytest.fixture
def grid(qtbot):
    """An encoder grid in rollout (its title is a formula) with labels too small to draw (the legend says so)."""
    grid = show_grid(qtbot, "encoder_self", (460, 420))
    grid.set_maps(_maps(24), mode="rollout")
    QApplication.processEvents()
    return grid


def _ink(image: QImage) -> np.ndarray:
    """Darkness (0 = white, 255 = black) per pixel of a grey-scale copy of `image`."""
    grey = image.convertToFormat(QImage.Format.Format_Grayscale8)
    rows = np.frombuffer(grey.constBits(), np.uint8, grey.bytesPerLine() * grey.height())
    return 255 - rows.reshape(grey.height(), grey.bytesPerLine())[:, : grey.width()].astype(np.int64)


def _unwrapped_ink(lines: list[str], px: int) -> int:
    """The ink of the caption lines drawn in full, each on one line of a canvas wide enough for all of it."""
    font = QFont()
    font.setPixelSize(px)
    metrics = QFontMetricsF(font)
    canvas = QImage(
        int(max(metrics.horizontalAdvance(t) for t in lines)) + 40,
        int(metrics.height() * (len(lines) + 1)),
        QImage.Format.Format_ARGB32,
    )
    canvas.fill(QColor("white"))
    painter = QPainter(canvas)
    painter.setFont(font)
    painter.setPen(QColor("black"))
    for k, text in enumerate(lines):
        painter.drawText(6, int(metrics.height() * k + metrics.ascent()), text)
    painter.end()
    return int(_ink(canvas).sum())


def test_a_long_caption_line_wraps_inside_the_png(grid, tmp_path):
    caption = grid.header.caption(grid.current_maps())
    assert LISTED_HINT in caption[-1] and "Ã = rownorm" in caption[0]
    image = QImage(str(grid.export_png(tmp_path / "grid.png", width=WIDTH)))
    assert image.width() == WIDTH
    ink = _ink(image)
    band = int(np.argmax(ink[:, 1] > 0))  # the white band ends where the plot's dark background starts
    assert band > 0
    text = ink[:band]
    assert text[:, -4:].max() < 40, "caption text runs off the image's right edge"
    drawn, whole = int(text.sum()), _unwrapped_ink(caption, caption_font_px(WIDTH))
    assert drawn == pytest.approx(whole, rel=0.04)  # every word of every line is in the band, none cut


def test_a_long_caption_line_wraps_inside_the_svg(grid, tmp_path):
    caption = grid.header.caption(grid.current_maps())
    root = ET.parse(grid.export_svg(tmp_path / "grid.svg")).getroot()
    width = float(root.get("viewBox").split()[2])
    band = root.find(f"{SVG}g[@id='caption']")
    font = QFont()
    font.setPixelSize(int(band.get("font-size")))
    metrics = QFontMetricsF(font)
    rows = band.findall(f"{SVG}text")
    assert "".join(row.text for row in rows) == "".join(caption)  # every word of every line, in order
    assert root.find(f"{SVG}desc").text == "\n".join(caption)  # each line whole, for a program reading the file
    assert len(rows) > len(caption)  # the long lines took more than one row
    tops = [float(row.get("y")) for row in rows]
    assert tops == sorted(tops) and len(set(tops)) == len(tops)  # one row under the other, none overprinted
    for row in rows:
        assert float(row.get("x")) + metrics.horizontalAdvance(row.text.rstrip()) <= width - 4, row.text


def _large_view_too_small_for_its_labels(grid, qtbot):
    """The large view of a 90-token map at 560x420: no axis can draw its labels, each title asks to hover."""
    grid.set_maps(_maps(90), mode="weights")
    dialog = grid.open_large_view(0, 1)
    qtbot.addWidget(dialog)
    dialog.resize(560, 420)
    dialog.grab()  # laid out and painted: the axes decide whether their labels fit
    axes = {side: dialog.plot_item.getAxis(side) for side in ("bottom", "left")}
    for axis in axes.values():
        qtbot.waitUntil(lambda a=axis: "hover" in a.label.toPlainText())
    return dialog, axes


def test_the_large_views_axis_titles_are_centred_and_whole(grid, qtbot):
    """A title longer than the one its axis was laid out with is centred again (the query title ran off the top)."""
    _dialog, axes = _large_view_too_small_for_its_labels(grid, qtbot)
    for side, axis in axes.items():
        label, room = axis.label.sceneBoundingRect(), axis.sceneBoundingRect()
        if side == "bottom":
            assert abs(label.center().x() - room.center().x()) <= 2, (label, room)
            assert room.left() <= label.left() and label.right() <= room.right()
        else:
            assert abs(label.center().y() - room.center().y()) <= 2, (label, room)
            assert room.top() <= label.top() and label.bottom() <= room.bottom()


def test_the_large_views_export_points_to_the_listed_tokens_not_to_hovering(grid, qtbot, tmp_path):
    dialog, axes = _large_view_too_small_for_its_labels(grid, qtbot)
    on_screen = {side: axis.label.toPlainText() for side, axis in axes.items()}
    svg = ET.parse(dialog.export_svg(tmp_path / "map.svg")).getroot()
    texts = " ".join("".join(el.itertext()) for el in svg.iter(f"{SVG}text"))
    assert "hover" not in texts and HOVER_HINT not in texts
    assert f"key ({LISTED_HINT})" in texts and f"query ({LISTED_HINT})" in texts
    png = QImage(str(dialog.export_png(tmp_path / "map.png")))
    assert not png.isNull()
    QApplication.processEvents()
    assert {side: axis.label.toPlainText() for side, axis in axes.items()} == on_screen  # the screen: hover again
