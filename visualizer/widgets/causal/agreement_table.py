"""The agreement table: for each attribution method and attention view, first in how many output positions their
top symbols match (a figure a learner can check on the maps by eye), then the mean rank correlation of |attribution|
with the view, whose low values need a caveat; a saturated method's row says n/a."""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import Qt
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QTableWidget, QTableWidgetItem, QWidget

from .lens_table import fit_rows
from .source_maps import METHOD_TITLES, view_title

AGREEMENT_CAPTION = (
    "Agreement of |attribution| with each attention view over the source's symbols. top-1 k of n: in k of n output "
    "positions the most-attributed symbol is the one attended most (the brightest cell of a row is in the same "
    "column on both maps). ρ, second: Spearman rank correlation of the whole order, mean over output positions; ties "
    "and near-zero weights make ρ low even where the picture agrees."
)
AGREEMENT_TIP = (
    "top-1 k of n: in k of n output positions the symbol with the largest |attribution| is the one attended most "
    "(positions with a tie left out). ρ: Spearman rank correlation between |attribution| and the attention view over "
    "the source's symbols, mean over the output positions (1 = same order, 0 = unrelated, -1 = reversed); near-zero "
    "cells rank noise, so ρ can be low where the maps match. Hover a cell for each position"
)
SATURATED_CELL = "n/a: saturated"


def agreement_text(rhos: list[float | None], tops: list[bool | None]) -> str:
    """A cell, "top-1 8 of 9 · ρ +0.46": first in how many positions (ties left out) the tops match, which the maps
    show at a glance; then the mean rank correlation, which near-zero cells pull down."""
    known_rhos, known_tops = [r for r in rhos if r is not None], [t for t in tops if t is not None]
    rho = f"{np.mean(known_rhos):+.2f}" if known_rhos else "—"
    top = f"{sum(known_tops)} of {len(known_tops)}" if known_tops else "—"
    return f"top-1 {top} · ρ {rho}"


def _agreement_item(title: str, rhos: list[float | None], tops: list[bool | None], saturated: bool) -> QTableWidgetItem:
    """One cell; a saturated method's says n/a, as its numbers (kept in the tooltip) would read as agreement."""
    marks = {True: "✓", False: "✗", None: "–"}
    positions = ", ".join(f"{marks[t]} {'—' if r is None else f'{r:+.2f}'}" for r, t in zip(rhos, tops))
    tip = (
        f"{title}: {agreement_text(rhos, tops)}. Per output position, top-1 (✓ same, ✗ not, – none) and ρ: {positions}"
    )
    item = QTableWidgetItem(SATURATED_CELL if saturated else agreement_text(rhos, tops))
    if saturated:
        item.setForeground(QBrush(QColor("#9e9e9e")))
        tip = f"Saturated: near 0 everywhere, so its order and its top symbol are those of noise. {tip}"
    item.setTextAlignment(Qt.AlignmentFlag.AlignCenter)
    item.setToolTip(tip)
    return item


class AgreementTable(QTableWidget):
    """Methods x attention views: top-1 count, then mean rank correlation; each position's in the tooltip."""

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
                row_tops: list[bool | None] = top1[method][view] if top1 else [None] * len(row_rhos)
                self.setItem(row, col, _agreement_item(title, row_rhos, row_tops, method == muted))
        fit_rows(self)
