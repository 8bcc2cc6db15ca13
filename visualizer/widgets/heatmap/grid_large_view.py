"""A grid's large view: the one MapDialog of a grid, kept on its map, with the cell inspector and mask painter."""

from __future__ import annotations

import numpy as np
from PySide6.QtWidgets import QWidget

from core_model.cell_decomposition import CellDecomposition
from visualizer.state.playground_cell_tools import CellInspector
from visualizer.state.playground_mask_painter import MaskPainter
from visualizer.state.snapshots import KindMaps
from visualizer.widgets.heatmap.atlas import AVG
from visualizer.widgets.heatmap.large_view import MapDialog


class GridLargeView:
    """A grid's one large view: made on first use, reused, and kept on its (layer, head) as new maps arrive.

    With tools attached (a CellInspector and a MaskPainter, see state/playground_cell_tools.py and
    state/playground_mask_painter.py) its clicks take cells apart and its strokes paint masks; without them (a grid
    on its own) the map is only shown.
    """

    def __init__(self, parent: QWidget) -> None:
        self._parent = parent
        self._dialog: MapDialog | None = None
        self._target: tuple[int, int] | None = None
        self._kind = ""
        self.inspector: CellInspector | None = None
        self.painter: MaskPainter | None = None

    def attach(self, inspector: CellInspector, painter: MaskPainter) -> None:
        """Give the view its tools (before or after the dialog was made)."""
        self.inspector, self.painter = inspector, painter
        inspector.cell_changed.connect(self._show_cell)
        inspector.failed.connect(self._show_failure)
        painter.history_changed.connect(lambda _can: self._show_history(self._dialog, painter))
        if self._dialog is not None:
            self._connect(self._dialog, painter)

    def is_visible(self) -> bool:
        return self._dialog is not None and self._dialog.isVisible()

    @property
    def dialog(self) -> MapDialog | None:
        """The dialog once made (it is made on the first open and reused)."""
        return self._dialog

    @property
    def target(self) -> tuple[int, int] | None:
        """The (layer, head) the dialog shows."""
        return self._target

    def open(self, layer: int, head: int) -> MapDialog:
        """Aim the dialog at a map (the caller refreshes it with force=True, then shows it)."""
        if self._dialog is None:
            self._dialog = MapDialog(self._parent)
            if self.painter is not None:  # attached: the inspector came with it
                self._connect(self._dialog, self.painter)
        if self._target != (layer, head) and self.inspector is not None:
            self.inspector.clear()  # another map: the old cell's numbers no longer apply
        self._target = (layer, head)
        return self._dialog

    def _connect(self, dialog: MapDialog, painter: MaskPainter) -> None:
        dialog.cell_clicked.connect(self._inspect)
        dialog.cells_painted.connect(lambda cells, erase: painter.paint(self._kind, cells, erase))
        dialog.stroke_finished.connect(painter.end_stroke)
        dialog.undo_requested.connect(painter.undo)
        dialog.redo_requested.connect(painter.redo)
        self._show_history(dialog, painter)
        dialog.set_tools_enabled(True)

    def _show_history(self, dialog: MapDialog | None, painter: MaskPainter) -> None:
        if dialog is not None:
            dialog.set_history(painter.can_undo, painter.can_redo)

    def _show_failure(self, message: str) -> None:
        if self._dialog is not None:
            self._dialog.cell_panel.show_message(message)

    def _inspect(self, query: int, key: int) -> None:
        dialog, inspector = self._dialog, self.inspector
        if self._target is None or not self._kind or dialog is None or inspector is None:
            return
        layer, head = self._target
        if head == AVG:
            dialog.cell_panel.show_message(
                "The head average has no single q·k to take apart: open the map "
                "of one head (click it in the grid) and click the cell there."
            )
            return
        inspector.inspect(self._kind, layer, head, query, key)

    def _show_cell(self, cell: CellDecomposition[np.ndarray] | None) -> None:
        if self._dialog is None:
            return
        target = self._target
        if cell is not None and (cell.kind, cell.layer, cell.head) != (self._kind, *(target or (-1, -1))):
            return
        self._dialog.show_cell(cell)

    def refresh(self, maps: KindMaps | None, shown: np.ndarray | None, mode_text: str, force: bool = False) -> None:
        """Show the target map of `maps`; `shown` is the grid's (L, H + 1, Tq, Tk) values, None when empty."""
        dialog, target = self._dialog, self._target
        if dialog is None or target is None or maps is None or not (force or dialog.isVisible()):
            return
        layer, head = target
        self._kind = maps.kind
        if layer < maps.n_layers and head < maps.n_heads and shown is not None:
            dialog.show_grid_map(maps, shown[layer, -1], layer, head, mode_text)
        if self.painter is not None:
            dialog.set_painted(self.painter.painted(maps.kind))
        if self.inspector is not None and self.inspector.request is not None:
            self.inspector.refresh()  # a new pass (masks, input, gates): the cell's numbers follow
