"""Texts that state the present: the status bar, Model > Undo, the Heads tab and the beam note follow the model they
describe, and Train from scratch asks before it replaces unsaved training. Each test drives the whole window."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QApplication, QLabel, QMessageBox
from qt_helpers import retype, start_app, wait_frame
from test_task_autoload import pick_task

from core_model import ModelConfig, build_model
from core_model.checkpoint import save_checkpoint
from visualizer.composition import Application

WAIT_MS = 60_000


def _open(qtbot, checkpoint: Path | None, size: tuple[int, int] = (1280, 800)) -> Application:
    app = Application(checkpoint=checkpoint)  # closed by the fixture, after it lets go of unsaved training
    app.window.resize(*size)
    with qtbot.waitExposed(app.window):
        app.window.show()
    app.start_loading()
    qtbot.waitUntil(lambda: app.hub is not None, timeout=30_000)
    wait_frame(qtbot, app.session)
    return app


@pytest.fixture
def app(qtbot, tmp_path):
    """The window at 1280x800 on a small own model (4 heads, d_model 32): no shipped model has its shape."""
    model = build_model(ModelConfig(d_model=32, n_heads=4, d_ff=64, positional="sinusoidal"), seed=1)
    path = save_checkpoint(
        tmp_path / "tiny.pt", model, extra={"task": {"task": "copy", "n_symbols": 10, "min_len": 1, "max_len": 10}}
    )
    app = _open(qtbot, path)
    yield app
    app.training.shutdown(20_000)  # whatever a failing test left running or unsaved must not ask at closing
    app.hub.dirty = False
    app.window.close()
    qtbot.waitUntil(lambda: not app.window.isVisible(), timeout=5000)


def _apply_heads(qtbot, app: Application, heads: int) -> None:
    """Model panel: set the number of heads and press Apply, then wait for the new model."""
    panel = app.playground.model_panel
    panel.spins["n_heads"].setValue(heads)
    qtbot.mouseClick(panel.apply_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: app.hub.config.n_heads == heads and app.architecture.pending == 0, timeout=WAIT_MS)


def _train_from_scratch(qtbot, app: Application, steps: int = 5) -> None:
    app.window.tabs.setCurrentWidget(app.trainer_page)
    tab = app.trainer_tab
    qtbot.waitUntil(tab.isVisible)
    tab.form.steps_spin.setValue(steps)
    qtbot.mouseClick(tab.scratch_button, Qt.MouseButton.LeftButton)


def _wait_trained(qtbot, app: Application) -> None:
    qtbot.waitUntil(lambda: app.training.state == "finished" and app.training.training_thread is None, timeout=WAIT_MS)


def _last_ink_x(image, right: int) -> int:
    """The rightmost column left of `right` where the status bar has dark (text) pixels; -1 when none."""
    for x in range(min(right, image.width()) - 1, -1, -1):
        if any(QColor(image.pixel(x, y)).lightness() < 128 for y in range(image.height())):
            return x
    return -1


def test_a_long_status_message_stops_short_of_the_model_summary(qtbot, app):
    bar = app.window.statusBar()
    _apply_heads(qtbot, app, 2)
    assert bar.currentMessage().startswith("Built a new, untrained model")
    QApplication.processEvents()
    summary = app.window.model_label
    assert summary.text().startswith("sinusoidal PE") and summary.isVisible()
    ink = _last_ink_x(bar.grab().toImage(), summary.x())
    assert 0 < ink <= summary.x() - 10, (ink, summary.x())  # a gap before the summary, not letters against it


def test_undo_replaces_the_untrained_message(qtbot, app):
    bar = app.window.statusBar()
    _apply_heads(qtbot, app, 2)
    assert bar.currentMessage().startswith("Built a new, untrained model")
    app.menus.undo.trigger()  # Model > Undo architecture change
    assert app.hub.config.n_heads == 4
    assert "untrained" not in bar.currentMessage()
    assert bar.currentMessage() == "Undid architecture change: the model is tiny.pt again (copy task)."


def test_model_undo_names_what_it_undoes(qtbot, app):
    undo = app.menus.undo
    assert not undo.isEnabled()
    _train_from_scratch(qtbot, app)
    _wait_trained(qtbot, app)
    assert undo.isEnabled() and undo.text() == "&Undo Train from scratch"
    app.hub.dirty = False  # as if saved: Apply does not ask
    _apply_heads(qtbot, app, 2)
    assert undo.text() == "&Undo architecture change"
    assert "architecture change" in undo.statusTip()
    undo.trigger()
    assert app.hub.config.n_heads == 4 and undo.text() == "&Undo Train from scratch"
    undo.trigger()
    assert app.hub.path.name == "tiny.pt" and not undo.isEnabled()


def _answer_next_box(button: QMessageBox.StandardButton, seen: list[str]) -> None:
    """Click `button` on the next modal message box (which blocks until answered) and record its text."""
    tries = iter(range(300))  # 3 s at most: a box that never comes must not leave this timer to later tests

    def look() -> None:
        box = QApplication.activeModalWidget()
        if isinstance(box, QMessageBox):
            seen.append(box.text())
            box.button(button).click()
        elif next(tries, None) is not None:
            QTimer.singleShot(10, look)

    QTimer.singleShot(10, look)


@pytest.mark.real_dialogs
def test_train_from_scratch_asks_before_replacing_unsaved_training_and_cancel_keeps_it(qtbot, app):
    _train_from_scratch(qtbot, app)
    _wait_trained(qtbot, app)
    hub, tab = app.hub, app.trainer_tab
    assert hub.dirty and "unsaved training" in app.window.model_label.text()
    model, history, depth = hub.model, list(hub.history), hub.undo_depth
    weights = {k: v.clone() for k, v in model.state_dict().items()}
    curve = tab.curves.curves["loss"].getData()[0].tolist()
    seen: list[str] = []
    _answer_next_box(QMessageBox.StandardButton.Cancel, seen)
    qtbot.mouseClick(tab.scratch_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: bool(seen), timeout=5000)
    assert "unsaved training" in seen[0] and "Train from scratch" in seen[0]
    assert (
        app.training.state == "finished" and hub.model is model
    )  # a start would have set "running" in the click and hub.history == history and hub.dirty
    assert all(torch.equal(weights[k], v) for k, v in hub.model.state_dict().items())
    assert hub.undo_depth == depth and tab.curves.curves["loss"].getData()[0].tolist() == curve
    _answer_next_box(QMessageBox.StandardButton.Discard, seen)
    qtbot.mouseClick(tab.scratch_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: len(seen) == 2, timeout=5000)
    _wait_trained(qtbot, app)
    assert hub.model is not model and hub.undo_depth == depth + 1
    app.menus.undo.trigger()  # the discarded training is still one undo away
    assert hub.model is model and hub.history == history


def test_the_heads_tab_marks_an_analysis_of_another_model_as_out_of_date(qtbot):
    app = start_app(qtbot, (1280, 800))  # the shipped copy_rope.pt
    try:
        view = app.heads_view
        qtbot.waitUntil(lambda: app.heads.roles is not None, timeout=WAIT_MS)
        app.window.tabs.setCurrentWidget(view)
        view.n_box.setValue(8)
        with qtbot.waitSignal(app.heads.frame_changed, timeout=120_000):
            qtbot.mouseClick(view.run_button, Qt.MouseButton.LeftButton)
        assert view.status.text().startswith("Analysed") and "8 copy sequences" in view.status.text()
        analysis = app.heads.analysis
        next(a for a in app.menus.device.actions() if a.text() == "cpu").trigger()  # the same weights elsewhere
        assert app.heads.analysis is analysis and view.status.text().startswith("Analysed")
        assert not [w for w in view.findChildren(QLabel) if w.isVisible() and w.text().startswith("Out of date")]
        app.window.tabs.setCurrentWidget(app.playground)
        pick_task(qtbot, app, "reverse")
        qtbot.waitUntil(lambda: app.hub.path is not None and app.hub.path.name == "reverse_rope.pt", timeout=WAIT_MS)
        app.window.tabs.setCurrentWidget(view)
        shown = [w.text() for w in view.findChildren(QLabel) if w.isVisible()]
        assert not [t for t in shown if t.startswith("Analysed")]  # the old analysis line is gone
        flagged = [w for w in view.findChildren(QLabel) if w.isVisible() and w.text().startswith("Out of date")]
        assert len(flagged) == 1
        assert "copy_rope.pt on copy sequences" in flagged[0].text()
        assert "now reverse_rope.pt (reverse task)" in flagged[0].text()
        colour = QColor(flagged[0].grab().toImage().pixel(2, 2))
        assert (colour.red(), colour.green(), colour.blue()) == (0xFF, 0xF3, 0xCD)  # the warning banner's colour
        with qtbot.waitSignal(app.heads.frame_changed, timeout=120_000):
            qtbot.mouseClick(view.run_button, Qt.MouseButton.LeftButton)
        assert not flagged[0].isVisible()
        heads = len(app.heads.analysis.heads)
        assert view.status.text() == f"Analysed {heads} heads of reverse_rope.pt on 8 reverse sequences (seed 1234)."
    finally:
        app.heads.shutdown(30_000)
        app.window.close()


def test_the_beam_note_says_the_model_changed_when_it_did(qtbot, app):
    panel = app.beam_panel
    with qtbot.waitSignal(app.beam.outcome_changed, timeout=WAIT_MS):
        qtbot.mouseClick(panel.run_button, Qt.MouseButton.LeftButton)
    _apply_heads(qtbot, app, 2)
    wait_frame(qtbot, app.session)
    assert panel.status.text() == "The model changed since this search: press Run again"
    retype(qtbot, app.playground.input_panel.source, "4321")
    wait_frame(qtbot, app.session)
    assert panel.status.text() == "The model and the source changed since this search: press Run again"


def test_a_new_untrained_model_reads_anchors_only_with_rope(qtbot, app):
    """The Trainer's defaults for a new model follow its encoding, as train's do: anchored for RoPE only."""
    panel = app.playground.model_panel
    panel.combos["positional"].setCurrentIndex(panel.combos["positional"].findData("sinusoidal"))
    _apply_heads(qtbot, app, 2)  # no shipped model has 2 heads: a new, untrained one
    assert app.hub.origin.startswith("untrained") and app.hub.config.positional == "sinusoidal"
    assert app.hub.task.anchored is False
    panel.combos["positional"].setCurrentIndex(panel.combos["positional"].findData("rope"))
    _apply_heads(qtbot, app, 1)
    assert app.hub.config.positional == "rope" and app.hub.task.anchored is True
