"""F1 never builds a tab: the keys of the tabs built on first show (Positional encoding, Trainer, Length lab, Causal,
Circuits) are declared with their pages (LazyTab.keys), and the list F1 shows before those tabs exist is the one it
shows once they are built (so the declaration names exactly the keys the real tabs have)."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication
from test_shortcut_help import app, shown_dialog  # noqa: F401 - app: the fixture (active window, every tab)
from widget_readers import shown_groups

from visualizer.widgets.lazy_tab import LazyTab


def press_f1(qtbot, app) -> list[tuple[str, list[tuple[str, str]]]]:
    """What the shortcut list shows after F1 in the main window (closed again afterwards)."""
    with qtbot.waitActive(app.window):
        app.window.activateWindow()
    qtbot.keyClick(app.window, Qt.Key.Key_F1)
    dialog = shown_dialog(qtbot)
    groups = shown_groups(dialog)
    dialog.close()
    QApplication.processEvents()
    return groups


def test_f1_lists_the_lazy_tabs_keys_without_building_them(qtbot, app):
    pages = app.window.findChildren(LazyTab)
    names = {f"{app.window.tabs.tabText(app.window.tabs.indexOf(p)).replace('&', '')} tab": p for p in pages}
    assert set(names) == {"Positional encoding tab", "Trainer tab", "Length lab tab", "Causal tab", "Circuits tab"}
    assert not any(p.built for p in pages)
    before = press_f1(qtbot, app)
    assert [name for name, page in names.items() if page.built] == []  # the GUI thread built nothing
    listed = dict(before)
    assert ("Alt+E", "Evaluate") in listed["Length lab tab"]

    for page in pages:  # the real tabs, built as their first show builds them
        page.content()
    assert press_f1(qtbot, app) == before  # the declaration lists every key the built tabs really have, no more
