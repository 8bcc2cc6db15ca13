"""The logit lens as a table: rows decoder layers, columns output positions, each cell the token that layer would
write and its probability, shaded by it (white = unsure, dark = sure, which is not the same as right); a tick marks
the cells whose token is the one the model writes there, named in the column header, and a cross the others (the
shade alone would make a sure wrong guess look like a sure right one). A layer that writes one token at most positions
is named so beside its row: its ticks fall wherever the answer happens to be that token. An early layer that is sure
of a wrong token somewhere gets, beside its row, the line that explains it (only the last layer is trained to be read
out), where a learner looking at that row reads it."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from PySide6.QtCore import Qt
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QTableWidget, QTableWidgetItem, QWidget

from core_model.logit_lens import LogitLens


def fit_rows(table: QTableWidget) -> None:
    """Make a short table exactly as tall as its rows: a row scrolled out of view would read as missing."""
    table.resizeRowsToContents()
    header = table.horizontalHeader().sizeHint().height()
    table.setFixedHeight(header + table.verticalHeader().length() + 2 * table.frameWidth())


SURE = 0.6  # above it a cell is dark (white text): it reads as sure
SURE_WRONG_NOTE = "sure but wrong is normal: only the\nlast layer is trained to be read out"


def probability_colour(p: float) -> QColor:
    """White at 0 through blue at 1; text turns white on the darker half."""
    t = max(0.0, min(1.0, p))
    return QColor(int(255 - 200 * t), int(255 - 150 * t), 255)


class LensTable(QTableWidget):
    """Each decoder layer's prediction at every output position; a wrong early guess is shown as it is."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.setSelectionMode(QAbstractItemView.SelectionMode.NoSelection)
        self.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Stretch)
        self.verticalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)  # two lines a cell
        self.setToolTip("If the decoder stopped after this layer, it would write this token (shade: its probability)")

    def set_lens(self, lens: LogitLens | None, output_tokens: Sequence[str], token: Callable[[int], str]) -> None:
        """`token(id)` names a token id; None clears the table."""
        self.clearContents()
        if lens is None:
            self.setRowCount(0)
            self.setColumnCount(0)
            return
        layers, positions = lens.top_tokens.shape
        self.setRowCount(layers)
        self.setColumnCount(positions)
        mostly = self._label_rows(lens, output_tokens, token)
        self.setHorizontalHeaderLabels([f"out {t}\n{output_tokens[t]}" for t in range(positions)])  # fits 17
        for layer in range(layers):
            for t in range(positions):
                p = math.exp(float(lens.top_log_probs[layer, t]))
                written = math.exp(float(lens.output_log_probs[layer, t]))
                top = token(int(lens.top_tokens[layer, t]))
                item = QTableWidgetItem(f"{top} {'✓' if top == output_tokens[t] else '✗'}\n{p:.2f}")
                item.setTextAlignment(Qt.AlignmentFlag.AlignCenter)
                item.setBackground(QBrush(probability_colour(p)))
                item.setForeground(QBrush(QColor(255, 255, 255) if p > SURE else QColor(0, 0, 0)))
                chance = ""
                if mostly[layer] and int(lens.top_tokens[layer, t]) == lens.most_common(layer)[0]:
                    chance = f"; this layer writes it at most positions ({mostly[layer]}): a match here can be chance"
                item.setToolTip(
                    f"After decoder layer {layer + 1}, output position {t}: top token {top!r} with p = {p:.3f}; "
                    f"the token written, {output_tokens[t]!r}, has p = {written:.3f}{chance}"
                )
                self.setItem(layer, t, item)

    def _label_rows(self, lens: LogitLens, output_tokens: Sequence[str], token: Callable[[int], str]) -> list[str]:
        """Each row's header, with the notes that explain how to read that row beside it; returns the "mostly" notes."""
        layers = lens.top_tokens.shape[0]
        mostly = [mostly_note(lens, layer, token) for layer in range(layers)]
        sure = [SURE_WRONG_NOTE if sure_and_wrong(lens, layer, output_tokens, token) else "" for layer in range(layers)]
        self.setVerticalHeaderLabels(
            ["\n".join(filter(None, (f"after dec L{i + 1}", mostly[i], sure[i]))) for i in range(layers)]
        )
        for layer, note in enumerate(mostly):
            tips = [
                f"This layer writes one token at most positions ({note}): its ✓ fall wherever the answer happens to "
                "be that token, and say little about what the layer found"
                if note
                else "",
                "This layer is sure (p > 0.6) of a wrong token somewhere: only the last layer's stream was trained "
                "to go through the output layer, so an early layer's reading can be confident and wrong"
                if sure[layer]
                else "",
            ]
            self.verticalHeaderItem(layer).setToolTip(". ".join(filter(None, tips)))
        return mostly


def mostly_note(lens: LogitLens, layer: int, token: Callable[[int], str]) -> str:
    """ "mostly 8 (at 7 of 9 positions)" for an early layer that writes one token at more than half of 3+ positions,
    else "". The last layer's row is the output itself, so it is never flagged."""
    positions = lens.top_tokens.shape[1]
    token_id, count = lens.most_common(layer)
    if layer == lens.top_tokens.shape[0] - 1 or positions < 3 or 2 * count <= positions:
        return ""
    return f"mostly {token(token_id)} (at {count} of {positions} positions)"


def sure_and_wrong(lens: LogitLens, layer: int, output_tokens: Sequence[str], token: Callable[[int], str]) -> bool:
    """Whether an early layer is sure (p > SURE, a dark cell) of a token the model does not write there. The last
    layer's row is the output itself, so it never is."""
    if layer == lens.top_tokens.shape[0] - 1:
        return False
    return any(
        math.exp(float(lens.top_log_probs[layer, t])) > SURE and token(int(lens.top_tokens[layer, t])) != written
        for t, written in enumerate(output_tokens)
    )
