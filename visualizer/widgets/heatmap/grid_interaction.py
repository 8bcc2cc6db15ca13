"""The mouse on a grid: hover text, clicks (map_clicked, large view) and the right-click menu of one map.

Everything here goes through the grid's public API and intent signals; the session decides what a click means.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Protocol

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QEvent, QObject, QPoint, QPointF, Qt, QTimer, SignalInstance
from PySide6.QtGui import QAction, QCursor
from PySide6.QtWidgets import QApplication, QGraphicsItem, QMenu, QToolTip, QWidget

from visualizer.state.snapshots import KindMaps, head_name
from visualizer.widgets.common.image_export import save_matrices_npy, save_matrix_csv
from visualizer.widgets.heatmap.exporters import ask_path_and_export
from visualizer.widgets.heatmap.shown_matrices import ShownMatrices


class AttentionGridApi(Protocol):
    """What this module uses of AttentionGrid (typed here so the grid module is not imported back)."""

    graphics: pg.GraphicsView  # its scene is pyqtgraph's GraphicsScene, with sigMouseMoved
    head_toggled: SignalInstance
    restore_all_requested: SignalInstance
    map_clicked: SignalInstance

    @property
    def image_item(self) -> QGraphicsItem: ...
    def cell_at(self, scene_pos: QPointF) -> tuple[int, int, int, int] | None: ...
    def current_maps(self) -> KindMaps | None: ...
    def displayed_matrix(self, layer: int, head: int) -> np.ndarray: ...
    def kind(self) -> str: ...
    def is_ablated(self, layer: int, head: int) -> bool: ...
    def tooltip_text_at(self, layer: int, head: int, i: int, j: int) -> str: ...
    def show_hover(self, cell: tuple[int, int, int, int] | None) -> None: ...
    def open_large_view(self, layer: int, head: int) -> object: ...
    def show_context_menu(self, layer: int, head: int, screen_pos: QPoint) -> QMenu: ...
    def export_png(self, path: str | Path, width: int | None = None) -> Path: ...
    def export_svg(self, path: str | Path) -> Path: ...
    def shown_matrices(self) -> ShownMatrices: ...


class _ViewWatcher(QObject):
    """Clears a grid's hover readout and outline when the mouse leaves its view, and names the cell under a still
    mouse again when the view moves or changes size (a line added to the header above shifts the maps)."""

    def __init__(self, grid: AttentionGridApi) -> None:
        super().__init__(grid.graphics)
        self._grid = grid
        self._refresh = QTimer(self)  # one refresh once the maps are laid out anew, however many events came first
        self._refresh.setSingleShot(True)
        self._refresh.setInterval(0)
        self._refresh.timeout.connect(lambda: refresh_hover(self._grid))

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # Qt's name
        kind = event.type()
        if kind == QEvent.Type.Leave and watched is self._grid.graphics.viewport():
            show_hover_text(self._grid, None)
        elif kind in (QEvent.Type.Move, QEvent.Type.Resize) and watched is self._grid.graphics:
            self._refresh.start()  # a window being dragged larger sends many: the pending one covers them all
        return False


def watch_hover(grid: AttentionGridApi) -> None:
    """The readout and outline follow the mouse over the maps, follow the maps when they move under a still mouse,
    and go when the mouse leaves the view."""
    grid.graphics.scene().sigMouseMoved.connect(lambda pos: show_hover_text(grid, pos))
    watcher = _ViewWatcher(grid)
    grid.graphics.viewport().installEventFilter(watcher)
    grid.graphics.installEventFilter(watcher)


def show_hover_text(grid: AttentionGridApi, scene_pos: QPointF | None) -> None:
    """The cell under the mouse as the image's tooltip, refreshed live while a tooltip is up (None: no cell)."""
    cell = None if scene_pos is None else grid.cell_at(scene_pos)
    text = grid.tooltip_text_at(*cell) if cell is not None else ""
    if grid.image_item.toolTip() != text:  # asked on every frame, mostly with the mouse elsewhere
        grid.image_item.setToolTip(text)
    grid.show_hover(cell)
    if text and QToolTip.isVisible():
        QToolTip.showText(QCursor.pos(), text, grid.graphics)


def refresh_hover(grid: AttentionGridApi) -> None:
    """Name the cell under the mouse again for the maps, view and heads shown now; clear the readout and outline
    when the mouse is elsewhere (typing in the Source field, on a menu). The mouse does not move when a new frame
    arrives, so no mouse event would correct a readout left from the last map (a row it may no longer have).

    Another of our windows over the grid (a dialog) hides it from the mouse; a platform that cannot tell which
    window is on top (offscreen) finds no window at all, and then the grid's own rectangle decides."""
    viewport, at = grid.graphics.viewport(), QCursor.pos()
    local = viewport.mapFromGlobal(at)
    over = (
        viewport.isVisible()
        and viewport.rect().contains(local)
        and QApplication.activePopupWidget() is None
        and QApplication.widgetAt(at) in (viewport, None)
    )  # asked last: it searches every window
    show_hover_text(grid, grid.graphics.mapToScene(local) if over else None)


def handle_click(grid: AttentionGridApi, event) -> None:
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


HEAD_SWITCH_ACTIONS = ("toggle_head", "restore_all_heads")  # the entries that switch heads, by object name


def build_map_menu(grid: AttentionGridApi, layer: int, head: int) -> QMenu:
    """Ablate/restore, large view and export actions for one map (head -1 = average: no ablation).

    The actions only emit the grid's intent signals or call its public export / large-view methods.
    """
    parent = _as_widget(grid)
    menu = QMenu(parent)  # the grid is the menu's parent widget
    kind = grid.kind()
    if head >= 0:
        ablated = grid.is_ablated(layer, head)
        text = f"{'Restore' if ablated else 'Ablate'} {head_name(kind, layer, head)}"
        action = _add_action(menu, text, lambda: grid.head_toggled.emit(kind, layer, head, ablated))
        action.setObjectName(HEAD_SWITCH_ACTIONS[0])
    action = _add_action(menu, "Restore all heads", grid.restore_all_requested.emit)
    action.setObjectName(HEAD_SWITCH_ACTIONS[1])
    menu.addSeparator()
    _add_action(menu, "Open large view", lambda: grid.open_large_view(layer, head))
    menu.addSeparator()
    _add_action(
        menu,
        "Export grid as PNG...",
        lambda: ask_path_and_export(parent, "Export grid as PNG", "PNG image (*.png)", grid.export_png),
    )
    _add_action(
        menu,
        "Export grid as SVG...",
        lambda: ask_path_and_export(parent, "Export grid as SVG", "SVG image (*.svg)", grid.export_svg),
    )
    _add_action(
        menu,
        "Export matrices as NPY...",
        lambda: ask_path_and_export(
            parent, "Export matrices as NPY", "NumPy array (*.npy)", lambda path: save_matrices_npy(path, _heads(grid))
        ),
    )
    _add_action(
        menu,
        "Export this map as CSV...",
        lambda: ask_path_and_export(
            parent, "Export map as CSV", "CSV file (*.csv)", lambda path: _save_map_csv(grid, path, layer, head)
        ),
    )
    return menu


def _as_widget(grid: AttentionGridApi) -> QWidget:
    """The grid as the QWidget it is (a Protocol cannot say so): the parent of its menu and dialogs."""
    assert isinstance(grid, QWidget)
    return grid


def _heads(grid: AttentionGridApi) -> np.ndarray:
    """Every head as shown, (L, H, Tq, Tk), for one NPY file (one map's own menu: the GUI thread writes it)."""
    return grid.shown_matrices().heads


def _save_map_csv(grid: AttentionGridApi, path: str, layer: int, head: int) -> Path:
    """One map as shown, with its tokens, as CSV: at most a few hundred rows, written here."""
    matrix = grid.displayed_matrix(layer, head)  # RuntimeError (the dialog says so) when no maps are shown
    maps = grid.current_maps()
    assert maps is not None  # a map is shown
    return save_matrix_csv(path, matrix, maps.query_labels, maps.key_labels)


def _add_action(menu: QMenu, text: str, slot: Callable[[], object]) -> QAction:
    """An action whose `triggered(checked)` calls slot() without the checked flag."""
    action = menu.addAction(text)
    action.triggered.connect(lambda _checked=False: slot())
    return action
