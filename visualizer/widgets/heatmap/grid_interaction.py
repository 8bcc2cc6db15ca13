"""The mouse on a grid: hover text, clicks (map_clicked, large view) and the right-click menu of one map.

Everything here goes through the grid's public API and intent signals; the session decides what a click means.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from PySide6.QtCore import QPointF, Qt
from PySide6.QtGui import QAction, QCursor
from PySide6.QtWidgets import QMenu, QToolTip

from visualizer.widgets.heatmap.exporters import ask_path_and_export

if TYPE_CHECKING:
    from visualizer.widgets.heatmap.grid import AttentionGrid


def show_hover_text(grid: AttentionGrid, scene_pos: QPointF) -> None:
    """The cell under the mouse as the image's tooltip, refreshed live while a tooltip is up."""
    cell = grid.cell_at(scene_pos)
    text = grid.tooltip_text_at(*cell) if cell is not None else ""
    grid.image_item.setToolTip(text)
    if text and QToolTip.isVisible():
        QToolTip.showText(QCursor.pos(), text, grid.graphics)


def handle_click(grid: AttentionGrid, event) -> None:
    """Left click: map_clicked; double click: large view; right click: the context menu."""
    cell = grid.cell_at(event.scenePos())
    if cell is None or grid.current_maps() is None:
        return
    layer, head = cell[0], cell[1]
    if event.button() == Qt.MouseButton.LeftButton:
        if event.double():
            grid.open_large_view(layer, head)
        else:
            grid.map_clicked.emit(grid.kind(), layer, head)
        event.accept()
    elif event.button() == Qt.MouseButton.RightButton:
        grid.show_context_menu(layer, head, event.screenPos().toPoint())
        event.accept()


def build_map_menu(grid: AttentionGrid, layer: int, head: int) -> QMenu:
    """Ablate/restore, large view and export actions for one map (head -1 = average: no ablation).

    The actions only emit the grid's intent signals or call its public export / large-view methods.
    """
    menu = QMenu(grid)
    kind = grid.kind()
    if head >= 0:
        ablated = grid.is_ablated(layer, head)
        text = "Restore head" if ablated else "Ablate head"
        _add_action(menu, text, lambda: grid.head_toggled.emit(kind, layer, head, ablated))
    _add_action(menu, "Restore all heads", grid.restore_all_requested.emit)
    menu.addSeparator()
    _add_action(menu, "Open large view", lambda: grid.open_large_view(layer, head))
    menu.addSeparator()
    _add_action(menu, "Export grid as PNG...", lambda: ask_path_and_export(
        grid, "Export grid as PNG", "PNG image (*.png)", grid.export_png))
    _add_action(menu, "Export grid as SVG...", lambda: ask_path_and_export(
        grid, "Export grid as SVG", "SVG image (*.svg)", grid.export_svg))
    _add_action(menu, "Export matrices as NPY...", lambda: ask_path_and_export(
        grid, "Export matrices as NPY", "NumPy array (*.npy)", grid.export_matrices_npy))
    _add_action(menu, "Export this map as CSV...", lambda: ask_path_and_export(
        grid, "Export map as CSV", "CSV file (*.csv)", lambda path: grid.export_map_csv(path, layer, head)))
    return menu


def _add_action(menu: QMenu, text: str, slot: Callable[[], object]) -> QAction:
    """An action whose `triggered(checked)` calls slot() without the checked flag."""
    action = menu.addAction(text)
    action.triggered.connect(lambda _checked=False: slot())
    return action
