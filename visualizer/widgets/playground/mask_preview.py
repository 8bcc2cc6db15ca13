"""Small previews of the three boolean masks of the current input, painted as images by one plain widget.

The previews change on every keystroke; drawn by pyqtgraph each would cost a scene pass and a window flush. Here a
keystroke costs three tiny QImages and one paint.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from PySide6.QtCore import QEvent, QRect, QSize, Qt
from PySide6.QtGui import QColor, QHelpEvent, QImage, QPainter, QPaintEvent, QPen
from PySide6.QtWidgets import QSizePolicy, QToolTip, QWidget

from visualizer.state.snapshots import KIND_SHORT_TITLES

PREVIEW_KINDS = ("encoder_self", "decoder_self", "cross")
# 0 = masked (dark), 1 = allowed (light), 2 = painted by hand (red); rows with no visible key get an amber bar
MASK_LUT = np.array([[38, 50, 56], [227, 242, 253], [213, 0, 0]], dtype=np.uint8)
GAP = 8  # pixels between previews
EMPTY_ROW_COLOUR = "#ffb300"


MASK_RGB32 = (
    0xFF000000 | MASK_LUT[:, 0].astype(np.uint32) << 16 | MASK_LUT[:, 1].astype(np.uint32) << 8 | MASK_LUT[:, 2]
)  # the same colours as 32-bit pixels: one lookup per cell, no RGB triples


def mask_image(mask: np.ndarray, painted: frozenset[tuple[int, int]] = frozenset()) -> QImage:
    """(Tq, Tk) bool -> RGB image, one pixel per cell (light = may attend, dark = masked, red = painted).

    Building it as RGB triples through an index array cost more, and three previews are drawn per keystroke."""
    index = mask.astype(np.uint8)
    for i, j in painted:
        if i < mask.shape[0] and j < mask.shape[1]:
            index[i, j] = 2
    pixels = np.ascontiguousarray(MASK_RGB32[index])  # (Tq, Tk) uint32 rows (a transposed mask gives columns)
    height, width = mask.shape
    return QImage(pixels.data, width, height, 4 * width, QImage.Format.Format_RGB32).copy()  # owns its pixels


class MaskPreview(QWidget):
    """Three titled mask images side by side, each scaled to fit (square cells, nearest neighbour)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._masks = {kind: np.zeros((0, 0), bool) for kind in PREVIEW_KINDS}
        self._images: dict[str, QImage | None] = {kind: None for kind in PREVIEW_KINDS}  # built when painted
        self._painted: dict[str, frozenset[tuple[int, int]]] = {kind: frozenset() for kind in PREVIEW_KINDS}
        self.setMinimumHeight(120)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Expanding)
        self.setToolTip(
            "The masks for the current input: light = may attend, dark = masked, red = painted by "
            "hand. Rows are queries, columns keys; a row with no visible key gets all-zero weights."
        )
        self.setAccessibleName("Mask previews")

    def set_masks(self, masks: Mapping[str, np.ndarray]) -> None:
        """Show the given (Tq, Tk) bool masks; kinds not given keep theirs."""
        for kind, mask in masks.items():
            matrix = np.asarray(mask, bool)
            frozen = not matrix.flags.writeable and matrix.flags.owndata  # a frame's masks: nobody can change them
            self._masks[kind] = matrix if frozen else matrix.copy()
        self._redraw(masks)

    def set_painted(self, painted: dict[str, frozenset[tuple[int, int]]]) -> None:
        """Cells painted by hand per kind: drawn red (they are masked too)."""
        changed = [kind for kind, cells in painted.items() if self._painted[kind] != cells]
        self._painted.update(painted)
        self._redraw(changed)

    def _redraw(self, kinds) -> None:
        """Forget the images of `kinds`: the next paint builds them (a folded-away preview builds none, and a
        keystroke's frame does not wait for them)."""
        for kind in kinds:
            self._images[kind] = None
        self.setAccessibleDescription("; ".join(map(self._describe, self._masks)))  # images say nothing to a
        self.update()  # screen reader

    def _describe(self, kind: str) -> str:
        mask, empty = self._masks[kind], self.empty_rows(kind)
        return (
            f"{KIND_SHORT_TITLES[kind]}: {np.count_nonzero(mask)} of {mask.size} query-key pairs may attend"
            f"{f', {empty} rows see no key' if empty else ''}"
        )

    def empty_rows(self, kind: str) -> int:
        """Queries of `kind` whose every key is masked (the model gives them all-zero weights)."""
        mask = self._masks[kind]
        return mask.shape[0] - int(np.count_nonzero(mask.any(axis=1))) if mask.size else 0

    def matrix(self, kind: str) -> np.ndarray:
        """The mask shown for `kind`, (Tq, Tk) bool; (0, 0) when nothing is shown."""
        return self._masks[kind].copy()

    def image_rect(self, kind: str) -> QRect:
        """Where the mask of `kind` is drawn (empty when nothing is shown): square cells, centred in its column."""
        mask = self._masks[kind]
        title_h = self.fontMetrics().height() + 4
        column = self._column(kind)
        if not mask.size:
            return QRect()
        box_w, box_h = column.width(), max(self.height() - title_h - 2, 1)
        cell = max(min(box_w / mask.shape[1], box_h / mask.shape[0]), 0.01)
        w, h = max(round(cell * mask.shape[1]), 1), max(round(cell * mask.shape[0]), 1)
        return QRect(column.left() + (box_w - w) // 2, title_h + (box_h - h) // 2, w, h)

    def sizeHint(self) -> QSize:  # Qt's name
        return QSize(360, 130)

    def _column(self, kind: str) -> QRect:
        width = (self.width() - GAP * (len(PREVIEW_KINDS) - 1)) // len(PREVIEW_KINDS)
        index = PREVIEW_KINDS.index(kind)
        return QRect(index * (width + GAP), 0, width, self.height())

    def paintEvent(self, event: QPaintEvent) -> None:  # Qt's name
        painter = QPainter(self)
        text = self.palette().windowText().color()
        for kind in PREVIEW_KINDS:
            column = self._column(kind)
            painter.setPen(text)
            empty = self.empty_rows(kind)
            title = KIND_SHORT_TITLES[kind] + (f" · {empty} empty row{'s' * (empty > 1)}" if empty else "")
            painter.drawText(
                QRect(column.left(), 0, column.width(), self.fontMetrics().height() + 4),
                Qt.AlignmentFlag.AlignCenter,
                title,
            )
            image, rect = self._image(kind), self.image_rect(kind)
            if image is None or rect.isEmpty():
                continue
            painter.drawImage(rect, image)  # no smoothing: cells stay crisp squares
            painter.setPen(QPen(QColor(text), 1))
            painter.setBrush(Qt.BrushStyle.NoBrush)
            painter.drawRect(rect.adjusted(0, 0, -1, -1))  # an all-allowed mask still shows its edge
            if empty:
                self._mark_empty_rows(painter, kind, rect)
        painter.end()

    def _image(self, kind: str) -> QImage | None:
        """The preview image of `kind`, built on first use after its mask changed (None: nothing to show)."""
        matrix = self._masks[kind]
        if self._images[kind] is None and matrix.size:
            self._images[kind] = mask_image(matrix, self._painted[kind])
        return self._images[kind]

    def _mark_empty_rows(self, painter: QPainter, kind: str, rect: QRect) -> None:
        """An amber bar left of each row with no visible key: the model gives it all-zero weights."""
        mask = self._masks[kind]
        cell_h = rect.height() / mask.shape[0]
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(QColor(EMPTY_ROW_COLOUR))
        for i in np.flatnonzero(~mask.any(axis=1)):
            painter.drawRect(QRect(rect.left() - 5, round(rect.top() + i * cell_h), 4, max(round(cell_h), 1)))

    def event(self, event: QEvent) -> bool:  # Qt's name
        if event.type() == QEvent.Type.ToolTip:
            assert isinstance(event, QHelpEvent)
            tip = self._cell_tip(event.pos().x(), event.pos().y())
            QToolTip.showText(event.globalPos(), tip or self.toolTip(), self)
            return True
        return super().event(event)

    def _cell_tip(self, x: int, y: int) -> str:
        """ "Cross: query 2 -> key 5 masked" under the mouse, "" off the images."""
        for kind in PREVIEW_KINDS:
            rect, mask = self.image_rect(kind), self._masks[kind]
            if mask.size and rect.contains(x, y):
                i = min(int((y - rect.top()) * mask.shape[0] / rect.height()), mask.shape[0] - 1)
                j = min(int((x - rect.left()) * mask.shape[1] / rect.width()), mask.shape[1] - 1)
                state = (
                    "may attend" if mask[i, j] else "painted (masked)" if (i, j) in self._painted[kind] else "masked"
                )
                if not mask[i].any():
                    state += "; this query sees no key at all, so its weights are all 0"
                return f"{KIND_SHORT_TITLES[kind]}: query {i} -> key {j} {state}"
        return ""
