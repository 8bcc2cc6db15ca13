"""The Circuits tab's composition table: the links between heads furthest above what random heads give, only links
above 95 % of random heads' scores.

Render only. Each row: the head that writes, the head that reads, how (Q, K or V), the score and the score as a
multiple of the random baseline; selecting a row asks to show the reading head.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QTableWidget, QTableWidgetItem, QWidget

from core_model.circuits import HeadRef
from core_model.head_composition import CompositionScore
from visualizer.state.circuits import CircuitsFrame

from .head_list import head_label
from .table_fit import fit_width, make_side_table

SHOWN = 20  # the strongest links listed: what the column holds at 1280 x 800
COLUMNS = ("From", "To", "Type", "Score", "× baseline")
TYPE_WORDS = {"Q": "query", "K": "key", "V": "value"}


def times(ratio: float) -> str:
    """A score as a multiple of its baseline, as the table writes it: "3.2×"."""
    return f"{ratio:.1f}×"


class CompositionTable(QTableWidget):
    """The strongest links by score / baseline, largest first."""

    target_selected = Signal(object)  # HeadRef: the head a selected link feeds

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(0, len(COLUMNS), parent)
        self.links: tuple[CompositionScore, ...] = ()
        self.setHorizontalHeaderLabels(list(COLUMNS))
        make_side_table(self, "Select a link to see the head it feeds")
        self.itemSelectionChanged.connect(self._on_selection)

    def set_frame(self, frame: CircuitsFrame | None, only: HeadRef | None = None) -> None:
        """The frame's strongest links, or `only` that head's (none: empty); a selected link stays selected."""
        previous = self.selected()
        self.links = () if frame is None else frame.strongest(SHOWN, only)
        self.blockSignals(True)
        self.clearContents()
        self.setRowCount(len(self.links))
        for row, link in enumerate(self.links):
            ratio = frame.ratio(link) if frame is not None else 0.0
            base = frame.baseline.scores[link.type] if frame is not None else 0.0
            p95 = frame.baseline.p95[link.type] if frame is not None else 0.0
            tip = (
                f"{head_label(link.source)} writes into the {TYPE_WORDS[link.type]} of {head_label(link.target)}: "
                f"{link.type}-composition {link.score:.4f}, {ratio:.2f} × random heads' mean {base:.4f} (95 % of "
                f"random heads score below {p95:.4f})"
            )
            texts = (head_label(link.source), head_label(link.target), link.type, f"{link.score:.3f}", times(ratio))
            for column, text in enumerate(texts):
                item = QTableWidgetItem(text)
                item.setTextAlignment(Qt.AlignmentFlag.AlignCenter)
                item.setToolTip(tip)
                self.setItem(row, column, item)
            if link == previous:
                self.selectRow(row)
        self.blockSignals(False)
        fit_width(self, stretch=1)

    def selected(self) -> CompositionScore | None:
        rows = self.selectionModel().selectedRows()
        return self.links[rows[0].row()] if rows and rows[0].row() < len(self.links) else None

    def _on_selection(self) -> None:
        link = self.selected()
        if link is not None:
            self.target_selected.emit(link.target)
