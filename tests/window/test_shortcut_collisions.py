"""No two controls that are on screen together answer the same key: Qt treats such a key as ambiguous and
alternates between them (or does nothing), so the student's Alt+T sometimes focuses a field instead of the tab."""

from __future__ import annotations

from collections import defaultdict

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QKeySequence, QShortcut
from PySide6.QtWidgets import QAbstractButton, QApplication, QLabel, QTabWidget
from qt_helpers import wait_frame
from widget_readers import shown_groups

from visualizer.composition import Application

PORTABLE = QKeySequence.SequenceFormat.PortableText
LIVE_CONTEXTS = (Qt.ShortcutContext.WindowShortcut, Qt.ShortcutContext.ApplicationShortcut)


@pytest.fixture(scope="module")
def app(qapp):
    import tempfile

    from PySide6.QtCore import QCoreApplication, QSettings

    QCoreApplication.setOrganizationName("AttentionPlaygroundTests")
    QCoreApplication.setApplicationName("AttentionPlaygroundTests")
    QSettings.setDefaultFormat(QSettings.Format.IniFormat)
    QSettings.setPath(QSettings.Format.IniFormat, QSettings.Scope.UserScope, tempfile.mkdtemp())
    root = Application()
    root.window.resize(1400, 900)
    root.window.show()
    root.start_loading()
    yield root
    root.hub.dirty = False
    root.training.shutdown(5000)
    root.length_lab.shutdown(5000)
    root.window.close()


def _ready(qtbot, app) -> None:
    qtbot.waitUntil(lambda: app.hub is not None and app.window.tabs.count() >= 5, timeout=60_000)
    wait_frame(qtbot, app.session)


def live_keys(window) -> dict[str, list[str]]:
    """Every key sequence that fires right now, with who owns it (only controls on screen count, as in Qt)."""
    owners: dict[str, list[str]] = defaultdict(list)

    def add(seq: QKeySequence, who: str) -> None:
        if not seq.isEmpty():
            owners[seq.toString(PORTABLE)].append(who)

    for action in window.findChildren(QAction):
        if action.isEnabled():  # the window's menu actions answer wherever the focus is
            for seq in action.shortcuts():
                add(seq, f"action {action.text()!r}")
    for shortcut in window.findChildren(QShortcut):
        if shortcut.context() in LIVE_CONTEXTS and shortcut.parent().isVisible():
            for seq in shortcut.keys():
                add(seq, f"shortcut {shortcut.whatsThis()!r}")
    for button in window.findChildren(QAbstractButton):
        if button.isVisible():
            add(button.shortcut(), f"button {button.text()!r}")
    for label in window.findChildren(QLabel):
        if label.isVisible() and label.buddy() is not None:
            add(QKeySequence.mnemonic(label.text()), f"label {label.text()!r}")
    for action in window.menuBar().actions():
        add(QKeySequence.mnemonic(action.text()), f"menu {action.text()!r}")
    for tabs in window.findChildren(QTabWidget):
        if tabs.isVisible():
            for i in range(tabs.count()):
                add(QKeySequence.mnemonic(tabs.tabText(i)), f"tab {tabs.tabText(i)!r}")
    return owners


@pytest.mark.parametrize("page", range(5))
def test_no_two_visible_controls_share_a_key(qtbot, app, page):
    _ready(qtbot, app)
    app.window.tabs.setCurrentIndex(page)
    qtbot.wait(50)
    clashes = {keys: who for keys, who in live_keys(app.window).items() if len(who) > 1}
    assert clashes == {}, f"tab {app.window.tabs.tabText(page)!r}: {clashes}"


def test_alt_t_from_the_source_field_opens_the_trainer(qtbot, app):
    _ready(qtbot, app)
    window = app.window
    window.tabs.setCurrentIndex(0)
    with qtbot.waitActive(window):
        window.activateWindow()
    source = app.playground.input_panel.source
    source.setFocus()
    for _ in range(2):  # an ambiguous key alternates between its owners: twice in a row must both work
        window.tabs.setCurrentIndex(0)
        qtbot.keyClick(source, Qt.Key.Key_T, Qt.KeyboardModifier.AltModifier)
        assert window.tabs.tabText(window.tabs.currentIndex()).replace("&", "") == "Trainer"


def f1_groups(qtbot, app) -> dict[str, list[tuple[str, str]]]:
    """Press F1 and read the dialog: {heading: [(keys, what they do)]}; the dialog is closed again."""
    with qtbot.waitActive(app.window):
        app.window.activateWindow()
    qtbot.keyClick(app.window, Qt.Key.Key_F1)
    dialog = next(
        w for w in QApplication.topLevelWidgets() if w.isVisible() and w.windowTitle() == "Keyboard shortcuts"
    )
    groups = shown_groups(dialog)
    dialog.close()
    assert len({h for h, _ in groups}) == len(groups)  # one heading per place
    return dict(groups)


def test_f1_names_what_each_trainer_key_does(qtbot, app):
    _ready(qtbot, app)
    groups = f1_groups(qtbot, app)
    trainer = dict(groups["Trainer tab"])
    assert not any("(no description)" in what for rows in groups.values() for _, what in rows)
    assert trainer["Ctrl+P"] == "Pause or resume training" and trainer["Esc, Ctrl+."] == "Stop training"
    assert trainer["Ctrl+Return, Ctrl+Enter"] == "Continue training"
    assert ("Alt+Y", "Apply") in groups["Playground tab"]


def test_f1_says_the_large_view_keys_work_in_the_large_view(qtbot, app):
    _ready(qtbot, app)
    dialog = app.playground.grids["cross"].open_large_view(0, 0)
    dialog.show()
    qtbot.waitUntil(dialog.isVisible)
    groups = f1_groups(qtbot, app)
    dialog.close()
    assert groups["Large map view (click a map in the Playground)"] == [
        ("P", "Paint mask"),
        ("Ctrl+Shift+Z", "Redo paint"),
        ("Ctrl+Z", "Undo paint"),
    ]


@pytest.mark.parametrize("title", ["Heads", "Length lab"])
def test_every_control_of_the_new_tabs_has_a_tooltip(qtbot, app, title):
    from PySide6.QtWidgets import QAbstractSpinBox, QComboBox, QPushButton

    _ready(qtbot, app)
    tabs = app.window.tabs
    page = next(tabs.widget(i) for i in range(tabs.count()) if tabs.tabText(i).replace("&", "") == title)
    tabs.setCurrentWidget(page)
    bare = [
        f"{type(w).__name__} {getattr(w, 'text', lambda: '')()!r}"
        for cls in (QPushButton, QComboBox, QAbstractSpinBox)
        for w in page.findChildren(cls)
        if w.isVisible() and not w.toolTip()
    ]
    assert bare == []


def test_f1_lists_a_key_once_per_tab_it_acts_on_and_the_field_mnemonics(qtbot, app):
    _ready(qtbot, app)
    groups = f1_groups(qtbot, app)
    assert ("Alt+E", "Show the Encoder self-attention grid") in groups["Playground tab"]
    assert ("Alt+E", "Evaluate") in groups["Length lab tab"]  # the same key on another tab is listed there too
    assert ("Alt+S", "Source field") in groups["Playground tab"]
    assert ("Alt+A", "Task field") in groups["Playground tab"]
