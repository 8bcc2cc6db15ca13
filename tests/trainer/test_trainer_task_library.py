"""The Trainer's form for every task of the registry: the task box lists them all, picking one fills in its recipe,
the symbols and length boxes take what the task takes (a fixed alphabet has nothing to choose and says why), the
vocabulary and probe are checked against the task's own, and Train from scratch builds a model that fits it."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication
from qt_helpers import show_trainer_tab
from test_trainer_tab import WAIT_MS, _finished, _type_into

from core_model.recipe import recipe_task, task_train_config
from core_model.tasks import TASKS

CLICK = Qt.MouseButton.LeftButton


def choose(qtbot, combo, name: str) -> None:
    """Pick `name` in the task box by typing it into the closed box, as a keyboard user jumps to an entry."""
    combo.setFocus()
    qtbot.wait(QApplication.keyboardInputInterval() + 50)  # a new search, not the last one's letters
    qtbot.keyClicks(combo, name)
    assert combo.currentText() == name


@pytest.fixture
def tab(qtbot, hub, state):
    return show_trainer_tab(qtbot, hub, state, (1280, 800))


def test_the_task_box_lists_every_task_and_picking_one_fills_in_its_recipe(qtbot, tab, hub):
    form = tab.form
    combo = form.task_combo
    assert [combo.itemText(i) for i in range(combo.count())] == list(TASKS)
    assert all(
        combo.itemData(i, Qt.ItemDataRole.ToolTipRole) == TASKS[combo.itemText(i)].description for i in range(14)
    )
    choose(qtbot, combo, "histogram")
    assert form.task_spec() == recipe_task("histogram", hub.config.positional, model_max_len=hub.config.max_len)
    assert (form.symbols_spin.minimum(), form.symbols_spin.maximum(), form.symbols_spin.value()) == (1, 26, 4)
    assert form.symbols_spin.isEnabled() and form.symbols_spin.toolTip().startswith(
        "histogram's size: its number of letters, 1 to 26."
    )
    assert (form.max_len_spin.maximum(), form.max_len_spin.value()) == (9, 9)
    assert form.probe_edit.text() == "abcdabcda" and form.errors["probe"].isHidden()
    choose(qtbot, combo, "dyck_depth")
    assert not form.symbols_spin.isEnabled() and form.symbols_spin.value() == 2
    assert form.symbols_spin.toolTip() == "dyck_depth's alphabet is fixed (alphabet size: 2): nothing to choose here"


def test_the_vocabulary_check_is_the_tasks_and_train_from_scratch_builds_one_that_fits(qtbot, tab, hub, state):
    form = tab.form
    choose(qtbot, form.task_combo, "histogram")  # a b c d and the counts 1-9: vocab_size 16, the model has 8
    error = form.errors["symbols"]
    assert error.isVisible() and error.text().startswith("histogram needs vocab_size 16")
    assert not tab.train_button.isEnabled() and tab.scratch_button.isEnabled()  # a new model takes what it needs
    form.steps_spin.setValue(3)
    qtbot.mouseClick(tab.scratch_button, CLICK)
    qtbot.waitUntil(lambda: _finished(state), timeout=WAIT_MS)
    assert hub.config.vocab_size == 16 and hub.config.d_model == 16 and hub.task.task == "histogram"
    assert state.state == "finished" and error.isHidden() and tab.train_button.isEnabled()


def test_the_lengths_and_the_probe_follow_the_tasks_rules(qtbot, tab):
    form = tab.form
    choose(qtbot, form.task_combo, "addition")
    _type_into(qtbot, form.min_len_spin, "4")
    _type_into(qtbot, form.max_len_spin, "4")  # an addition has 2m + 1 symbols
    error = form.errors["max_len"]
    assert error.isVisible() and "hold none addition takes" in error.text()
    assert not tab.scratch_button.isEnabled()
    _type_into(qtbot, form.max_len_spin, "7")
    assert error.isHidden()
    form.probe_edit.clear()
    qtbot.keyClicks(form.probe_edit, "12+3")
    assert form.errors["probe"].text().startswith("An addition needs one '+' between two numbers of equal length")
    assert not tab.scratch_button.isEnabled()
    form.probe_edit.clear()
    qtbot.keyClicks(form.probe_edit, "12+34")
    assert form.errors["probe"].isHidden() and tab.scratch_button.isEnabled()


def test_picking_a_task_fills_in_the_steps_rate_and_batch_it_trains_with_and_keeps_the_seed(qtbot, tab, hub):
    form = tab.form
    assert (form.steps_spin.value(), form.lr_spin.value()) == (300, 0.006)  # copy trains fast
    _type_into(qtbot, form.seed_spin, "7")
    choose(qtbot, form.task_combo, "recall")  # it waits on a plateau: many gentle steps on larger batches
    shown = (form.steps_spin.value(), form.lr_spin.value(), form.batch_spin.value())
    assert shown == (6000, 0.001, 64) and form.seed_spin.value() == 7
    wanted = task_train_config("recall", hub.config.positional)
    assert shown == (wanted.steps, wanted.lr, wanted.batch_size)
    choose(qtbot, form.task_combo, "copy")
    assert (form.steps_spin.value(), form.lr_spin.value(), form.batch_spin.value()) == (300, 0.006, 32)
