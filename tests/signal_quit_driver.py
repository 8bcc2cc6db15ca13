"""Run the real app as `attention-playground` does, click Train, and send this process a signal once it trains.

test_quit_signals.py runs this in a subprocess (a signal sent to pytest itself would end the test run). It wraps
`visualizer.app.launch` only to get hold of the window it builds; `run_app` and everything it does stay the real ones.

Usage: python signal_quit_driver.py SIGNAL_NAME MIN_STEP [STOP_TIMEOUT_MS]
STOP_TIMEOUT_MS replaces how long the quit waits for training to stop (the app's recovery.stop_timeout_ms).
Prints one JSON line once the event loop has ended: the exit code, the model's last step before and after training
(the shipped model comes with its own steps), when (time.time()) the signal was sent and when the event loop ended.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time

from PySide6.QtCore import Qt, QTimer
from PySide6.QtTest import QTest

import visualizer.app as app_module


def train_then_signal(root, signum: int, min_step: int, facts: dict, stop_timeout_ms: int | None) -> None:
    """What a user does (Trainer tab, Train), then what a logout or `kill` does once training has gone far enough."""
    if stop_timeout_ms is not None:
        root.recovery.stop_timeout_ms = stop_timeout_ms
    root.window.tabs.setCurrentIndex(2)
    tab = root.trainer_tab
    tab.form.steps_spin.setValue(100_000)
    start = facts["start"] = int(root.hub.history[-1]["step"]) if root.hub.history else 0
    QTest.mouseClick(tab.train_button, Qt.MouseButton.LeftButton)

    def poll() -> None:
        progress = root.training.progress
        if progress is not None and progress.step >= start + min_step:
            facts["signalled_at"] = time.time()
            os.kill(os.getpid(), signum)
        else:
            QTimer.singleShot(20, poll)

    poll()


def main() -> int:
    signum, min_step = int(getattr(signal, sys.argv[1])), int(sys.argv[2])
    stop_timeout_ms = int(sys.argv[3]) if len(sys.argv) > 3 else None
    roots, facts = [], {"code": None, "start": None, "step": None, "signalled_at": None, "loop_ended_at": None}
    real_launch = app_module.launch

    def launch(argv):
        app, root, probe = real_launch(argv)
        root.ready.connect(lambda: train_then_signal(root, signum, min_step, facts, stop_timeout_ms))
        roots.append(root)
        return app, root, probe

    app_module.launch = launch
    code = facts["code"] = app_module.run_app([])
    facts["loop_ended_at"] = time.time()
    facts["step"] = int(roots[0].hub.history[-1]["step"])
    sys.stdout.write(json.dumps(facts) + "\n")
    return code


if __name__ == "__main__":
    sys.exit(main())
