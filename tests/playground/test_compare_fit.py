"""The A/B compare page on a 1280x800 screen: turning Compare on keeps the window inside the screen, leaves the
Playground's splitter where it was, and shows every compare control whole."""

from __future__ import annotations

from PySide6.QtCore import QPoint, QRect, Qt
from PySide6.QtWidgets import QApplication, QComboBox, QLabel, QPushButton
from qt_helpers import wait_frame
from test_layout_fit import app  # noqa: F401 - the fixture: the real window at 1280x800

SOURCE_40 = "0123456789" * 4
SCREEN = (1280 - 16, 800 - 48)  # a 1280x800 screen less a window frame and a panel


def settle(qtbot, app) -> None:
    wait_frame(qtbot, app.session)
    QApplication.processEvents()


def cut_controls(panel) -> list[str]:
    """Compare controls (drop-downs, buttons, their labels) not wholly inside the page, or squeezed below the width
    their text needs."""
    page = QRect(QPoint(0, 0), panel.size())
    cut = []
    for control in panel.findChildren(QComboBox) + panel.findChildren(QPushButton) + panel.findChildren(QLabel):
        if control.parent() is not panel or not control.isVisible():
            continue
        rect = QRect(control.mapTo(panel, QPoint(0, 0)), control.size())
        squeezed = not isinstance(control, QLabel) and control.width() < control.sizeHint().width()
        if not page.contains(rect) or squeezed:
            cut.append(f"{type(control).__name__} {getattr(control, 'text', lambda: '')() or control.toolTip()}")
    return cut


def assert_fits(app, sizes: list[int], when: str) -> None:
    view, hint = app.playground, app.window.minimumSizeHint()
    assert hint.width() <= SCREEN[0] and hint.height() <= SCREEN[1], (when, hint)
    around = app.window.width() - view.splitter.width()  # the window's margins around the Playground's splitter
    assert view.splitter.minimumSizeHint().width() + around <= SCREEN[0], (when, view.splitter.minimumSizeHint())
    assert view.splitter.sizes() == sizes, when  # the column keeps its width: nothing jumps
    assert cut_controls(view.compare_panel) == [], when


def test_compare_on_fits_1280x800_and_never_moves_the_splitter(qtbot, app):
    view = app.playground
    field = view.input_panel.source
    field.setText(SOURCE_40)
    field.textEdited.emit(SOURCE_40)
    settle(qtbot, app)
    sizes = view.splitter.sizes()
    qtbot.mouseClick(view.compare_button, Qt.MouseButton.LeftButton)
    settle(qtbot, app)
    panel = view.compare_panel
    assert view.grid_stack.currentWidget() is panel
    assert_fits(app, sizes, "compare on")
    panel.source.setCurrentIndex(panel.source.findData("ablated"))
    with qtbot.waitSignal(panel.compare.frame_changed, timeout=20000):
        qtbot.mouseClick(panel.load_button, Qt.MouseButton.LeftButton)
    settle(qtbot, app)
    assert panel.b_label.text().startswith("B: ")
    assert_fits(app, sizes, "B loaded, side by side")
    with qtbot.waitSignal(panel.compare.frame_changed, timeout=20000):  # each side on its own scale: a note says so
        view.view_modes.combo.setCurrentIndex(view.view_modes.combo.findData("scores"))
    settle(qtbot, app)
    assert panel.scale_note.isVisible()
    assert_fits(app, sizes, "scores, side by side")
    panel.view.setCurrentIndex(panel.view.findData("difference"))
    settle(qtbot, app)
    assert_fits(app, sizes, "difference")
    qtbot.mouseClick(view.compare_button, Qt.MouseButton.LeftButton)
    settle(qtbot, app)
    assert view.grid_stack.currentWidget() is view.grid_tabs and view.splitter.sizes() == sizes
