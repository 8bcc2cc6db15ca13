"""The Trainer says whose curves it shows, and what its dotted line on the head-role plot means."""

from __future__ import annotations

import copy

import pytest
from PySide6.QtCore import QPointF, Qt
from PySide6.QtWidgets import QMessageBox
from qt_helpers import show_trainer_tab

from visualizer.state.origins import stored_training
from visualizer.widgets.training.tab import TrainerTab

WAIT_MS = 60_000


@pytest.fixture
def tab(qtbot, hub, state) -> TrainerTab:
    return show_trainer_tab(qtbot, hub, state, (1280, 800))


def loss_title(tab: TrainerTab) -> str:
    """The loss plot's title as drawn, checked to lie inside the plot."""
    plot = tab.curves.loss_plot
    label = plot.getPlotItem().titleLabel
    assert label.isVisible()
    assert plot.viewport().rect().contains(plot.mapFromScene(label.sceneBoundingRect()).boundingRect())
    return label.text


def train_from_scratch(qtbot, tab, state, steps: int = 4) -> None:
    tab.form.steps_spin.setValue(steps)
    qtbot.mouseClick(tab.scratch_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: state.state == "finished" and state.training_thread is None, timeout=WAIT_MS)


def test_the_curves_of_an_opened_model_name_the_file_that_stored_them(qtbot, tab, hub, state):
    assert loss_title(tab) == "Loss"  # an untrained model: no curves, nothing to name
    train_from_scratch(qtbot, tab, state)
    assert loss_title(tab) == "Loss"  # the user's own run
    stored, history = copy.deepcopy(hub.model), list(hub.history)
    last = history[-1]["step"]
    hub.set_model(stored, hub.task, origin="trained checkpoint tiny.pt", history=history)  # as File > Open does
    assert loss_title(tab) == f"Loss (steps 1\u2013{last} from tiny.pt)"
    hub.set_model(copy.deepcopy(stored), hub.task, origin="recovered training (step 4)", history=history)
    assert loss_title(tab) == "Loss (a recovered run, to step 4)"
    hub.set_model(copy.deepcopy(stored), hub.task, origin="checkpoint bare.pt", history=[])  # saved without curves
    assert loss_title(tab) == "Loss"


def test_training_an_opened_model_further_keeps_naming_the_stored_steps(qtbot, tab, hub, state, monkeypatch):
    train_from_scratch(qtbot, tab, state)
    history = list(hub.history)
    last = history[-1]["step"]
    hub.set_model(copy.deepcopy(hub.model), hub.task, origin="checkpoint tiny.pt", history=history)
    named = f"Loss (steps 1\u2013{last} from tiny.pt)"
    tab.form.steps_spin.setValue(3)
    qtbot.mouseClick(tab.train_button, Qt.MouseButton.LeftButton)  # Continue training: the step axis goes on
    qtbot.waitUntil(lambda: state.state == "finished" and state.training_thread is None, timeout=WAIT_MS)
    assert hub.history[-1]["step"] == last + 3
    assert loss_title(tab) == named  # the first steps are still the file's, the rest the user's
    qtbot.mouseClick(tab.train_button, Qt.MouseButton.LeftButton)  # and again
    qtbot.waitUntil(lambda: state.state == "finished" and state.training_thread is None, timeout=WAIT_MS)
    assert hub.history[-1]["step"] == last + 6 and loss_title(tab) == named
    monkeypatch.setattr(QMessageBox, "question", lambda *a, **k: QMessageBox.StandardButton.Discard)  # unsaved
    train_from_scratch(qtbot, tab, state)  # fresh weights: every curve is the user's
    assert loss_title(tab) == "Loss"


def test_the_dotted_line_on_the_head_roles_plot_says_what_it_marks_and_only_for_cross_heads(qtbot, tab):
    forming = tab.forming
    line, label = forming.threshold, forming.threshold.label
    assert line.isVisible() and label.isVisible()
    assert label.toPlainText() == "0.9: formed"
    view = forming.plot.viewport().rect()
    drawn = forming.plot.mapFromScene(label.sceneBoundingRect()).boundingRect()
    assert view.contains(drawn), (drawn, view)
    line_y = forming.plot.mapFromScene(forming.plot.getPlotItem().vb.mapViewToScene(QPointF(0, 0.9))).y()
    assert drawn.bottom() <= line_y + 1  # above its line, not over the curves below it
    forming.kind.setCurrentIndex(forming.kind.findData("decoder_self"))
    assert not line.isVisible() and not label.isVisible()
    forming.kind.setCurrentIndex(forming.kind.findData("cross"))
    assert line.isVisible()


def test_the_sentence_under_the_picker_names_the_dotted_line_only_where_it_is_drawn(qtbot, tab, state):
    train_from_scratch(qtbot, tab, state)
    forming = tab.forming
    qtbot.waitUntil(lambda: forming.formed_label.text() != "no probe snapshots yet", timeout=WAIT_MS)
    assert "dotted line" in forming.formed_label.text()
    forming.kind.setCurrentIndex(forming.kind.findData("decoder_self"))
    assert forming.formed_label.text() and "dotted line" not in forming.formed_label.text()
    assert not forming.threshold.isVisible()


def test_the_empty_head_roles_plot_shows_no_step_numbers_until_it_has_curves(qtbot, tab, state):
    steps = tab.forming.plot.getAxis("bottom")
    assert tab.forming.formed_label.text() == "no probe snapshots yet"
    assert not steps.style["showValues"]  # the axis draws no numbers under an empty plot
    train_from_scratch(qtbot, tab, state)
    qtbot.waitUntil(lambda: bool(tab.forming.curves), timeout=WAIT_MS)
    assert steps.style["showValues"]


def test_the_stored_steps_are_named_from_well_formed_rows_only():
    rows = [{"step": 10}, {"step": float("inf")}, "not a row", {"step": True}, {"step": 4000.0}, {"loss": 1.0}]
    assert stored_training("checkpoint a.pt", rows) == "steps 1\u20134000 from a.pt"
    assert stored_training("checkpoint a.pt", [{"loss": 1.0}]) == "from a.pt"
    assert stored_training("trained here", rows) == "" and stored_training("checkpoint a.pt", []) == ""


def test_the_shipped_model_loaded_at_launch_names_its_stored_steps():
    """The start-up loader (a worker, which imports no state module) writes its origin itself: it must read back as
    the origins module writes a shipped checkpoint's."""
    from visualizer.state.origins import checkpoint_origin
    from visualizer.workers.loader import load_startup_model

    startup = load_startup_model(None, "cpu")
    assert startup.origin == checkpoint_origin(startup.path.name, shipped=True)
    assert stored_training(startup.origin, startup.history) == "steps 1\u20134000 from copy_rope.pt"
