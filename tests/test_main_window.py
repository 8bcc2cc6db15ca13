"""The whole window as a user meets it: start-up, every tab, PE switch, export, settings, a clean close."""
from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest
import torch
from PySide6.QtCore import QSettings, Qt
from PySide6.QtGui import QImage

from core_model import ModelConfig, build_model
from core_model.checkpoint import save_checkpoint
from core_model.tasks import TaskSpec
from visualizer.controllers import export as export_actions
from visualizer.main_window import MainWindow

IGNORED_QT = ("propagateSizeHints",)  # the offscreen platform's own notice, not ours


def open_window(qtbot, checkpoint: Path | None) -> MainWindow:
    window = MainWindow(checkpoint=checkpoint)
    qtbot.addWidget(window)
    window.show()
    window.start_loading()
    qtbot.waitUntil(lambda: window.hub is not None, timeout=30000)
    return window


def close_window(qtbot, window: MainWindow) -> None:
    window.hub.dirty = False  # nothing to ask about
    window.close()
    qtbot.waitUntil(lambda: not window.isVisible(), timeout=5000)


@pytest.fixture
def tiny_checkpoint(tmp_path) -> Path:
    model = build_model(ModelConfig(d_model=32, n_heads=4, d_ff=64, positional="sinusoidal"), seed=1)
    return save_checkpoint(tmp_path / "tiny.pt", model, history=[{"step": 5.0, "loss": 1.0}],
                           extra={"task": {"task": "copy", "n_symbols": 10, "min_len": 1, "max_len": 10}})


@pytest.fixture
def window(qtbot, tiny_checkpoint):
    win = open_window(qtbot, tiny_checkpoint)
    yield win
    if win.isVisible():
        close_window(qtbot, win)


def qt_warnings(qtlog) -> list[str]:
    return [r.message for r in qtlog.records if r.type.name != "QtDebugMsg" and not any(s in r.message for s in IGNORED_QT)]


def test_window_opens_visits_every_tab_and_closes_cleanly(qtbot, qtlog, tiny_checkpoint, capfd):
    win = open_window(qtbot, tiny_checkpoint)
    assert win.stack.currentWidget() is win.tabs
    assert "tiny.pt" in win.windowTitle()
    for i in range(win.tabs.count()):
        qtbot.keyClick(win, Qt.Key.Key_1 + i, Qt.KeyboardModifier.ControlModifier)
        assert win.tabs.currentIndex() == i
        win.grab()
    for i in range(win.playground.grid_tabs.count()):
        win.playground.grid_tabs.setCurrentIndex(i)
        win.grab()
    assert "params" in win.params_label.text() and "device: cpu" in win.device_label.text()
    assert "forward" in win.forward_label.text()
    close_window(qtbot, win)
    assert qt_warnings(qtlog) == []
    err = capfd.readouterr().err
    assert "QThread" not in err and "Traceback" not in err


def test_missing_checkpoint_starts_untrained_and_says_so(qtbot, tmp_path):
    win = open_window(qtbot, tmp_path / "nope.pt")
    assert win.hub.origin == "untrained"
    assert "Untrained" in win.warning_label.text()
    close_window(qtbot, win)


def test_corrupt_checkpoint_starts_untrained_and_says_so(qtbot, tmp_path):
    bad = tmp_path / "bad.pt"
    bad.write_bytes(b"not a checkpoint at all")
    win = open_window(qtbot, bad)
    assert win.hub.origin == "untrained"
    assert "could not be read" in win.warning_label.text()
    close_window(qtbot, win)


def test_switching_pe_builds_a_new_model_and_updates_the_pe_tab(qtbot, window):
    combo = window.playground.model_panel.combos["positional"]
    old_model = window.hub.model
    combo.setFocus()
    with qtbot.waitSignal(combo.activated, timeout=2000):
        qtbot.keyClick(combo, Qt.Key.Key_Down)  # sinusoidal -> RoPE, as a keyboard user would
    qtbot.waitUntil(lambda: window.hub.config.positional == "rope", timeout=10000)
    assert window.hub.model is not old_model and window.hub.origin.startswith("untrained")
    assert "untrained" in window.statusBar().currentMessage()
    assert window.pe_tab.state.pe_kind == "rope"
    assert "RoPE" in window.playground.model_panel.summary.text()
    maps = window.playground.grids["cross"].current_maps()
    src = torch.tensor([window.session.vocabulary.encode("0123456789") + [0] * window.session.extra_pads])
    assert maps.values.shape[0] == window.hub.config.n_decoder_layers and src.shape[1] == maps.values.shape[-1]
    window.model_menu.actions()[0].trigger()  # Model > Restore previous model
    assert window.hub.model is old_model and window.hub.config.positional == "sinusoidal"


def test_export_writes_files_that_load_back_to_the_same_numbers(qtbot, window, tmp_path):
    grid = window.playground.grids["encoder_self"]
    window.playground.grid_tabs.setCurrentWidget(grid)
    maps = grid.current_maps()
    npy = export_actions.export_grid(window, "npy", tmp_path / "enc.npy")
    loaded = np.load(npy)
    shown = np.where(maps.valid, maps.values, np.nan)
    np.testing.assert_array_equal(loaded, shown)
    png = export_actions.export_grid(window, "png", tmp_path / "enc.png")
    assert not QImage(str(png)).isNull()
    svg = export_actions.export_grid(window, "svg", tmp_path / "enc.svg")
    assert svg.read_text().lstrip().startswith("<?xml")
    files = export_actions.export_grid_csv_folder(window, tmp_path)
    first = next(f for f in files if f.name == "encoder_self_L1_H1.csv")
    with first.open() as fh:
        rows = list(csv.reader(fh))
    values = np.array([[float(c) if c else np.nan for c in row[1:]] for row in rows[1:]], dtype=np.float32)
    np.testing.assert_array_equal(values, shown[0, 0])
    pe_files = export_actions.export_pe_plots(window, "png", tmp_path)
    assert len(pe_files) == 4 and all(f.stat().st_size > 0 for f in pe_files)


def test_settings_survive_a_restart(qtbot, tiny_checkpoint):
    win = open_window(qtbot, tiny_checkpoint)
    field = win.playground.input_panel.source
    field.selectAll()
    qtbot.keyClicks(field, "97531")
    qtbot.mouseClick(win.playground.mask_panel.flag_boxes["decoder_causal"], Qt.MouseButton.LeftButton)
    close_window(qtbot, win)
    assert QSettings().value("input/source") == "97531"
    again = open_window(qtbot, tiny_checkpoint)
    assert again.playground.input_panel.source.text() == "97531"
    assert not again.session.masks.decoder_causal
    assert not again.playground.mask_panel.spec().decoder_causal
    assert again.playground.grids["encoder_self"].current_maps().key_labels[:5] == tuple("97531")
    close_window(qtbot, again)


def test_architecture_change_asks_before_discarding_training(qtbot, window, monkeypatch):
    from PySide6.QtWidgets import QMessageBox

    window.hub.dirty = True
    monkeypatch.setattr(QMessageBox, "question", lambda *a, **k: QMessageBox.StandardButton.Cancel)
    old = window.hub.model
    spin = window.playground.model_panel.spins["n_heads"]
    spin.setValue(2)
    spin.editingFinished.emit()
    assert window.hub.model is old and window.hub.config.n_heads == 4
    assert spin.value() == 4  # the controls show the loaded model again


def test_device_menu_lists_cpu_and_keeps_the_model_working(qtbot, window):
    actions = window.device_menu.actions()
    names = [a.text() for a in actions]
    assert "cpu" in names
    cpu = actions[names.index("cpu")]
    assert cpu.isChecked()
    cpu.trigger()
    assert "device: cpu" in window.device_label.text()
    assert "cpu" in window.statusBar().currentMessage()
    field = window.playground.input_panel.source
    field.selectAll()
    qtbot.keyClicks(field, "42")
    assert window.playground.grids["cross"].current_maps().key_labels[:2] == ("4", "2")


def test_trained_weights_bring_their_task_to_the_playground(qtbot, window):
    hub = window.hub
    field = window.playground.input_panel.source
    field.selectAll()
    qtbot.keyClicks(field, "123")
    hub.adopt_weights(hub.model.state_dict(), [{"step": 1.0}], task=TaskSpec("reverse", 10, 1, 10))
    panel = window.playground.input_panel
    assert panel.task.currentData() == "reverse"
    assert panel.expected.text() == "3 2 1"
    assert hub.dirty and "unsaved" in window.model_label.text()
    close_window(qtbot, window)


def test_start_up_model_shows_its_own_training_curves(qtbot, tmp_path):
    model = build_model(ModelConfig(d_model=32, n_heads=4, d_ff=64), seed=2)
    history = [{"step": s, "loss": 2.0 / s, "token_accuracy": 0.3 * s, "lr": 1e-3 * s} for s in (1, 2, 3)]
    path = save_checkpoint(tmp_path / "trained.pt", model, history=history,
                           extra={"task": {"task": "copy", "n_symbols": 10, "min_len": 1, "max_len": 10}})
    win = open_window(qtbot, path)
    xs, ys = win.trainer_tab.curves.curves["loss"].getData()
    np.testing.assert_array_equal(xs, [1, 2, 3])
    np.testing.assert_allclose(ys, [2.0, 1.0, 2.0 / 3])
    assert win.trainer_tab.progress_bar.text() == "not training"
    close_window(qtbot, win)
