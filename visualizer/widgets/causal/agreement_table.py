"""The agreement table: for each attribution method and attention view, the mean rank correlation of |attribution|
with the view and in how many output positions their top symbols match; a saturated method's row says n/a."""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import Qt
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QTableWidget, QTableWidgetItem, QWidget

from .lens_table import fit_rows
from .source_maps import METHOD_TITLES, view_title

AGREEMENT_CAPTION = (
    "Agreement of |attribution| with each attention view over the source's symbols. ρ: Spearman rank correlation of "
    "the whole order, mean over output positions (cells near 0 rank noise, so ρ can be low where the maps match); "
    "top k/n: in k of n output positions the most-attributed symbol gets the most attention."
)
AGREEMENT_TIP = (
    "ρ: Spearman rank correlation between |attribution| and the attention view over the source's symbols, mean over "
    "the output positions (1 = same order, 0 = unrelated, -1 = reversed). top k/n: in k of n output positions the "
    "symbol with the largest |attribution| is the one attended most (positions with a tie left out). Hover a cell "
    "for each position"
)
SATURATED_CELL = "n/a: saturated"


def agreement_text(rhos: list[float | None], tops: list[bool | None]) -> str:
    """A cell, "ρ +0.46 · top 8/9": the mean rank correlation; in how many positions (ties left out) the tops match."""
    known_rhos, known_tops = [r for r in rhos if r is not None], [t for t in tops if t is not None]
    rho = f"{np.mean(known_rhos):+.2f}" if known_rhos else "—"
    top = f"{sum(known_tops)}/{len(known_tops)}" if known_tops else "—"
    return f"ρ {rho} · top {top}"


def _agreement_item(title: str, rhos: list[float | None], tops: list[bool | None], saturated: bool) -> QTableWidgetItem:
    """One cell; a saturated method's says n/a, as its numbers (kept in the tooltip) would read as agreement."""
    marks = {True: "✓", False: "✗", None: "–"}
    positions = ", ".join(f"{'—' if r is None else f'{r:+.2f}'} {marks[t]}" for r, t in zip(rhos, tops))
    tip = f"{title}: {agreement_text(rhos, tops)}. Per output position, ρ and top (✓ same, ✗ not, – none): {positions}"
    item = QTableWidgetItem(SATURATED_CELL if saturated else agreement_text(rhos, tops))
    if saturated:
        item.setForeground(QBrush(QColor("#9e9e9e")))
        tip = f"Saturated: near 0 everywhere, so its order and its top symbol are those of noise. {tip}"
    item.setTextAlignment(Qt.AlignmentFlag.AlignCenter)
    item.setToolTip(tip)
    return item


class AgreementTable(QTableWidget):
    """Methods x attention views: mean rank correlation and top-1 count; each position's in the tooltip."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.setSelectionMode(QAbstractItemView.SelectionMode.NoSelection)
        self.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Stretch)
        self.setToolTip(AGREEMENT_TIP)

    def set_agreement(
        self,
        rhos: dict[str, dict[str, list[float | None]]] | None,
        tops: dict[str, dict[str, list[bool | None]]] | None = None,
        muted: str | None = None,
    ) -> None:
        """method -> view -> per position ρ and same top (None clears); `muted`: a saturated method, shown n/a."""
        self.clearContents()
        table, top1 = rhos or {}, tops or {}
        views = list(next(iter(table.values()))) if table else []
        self.setRowCount(len(table))
        self.setColumnCount(len(views))
        self.setVerticalHeaderLabels([METHOD_TITLES[m] for m in table])
        self.setHorizontalHeaderLabels([view_title(v) for v in views])
        for row, method in enumerate(table):
            for col, view in enumerate(views):
                title, row_rhos = f"{METHOD_TITLES[method]} vs {view_title(view)}", table[method][view]
                row_tops = top1[method][view] if top1 else [None] * len(row_rhos)
                self.setItem(row, col, _agreement_item(title, row_rhos, row_tops, method == muted))
        fit_rows(self)
