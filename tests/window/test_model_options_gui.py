"""Issue 18 in the GUI: drop path in the Trainer form reaches the training copy; residual scale in the Model panel."""

from __future__ import annotations

import dataclasses

import torch
from PySide6.QtCore import Qt

from core_model import ModelConfig, build_model
from visualizer.state.inline_slot import InlineSlot
from visualizer.widgets.playground.model_panel import ModelPanel
from visualizer.widgets.training.tab import TrainerTab


def _finished(state) -> bool:
    return state.state in ("finished", "failed") and state.training_thread is None


def test_drop_path_typed_in_the_form_trains_the_copy_with_it(qtbot, hub, state):
    tab = TrainerTab(hub, state, make_slot=InlineSlot)
    qtbot.addWidget(tab)
    with qtbot.waitExposed(tab):
        tab.show()
    spin = tab.form.drop_path_spin
    spin.setFocus()
    spin.selectAll()
    qtbot.keyClicks(spin, "0.35")
    qtbot.keyClick(spin, Qt.Key.Key_Tab)
    assert spin.value() == 0.35 and spin.toolTip().startswith("Stochastic depth")
    tab.form.steps_spin.setValue(3)
    tab.form.batch_spin.setValue(8)
    before = {k: v.clone() for k, v in hub.model.state_dict().items()}
    qtbot.mouseClick(tab.train_button, Qt.MouseButton.LeftButton)
    worker = state._worker
    assert worker.model.config.drop_path == 0.35 and worker.model.config.dropout == tab.form.dropout_spin.value()
    qtbot.waitUntil(lambda: _finished(state), timeout=60_000)
    assert hub.config.drop_path == 0.0  # the playground's model never drops branches
    assert any(not torch.equal(before[k], v) for k, v in hub.model.state_dict().items())  # the weights came back


def test_model_panel_requests_residual_scale_and_lists_the_learned_values(qtbot):
    panel = ModelPanel()
    qtbot.addWidget(panel)
    with qtbot.waitExposed(panel):
        panel.show()
    config = ModelConfig(d_model=16, n_heads=2, d_ff=32, n_encoder_layers=1, n_decoder_layers=1)
    panel.set_config(config, "test", 1000)
    assert not panel.residual_check.isChecked() and "Residual scales" not in panel.summary.text()
    assert not panel.apply_button.isEnabled()
    qtbot.mouseClick(panel.residual_check, Qt.MouseButton.LeftButton)
    assert panel.apply_button.isEnabled()
    with qtbot.waitSignal(panel.config_requested) as got:
        qtbot.mouseClick(panel.apply_button, Qt.MouseButton.LeftButton)
    assert got.args[0] == dataclasses.replace(config, residual_scale=True)
    model = build_model(got.args[0])
    with torch.no_grad():
        model.decoder_layers[0].sub_cross.scale.fill_(0.8125)
    panel.set_config(model.config, "trained", model.parameter_count(), model.residual_scales())
    assert panel.residual_check.isChecked()
    text = panel.summary.text()
    assert "Residual scales" in text and "dec 0: self 1.000, cross 0.812, ff 1.000" in text
    assert "enc 0: attn 1.000, ff 1.000" in text
