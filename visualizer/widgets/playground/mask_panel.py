"""Mask controls (padding, causal, sliding window) and small mask previews (the view toggle sits above the grids).

Render only: the panel edits a `MaskSpec` (True = may attend, see core_model/masks.py) and emits it; the session
applies it and sends back the boolean masks of the current input for the previews.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import numpy as np
from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QGridLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from core_model.masks import PAINTED_FIELDS, MaskSpec
from visualizer.state.playground import WINDOW_RANGE

from .mask_preview import PREVIEW_KINDS, MaskPreview

log = logging.getLogger(__name__)

DEFAULT_WINDOW = 3
PAINTED_NAMES = {"encoder_self": "encoder self", "decoder_self": "decoder self", "cross": "cross"}
# field -> (checkbox text with mnemonic, one-sentence tooltip). Mnemonics avoid the window's Alt+E/D/R/P/T/F/M/V/H/S.
FLAG_BOXES = {
    "encoder_padding": ("E&ncoder padding", "Encoder queries ignore <pad> keys: padding never takes attention."),
    "decoder_causal": (
        "Decoder &causal",
        "Query i may only see keys j <= i: the decoder cannot peek at future tokens.",
    ),
    "decoder_padding": ("Decoder paddin&g", "Decoder self-attention ignores <pad> target keys."),
    "cross_padding": ("Cross padd&ing", "Decoder queries ignore the source's <pad> keys in cross-attention."),
}
WINDOW_BOXES = {
    "encoder_window": ("Enc&oder self", "Encoder query i sees only keys j with |i - j| < width: a local band."),
    "decoder_window": (
        "Decoder se&lf",
        "Decoder query i sees only keys j with |i - j| < width; with causal, exactly the last width tokens.",
    ),
}


class MaskPanel(QWidget):
    """Checkboxes for each mask, a sliding-window width and previews of the masks."""

    spec_changed = Signal(object)  # a new MaskSpec, once per user change
    reset_requested = Signal()  # Reset masks was pressed (spec_changed carries the default spec right after)

    def __init__(self, spec: MaskSpec | None = None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._spec = spec if spec is not None else MaskSpec()
        self._updating = False  # set while the widgets follow a programmatic change: no signals then
        self.flag_boxes = {field: self._checkbox(*FLAG_BOXES[field]) for field in FLAG_BOXES}
        self.window_boxes = {field: self._checkbox(*WINDOW_BOXES[field]) for field in WINDOW_BOXES}
        self.window_spin = QSpinBox()
        self.window_spin.setRange(*WINDOW_RANGE)
        self.window_spin.setValue(DEFAULT_WINDOW)
        self.window_spin.setToolTip("Sliding window width: key j stays visible from query i when |i - j| < width.")
        self.preview_widget = MaskPreview()
        self.reset_button = QPushButton("Reset mas&ks")
        self.reset_button.setToolTip(
            "Back to the default masks (padding and causal on, no window) and clear every painted cell (Alt+K)."
        )
        self.painted_label = QLabel()
        self.painted_label.setToolTip(
            "Cells hidden by hand in a large map view (Paint mask), per attention kind; "
            "they show in red in the previews below."
        )
        self._build_layout()
        self._connect()
        self.set_spec(self._spec)

    def _checkbox(self, text: str, tip: str) -> QCheckBox:
        box = QCheckBox(text)
        box.setToolTip(tip)
        return box

    def _build_layout(self) -> None:
        masks = QGroupBox("Masks")
        masks_layout = QVBoxLayout(masks)
        for box in self.flag_boxes.values():
            masks_layout.addWidget(box)
        window = QGroupBox("Sliding window")
        window.setToolTip("Limit self-attention to nearby positions (Longformer / Mistral style local attention).")
        window_layout = QVBoxLayout(window)
        for box in self.window_boxes.values():
            window_layout.addWidget(box)
        width_row = QHBoxLayout()
        width_label = QLabel("&Width:")
        width_label.setBuddy(self.window_spin)
        width_row.addWidget(width_label)
        width_row.addWidget(self.window_spin, 1)
        window_layout.addLayout(width_row)
        controls = QGridLayout()  # two groups side by side: fits a narrow column
        controls.addWidget(masks, 0, 0)
        controls.addWidget(window, 0, 1)
        painted_row = QHBoxLayout()
        painted_row.addWidget(self.painted_label, 1)
        painted_row.addWidget(self.reset_button)
        controls.addLayout(painted_row, 1, 0, 1, 2)
        controls.setColumnStretch(
            2, 1
        )  # spare width goes to an empty column: a checkbox is clickable where it is drawn
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(controls)
        layout.addWidget(self.preview_widget, 1)

    def _connect(self) -> None:
        for field, box in self.flag_boxes.items():
            box.toggled.connect(lambda checked, f=field: self._user_changed(**{f: checked}))
        for field, box in self.window_boxes.items():
            box.toggled.connect(lambda checked, f=field: self._on_window_toggled(f, checked))
        self.window_spin.valueChanged.connect(self._on_width_changed)
        self.reset_button.clicked.connect(self._on_reset)

    def _on_reset(self) -> None:
        self.reset_requested.emit()
        if self._spec != MaskSpec():
            self.set_spec(MaskSpec())
            self.spec_changed.emit(self._spec)

    def set_spec(self, spec: MaskSpec) -> None:
        """Show `spec` without emitting. With two different window widths the spin box shows the encoder's."""
        self._spec = spec
        self._updating = True
        try:
            for field, box in self.flag_boxes.items():
                box.setChecked(bool(getattr(spec, field)))
            widths = [getattr(spec, field) for field in WINDOW_BOXES if getattr(spec, field) is not None]
            for field, box in self.window_boxes.items():
                box.setChecked(getattr(spec, field) is not None)
            if widths:
                self.window_spin.setValue(int(widths[0]))
            self._sync_spin_enabled()
        finally:
            self._updating = False
        counts = {kind: len(spec.painted(kind)) for kind in PAINTED_FIELDS}
        total = sum(counts.values())
        self.painted_label.setText(
            "Painted: none"
            if not total
            else "Painted: " + ", ".join(f"{n} {PAINTED_NAMES[kind]}" for kind, n in counts.items() if n)
        )
        self.preview_widget.set_painted({kind: spec.painted(kind) for kind in PAINTED_FIELDS})

    def spec(self) -> MaskSpec:
        """The mask spec the panel shows."""
        return self._spec

    def set_previews(self, previews: Mapping[str, np.ndarray]) -> None:
        """Show the (Tq, Tk) bool masks of the given kinds (others keep theirs)."""
        for kind, mask in previews.items():
            if kind not in PREVIEW_KINDS:
                raise ValueError(f"preview kind must be one of {PREVIEW_KINDS}, got {kind!r}")
            if np.ndim(mask) != 2:
                raise ValueError(f"preview {kind!r} must be a (Tq, Tk) matrix, got shape {np.shape(mask)}")
        self.preview_widget.set_masks(previews)

    def _on_window_toggled(self, field: str, checked: bool) -> None:
        self._sync_spin_enabled()
        self._user_changed(**{field: self.window_spin.value() if checked else None})

    def _on_width_changed(self, width: int) -> None:
        changes = {f: width for f, box in self.window_boxes.items() if box.isChecked()}
        if changes:
            self._user_changed(**changes)

    def _sync_spin_enabled(self) -> None:
        self.window_spin.setEnabled(any(box.isChecked() for box in self.window_boxes.values()))

    def _user_changed(self, **changes: bool | int | None) -> None:
        """Apply a user edit to the spec and emit it once, if it changed anything."""
        if self._updating:
            return
        fields: dict[str, Any] = changes  # field names chosen at run time: MaskSpec checks the values itself
        spec = replace(self._spec, **fields)
        if spec == self._spec:
            return
        self._spec = spec
        log.debug("mask spec changed: %s", spec)
        self.spec_changed.emit(spec)
