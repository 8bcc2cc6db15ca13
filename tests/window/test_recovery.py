"""Unsaved training survives: recovery saves while training runs, the offer at the next launch, and the Playground's
task held while the Trainer trains the model on its own."""

from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np
import pytest
from PySide6.QtCore import QLockFile, Qt
from PySide6.QtWidgets import QFileDialog
from qt_helpers import start_app, wait_frame

import visualizer.controllers.checkpoints as checkpoint_actions
from core_model import ModelConfig, build_model
from core_model.checkpoint import load_checkpoint, save_checkpoint
from visualizer.controllers.recovery_files import META_KEY, PREFIX, recovery_folder
from visualizer.widgets.playground.input_panel import TASK_LOCKED_TIP

WAIT_MS = 60_000


@pytest.fixture
def app(qtbot):
    """The whole application; training a failing test left running is stopped, so its thread never outlives it."""
    root = start_app(qtbot)
    yield root
    if root.window.isVisible():
        root.training.shutdown(20_000)
        root.hub.dirty = False
        root.window.close()


def _train(qtbot, app) -> None:
    """Open the Trainer tab and click Train for a run far longer than any test waits."""
    app.window.tabs.setCurrentIndex(2)
    tab = app.trainer_tab
    qtbot.waitUntil(tab.isVisible, timeout=5000)
    tab.form.steps_spin.setValue(100_000)
    qtbot.mouseClick(tab.train_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: app.training.progress is not None, timeout=WAIT_MS)


def _stop(qtbot, app) -> None:
    qtbot.mouseClick(app.trainer_tab.stop_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: not app.training.busy, timeout=WAIT_MS)


def _saved_step(path: Path) -> int:
    return int(load_checkpoint(path).history[-1]["step"])


def _close(qtbot, app, monkeypatch, answer: str) -> None:
    monkeypatch.setattr(checkpoint_actions, "_ask_save_discard_cancel", lambda parent, text: answer)
    app.window.close()
    qtbot.waitUntil(lambda: not app.window.isVisible(), timeout=10_000)


def _left_behind(steps: int, saved_at: float, name: str = "20260101-120000-99999", record: object = None) -> Path:
    """A recovery file as a killed app leaves it: a copy model trained `steps` steps, its lock gone; `record`, when
    given, is written as its recovery record instead of the app's own."""
    folder = recovery_folder()
    model = build_model(ModelConfig(d_model=32, n_heads=4, d_ff=64), seed=3)
    history = [{"step": s, "loss": 3.0 / s, "token_accuracy": 0.1 * s, "lr": 1e-3} for s in range(1, steps + 1)]
    extra = {
        "task": {"task": "copy", "n_symbols": 10, "min_len": 1, "max_len": 10},
        META_KEY: record if record is not None else {"saved_at": saved_at, "step": steps, "origin": "trained here"},
    }
    return save_checkpoint(folder / f"{PREFIX}{name}.pt", model, history=history, extra=extra)


def test_running_training_is_kept_in_a_recovery_file_every_interval_and_deleted_once_saved(qtbot, app, tmp_path):
    app.recovery.interval_s = 0.3  # the app's is two minutes
    path = app.recovery.store.path
    assert path.parent == recovery_folder() and not path.exists()
    _train(qtbot, app)
    qtbot.waitUntil(path.is_file, timeout=WAIT_MS)
    first = _saved_step(path)
    assert app.training.state == "running" and first > 0  # written while it runs, from the worker's weights
    qtbot.waitUntil(lambda: _saved_step(path) > first, timeout=WAIT_MS)  # and again later, further on
    ckpt = load_checkpoint(path)
    assert ckpt.extra[META_KEY]["step"] == ckpt.history[-1]["step"]
    assert ckpt.task.task == "copy" and ckpt.extra["probe_snapshots"]["steps"]  # the movie File > Save writes
    _stop(qtbot, app)
    final = app.hub.history[-1]["step"]
    qtbot.waitUntil(lambda: _saved_step(path) == final, timeout=WAIT_MS)  # the stopped model, not yet saved
    with qtbot.waitSignal(app.checkpoints.saved, timeout=WAIT_MS):
        app.checkpoints.save_to(tmp_path / "mine.pt")
    assert not path.exists() and "unsaved" not in app.window.model_label.text()
    app.window.close()  # nothing unsaved: no question
    qtbot.waitUntil(lambda: not app.window.isVisible(), timeout=10_000)
    assert list(recovery_folder().iterdir()) == []  # no file, no lock


def test_saving_while_training_runs_keeps_the_recovery_copy_of_the_running_weights(qtbot, app, monkeypatch, tmp_path):
    app.recovery.interval_s = 0.3
    path = app.recovery.store.path
    _train(qtbot, app)
    qtbot.waitUntil(path.is_file, timeout=WAIT_MS)
    running = _saved_step(path)
    mine = tmp_path / "mine.pt"
    monkeypatch.setattr(checkpoint_actions, "_ask_save_path", lambda parent, suggested: str(mine))
    with qtbot.waitSignal(app.checkpoints.saved, timeout=WAIT_MS):
        app.checkpoints.save_action.trigger()  # File > Save: the model as it was before this run
    assert path.is_file()  # checked before any later write could bring a deleted file back
    assert app.training.state == "running" and _saved_step(mine) < running  # the save has none of this run
    assert _saved_step(path) >= running  # the only copy of the run's training
    _stop(qtbot, app)
    final = app.hub.history[-1]["step"]
    qtbot.waitUntil(lambda: _saved_step(path) == final, timeout=WAIT_MS)  # the stopped run is unsaved again
    assert app.window.windowTitle().endswith(" *")
    _close(qtbot, app, monkeypatch, "discard")


def test_a_recovery_folder_that_cannot_be_made_is_said_in_the_status_bar_and_the_app_goes_on(qtbot, app, monkeypatch):
    folder = recovery_folder()
    folder.parent.mkdir(parents=True, exist_ok=True)
    folder.write_text("a file where the recovery folder belongs")
    app.recovery.interval_s = 0.3
    _train(qtbot, app)
    bar = app.window.statusBar()
    qtbot.waitUntil(lambda: "Could not keep a recovery copy" in bar.currentMessage(), timeout=WAIT_MS)
    assert str(folder) in bar.currentMessage() and app.training.state == "running"
    _stop(qtbot, app)  # the stopped model is unsaved: the next write fails too, and is said again
    bar.clearMessage()
    qtbot.waitUntil(lambda: "Could not keep a recovery copy" in bar.currentMessage(), timeout=WAIT_MS)
    _close(qtbot, app, monkeypatch, "discard")  # deleting a file that cannot exist ends quietly too
    assert folder.read_text() == "a file where the recovery folder belongs"


def test_closing_and_discarding_deletes_the_recovery_file(qtbot, app, monkeypatch):
    app.recovery.interval_s = 0.3
    _train(qtbot, app)
    _stop(qtbot, app)
    path = app.recovery.store.path
    qtbot.waitUntil(path.is_file, timeout=WAIT_MS)
    _close(qtbot, app, monkeypatch, "discard")
    assert list(recovery_folder().iterdir()) == []


def test_the_next_launch_offers_unsaved_training_and_restores_it_with_its_curves(qtbot, monkeypatch):
    saved_at = time.time() - 3600
    left = _left_behind(7, saved_at)
    app = start_app(qtbot)
    banner = app.recovery.banner
    qtbot.waitUntil(banner.isVisible, timeout=WAIT_MS)
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(saved_at))
    assert banner.label.text().startswith(f"Training from {when} was not saved (step 7")
    assert app.window.tabs.isEnabled() and not app.hub.dirty  # an offer, not a question: nothing changed yet
    qtbot.mouseClick(banner.restore_button, Qt.MouseButton.LeftButton)
    assert not banner.isVisible()
    wait_frame(qtbot, app.session)
    assert app.hub.dirty and [row["step"] for row in app.hub.history] == list(range(1, 8))
    assert "unsaved training" in app.window.model_label.text() and app.window.windowTitle().endswith(" *")
    assert "Restored the training" in app.window.statusBar().currentMessage()
    xs, ys = app.trainer_tab.curves.curves["loss"].getData()
    np.testing.assert_array_equal(xs, np.arange(1, 8))
    np.testing.assert_allclose(ys, [3.0 / s for s in range(1, 8)])
    assert not left.exists() and app.recovery.store.path.is_file()  # this app keeps it now, until saved
    _close(qtbot, app, monkeypatch, "discard")
    assert list(recovery_folder().iterdir()) == []


def test_discarding_the_offer_deletes_the_file_and_an_unanswered_offer_stays(qtbot, monkeypatch):
    left = _left_behind(4, time.time())
    app = start_app(qtbot)
    qtbot.waitUntil(app.recovery.banner.isVisible, timeout=WAIT_MS)
    _close(qtbot, app, monkeypatch, "discard")
    assert left.exists()  # never lost silently: the next launch offers it again
    app = start_app(qtbot)
    banner = app.recovery.banner
    qtbot.waitUntil(banner.isVisible, timeout=WAIT_MS)
    qtbot.mouseClick(banner.discard_button, Qt.MouseButton.LeftButton)
    assert not banner.isVisible() and not left.exists() and not app.hub.dirty
    _close(qtbot, app, monkeypatch, "discard")


def test_a_file_another_running_app_holds_is_not_offered(qtbot, monkeypatch):
    held = _left_behind(4, time.time(), name="20260101-110000-11111")
    lock = QLockFile(str(held.with_suffix(".lock")))
    assert lock.tryLock(0)  # held by a live process (this one), as a second running app holds its file
    free = _left_behind(6, time.time() - 60)  # older, yet the only one offered
    app = start_app(qtbot)
    banner = app.recovery.banner
    qtbot.waitUntil(banner.isVisible, timeout=WAIT_MS)
    assert "(step 6," in banner.label.text()
    qtbot.mouseClick(banner.discard_button, Qt.MouseButton.LeftButton)
    assert not banner.isVisible() and not free.exists() and held.exists()  # nothing more to offer
    lock.unlock()
    _close(qtbot, app, monkeypatch, "discard")


def test_an_unreadable_recovery_file_is_shown_with_why_and_can_only_be_discarded(qtbot, monkeypatch):
    recovery_folder().mkdir(parents=True)
    broken = recovery_folder() / f"{PREFIX}20260101-120000-4242.pt"
    broken.write_bytes(b"cut short")
    app = start_app(qtbot)
    banner = app.recovery.banner
    qtbot.waitUntil(banner.isVisible, timeout=WAIT_MS)
    assert "cannot be restored" in banner.label.text() and "not a PyTorch checkpoint" in banner.label.text()
    assert not banner.restore_button.isVisible() and banner.discard_button.isVisible()
    qtbot.mouseClick(banner.discard_button, Qt.MouseButton.LeftButton)
    assert not banner.isVisible() and not broken.exists()
    _close(qtbot, app, monkeypatch, "discard")


def test_restore_waits_until_training_stops(qtbot, monkeypatch):
    _left_behind(5, time.time())
    app = start_app(qtbot)
    banner = app.recovery.banner
    qtbot.waitUntil(banner.isVisible, timeout=WAIT_MS)
    _train(qtbot, app)
    assert not banner.restore_button.isEnabled() and "Stop training" in banner.restore_button.toolTip()
    _stop(qtbot, app)
    assert banner.restore_button.isEnabled()
    asked: list[str] = []
    monkeypatch.setattr(
        checkpoint_actions, "_ask_save_discard_cancel", lambda parent, text: asked.append(text) or "discard"
    )
    qtbot.mouseClick(banner.restore_button, Qt.MouseButton.LeftButton)
    assert asked and "restoring" in asked[0]  # the training just done is unsaved: asked before it goes
    assert app.hub.history[-1]["step"] == 5
    _close(qtbot, app, monkeypatch, "discard")


def test_the_playground_task_cannot_change_while_training_and_says_why(qtbot, app, monkeypatch):
    panel = app.playground.input_panel
    combo = panel.task
    expected = panel.expected.text()
    _train(qtbot, app)
    app.window.tabs.setCurrentIndex(0)
    qtbot.waitUntil(combo.isVisible, timeout=5000)
    assert not combo.isEnabled() and combo.toolTip() == TASK_LOCKED_TIP
    combo.setFocus()
    qtbot.keyClick(combo, Qt.Key.Key_Down)
    qtbot.mouseClick(combo, Qt.MouseButton.LeftButton)
    wait_frame(qtbot, app.session)
    assert combo.currentData() == "copy" and app.session.task == "copy" and panel.expected.text() == expected
    _stop(qtbot, app)
    assert combo.isEnabled() and "Stop training" not in combo.toolTip() and combo.currentData() == "copy"
    _close(qtbot, app, monkeypatch, "discard")


def test_save_after_restore_asks_where_and_never_writes_where_the_recovery_file_points(qtbot, monkeypatch, tmp_path):
    """A recovery file is data anyone can write: the file it names as the model's is not a save target."""
    victim = tmp_path / "thesis.odt"
    victim.write_bytes(b"four years of work")
    _left_behind(5, time.time(), record={"saved_at": time.time(), "step": 5, "path": str(victim), "origin": "x"})
    app = start_app(qtbot)
    banner = app.recovery.banner
    qtbot.waitUntil(banner.isVisible, timeout=WAIT_MS)
    qtbot.mouseClick(banner.restore_button, Qt.MouseButton.LeftButton)
    chosen, asked = tmp_path / "restored.pt", []
    monkeypatch.setattr(
        QFileDialog, "getSaveFileName", staticmethod(lambda *args, **kwargs: asked.append(args) or (str(chosen), ""))
    )
    with qtbot.waitSignal(app.checkpoints.saved, timeout=WAIT_MS):
        qtbot.keyClick(app.window, Qt.Key.Key_S, Qt.KeyboardModifier.ControlModifier)  # File > Save
    assert victim.read_bytes() == b"four years of work"
    assert len(asked) == 1 and str(victim) not in asked[0]  # Save asked where, suggesting nothing the file said
    assert _saved_step(chosen) == 5 and not app.hub.dirty
    _close(qtbot, app, monkeypatch, "discard")


@pytest.mark.parametrize(
    ("record", "why"),
    [
        ({"saved_at": 1e300, "step": 3}, "its recovery record's time (1e+300) is not a date"),
        ({"saved_at": -1e15, "step": 3}, "its recovery record's time (-1000000000000000.0) is not a date"),
        (["saved_at", 1.0], "its recovery record is a list, not a mapping"),
    ],
)
def test_a_bad_recovery_record_is_named_and_skipped_and_an_older_good_file_is_still_offered(
    qtbot, monkeypatch, record, why
):
    saved_at = time.time() - 3600
    good = _left_behind(6, saved_at, name="20260101-100000-1111")
    bad = _left_behind(3, time.time(), name="20260101-120000-2222", record=record)
    os.utime(good, (saved_at, saved_at))  # the bad one is the newest: it used to hide the good one
    app = start_app(qtbot)
    banner = app.recovery.banner
    qtbot.waitUntil(banner.isVisible, timeout=WAIT_MS)
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(saved_at))
    text = banner.label.text()
    assert text.startswith(f"Training from {when} was not saved (step 6"), text
    assert f"Skipped {bad.name}, which cannot be restored: {why}." in text, text
    assert banner.restore_button.isVisible()
    qtbot.mouseClick(banner.discard_button, Qt.MouseButton.LeftButton)  # the good one answered: the bad one follows
    qtbot.waitUntil(lambda: "cannot be restored" in banner.label.text() and banner.isVisible(), timeout=WAIT_MS)
    assert why in banner.label.text() and not banner.restore_button.isVisible()
    qtbot.mouseClick(banner.discard_button, Qt.MouseButton.LeftButton)
    assert not banner.isVisible() and not good.exists() and not bad.exists()
    _close(qtbot, app, monkeypatch, "discard")
