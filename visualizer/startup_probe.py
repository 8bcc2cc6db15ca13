"""Benchmark hook: with ATTENTION_PLAYGROUND_STARTUP_PROBE=<file>, record first paint and model-ready times, then quit.

Times are wall-clock seconds (time.time()) so a parent process can subtract its own launch time.
"""
from __future__ import annotations

import gc
import json
import os
import time
from pathlib import Path

from PySide6.QtCore import QEvent, QObject, QTimer, SignalInstance
from PySide6.QtWidgets import QApplication, QMainWindow

ENV = "ATTENTION_PLAYGROUND_STARTUP_PROBE"


class StartupProbe(QObject):
    """Watches the window's first paint and the end of model loading (`ready` fired)."""

    def __init__(self, window: QMainWindow, ready: SignalInstance, path: Path) -> None:
        super().__init__(window)
        self.window, self.path, self.times = window, path, {}
        self._ready_at: float | None = None
        window.installEventFilter(self)
        ready.connect(self._on_ready)
        self._poll = QTimer(self)
        self._poll.timeout.connect(self._check_ready)
        self._poll.start(5)

    def _on_ready(self) -> None:
        """Stamped here, not at the next poll: a poll queued behind the ready tabs' first paint (~55 ms) ran after
        it in about half the launches, before it in the rest, which blurred the figure by that much."""
        self._ready_at = time.time()
        self._check_ready()

    def eventFilter(self, obj, event) -> bool:  # Qt's name
        if event.type() == QEvent.Type.Paint and "first_paint" not in self.times:
            self.times["first_paint"] = time.time()
        return False

    def _check_ready(self) -> None:
        if "model_ready" in self.times:
            return
        if self._ready_at is not None and "first_paint" in self.times:  # ready with nothing painted yet: at the paint
            self.times["model_ready"] = max(self._ready_at, self.times["first_paint"])
            self.times["gc_frozen"] = gc.get_freeze_count()  # objects start-up moved out of the collector's reach
            self._poll.stop()
            self.path.write_text(json.dumps(self.times))
            QTimer.singleShot(0, QApplication.instance().quit)


def install_if_requested(window: QMainWindow, ready: SignalInstance) -> StartupProbe | None:
    target = os.environ.get(ENV)
    return StartupProbe(window, ready, Path(target)) if target else None
