"""The large view's mouse: a click inspects a cell; in paint mode a click or drag hides cells (or shows them again).

A stroke that starts on a painted cell erases, one that starts elsewhere paints: the first cell decides, so the
same gesture undoes a slip. Events are read on the plot's viewport, so hover tooltips keep working.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QEvent, QObject, QPointF, Qt, Signal
from PySide6.QtGui import QMouseEvent
from PySide6.QtWidgets import QPushButton

from visualizer.widgets.heatmap.map_keys import PAINT_KEY, REDO_KEY, UNDO_KEY

Cell = tuple[int, int]
PAINT_PEN = "#d50000"  # the x drawn on painted cells
HINT = (
    f"Click a cell to take it apart on the right. Paint mask ({PAINT_KEY}): click or drag over cells to hide keys "
    "from queries (drag from a painted cell to show them again)."
)


class MapMouseTools(QObject):
    """Turns mouse events over a map into cell clicks and paint strokes."""

    cell_clicked = Signal(int, int)  # query, key: inspect this cell
    cells_painted = Signal(object, bool)  # frozenset of (query, key) newly touched by the stroke, erase?
    stroke_finished = Signal()

    def __init__(
        self, view: pg.GraphicsView, cell_at: Callable[[QPointF], Cell | None], painted: Callable[[], frozenset[Cell]]
    ) -> None:
        super().__init__(view)
        self._view, self._cell_at, self._painted = view, cell_at, painted
        self.painting = False
        self._pressed: Cell | None = None
        self._stroke: set[Cell] | None = None
        self._erase = False
        view.viewport().installEventFilter(self)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # Qt's name
        kind = event.type()
        if kind not in (QEvent.Type.MouseButtonPress, QEvent.Type.MouseMove, QEvent.Type.MouseButtonRelease):
            return False
        assert isinstance(event, QMouseEvent)
        cell = self._cell_at(self._view.mapToScene(event.position().toPoint()))
        if kind == QEvent.Type.MouseButtonPress and event.button() == Qt.MouseButton.LeftButton:
            self._pressed = cell
            if self.painting and cell is not None:
                self._erase = cell in self._painted()
                self._stroke = set()
                self._touch(cell)
            return self.painting
        if kind == QEvent.Type.MouseMove and self._stroke is not None and cell is not None:
            self._touch(cell)
            return True
        if kind == QEvent.Type.MouseButtonRelease and event.button() == Qt.MouseButton.LeftButton:
            return self._release(cell)
        return False

    def _touch(self, cell: Cell) -> None:
        stroke = self._stroke
        assert stroke is not None  # touched only while a stroke is drawn
        if cell not in stroke:
            stroke.add(cell)
            self.cells_painted.emit(frozenset({cell}), self._erase)

    def _release(self, cell: Cell | None) -> bool:
        was_stroke, self._stroke = self._stroke is not None, None
        pressed, self._pressed = self._pressed, None
        if was_stroke:
            self.stroke_finished.emit()
            return True
        if not self.painting and cell is not None and cell == pressed:
            self.cell_clicked.emit(*cell)
        return False


def painted_marks(cells: frozenset[Cell], shape: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
    """x and y of the cell centres to mark (cells outside the map left out)."""
    inside = sorted((i, j) for i, j in cells if i < shape[0] and j < shape[1])
    if not inside:
        return np.zeros(0), np.zeros(0)
    rows = np.array(inside, dtype=float)
    return rows[:, 1] + 0.5, rows[:, 0] + 0.5


def paint_buttons() -> tuple[QPushButton, QPushButton, QPushButton]:
    """The large view's "Paint mask" toggle and its "Undo paint" and "Redo paint" buttons, with keys and tooltips."""
    paint = QPushButton(f"Paint mask ({PAINT_KEY})")
    paint.setCheckable(True)
    paint.setShortcut(PAINT_KEY)
    paint.setToolTip(
        f"{PAINT_KEY}: while on, click or drag over cells to hide those keys from those "
        "queries (every layer and head of this kind). Starting on a painted cell shows "
        "them again. Off: a click takes the cell apart."
    )
    undo = QPushButton("Undo paint (Ctrl+Z)")
    undo.setShortcut(UNDO_KEY)
    undo.setToolTip(f"Undo the last paint stroke ({UNDO_KEY}); Reset masks clears all painting.")
    undo.setEnabled(False)
    redo = QPushButton("Redo paint (Ctrl+Shift+Z)")
    redo.setShortcut(REDO_KEY)
    redo.setToolTip(f"Paint the last undone stroke again ({REDO_KEY}); a new stroke drops it.")
    redo.setEnabled(False)
    return paint, undo, redo
