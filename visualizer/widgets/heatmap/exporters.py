"""File exports of a grid (PNG/SVG of the whole plot under its caption) and the save dialog with its buttons."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path

import pyqtgraph as pg
from PySide6.QtWidgets import QFileDialog, QHBoxLayout, QMessageBox, QPushButton, QWidget

from visualizer.widgets.common import image_export as export
from visualizer.widgets.common.plain_message import show_plain_message

log = logging.getLogger(__name__)


def export_captioned_png(item: object, path: str | Path, width: int | None = None, caption: Sequence[str] = ()) -> Path:
    """A graphics item as PNG under a white band of caption lines (title, kind, input, model)."""
    return export.export_item_png(item, path, width, caption)


def export_captioned_svg(item: object, path: str | Path, caption: Sequence[str] = ()) -> Path:
    """A graphics item as SVG with the caption lines as visible text above it (and as <title> / <desc>)."""
    return export.export_item_svg(item, path, caption)


def export_grid_png(
    graphics: pg.GraphicsLayoutWidget, path: str | Path, width: int | None = None, caption: Sequence[str] = ()
) -> Path:
    """The whole grid with titles and colour bar as PNG, under caption lines (title, kind, input, model)."""
    return export_captioned_png(graphics.ci, path, width, caption)


def export_grid_svg(graphics: pg.GraphicsLayoutWidget, path: str | Path, caption: Sequence[str] = ()) -> Path:
    """The whole grid as SVG (vector axes and text, the atlas as an embedded image) under its caption lines."""
    return export_captioned_svg(graphics.ci, path, caption)


def ask_path_and_export(parent: QWidget, caption: str, file_filter: str, action: Callable[[str], object]) -> None:
    """Non-native save dialog, then the export; a failure goes to a message box titled as File › Export's are
    ("Export failed", what was asked in its text), never an exception."""
    path, _ = QFileDialog.getSaveFileName(
        parent, caption, "", file_filter, options=QFileDialog.Option.DontUseNativeDialog
    )
    if not path:
        return
    try:
        action(path)
    except (OSError, ValueError, RuntimeError) as exc:
        log.warning("%s failed: %s", caption, exc)
        show_plain_message(parent, QMessageBox.Icon.Warning, "Export failed", f"{caption}: {exc}")


EXPORT_FORMATS = (("PNG", "PNG image (*.png)"), ("SVG", "SVG image (*.svg)"), ("CSV", "CSV file (*.csv)"))


def export_buttons(parent: QWidget, what: str, actions: dict[str, Callable[[str], object]]) -> QHBoxLayout:
    """A row of "Export PNG...", "Export SVG...", "Export CSV..." buttons, each asking for a path first."""
    row = QHBoxLayout()
    for name, file_filter in EXPORT_FORMATS:
        caption = f"Export {what} as {name}"
        button = QPushButton(f"Export {name}...")
        button.clicked.connect(partial(ask_path_and_export, parent, caption, file_filter, actions[name]))
        row.addWidget(button)
    row.addStretch(1)
    return row
