"""Model > Redo: what Model > Undo took away comes back as it was undone (weights, training, unsaved mark), from the
menu action and its key; a new change drops it, and models past the undo depth are let go of."""

from __future__ import annotations

import gc
import weakref

import torch
from PySide6.QtCore import Qt
from test_present_texts import _apply_heads, app  # noqa: F401 - the window on a small own model (tiny.pt)

from core_model import ModelConfig, build_model
from core_model.tasks import TaskSpec
from visualizer.state.model_hub import UNDO_DEPTH, ModelHub

REDO_KEYS = Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.AltModifier | Qt.KeyboardModifier.ShiftModifier


def _heads_shown(app) -> int:
    return app.playground.model_panel.spins["n_heads"].value()


def test_redo_brings_back_the_undone_architecture_change(qtbot, app):  # noqa: F811 - the fixture
    undo, redo, bar = app.menus.undo, app.menus.redo, app.window.statusBar()
    assert redo.text() == "&Redo" and not redo.isEnabled()
    _apply_heads(qtbot, app, 2)
    built = app.hub.model
    assert not redo.isEnabled()
    undo.trigger()  # Model > Undo architecture change
    assert _heads_shown(app) == 4 and app.hub.path.name == "tiny.pt"
    assert redo.isEnabled() and redo.text() == "&Redo architecture change"
    assert "architecture change" in redo.statusTip() and not undo.isEnabled()
    redo.trigger()
    assert _heads_shown(app) == 2 and app.hub.model is built
    assert (
        bar.currentMessage()
        == "Redid architecture change: the model is untrained (new architecture) again (copy task)."
    )
    assert undo.text() == "&Undo architecture change" and not redo.isEnabled() and redo.text() == "&Redo"
    undo.trigger()
    assert _heads_shown(app) == 4
    _apply_heads(qtbot, app, 1)  # a new change: the undone one cannot come back any more
    assert not redo.isEnabled() and undo.text() == "&Undo architecture change"
    undo.trigger()
    assert _heads_shown(app) == 4 and redo.text() == "&Redo architecture change" and not undo.isEnabled()


def test_redo_key_brings_back_the_training_the_undone_model_had(qtbot, app):  # noqa: F811 - the fixture
    _apply_heads(qtbot, app, 2)
    hub = app.hub
    trained = {k: torch.randn_like(v) for k, v in hub.model.state_dict().items()}
    hub.adopt_weights(trained, [{"step": 1, "loss": 0.5}])  # what a pause of training hands back
    trained = {k: v.clone() for k, v in hub.model.state_dict().items()}  # tied weights: the last one loaded wins
    assert "unsaved training" in app.window.model_label.text()
    app.window.activateWindow()
    qtbot.keyClick(app.window, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.AltModifier)
    assert _heads_shown(app) == 4 and "unsaved training" not in app.window.model_label.text()
    qtbot.keyClick(app.window, Qt.Key.Key_Z, REDO_KEYS)  # Model > Redo's key
    assert _heads_shown(app) == 2 and "unsaved training" in app.window.model_label.text()
    assert hub.history == [{"step": 1, "loss": 0.5}]
    assert all(torch.equal(trained[k], v) for k, v in hub.model.state_dict().items())
    hub.dirty = False  # let the fixture close the window without asking


def test_models_past_the_undo_depth_are_let_go_of(qtbot):
    task = TaskSpec("copy", n_symbols=5, min_len=1, max_len=5)
    first = build_model(ModelConfig(d_model=16, n_heads=2, d_ff=32), seed=0)
    hub = ModelHub(first, task, device=torch.device("cpu"), origin="first")
    kept = weakref.ref(first)
    del first
    for seed in range(UNDO_DEPTH + 1):
        hub.new_untrained(ModelConfig(d_model=16, n_heads=2, d_ff=32), seed=seed)
    gc.collect()
    assert kept() is None and hub.undo_depth == UNDO_DEPTH
