"""Every task of the registry through the real window: a small untrained model of the task's vocabulary opened with
File > Open, then the Playground, Heads, Causal (both pages), Circuits, Compare and the Length lab, each driven by
its own buttons; each shows what it computed (no error text), or says plainly why it cannot apply."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from qt_helpers import shown_app, wait_frame

import visualizer.controllers.checkpoints as checkpoints
from core_model import ModelConfig, build_model
from core_model.checkpoint import save_checkpoint
from core_model.recipe import recipe_task
from core_model.tasks import TASK_NAMES
from visualizer.state.length_lab_snapshots import PAIR_TASKS

RUN_MS = 60_000
CLICK = Qt.MouseButton.LeftButton


def task_checkpoint(folder: Path, task: str) -> Path:
    """A small RoPE model, untrained, whose vocabulary is the task's, stored with the task's recipe."""
    spec = recipe_task(task, "rope")
    config = ModelConfig(
        vocab_size=spec.vocab_size, d_model=16, n_heads=2, d_ff=32, n_encoder_layers=1, n_decoder_layers=1, max_len=64
    )
    return save_checkpoint(folder / f"{task}.pt", build_model(config, seed=0), extra={"task": asdict(spec)})


def open_with_keys(qtbot, app, path: Path, monkeypatch) -> None:
    """File > Open (Ctrl+O) with the file dialog answering `path`."""
    monkeypatch.setattr(checkpoints, "_ask_open_path", lambda _parent, _folder: str(path))
    app.window.activateWindow()
    qtbot.keyClick(app.window, Qt.Key.Key_O, Qt.KeyboardModifier.ControlModifier)
    qtbot.waitUntil(lambda: app.hub.path == path, timeout=RUN_MS)
    wait_frame(qtbot, app.session)


@pytest.mark.parametrize("task", TASK_NAMES)
def test_every_tab_runs_on_every_task(qtbot, tmp_path, monkeypatch, capfd, task):
    path = task_checkpoint(tmp_path, task)
    app = shown_app(qtbot, None)
    qtbot.waitUntil(lambda: app.session is not None, timeout=RUN_MS)
    wait_frame(qtbot, app.session)
    open_with_keys(qtbot, app, path, monkeypatch)
    win, panel, spec = app.window, app.playground.input_panel, app.hub.task
    qtbot.waitUntil(lambda: panel.task.currentData() == task and app.session.last_frame is not None)

    # Playground: the task's example, its expected output, the maps of its symbols; no error
    source = app.session.source_text
    assert panel.source.text() == source and spec.source_problem(spec.vocabulary.encode(source)) is None
    assert panel.error.isHidden()
    expected = " ".join(spec.vocabulary.tokens(spec.expected(spec.vocabulary.encode(source))))
    qtbot.waitUntil(lambda: panel.expected.toolTip().endswith(expected))
    keys = app.playground.grids["cross"].current_maps().key_labels
    assert "".join(k for k in keys if not k.startswith("<")) == source
    assert panel.asks.text() == spec.definition.description

    # Heads: importance on a few sequences, the roles table filled
    win.tabs.setCurrentWidget(app.heads_view)
    app.heads_view.n_box.setValue(4)
    qtbot.mouseClick(app.heads_view.run_button, CLICK)
    qtbot.waitUntil(lambda: app.heads_view.status.text().startswith("Analysed"), timeout=RUN_MS)
    assert f"{task} sequences" in app.heads_view.status.text()
    assert app.heads_view.roles.rowCount() == 6  # 2 heads of each attention kind

    # Causal: patching a corruption the task takes, then the lens and attribution
    win.tabs.setCurrentWidget(app.analysis.causal_page)
    causal = app.analysis.causal_page.content()
    clean, corrupt = causal.patching.clean.text(), causal.patching.corrupt.text()
    assert clean == source and corrupt != clean and len(corrupt) == len(clean)
    assert spec.source_problem(spec.vocabulary.encode(corrupt)) is None
    qtbot.mouseClick(causal.patching.run_button, CLICK)
    qtbot.waitUntil(lambda: causal.patching.status.text().startswith("Metric"), timeout=RUN_MS)
    assert all(label.isHidden() for label in causal.patching.errors.values())
    causal.setCurrentIndex(1)
    qtbot.mouseClick(causal.source.run_button, CLICK)
    qtbot.waitUntil(lambda: causal.source.status.text().startswith("Integrated gradients"), timeout=RUN_MS)
    assert causal.source.error.isHidden()

    # Circuits: every head listed
    win.tabs.setCurrentWidget(app.analysis.circuits_page)
    circuits = app.analysis.circuits_page.content()
    qtbot.mouseClick(circuits.run_button, CLICK)
    qtbot.waitUntil(lambda: app.analysis.circuits.frame is not None, timeout=RUN_MS)
    assert circuits.heads.rowCount() == 6 and f"The {task} model" in circuits.status.text()

    # Compare: B is this model; both sides drawn, no failure said
    win.tabs.setCurrentWidget(app.playground)
    qtbot.mouseClick(app.playground.compare_button, CLICK)
    compare = app.playground.compare_panel
    compare.source.setCurrentIndex(compare.source.findData("ablated"))
    qtbot.mouseClick(compare.load_button, CLICK)
    qtbot.waitUntil(lambda: app.compare.last_frame is not None, timeout=RUN_MS)
    assert compare.status.isHidden() and compare.b_label.text() == "B: this model"
    qtbot.mouseClick(app.playground.compare_button, CLICK)

    # Length lab: the task's shipped pair, or a note saying there is none and which pair it shows
    win.tabs.setCurrentWidget(app.analysis.length_lab_page)
    lab = app.length_lab_tab
    app.length_lab.cancel()  # the first visit evaluates the pair: not needed here
    qtbot.waitUntil(lambda: not app.length_lab.busy, timeout=RUN_MS)
    if task in PAIR_TASKS:
        assert lab.task_note.isHidden()
        assert [s.path.name for s in app.length_lab.sources] == [f"{task}_rope.pt", f"{task}_sinusoidal.pt"]
    else:
        assert lab.task_note.isVisible()
        assert lab.task_note.text().startswith(f"No shipped RoPE / sinusoidal pair for {task}: pairs ship for copy")

    app.hub.dirty = False
    win.close()
    qtbot.waitUntil(lambda: not win.isVisible(), timeout=5000)
    err = capfd.readouterr().err
    assert "Traceback" not in err and "QThread" not in err
