"""The window says which source lengths the model was trained on, and notes (never refuses) a source beyond them;
the Trainer tab starts from the shipped models' recipe and trains with its runs and anchors as shown."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QTextDocumentFragment
from qt_helpers import retype, start_app, wait_frame

from core_model.checkpoint import load_checkpoint, save_checkpoint

ROOT = Path(__file__).resolve().parents[2]
AMBER = QColor("#b35c00")
OPEN_MS = 30_000


@pytest.fixture
def app(qtbot):
    app = start_app(qtbot)
    yield app
    app.hub.dirty = False  # nothing to ask about on closing
    app.training.shutdown(5000)
    app.window.close()


def summary(app) -> str:
    """The Model panel's summary as a person reads it (its rich text without the tags)."""
    return QTextDocumentFragment.fromHtml(app.playground.model_panel.summary.text()).toPlainText()


def amber_pixels(label) -> int:
    """Pixels of the label painted in (near) the note's amber: text drawn in the default colour has none."""
    image = label.grab().toImage()
    count = 0
    for y in range(image.height()):
        for x in range(image.width()):
            c = image.pixelColor(x, y)
            count += abs(c.red() - AMBER.red()) + abs(c.green() - AMBER.green()) + abs(c.blue() - AMBER.blue()) < 60
    return count


def open_file(qtbot, app, path: Path) -> None:
    with qtbot.waitSignal(app.checkpoints.opened, timeout=OPEN_MS):
        app.checkpoints.open_path(path)
    wait_frame(qtbot, app.session)


def type_spin(qtbot, spin, value: int) -> None:
    spin.setFocus()
    spin.selectAll()
    qtbot.keyClicks(spin, str(value))
    assert spin.value() == value


def test_the_summary_names_the_trained_lengths_and_a_longer_source_is_noted_not_refused(qtbot, app):
    panel = app.playground.input_panel
    assert "Trained lengths: 1-16 symbols" in summary(app)  # copy_rope.pt, the shipped model at start
    retype(qtbot, panel.source, "0123456789")
    wait_frame(qtbot, app.session)
    assert panel.trained.text() == "1-16 symbols" and amber_pixels(panel.trained) == 0
    retype(qtbot, panel.source, "0123456789" * 4)
    wait_frame(qtbot, app.session)
    assert panel.trained_slot.full_text() == "1-16 symbols; this source is longer: expect mistakes"
    assert panel.trained.text().startswith("1-16 symbols; this source")  # what fits the column, the rest in "…"
    assert "this one has 40, beyond them" in panel.trained.toolTip() and "not a bug" in panel.trained.toolTip()
    assert amber_pixels(panel.trained) > 0
    assert not panel.error.isVisible()  # a note, not a refusal: the maps show all 40 symbols
    labels = app.playground.grids["encoder_self"].current_maps().key_labels
    assert labels[1:41] == tuple("0123456789" * 4)  # B 0 1 ... 9 E: the shipped RoPE model reads anchors
    retype(qtbot, panel.source, "31415926")
    wait_frame(qtbot, app.session)
    assert panel.trained.text() == "1-16 symbols"
    qtbot.waitUntil(lambda: amber_pixels(panel.trained) == 0)


def open_old_file(qtbot, app, tmp_path: Path) -> None:
    """A trained model saved without its task, as files from before tasks were stored."""
    ckpt = load_checkpoint(ROOT / "resources" / "copy_rope.pt")
    path = tmp_path / "old.pt"
    save_checkpoint(path, ckpt.build(), history=ckpt.history, extra={})
    open_file(qtbot, app, path)


def test_a_file_that_stores_no_task_says_its_trained_lengths_are_unknown(qtbot, app, tmp_path):
    open_old_file(qtbot, app, tmp_path)
    assert "Trained lengths: unknown" in summary(app) and "10 symbols" not in summary(app)
    assert app.playground.input_panel.trained_slot.full_text() == "unknown (the model's file does not say)"


def test_for_a_file_that_stores_no_task_the_trainer_starts_from_the_recipe(qtbot, app, tmp_path):
    open_old_file(qtbot, app, tmp_path)
    app.window.tabs.setCurrentWidget(app.trainer_page)
    form = app.trainer_tab.form
    qtbot.waitUntil(form.isVisible)
    assert (form.min_len_spin.value(), form.max_len_spin.value()) == (1, 16)  # not TaskSpec's one length, 10
    assert form.runs_spin.value() == 0.25 and form.anchored_check.isChecked()  # RoPE: anchored


@pytest.mark.usefixtures("one_torch_thread")
def test_untrained_then_trained_here_then_saved_and_reopened(qtbot, app, tmp_path):
    panel = app.playground.model_panel
    type_spin(qtbot, panel.spins["n_heads"], 2)  # no shipped model has 2 heads: a new, untrained one
    qtbot.mouseClick(panel.apply_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: app.hub.config.n_heads == 2, timeout=OPEN_MS)
    wait_frame(qtbot, app.session)
    assert "Trained lengths: untrained" in summary(app)
    assert app.playground.input_panel.trained_slot.full_text() == "untrained model"

    app.window.tabs.setCurrentWidget(app.trainer_page)
    tab = app.trainer_tab
    qtbot.waitUntil(tab.isVisible)
    for spin, value in ((tab.form.steps_spin, 3), (tab.form.max_len_spin, 5), (tab.form.min_len_spin, 2)):
        type_spin(qtbot, spin, value)
    assert tab.form.anchored_check.isChecked()
    qtbot.mouseClick(tab.form.anchored_check, Qt.MouseButton.LeftButton)  # train without <bos> ... <eos>
    qtbot.mouseClick(tab.scratch_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: app.training.state == "finished" and app.training.training_thread is None, timeout=60_000)
    assert "Trained lengths: 2-5 symbols" in summary(app)
    assert not app.hub.task.anchored and app.hub.task.runs == 0.25

    app.window.tabs.setCurrentWidget(app.playground)
    source, note = app.playground.input_panel.source, app.playground.input_panel.trained_slot
    retype(qtbot, source, "012345")
    wait_frame(qtbot, app.session)
    assert note.full_text() == "2-5 symbols; this source is longer: expect mistakes"
    assert app.playground.grids["encoder_self"].current_maps().key_labels[:6] == tuple("012345")  # no anchors
    retype(qtbot, source, "7")
    wait_frame(qtbot, app.session)
    assert note.full_text() == "2-5 symbols; this source is shorter: expect mistakes"

    saved = tmp_path / "mine.pt"
    with qtbot.waitSignal(app.checkpoints.saved, timeout=OPEN_MS):
        app.checkpoints.save_to(saved)
    assert load_checkpoint(saved).extra["task"]["min_len"] == 2
    open_file(qtbot, app, ROOT / "resources" / "copy_rope.pt")
    assert "Trained lengths: 1-16 symbols" in summary(app)
    open_file(qtbot, app, saved)
    assert "Trained lengths: 2-5 symbols" in summary(app)


def test_a_start_without_a_checkpoint_gives_the_trainer_the_recipe(tmp_path, one_torch_thread):
    from core_model.tasks import TaskSpec
    from visualizer.workers.loader import load_startup_model

    startup = load_startup_model(tmp_path / "missing.pt", "cpu")
    assert startup.origin == "untrained" and startup.warning.startswith("Untrained model: no checkpoint at")
    assert startup.task == TaskSpec("copy", 10, 1, 16, runs=0.25, anchored=True)  # not TaskSpec()'s one length
