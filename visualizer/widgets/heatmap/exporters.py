"""File exports of a grid (PNG/SVG of the whole plot, NPY of every head, CSV of one map) and the save dialog."""
from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pyqtgraph as pg
from PySide6.QtGui import QColor, QFont, QFontMetrics, QImage, QPainter
from PySide6.QtWidgets import QFileDialog, QMessageBox, QWidget

from visualizer.widgets.common import image_export as export

log = logging.getLogger(__name__)


def export_grid_png(graphics: pg.GraphicsLayoutWidget, path: str | Path, width: int | None = None,
                    caption: Sequence[str] = ()) -> Path:
    """The whole grid with titles and colour bar as PNG, under caption lines (title, kind, input, model)."""
    target = export.export_item_png(graphics.ci, path, width)
    if caption:
        plot = QImage(str(target))
        font = QFont()
        font.setPixelSize(max(12, plot.width() // 90))
        line = QFontMetrics(font).height()
        image = QImage(plot.width(), plot.height() + line * len(caption) + 8, QImage.Format.Format_ARGB32)
        image.fill(QColor("white"))
        painter = QPainter(image)
        painter.setFont(font)
        for k, text in enumerate(caption):  # drawText takes plain text: tokens such as <pad> stay visible
            painter.drawText(6, 4 + line * k + QFontMetrics(font).ascent(), text)
        painter.drawImage(0, line * len(caption) + 8, plot)
        painter.end()
        if not image.save(str(target), "PNG"):
            raise OSError(f"Could not write PNG to {target}")
    return target


def export_grid_svg(graphics: pg.GraphicsLayoutWidget, path: str | Path) -> Path:
    """The whole grid as SVG (vector axes and text, the atlas as an embedded image)."""
    return export.export_item_svg(graphics.ci, path)


def export_heads_npy(shown: np.ndarray, path: str | Path) -> Path:
    """All heads of `shown` (L, H + 1, Tq, Tk) as one (L, H, Tq, Tk) float32 array: the average is a mean, left out."""
    return export.save_matrices_npy(path, shown[:, :-1])


def export_matrix_csv(path: str | Path, matrix: np.ndarray, query_labels: Sequence[str],
                      key_labels: Sequence[str]) -> Path:
    """One (Tq, Tk) map with its token labels as CSV."""
    return export.save_matrix_csv(path, matrix, query_labels, key_labels)


def ask_path_and_export(parent: QWidget, caption: str, file_filter: str, action: Callable[[str], object]) -> None:
    """Non-native save dialog, then the export; a failure goes to a message box, never an exception."""
    path, _ = QFileDialog.getSaveFileName(parent, caption, "", file_filter,
                                          options=QFileDialog.Option.DontUseNativeDialog)
    if not path:
        return
    try:
        action(path)
    except OSError as exc:
        log.warning("%s failed: %s", caption, exc)
        QMessageBox.warning(parent, caption, str(exc))
