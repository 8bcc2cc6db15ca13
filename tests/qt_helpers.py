"""Helpers several widget tests share: reading what a pyqtgraph item would draw."""
from __future__ import annotations

from PySide6.QtGui import QImage, QPainter


def axis_texts(grid, name: str) -> list[str]:
    """The tick texts an axis of `grid.plot_item` draws at its current size (pyqtgraph leaves out crowded levels)."""
    axis = grid.plot_item.getAxis(name)
    image = QImage(axis.boundingRect().size().toSize(), QImage.Format.Format_ARGB32)
    painter = QPainter(image)
    try:
        specs = axis.generateDrawSpecs(painter)
    finally:
        painter.end()
    return [text for _, _, text in specs[2]]


def wait_frame(qtbot, session, timeout_ms: int = 10_000) -> None:
    """Wait until the session's newest forward pass has been drawn (the app runs passes on a worker thread)."""
    qtbot.waitUntil(lambda: session.idle and session.runner.wait_idle(0.0), timeout=timeout_ms)
