"""The selected head's map from the Playground's last run, beside its direct-path position table.

Render only: the maps are the session's snapshot of its last forward pass (already computed for the Playground, so
nothing runs here). Each row's bold cell is the key the run picks; core_model.run_agreement counts on how many query
positions the direct path picks the same key, the line the position caption leads with.
"""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QSplitter, QVBoxLayout, QWidget

from core_model.circuits import HeadRef
from core_model.run_agreement import PathAgreement, path_agreement
from visualizer.state.snapshots import MapsSnapshot

from .head_list import head_label
from .token_table import TokenTable

NO_RUN = "No run yet: the Playground's map of this head shows here once it has run a source."
WHAT = {"weights": "attention weight", "scores": "score before softmax"}


class RunMap(QWidget):
    """A caption over one head's map of the last run; `show_head` fills it and says how far the direct path agrees."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.caption = QLabel(NO_RUN)
        self.caption.setObjectName("run_map_caption")
        self.caption.setWordWrap(True)
        self.table = TokenTable()  # bold: the key the run picks
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.caption)
        layout.addWidget(self.table, 1)

    def clear(self) -> None:
        """No head shown (no circuits read yet, or a new model's still being read): no run's map either."""
        self.table.set_table(np.zeros((0, 0)), (), (), lambda *_: "")
        self.caption.setText(NO_RUN)

    def show_head(self, ref: HeadRef, maps: MapsSnapshot | None, direct: np.ndarray) -> PathAgreement | None:
        """The head's map in `maps` beside `direct` (n, n), the position table; None (and a note) without a run."""
        kind = maps.maps.get(ref.kind) if maps is not None else None
        if maps is None or kind is None or ref.layer >= kind.n_layers or ref.head >= kind.n_heads:
            self.clear()
            return None
        values = kind.values[ref.layer, ref.head]  # (Tq, Tk)
        what = WHAT.get(maps.mode, maps.mode)

        def tip(query: str, key: str, value: float) -> str:
            return f"{head_label(ref)} in the run: query {query!r} gives key {key!r} the {what} {value:+.4f}"

        rows = [f"{i}:{label}" for i, label in enumerate(kind.query_labels)]
        columns = [f"{j}:{label}" for j, label in enumerate(kind.key_labels)]
        self.table.set_table(values, rows, columns, tip, greyed=~kind.valid)
        self.caption.setText(
            f"<b>In the run</b> (the Playground's map of {head_label(ref)} on its source): row = query position, "
            f"column = key position, cell = {what}. Bold (● when numbers do not fit): the key the run picks."
        )
        return path_agreement(direct, values, kind.valid)


def column(*widgets: QWidget, stretch: tuple[int, ...] = ()) -> QWidget:
    """Widgets stacked in one column; `stretch` gives each its share of the height (0 by default)."""
    box = QWidget()
    layout = QVBoxLayout(box)
    layout.setContentsMargins(0, 0, 0, 0)
    for i, widget in enumerate(widgets):
        layout.addWidget(widget, stretch[i] if i < len(stretch) else 0)
    return box


def position_pair(caption: QLabel, positions: TokenTable, run: RunMap) -> QWidget:
    """The QK by position tab: its caption over the direct-path table and the run's map, side by side."""
    split = QSplitter(Qt.Orientation.Horizontal)
    split.setChildrenCollapsible(False)
    split.addWidget(positions)
    split.addWidget(run)
    return column(caption, split, stretch=(0, 1))
