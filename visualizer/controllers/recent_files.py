"""File › Open recent: the checkpoints opened or saved last, newest first, kept in QSettings."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QMenu, QWidget

from visualizer.controllers.preferences import string_list

RECENT_KEY, MAX_RECENT = "recent_files", 8


class RecentFiles:
    """The Open recent menu; picking an entry calls `chosen(path)`, which asks before anything is replaced."""

    def __init__(self, parent: QWidget | None, chosen: Callable[[str], None]) -> None:
        self.menu = QMenu("Open &recent", parent)
        self._chosen = chosen
        self._rebuild()

    def files(self) -> list[str]:
        return string_list(QSettings(), RECENT_KEY)[:MAX_RECENT]

    def remember(self, path: Path) -> None:
        """`path` first (resolved, so two spellings of one file are one entry), the oldest beyond MAX_RECENT gone."""
        text = str(Path(path).resolve())
        QSettings().setValue(RECENT_KEY, ([text] + [f for f in self.files() if f != text])[:MAX_RECENT])
        self._rebuild()

    def _rebuild(self) -> None:
        self.menu.clear()
        files = self.files()
        for i, text in enumerate(files):
            action = self.menu.addAction(f"&{i + 1} {Path(text).name}")
            action.setToolTip(text)
            action.setData(text)
            action.triggered.connect(lambda _checked=False, p=text: self._chosen(p))
        if not files:
            self.menu.addAction("(no recent files)").setEnabled(False)
        else:
            self.menu.addSeparator()
            self.menu.addAction("Clear list", self._clear)

    def _clear(self) -> None:
        QSettings().setValue(RECENT_KEY, [])
        self._rebuild()
