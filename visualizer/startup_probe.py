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

from visualizer.workers.gc_policy import collecting

ENV = "ATTENTION_PLAYGROUND_STARTUP_PROBE"


class StartupProbe(QObject):
    """Watches the window's first paint and its first paint once model loading has ended (`ready` fired).

    Model-ready is stamped when that paint is done: the loaded tabs on screen (their maps follow from the first
    forward pass). A poll would land before that paint in some launches and after it in others, blurring the
    figure by the paint's length.
    """

    def __init__(self, window: QMainWindow, ready: SignalInstance, path: Path) -> None:
        super().__init__(window)
        self.window, self.path = window, path
        self.times: dict[str, float | int | bool] = {}
        self._stamping = False
        window.installEventFilter(self)
        ready.connect(self._on_ready)

    def _on_ready(self) -> None:
        self.times["ready_signal"] = time.time()
        self.window.update()  # a paint of the whole window, now with its tabs

    def eventFilter(self, obj, event) -> bool:  # Qt's name
        if event.type() == QEvent.Type.Paint:
            self.times.setdefault("first_paint", time.time())
            if "ready_signal" in self.times and not self._stamping:
                self._stamping = True
                QTimer.singleShot(0, self._stamp)  # runs once this paint (children included) is done
        return False

    def _stamp(self) -> None:
        self.times["model_ready"] = time.time()
        self.times["gc_frozen"] = gc.get_freeze_count()  # objects start-up moved out of the collector's reach
        self.times["gc_collecting"] = collecting()  # paused during start-up, back on once ready
        self.times["gc_collections"] = sum(generation["collections"] for generation in gc.get_stats())
        self.path.write_text(json.dumps(self.times))
        app = QApplication.instance()
        assert app is not None  # the probe watches a window, and windows live in a running application
        QTimer.singleShot(0, app.quit)


def install_if_requested(window: QMainWindow, ready: SignalInstance) -> StartupProbe | None:
    target = os.environ.get(ENV)
    return StartupProbe(window, ready, Path(target)) if target else None
