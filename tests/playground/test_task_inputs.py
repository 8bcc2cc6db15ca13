"""The Playground's task chooser and source field for every task of the registry: the chooser lists them all with
what each asks, the field takes a task's own alphabet and grammar and says which rule a source breaks (the last good
maps stay), the Expected line shows an answer of any length, and a task the model cannot read says so."""

from __future__ import annotations

import pytest
import torch
from PySide6.QtCore import Qt
from test_playground import marked_symbol, type_source

import visualizer.state.playground as playground_state
from core_model import ModelConfig, build_model
from core_model.recipe import recipe_task
from core_model.shipped import has_shipped
from core_model.tasks import TASKS, TaskSpec, task_named
from visualizer.state.model_hub import ModelHub
from visualizer.state.origins import NEW_ARCHITECTURE
from visualizer.state.playground import PlaygroundSession
from visualizer.state.playground_tools import playground_tools
from visualizer.widgets.playground.input_panel import NO_MODEL_MARK
from visualizer.widgets.playground.view import PlaygroundView


def open_view(qtbot, task: TaskSpec, origin: str = "test model") -> PlaygroundView:
    """A Playground on an untrained model of `task` with its vocabulary, at the window's size."""
    config = ModelConfig(d_model=32, n_heads=4, d_ff=64, vocab_size=task.vocab_size)
    hub = ModelHub(build_model(config, seed=3), task, device=torch.device("cpu"), origin=origin)
    session = PlaygroundSession(hub)
    view = PlaygroundView(session, playground_tools(session))
    qtbot.addWidget(view)
    view.resize(1280, 800)
    with qtbot.waitExposed(view):
        view.show()
    session.set_source(session.example_source())
    return view


def pick(qtbot, view: PlaygroundView, task: str) -> None:
    """Choose `task` in the chooser with the keyboard, as a user does (Home, then Down until it shows)."""
    combo = view.input_panel.task
    combo.setFocus()
    qtbot.keyClick(combo, Qt.Key.Key_Home)
    while combo.currentData() != task:
        qtbot.keyClick(combo, Qt.Key.Key_Down)


def expected_line(view: PlaygroundView) -> str:
    return view.input_panel.expected.toolTip().splitlines()[-1]


def source_keys(view: PlaygroundView) -> str:
    """The source symbols the cross grid's maps are drawn for (anchors and pads left out)."""
    return "".join(k for k in view.grids["cross"].current_maps().key_labels if not k.startswith("<"))


def test_the_chooser_lists_every_task_with_what_it_asks(qtbot):
    view = open_view(qtbot, recipe_task("copy", "rope"))
    combo, panel = view.input_panel.task, view.input_panel
    assert [combo.itemData(i) for i in range(combo.count())] == list(TASKS)
    for i in range(combo.count()):
        name = combo.itemData(i)
        assert combo.itemData(i, Qt.ItemDataRole.ToolTipRole) == TASKS[name].description
        assert combo.itemText(i) == (name if has_shipped(name) else name + NO_MODEL_MARK)
    pick(qtbot, view, "histogram")
    histogram = task_named("histogram")
    assert panel.asks.text() == histogram.description
    assert histogram.explanation in panel.asks.toolTip()
    assert panel.asks.height() <= 2 * panel.asks.fontMetrics().lineSpacing() + 4  # two lines at most


def test_an_addition_source_is_checked_against_its_grammar_and_the_last_maps_stay(qtbot):
    view = open_view(qtbot, recipe_task("addition", "rope"))
    panel = view.input_panel
    assert panel.source.text() == "1234567+9876543"  # the task's example, as long as the model's lengths allow
    type_source(qtbot, view, "12+34")
    assert expected_line(view) == "4 6 0"  # 21 + 43 = 64, least significant digit first, one digit more
    assert source_keys(view) == "12+34" and panel.error.isHidden()
    type_source(qtbot, view, "12+3")
    assert not panel.error.isHidden()
    assert "An addition needs one '+' between two numbers of equal length" in panel.error.text()
    assert source_keys(view) == "12+34" and expected_line(view) == "4 6 0"  # the last good source's
    type_source(qtbot, view, "12a")
    assert "Unknown symbol 'a' at position 3; addition reads only 0 1 2 3 4 5 6 7 8 9 +" in panel.error.text()
    assert marked_symbol(panel.error) == "a"


def test_brackets_and_letters_give_their_tasks_answers_of_any_length(qtbot):
    view = open_view(qtbot, recipe_task("dyck_depth", "rope"))
    type_source(qtbot, view, "(())()")
    assert expected_line(view) == "1 2 1 0 1 0" and source_keys(view) == "(())()"
    type_source(qtbot, view, ")(")
    assert "Brackets must balance: the ')' at position 0 closes nothing" in view.input_panel.error.text()
    recall = open_view(qtbot, recipe_task("recall", "rope"))
    type_source(qtbot, recall, "a3b1c4?b")
    assert expected_line(recall) == "1"  # one symbol out of eight in
    type_source(qtbot, recall, "a3a1?a")
    assert "The keys of a recall must be distinct" in recall.input_panel.error.text()


def test_a_task_the_model_cannot_read_says_so_and_keeps_the_last_maps(qtbot, monkeypatch):
    monkeypatch.setattr(playground_state, "has_shipped", lambda _task: False)  # whatever resources/ holds by now
    view = open_view(qtbot, recipe_task("copy", "rope"))
    type_source(qtbot, view, "3141")
    pick(qtbot, view, "histogram")
    panel = view.input_panel
    assert panel.task_note.isVisible()
    assert panel.task_note.text() == (
        "No trained model ships for histogram yet, and this copy model cannot read its symbols: train one in the "
        "Trainer tab (its recipe is ready)"
    )
    assert panel.source.text() == "abcdabcda" and panel.error.isHidden()  # the task's example replaced the digits
    assert source_keys(view) == "3141"  # the copy model's last maps, said to be so over the grid
    warning = view.grids["cross"].header.warning_label
    assert not warning.isHidden() and warning.text().startswith("Not histogram: this copy model cannot read")
    type_source(qtbot, view, "abz")
    assert "Unknown symbol 'z' at position 3; histogram reads only a b c d" in panel.error.text()
    pick(qtbot, view, "copy")
    assert panel.task_note.isHidden() and warning.isHidden()


def test_a_task_the_model_can_read_runs_on_it_and_says_whose_model_it_is(qtbot, monkeypatch):
    monkeypatch.setattr(playground_state, "has_shipped", lambda _task: False)
    view = open_view(qtbot, recipe_task("copy", "rope"))
    type_source(qtbot, view, "31415")
    pick(qtbot, view, "rotate1")
    panel = view.input_panel
    assert expected_line(view) == "1 4 1 5 3" and source_keys(view) == "31415"
    assert panel.task_note.text() == (
        "No trained model ships for rotate1 yet: the maps show this copy model on it; train one in the Trainer tab "
        "(its recipe is ready)"
    )


@pytest.mark.parametrize("task", ["copy", "histogram", "dyck_depth"])
def test_an_untrained_model_of_a_task_without_a_shipped_one_says_train_it(qtbot, monkeypatch, task):
    monkeypatch.setattr(playground_state, "has_shipped", lambda _task: False)
    view = open_view(qtbot, recipe_task(task, "rope"), origin=NEW_ARCHITECTURE)
    note = view.input_panel.task_note
    assert note.isVisible() and note.text() == (
        f"No trained model ships for {task} yet: this one is untrained (its maps mean nothing); train one in the "
        "Trainer tab (its recipe is ready)"
    )
    hub = view.session.hub
    hub.adopt_weights(hub.model.state_dict(), [{"step": 1.0, "loss": 1.0}])  # trained here: the task's own model
    assert note.isHidden() and view.input_panel.error.isHidden()
