"""File > Export, the movie export and File > Save As through the real actions: a failure midway (a full disk)
leaves the previous file whole and no partial file; links are followed, modes kept, pipes refused. The PNG and GIF
exports meet a disk a few KB short of room at the OS boundary (full_disk), where Qt's own buffered writes fail."""

from __future__ import annotations

import csv
import errno
import io
import os
import stat
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
import torch
from full_disk import NO_ROOM, room_for
from PySide6.QtCore import Qt
from PySide6.QtGui import QImage
from PySide6.QtWidgets import QFileDialog, QMessageBox, QWidget
from qt_helpers import CTRL, key, retype, start_app, wait_frame

from core_model.checkpoint import load_checkpoint
from core_model.training_loop import Cadence
from visualizer.controllers import checkpoints as checkpoint_actions
from visualizer.controllers.checkpoints import CheckpointActions
from visualizer.controllers.export import Exporter
from visualizer.state.inline_slot import InlineSlot
from visualizer.state.pe_lab import PELabState
from visualizer.state.snapshots import KindMaps
from visualizer.widgets.heatmap.grid import AttentionGrid
from visualizer.widgets.pe_lab.tab import PETab
from visualizer.widgets.training import tab as trainer_tab
from visualizer.widgets.training.tab import TrainerTab

pytestmark = [
    pytest.mark.usefixtures("one_torch_thread"),
    pytest.mark.skipif(os.name != "posix", reason="symlinks, FIFOs and modes as POSIX has them"),
]
WAIT_MS = 60_000
SHORT_BY = 2_000  # bytes the disk lacks: less than Qt buffers before it writes, so its last write is what fails
FULL = OSError(errno.ENOSPC, "No space left on device")
MENU = {
    "png": "Current attention grid as &PNG…",
    "svg": "Current attention grid as &SVG…",
    "npy": "Current grid's matrices as &NPY…",
    "csv": "Current grid's matrices as &CSV (folder)…",
}


def _maps(seed: int) -> KindMaps:
    rng = np.random.default_rng(seed)
    values = rng.random((2, 3, 4, 5)).astype(np.float32)
    values /= values.sum(-1, keepdims=True)
    return KindMaps("encoder_self", values, np.ones((4, 5), bool), tuple("abcd"), tuple("vwxyz"))


class Window:
    """A grid and the File > Export controller over it, with the dialogs answered and the warnings recorded."""

    def __init__(self, qtbot, monkeypatch) -> None:
        self.qtbot = qtbot
        self.grid = AttentionGrid("encoder_self")
        qtbot.addWidget(self.grid)
        self.grid.resize(900, 600)
        with qtbot.waitExposed(self.grid):
            self.grid.show()
        self.grid.set_maps(_maps(0))
        self.pe_state = PELabState()
        self.pe_tab = PETab(self.pe_state)  # never shown: File > Export draws it when asked
        qtbot.addWidget(self.pe_tab)
        self.status: list[str] = []
        self.warnings: list[str] = []
        self.titles: list[str] = []
        self.exporter = Exporter(lambda: self.grid, self.pe_tab.plot_items, self.status.append, self.grid)
        self.answer: Path | None = None
        monkeypatch.setattr(QFileDialog, "getSaveFileName", lambda *a, **k: (str(self.answer), ""))
        monkeypatch.setattr(QFileDialog, "getExistingDirectory", lambda *a, **k: str(self.answer))
        monkeypatch.setattr(QMessageBox, "exec", lambda box: self._warned(box))  # built as the app builds it, unshown

    def _warned(self, box: QMessageBox) -> int:
        self.titles.append(box.windowTitle())
        self.warnings.append(box.text())
        return QMessageBox.StandardButton.Ok

    def export(self, fmt: str, path: Path) -> None:
        """Choose the File > Export entry and answer its dialog with `path`."""
        self.answer = path
        slot = next(entry[1] for entry in self.exporter.actions() if entry and entry[0] == MENU[fmt])
        slot()
        self.qtbot.waitUntil(lambda: not self.exporter.writing, timeout=WAIT_MS)  # matrices are written by a task

    def export_pe_png(self, folder: Path) -> None:
        """Choose File > Export > Positional-encoding plots as PNG (folder) and answer its dialog with `folder`."""
        self.answer = folder
        next(
            entry[1]
            for entry in self.exporter.actions()
            if entry and entry[0].startswith("Positional-encoding plots as PNG")
        )()


@pytest.fixture
def window(qtbot, monkeypatch) -> Window:
    return Window(qtbot, monkeypatch)


@pytest.fixture
def folder(tmp_path) -> Path:
    """A folder of its own for the files written (tmp_path also holds the test's QSettings)."""
    path = tmp_path / "files"
    path.mkdir()
    return path


def _half(write_whole) -> bytes:
    """The first half of what a writer would produce: what fits before the disk is full."""
    buffer = io.BytesIO()
    write_whole(buffer)
    return buffer.getvalue()[: len(buffer.getvalue()) // 2]


def _fail_midway(monkeypatch, fmt: str) -> None:
    """The library call that writes the file puts half of it on disk, then meets a full disk."""
    if fmt == "svg":  # the caption pass rewrites the SVG that pyqtgraph wrote
        real_write = ET.ElementTree.write

        def short_tree_write(tree, target, *args, **kwargs):
            Path(target).write_bytes(_half(lambda buffer: real_write(tree, buffer, *args, **kwargs)))
            raise FULL

        monkeypatch.setattr(ET.ElementTree, "write", short_tree_write)
    else:
        real_save = np.save

        def short_save(handle, array, *args, **kwargs):
            handle.write(_half(lambda buffer: real_save(buffer, array, *args, **kwargs)))
            raise FULL

        monkeypatch.setattr(np, "save", short_save)


@pytest.mark.parametrize("fmt", ["svg", "npy"])
def test_an_export_failing_midway_keeps_the_previous_file_whole(window, folder, monkeypatch, fmt):
    path = folder / f"grid.{fmt}"
    window.export(fmt, path)
    assert window.status == [f"Exported {path}"] and window.warnings == []
    before = path.read_bytes()
    os.chmod(path, 0o600)
    window.grid.set_maps(_maps(1))  # the next export would differ
    _fail_midway(monkeypatch, fmt)
    window.export(fmt, path)
    assert len(window.warnings) == 1 and window.warnings[0].startswith("Could not export:")
    assert path.read_bytes() == before and sorted(folder.iterdir()) == [path]
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert window.status == [f"Exported {path}", window.warnings[0].replace("Could not export:", "Export failed:")]


def _size_of(write, scratch: Path) -> int:
    """How many bytes an export will need: the same export written, with room, to a scratch file then removed."""
    write(scratch)
    size = scratch.stat().st_size
    scratch.unlink()
    return size


@pytest.mark.parametrize(
    ("fmt", "told"),
    [
        ("png", "Could not write PNG to {path}: "),
        ("svg", "Could not export SVG to {path}: "),
        ("npy", "Could not save matrices to {path}: "),
    ],
)
def test_an_export_a_few_kb_short_of_room_keeps_the_previous_file(window, folder, fmt, told):
    """Qt's PNG writer and numpy's tofile lose their last buffered write on a full disk and still say they saved; the
    SVG writers raise. The status line, which said "Exported" a moment ago, says the export failed."""
    path = folder / f"grid.{fmt}"
    window.export(fmt, path)
    before = path.read_bytes()
    window.grid.set_maps(_maps(1))  # the next export would differ
    needed = _size_of(lambda scratch: window.export(fmt, scratch), folder / f"scratch.{fmt}")
    with room_for(needed - min(SHORT_BY, needed // 2)):
        window.export(fmt, path)
    assert window.titles == ["Export failed"] and len(window.warnings) == 1
    assert window.warnings[0] == f"Could not export: {told.format(path=path)}{NO_ROOM}"
    assert path.read_bytes() == before and sorted(folder.iterdir()) == [path]
    failed = window.warnings[0].replace("Could not export:", "Export failed:")
    assert window.status == [f"Exported {path}", f"Exported {folder / f'scratch.{fmt}'}", failed]
    if fmt == "png":
        assert not QImage(str(path)).isNull()


def test_a_map_menu_export_a_few_kb_short_of_room_is_titled_export_failed_and_keeps_the_png(window, folder):
    """The grid's own right-click Export grid as PNG… says what File › Export says when the disk is short."""
    path = folder / "grid.png"
    menu = window.grid.build_context_menu(0, 1)
    export = next(action for action in menu.actions() if action.text() == "Export grid as PNG...")
    window.answer = path
    export.trigger()
    before = path.read_bytes()
    window.grid.set_maps(_maps(1))
    needed = _size_of(lambda scratch: window.grid.export_png(scratch), folder / "scratch.png")
    with room_for(needed - min(SHORT_BY, needed // 2)):
        export.trigger()
    assert window.titles == ["Export failed"]
    assert window.warnings == [f"Export grid as PNG: Could not write PNG to {path}: {NO_ROOM}"]
    assert path.read_bytes() == before and not QImage(str(path)).isNull()


def test_ctrl_e_a_few_kb_short_of_room_keeps_the_previous_png_and_the_window_says_so(qtbot, folder, monkeypatch):
    """The whole window: Ctrl+E exports the grid in view; on a nearly full disk the status bar and a warning say it
    failed, and the PNG exported before still opens, byte for byte as it was."""
    app = start_app(qtbot)
    answer: list[Path] = []
    monkeypatch.setattr(QFileDialog, "getSaveFileName", lambda *a, **k: (str(answer[-1]), "PNG image (*.png)"))
    warned: list[tuple[str, str]] = []
    monkeypatch.setattr(QMessageBox, "exec", lambda box: warned.append((box.windowTitle(), box.text())) or 0)
    status = app.window.statusBar()

    def ctrl_e(path: Path) -> None:
        answer.append(path)
        key(qtbot, app, Qt.Key.Key_E, CTRL)

    path = folder / "grid.png"
    ctrl_e(path)
    assert status.currentMessage() == f"Exported {path}" and warned == []
    before = path.read_bytes()
    retype(qtbot, app.playground.input_panel.source, "3141")  # the next export would differ
    wait_frame(qtbot, app.session)
    needed = _size_of(ctrl_e, folder / "scratch.png")
    with room_for(needed - SHORT_BY):
        ctrl_e(path)
    told = f"Could not write PNG to {path}: {NO_ROOM}"
    assert warned == [("Export failed", f"Could not export: {told}")]
    assert status.currentMessage() == f"Export failed: {told}"
    assert path.read_bytes() == before and not QImage(str(path)).isNull() and sorted(folder.iterdir()) == [path]


def test_pe_plots_exported_a_few_kb_short_of_room_keep_the_previous_pngs(window, folder, tmp_path):
    window.export_pe_png(folder)
    names = sorted(p.name for p in folder.iterdir())
    before = {name: (folder / name).read_bytes() for name in names}
    window.pe_state.set_base(100.0)  # every plot would differ
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    window.export_pe_png(fresh)
    order = [f"pe_{name}.png" for name in window.pe_tab.plot_items()]  # the order they are written in
    sizes = [(fresh / name).stat().st_size for name in order]
    room = max(sizes) - SHORT_BY
    failing = next(k for k, size in enumerate(sizes) if size > room)
    with room_for(room):
        window.export_pe_png(folder)
    assert window.titles == ["Export failed"]
    told = f"Could not write PNG to {folder / order[failing]}: {NO_ROOM}"
    assert window.warnings == [f"Could not export: {told}"] and window.status[-1] == f"Export failed: {told}"
    assert sorted(p.name for p in folder.iterdir()) == names == sorted(order)  # no temporary left
    assert all((folder / n).read_bytes() == (fresh / n).read_bytes() for n in order[:failing])  # written before
    assert all((folder / n).read_bytes() == before[n] for n in order[failing:])
    assert all(not QImage(str(folder / n)).isNull() for n in order)


def test_a_csv_folder_export_failing_midway_keeps_that_file_whole(window, folder, monkeypatch):
    window.export("csv", folder)
    names = sorted(p.name for p in folder.iterdir())
    before = {name: (folder / name).read_bytes() for name in names}
    window.grid.set_maps(_maps(1))
    real_writer, opened = csv.writer, []

    class FullDiskWriter:
        """The third file gets its header row, then the disk is full."""

        def __init__(self, handle) -> None:
            self.inner, self.rows = real_writer(handle), 0
            opened.append(self)

        def writerow(self, row):
            if len(opened) == 3 and self.rows == 1:
                raise FULL
            self.rows += 1
            return self.inner.writerow(row)

    monkeypatch.setattr(csv, "writer", FullDiskWriter)
    window.export("csv", folder)
    assert len(window.warnings) == 1 and "No space left on device" in window.warnings[0]
    assert sorted(p.name for p in folder.iterdir()) == names  # no partial file, no temporary
    order = ["encoder_self_L1_H1.csv", "encoder_self_L1_H2.csv", "encoder_self_L1_H3.csv"]
    assert all((folder / n).read_bytes() != before[n] for n in order[:2])  # written before the disk filled
    assert all((folder / n).read_bytes() == before[n] for n in names if n not in order[:2])


def test_an_export_through_a_symlink_updates_the_real_file_and_refuses_a_fifo(window, folder):
    real = folder / "real.png"
    real.write_bytes(b"an older picture")
    os.chmod(real, 0o640)
    link = folder / "shown.png"
    link.symlink_to("real.png")
    window.export("png", link)
    assert link.is_symlink() and not QImage(str(real)).isNull() and stat.S_IMODE(os.stat(real).st_mode) == 0o640
    fifo = folder / "pipe.npy"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # a writer that opened the pipe would not block the test
    try:
        window.export("npy", fifo)
    finally:
        os.close(reader)
    assert window.warnings == [
        f"Could not export: refusing to write {fifo}: it is a named pipe (FIFO), not a regular file"
    ]
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and sorted(p.name for p in folder.iterdir()) == [
        "pipe.npy",
        "real.png",
        "shown.png",
    ]


def test_a_new_export_gets_what_the_umask_allows(window, folder):
    before = os.umask(0o027)
    try:
        window.export("svg", folder / "new.svg")
    finally:
        os.umask(before)
    assert stat.S_IMODE(os.stat(folder / "new.svg").st_mode) == 0o640


@pytest.fixture
def trained_tab(qtbot, hub, state) -> TrainerTab:
    widget = TrainerTab(hub, state, make_slot=InlineSlot)
    qtbot.addWidget(widget)
    widget.show()
    widget.form.batch_spin.setValue(16)
    widget.form.steps_spin.setValue(30)
    qtbot.mouseClick(widget.train_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: state.state == "finished" and state.training_thread is None, timeout=WAIT_MS)
    return widget


def _export_movie(qtbot, tab: TrainerTab, monkeypatch, folder: Path) -> str:
    """Click the probe's Export movie button, choose `folder`, wait for the tab to say how it went."""
    monkeypatch.setattr(trainer_tab, "_choose_folder", lambda parent: str(folder))
    qtbot.mouseClick(tab.probe.export_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: tab.probe.export_button.isEnabled(), timeout=WAIT_MS)
    return tab.status_label.text()


@pytest.mark.parametrize("failing", ["frame", "gif"])
def test_a_movie_export_a_few_kb_short_of_room_keeps_the_previous_files(
    qtbot, trained_tab, folder, tmp_path, monkeypatch, failing
):
    planned = Cadence.for_steps(30).probe_steps(30)
    frames = [f"frame_{i:04d}_step_{s}.png" for i, s in enumerate(planned)]
    fresh = tmp_path / "fresh"
    assert _export_movie(qtbot, trained_tab, monkeypatch, fresh).startswith(f"Exported {len(frames)} frames")
    sizes = {p.name: p.stat().st_size for p in fresh.iterdir()}
    assert sorted(sizes) == sorted([*frames, "movie.gif"])
    names = [*frames, "movie.gif"]
    biggest = max(sizes[n] for n in frames) if failing == "frame" else sizes["movie.gif"]
    room = biggest - SHORT_BY
    written = next(k for k, name in enumerate(names) if sizes[name] > room)  # the files before it fit
    assert failing == "frame" or written == len(frames), "every frame fits where the GIF does not"
    for name in names:
        (folder / name).write_bytes(f"previous {name}".encode())
    with room_for(room):
        shown = _export_movie(qtbot, trained_tab, monkeypatch, folder)
    what = f"PNG to {folder / frames[written]}" if failing == "frame" else f"GIF to {folder / 'movie.gif'}"
    assert shown == f"Could not export the movie: Could not write {what}: {NO_ROOM}"
    assert sorted(p.name for p in folder.iterdir()) == sorted(names)
    assert all((folder / n).read_bytes() == (fresh / n).read_bytes() for n in names[:written])
    assert all((folder / n).read_bytes() == f"previous {n}".encode() for n in names[written:])


def test_save_as_through_a_symlink_updates_the_real_file_and_refuses_a_fifo(qtbot, hub, folder, monkeypatch):
    widget = QWidget()
    qtbot.addWidget(widget)
    actions = CheckpointActions(hub, widget)
    shown: list[tuple[str, str]] = []
    monkeypatch.setattr(checkpoint_actions, "_show_error", lambda parent, title, text: shown.append((title, text)))
    real = folder / "real.pt"
    real.write_bytes(b"an older checkpoint")
    os.chmod(real, 0o600)
    link = folder / "model.pt"
    link.symlink_to("real.pt")
    answers = iter([str(link), str(folder / "pipe.pt")])
    monkeypatch.setattr(checkpoint_actions, "_ask_save_path", lambda parent, suggested: next(answers))
    with qtbot.waitSignal(actions.saved, timeout=WAIT_MS):
        actions.save_as_action.trigger()
    assert link.is_symlink() and stat.S_IMODE(os.stat(real).st_mode) == 0o600
    assert all(torch.equal(v, hub.model.state_dict()[k]) for k, v in load_checkpoint(real).state_dict.items())
    os.mkfifo(folder / "pipe.pt")
    with qtbot.waitSignal(actions.failed, timeout=WAIT_MS):
        actions.save_as_action.trigger()
    assert shown == [
        (
            "Could not save pipe.pt",
            f"refusing to write {folder / 'pipe.pt'}: it is a named pipe (FIFO), not a regular file",
        )
    ]
    assert sorted(p.name for p in folder.iterdir()) == ["model.pt", "pipe.pt", "real.pt"]
