"""Where a large map window opens while a panel is docked beside the tabs (the Lessons panel): over the tabs' area
only, so the panel's text, which talks about that window, stays readable beside it."""

from __future__ import annotations

from PySide6.QtCore import QPoint, QRect
from PySide6.QtWidgets import QDockWidget, QMainWindow, QWidget


def central_area(dialog: QWidget) -> QRect | None:
    """The main window's area not covered by a docked, visible panel (global pixels); None without such a panel."""
    parent = dialog.parentWidget()
    window = parent.window() if parent is not None else None
    if not isinstance(window, QMainWindow) or window.centralWidget() is None:
        return None
    docked = [d for d in window.findChildren(QDockWidget) if d.isVisible() and not d.isFloating()]
    if not docked:
        return None
    central = window.centralWidget()
    return QRect(central.mapToGlobal(QPoint(0, 0)), central.size())


def keep_beside_docks(dialog: QWidget) -> None:
    """Shrink the dialog to the central area (never below its minimum) and centre it there."""
    area = central_area(dialog)
    if area is None:
        return
    frame = dialog.frameGeometry().size() - dialog.geometry().size()  # the window manager's title bar and borders
    width = max(dialog.minimumSizeHint().width(), min(dialog.width(), area.width() - frame.width()))
    height = max(dialog.minimumSizeHint().height(), min(dialog.height(), area.height() - frame.height()))
    dialog.resize(width, height)
    left = max(area.left(), area.center().x() - (width + frame.width()) // 2)
    top = max(area.top(), area.center().y() - (height + frame.height()) // 2)
    dialog.move(left, top)
