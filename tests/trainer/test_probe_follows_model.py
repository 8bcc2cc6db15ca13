"""The Trainer's probe after Model > Apply: it follows the new architecture instead of mixing two models' shapes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QMessageBox
from qt_helpers import wait_frame

from core_model import ModelConfig, build_model
from core_model.checkpoint import save_checkpoint
from core_model.tasks import TaskSpec
from visualizer.composition import Application
from visualizer.state.snapshots import ProbeSnapshot
from visualizer.widgets.training.probe_view import MEAN, pick_map
from visualizer.workers.training_worker import probe_maps

WAIT_MS = 60_000


@pytest.fixture
def checkpoint(tmp_path) -> Path:
    """4 heads, 2+2 layers, d_model 32: no shipped model has this shape, so Apply always builds a new one."""
    model = build_model(ModelConfig(d_model=32, n_heads=4, d_ff=64, positional="sinusoidal"), seed=1)
    return save_checkpoint(
        tmp_path / "tiny.pt", model, extra={"task": {"task": "copy", "n_symbols": 10, "min_len": 1, "max_len": 10}}
    )


def _open(qtbot, checkpoint: Path) -> Application:
    app = Application(checkpoint=checkpoint)
    qtbot.addWidget(app.window)
    app.window.show()
    app.start_loading()
    qtbot.waitUntil(lambda: app.hub is not None, timeout=30_000)
    wait_frame(qtbot, app.session)
    return app


def _train_from_scratch(qtbot, app: Application) -> None:
    app.window.tabs.setCurrentWidget(app.trainer_page)
    tab = app.trainer_tab
    qtbot.waitUntil(tab.isVisible)
    tab.form.steps_spin.setValue(10)
    qtbot.mouseClick(tab.scratch_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: app.training.state == "finished" and app.training.training_thread is None, timeout=WAIT_MS)
    assert tab.probe.graphics.isVisible() and tab.probe.head_combo.count() == 4 + 1


@pytest.mark.parametrize(
    ("field", "value", "layers", "heads"),
    [
        ("n_heads", 8, 2, 8),
        ("n_decoder_layers", 3, 3, 4),  # the probe shows cross-attention first: decoder layers
        ("n_encoder_layers", 1, 2, 4),
        ("d_model", 64, 2, 4),
    ],
)
def test_apply_after_training_shows_the_new_models_layers_and_heads(
    qtbot, checkpoint, monkeypatch, field, value, layers, heads
):
    app = _open(qtbot, checkpoint)
    _train_from_scratch(qtbot, app)
    monkeypatch.setattr(QMessageBox, "question", lambda *a, **k: QMessageBox.StandardButton.Discard)  # unsaved
    app.window.tabs.setCurrentWidget(app.playground)
    panel = app.playground.model_panel
    panel.spins[field].setValue(value)
    qtbot.mouseClick(panel.apply_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: getattr(app.hub.config, field) == value, timeout=WAIT_MS)
    wait_frame(qtbot, app.session)
    app.window.tabs.setCurrentWidget(app.trainer_page)
    probe = app.trainer_tab.probe
    qtbot.waitUntil(probe.isVisible)
    assert probe.placeholder.isVisible() and not probe.graphics.isVisible()  # the old model's maps are gone
    assert probe.layer_combo.count() == layers and probe.layer_combo.currentText() == f"layer {layers} (last)"
    assert [probe.head_combo.itemText(i) for i in range(probe.head_combo.count())] == (
        ["mean of heads on"] + [f"head {h + 1}" for h in range(heads)]
    )
    app.session.set_head_enabled("cross", layers - 1, heads - 1, False)  # a switch on the new model's last head
    probe.kind_combo.setCurrentIndex(probe.kind_combo.findData("encoder_self"))
    assert probe.layer_combo.count() == app.hub.config.n_encoder_layers
    app.hub.dirty = False
    app.window.close()
    qtbot.waitUntil(lambda: not app.window.isVisible(), timeout=5000)


def test_the_mean_ignores_head_switches_of_another_shape():
    """While a model changes shape, the new model's switches may reach the probe before its old snapshots go."""
    model = build_model(ModelConfig(d_model=32, n_heads=4, d_ff=64), seed=1)
    snap = ProbeSnapshot(1, "123", probe_maps(model, TaskSpec("copy", 10, 1, 10), "123", torch.device("cpu")))
    values = snap.maps["cross"].values  # (2, 4, Tq, Tk)
    eight = np.ones((2, 8), bool)
    eight[1, 0] = False
    np.testing.assert_allclose(pick_map(snap, "cross", 1, MEAN, eight), values[1].mean(axis=0), rtol=1e-6)
    four = np.ones((2, 4), bool)
    four[1, 0] = False
    np.testing.assert_allclose(pick_map(snap, "cross", 1, MEAN, four), values[1, 1:].mean(axis=0), rtol=1e-6)
