"""Patching effects as tables: a layer x head table per attention kind, and encoder layer x source position.

Render only. A cell shows the effect with two decimals and, for a head, its role from the Heads tab beside it, so a
learner sees where "looks at the right place" and "carries the answer" agree and where they do not.
"""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import (
    QAbstractItemView,
    QGridLayout,
    QHeaderView,
    QLabel,
    QTableWidgetItem,
    QWidget,
)

from core_model.head_roles import HeadRole
from core_model.model import ATTENTION_KINDS
from core_model.patching import HeadEffect, LayerEffect
from visualizer.widgets.common.empty_hint import HintTable
from visualizer.widgets.common.role_labels import ROLE_LABELS

KIND_NAMES = {
    "encoder_self": "Encoder self-attention",
    "decoder_self": "Decoder self-attention",
    "cross": "Cross-attention",
}


def effect_colour(effect: float) -> QColor:
    """White at 0, deepening green up to 1 (carries the answer), red below 0 (works against it); clipped at ±1."""
    t = max(-1.0, min(1.0, effect))
    if t >= 0:
        return QColor(int(255 - 200 * t), int(255 - 80 * t), int(255 - 200 * t))
    return QColor(255, int(255 + 190 * t), int(255 + 190 * t))


def _table(tip: str) -> HintTable:
    table = HintTable()
    table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
    table.setSelectionMode(QAbstractItemView.SelectionMode.NoSelection)
    table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Stretch)
    table.verticalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Stretch)
    table.setToolTip(tip)
    return table


def signed(value: float) -> str:
    """Two decimals with a sign; a value that rounds to zero reads "+0.00", never "-0.00"."""
    return f"{round(value, 2) + 0.0:+.2f}"


def role_line(role: HeadRole) -> str:
    """The head's role and how well it fits it, worded apart from the effect so the two 0-1 numbers are not mixed up.
    An `other` head fits no pattern: its number (its broad score) is no fit, so none is shown."""
    if role.role == "other":
        return "other (no named pattern)"
    return f"{ROLE_LABELS[role.role]} fit {role.score:.2f}"


UNREACHABLE = QColor("#e6e6e6")  # a head this test cannot reach: not "a head that does nothing"
UNREACHABLE_TIP = (
    "Decoder layer 1's self-attention sees only the teacher-forced output, the same in both runs: patching it "
    "cannot change anything, so its 0 says nothing about the head"
)


def _item(text: str, effect: float, tip: str, reachable: bool = True) -> QTableWidgetItem:
    item = QTableWidgetItem(text)
    item.setTextAlignment(Qt.AlignmentFlag.AlignCenter)
    item.setBackground(QBrush(effect_colour(effect) if reachable else UNREACHABLE))
    item.setForeground(QBrush(QColor(0, 0, 0) if reachable else QColor("#6e6e6e")))
    item.setToolTip(tip if reachable else f"{UNREACHABLE_TIP}. {tip}")
    return item


class HeadEffectTables(QWidget):
    """One table per kind (rows L1.., columns H1..): each head's effect and its role; a click asks to see the head."""

    head_chosen = Signal(str, int, int)  # kind, layer, head (0-based)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.tables: dict[str, HintTable] = {}
        self._effects: tuple[HeadEffect, ...] = ()
        self._layers: tuple[LayerEffect, ...] = ()
        self._roles: dict[tuple[str, int, int], HeadRole] = {}
        grid = QGridLayout(self)
        grid.setContentsMargins(0, 0, 0, 0)
        for col, kind in enumerate(ATTENTION_KINDS):
            table = _table("Click a head to see its maps in the Playground")
            table.cellClicked.connect(lambda r, c, kind=kind: self._clicked(kind, r, c))
            grid.addWidget(QLabel(KIND_NAMES[kind]), 0, col)
            grid.addWidget(table, 1, col)
            self.tables[kind] = table

    def set_hint(self, text: str) -> None:
        """What each table says while it is empty (what fills it, or that a run is filling it)."""
        for table in self.tables.values():
            table.set_hint(text)

    def set_effects(self, effects: Sequence[HeadEffect], layers: Sequence[LayerEffect] = ()) -> None:
        """Each head's effect, and each layer's heads patched together (an "all heads" column after the heads)."""
        self._effects, self._layers = tuple(effects), tuple(layers)
        self._fill()

    def _clicked(self, kind: str, row: int, column: int) -> None:
        if column < self._n_heads(kind):  # the "all heads" column is no single head's map
            self.head_chosen.emit(kind, row, column)

    def _n_heads(self, kind: str) -> int:
        return 1 + max((e.head for e in self._effects if e.kind == kind), default=-1)

    def set_roles(self, roles: Sequence[HeadRole] | None) -> None:
        """The Heads tab's roles of the model shown (None: not scored yet); drawn beside each effect."""
        self._roles = {(r.kind, r.layer, r.head): r for r in roles or ()}
        self._fill()

    def _fill(self) -> None:
        for kind, table in self.tables.items():
            mine = [e for e in self._effects if e.kind == kind]
            together = [e for e in self._layers if e.kind == kind]
            n_layers, n_heads = 1 + max((e.layer for e in mine), default=-1), self._n_heads(kind)
            table.clearContents()
            table.setRowCount(n_layers)
            table.setColumnCount(n_heads + (1 if together else 0))
            table.setVerticalHeaderLabels([f"L{i + 1}" for i in range(n_layers)])
            table.setHorizontalHeaderLabels([f"H{i + 1}" for i in range(n_heads)] + (["all heads"] if together else []))
            for e in together:
                tip = (
                    f"{KIND_NAMES[kind]} layer {e.layer + 1}, all its heads patched at once: effect {e.effect:+.4f}. "
                    "Heads that share the work each restore only part of it alone"
                )
                reachable = not (kind == "decoder_self" and e.layer == 0)
                table.setItem(e.layer, n_heads, _item(f"effect {signed(e.effect)}", e.effect, tip, reachable))
            for h in mine:
                role = self._roles.get((kind, h.layer, h.head))
                role_text = "" if role is None else role_line(role)
                tip = (
                    f"{KIND_NAMES[kind]} layer {h.layer + 1} head {h.head + 1}: patching effect {h.effect:+.4f}"
                    + (f"; role {role_text} (Heads tab)" if role else "; role not scored yet")
                    + ". Click to see its maps in the Playground."
                )
                text = f"effect {signed(h.effect)}" + (f"\n{role_text}" if role_text else "")
                reachable = not (kind == "decoder_self" and h.layer == 0)  # teacher forcing: same input in both runs
                table.setItem(h.layer, h.head, _item(text, h.effect, tip, reachable))


class PositionTable(HintTable):
    """Encoder layer x source position: the effect of patching the residual stream after that layer at that position."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("", parent)
        self.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.setSelectionMode(QAbstractItemView.SelectionMode.NoSelection)
        self.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Stretch)
        self.verticalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Stretch)
        self.setToolTip(
            "Each cell: the residual stream after that encoder layer, at that source position, taken from the clean run"
        )

    def set_sweep(self, sweep: Sequence[Sequence[float]], tokens: Sequence[str], corrupt: Sequence[str]) -> None:
        """sweep (layers, positions); columns named by the clean source's tokens, a changed one as "clean→corrupt"."""
        changed = {j for j, (a, b) in enumerate(zip(tokens, corrupt)) if a != b}
        self.clearContents()
        self.setRowCount(len(sweep))
        self.setColumnCount(len(tokens))
        self.setVerticalHeaderLabels([f"after enc L{i + 1}" for i in range(len(sweep))])
        self.setHorizontalHeaderLabels([f"{t}→{corrupt[j]}" if j in changed else t for j, t in enumerate(tokens)])
        for layer, row in enumerate(sweep):
            for j, effect in enumerate(row):
                tip = (
                    f"Encoder layer {layer + 1}, source position {j} ({tokens[j]!r}"
                    + (f", changed to {corrupt[j]!r}" if j in changed else "")
                    + f"): patching effect {effect:+.4f}"
                )
                self.setItem(layer, j, _item(signed(effect), effect, tip))
