"""The lines above a grid: its title (kind, mode, what the average covers), the legend and the hovered cell.

All three are plain text: tokens such as `<bos>` are shown as typed, never read as HTML tags.
"""
from __future__ import annotations

import numpy as np
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget

from visualizer.state.snapshots import KindMaps
from visualizer.widgets.heatmap.atlas import average_caption
from visualizer.widgets.heatmap.mask_backdrop import MASK_LEGEND


def plain_label(text: str = "") -> QLabel:
    label = QLabel(text)
    label.setTextFormat(Qt.TextFormat.PlainText)
    return label


def caption_lines(title: str, maps: KindMaps | None, legend: str = "") -> list[str]:
    """Title, input (query) tokens, key tokens, model shape and legend: the lines every exported image carries."""
    if maps is None:
        return [title]
    lines = [title, f"input (queries): {' '.join(maps.query_labels)}", f"keys: {' '.join(maps.key_labels)}",
             f"model: {maps.n_layers} layers x {maps.n_heads} heads"]
    return lines + [legend] if legend else lines


class GridHeader(QWidget):
    """Title, legend (masked cells, abbreviated tokens) and the hover line naming the cell under the mouse."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.title_label = plain_label()
        self._title_key: tuple = ()  # (kind, mode, ablated shape and bytes) the title was written for
        self.legend_label = plain_label(MASK_LEGEND)
        self.legend_label.setStyleSheet("color: gray")
        self.hover_label = plain_label(" ")
        self.hover_label.setToolTip("The cell under the mouse: its query and key tokens and its value")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)
        for label in (self.title_label, self.legend_label, self.hover_label):
            layout.addWidget(label)

    def set_title(self, kind: str, mode: str, ablated: np.ndarray) -> None:
        """"Encoder self-attention — weights · avg = mean of all heads"; (L, H) ablated heads narrow the average."""
        key = (kind, mode, ablated.shape, ablated.tobytes())
        if key == self._title_key:  # the same title: every keystroke asks, for each of the three grids
            return
        self._title_key = key
        on = ~ablated if ablated.size else None
        self.title_label.setText(f"{kind} — {mode} · {average_caption(on)}")

    def set_legend(self, abbreviations: str) -> None:
        """The mask legend, plus the abbreviations the token labels use when they are shortened."""
        text = MASK_LEGEND if not abbreviations else f"{MASK_LEGEND} · {abbreviations}"
        if self.legend_label.text() != text:
            self.legend_label.setText(text)

    def caption(self, maps: KindMaps | None) -> list[str]:
        """The lines an exported image carries: title, input tokens, model shape, legend."""
        return caption_lines(self.title_label.text(), maps, self.legend_label.text())

    def set_hover(self, text: str) -> None:
        self.hover_label.setText(text or " ")

    def add_line(self, widget: QWidget) -> None:
        """One more line under the legend (the Heads tab's role-badge legend)."""
        self.layout().addWidget(widget)
