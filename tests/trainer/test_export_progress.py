"""File › Export of a large grid's matrices: written off the GUI thread, with a progress dialog that can cancel."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest
from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import QApplication, QFileDialog, QProgressDialog, QPushButton

from visualizer.controllers.export import Exporter
from visualizer.state.snapshots import KindMaps
from visualizer.widgets.heatmap import shown_matrices
from visualizer.widgets.heatmap.grid import AttentionGrid

WAIT_MS = 60_000
CSV_FOLDER = "Current grid's matrices as &CSV (folder)…"
LAYERS, HEADS, TOKENS = 4, 8, 40


@pytest.fixture
def exporter(qtbot, tmp_path, monkeypatch) -> tuple[Exporter, list[str]]:
    rng = np.random.default_rng(0)
    values = rng.random((LAYERS, HEADS, TOKENS, TOKENS)).astype(np.float32)
    labels = tuple(str(i % 10) for i in range(TOKENS))
    grid = AttentionGrid("encoder_self")
    qtbot.addWidget(grid)
    grid.resize(900, 600)
    with qtbot.waitExposed(grid):
        grid.show()
    grid.set_maps(KindMaps("encoder_self", values, np.ones((TOKENS, TOKENS), bool), labels, labels))
    status: list[str] = []
    monkeypatch.setattr(QFileDialog, "getExistingDirectory", lambda *a, **k: str(tmp_path / "maps"))
    (tmp_path / "maps").mkdir()
    return Exporter(lambda: grid, dict, status.append, grid), status


def _choose(exporter: Exporter, text: str) -> None:
    next(entry[1] for entry in exporter.actions() if entry and entry[0] == text)()


def test_a_long_csv_export_keeps_the_window_live_and_cancel_stops_it(qtbot, exporter, tmp_path, monkeypatch):
    """The writing is held after three files (as a slow disk or a large model would hold it), so the dialog shows
    and Cancel lands mid-export on any machine."""
    exporter, status = exporter
    real_save, go_on = shown_matrices.save_matrix_csv, threading.Event()

    def slow_save(path, *args):
        if len(list(path.parent.iterdir())) >= 3:
            go_on.wait(WAIT_MS / 1000)
        return real_save(path, *args)

    monkeypatch.setattr(shown_matrices, "save_matrix_csv", slow_save)
    ticks: list[float] = []
    timer = QTimer()
    timer.timeout.connect(lambda: ticks.append(time.perf_counter()))
    timer.start(10)
    _choose(exporter, CSV_FOLDER)
    assert exporter.writing  # the menu entry returned at once: the files are written by a task
    dialog = exporter.parent().findChild(QProgressDialog)
    qtbot.waitUntil(lambda: dialog.isVisible() and dialog.value() >= 3, timeout=WAIT_MS)
    assert " of 36 files" in dialog.labelText()
    qtbot.mouseClick(dialog.findChild(QPushButton), Qt.MouseButton.LeftButton)  # Cancel
    go_on.set()
    qtbot.waitUntil(lambda: not exporter.writing, timeout=WAIT_MS)
    timer.stop()
    written = sorted(p.name for p in (tmp_path / "maps").iterdir())
    assert len(written) in (3, 4) and all(name.endswith(".csv") for name in written)  # whole files, no temporaries
    assert status == [f"Export to {tmp_path / 'maps'} cancelled"]
    # the GUI thread kept answering while the files were written: writing them on it would have stalled it for the
    # whole hold (WAIT_MS, as the Cancel that ends the hold could not be clicked), a loaded machine only for moments
    assert np.diff(ticks).max() < WAIT_MS / 1000 / 2
    QApplication.processEvents()
    assert not any(d.isVisible() for d in exporter.parent().findChildren(QProgressDialog))


def test_a_finished_csv_export_says_where_and_leaves_every_file(qtbot, exporter, tmp_path):
    exporter, status = exporter
    with qtbot.waitSignal(exporter.exported, timeout=WAIT_MS):
        _choose(exporter, CSV_FOLDER)
    names = {p.name for p in (tmp_path / "maps").iterdir()}
    assert len(names) == LAYERS * (HEADS + 1) and "encoder_self_L4_avg.csv" in names
    assert status == [f"Exported {tmp_path / 'maps'}"]


def test_the_progress_dialog_names_a_folder_called_in_html_as_written(qtbot, exporter, tmp_path, monkeypatch):
    """A folder named like markup is shown with its characters: no bold, no link in the dialog."""
    from PySide6.QtWidgets import QLabel
    from qt_helpers import seen_text

    exporter, _status = exporter
    folder = tmp_path / "<b>x<b><a href=e>y<a>"
    folder.mkdir()
    monkeypatch.setattr(QFileDialog, "getExistingDirectory", lambda *a, **k: str(folder))
    _choose(exporter, CSV_FOLDER)
    dialog = exporter.parent().findChild(QProgressDialog)
    label = dialog.findChild(QLabel)
    assert seen_text(label).startswith("Writing <b>x<b><a href=e>y<a>")
    qtbot.waitUntil(lambda: not exporter.writing, timeout=WAIT_MS)
