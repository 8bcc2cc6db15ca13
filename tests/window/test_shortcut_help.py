"""F1 in the real window: every key the window has, grouped by where it works, in a dialog that fits the screen;
and the stepper keys (Ctrl+Right / Ctrl+Left) work while the focus is in the Source field."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QKeySequence, QShortcut
from PySide6.QtWidgets import QAbstractButton, QApplication, QLabel, QTabWidget, QWidget
from qt_helpers import retype, start_app, wait_frame
from widget_readers import chip_states, shown_groups

from visualizer.widgets.heatmap.large_view import MapDialog

NATIVE = QKeySequence.SequenceFormat.NativeText
ANYWHERE = "Anywhere in the window"
LARGE_VIEW = "Large map view (click a map in the Playground)"


@pytest.fixture
def app(qtbot):
    app = start_app(qtbot, (1280, 800))
    qtbot.waitUntil(lambda: app.window.tabs.count() >= 5, timeout=30_000)
    with qtbot.waitActive(app.window):  # QT-NOTES: shortcuts fire only in the active window
        app.window.activateWindow()
    yield app
    app.hub.dirty = False
    app.training.shutdown(5000)
    app.length_lab.shutdown(5000)
    app.window.close()


def plain(text: str) -> str:
    return text.replace("&", "").rstrip(":").strip()


def shown_dialog(qtbot) -> QWidget:
    """The visible top-level window titled "Keyboard shortcuts" (what F1 opened)."""
    found: list[QWidget] = []

    def visible() -> bool:
        found[:] = [
            w for w in QApplication.topLevelWidgets() if w.isVisible() and w.windowTitle() == "Keyboard shortcuts"
        ]
        return len(found) == 1

    qtbot.waitUntil(visible, timeout=5000)
    return found[0]


def build_everything(qtbot, app) -> None:
    """Every part the window builds on demand: each tab, the compare page, every large map view, the beam tree."""
    tabs = app.window.tabs
    for i in range(tabs.count()):
        tabs.setCurrentIndex(i)
        QApplication.processEvents()
    tabs.setCurrentIndex(0)
    assert app.playground.compare_panel is not None
    for grid in app.playground.grids.values():
        grid.open_large_view(0, 0).show()
    app.beam_panel.show_large_tree()
    wait_frame(qtbot, app.session)


def installed_keys(window) -> list[tuple[str, str, str]]:
    """(heading it belongs under, key, who owns it) for every key bound anywhere in the window right now."""
    tabs = window.tabs

    def heading(widget: QWidget | None) -> str:
        if widget is not None and widget.window() is not window:
            assert isinstance(widget.window(), MapDialog), widget.window().windowTitle()  # the only other window
            return LARGE_VIEW
        for i in range(tabs.count()):
            if widget is tabs.widget(i) or (widget is not None and tabs.widget(i).isAncestorOf(widget)):
                return f"{plain(tabs.tabText(i))} tab"
        return ANYWHERE

    keys: list[tuple[str, str, str]] = []
    for action in window.findChildren(QAction):
        keys += [(ANYWHERE, s.toString(NATIVE), f"action {action.text()}") for s in action.shortcuts()]
    for shortcut in window.findChildren(QShortcut):
        keys += [(heading(shortcut.parent()), s.toString(NATIVE), shortcut.whatsThis()) for s in shortcut.keys()]
    for button in window.findChildren(QAbstractButton):
        if not button.shortcut().isEmpty():
            keys.append((heading(button), button.shortcut().toString(NATIVE), f"button {button.text()}"))
    for label in window.findChildren(QLabel):
        if label.buddy() is not None and "&" in label.text():
            keys.append((heading(label), QKeySequence.mnemonic(label.text()).toString(NATIVE), label.text()))
    for action in window.menuBar().actions():
        keys.append((ANYWHERE, QKeySequence.mnemonic(action.text()).toString(NATIVE), f"menu {action.text()}"))
    for tab_widget in window.findChildren(QTabWidget):
        for i in range(tab_widget.count()):
            if "&" in tab_widget.tabText(i):
                keys.append(
                    (
                        heading(tab_widget),
                        QKeySequence.mnemonic(tab_widget.tabText(i)).toString(NATIVE),
                        tab_widget.tabText(i),
                    )
                )
    return keys


def test_f1_lists_every_key_grouped_and_fits_a_1280x800_screen(qtbot, app):
    qtbot.keyClick(app.window, Qt.Key.Key_F1)
    dialog = shown_dialog(qtbot)
    groups = dict(shown_groups(dialog))
    headings = [h for h, _ in shown_groups(dialog)]
    assert headings[0] == ANYWHERE and headings[-1] == LARGE_VIEW
    tab_headings = [f"{plain(app.window.tabs.tabText(i))} tab" for i in range(app.window.tabs.count())]
    assert [h for h in headings if h.endswith(" tab")] == [h for h in tab_headings if h in groups]  # tab order
    assert {"Playground tab", "Trainer tab", "Length lab tab"} <= set(headings)
    assert ("P", "Paint mask") in groups[LARGE_VIEW] and ("Ctrl+Z", "Undo paint") in groups[LARGE_VIEW]
    assert ("Ctrl+Right, F10", "Step (decoder stepper): Decode one more token") in groups["Playground tab"]
    every_key = {key for rows in groups.values() for keys, _ in rows for key in keys.split(", ")}
    assert {"F10", "F5", "Ctrl+E", "Alt+E", "Alt+D", "Alt+R", "Ctrl+Alt+Z", "Ctrl+Return", "F1"} <= every_key

    room = dialog.screen().availableGeometry()
    assert room.contains(dialog.frameGeometry()), (dialog.frameGeometry(), room)
    bar = dialog.scroll_area.verticalScrollBar()
    assert bar.maximum() > 0  # the list is longer than the screen: it scrolls, the dialog does not grow
    last = dialog.scroll_area.widget().findChildren(QLabel, "shortcut_what")[-1]
    bar.setValue(bar.maximum())
    QApplication.processEvents()
    bottom = last.mapTo(dialog.scroll_area.viewport(), last.rect().bottomLeft()).y()
    assert 0 <= bottom <= dialog.scroll_area.viewport().height()

    build_everything(qtbot, app)  # listed at launch, before any of these existed
    listed = {(h, key) for h, rows in groups.items() for keys, _ in rows for key in keys.split(", ")}
    installed = installed_keys(app.window)
    assert len(installed) > 50
    missing = [(h, key, who) for h, key, who in installed if (h, key) not in listed]
    assert not missing


def test_ctrl_right_and_left_step_the_decoder_while_typing_in_source(qtbot, app):
    source, panel = app.playground.input_panel.source, app.playground.decoder_panel
    source.setFocus()
    qtbot.waitUntil(source.hasFocus)
    retype(qtbot, source, "31415")
    wait_frame(qtbot, app.session)
    source.setCursorPosition(2)
    assert panel.mode_label.text() == "decoder input: the expected output"

    qtbot.keyClick(source, Qt.Key.Key_Right, Qt.KeyboardModifier.ControlModifier)
    qtbot.waitUntil(lambda: [label for label, _ in chip_states(panel)] == ["3"], timeout=10_000)
    assert panel.mode_label.text() == "decoder input: decoded so far"
    qtbot.keyClick(source, Qt.Key.Key_Right, Qt.KeyboardModifier.ControlModifier)
    qtbot.waitUntil(lambda: [label for label, _ in chip_states(panel)] == ["3", "1"], timeout=10_000)
    qtbot.keyClick(source, Qt.Key.Key_Left, Qt.KeyboardModifier.ControlModifier)
    qtbot.waitUntil(lambda: [label for label, _ in chip_states(panel)] == ["3"], timeout=10_000)
    assert source.hasFocus() and source.text() == "31415" and source.cursorPosition() == 2  # no word jump


def test_f1_works_from_the_large_map_view(qtbot, app):
    """The large view's keys are listed; F1 pressed there (its own window) must open the list too."""
    large = app.playground.grids["cross"].open_large_view(0, 0)
    with qtbot.waitActive(large):
        large.show()
        large.activateWindow()
    qtbot.keyClick(large, Qt.Key.Key_F1)
    dialog = shown_dialog(qtbot)
    assert ("P", "Paint mask") in dict(shown_groups(dialog))[LARGE_VIEW]
    large.close()
