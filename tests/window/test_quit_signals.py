"""Ctrl+C, `kill` and a closed terminal while training: the app stops training, keeps it in a recovery file, quits
at once without a traceback, and the next launch offers the training back.

The app runs in a subprocess (tests/signal_quit_driver.py) with its own data and settings folders: a signal sent
to pytest would end the test run.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PySide6.QtCore import Qt
from qt_helpers import start_app, wait_frame

import visualizer.controllers.checkpoints as checkpoint_actions
from core_model.checkpoint import load_checkpoint
from visualizer.app import APP, ORG
from visualizer.controllers.recovery_files import META_KEY, recovery_folder
from visualizer.quit_signals import signals_quit_via

DRIVER = Path(__file__).resolve().parents[1] / "signal_quit_driver.py"
MIN_STEP = 30
RUN_LIMIT_S = 200  # start-up, MIN_STEP training steps and the quit, on a machine other work may load heavily
QUIT_WITHIN_S = 60  # from the signal to the event loop's end (training stopped, the file written, the window gone):
# generous for a loaded 2-core machine; that none of the quit's waits ran out is checked in the log (WAITED_OUT)
WAITED_OUT = ("did not stop within", "were still running")  # the warnings of a wait that ran out of time
BLOCKER = "a file where the recovery folder belongs"
SIGNALS = [name for name in ("SIGTERM", "SIGHUP", "SIGINT") if hasattr(signal, name)]


def run_and_signal(tmp_path: Path, name: str, stop_timeout_ms: int | None = None) -> tuple[int, str, dict, Path]:
    """The app in a subprocess, trained until MIN_STEP and sent `name`: its exit status, stderr, report (the
    driver's JSON line) and recovery folder. `stop_timeout_ms` replaces how long the quit waits for training."""
    env = {
        **os.environ,
        "QT_QPA_PLATFORM": "offscreen",
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
    }
    args = [sys.executable, str(DRIVER), name, str(MIN_STEP)]
    if stop_timeout_ms is not None:
        args.append(str(stop_timeout_ms))
    proc = subprocess.Popen(
        args,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parents[1],
    )
    try:
        out, err = proc.communicate(timeout=RUN_LIMIT_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        pytest.fail(f"the app was still running {RUN_LIMIT_S} s after it started; stderr ends:\n{err[-3000:]}")
    report = json.loads(out.strip().splitlines()[-1]) if out.strip() else {}
    return proc.returncode, err, report, tmp_path / "data" / ORG / APP / "recovery"


def assert_quit_at_once(code: int, err: str, report: dict, signum: int) -> None:
    """Ended by the signal (its exit status), without a traceback, and without waiting any wait out."""
    assert code == 128 + signum, err[-3000:]
    assert "Traceback" not in err and "KeyboardInterrupt" not in err and "QThread" not in err, err[-3000:]
    assert not [words for words in WAITED_OUT if words in err], err[-3000:]
    assert report["loop_ended_at"] - report["signalled_at"] < QUIT_WITHIN_S


@pytest.mark.timeout(RUN_LIMIT_S + 100)  # two launches of the whole app, one of them in a subprocess
@pytest.mark.parametrize("name", SIGNALS)
def test_a_quit_signal_while_training_keeps_the_training_and_the_next_launch_restores_it(
    qtbot, monkeypatch, tmp_path, name
):
    signum = int(getattr(signal, name))
    code, err, report, folder = run_and_signal(tmp_path / "first", name)
    assert_quit_at_once(code, err, report, signum)
    step = report["step"]
    assert step >= report["start"] + MIN_STEP  # the shipped model comes with steps of its own: these are new
    files = sorted(folder.iterdir())
    assert len(files) == 1 and files[0].suffix == ".pt"  # the app's lock went with it
    ckpt = load_checkpoint(files[0])
    assert ckpt.history[-1]["step"] == step == ckpt.extra[META_KEY]["step"]  # every step trained before the signal

    recovery_folder().mkdir(parents=True)  # this test's own app data folder: the next launch finds it there
    shutil.move(files[0], recovery_folder() / files[0].name)
    app = start_app(qtbot)
    banner = app.recovery.banner
    qtbot.waitUntil(banner.isVisible, timeout=60_000)
    assert f"was not saved (step {step}, task copy)" in banner.label.text()
    qtbot.mouseClick(banner.restore_button, Qt.MouseButton.LeftButton)
    wait_frame(qtbot, app.session)
    assert app.hub.dirty and app.window.windowTitle().endswith(" *")
    xs, _ys = app.trainer_tab.curves.curves["loss"].getData()
    assert xs[-1] == step and np.all(np.diff(xs) > 0)
    for key, value in ckpt.state_dict.items():
        assert app.hub.model.state_dict()[key].cpu().equal(value), key
    monkeypatch.setattr(checkpoint_actions, "_ask_save_discard_cancel", lambda parent, text: "discard")
    app.window.close()
    qtbot.waitUntil(lambda: not app.window.isVisible(), timeout=10_000)


@pytest.mark.timeout(RUN_LIMIT_S + 60)
def test_a_quit_signal_ends_the_app_even_when_the_recovery_file_cannot_be_written(tmp_path):
    blocked = tmp_path / "data" / ORG / APP / "recovery"
    blocked.parent.mkdir(parents=True)
    blocked.write_text(BLOCKER)  # the folder cannot be made: every write of the recovery file fails
    code, err, report, _folder = run_and_signal(tmp_path, "SIGTERM")
    assert_quit_at_once(code, err, report, int(signal.SIGTERM))
    assert "could not write the recovery file" in err and blocked.read_text() == BLOCKER  # said, and nothing broken


@pytest.mark.timeout(RUN_LIMIT_S + 60)
def test_training_that_outlasts_the_quit_s_wait_is_kept_once_it_stops_as_the_window_closes(tmp_path):
    code, err, report, folder = run_and_signal(tmp_path, "SIGTERM", stop_timeout_ms=0)
    assert code == 128 + int(signal.SIGTERM) and "Traceback" not in err, err[-3000:]
    assert "training did not stop within 0 ms" in err  # the quit gave up waiting before the run's weights came back
    files = sorted(folder.iterdir())
    assert len(files) == 1
    ckpt = load_checkpoint(files[0])
    assert ckpt.history[-1]["step"] == report["step"] == ckpt.extra[META_KEY]["step"]  # the run's final weights
    assert report["step"] >= report["start"] + MIN_STEP


@pytest.mark.parametrize("name", SIGNALS)
def test_a_signal_reaches_the_event_loop_and_the_old_handlers_come_back(qtbot, name):
    """The watcher on its own, in this process: the signal is delivered while inside, nothing is changed after."""
    signum = int(getattr(signal, name))
    before, fd_before = signal.getsignal(signum), _wakeup_fd()
    received: list[int] = []
    with signals_quit_via(received.append):
        assert _wakeup_fd() != fd_before
        os.kill(os.getpid(), signum)  # harmless here: the watcher's handler only wakes the event loop
        qtbot.waitUntil(lambda: received == [signum], timeout=5000)
    assert signal.getsignal(signum) is before and _wakeup_fd() == fd_before


def _wakeup_fd() -> int:
    fd = signal.set_wakeup_fd(-1)
    signal.set_wakeup_fd(fd)
    return fd
