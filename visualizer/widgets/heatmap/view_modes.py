"""The "Show" choice above the grids: which view of attention the maps draw, with each view's formula one click away.

Render only: the bar emits `mode_changed(mode)`; the session computes the maps (core_model.attention_views).
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QToolButton, QWidget

from core_model.view_formulas import MODE_INFO, ModeInfo

__all__ = ["MODE_INFO", "ModeInfo", "ViewModeBar", "formula_html"]


def formula_html(mode: str) -> str:
    """The help text of one view: equation, meaning, colour scale, citation."""
    info = MODE_INFO[mode]
    return f"<b>{info.label}</b>: {info.equation}<br>{info.meaning} ({info.scale}).<br><i>{info.citation}</i>"


class ViewModeBar(QWidget):
    """A "Show" combo box and a "Formula" button that opens the current view's equation and citation."""

    mode_changed = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.combo = QComboBox()
        for mode, info in MODE_INFO.items():
            self.combo.addItem(info.label, mode)
            self.combo.setItemData(self.combo.count() - 1, info.citation, Qt.ItemDataRole.ToolTipRole)
        self.combo.setToolTip("What the heatmaps show (Ctrl+Shift+V cycles); the Formula button explains it")
        self.formula_button = QToolButton()
        self.formula_button.setText("ƒ Formula")
        self.formula_button.setCheckable(True)
        self.formula_button.setToolTip("Show the equation and the paper of the current view (F2)")
        self.formula_button.setShortcut("F2")
        self.formula_label = QLabel()
        self.formula_label.setWordWrap(True)
        self.formula_label.setTextFormat(Qt.TextFormat.RichText)
        self.formula_label.setStyleSheet("QLabel { background: #f4f4e8; border: 1px solid #c8c8b0; padding: 4px; }")
        self.formula_label.hide()
        row = QHBoxLayout(self)  # the owner places formula_label (full width, below its controls)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(QLabel("Show:"))
        row.addWidget(self.combo)
        row.addWidget(self.formula_button)
        self._show_formula()
        self.combo.currentIndexChanged.connect(self._on_index)
        self.formula_button.toggled.connect(self.formula_label.setVisible)

    def mode(self) -> str:
        return str(self.combo.currentData())

    def set_mode(self, mode: str) -> None:
        """Show `mode` as chosen without emitting (the session already uses it)."""
        if mode not in MODE_INFO:
            raise ValueError(f"mode must be one of {list(MODE_INFO)}, got {mode!r}")
        if mode == self.mode():  # every frame tells the bar its mode: nothing to redo on a keystroke
            return
        self.combo.blockSignals(True)
        self.combo.setCurrentIndex(list(MODE_INFO).index(mode))
        self.combo.blockSignals(False)
        self._show_formula()

    def cycle(self) -> None:
        """Next view (keyboard)."""
        self.combo.setCurrentIndex((self.combo.currentIndex() + 1) % self.combo.count())

    def _on_index(self, _index: int) -> None:
        self._show_formula()
        self.mode_changed.emit(self.mode())

    def _show_formula(self) -> None:
        self.formula_label.setText(formula_html(self.mode()))
        self.formula_button.setToolTip(f"{MODE_INFO[self.mode()].citation} — click for the equation (F2)")
