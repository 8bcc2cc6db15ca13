"""The PE tab's form controls: spin boxes that commit on Enter, text fields, and the red error line under each."""

from __future__ import annotations

from PySide6.QtWidgets import QLabel, QLineEdit, QSpinBox, QVBoxLayout, QWidget


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
