"""Closing the window while background work runs (a beam search, a head analysis, the start-up load) ends quietly.

As the process exits, PySide deletes the jobs' QObjects while pool threads may still run; a job whose receiver is
gone drops its result and stops, printing nothing ("Signal source has been deleted", tracebacks). Only a real exit
shows this, so the app is launched in a child process with its own settings and data folders, driven to the busy
state, closed, and its console read.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import threading

import pytest
import shiboken6
import torch
from PySide6.QtCore import QThreadPool

from core_model import ModelConfig, build_model
from core_model.tasks import TaskSpec
from visualizer.state.heads import analyse_copy
from visualizer.workers.tasks import TaskSlot

DEADLINE_S = 100
CHILD = """
import logging
import sys
from pathlib import Path
from PySide6.QtCore import QSettings, QStandardPaths, QTimer, Qt
from PySide6.QtTest import QTest
QSettings.setPath(QSettings.Format.NativeFormat, QSettings.Scope.UserScope, sys.argv[1])
scenario = sys.argv[2]
from visualizer.app import make_application

logging.basicConfig(level=logging.INFO)  # as the app does: warnings reach the console
app = make_application()
print("DATA", QStandardPaths.writableLocation(QStandardPaths.StandardLocation.AppDataLocation), flush=True)
from visualizer.composition import Application

root = Application(checkpoint=Path(sys.argv[1]) / "none.pt")  # untrained: a beam search runs to the length limit
root.window.show()
root.start_loading()
closed = []

def close(what):
    if closed:
        return
    closed.append(what)
    print("CLOSING", what, flush=True)
    if root.hub is not None:
        root.hub.dirty = False
    root.window.close()  # the last window: the event loop ends and the process exits

def start():
    if root.session.last_frame is None or not root.session.idle:
        QTimer.singleShot(50, start)
        return
    if scenario == "beam":
        root.beam_panel.width_spin.setValue(16)
        root.beam.progressed.connect(lambda pos, limit: pos >= 2 and close(f"{pos}/{limit} {root.beam.running}"))
        QTest.mouseClick(root.beam_panel.run_button, Qt.MouseButton.LeftButton)
    else:
        root.heads.progress_changed.connect(lambda done, total: done >= 1 and close(f"{done}/{total} "
                                                                                  f"{root.heads.running}"))
        next(a for a in root.window.view_menu.actions() if "Analyse heads" in a.text()).trigger()

if scenario == "loading":
    QTimer.singleShot(0, lambda: close(f"loaded={root.hub is not None}"))
else:
    root.ready.connect(start)
print("EXIT", app.exec(), flush=True)
"""
NOISE = ("Signal source has been deleted", "Traceback", "Error calling Python override", "job failed")


@pytest.mark.parametrize(
    ("scenario", "closing"),
    [
        ("beam", " True"),  # a width-16 search of the untrained model: 254 steps, closed at step 2
        ("heads", " True"),  # Analyse heads, closed after the first head
        ("loading", "loaded=False"),  # closed before the model has loaded
    ],
)
def test_closing_while_a_job_runs_prints_nothing(tmp_path, scenario, closing):
    env = {
        **os.environ,
        "QT_QPA_PLATFORM": "offscreen",
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
    }  # recovery files and settings of this test, not the user's
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(tmp_path), scenario],
        capture_output=True,
        text=True,
        timeout=DEADLINE_S,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"DATA {tmp_path / 'data'}" in done.stdout, done.stdout  # the data folder (recovery files) is the test's
    closing_lines = [line for line in done.stdout.splitlines() if line.startswith("CLOSING")]
    assert len(closing_lines) == 1 and closing_lines[0].endswith(closing), done.stdout  # closed mid-job
    assert "EXIT 0" in done.stdout
    assert not [word for word in NOISE if word in done.stderr], done.stderr[-3000:]


def _deleted(qobject) -> None:
    """What exit does to a slot's QObject while its pool thread still runs."""
    shiboken6.delete(qobject)
    assert not shiboken6.isValid(qobject)


def _after_deletion(slot_pool: QThreadPool, fn, *inputs) -> TaskSlot:
    """Submit fn to a slot, delete the slot, and only then let fn start: as if exit came while the task was queued."""
    gate = threading.Event()

    def gated(state, *args):
        gate.wait(30)
        return fn(state, *args)

    slot = TaskSlot("The job", pool=slot_pool)
    slot.submit(gated, *inputs)
    _deleted(slot)
    gate.set()
    assert slot_pool.waitForDone(30_000)
    return slot


def test_a_beam_job_whose_receiver_is_gone_stops_without_a_traceback(qtbot, caplog):
    steps = []

    def search(state):
        for pos in range(100):
            state.step(pos)
            steps.append(pos)

    with caplog.at_level(logging.DEBUG):
        _after_deletion(QThreadPool(), search)  # nothing raised, nothing above debug logged
    assert steps == []
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


def test_a_background_job_whose_receiver_is_gone_ends_without_a_traceback(qtbot, caplog):
    with caplog.at_level(logging.DEBUG):
        _after_deletion(QThreadPool(), lambda _state: 42)
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


def _heads_inputs(ablated: list[int]) -> tuple:
    """An analysis of a model with 6 heads (2 per attention kind) that counts, in `ablated`, the heads it switches off:
    one forward pass with head gates per head (the hook travels with the task's deep copy of the model)."""
    model = build_model(ModelConfig(d_model=16, n_heads=2, d_ff=32, n_encoder_layers=1, n_decoder_layers=1), seed=0)

    def count(_module, _args, kwargs):
        if kwargs.get("head_gates") is not None:
            ablated.append(1)

    model.register_forward_pre_hook(count, with_kwargs=True)
    return model, TaskSpec("copy", n_symbols=5, min_len=3, max_len=5), 4, 0, torch.device("cpu"), False


def test_a_head_analysis_whose_receiver_is_gone_stops_at_its_first_report(qtbot, caplog):
    ablated: list[int] = []
    with caplog.at_level(logging.DEBUG):
        _after_deletion(QThreadPool(), analyse_copy, *_heads_inputs(ablated))  # no head is ablated
    assert ablated == []
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    whole: list[int] = []
    slot = TaskSlot("The head analysis", pool=QThreadPool())
    with qtbot.waitSignal(
        slot.finished, timeout=60_000
    ):  # with its receiver alive the same analysis ablates every head
        slot.submit(analyse_copy, *_heads_inputs(whole))
    assert len(whole) == 6
