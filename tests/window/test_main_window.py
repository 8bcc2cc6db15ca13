"""The whole window as a user meets it: start-up, every tab, PE switch, export, settings, a clean close."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest
import torch
from PySide6.QtCore import QSettings, Qt
from PySide6.QtGui import QImage
from qt_helpers import wait_frame

from core_model import ModelConfig, build_model
from core_model.checkpoint import save_checkpoint
from core_model.tasks import TaskSpec
from visualizer.composition import Application
from visualizer.state.snapshots import ProbeSnapshot
from visualizer.state.source_check import DEFAULT_SOURCE

IGNORED_QT = ("propagateSizeHints",)  # the offscreen platform's own notice, not ours


def open_window(qtbot, checkpoint: Path | None) -> Application:
    app = Application(checkpoint=checkpoint)
    qtbot.addWidget(app.window)
    app.window.show()
    app.start_loading()
    qtbot.waitUntil(lambda: app.hub is not None, timeout=30000)
    wait_frame(qtbot, app.session)
    return app


def close_window(qtbot, app: Application) -> None:
    app.hub.dirty = False  # nothing to ask about
    app.window.close()
    qtbot.waitUntil(lambda: not app.window.isVisible(), timeout=5000)


@pytest.fixture
def tiny_checkpoint(tmp_path) -> Path:
    model = build_model(ModelConfig(d_model=32, n_heads=4, d_ff=64, positional="sinusoidal"), seed=1)
    return save_checkpoint(
        tmp_path / "tiny.pt",
        model,
        history=[{"step": 5.0, "loss": 1.0}],
        extra={"task": {"task": "copy", "n_symbols": 10, "min_len": 1, "max_len": 10}},
    )


@pytest.fixture
def trained_checkpoint(tmp_path) -> Path:
    """A small model with three steps of training curves (loss 2/s, accuracy 0.3 s, lr 1e-3 s at steps 1-3)."""
    model = build_model(ModelConfig(d_model=32, n_heads=4, d_ff=64), seed=2)
    history = [{"step": s, "loss": 2.0 / s, "token_accuracy": 0.3 * s, "lr": 1e-3 * s} for s in (1, 2, 3)]
    return save_checkpoint(
        tmp_path / "trained.pt",
        model,
        history=history,
        extra={"task": {"task": "copy", "n_symbols": 10, "min_len": 1, "max_len": 10}},
    )


@pytest.fixture
def app(qtbot, tiny_checkpoint):
    app = open_window(qtbot, tiny_checkpoint)
    yield app
    if app.window.isVisible():
        close_window(qtbot, app)


def qt_warnings(qtlog) -> list[str]:
    return [
        r.message for r in qtlog.records if r.type.name != "QtDebugMsg" and not any(s in r.message for s in IGNORED_QT)
    ]


def test_window_opens_visits_every_tab_and_closes_cleanly(qtbot, qtlog, tiny_checkpoint, capfd):
    app = open_window(qtbot, tiny_checkpoint)
    assert app.window.stack.currentWidget() is app.window.tabs
    assert "tiny.pt" in app.window.windowTitle()
    for i in range(app.window.tabs.count()):
        qtbot.keyClick(app.window, Qt.Key.Key_1 + i, Qt.KeyboardModifier.ControlModifier)
        assert app.window.tabs.currentIndex() == i
        app.window.grab()
    for i in range(app.playground.grid_tabs.count()):
        app.playground.grid_tabs.setCurrentIndex(i)
        app.window.grab()
    assert "params" in app.window.params_label.text() and "device: cpu" in app.window.device_label.text()
    assert "forward" in app.window.forward_label.text()
    close_window(qtbot, app)
    assert qt_warnings(qtlog) == []
    err = capfd.readouterr().err
    assert "QThread" not in err and "Traceback" not in err


def test_missing_checkpoint_starts_untrained_and_says_so(qtbot, tmp_path):
    app = open_window(qtbot, tmp_path / "nope.pt")
    assert app.hub.origin == "untrained"
    assert "Untrained" in app.window.warning_label.text()
    close_window(qtbot, app)


def test_corrupt_checkpoint_starts_untrained_and_says_so(qtbot, tmp_path):
    bad = tmp_path / "bad.pt"
    bad.write_bytes(b"not a checkpoint at all")
    app = open_window(qtbot, bad)
    assert app.hub.origin == "untrained"
    assert "could not be read" in app.window.warning_label.text()
    close_window(qtbot, app)


def test_switching_pe_builds_a_new_model_and_updates_the_pe_tab(qtbot, app):
    combo = app.playground.model_panel.combos["positional"]
    old_model = app.hub.model
    combo.setFocus()
    with qtbot.waitSignal(combo.activated, timeout=2000):
        qtbot.keyClick(combo, Qt.Key.Key_Down)  # sinusoidal -> RoPE, as a keyboard user would
    assert app.hub.config.positional == "sinusoidal"  # nothing is built before Apply
    qtbot.mouseClick(app.playground.model_panel.apply_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: app.hub.config.positional == "rope", timeout=10000)
    wait_frame(qtbot, app.session)
    assert app.hub.model is not old_model and app.hub.origin.startswith("untrained")
    assert "untrained" in app.window.statusBar().currentMessage()
    assert app.pe_tab.state.pe_kind == "rope"
    assert "RoPE" in app.playground.model_panel.summary.text()
    maps = app.playground.grids["cross"].current_maps()
    assert app.hub.task.anchored  # a new RoPE model reads its source as <bos> symbols <eos>, as the recipe's do
    ids = app.hub.task.source_ids(app.session.vocabulary.encode("0123456789"))
    src = torch.tensor([ids + [0] * app.session.extra_pads])
    assert maps.values.shape[0] == app.hub.config.n_decoder_layers and src.shape[1] == maps.values.shape[-1]
    app.menus.undo.trigger()  # Model > Undo architecture change
    assert app.hub.model is old_model and app.hub.config.positional == "sinusoidal"


def test_export_writes_files_that_load_back_to_the_same_numbers(qtbot, app, tmp_path):
    grid = app.playground.grids["encoder_self"]
    app.playground.grid_tabs.setCurrentWidget(grid)
    maps = grid.current_maps()
    with qtbot.waitSignal(app.exporter.exported, timeout=10_000):  # the matrices are written by a task
        npy = app.exporter.export_grid("npy", tmp_path / "enc.npy")
    loaded = np.load(npy)
    shown = np.where(maps.valid, maps.values, np.nan)
    np.testing.assert_array_equal(loaded, shown)
    png = app.exporter.export_grid("png", tmp_path / "enc.png")
    assert not QImage(str(png)).isNull()
    svg = app.exporter.export_grid("svg", tmp_path / "enc.svg")
    assert svg.read_text().lstrip().startswith("<?xml")
    with qtbot.waitSignal(app.exporter.exported, timeout=10_000):
        app.exporter.export_grid_csv_folder(tmp_path)
    first = tmp_path / "encoder_self_L1_H1.csv"
    with first.open() as fh:
        rows = list(csv.reader(fh))
    values = np.array([[float(c) if c else np.nan for c in row[1:]] for row in rows[1:]], dtype=np.float32)
    np.testing.assert_array_equal(values, shown[0, 0])
    pe_files = app.exporter.export_pe_plots("png", tmp_path)
    assert len(pe_files) == 4 and all(f.stat().st_size > 0 for f in pe_files)


def test_settings_survive_a_restart(qtbot, tiny_checkpoint):
    app = open_window(qtbot, tiny_checkpoint)
    field = app.playground.input_panel.source
    field.selectAll()
    qtbot.keyClicks(field, "97531")
    qtbot.mouseClick(app.playground.mask_panel.flag_boxes["decoder_causal"], Qt.MouseButton.LeftButton)
    close_window(qtbot, app)
    assert QSettings().value("input/source") == "97531"
    again = open_window(qtbot, tiny_checkpoint)
    assert again.playground.input_panel.source.text() == "97531"
    assert not again.session.masks.decoder_causal
    assert not again.playground.mask_panel.spec().decoder_causal
    assert again.playground.grids["encoder_self"].current_maps().key_labels[:5] == tuple("97531")
    close_window(qtbot, again)


def test_the_fields_show_what_the_session_restored_and_a_refused_source_falls_back_in_both(qtbot, tiny_checkpoint):
    """The session owns the inputs: the fields follow whatever it restored, including its fallback."""
    app = open_window(qtbot, tiny_checkpoint)
    panel = app.playground.input_panel
    panel.prefix.selectAll()
    qtbot.keyClicks(panel.prefix, "9")
    panel.pads.selectAll()
    qtbot.keyClicks(panel.pads, "4")
    close_window(qtbot, app)
    assert (QSettings().value("input/prefix"), int(QSettings().value("input/pads"))) == ("9", 4)
    QSettings().setValue("input/source", "12x4")  # a symbol this model refuses
    again = open_window(qtbot, tiny_checkpoint)
    shown = again.playground.input_panel
    assert (shown.prefix.text(), shown.pads.value()) == ("9", 4)
    assert (again.session.target_prefix, again.session.extra_pads) == ("9", 4)
    assert shown.source.text() == again.session.source_text == DEFAULT_SOURCE
    close_window(qtbot, again)


def test_architecture_change_asks_before_discarding_training(qtbot, app, monkeypatch):
    from PySide6.QtWidgets import QMessageBox

    app.hub.dirty = True
    monkeypatch.setattr(QMessageBox, "question", lambda *a, **k: QMessageBox.StandardButton.Cancel)
    old = app.hub.model
    spin = app.playground.model_panel.spins["n_heads"]
    spin.setValue(2)
    qtbot.mouseClick(app.playground.model_panel.apply_button, Qt.MouseButton.LeftButton)
    assert app.hub.model is old and app.hub.config.n_heads == 4
    assert spin.value() == 4  # the controls show the loaded model again


def test_device_menu_lists_cpu_and_keeps_the_model_working(qtbot, app):
    actions = app.menus.device.actions()
    names = [a.text() for a in actions]
    assert "cpu" in names
    cpu = actions[names.index("cpu")]
    assert cpu.isChecked()
    cpu.trigger()
    assert "device: cpu" in app.window.device_label.text()
    assert "cpu" in app.window.statusBar().currentMessage()
    field = app.playground.input_panel.source
    field.selectAll()
    qtbot.keyClicks(field, "42")
    wait_frame(qtbot, app.session)
    assert app.playground.grids["cross"].current_maps().key_labels[:2] == ("4", "2")


def test_trained_weights_bring_their_task_to_the_playground(qtbot, app):
    hub = app.hub
    field = app.playground.input_panel.source
    field.selectAll()
    qtbot.keyClicks(field, "123")
    wait_frame(qtbot, app.session)
    hub.adopt_weights(hub.model.state_dict(), [{"step": 1.0}], task=TaskSpec("reverse", 10, 1, 10))
    wait_frame(qtbot, app.session)
    panel = app.playground.input_panel
    assert panel.task.currentData() == "reverse"
    assert panel.expected.text() == "3 2 1"
    assert hub.dirty and "unsaved" in app.window.model_label.text()
    close_window(qtbot, app)


def test_start_up_model_shows_its_own_training_curves(qtbot, trained_checkpoint):
    app = open_window(qtbot, trained_checkpoint)
    xs, ys = app.trainer_tab.curves.curves["loss"].getData()
    np.testing.assert_array_equal(xs, [1, 2, 3])
    np.testing.assert_allclose(ys, [2.0, 1.0, 2.0 / 3])
    assert app.trainer_tab.progress_bar.text() == "not training"
    close_window(qtbot, app)


def test_moving_the_model_to_another_device_keeps_its_training_curves(qtbot, trained_checkpoint):
    app = open_window(qtbot, trained_checkpoint)
    generation = app.hub.generation
    cpu = next(a for a in app.menus.device.actions() if a.text() == "cpu")
    cpu.trigger()
    assert "cpu" in app.window.statusBar().currentMessage()
    assert app.hub.generation == generation  # same model, same weights: not a new model
    xs, _ = app.trainer_tab.curves.curves["loss"].getData()
    np.testing.assert_array_equal(xs, [1, 2, 3])
    close_window(qtbot, app)


def test_huge_numbers_in_the_settings_file_are_clamped_and_the_window_starts(qtbot, tiny_checkpoint):
    import json

    st = QSettings()
    st.setValue("window/tab", str(10**20))
    st.setValue("input/pads", str(10**20))
    st.setValue("masks/spec", json.dumps({"encoder_window": 10**20, "decoder_window": -5}))
    st.sync()
    app = open_window(qtbot, tiny_checkpoint)
    assert app.window.stack.currentWidget() is app.window.tabs  # not stuck on "Loading the model..."
    assert app.playground.input_panel.pads.value() == app.session.extra_pads == 16
    assert app.window.tabs.currentIndex() == app.window.tabs.count() - 1
    assert (app.session.masks.encoder_window, app.session.masks.decoder_window) == (512, 1)
    assert app.playground.mask_panel.spec() == app.session.masks
    close_window(qtbot, app)


def test_a_restore_that_fails_falls_back_to_the_defaults_and_says_so(qtbot, tiny_checkpoint, monkeypatch):
    from visualizer.controllers.preferences import Preferences

    QSettings().setValue("input/source", "97531")
    original, calls = Preferences.restore, []

    def breaks_once(self):
        calls.append(1)
        if len(calls) == 1:
            raise OverflowError("Python int too large to convert to C int")
        original(self)

    monkeypatch.setattr(Preferences, "restore", breaks_once)
    app = open_window(qtbot, tiny_checkpoint)
    assert app.window.stack.currentWidget() is app.window.tabs
    assert "could not be restored" in app.window.statusBar().currentMessage()
    assert app.playground.input_panel.source.text() == "0123456789"  # the defaults, not the broken settings
    close_window(qtbot, app)


def test_the_view_menu_lists_the_tabs_in_order_before_anything_else(qtbot, app):
    texts = [a.text().replace("&", "") for a in app.window.view_menu.actions()]
    tabs = [app.window.tabs.tabText(i).replace("&", "") for i in range(app.window.tabs.count())]
    assert texts[: len(tabs)] == [f"{i + 1} {title}" for i, title in enumerate(tabs)], texts
    assert texts[len(tabs)] == ""  # a separator, then the other entries (Analyse heads, Square cells, ...)


def test_view_menu_square_cells_makes_every_grid_keep_square_cells(qtbot, app):
    from PySide6.QtCore import QRectF

    action = next(a for a in app.window.view_menu.actions() if "Square cells" in a.text())
    assert action.isCheckable() and not action.isChecked()
    action.trigger()
    for kind, grid in app.playground.grids.items():
        app.playground.grid_tabs.setCurrentWidget(grid)
        qtbot.waitUntil(lambda grid=grid: grid.isVisible())
        cell = grid.atlas_plot.to_scene(QRectF(0, 0, 1, 1)).boundingRect()
        assert cell.width() == pytest.approx(cell.height(), rel=0.02), kind


def test_the_probes_mean_of_heads_follows_the_heads_switched_off_in_the_playground(qtbot, app):
    tab = app.trainer_tab
    tab.form.steps_spin.setValue(10)
    app.window.tabs.setCurrentWidget(app.trainer_page)
    qtbot.waitUntil(tab.isVisible)
    qtbot.mouseClick(tab.scratch_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: app.training.state == "finished" and app.training.training_thread is None, timeout=60000)
    probe, snap = tab.probe, app.training.snapshots[-1]
    assert probe.kind_combo.currentData() == "cross" and probe.head_combo.currentText() == "mean of heads on"
    layer = probe.layer_combo.currentIndex()
    np.testing.assert_allclose(probe.image.image, snap.maps["cross"].values[layer].mean(axis=0), rtol=1e-6)
    app.session.set_head_enabled("cross", layer, 0, False)  # right-click > Ablate L1 H1 (cross) in the playground
    np.testing.assert_allclose(probe.image.image, snap.maps["cross"].values[layer][1:].mean(axis=0), rtol=1e-6)
    close_window(qtbot, app)


def test_hidden_pages_are_built_or_drawn_when_first_shown(qtbot, app):
    """Start-up builds no Length lab, no Positional encoding tab and no compare page; each appears, inside the
    window and up to date (the PE tab names the loaded model's PE), the first time the user opens it."""
    win = app.window
    assert not app.analysis.length_lab_page.built and not app._pe_page.built  # noqa: SLF001 - nothing built yet
    assert app.playground._compare_panel is None  # noqa: SLF001
    qtbot.keyClick(win, Qt.Key.Key_2, Qt.KeyboardModifier.ControlModifier)  # Positional encoding
    assert "sinusoidal" in app.pe_tab._model_label.text()  # noqa: SLF001 - the loaded model's PE, drawn when shown
    assert not app.pe_tab._stale and app.pe_tab._image.image is not None  # noqa: SLF001 - showing drew it
    qtbot.keyClick(win, Qt.Key.Key_5, Qt.KeyboardModifier.ControlModifier)  # Length lab
    lab = app.length_lab_tab
    assert app.analysis.length_lab_page.built and lab.isVisible() and lab.evaluate_button.isVisible()  # noqa: SLF001
    inside = lab.evaluate_button.mapTo(win, lab.evaluate_button.rect().bottomRight())
    assert win.rect().contains(inside)
    qtbot.keyClick(win, Qt.Key.Key_1, Qt.KeyboardModifier.ControlModifier)
    qtbot.mouseClick(app.playground.compare_button, Qt.MouseButton.LeftButton)
    panel = app.playground.compare_panel
    assert panel is not None and panel.isVisible()
    assert not panel.grid_a.placeholder.isVisible() and panel.grid_a.current_maps() is not None  # A: no wait for B
    assert "press Load B" in panel.grid_b.placeholder.text()
    assert not panel.scale_note.isVisible()  # no maps yet, so no scale to warn about
    assert app.playground.grid_stack.currentWidget() is app.playground.compare_panel
    qtbot.mouseClick(app.playground.compare_button, Qt.MouseButton.LeftButton)
    assert app.playground.grid_stack.currentWidget() is app.playground.grid_tabs


def test_a_lazy_page_that_fails_to_build_says_why_and_builds_on_the_next_show(qtbot):
    from PySide6.QtWidgets import QLabel, QTabWidget

    from visualizer.widgets.lazy_tab import LazyTab

    attempts = []

    def build():
        attempts.append(1)
        if len(attempts) == 1:
            raise OSError("disk full")
        return QLabel("the lab")

    tabs = QTabWidget()
    qtbot.addWidget(tabs)
    tabs.addTab(QLabel("first"), "First")
    page = LazyTab(build)
    tabs.addTab(page, "Lazy")
    tabs.show()
    tabs.setCurrentIndex(1)
    assert page.error_label.isVisible() and "OSError: disk full" in page.error_label.text()
    assert not page.built
    tabs.setCurrentIndex(0)
    tabs.setCurrentIndex(1)
    assert page.built and not page.error_label.isVisible() and page.content().isVisible()
    assert page.content().text() == "the lab"


def test_the_trainer_tab_is_built_when_first_opened_and_knows_what_happened_before(qtbot, trained_checkpoint):
    """Start-up no longer builds the Trainer tab (~50 ms of launch-to-ready); opened later, it shows the loaded
    model's curves and a probe mean over the heads switched on in the Playground before it existed, and after."""
    from visualizer.workers.training_worker import probe_maps

    app = open_window(qtbot, trained_checkpoint)
    tabs = app.window.tabs
    page = tabs.widget(2)
    assert tabs.tabText(2).replace("&", "") == "Trainer" and not page.built
    app.session.set_head_enabled("encoder_self", 0, 1, False)  # switched off while the tab does not exist yet
    bar = tabs.tabBar()
    qtbot.mouseClick(bar, Qt.MouseButton.LeftButton, pos=bar.tabRect(2).center())
    qtbot.waitUntil(lambda: page.built and app.trainer_tab.isVisible(), timeout=5000)
    tab = app.trainer_tab
    assert tab.parent() is page
    np.testing.assert_array_equal(tab.curves.curves["loss"].getData()[0], [1, 2, 3])
    snap = ProbeSnapshot(3, "1234", probe_maps(app.hub.model, app.hub.task, "1234", torch.device("cpu")))
    tab.probe.set_snapshots((snap,))
    tab.probe.kind_combo.setCurrentIndex(tab.probe.kind_combo.findData("encoder_self"))
    tab.probe.layer_combo.setCurrentIndex(0)
    tab.probe.head_combo.setCurrentIndex(tab.probe.head_combo.findText("mean of heads on"))
    heads = snap.maps["encoder_self"].values[0]  # (H, S, S)
    np.testing.assert_allclose(tab.probe.image.image, heads[[0, 2, 3]].mean(axis=0), atol=1e-6)
    app.session.set_head_enabled("encoder_self", 0, 1, True)  # and it keeps listening
    np.testing.assert_allclose(tab.probe.image.image, heads.mean(axis=0), atol=1e-6)
    close_window(qtbot, app)


def test_the_trainer_keys_work_in_the_window_where_the_page_owns_them(qtbot, tiny_checkpoint):
    """Ctrl+Return continues training and Esc stops it, on the tab the window built late (keys.py, page.py)."""
    app = open_window(qtbot, tiny_checkpoint)
    app.window.tabs.setCurrentIndex(2)
    tab = app.trainer_tab
    qtbot.waitUntil(tab.isVisible, timeout=5000)
    tab.form.steps_spin.setValue(100_000)  # far more than this test waits for
    with qtbot.waitActive(app.window):
        app.window.activateWindow()
    field = tab.form.seed_spin
    field.setFocus()
    qtbot.keyClick(field, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)
    assert app.training.state == "running"
    qtbot.waitUntil(lambda: app.training.progress is not None, timeout=20000)
    tab.pause_button.setFocus()
    qtbot.keyClick(tab.pause_button, Qt.Key.Key_Escape)
    qtbot.waitUntil(lambda: not app.training.busy, timeout=20000)
    assert app.training.end_reason == "stopped"
    close_window(qtbot, app)
