"""The Circuits tab's head list: one row per head (kind, layer and head), its copying score and its Heads tab role.

Render only. Selecting a row says which head's circuits to draw; a double-click asks to see the head in the Playground.
Clicking a column's header sorts by it (the copying score by its size, so the strongest copiers and suppressors meet).
An encoder head's copying score is italic: it reads the encoder's stream through the output layer, which the model
itself never does (a lens). A role the Heads tab fits below WEAK_FIT reads "unclear", its best guess in the tooltip.
"""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import QTableWidget, QTableWidgetItem, QWidget

from core_model.circuits import HeadCircuit, HeadRef
from core_model.head_roles import HeadRole
from core_model.position_circuits import PositionCircuit
from visualizer.widgets.causal.effect_tables import effect_colour, role_line, signed

from .table_fit import fit_width, make_side_table

SHORT_KINDS = {"encoder_self": "enc self", "decoder_self": "dec self", "cross": "cross"}
LONG_KINDS = {"encoder_self": "encoder self-attention", "decoder_self": "decoder self-attention", "cross": "cross"}
COLUMNS = ("Kind", "Head", "Copying", "By pos.", "Role (Heads tab)")
ROLE_COLUMN = 4
WEAK_FIT = 0.4  # below this a role's fit says little: most maps are partly broad
SORT_KEY = Qt.ItemDataRole.UserRole + 1
LENS_TIP = (
    "An encoder head: read through the output layer as a lens. The model never does that (the decoder reads the "
    "encoder only through cross-attention), so this score says what the head would write, not what the model uses"
)
POSITION_TIP = (
    "How much of this head's choice among keys moves with the key's position rather than its symbol, on the direct "
    "path: position spread / (position spread + symbol spread). Near 100 % the head picks keys by where they sit "
    "(read its QK by position), near 0 % by which symbol they are (read its QK by token)"
)
COPYING_TIP = (
    "Copying score: sum of the OV table's eigenvalues / sum of their sizes (Elhage et al. 2021), of the table shown: "
    "with 'Centre OV columns' ticked, of its symbols once each output's constant push is taken out. +1 (green): "
    "attending to a token raises that token's logit, the head copies; −1 (red): it lowers it, the head suppresses; "
    "near 0: neither. A few rows with large logits can dominate it: read the table's bold cells too"
)


def head_label(ref: HeadRef) -> str:
    """A head as the app writes it: "enc self L1 H2" (1-based)."""
    return f"{SHORT_KINDS[ref.kind]} L{ref.layer + 1} H{ref.head + 1}"


class _Item(QTableWidgetItem):
    """A cell that sorts by its SORT_KEY (a number or a tuple) when it has one, else by its text."""

    def __lt__(self, other: QTableWidgetItem) -> bool:
        mine, theirs = self.data(SORT_KEY), other.data(SORT_KEY)
        if mine is None or theirs is None:
            return super().__lt__(other)
        return bool(mine < theirs)


def _item(text: str, tip: str = "", key: object = None) -> QTableWidgetItem:
    item = _Item(text)
    item.setTextAlignment(Qt.AlignmentFlag.AlignCenter)
    item.setToolTip(tip)
    if key is not None:
        item.setData(SORT_KEY, key)
    return item


def role_text(role: HeadRole | None) -> tuple[str, str]:
    """The role column's text and tooltip: "unclear" when the best fit is below WEAK_FIT."""
    if role is None:
        return "not scored", "The Heads tab has not scored this model's heads yet"
    line = role_line(role)
    if role.role == "other":
        return line, "Focused, but on keys none of the Heads tab's patterns names (content, or another offset)"
    if role.score < WEAK_FIT:
        return "unclear", f"No clear role: the best fit is {line}, below {WEAK_FIT}"
    return line, "The Heads tab's role: where this head looks on the task's inputs"


class HeadList(QTableWidget):
    """Every head, in the model's order: kind, layer, head, copying score (coloured) and the Heads tab's role."""

    head_selected = Signal(object)  # HeadRef | None: draw this head's circuits
    head_chosen = Signal(str, int, int)  # kind, layer, head (0-based): show it in the Playground

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(0, len(COLUMNS), parent)
        self.refs: list[HeadRef] = []
        self.heads: tuple[HeadCircuit, ...] = ()
        self.centred = True  # the copying column scores the centred OV table (the view's checkbox)
        self._roles: dict[tuple[str, int, int], HeadRole] = {}
        self.setHorizontalHeaderLabels(list(COLUMNS))  # which makes every header item
        for column, tip in ((2, COPYING_TIP), (3, POSITION_TIP)):
            self._header(column).setToolTip(tip)
        self._header(ROLE_COLUMN).setToolTip("The role the Heads tab scored: where the head looks on the task")
        make_side_table(self, "Select a head to see its circuits; double-click to see it in the Playground")
        self.horizontalHeader().setSortIndicator(0, Qt.SortOrder.AscendingOrder)  # the model's order until clicked
        self.itemSelectionChanged.connect(lambda: self.head_selected.emit(self.selected()))
        self.cellDoubleClicked.connect(lambda row, _col: self._choose(row))

    def _header(self, column: int) -> QTableWidgetItem:
        item = self.horizontalHeaderItem(column)
        assert item is not None  # setHorizontalHeaderLabels made one per column
        return item

    def set_heads(self, heads: Sequence[HeadCircuit], positions: Sequence[PositionCircuit] = ()) -> None:
        """One row per head (empty: no result); the head selected stays selected, else `opening_head`'s is."""
        previous = self.selected()
        self.blockSignals(True)  # one head_selected at the end, not one per row rebuilt
        self.setSortingEnabled(False)  # rows are filled in the model's order, then sorted as the header says
        self.clearSelection()
        self.refs, self.heads = [h.ref for h in heads], tuple(heads)
        self.clearContents()
        self.setRowCount(len(heads))
        for row, circuit in enumerate(heads):
            ref = circuit.ref
            order = (ref.kind != "encoder_self", ref.kind == "cross", ref.layer, ref.head)  # the model's order
            kind = _item(SHORT_KINDS[ref.kind], LONG_KINDS[ref.kind], order)
            kind.setData(Qt.ItemDataRole.UserRole, row)  # the row's head, wherever sorting moves it
            self.setItem(row, 0, kind)
            self.setItem(
                row, 1, _item(f"L{ref.layer + 1} H{ref.head + 1}", f"layer {ref.layer + 1}, head {ref.head + 1}", order)
            )
            self.setItem(row, 2, _copying_item(circuit, self.centred))
            if row < len(positions):
                self.setItem(row, 3, _position_item(positions[row]))
        self._fill_roles()
        self.setSortingEnabled(True)
        self.blockSignals(False)
        if heads:
            self.select(previous if previous in self.refs else opening_head(heads, self.centred))
        else:
            self.head_selected.emit(None)

    def set_centred(self, centred: bool) -> None:
        """Score the centred OV table (True) or the raw one; the selection stays."""
        self.centred = centred
        sorting = self.isSortingEnabled()
        self.setSortingEnabled(False)
        for row in range(self.rowCount()):
            index = self._index_at(row)  # the head's place in self.heads: no search per row over thousands of heads
            if index is not None:
                circuit = self.heads[index]
                self.setItem(row, 2, _copying_item(circuit, centred))
        self.setSortingEnabled(sorting)

    def set_roles(self, roles: Sequence[HeadRole] | None) -> None:
        """The Heads tab's roles of the model shown (None: not scored yet)."""
        self._roles = {(r.kind, r.layer, r.head): r for r in roles or ()}
        self._fill_roles()

    def _fill_roles(self) -> None:
        sorting = self.isSortingEnabled()
        self.setSortingEnabled(False)  # filling a sorted column would move rows under the loop
        for row in range(self.rowCount()):
            ref = self.ref_at(row)
            if ref is None:
                continue
            role = self._roles.get((ref.kind, ref.layer, ref.head))
            text, tip = role_text(role)
            item = _item(text, tip, (-1.0 if role is None else role.score))
            if role is not None and role.score < WEAK_FIT:
                item.setForeground(QBrush(QColor("#6e6e6e")))
            self.setItem(row, ROLE_COLUMN, item)
        self.setSortingEnabled(sorting)
        fit_width(self, stretch=len(COLUMNS) - 1)

    def ref_at(self, row: int) -> HeadRef | None:
        """The head shown in `row` (rows move when sorted)."""
        index = self._index_at(row)
        return self.refs[index] if index is not None else None

    def _index_at(self, row: int) -> int | None:
        item = self.item(row, 0)
        index = item.data(Qt.ItemDataRole.UserRole) if item is not None else None
        return index if isinstance(index, int) and index < len(self.refs) else None

    def selected(self) -> HeadRef | None:
        rows = self.selectionModel().selectedRows()
        return self.ref_at(rows[0].row()) if rows else None

    def select(self, ref: HeadRef) -> None:
        """Select a head's row and scroll to it."""
        for row in range(self.rowCount()):
            if self.ref_at(row) == ref:
                self.selectRow(row)
                self.scrollTo(self.model().index(row, 0))
                return

    def choose_selected(self) -> None:
        """Ask to see the selected head in the Playground."""
        ref = self.selected()
        if ref is not None:
            self.head_chosen.emit(ref.kind, ref.layer, ref.head)

    def _choose(self, row: int) -> None:
        ref = self.ref_at(row)
        if ref is not None:
            self.head_chosen.emit(ref.kind, ref.layer, ref.head)


def copying(circuit: HeadCircuit, centred: bool) -> float:
    """The copying score the list shows: of the centred OV table's symbols, or Elhage et al.'s of the raw table."""
    return circuit.centred_copying_score if centred else circuit.copying_score


def opening_head(heads: Sequence[HeadCircuit], centred: bool = True) -> HeadRef:
    """The head a new result opens on: of the last cross-attention layer (where the decoder reads the source, and so
    where copy, reverse and sort pick their answer), the clearest copier: most symbol rows won on the diagonal, then
    the largest |copying score|."""
    cross = [h for h in heads if h.ref.kind == "cross"]
    last = max((h.ref.layer for h in cross), default=0)
    pool = [h for h in cross if h.ref.layer == last] or list(heads)

    def clarity(h: HeadCircuit) -> tuple[int, float]:
        score = copying(h, centred)
        wins = h.centred_diagonal_wins if centred else h.diagonal_wins
        return wins, abs(score) if score == score else -1.0

    return max(pool, key=clarity).ref


def _copying_item(circuit: HeadCircuit, centred: bool) -> QTableWidgetItem:
    """The copying score, coloured by sign; an encoder head's in italics and paler (a lens reading). The tooltip
    adds the rows its own symbol wins, the figure the OV table confirms."""
    ref, score = circuit.ref, copying(circuit, centred)
    won = circuit.centred_diagonal_wins if centred else circuit.diagonal_wins
    wins = f"its own symbol wins {won} of {circuit.symbol_rows} OV rows"
    lens = ref.kind == "encoder_self"
    tip = f"{head_label(ref)}: copying score {score:+.4f}, {wins}. {COPYING_TIP}" + (f". {LENS_TIP}" if lens else "")
    key = abs(score) if score == score else -1.0
    item = _item(signed(score), tip, key)
    item.setBackground(QBrush(effect_colour(score * (0.5 if lens else 1.0))))
    item.setForeground(QBrush(QColor(0, 0, 0)))
    if lens:
        font = item.font()
        font.setItalic(True)
        item.setFont(font)
    return item


def share_text(share: float) -> str:
    """A position share as the list writes it: "86 %" ("n/a" for a head whose scores never move)."""
    return "n/a" if share != share else f"{100 * share:.0f} %"


def _position_item(circuit: PositionCircuit) -> QTableWidgetItem:
    share = circuit.position_share
    tip = (
        f"{head_label(circuit.ref)}: position spread {circuit.position_spread:.4g}, symbol spread "
        f"{circuit.token_spread:.4g}, so {share_text(share)} by position. {POSITION_TIP}"
    )
    return _item(share_text(share), tip, share if share == share else -1.0)
