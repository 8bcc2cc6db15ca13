"""The Circuits tab's head list: one row per head (kind, layer and head), its copying score and its Heads tab role.

Render only. Selecting a row says which head's circuits to draw; a double-click asks to see the head in the Playground.
"""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import QTableWidget, QTableWidgetItem, QWidget

from core_model.circuits import HeadCircuit, HeadRef
from core_model.head_roles import HeadRole
from visualizer.widgets.causal.effect_tables import effect_colour, role_line, signed

from .table_fit import fit_width, make_side_table

SHORT_KINDS = {"encoder_self": "enc self", "decoder_self": "dec self", "cross": "cross"}
LONG_KINDS = {"encoder_self": "encoder self-attention", "decoder_self": "decoder self-attention", "cross": "cross"}
COLUMNS = ("Kind", "Head", "Copying", "Role (Heads tab)")
COPYING_TIP = (
    "Copying score: sum of the OV table's eigenvalues / sum of their sizes (Elhage et al. 2021). +1 (green): attending "
    "to a token raises that token's logit, the head copies; −1 (red): it lowers it, the head suppresses; near 0: "
    "neither"
)


def head_label(ref: HeadRef) -> str:
    """A head as the app writes it: "enc self L1 H2" (1-based)."""
    return f"{SHORT_KINDS[ref.kind]} L{ref.layer + 1} H{ref.head + 1}"


def _item(text: str, tip: str = "") -> QTableWidgetItem:
    item = QTableWidgetItem(text)
    item.setTextAlignment(Qt.AlignmentFlag.AlignCenter)
    item.setToolTip(tip)
    return item


class HeadList(QTableWidget):
    """Every head, in the model's order: kind, layer, head, copying score (coloured) and the Heads tab's role."""

    head_selected = Signal(object)  # HeadRef | None: draw this head's circuits
    head_chosen = Signal(str, int, int)  # kind, layer, head (0-based): show it in the Playground

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(0, len(COLUMNS), parent)
        self.refs: list[HeadRef] = []
        self._roles: dict[tuple[str, int, int], HeadRole] = {}
        self.setHorizontalHeaderLabels(list(COLUMNS))
        self.horizontalHeaderItem(2).setToolTip(COPYING_TIP)
        self.horizontalHeaderItem(3).setToolTip("The role the Heads tab scored: where the head looks on the task")
        make_side_table(self, "Select a head to see its circuits; double-click to see it in the Playground")
        self.itemSelectionChanged.connect(lambda: self.head_selected.emit(self.selected()))
        self.cellDoubleClicked.connect(lambda row, _col: self._choose(row))

    def set_heads(self, heads: Sequence[HeadCircuit]) -> None:
        """One row per head (empty: no result); the head selected stays selected, else the first is."""
        previous = self.selected()
        self.blockSignals(True)  # one head_selected at the end, not one per row rebuilt
        self.clearSelection()
        self.refs = [h.ref for h in heads]
        self.clearContents()
        self.setRowCount(len(heads))
        for row, circuit in enumerate(heads):
            ref, score = circuit.ref, circuit.copying_score
            self.setItem(row, 0, _item(SHORT_KINDS[ref.kind], LONG_KINDS[ref.kind]))
            self.setItem(
                row, 1, _item(f"L{ref.layer + 1} H{ref.head + 1}", f"layer {ref.layer + 1}, head {ref.head + 1}")
            )
            copying = _item(signed(score), f"{head_label(ref)}: copying score {score:+.4f}. {COPYING_TIP}")
            copying.setBackground(QBrush(effect_colour(score)))
            copying.setForeground(QBrush(QColor(0, 0, 0)))
            self.setItem(row, 2, copying)
        self._fill_roles()
        self.blockSignals(False)
        if heads:
            self.select(previous if previous in self.refs else self.refs[0])
        else:
            self.head_selected.emit(None)

    def set_roles(self, roles: Sequence[HeadRole] | None) -> None:
        """The Heads tab's roles of the model shown (None: not scored yet)."""
        self._roles = {(r.kind, r.layer, r.head): r for r in roles or ()}
        self._fill_roles()

    def _fill_roles(self) -> None:
        for row, ref in enumerate(self.refs):
            role = self._roles.get((ref.kind, ref.layer, ref.head))
            text = "not scored" if role is None else role_line(role)
            self.setItem(row, 3, _item(text, "The Heads tab's role: where this head looks on the task's inputs"))
        fit_width(self, stretch=len(COLUMNS) - 1)

    def selected(self) -> HeadRef | None:
        rows = self.selectionModel().selectedRows()
        return self.refs[rows[0].row()] if rows and rows[0].row() < len(self.refs) else None

    def select(self, ref: HeadRef) -> None:
        """Select a head's row and scroll to it."""
        if ref in self.refs:
            row = self.refs.index(ref)
            self.selectRow(row)
            self.scrollToItem(self.item(row, 0))

    def choose_selected(self) -> None:
        """Ask to see the selected head in the Playground."""
        ref = self.selected()
        if ref is not None:
            self.head_chosen.emit(ref.kind, ref.layer, ref.head)

    def _choose(self, row: int) -> None:
        if row < len(self.refs):
            ref = self.refs[row]
            self.head_chosen.emit(ref.kind, ref.layer, ref.head)
