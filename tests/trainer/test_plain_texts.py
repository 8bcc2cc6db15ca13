"""A file name or a checkpoint's words are shown as written wherever the window quotes them: a name such as
`<h1>x<h1><a href="http:e">y<a>.pt` shows those characters, never a heading or a link (a dialog's links would
open the browser). Lesson texts are covered in test_lessons_crafted.py."""

from __future__ import annotations

import pytest
import torch
from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import QApplication, QFileDialog, QMessageBox
from qt_helpers import seen_text, show_playground
from test_trainer_tab import tab  # noqa: F401 - the Trainer tab on the tiny hub, as its own tests drive it

from core_model import ModelConfig, build_model
from core_model.checkpoint import save_checkpoint
from core_model.tasks import TaskSpec
from visualizer.composition import Application
from visualizer.controllers.export import Exporter
from visualizer.controllers.page_export import PageExport, page_input
from visualizer.main_window import MainWindow
from visualizer.state.compare import CompareSession
from visualizer.state.model_hub import ModelHub
from visualizer.state.playground import PlaygroundSession
from visualizer.widgets.common.recovery_banner import RecoveryBanner
from visualizer.widgets.heatmap.exporters import ask_path_and_export
from visualizer.workers.tasks import TaskSlot

WAIT_MS = 60_000
MARKUP = '<h1>x<h1><a href="http:e">y<a>'  # a heading and a link, as far as a file name without "/" can go


def test_a_checkpoint_named_in_html_is_named_as_written_at_start_up_and_after_file_open(qtbot, tmp_path):
    broken = tmp_path / f"{MARKUP}.pt"
    broken.write_bytes(b"not a checkpoint")
    model = build_model(ModelConfig(d_model=32, n_heads=4, d_ff=64), seed=1)
    task = {"task": {"task": "copy", "n_symbols": 10, "min_len": 1, "max_len": 10}}
    good = save_checkpoint(tmp_path / f"<b>m<b>{MARKUP}.pt", model, extra=task)
    app = Application(checkpoint=broken, device="cpu")
    qtbot.addWidget(app.window)
    app.window.show()
    app.start_loading()
    qtbot.waitUntil(lambda: app.hub is not None, timeout=WAIT_MS)
    assert f"{MARKUP}.pt is not a readable checkpoint" in seen_text(app.window.warning_label)
    app.checkpoints.open_path(good)
    summary = app.playground.model_panel.summary
    qtbot.waitUntil(lambda: app.hub.path == good, timeout=WAIT_MS)
    assert seen_text(summary).splitlines()[0] == f"Loaded model: checkpoint {good.name}"
    app.window.close()


@pytest.mark.real_dialogs
def test_a_failed_start_names_the_file_as_written_in_the_window_and_its_dialog(qtbot):
    window = MainWindow()
    qtbot.addWidget(window)
    window.show()
    message = f"{MARKUP}.pt could not be read"
    seen: list[str] = []
    tries = iter(range(3000))  # 30 s at most: a box that never comes must not leave this timer to later tests

    def read_and_dismiss_the_box() -> None:
        box = QApplication.activeModalWidget()
        if isinstance(box, QMessageBox):
            seen.append(seen_text(box))
            box.done(QMessageBox.StandardButton.Ok)
        elif next(tries, None) is not None:
            QTimer.singleShot(10, read_and_dismiss_the_box)

    QTimer.singleShot(10, read_and_dismiss_the_box)
    window.show_load_error(message)
    assert seen == [f"Could not start the model:\n{message}"]
    assert seen_text(window.loading_label) == f"Could not start the model: {message}"


def test_the_recovery_banner_names_the_model_as_written(qtbot):
    banner = RecoveryBanner()
    qtbot.addWidget(banner)
    text = f"Unsaved training of checkpoint {MARKUP}.pt was found."
    banner.offer(text)
    assert seen_text(banner.label) == text


@pytest.fixture
def compare_view(qtbot, tmp_path):
    """The Playground with Compare, model B asked from a file named in HTML (whatever the test writes there)."""
    b_file = tmp_path / f"{MARKUP}.pt"
    config = ModelConfig(d_model=32, n_heads=4, d_ff=64)
    hub = ModelHub(build_model(config, seed=3), TaskSpec(), device=torch.device("cpu"), origin="test model A")
    session = PlaygroundSession(hub)
    view = show_playground(
        qtbot, session, compare=CompareSession(session, TaskSlot), ask_b_path=lambda _parent: str(b_file)
    )
    qtbot.mouseClick(view.compare_button, Qt.MouseButton.LeftButton)
    return view, b_file, config


def test_compare_names_model_b_as_written(qtbot, compare_view):
    view, b_file, config = compare_view
    panel = view.compare_panel
    b_file.write_bytes(b"not a checkpoint")
    with qtbot.waitSignal(panel.compare.failed, timeout=WAIT_MS):
        qtbot.mouseClick(panel.load_button, Qt.MouseButton.LeftButton)
    assert seen_text(panel.status).startswith(f"Model B: {b_file.name} is not a readable checkpoint")
    save_checkpoint(b_file, build_model(config, seed=11), extra={"task": {"task": "copy"}})
    with qtbot.waitSignal(panel.compare.frame_changed, timeout=WAIT_MS):
        qtbot.mouseClick(panel.load_button, Qt.MouseButton.LeftButton)
    assert seen_text(panel.b_label) == f"B: checkpoint {b_file.name}"


def test_the_trainer_names_a_movie_folder_as_written(qtbot, tab, state, tmp_path):
    tab.form.steps_spin.setValue(10)
    qtbot.mouseClick(tab.train_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: state.state == "finished" and state.training_thread is None, timeout=WAIT_MS)
    folder = tmp_path / MARKUP
    with qtbot.waitSignal(tab.movie_exported, timeout=WAIT_MS):
        tab.export_movie(folder)
    assert seen_text(tab.status_label).startswith(f"Exported {len(state.snapshots)} frames to {folder}")


class BoxReader:
    """Reads and dismisses each real message box as it comes up (a modal box waits for a click offscreen)."""

    def __init__(self) -> None:
        self.seen: list[str] = []
        self._tries = iter(range(6000))  # 60 s at most: this timer must not outlive the test
        QTimer.singleShot(10, self._look)

    def _look(self) -> None:
        box = QApplication.activeModalWidget()
        if isinstance(box, QMessageBox):
            self.seen.append(seen_text(box))
            box.done(QMessageBox.StandardButton.Ok)
        if next(self._tries, None) is not None:
            QTimer.singleShot(10, self._look)


@pytest.mark.real_dialogs
def test_an_export_into_a_folder_named_in_html_fails_naming_it_as_written(qtbot, compare_view, tmp_path, monkeypatch):
    """File › Export (a grid, the interactive page) and a grid's own Export into a folder that is not there."""
    view, _b_file, _config = compare_view
    missing = tmp_path / MARKUP / "gone"
    answer: list[str] = []
    monkeypatch.setattr(QFileDialog, "getSaveFileName", lambda *a, **k: (answer[-1], ""))
    reader = BoxReader()
    status: list[str] = []
    exporter = Exporter(view.current_grid, lambda: [], status.append, view)
    answer.append(str(missing / "grid.png"))
    next(entry[1] for entry in exporter.actions() if entry and entry[0] == "Current attention grid as &PNG…")()
    qtbot.waitUntil(lambda: len(reader.seen) == 1, timeout=WAIT_MS)
    assert reader.seen[0].startswith("Could not export: ") and str(missing) in reader.seen[0]
    ask_path_and_export(view.current_grid(), "Export grid as PNG", "PNG image (*.png)", view.current_grid().export_png)
    qtbot.waitUntil(lambda: len(reader.seen) == 2, timeout=WAIT_MS)
    assert reader.seen[1].startswith("Export grid as PNG: ") and str(missing) in reader.seen[1]
    answer.append(str(missing / "page.html"))
    PageExport(lambda: page_input(view.session), status.append, view).export()
    qtbot.waitUntil(lambda: len(reader.seen) == 3, timeout=WAIT_MS)
    assert reader.seen[2].startswith(f"Could not write {missing / 'page.html'}: ")
