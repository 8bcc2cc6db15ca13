"""Spin boxes, drop-down lists and sliders that a mouse wheel never changes, focused or not: the wheel scrolls the
page (arrow keys still move a focused slider).

By Qt's default a wheel turned to scroll a form changes whichever spin box, combo box or slider passes under the
pointer, focused or not. One event filter per page, installed on its controls when the page is built, costs nothing
for the other widgets; an application-wide filter would run Python for every event of every widget.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtWidgets import QAbstractSpinBox, QComboBox, QSlider, QWidget

GUARDED = "wheel_guarded"  # dynamic property set on each guarded control: a page walked twice installs once


class WheelGuard(QObject):
    """Refuses wheel events for the controls it filters and lets them travel on to the parents (a scroll area)."""

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # Qt's name
        if event.type() == QEvent.Type.Wheel:
            event.ignore()  # handled here, not accepted: QApplication offers it to the parent widgets next
            return True
        return False


def guard_wheel(root: QWidget) -> None:
    """Make every spin box, combo box and slider under `root` (root included) deaf to the wheel and never focused by
    it. Scroll bars keep the wheel: scrolling is what it is for."""
    kinds = (QAbstractSpinBox, QComboBox, QSlider)
    controls = [w for w in (root, *root.findChildren(QWidget)) if isinstance(w, kinds)]
    guard: WheelGuard | None = None
    for control in controls:
        if control.property(GUARDED):
            continue
        if guard is None:
            guard = WheelGuard(root)
        control.installEventFilter(guard)
        control.setProperty(GUARDED, True)
        if control.focusPolicy() == Qt.FocusPolicy.WheelFocus:
            control.setFocusPolicy(Qt.FocusPolicy.StrongFocus)  # the wheel alone never focuses it
