"""Picking any task of the registry in the real window: a task with a shipped model loads it; one without gets an
untrained model of its vocabulary, says so at the chooser and presets the Trainer to its recipe; the user's own model
is replaced only when they agree; a task the current model reads runs on it until one is trained."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import Qt, QThreadPool
from PySide6.QtWidgets import QApplication
from qt_helpers import wait_frame
from test_task_autoload import close_window, open_window, own_copy_model

import core_model.shipped as shipped
import visualizer.controllers.architecture as architecture
from core_model.recipe import recipe_task
from core_model.shipped import SHIPPED_MODELS, resource_path
from core_model.tasks import task_named

LOAD_MS = 20_000
NEW_TASKS_SHIPPED = [task for task, encodings in SHIPPED_MODELS.items() if task != "copy" and "rope" in encodings]


@pytest.fixture
def unshipped(monkeypatch):
    """Hide the shipped files of the given tasks (their models arrive in resources/ task by task)."""

    def hide(*tasks: str) -> None:
        def path(name: str) -> Path:
            hidden = any(name.startswith(f"{task}_") for task in tasks)
            return Path("/nonexistent") / name if hidden else resource_path(name)

        monkeypatch.setattr(shipped, "resource_path", path)  # what has_shipped and find_shipped_checkpoint read

    return hide


def pick(qtbot, app, task: str) -> None:
    """Choose `task` in the real combo: its name typed into the closed combo, as a keyboard user jumps to it."""
    combo = app.playground.input_panel.task
    combo.setFocus()
    qtbot.wait(QApplication.keyboardInputInterval() + 50)  # a new search, not the last one's letters
    qtbot.keyClicks(combo, task)
    assert combo.currentData() == task


def idle(qtbot) -> None:
    pool = QThreadPool.globalInstance()
    qtbot.waitUntil(lambda: pool.activeThreadCount() == 0, timeout=LOAD_MS)
    qtbot.wait(200)  # the last result's delivery


def trainer_form(qtbot, app):
    qtbot.keyClick(app.window, Qt.Key.Key_3, Qt.KeyboardModifier.ControlModifier)  # the Trainer tab
    return app.trainer_tab.form


def test_a_task_without_a_shipped_model_gets_an_untrained_one_and_the_trainer_its_recipe(qtbot, unshipped):
    unshipped("histogram")
    app = open_window(qtbot, None)  # the shipped copy_rope.pt
    wait_frame(qtbot, app.session)
    pick(qtbot, app, "histogram")
    qtbot.waitUntil(lambda: app.hub.task.task == "histogram", timeout=LOAD_MS)
    wait_frame(qtbot, app.session)
    panel = app.playground.input_panel
    assert app.hub.origin.startswith("untrained") and app.hub.config.vocab_size == 16  # a b c d and 1-9
    assert panel.task_note.isVisible() and panel.task_note.text() == (
        "No trained model ships for histogram yet: this one is untrained (its maps mean nothing); train one in the "
        "Trainer tab (its recipe is ready)"
    )
    assert "No trained model ships for histogram yet" in app.window.statusBar().currentMessage()
    assert panel.source.text() == "abcdabcda" and panel.error.isHidden()
    keys = app.playground.grids["cross"].current_maps().key_labels
    assert keys[:11] == ("<bos>", *"abcdabcda", "<eos>")
    assert panel.expected.toolTip().endswith("3 2 2 2 3 2 2 2 3")
    form = trainer_form(qtbot, app)
    spec = form.task_spec()
    assert spec == recipe_task("histogram", "rope")
    assert (form.symbols_spin.minimum(), form.symbols_spin.maximum()) == (1, 26) and form.symbols_spin.isEnabled()
    assert form.max_len_spin.maximum() == 9 and form.probe_edit.text() == "abcdabcda"
    assert app.trainer_tab.scratch_button.isEnabled() and app.trainer_tab.train_button.isEnabled()
    app.menus.undo.trigger()  # Model > Undo: the shipped copy model again, and its task
    assert app.hub.path.name == "copy_rope.pt" and panel.task.currentData() == "copy"
    close_window(qtbot, app)


def test_an_own_model_the_task_cannot_use_is_kept_when_the_user_says_so(qtbot, tmp_path, monkeypatch, unshipped):
    unshipped("dyck_depth")
    own = own_copy_model(tmp_path)
    asked: list[str] = []
    monkeypatch.setattr(architecture, "_ask_build_untrained", lambda parent, text: asked.append(text) or False)
    app = open_window(qtbot, own)
    wait_frame(qtbot, app.session)
    pick(qtbot, app, "dyck_depth")
    qtbot.waitUntil(lambda: len(asked) == 1, timeout=LOAD_MS)
    assert asked[0].startswith("No trained model ships for dyck_depth yet, and the current model")
    idle(qtbot)
    panel = app.playground.input_panel
    assert app.hub.path == own and panel.task.currentData() == "dyck_depth"
    assert panel.task_note.text().startswith("No trained model ships for dyck_depth yet, and this copy model cannot")
    assert panel.source.text() == "(((())))()()()()" and panel.error.isHidden()
    form = trainer_form(qtbot, app)
    assert form.task_combo.currentText() == "dyck_depth" and not form.symbols_spin.isEnabled()
    assert "alphabet is fixed" in form.symbols_spin.toolTip()
    close_window(qtbot, app)


def test_a_task_the_model_reads_runs_on_it_until_one_is_trained(qtbot, unshipped):
    unshipped("rotate1")
    app = open_window(qtbot, None)
    wait_frame(qtbot, app.session)
    field = app.playground.input_panel.source
    field.selectAll()
    qtbot.keyClicks(field, "31415")
    pick(qtbot, app, "rotate1")
    idle(qtbot)
    wait_frame(qtbot, app.session)
    panel = app.playground.input_panel
    assert app.hub.path.name == "copy_rope.pt"  # kept: it reads rotate1's digits
    assert panel.expected.toolTip().endswith("1 4 1 5 3")
    assert panel.task_note.text().startswith("No trained model ships for rotate1 yet: the maps show this copy model")
    form = trainer_form(qtbot, app)
    assert form.task_spec() == recipe_task("rotate1", "rope")
    close_window(qtbot, app)


@pytest.mark.skipif(not NEW_TASKS_SHIPPED, reason="no task besides copy ships a RoPE model")
@pytest.mark.parametrize("task", NEW_TASKS_SHIPPED)
def test_picking_a_task_loads_its_shipped_model(qtbot, task):
    app = open_window(qtbot, None)
    wait_frame(qtbot, app.session)
    pick(qtbot, app, task)
    qtbot.waitUntil(lambda: app.hub.path is not None and app.hub.path.name == f"{task}_rope.pt", timeout=LOAD_MS)
    wait_frame(qtbot, app.session)
    panel, spec = app.playground.input_panel, app.hub.task
    source = app.session.source_text
    assert spec.task == task and spec.source_problem(spec.vocabulary.encode(source)) is None
    answer = " ".join(spec.vocabulary.tokens(spec.expected(spec.vocabulary.encode(source))))
    qtbot.waitUntil(lambda: panel.expected.toolTip().endswith(answer))
    assert panel.task_note.isHidden() and panel.error.isHidden()
    assert panel.asks.text() == task_named(task).description
    close_window(qtbot, app)
