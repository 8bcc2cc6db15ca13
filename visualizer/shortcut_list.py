"""The Help > Keyboard shortcuts list, read from the window's live QActions, QShortcuts, buttons and mnemonics.

Grouped by where a key works: anywhere (menus, tabs), one group per tab in tab order, then windows of their own.
A tab built on first show (LazyTab) or a window made on first use (the large map view) has no widgets to read
before then, and building them here would freeze the window: a tab's keys are declared with its page
(`LazyTab.keys`), the large map view's here, and the tests tests/window/test_shortcut_lazy.py and
tests/window/test_shortcut_help.py build them and check that each declaration lists exactly the keys they really
have.
"""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import QObject
from PySide6.QtGui import QAction, QKeySequence, QShortcut
from PySide6.QtWidgets import QAbstractButton, QCheckBox, QGroupBox, QLabel, QMainWindow, QMenu, QTabWidget, QWidget

from visualizer.widgets.heatmap.map_keys import PAINT_KEY, REDO_KEY, UNDO_KEY
from visualizer.widgets.lazy_tab import LazyTab

NATIVE = QKeySequence.SequenceFormat.NativeText
ANYWHERE = "Anywhere in the window"
LARGE_VIEW = "large map view"  # MapDialog's accessible name
WINDOW_HEADINGS = {LARGE_VIEW: "Large map view (click a map in the Playground)"}
ON_DEMAND_KEYS = {LARGE_VIEW: ((PAINT_KEY, "Paint mask"), (UNDO_KEY, "Undo paint"), (REDO_KEY, "Redo paint"))}
ShortcutGroup = tuple[str, Sequence[tuple[str, str]]]  # heading, [(keys, what they do)]


def _plain(text: str) -> str:
    return text.replace("&&", "\0").replace("&", "").replace("\0", "&").rstrip("…").strip()


def _area(window: QMainWindow, widget: QWidget | None) -> str:
    """The tab a widget lives in, its own window's name, or ANYWHERE: the heading its keys are listed under."""
    if widget is not None and widget.window() is not window:
        return widget.window().accessibleName() or widget.window().windowTitle() or "Other windows"
    tabs = window.findChild(QTabWidget)
    if tabs is None:
        return ANYWHERE
    for i in range(tabs.count()):
        page = tabs.widget(i)
        assert page is not None  # every index below count() holds a page
        if widget is page or (widget is not None and page.isAncestorOf(widget)):
            return f"{_plain(tabs.tabText(i))} tab"
    return ANYWHERE


def _widget(owner: QObject | None) -> QWidget | None:
    """The owner when it is a widget (the one a key works in), else None."""
    return owner if isinstance(owner, QWidget) else None


def _in_group(widget: QWidget, what: str) -> str:
    """ "Sliding window › Encoder self": a control's name alone can read as something else (the Encoder self grid)."""
    box = widget.parentWidget()
    while box is not None and not isinstance(box, QGroupBox):
        box = box.parentWidget()
    return f"{_plain(box.title())} › {what}" if box is not None and box.title() else what


def _menu_path(action: QAction) -> str:
    """ "File › Export › Current attention grid as PNG": where the action sits in the menu bar."""
    path, item = [_plain(action.text())], action
    for _ in range(5):  # menus nest a level or two; the bound only guards against a menu holding itself
        menus = [o for o in item.associatedObjects() if isinstance(o, QMenu) and o.title()]  # not a bar's overflow
        if not menus:
            break
        path.insert(0, _plain(menus[0].title()))
        item = menus[0].menuAction()
    return " › ".join(path)


def _collect(window: QMainWindow) -> dict[tuple[str, str], list[str]]:
    """(area, what) -> its keys, for every key the window answers now or declares for a window made later."""
    found: dict[tuple[str, str], list[str]] = {}

    def add(area: str, seq: QKeySequence | str, what: str) -> None:
        keys = QKeySequence(seq).toString(NATIVE)
        if keys and keys not in found.setdefault((area, what), []):
            found[(area, what)].append(keys)

    for area, entries in ON_DEMAND_KEYS.items():
        for key, what in entries:
            add(area, key, what)
    for page in window.findChildren(LazyTab):
        if not page.built:  # its widgets do not exist yet: list what they will have
            for key, what in page.keys:
                add(_area(window, page), key, what)
    for action in window.findChildren(QAction):
        in_menu = any(isinstance(o, QMenu) and o.title() for o in action.associatedObjects())
        for seq in action.shortcuts():
            add(ANYWHERE if in_menu else _area(window, _widget(action.parent())), seq, _menu_path(action))
    for shortcut in window.findChildren(QShortcut):
        for seq in shortcut.keys():
            add(_area(window, _widget(shortcut.parent())), seq, shortcut.whatsThis() or "(no description)")
    for button in window.findChildren(QAbstractButton):
        if not button.shortcut().isEmpty():
            what = _plain(button.text()).removesuffix(f"({button.shortcut().toString(NATIVE)})").strip()
            what += " (on or off)" if isinstance(button, QCheckBox) else ""
            add(_area(window, button), button.shortcut(), _in_group(button, what))
    for label in window.findChildren(QLabel):  # "&Source:" with a buddy: Alt+S moves the focus to the field
        if label.buddy() is not None:
            what = _in_group(label, f"{_plain(label.text()).rstrip(':')} field")
            add(_area(window, label), QKeySequence.mnemonic(label.text()), what)
    for action in window.menuBar().actions():  # Alt+letter opens a menu
        add(ANYWHERE, QKeySequence.mnemonic(action.text()), f"{_plain(action.text())} menu")
    for tabs in window.findChildren(QTabWidget):
        for i in range(tabs.count()):
            add(_area(window, tabs), QKeySequence.mnemonic(tabs.tabText(i)), f"{_plain(tabs.tabText(i))} tab")
    return found


def _area_order(window: QMainWindow) -> list[str]:
    tabs = window.findChild(QTabWidget)
    names = [f"{_plain(tabs.tabText(i))} tab" for i in range(tabs.count())] if tabs is not None else []
    return [ANYWHERE, *names, *WINDOW_HEADINGS]


def shortcut_groups(window: QMainWindow) -> list[ShortcutGroup]:
    """Every shortcut the window really has, grouped by where it works; each action's keys on one line. Builds
    nothing: a tab not built yet is listed from its page's keys (building one blocks the GUI thread)."""
    order = _area_order(window)
    groups: dict[str, list[tuple[str, str]]] = {}
    for (area, what), keys in _collect(window).items():
        groups.setdefault(area, []).append((", ".join(keys), what.removesuffix(f" ({area})")))  # under its heading
    ranked = sorted(groups, key=lambda a: (order.index(a) if a in order else len(order), a))
    return [
        (
            WINDOW_HEADINGS.get(area, area[:1].upper() + area[1:]),
            sorted(groups[area], key=lambda kw: (kw[1].lower(), kw[0])),
        )
        for area in ranked
    ]
