"""A redraw split into parts, one per turn of the event loop, so a 4 Hz redraw of five plots never holds the GUI
thread for the length of all of them: timers, input and paints run between the parts."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable

from PySide6.QtCore import QObject, QTimer

Part = Callable[[], None]


class StagedRedraw(QObject):
    """Runs a redraw's parts in order. A redraw asked for while the one before is still going first runs that one's
    remaining parts: each part may be the only one that shows what it draws (the newest probe snapshots)."""

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._parts: deque[Part] = deque()
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(0)  # the next turn of the event loop, after the paints the last part asked for
        self._timer.timeout.connect(self._next)

    @property
    def pending(self) -> bool:
        """Some part of the latest redraw has not run yet."""
        return bool(self._parts)

    def run(self, parts: Iterable[Part], *, staged: bool) -> None:
        """Run `parts`: staged, the first now and the rest one per turn; else all of them now."""
        self.finish()
        self._parts = deque(parts)
        if staged:
            self._next()
        else:
            self.finish()

    def finish(self) -> None:
        """Run every part not run yet, now (a run that paused or ended shows its last state at once)."""
        self._timer.stop()
        while self._parts:
            self._parts.popleft()()

    def _next(self) -> None:
        """Run the next part; the one after it waits for the next turn (even when this one raised)."""
        try:
            if self._parts:
                self._parts.popleft()()
        finally:
            if self._parts:
                self._timer.start()
