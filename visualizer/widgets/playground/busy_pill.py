"""The "computing…" pill above the grids: shown while the newest forward pass runs long, so a reader knows the maps
below belong to the last finished pass, not yet to the text typed."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel

from visualizer.widgets.common.stable_label import fix_label_size

PILL_STYLE = 'QLabel { color: #6b4f00; border-radius: 3px; }QLabel[busy="true"] { background: #ffe8a3; }'


class BusyPill(QLabel):
    """A fixed-size label, so showing or hiding it never re-lays out the row it sits in."""

    def __init__(self) -> None:
        super().__init__()
        fix_label_size(self, "  computing…  ")
        self.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.setStyleSheet(PILL_STYLE)
        self.setToolTip("The model is still computing the maps for the newest input; keep typing")

    def set_busy(self, busy: bool) -> None:
        self.setText("computing…" if busy else "")
        self.setProperty("busy", busy)
        self.style().unpolish(self)  # the background follows the property only once the style is applied again
        self.style().polish(self)
