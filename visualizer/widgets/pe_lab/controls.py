"""The PE tab's form controls: spin boxes that commit on Enter, text fields, and the red error line under each."""

from __future__ import annotations

from dataclasses import dataclass, field

from PySide6.QtWidgets import QCheckBox, QComboBox, QLabel, QLineEdit, QSpinBox, QVBoxLayout, QWidget

from core_model.pe_analysis import MAX_D_MODEL, MAX_DIMS, MAX_POSITIONS, ROPE_PAIRS_SHOWN, ROPE_VECTORS


def spin_box(lo: int, hi: int, step: int, tip: str, name: str) -> QSpinBox:
    """A spin box that commits on Enter / focus-out / arrows, not on every keystroke (large tables are slow)."""
    spin = QSpinBox()
    spin.setRange(lo, hi)
    spin.setSingleStep(step)
    spin.setKeyboardTracking(False)
    spin.setToolTip(tip)
    spin.setObjectName(name)
    return spin


def line_edit(tip: str, name: str) -> QLineEdit:
    """A text field that the tab applies on Enter or focus-out."""
    edit = QLineEdit()
    edit.setToolTip(tip)
    edit.setObjectName(name)
    return edit


def with_error(field: str, control: QWidget) -> tuple[QWidget, QLabel]:
    """The control with its (usually empty) red error message right below it."""
    error = QLabel()
    error.setObjectName(f"pe_error_{field}")
    error.setWordWrap(True)
    error.setStyleSheet("color: #c0392b;")
    error.setVisible(False)
    cell = QWidget()
    box = QVBoxLayout(cell)
    box.setContentsMargins(0, 0, 0, 0)
    box.addWidget(control)
    box.addWidget(error)
    return cell, error


@dataclass
class PEControls:
    """Every control of the lab's form, each with a tooltip and an object name (tests and users find them)."""

    d_model: QSpinBox = field(
        default_factory=lambda: spin_box(
            2, MAX_D_MODEL, 2, "Width of the sinusoidal table (even). Enter to apply.", "pe_d_model"
        )
    )
    n_positions: QSpinBox = field(
        default_factory=lambda: spin_box(
            1, MAX_POSITIONS, 1, "How many positions (0..n-1) every plot shows.", "pe_n_positions"
        )
    )
    base: QLineEdit = field(
        default_factory=lambda: line_edit(
            "The base of the wavelengths, 10000 in the paper (also RoPE's). Any number > 1.", "pe_base"
        )
    )
    dims: QLineEdit = field(
        default_factory=lambda: line_edit(
            f"Dimensions drawn as waveforms: e.g. 4,5,6,7 or 4-7 (at most {MAX_DIMS}). Enter to apply.", "pe_dims"
        )
    )
    head_dim: QSpinBox = field(
        default_factory=lambda: spin_box(
            2, MAX_D_MODEL, 2, "RoPE head size (even): it rotates head_dim / 2 pairs.", "pe_head_dim"
        )
    )
    pairs: QLineEdit = field(
        default_factory=lambda: line_edit(
            f"RoPE pairs drawn as angle curves: e.g. 0,2,5 or 0-7 (at most {MAX_DIMS}); empty: {ROPE_PAIRS_SHOWN} "
            "spread from the fastest to the slowest. Enter to apply.",
            "pe_pairs",
        )
    )
    reference: QSpinBox = field(
        default_factory=lambda: spin_box(
            0, MAX_POSITIONS, 1, "Reference position m for the similarity curves (solid).", "pe_reference"
        )
    )
    second_reference: QSpinBox = field(
        default_factory=lambda: spin_box(
            0, MAX_POSITIONS, 1, "A second reference position (dashed): the curves coincide.", "pe_second_reference"
        )
    )
    rope_vectors: QComboBox = field(default_factory=QComboBox)
    wrap: QCheckBox = field(default_factory=lambda: QCheckBox("Wrap angles to (−π, π]"))

    def __post_init__(self) -> None:
        self.pairs.setPlaceholderText(f"auto: {ROPE_PAIRS_SHOWN} spread")
        self.rope_vectors.addItems(list(ROPE_VECTORS))
        self.rope_vectors.setObjectName("pe_rope_vectors")
        self.rope_vectors.setToolTip(
            "The q and k rotated by RoPE: the same random vector (offset 0 is the maximum), a "
            "random pair (seed 0; starts anywhere), or all ones."
        )
        self.wrap.setObjectName("pe_wrap")
        self.wrap.setChecked(True)  # the wrapped sawtooths compare pairs better than lines of very different slope
        self.wrap.setToolTip("Show the RoPE angles as the rotation actually seen (wrapped), not the running total.")

    def rows(self) -> list[tuple[str, str, QWidget]]:
        """(state field, label, control) for the form, top to bottom."""
        return [
            ("d_model", "d_model", self.d_model),
            ("n_positions", "Positions", self.n_positions),
            ("base", "Base", self.base),
            ("dims", "Dimensions", self.dims),
            ("head_dim", "RoPE head dim", self.head_dim),
            ("pairs", "RoPE pairs", self.pairs),
            ("reference", "Reference m", self.reference),
            ("second_reference", "Second m", self.second_reference),
            ("rope_vectors", "RoPE q, k", self.rope_vectors),
        ]
