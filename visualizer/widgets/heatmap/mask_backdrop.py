"""A neutral grey behind every map: masked cells are transparent in the atlas, so they show it.

Gutters stay transparent too and show the view's dark background, so a masked column reads as masked, never as a
narrower map. One item for all maps, repositioned only when the atlas shape changes.
"""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QColor, QPainter
from PySide6.QtWidgets import QGraphicsItem, QStyleOptionGraphicsItem, QWidget

MASK_FILL = QColor(140, 140, 140)  # neutral mid grey: in neither viridis nor the diverging scale's near-white centre
MASK_HATCH = QColor(90, 90, 90)
VIEW_BACKGROUND = QColor(24, 24, 28)  # the space between maps: darker than any masked cell
MASK_LEGEND = "■ grey = masked (the query cannot attend to that key)"


class MaskBackdrop(QGraphicsItem):
    """Grey rectangles (atlas coordinates) drawn under the atlas image, filled in screen pixels."""

    def __init__(self) -> None:
        super().__init__()
        self._rects: Sequence[QRectF] = ()
        self._bounds = QRectF()

    def set_rects(self, rects: Sequence[QRectF], bounds: QRectF | None = None) -> None:
        """Grey behind `rects`; `bounds`, when given, must hold them all (it spares uniting them)."""
        self.prepareGeometryChange()
        self._rects = rects
        if bounds is None:
            bounds = QRectF()
            for rect in rects:
                bounds = bounds.united(rect)
        self._bounds = bounds
        self.update()

    def boundingRect(self) -> QRectF:  # Qt's name
        return self._bounds

    def paint(self, painter: QPainter, option: QStyleOptionGraphicsItem, widget: QWidget | None = None) -> None:
        """Fill in device pixels so the hatch keeps its spacing however large a cell is drawn."""
        transform = painter.transform()
        painter.save()
        painter.resetTransform()
        painter.setPen(Qt.PenStyle.NoPen)
        for rect in self._rects:  # solid: a pattern brush over every map cost several times the atlas paint
            painter.fillRect(transform.mapRect(rect), MASK_FILL)
        painter.restore()
