"""The roles summary: one row per head with its role, score, reads score (cross heads) and ablation deltas."""

from __future__ import annotations

from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QTableWidget, QTableWidgetItem, QWidget

from core_model.head_importance import HeadAnalysis
from core_model.head_roles import HeadRole
from visualizer.widgets.common.role_labels import READS_MEANING, ROLE_LABELS

from .importance_map import KIND_NAMES, delta_text

COLUMNS = ("kind", "layer", "head", "role", "score", "reads", "Δ loss", "Δ exact match")


class RolesTable(QTableWidget):
    """Shows roles as soon as they are known; the two delta columns fill in once importance has run."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(0, len(COLUMNS), parent)
        self.setHorizontalHeaderLabels(COLUMNS)
        header = self.horizontalHeaderItem(COLUMNS.index("reads"))
        if header is not None:
            header.setToolTip(READS_MEANING[:1].upper() + READS_MEANING[1:])
        self.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.verticalHeader().setVisible(False)
        self.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.horizontalHeader().setStretchLastSection(True)
        self.setSortingEnabled(False)
        self._roles: tuple[HeadRole, ...] = ()
        self._analysis: HeadAnalysis | None = None

    def set_roles(self, roles: tuple[HeadRole, ...] | None) -> None:
        self._roles = roles or ()
        self._fill()

    def set_analysis(self, analysis: HeadAnalysis | None) -> None:
        self._analysis = analysis
        self._fill()

    def _fill(self) -> None:
        deltas = {(h.kind, h.layer, h.head): h for h in self._analysis.heads} if self._analysis else {}
        self.setRowCount(len(self._roles))
        for i, r in enumerate(self._roles):
            d = deltas.get((r.kind, r.layer, r.head))
            cells = (
                KIND_NAMES[r.kind],
                f"L{r.layer + 1}",
                f"H{r.head + 1}",
                ROLE_LABELS[r.role],
                f"{r.score:.3f}",
                "—" if r.alignment is None else f"{r.alignment:.3f}",
                "" if d is None else delta_text(d.delta_loss, 4),
                "" if d is None else delta_text(d.delta_exact_match, 3),
            )
            for c, text in enumerate(cells):
                item = QTableWidgetItem(text)
                if c == 3:
                    item.setToolTip("; ".join(f"{ROLE_LABELS[n]} {s:.3f}" for n, s in r.scores))
                self.setItem(i, c, item)
