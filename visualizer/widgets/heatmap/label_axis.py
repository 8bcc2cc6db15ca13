"""The grid's axes: word labels at fixed positions, laid out once per change and painted straight onto the view.

The grid's axes are laid out again whenever their labels change: token labels move with every keystroke that
changes the input's length while they are drawn (the titles and hidden labels stay put). A stock pg.AxisItem then
walks its general tick machinery, measures each label through the painter, records everything into a QPicture and
replays it, at a cost that grows with the number of labels. This axis knows it only ever has one level of named
ticks (or none) and no tick marks (the grid sets tickLength 0), keeps each label's size, and draws the texts
directly. pyqtgraph's own invalidation (`picture = None` on
a new range, ticks, size or style) still decides when the layout is redone. It needs a fixed axis size (setWidth /
setHeight, as the grid sets): it does not grow the axis to fit its labels. Anything else (numbers, several tick
levels, tick marks, hidden values) goes to pg.AxisItem.
"""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QPainter
from PySide6.QtWidgets import QStyleOptionGraphicsItem, QWidget

_FLAGS = {  # where a label sits against its position: away from the plot, centred on the tick
    "left": Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter,
    "right": Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter,
    "top": Qt.AlignmentFlag.AlignHCenter | Qt.AlignmentFlag.AlignBottom,
    "bottom": Qt.AlignmentFlag.AlignHCenter | Qt.AlignmentFlag.AlignTop,
}
_LAID_OUT = object()  # stands in pg.AxisItem.picture: "the layout below is current"
_MAX_SIZES = 4096  # labels come and go with the vocabulary; keep the cache bounded


class LabelAxis(pg.AxisItem):
    """An axis of explicit labels (setTicks with one level or none, fixed size); anything else falls back to
    pg.AxisItem."""

    picture: object  # pg.AxisItem's cached drawing (None: lay out again), or _LAID_OUT on the path here

    def __init__(self, orientation: str) -> None:
        super().__init__(orientation)
        self._sizes: dict[tuple[str, str], tuple[float, float]] = {}
        self._line: tuple[QPointF, QPointF] | None = None
        self._texts: list[tuple[QRectF, str]] = []

    def paint(self, p: QPainter, opt: QStyleOptionGraphicsItem, widget: QWidget | None) -> None:  # Qt's name
        levels, style = self._tickLevels, self.style
        if (
            levels is None
            or len(levels) > 1
            or style["tickLength"] != 0
            or self.grid is not False
            or not style["showValues"]
        ):
            super().paint(p, opt, widget)  # numbers, several levels or tick marks: the general path
            return
        p.save()
        if self.style["tickFont"] is not None:
            p.setFont(self.style["tickFont"])
        if self.picture is not _LAID_OUT:
            self._lay_out(p, levels[0] if levels else [])  # no labels (too small to draw): the line alone
            self.picture = _LAID_OUT
        if self._line is not None:
            p.setRenderHint(QPainter.RenderHint.Antialiasing, False)
            p.setRenderHint(QPainter.RenderHint.TextAntialiasing, True)
            p.setPen(self.pen())
            p.drawLine(*self._line)
            p.setPen(self.textPen())
            p.setClipRect(self.boundingRect().toAlignedRect())
            flags = int(_FLAGS[self.orientation] | Qt.TextFlag.TextDontClip)
            for rect, text in self._texts:
                p.drawText(rect, flags, text)
        p.restore()

    def _size(self, p: QPainter, text: str) -> tuple[float, float]:
        """A label's (width, height): its box when centred in 100 x 100, the height trimmed to 80 % as pyqtgraph
        does so that stacked labels sit close."""
        key = (p.font().key(), text)
        size = self._sizes.get(key)
        if size is None:
            if len(self._sizes) > _MAX_SIZES:
                self._sizes.clear()
            box = p.boundingRect(QRectF(0, 0, 100, 100), Qt.AlignmentFlag.AlignCenter, text)
            size = self._sizes[key] = (box.width(), box.height() * 0.8)
        return size

    def _lay_out(self, p: QPainter, ticks: list[tuple[float, str]]) -> None:
        """The axis line and every label box that fits inside the axis, in item coordinates."""
        self._line, self._texts = None, []
        bounds = self.mapRectFromParent(self.geometry())
        low, high = self.range
        if low == high or bounds.width() <= 0 or bounds.height() <= 0:
            return
        vertical = self.orientation in ("left", "right")
        if vertical:  # value -> y, top of the axis at `high` (an inverted view hands its range reversed)
            scale, origin = -bounds.height() / (high - low), bounds.height()
            edge = bounds.right() if self.orientation == "left" else bounds.left()
            x0 = edge + (-1.0 if self.orientation == "left" else 1.0)
            self._line = (QPointF(x0, bounds.top() - 1.0), QPointF(x0, bounds.bottom() + 1.0))
        else:
            scale, origin = bounds.width() / (high - low), 0.0
            edge = bounds.bottom() if self.orientation == "top" else bounds.top()
            y0 = edge + (-1.0 if self.orientation == "top" else 1.0)
            self._line = (QPointF(bounds.left() - 1.0, y0), QPointF(bounds.right() + 1.0, y0))
        ends = sorted((origin, origin + (high - low) * scale))
        gap = self.style["tickTextOffset"][0 if vertical else 1]
        inside = self.boundingRect()
        for value, text in ticks:
            at = origin + (value - low) * scale
            if not ends[0] <= at <= ends[1]:
                continue
            w, h = self._size(p, text)
            if self.orientation == "left":
                rect = QRectF(edge - gap - w, at - h / 2, w, h)
            elif self.orientation == "right":
                rect = QRectF(edge + gap, at - h / 2, w, h)
            elif self.orientation == "top":
                rect = QRectF(at - w / 2, edge - gap - h, w, h)
            else:
                rect = QRectF(at - w / 2, edge + gap, w, h)
            if inside.contains(rect):
                self._texts.append((rect, text))
