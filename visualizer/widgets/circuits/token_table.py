"""A token x token circuit table (QK or OV): two significant digits a cell, the full value on hover, a diverging colour.

Render only. White is 0, green positive, red negative, darkest at the largest |value| among the cells that set the
scale (the caller's `scaled`: the symbols, so that an <eos> column does not wash them out; cells beyond it are drawn
at full colour), so a learner reads the sign and the pattern (a diagonal, a column) at a glance. Each row's highest
counted cell is bold: softmax (over keys for QK, over output tokens for OV) works row by row, so the row's winner is
what the head does. Greyed cells (tokens that never stand there, such as <pad>, which the padding masks hide, or <eos>
as a decoder input; keys a causal mask hides) keep their numbers but take no part in the colour scale or the bold
mark.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QBrush, QColor, QFont, QResizeEvent
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QTableWidget, QTableWidgetItem, QWidget

from core_model.vocab import BOS, EOS, N_SPECIALS
from visualizer.widgets.causal.effect_tables import effect_colour

from .table_fit import natural_widths, spread_columns

Tip = Callable[[str, str, float], str]  # (row token, column token, value) -> the cell's tooltip
GREYED_BACKGROUND, GREYED_TEXT = QColor("#e6e6e6"), QColor("#6e6e6e")
SHOWN_ROWS = 20  # a table up to this long shows every row; a longer vocabulary or source scrolls in the table


def cell_text(value: float) -> str:
    """Two significant digits or more, as narrow as that allows: "-3.4", "43", "132" (never "-0.0")."""
    places = 1 if abs(value) < 9.95 else 0  # 9.96 would round to "10.0"
    return f"{round(value, places) + 0.0:.{places}f}"


class TokenTable(QTableWidget):
    """Rows and columns named by tokens; `set_table` fills it, an empty matrix clears it."""

    compact_changed = Signal(bool)  # the numbers stopped (True) or started again (False) fitting the width

    def __init__(self, parent: QWidget | None = None, *, mark_winners: bool = True) -> None:
        super().__init__(parent)
        self.mark_winners = mark_winners  # bold each row's highest counted cell (a dot when numbers do not fit)
        self.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.setSelectionMode(QAbstractItemView.SelectionMode.NoSelection)
        self.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Fixed)  # spread_columns sets them
        self.horizontalHeader().setMinimumSectionSize(8)
        self.verticalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Stretch)
        self.scale = 0.0  # the largest |value| among the counted cells: the darkest colour
        self.winners: list[int | None] = []  # each row's highest counted column (None: no counted cell)
        self.compact = False  # the numbers do not fit: cells show colour only, the winner a dot, values on hover
        self._texts: list[list[str]] = []
        smaller = QFont(self.font())
        smaller.setPointSizeF(smaller.pointSizeF() - 1)  # 13 columns of "-14.6" beside the side panels at 1280 x 800
        self.setFont(smaller)
        self.verticalHeader().setMinimumSectionSize(self.fontMetrics().height())  # a row never cuts its label

    def set_table(
        self,
        matrix: np.ndarray,
        row_tokens: Sequence[str],
        column_tokens: Sequence[str],
        tip: Tip,
        greyed: np.ndarray | None = None,
        scaled: np.ndarray | None = None,
    ) -> None:
        """matrix (rows, columns), labelled by the tokens; tip(row token, column token, value) gives each tooltip.

        `greyed` (rows, columns) marks the cells drawn grey, outside the colour scale and the row winners; `scaled`
        the cells whose largest |value| is the darkest colour (default: every cell not greyed)."""
        self.clearContents()
        rows, columns = matrix.shape if matrix.size else (0, 0)
        self.setRowCount(rows)
        self.setColumnCount(columns)
        self.setHorizontalHeaderLabels(list(column_tokens[:columns]))
        self.setVerticalHeaderLabels(list(row_tokens[:rows]))
        counted = ~greyed if greyed is not None else np.ones(matrix.shape, dtype=bool)
        setting = counted if scaled is None else scaled & counted
        self.scale = float(np.abs(matrix[setting]).max()) if setting.any() else 0.0
        self.winners = row_winners(matrix, counted)
        bold = QFont(self.font())
        bold.setBold(True)
        self._texts = [[cell_text(float(v)) for v in row] for row in matrix] if matrix.size else []
        for i in range(rows):
            for j in range(columns):
                value = float(matrix[i, j])
                item = QTableWidgetItem(cell_text(value))
                item.setTextAlignment(Qt.AlignmentFlag.AlignCenter)
                if counted[i, j]:
                    item.setBackground(QBrush(effect_colour(value / self.scale if self.scale > 0 else 0.0)))
                    item.setForeground(QBrush(QColor(0, 0, 0)))
                else:
                    item.setBackground(QBrush(GREYED_BACKGROUND))
                    item.setForeground(QBrush(GREYED_TEXT))
                item.setToolTip(tip(row_tokens[i], column_tokens[j], value))
                if self.mark_winners and self.winners[i] == j:
                    item.setFont(bold)
                self.setItem(i, j, item)
        self._fit()
        self._fit_height()

    def _fit_height(self) -> None:
        """Tall enough for every row of a short table (the page scrolls, not the table: a row scrolled out of
        sight would read as missing); a longer one shows SHOWN_ROWS and scrolls itself."""
        rows = min(self.rowCount(), SHOWN_ROWS)
        header = self.horizontalHeader().sizeHint().height()
        bar = self.horizontalScrollBar().sizeHint().height()  # room for it, should the columns not fit
        lines = rows * self.verticalHeader().minimumSectionSize()
        self.setMinimumHeight(header + lines + 2 * self.frameWidth() + bar if rows else 0)

    def resizeEvent(self, event: QResizeEvent) -> None:  # Qt's name
        super().resizeEvent(event)
        self._fit()

    def _fit(self) -> None:
        """Numbers when every column fits its widest one, else colour only (a number cut to "…" would be misread)."""
        if self._texts:
            self._show_texts(True)
            compact = self.columnCount() > 0 and sum(natural_widths(self)) > self.viewport().width()
            if compact:
                self._show_texts(False)
            if compact != self.compact:
                self.compact = compact
                self.compact_changed.emit(compact)
        spread_columns(self)

    def _show_texts(self, numbers: bool) -> None:
        for i, row in enumerate(self._texts):
            for j, text in enumerate(row):
                item = self.item(i, j)
                if item is not None:
                    dot = self.mark_winners and self.winners[i] == j
                    item.setText(text if numbers else ("●" if dot else ""))


def row_winners(matrix: np.ndarray, counted: np.ndarray) -> list[int | None]:
    """Each row's column of the highest counted value (the first on a tie); None for a row with nothing counted."""
    masked = np.where(counted, matrix, -np.inf)
    return [int(np.argmax(row)) if np.isfinite(row).any() else None for row in masked]


def occurring(side: str, n_tokens: int, anchored: bool) -> set[int]:
    """The token ids that can stand on a side of a table: "source" (the encoder's input: <bos> and <eos> only when
    anchored), "decoder" (the decoder's input: <bos> then symbols) or "output" (what the model writes: symbols and
    <eos>). <pad> is never among them: the padding masks hide it."""
    symbols = set(range(N_SPECIALS, n_tokens))
    extra = {"source": {BOS, EOS} if anchored else set(), "decoder": {BOS}, "output": {EOS}}[side]
    return symbols | extra


def vocabulary_masks(n_tokens: int, rows: set[int], columns: set[int]) -> tuple[np.ndarray, np.ndarray]:
    """(greyed, scaled) for a token x token table: rows and columns that never occur greyed, the symbols setting the
    scale."""
    ids = np.arange(n_tokens)
    greyed = ~np.isin(ids, list(rows))[:, None] | ~np.isin(ids, list(columns))[None, :]
    scaled = np.zeros_like(greyed)
    scaled[N_SPECIALS:, N_SPECIALS:] = True
    return greyed, scaled
