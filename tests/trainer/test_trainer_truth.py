"""The Trainer tab tells the truth: present-tense texts, from-scratch runs, dense probes, kept step axes, the picker.

Each test drives the real tab with clicks and keys and reads what a person sees: label texts, button geometry,
curve data and pens from the pyqtgraph items, the probe image.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QMessageBox
from qt_helpers import show_trainer_tab

from core_model.training_loop import Cadence
from visualizer.widgets.training.tab import TrainerTab

WAIT_MS = 60_000


@pytest.fixture
def tab(qtbot, hub, state) -> TrainerTab:
    return show_trainer_tab(qtbot, hub, state, (1400, 900))


def _click(qtbot, button) -> None:
    qtbot.mouseClick(button, Qt.MouseButton.LeftButton)


def _run(qtbot, tab, state, button, steps: int) -> None:
    tab.form.steps_spin.setValue(steps)
    _click(qtbot, button)
    qtbot.waitUntil(lambda: state.state in ("finished", "failed") and state.training_thread is None, timeout=WAIT_MS)
    assert state.state == "finished"


def test_texts_state_the_present_after_resume_and_stop(qtbot, tab, state):
    tab.form.steps_spin.setValue(100_000)
    _click(qtbot, tab.scratch_button)
    qtbot.waitUntil(lambda: state.progress is not None and state.progress.step >= 3, timeout=WAIT_MS)
    _click(qtbot, tab.pause_button)
    qtbot.waitUntil(lambda: state.state == "paused", timeout=WAIT_MS)
    assert tab.status_label.text().startswith("Paused at step")
    _click(qtbot, tab.pause_button)  # Resume
    assert tab.state_label.text() == "Running"
    assert "Paused" not in tab.status_label.text()  # old code: "Paused at step N" stayed while running
    paused_at = state.progress.step
    qtbot.waitUntil(lambda: state.progress.step > paused_at, timeout=WAIT_MS)
    qtbot.waitUntil(lambda: tab.eta_label.text() != "ETA –", timeout=WAIT_MS)  # the label follows at the UI's pace
    _click(qtbot, tab.stop_button)
    qtbot.waitUntil(lambda: state.state == "finished" and state.training_thread is None, timeout=WAIT_MS)
    assert tab.eta_label.text() == "ETA –" and tab.speed_label.text() == "– tokens/s"  # old code: an ETA after Stop
    assert tab.status_label.text().startswith("Stopped at step")
    assert tab.state_label.text() == "Stopped"  # not "Finished": the run did not reach its last step


def test_train_from_scratch_is_the_first_action_and_undoable(qtbot, tab, hub, state):
    assert tab.scratch_button.isDefault() and tab.scratch_button.isEnabled()
    assert tab.scratch_button.geometry().x() < tab.train_button.geometry().x()  # first in the row
    assert tab.scratch_button.text() == "Train from scratch" and tab.train_button.text() == "Continue training"
    assert "Train from scratch" in tab.status_label.text()
    before = {k: v.clone() for k, v in hub.model.state_dict().items()}
    hub.history = [{"step": s, "loss": 1.0, "token_accuracy": 0.5, "lr": 1e-3} for s in range(1, 101)]  # "trained"
    _run(qtbot, tab, state, tab.scratch_button, 12)
    assert [row["step"] for row in hub.history] == list(range(1, 13))  # a new model: its own steps from 1
    assert hub.origin.startswith("trained here")
    assert hub.restore_previous()  # Model > Undo
    assert all(torch.equal(before[k], v) for k, v in hub.model.state_dict().items())
    assert len(hub.history) == 100


def test_probes_are_dense_early_and_the_curves_cursor_follows_the_timeline(qtbot, tab, state):
    _run(qtbot, tab, state, tab.scratch_button, 60)
    steps = [s.step for s in state.snapshots]
    assert steps == list(Cadence.for_steps(60).probe_steps(60))
    assert len([s for s in steps if 30 <= s <= 60]) >= 8  # old code: 50 only
    cursor = tab.curves.cursors["loss"]
    assert cursor.isVisible() and cursor.value() == 60
    tab.probe.slider.setFocus()
    qtbot.keyClick(tab.probe.slider, Qt.Key.Key_Home)
    assert tab.probe.step_label.text() == "step 0" and cursor.value() == 0
    for _ in range(steps.index(35)):
        qtbot.keyClick(tab.probe.slider, Qt.Key.Key_Right)
    assert tab.probe.step_label.text() == "step 35"
    assert tab.curves.cursors["token_accuracy"].value() == 35 == cursor.value()


def test_continue_keeps_the_axis_and_from_scratch_greys_the_previous_run(qtbot, tab, state, monkeypatch):
    _run(qtbot, tab, state, tab.scratch_button, 15)
    _run(qtbot, tab, state, tab.train_button, 10)
    xs, _ = tab.curves.curves["loss"].getData()
    assert list(xs) == list(range(1, 26))  # old code: 1..10, the first run erased
    assert tab.progress_bar.text() == "step 25 / 25"
    assert [s.step for s in state.snapshots][-1] == 25 and 15 in [s.step for s in state.snapshots]
    assert not tab.clear_previous_button.isVisible()
    monkeypatch.setattr(QMessageBox, "question", lambda *a, **k: QMessageBox.StandardButton.Discard)  # unsaved
    _run(qtbot, tab, state, tab.scratch_button, 8)
    xs, _ = tab.curves.curves["loss"].getData()
    assert list(xs) == list(range(1, 9))
    ghost = tab.curves.previous["loss"]
    gx, _ = ghost.getData()
    assert list(gx) == list(range(1, 26)) and ghost.opts["pen"].color().red() == ghost.opts["pen"].color().blue()
    legend = [label.text for _, label in tab.curves.loss_plot.getPlotItem().legend.items]
    assert "previous run" in legend
    assert tab.clear_previous_button.isVisible()
    _click(qtbot, tab.clear_previous_button)
    assert len(ghost.getData()[0] or ()) == 0 and not tab.clear_previous_button.isVisible()
    assert "previous run" not in [label.text for _, label in tab.curves.loss_plot.getPlotItem().legend.items]


def test_probe_picker_shows_kind_layer_and_head(qtbot, tab, state):
    _run(qtbot, tab, state, tab.scratch_button, 10)
    probe, snap = tab.probe, state.snapshots[-1]
    kinds = [probe.kind_combo.itemData(i) for i in range(probe.kind_combo.count())]
    assert kinds == ["cross", "encoder_self", "decoder_self"]
    probe.kind_combo.setFocus()
    qtbot.keyClick(probe.kind_combo, Qt.Key.Key_End)  # decoder self-attention
    assert probe.kind_combo.currentData() == "decoder_self"
    np.testing.assert_allclose(probe.image.image, snap.maps["decoder_self"].values[-1].mean(axis=0))
    probe.head_combo.setFocus()
    qtbot.keyClick(probe.head_combo, Qt.Key.Key_End)  # the last head alone
    assert probe.head_combo.currentText() == "head 2"
    np.testing.assert_allclose(probe.image.image, snap.maps["decoder_self"].values[-1][1])
    assert probe.plot.titleLabel.text == "Decoder self L1 H2"
    probe.set_head_gates({"decoder_self": np.array([[True, False]])})
    qtbot.keyClick(probe.head_combo, Qt.Key.Key_Home)  # the mean of the heads that are on: head 1 only
    np.testing.assert_allclose(probe.image.image, snap.maps["decoder_self"].values[-1][0])
