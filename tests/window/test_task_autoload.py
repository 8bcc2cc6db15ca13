"""Picking a task in the Playground loads the shipped model for it (and the current encoding), never losing work."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt, QThreadPool
from qt_helpers import wait_frame

import visualizer.controllers.architecture as architecture
from core_model import ModelConfig, build_model
from core_model.checkpoint import save_checkpoint
from visualizer.composition import Application


def open_window(qtbot, checkpoint: Path | None) -> Application:
    app = Application(checkpoint=checkpoint)
    qtbot.addWidget(app.window)
    with qtbot.waitExposed(app.window):
        app.window.show()
    app.start_loading()
    qtbot.waitUntil(lambda: app.hub is not None, timeout=30000)
    return app


def close_window(qtbot, app: Application) -> None:
    app.hub.dirty = False
    app.window.close()
    qtbot.waitUntil(lambda: not app.window.isVisible(), timeout=5000)


def own_copy_model(tmp_path: Path) -> Path:
    """A copy model of the user's own (a file of theirs, not a shipped one), with the shipped architecture."""
    return save_checkpoint(
        tmp_path / "mine.pt",
        build_model(ModelConfig(), seed=3),
        extra={"task": {"task": "copy", "n_symbols": 10, "min_len": 1, "max_len": 10}},
    )


def pick_task(qtbot, app: Application, task: str) -> None:
    """Choose `task` in the real combo with the keyboard, as a user does."""
    combo = app.playground.input_panel.task
    combo.setFocus()
    while combo.currentData() != task:
        qtbot.keyClick(combo, Qt.Key.Key_Down)


def run_to_end(qtbot, app: Application) -> str:
    panel = app.playground.decoder_panel
    qtbot.mouseClick(panel.buttons["run"], Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: panel.summary.text().startswith("Done"), timeout=10000)
    return panel.summary.text()


def test_choosing_reverse_loads_the_shipped_reverse_model_and_it_reverses(qtbot):
    app = open_window(qtbot, None)  # starts with the shipped copy_rope.pt
    assert app.hub.path.name == "copy_rope.pt"
    pick_task(qtbot, app, "reverse")
    qtbot.waitUntil(lambda: app.hub.path is not None and app.hub.path.name == "reverse_rope.pt", timeout=20000)
    assert app.hub.task.task == "reverse" and app.playground.input_panel.task.currentData() == "reverse"
    assert "reverse_rope.pt" in app.window.windowTitle()
    wait_frame(qtbot, app.session)  # the new model's first frame is drawn after it loads, not with it
    assert app.playground.input_panel.expected.toolTip().endswith("9 8 7 6 5 4 3 2 1 0")  # the default source reversed
    assert run_to_end(qtbot, app) == "Done: output matches the expected output"
    pick_task(qtbot, app, "sort")
    qtbot.waitUntil(lambda: app.hub.path.name == "sort_rope.pt", timeout=20000)
    close_window(qtbot, app)


def test_an_own_model_is_replaced_only_when_the_user_agrees(qtbot, tmp_path, monkeypatch):
    own = own_copy_model(tmp_path)
    asked: list[str] = []
    answers = iter([False, True])
    monkeypatch.setattr(architecture, "_ask_load_shipped", lambda parent, text: asked.append(text) or next(answers))
    app = open_window(qtbot, own)
    pick_task(qtbot, app, "reverse")
    qtbot.waitUntil(lambda: len(asked) == 1, timeout=20000)
    assert "Load the shipped reverse model?" in asked[0] and "Undo" in asked[0]
    qtbot.wait(200)
    assert app.hub.path == own  # kept: the user said no
    pick_task(qtbot, app, "sort")
    qtbot.waitUntil(lambda: app.hub.path is not None and app.hub.path.name == "sort_rope.pt", timeout=20000)
    assert len(asked) == 2
    app.architecture.restore_previous()  # the own model is one undo away
    assert app.hub.path == own
    close_window(qtbot, app)


def test_an_architecture_without_shipped_models_keeps_its_model(qtbot, tmp_path):
    small = save_checkpoint(
        tmp_path / "small.pt",
        build_model(ModelConfig(d_model=32), seed=1),
        extra={"task": {"task": "copy", "n_symbols": 10, "min_len": 1, "max_len": 10}},
    )
    app = open_window(qtbot, small)
    pick_task(qtbot, app, "reverse")
    qtbot.wait(500)
    assert app.hub.path == small and app.playground.input_panel.task.currentData() == "reverse"
    close_window(qtbot, app)


def test_a_restored_task_loads_its_shipped_model_at_start(qtbot):
    from PySide6.QtCore import QSettings

    QSettings().setValue("input/task", "sort")  # the last session ended on sort
    app = open_window(qtbot, None)
    qtbot.waitUntil(lambda: app.hub.path is not None and app.hub.path.name == "sort_rope.pt", timeout=20000)
    assert app.playground.input_panel.task.currentData() == "sort"
    assert run_to_end(qtbot, app) == "Done: output matches the expected output"
    close_window(qtbot, app)


def test_continue_training_keeps_the_shipped_models_anchored_sources(qtbot):
    """The Trainer form has no field for `anchored` or `runs`: it keeps the loaded model's, so training goes on
    reading sources the way the model learned to."""
    app = open_window(qtbot, None)
    qtbot.keyClick(app.window, Qt.Key.Key_3, Qt.KeyboardModifier.ControlModifier)  # the Trainer tab
    spec = app.trainer_tab.form.task_spec()
    assert (spec.task, spec.anchored, spec.runs, spec.max_len) == ("copy", True, 0.25, 16)
    close_window(qtbot, app)


def test_closing_the_window_while_the_shipped_model_loads_asks_nothing_afterwards(qtbot, tmp_path, monkeypatch):
    from visualizer.workers.tasks import wait_for_tasks

    own = own_copy_model(tmp_path)
    asked: list[str] = []
    monkeypatch.setattr(architecture, "_ask_load_shipped", lambda parent, text: asked.append(text) or True)
    app = open_window(qtbot, own)
    pick_task(qtbot, app, "reverse")  # the shipped reverse model is read in the background...
    close_window(qtbot, app)  # ...while the user closes the window
    assert wait_for_tasks(20_000)
    qtbot.wait(300)  # the read's result is delivered to the closed window
    assert asked == [] and app.hub.path == own


def test_the_task_picked_last_wins_whichever_shipped_file_is_read_first(qtbot):
    """Down, Down through the combo passes reverse on the way to sort: both loads start (reverse's a few ms ahead,
    so it is read first), and the hub must end on the user's last pick, with the passed-over model never shown."""
    app = open_window(qtbot, None)
    wait_frame(qtbot, app.session)
    arrived: list[str] = []
    app.hub.model_changed.connect(lambda: arrived.append(app.hub.task.task))
    pick_task(qtbot, app, "reverse")
    qtbot.wait(5)  # its load starts first: reading and building a checkpoint takes far longer than this
    pick_task(qtbot, app, "sort")
    qtbot.waitUntil(lambda: app.hub.path.name == "sort_rope.pt", timeout=20000)
    qtbot.wait(300)
    assert arrived == ["sort"] and app.playground.input_panel.task.currentData() == "sort"
    close_window(qtbot, app)


def test_going_back_to_the_task_shown_drops_the_load_of_the_one_passed(qtbot):
    """Down then Up: reverse is picked and its file starts loading, then copy, the task the model already has, is
    picked again. The reverse model must not arrive afterwards."""
    app = open_window(qtbot, None)
    wait_frame(qtbot, app.session)
    arrived: list[str] = []
    app.hub.model_changed.connect(lambda: arrived.append(app.hub.task.task))
    pick_task(qtbot, app, "reverse")
    combo = app.playground.input_panel.task
    qtbot.keyClick(combo, Qt.Key.Key_Up)  # back to copy before the reverse file is read
    assert combo.currentData() == "copy"
    pool = QThreadPool.globalInstance()
    qtbot.waitUntil(lambda: pool.activeThreadCount() == 0, timeout=20000)
    qtbot.wait(300)
    assert arrived == [] and app.hub.path.name == "copy_rope.pt" and combo.currentData() == "copy"
    close_window(qtbot, app)
