"""The decoder's output tokens as coloured chips above the expected output, painted by one widget.

Long rows wrap within the widget's width (no sideways scrolling), in blocks of an output line over its expected line.

A QLabel per chip would relay out and repaint a widget per token on every keystroke; this widget computes the chip
rectangles itself and paints them in one pass.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from itertools import repeat
from operator import itemgetter

from PySide6.QtCore import QEvent, QPoint, QRect, QSize, Qt
from PySide6.QtGui import QColor, QFont, QHelpEvent, QPainter, QPaintEvent, QPen, QRegion, QResizeEvent
from PySide6.QtWidgets import QSizePolicy, QToolTip, QWidget

from .chip import Chip, first_difference

ROW_TITLES = ("Output:", "Expected:")
# an empty output row is no fault: teacher forcing predicts every position at once (the Prediction line shows it)
EMPTY_OUTPUT = "none yet: Step decodes here, one token at a time"
MIN_CHIP_WIDTH = 22
GAP = 3  # pixels between chips and between rows
PAD = 5  # text padding inside a chip
BLOCK_GAP = 6  # extra pixels between one output-over-expected block and the next when rows wrap


class TokenChips(QWidget):
    """Output chips (coloured right / wrong / unknown, forced ones dashed and underlined) over the expected row.

    Columns line up across the two rows, so output token i sits above expected token i. A row longer than the
    width wraps in blocks: output line 1 over expected line 1, then output line 2 over expected line 2, and so on.
    The height is reserved for the expected row when it is set (and follows the width), so it stays put while tokens
    are decoded one by one; if the output outruns that (longer or wider tokens) it grows once and stays grown until
    the expected row or the width changes. An expected row one line shorter than the last keeps that line for one
    change, so backspace and retype at a line break do not resize the widget on every key.
    """

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._rows: tuple[tuple[tuple[str, str, bool], ...], ...] = ((), ())  # (text, state, forced) per chip
        self._chips: tuple[Chip, ...] = ()
        self._row_chips: tuple[list[Chip], list[Chip]] = ([], [])  # as laid out last, per row
        self._starts: list[int] = [0]  # first column of each line (block), as laid out last
        self._kept: tuple[int, int] = (0, 0)  # per row, the leading chips the last layout kept from the one before
        self._laid: tuple | None = None  # (rows, column widths, widget width) of the last layout
        self._n_blocks = 1
        self._widest = MIN_CHIP_WIDTH  # widest column, which sets minimumSizeHint
        self._reserve_key: tuple[object, int] | None = None
        self._reserved = 1  # blocks of height reserved for the current expected row and width
        self._slack = False  # whether the reserve kept a block the current expected row does not need
        self._forced_font = QFont(self.font())
        self._forced_font.setUnderline(True)
        metrics = self.fontMetrics()
        self._chip_height = metrics.height() + 6
        self._title_width = max(metrics.horizontalAdvance(t) for t in ROW_TITLES) + 2 * GAP
        self._width: dict[str, int] = {}  # text -> chip width: a dozen tokens in a vocabulary, hundreds of chips
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.setFixedHeight(self._height_for_blocks(1))
        self.setAccessibleName("Decoded and expected tokens")

    def set_rows(self, output: Sequence[tuple[str, str, bool]], expected: Sequence[str]) -> None:
        """Show `output` as (text, state, forced) chips and `expected` beneath; nothing happens when unchanged."""
        rows = (tuple(output), tuple(zip(expected, repeat("expected"), repeat(False))))
        if rows == self._rows:
            return
        self._rows = rows
        self.setAccessibleDescription(  # painted chips have no text of their own for a screen reader
            "Output: "
            + (
                " ".join(f"{text} ({state}{', forced' if forced else ''})" for text, state, forced in rows[0])
                or EMPTY_OUTPUT
            )
            + ". Expected: "
            + " ".join(expected)
        )
        self._relayout()

    def chips(self, row: int = 0) -> list[Chip]:
        """The chips of a row (0 = output, 1 = expected) as drawn, rectangles in this widget's coordinates."""
        return [chip for chip in self._chips if chip.row == row]

    def chip_at(self, pos: QPoint) -> Chip | None:
        return next((chip for chip in self._chips if chip.rect.contains(pos)), None)

    def sizeHint(self) -> QSize:  # Qt's name
        return QSize(self.minimumSizeHint().width(), self.height())

    def minimumSizeHint(self) -> QSize:  # Qt's name: room for the titles and the widest chip, as rows wrap
        return QSize(self._title_width + self._widest + GAP, self.height())

    def resizeEvent(self, event: QResizeEvent) -> None:  # Qt's name
        super().resizeEvent(event)
        if event.size().width() != event.oldSize().width():
            self._relayout()

    def _relayout(self) -> None:
        """Wrap the chips to the current width and reserve the height the expected row needs at this width."""
        expected = self._column_widths(self._rows[1])  # the expected row alone sets the reserved height
        widths = self._column_widths(self._rows[0], expected)
        before, blocks_before = self._row_chips, self._n_blocks
        self._chips, self._n_blocks = self._layout_chips(self._rows, widths)
        key = (self._rows[1], self.width())
        if key != self._reserve_key:  # a new source or width: reserve the lines the expected row takes on its own
            same_width = self._reserve_key is not None and self._reserve_key[1] == key[1]
            self._reserve_key = key  # no blank line under the last one; an output wider than it grows the widget
            # the layout's own line count where the output widens no column: no second pass over the row
            need = self._n_blocks if widths == expected else len(self._line_starts(expected))
            # one block of slack for one change: typing and deleting across a line break resized the widget on
            # every key, and each resize repainted all the chips and laid out the scroll area (3 whole paints a key
            # at 252 tokens); a second change that still needs less gives the block back
            self._slack = same_width and need == self._reserved - 1 and not self._slack
            if not self._slack:
                self._reserved = need
        self._reserved = max(self._reserved, self._n_blocks)  # never shrinks while the source and width stay
        height = self._height_for_blocks(self._reserved)
        if height != self.height():
            self.setFixedHeight(height)
        widest = max(widths, default=MIN_CHIP_WIDTH)
        if widest != self._widest:  # the minimum width changed: the panel's layout must hear of it (not per chip)
            self._widest = widest
            self.updateGeometry()
        if self._n_blocks != blocks_before:
            self.update()
        else:  # repaint only the chips that changed (a keystroke changes one or two of dozens): each row's chips
            dirty = QRegion()  # past its kept prefix, as they were and as they are
            for old, new, keep in zip(before, self._row_chips, self._kept):
                for chip in (*old[keep:], *new[keep:]):
                    dirty += chip.rect
            if bool(before[0]) != bool(self._row_chips[0]):  # EMPTY_OUTPUT comes or goes: its whole line
                dirty += self._empty_output_box()
            self.update(dirty)

    def _column_widths(self, row: Sequence[tuple[str, str, bool]], base: Sequence[int] = ()) -> list[int]:
        """Each column as wide as its token in `row` (at least MIN_CHIP_WIDTH) and as `base` (another row's widths;
        columns past the end of `row` keep those)."""
        texts, width = list(map(itemgetter(0), row)), self._width
        for text in set(texts).difference(width):  # each new token measured once
            width[text] = max(self.fontMetrics().horizontalAdvance(text) + 2 * PAD, MIN_CHIP_WIDTH)
        own = list(map(width.__getitem__, texts))
        n = min(len(own), len(base))
        return [*map(max, own[:n], base[:n]), *own[n:], *base[n:]]

    def _line_starts(self, widths: Sequence[int]) -> list[int]:
        """Index of the first column of each line: as many columns per line as fit the width (at least one)."""
        starts: list[int] = []
        x, room = 0, self.width() - GAP
        for i, w in enumerate(widths):
            if not starts or x + w > room:
                starts.append(i)
                x = self._title_width
            x += w + GAP
        return starts or [0]

    def _block_top(self, block: int) -> int:
        return GAP + block * (2 * (self._chip_height + GAP) + BLOCK_GAP)

    def _height_for_blocks(self, blocks: int) -> int:
        return self._block_top(blocks) - BLOCK_GAP

    def _layout_chips(
        self, rows: tuple[tuple[tuple[str, str, bool], ...], ...], widths: list[int]
    ) -> tuple[tuple[Chip, ...], int]:
        """Chip rectangles wrapped in blocks of an output line over an expected line, and the number of blocks.

        Columns before the first one that changed keep their chip objects: a keystroke at the end of a 128-token
        source builds one or two chips, not 260 (and the repaint covers just those)."""
        starts = self._line_starts(widths)
        keeps = self._unchanged_columns(rows, widths)
        row_chips = []
        for r, (row, keep) in enumerate(zip(rows, keeps)):
            chips = self._row_chips[r][:keep]  # a new list
            block = bisect_right(starts, len(chips)) - 1
            for i in range(len(chips), len(row)):
                while block + 1 < len(starts) and starts[block + 1] <= i:
                    block += 1
                first = starts[block]  # the chip's line starts there: its left edge follows the widths before it
                left = self._title_width + sum(widths[first:i]) + GAP * (i - first)
                top = self._block_top(block) + r * (self._chip_height + GAP)
                text, state, forced = row[i]
                chips.append(Chip(r, i, text, state, forced, QRect(left, top, widths[i], self._chip_height)))
            row_chips.append(chips)
        self._row_chips = (row_chips[0], row_chips[1])
        self._starts = starts
        self._kept = keeps  # per row, how many leading chips are the same objects as before
        self._laid = (rows, widths, self.width())
        return tuple(row_chips[0] + row_chips[1]), len(starts)

    def _unchanged_columns(
        self, rows: tuple[tuple[tuple[str, str, bool], ...], ...], widths: list[int]
    ) -> tuple[int, int]:
        """Per row, how many leading chips are as last laid out: same tokens in that row and same column widths up
        to there, at the same widget width. A chip's place depends on nothing else (line breaks before it included),
        so a token decoded onto the output row leaves the whole expected row as it was."""
        if self._laid is None or self._laid[2] != self.width():
            return 0, 0
        old_rows, old_widths, _ = self._laid
        same_widths = min(len(widths), first_difference(widths, old_widths))
        output, expected = (int(min(same_widths, first_difference(row, old))) for row, old in zip(rows, old_rows))
        return output, expected

    def _blocks_near(self, area: QRect) -> range:
        """The blocks (an output line over its expected line) that reach into `area`."""
        height = self._block_top(1) - self._block_top(0)
        return range(max(0, (area.top() - GAP) // height), min(len(self._starts), (area.bottom() - GAP) // height + 1))

    def _chips_near(self, area: QRect) -> list[Chip]:
        """The chips of the blocks that reach into `area`: a keystroke repaints a chip or two at the end of a
        128-token row, and testing all 256 chips (and both titles of every block) cost more than painting those."""
        blocks = self._blocks_near(area)
        if not blocks:
            return []
        bounds = [*self._starts, max(len(row) for row in self._row_chips)]
        return [
            *self._row_chips[0][bounds[blocks.start] : bounds[blocks.stop]],
            *self._row_chips[1][bounds[blocks.start] : bounds[blocks.stop]],
        ]

    def paintEvent(self, event: QPaintEvent) -> None:  # Qt's name
        painter = QPainter(self)
        region = event.region()  # a partial update: its rectangles, not their bounding box (first and last chip)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        painter.setPen(self.palette().windowText().color())
        for block in self._blocks_near(region.boundingRect()):
            for r, title in enumerate(ROW_TITLES):
                top = self._block_top(block) + r * (self._chip_height + GAP)
                box = QRect(0, top, self._title_width, self._chip_height)
                if region.intersects(box):
                    painter.drawText(box, Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft, title)
        if not self._rows[0]:
            self._paint_empty_output(painter, region)
        for chip in self._chips_near(region.boundingRect()):
            if not region.intersects(chip.rect):
                continue
            background, text = chip.colours
            painter.setBrush(QColor(background))
            pen = QPen(QColor("#000000"), 2, Qt.PenStyle.DashLine) if chip.forced else Qt.PenStyle.NoPen
            painter.setPen(pen)
            painter.drawRoundedRect(chip.rect.adjusted(1, 1, -1, -1), 4, 4)
            painter.setPen(QColor(text))
            painter.setFont(self._forced_font if chip.forced else self.font())
            painter.drawText(chip.rect, Qt.AlignmentFlag.AlignCenter, chip.text)
        painter.end()

    def _empty_output_box(self) -> QRect:
        return QRect(self._title_width, self._block_top(0), self.width() - self._title_width, self._chip_height)

    def _paint_empty_output(self, painter: QPainter, region: QRegion) -> None:
        """EMPTY_OUTPUT in grey where the first output chip would go, elided to the row's width."""
        box = self._empty_output_box()
        if region.intersects(box):
            painter.setPen(self.palette().placeholderText().color())
            text = self.fontMetrics().elidedText(EMPTY_OUTPUT, Qt.TextElideMode.ElideRight, box.width())
            painter.drawText(box, Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft, text)

    def event(self, event: QEvent) -> bool:  # Qt's name
        if event.type() == QEvent.Type.ToolTip:
            assert isinstance(event, QHelpEvent)
            chip = self.chip_at(event.pos())
            if chip is None:
                QToolTip.hideText()
                event.ignore()
            else:
                QToolTip.showText(event.globalPos(), chip.tooltip, self, chip.rect)
            return True
        return super().event(event)
