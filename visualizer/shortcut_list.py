"""The Help > Keyboard shortcuts list, read from the window's live QActions, QShortcuts, buttons and mnemonics."""
from __future__ import annotations

from PySide6.QtGui import QAction, QKeySequence, QShortcut
from PySide6.QtWidgets import QAbstractButton, QLabel, QMainWindow, QTabWidget, QWidget

NATIVE = QKeySequence.SequenceFormat.NativeText


def _plain(text: str) -> str:
    return text.replace("&&", "\0").replace("&", "").replace("\0", "&").rstrip("…").strip()


def _where(window: QMainWindow, widget: QWidget | None) -> str:
    """The tab a widget lives in (or its own window's name), for shortcuts that carry no description of their own."""
    if widget is not None and widget.window() is not window:
        return widget.window().accessibleName() or "its own window"
    tabs = window.findChild(QTabWidget)
    for i in range(tabs.count() if tabs is not None else 0):
        page = tabs.widget(i)
        if widget is page or (widget is not None and page.isAncestorOf(widget)):
            return f"{_plain(tabs.tabText(i))} tab"
    return "window"


def shortcut_entries(window: QMainWindow) -> list[tuple[str, str]]:
    """(keys, what they do) for every shortcut the window really has, sorted by what they do."""
    entries: dict[tuple[str, str], None] = {}  # the same key may act on two tabs: list both, never drop one

    def add(seq: QKeySequence, name: str) -> None:
        keys = seq.toString(NATIVE)
        if keys:
            entries[(keys, name)] = None

    for action in window.findChildren(QAction):
        for seq in action.shortcuts():
            add(seq, _plain(action.text()))
    for shortcut in window.findChildren(QShortcut):
        for seq in shortcut.keys():
            add(seq, shortcut.whatsThis() or f"an action of the {_where(window, shortcut.parent())}")
    for button in window.findChildren(QAbstractButton):
        if not button.shortcut().isEmpty():
            text = _plain(button.text()).removesuffix(f"({button.shortcut().toString(NATIVE)})").strip()
            add(button.shortcut(), f"{text} ({_where(window, button)})")  # "Apply" alone: of what?
    for label in window.findChildren(QLabel):  # "&Source:" with a buddy: Alt+S moves the focus to the field
        if label.buddy() is not None:
            add(QKeySequence.mnemonic(label.text()), f"{_plain(label.text()).rstrip(':')} field "
                                                     f"({_where(window, label)})")
    for action in window.menuBar().actions():  # Alt+letter opens a menu
        add(QKeySequence.mnemonic(action.text()), f"{_plain(action.text())} menu")
    for tabs in window.findChildren(QTabWidget):
        for i in range(tabs.count()):
            add(QKeySequence.mnemonic(tabs.tabText(i)), f"{_plain(tabs.tabText(i))} tab")
    return sorted(entries, key=lambda kv: (kv[1].lower(), kv[0]))
