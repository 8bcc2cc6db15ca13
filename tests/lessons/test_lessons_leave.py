"""A lesson leaves the app as it found it, played in the real window at 1280x800: the heads it switched off, the cells
it painted, the Heads tab's Sequences, the source, the tab and the model come back on Finish or on leaving midway,
unless the learner ticks Keep; Next lesson goes on, the course ends with a message, and the first-launch card goes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PySide6.QtCore import QPoint, QSettings, Qt
from PySide6.QtWidgets import QAbstractButton
from qt_helpers import CTRL, SHIFT, cell_pos, key, retype, shown_app, wait_frame
from test_lessons_play import app, open_lessons, press_next, start  # noqa: F401 - `app` is the shared fixture
from test_lessons_play2 import choose_from_menu, open_large, output_shown

from core_model.shipped import resource_path
from visualizer.composition import Application
from visualizer.widgets.lessons.panel import COURSE_DONE


def seen(app) -> dict[str, object]:
    """What a learner sees of the settings a lesson may change."""
    pg = app.playground
    return {
        "source": pg.input_panel.source.text(),
        "tab": app.window.tabs.tabText(app.window.tabs.currentIndex()),
        "grid": pg.grid_tabs.tabText(pg.grid_tabs.currentIndex()),
        "view": pg.view_modes.combo.currentText(),
        "sequences": app.heads_view.n_box.value(),
        "restore_heads": pg.restore_heads.isEnabled(),  # enabled while a head is off
        "painted": pg.mask_panel.painted_label.text(),
        "causal": pg.mask_panel.flag_boxes["decoder_causal"].isChecked(),
        "model": app.window.model_label.text(),
    }


def close_dock(qtbot, app) -> None:
    """The dock's own close button: the learner leaves the lesson midway."""
    dock = app.lessons.dock
    close = next(b for b in dock.findChildren(QAbstractButton) if b.isVisible() and b.parent() is dock)
    qtbot.mouseClick(close, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: app.lessons.runner.lesson is None)
    wait_frame(qtbot, app.session)


def settle(qtbot, app) -> None:
    """A Playground on a source of its own, in the Heads tab: settings a lesson changes, set before it starts."""
    retype(qtbot, app.playground.input_panel.source, "2718")
    qtbot.waitUntil(lambda: app.session.source_text == "2718")
    app.window.tabs.setCurrentWidget(app.heads_view)
    wait_frame(qtbot, app.session)


def test_finishing_lesson_three_switches_the_head_back_on_and_puts_back_the_sequences(qtbot, app):
    settle(qtbot, app)
    before, badges = seen(app), app.badges["cross"].texts()
    panel, runner = start(qtbot, app, "Break it: switch a head off"), app.lessons.runner
    choose_from_menu(qtbot, app.playground.grids["cross"], 1, 1, "Ablate L2 H2 (cross)")
    qtbot.waitUntil(lambda: runner.done, timeout=20_000)
    press_next(qtbot, app, panel)
    key(qtbot, app, Qt.Key.Key_4, CTRL)
    key(qtbot, app, Qt.Key.Key_A, CTRL | SHIFT)
    qtbot.waitUntil(lambda: runner.done, timeout=60_000)
    assert seen(app)["sequences"] == 30 and seen(app)["restore_heads"]  # what the lesson set
    qtbot.mouseClick(panel.next_button, Qt.MouseButton.LeftButton)  # Finish
    qtbot.waitUntil(lambda: runner.lesson is None)
    wait_frame(qtbot, app.session)
    assert seen(app) == before
    assert not any(np.any(~gates) for gates in app.session.gates().values())
    line = panel.end_label.text()
    assert panel.end_label.isVisible() and line.startswith("Put back as you had it before the lesson: ")
    assert "the heads switched on and off" in line and "the Heads tab's Sequences" in line and "the source" in line
    qtbot.waitUntil(lambda: app.badges["cross"].texts() == badges, timeout=60_000)  # scored on as many as before


def test_leaving_lesson_four_midway_clears_the_painted_cell_and_the_model_writes_right_again(qtbot, app):
    settle(qtbot, app)
    before = seen(app)
    panel, runner = start(qtbot, app, "Masks: what the decoder may not see"), app.lessons.runner
    box = app.playground.mask_panel.flag_boxes["decoder_causal"]
    qtbot.mouseClick(box, Qt.MouseButton.LeftButton, pos=QPoint(8, box.height() // 2))
    qtbot.waitUntil(lambda: runner.done, timeout=20_000)
    press_next(qtbot, app, panel)
    dialog = open_large(qtbot, app, "cross", 1, 1)
    qtbot.mouseClick(dialog.paint_button, Qt.MouseButton.LeftButton)
    qtbot.mouseClick(dialog.graphics.viewport(), Qt.MouseButton.LeftButton, pos=cell_pos(dialog, 1, 2))
    qtbot.waitUntil(lambda: runner.done, timeout=20_000)
    assert "1 cross" in app.playground.mask_panel.painted_label.text()
    close_dock(qtbot, app)  # midway: the lesson has a step left
    assert seen(app) == before and not dialog.isVisible()
    prediction, expected, wrong = output_shown(app)
    assert (
        wrong == "0" and prediction.split()[: len(expected.split())] == expected.split()
    )  # no painted cell: a right copy again


def test_keep_the_changes_leaves_the_head_switched_off(qtbot, app):
    panel, runner = start(qtbot, app, "Break it: switch a head off"), app.lessons.runner
    assert panel.keep_box.isVisible() and not panel.keep_box.isChecked()
    choose_from_menu(qtbot, app.playground.grids["cross"], 1, 1, "Ablate L2 H2 (cross)")
    qtbot.waitUntil(lambda: runner.done, timeout=20_000)
    qtbot.mouseClick(panel.keep_box, Qt.MouseButton.LeftButton, pos=QPoint(8, panel.keep_box.height() // 2))
    assert panel.keep_box.isChecked()
    close_dock(qtbot, app)
    off = {kind: np.argwhere(~gates).tolist() for kind, gates in app.session.gates().items()}
    assert off["cross"] == [[1, 1]] and app.playground.restore_heads.isEnabled()
    assert app.session.source_text == "947196593423"  # the lesson's source stays too
    assert panel.end_label.text().startswith("Kept as the lesson left them: the model, the heads switched off")


@pytest.fixture
def sinusoidal_app(qtbot):
    """The app on a model the lessons do not open first: a lesson must bring it back."""
    app = shown_app(qtbot, resource_path("copy_sinusoidal.pt"))
    qtbot.waitUntil(lambda: app.lessons is not None and app.lessons.loaded, timeout=60_000)
    qtbot.waitUntil(lambda: app.heads.roles is not None, timeout=60_000)
    wait_frame(qtbot, app.session)
    yield app
    app.hub.dirty = False
    app.window.close()


def test_a_lesson_that_opened_another_model_brings_back_the_learners_one_and_undo_the_lessons(qtbot, sinusoidal_app):
    app = sinusoidal_app
    before = seen(app)
    assert "sinusoidal PE" in before["model"]
    start(qtbot, app, "What one attention map is")
    assert app.hub.path.name == "copy_rope.pt" and "rope PE" in app.window.model_label.text()
    close_dock(qtbot, app)
    assert app.hub.path.name == "copy_sinusoidal.pt" and seen(app) == before
    undo = next(a for a in app.window.model_menu.actions() if a.text().startswith("&Undo"))
    assert undo.isEnabled() and undo.text() == "&Undo end of lesson"
    undo.trigger()  # the model the lesson left is one Model > Undo away
    qtbot.waitUntil(lambda: app.hub.path is not None and app.hub.path.name == "copy_rope.pt")


def test_next_lesson_finishes_this_one_and_starts_the_next(qtbot, app):
    from test_lessons_play import rest_on_large_cell

    panel, runner = start(qtbot, app, "What one attention map is"), app.lessons.runner
    assert not panel.next_lesson_button.isVisible()  # only on a last step
    press_next(qtbot, app, panel)
    assert panel.next_lesson_button.isVisible() and not panel.next_lesson_button.isEnabled()
    large = app.playground.grids["cross"].large_view
    qtbot.waitUntil(large.is_visible)
    rest_on_large_cell(qtbot, runner, large.dialog, 2, 3)
    assert panel.next_lesson_button.isEnabled()
    qtbot.mouseClick(panel.next_lesson_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: runner.ready, timeout=30_000)
    assert panel.title_label.text() == "Copying is a diagonal" and panel.progress_label.text() == "Step 1 of 3"
    assert panel.lesson_list.item(0).text().startswith("✓ 1.") and panel.lesson_list.currentRow() == 1


def two_lessons(folder: Path) -> Path:
    folder.mkdir()
    for order in (1, 2):
        (folder / f"0{order}.toml").write_text(
            f'title = "Lesson {order}"\norder = {order}\n[[steps]]\nsay = "Read this, then press Next."\n'
        )
    return folder


@pytest.mark.first_launch
def test_the_card_goes_when_a_lesson_starts_and_the_last_lesson_ends_the_course(qtbot, tmp_path):
    app = Application(checkpoint=resource_path("copy_rope.pt"), device="cpu", lessons=two_lessons(tmp_path / "l"))
    qtbot.addWidget(app.window)
    app.window.resize(1280, 800)
    app.window.show()
    app.start_loading()
    qtbot.waitUntil(lambda: app.lessons is not None and app.lessons.loaded, timeout=60_000)
    card = app.lessons.card
    assert card.isVisible()  # a first launch offers lesson one
    panel = open_lessons(qtbot, app)
    qtbot.mouseClick(panel.start_button, Qt.MouseButton.LeftButton)  # from the dock, not the card
    qtbot.waitUntil(lambda: app.lessons.runner.ready, timeout=30_000)
    assert not card.isVisible() and QSettings().value("lessons/first_card_done", type=bool)
    assert panel.next_lesson_button.isVisible() and panel.next_lesson_button.isEnabled()
    qtbot.mouseClick(panel.next_lesson_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: app.lessons.runner.ready and panel.title_label.text() == "Lesson 2", timeout=30_000)
    assert not panel.next_lesson_button.isVisible() and panel.next_button.text() == "Finish"  # the last lesson
    qtbot.mouseClick(panel.next_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: app.lessons.runner.lesson is None)
    assert panel.title_label.text() == "Course complete" and panel.explain_label.text() == COURSE_DONE
    assert panel.explain_label.isVisible() and not card.isVisible()
    app.window.close()


def test_leaving_while_the_lessons_model_is_still_read_brings_back_the_learners_one(qtbot, sinusoidal_app):
    app = sinusoidal_app
    panel = open_lessons(qtbot, app)
    qtbot.mouseClick(panel.start_button, Qt.MouseButton.LeftButton)  # lesson 1 opens copy_rope.pt in the background
    assert app.checkpoints.opening
    close_dock(qtbot, app)  # before the file was read
    qtbot.waitUntil(lambda: not app.checkpoints.opening, timeout=30_000)
    wait_frame(qtbot, app.session)
    assert app.hub.path.name == "copy_sinusoidal.pt" and "sinusoidal PE" in app.window.model_label.text()
