"""The Trainer tab's keyboard shortcuts, owned by whichever widget holds the tab.

The window builds the tab only when it is first opened (page.py), yet F1 lists every shortcut the window has from
the start: so the page owns them and builds the tab when one is pressed (the focus is on the page by then anyway).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import QWidget

# tab.py imports this module; tests/project/test_architecture.py counts TYPE_CHECKING imports as a cycle
TrainerTab = Any
KEYS: tuple[tuple[tuple[str, ...], Callable[[TrainerTab], None], str], ...] = (
    (("Ctrl+Return", "Ctrl+Enter"), lambda tab: tab.continue_training(), "Continue training (Trainer tab)"),
    (("Ctrl+P",), lambda tab: tab.pause_or_resume(), "Pause or resume training (Trainer tab)"),
    (("Esc", "Ctrl+."), lambda tab: tab.state.stop(), "Stop training (Trainer tab)"),
)


def install_shortcuts(owner: QWidget, tab: Callable[[], TrainerTab]) -> list[QShortcut]:
    """Shortcuts that fire while the focus is inside `owner`, each acting on `tab()`."""
    shortcuts = []
    for keys, act, what in KEYS:
        for key in keys:
            shortcut = QShortcut(QKeySequence(key), owner)
            shortcut.setContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
            shortcut.setWhatsThis(what)  # what F1 lists for this key
            shortcut.activated.connect(lambda act=act: act(tab()))
            shortcuts.append(shortcut)
    return shortcuts
