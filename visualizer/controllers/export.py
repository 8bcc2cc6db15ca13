"""File > Export: the visible attention grid and the PE plots as images, and the exact matrices as NPY/CSV.

The exporter is given what it needs, not the window: a provider of the grid the user is looking at, a provider of
the PE plots, a sink for the status line and a parent widget for its dialogs. Images are rendered from the scene,
which only the GUI thread may paint; the matrices are copied there and written by a task, with a progress dialog
and Cancel once the writing takes a moment (a CSV folder for a large model is thousands of files).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtWidgets import QFileDialog, QLabel, QMessageBox, QProgressDialog, QWidget

from visualizer.widgets.common.image_export import export_item_png, export_item_svg
from visualizer.widgets.common.plain_message import show_plain_message
from visualizer.widgets.heatmap.grid import AttentionGrid
from visualizer.widgets.heatmap.shown_matrices import ExportProgress, ShownMatrices, write_csv_folder, write_npy
from visualizer.workers.tasks import TaskSlot

log = logging.getLogger(__name__)
DIALOG = QFileDialog.Option.DontUseNativeDialog
GRID_FILTERS = {"png": "PNG image (*.png)", "svg": "SVG image (*.svg)", "npy": "NumPy arrays (*.npy *.npz)"}
PROGRESS_AFTER_MS = 400  # a quicker export finishes without a dialog flashing up


class Exporter(QObject):
    """Writes files the user asked for and reports each in the status line (or a warning when it failed)."""

    exported = Signal(object)  # the file or folder an export has written, once it is whole

    def __init__(
        self,
        grid: Callable[[], AttentionGrid],
        pe_plots: Callable[[], dict],
        status: Callable[[str], None],
        parent: QWidget,
        page: Callable[[], object] | None = None,
    ) -> None:
        """page: writes the Playground's input as the interactive HTML page (asking where), when given."""
        super().__init__(parent)
        self._grid, self._pe_plots, self._status, self._parent = grid, pe_plots, status, parent
        self._page = page
        self._writes = TaskSlot("Exporting the matrices", self)  # a newer export replaces one still writing
        self._writes.progressed.connect(self._progressed)
        self._writes.finished.connect(self._written)
        self._writes.error_line.connect(self._write_failed)
        self._writes.cancelled.connect(self._write_cancelled)
        self._target: Path | None = None  # what the running matrix export writes
        self._progress: QProgressDialog | None = None

    @property
    def writing(self) -> bool:
        """A matrix export is still being written."""
        return self._writes.running

    def actions(self) -> list[tuple[str, Callable[[], object], str | None] | None]:
        """(menu text, slot, shortcut) for File > Export, in menu order; None separates groups."""
        page = [("Interactive &page (HTML)…", self._page, "Ctrl+Shift+E"), None] if self._page is not None else []
        return [
            *page,
            ("Current attention grid as &PNG…", lambda: self.export_grid("png"), "Ctrl+E"),
            ("Current attention grid as &SVG…", lambda: self.export_grid("svg"), None),
            ("Current grid's matrices as &NPY…", lambda: self.export_grid("npy"), None),
            ("Current grid's matrices as &CSV (folder)…", lambda: self.export_grid_csv_folder(), None),
            None,
            ("Positional-encoding plots as PNG (folder)…", lambda: self.export_pe_plots("png"), None),
            ("Positional-encoding plots as SVG (folder)…", lambda: self.export_pe_plots("svg"), None),
        ]

    # each outcome closes the dialog before it is told: a warning box never sits over a stale "k of n files"
    def _written(self, _files: object) -> None:
        self._close_progress()
        self._report(self._target)

    def _write_failed(self, line: str) -> None:
        self._close_progress()
        self._report(None, line)

    def _write_cancelled(self) -> None:
        self._close_progress()
        self._status(f"Export to {self._target} cancelled")

    def _report(self, written: Path | None, error: Exception | str | None = None) -> None:
        if error is not None:  # the status line too: it may still say "Exported" from the export before
            self._status(f"Export failed: {error}")
            show_plain_message(self._parent, QMessageBox.Icon.Warning, "Export failed", f"Could not export: {error}")
        elif written is not None:
            self._status(f"Exported {written}")
            self.exported.emit(written)

    def _write_matrices(self, task: Callable[..., list[Path]], target: Path, matrices: ShownMatrices) -> None:
        """Write the copied matrices on a pool thread; the dialog shows how far once it takes a moment."""
        if self.writing:  # replaced before its dialog showed: its files so far stay, and the status line says so
            self._status(f"Export to {self._target} stopped: a newer export replaced it")
        self._close_progress()
        self._target = target
        progress = self._progress = QProgressDialog(f"Writing {target.name}\u2026", "Cancel", 0, 0, self._parent)
        label = QLabel(progress.labelText())  # the folder's name is shown as written, never read as markup
        label.setTextFormat(Qt.TextFormat.PlainText)
        progress.setLabel(label)
        progress.setWindowTitle("Export")
        progress.setWindowModality(Qt.WindowModality.WindowModal)  # the grid may change; the copy written may not
        progress.setMinimumDuration(PROGRESS_AFTER_MS)
        progress.setValue(0)  # the delay above counts from a value at the bar's minimum; a new bar starts below it
        progress.canceled.connect(self._writes.cancel)
        self._writes.submit(task, target, matrices)

    def _progressed(self, step: ExportProgress) -> None:
        progress = self._progress
        if progress is None or progress.wasCanceled():  # a step sent before the task saw Cancel: the dialog stays shut
            return
        progress.setMaximum(step.total)
        progress.setLabelText(f"Writing {self._target}: {step.done} of {step.total} files")
        progress.setValue(step.done)  # last: a dialog on screen handles events here, the outcome's included

    def _close_progress(self) -> None:
        progress, self._progress = self._progress, None
        if progress is not None:
            progress.canceled.disconnect(self._writes.cancel)  # this dialog's Cancel is for the export it showed
            progress.reset()
            progress.deleteLater()

    def _ask_folder(self, caption: str) -> Path | None:
        chosen = QFileDialog.getExistingDirectory(self._parent, caption, "", options=DIALOG)
        return Path(chosen) if chosen else None

    def export_grid(self, fmt: str, path: Path | None = None) -> Path | None:
        """The current grid as 'png', 'svg' or 'npy' (asks for a path when none is given); returns the path, which
        an NPY export writes in the background (`exported` follows once it is whole)."""
        grid = self._grid()
        maps = grid.current_maps()
        kind = maps.kind if maps is not None else "attention"
        if path is None:
            chosen, _ = QFileDialog.getSaveFileName(
                self._parent, f"Export {kind} as {fmt.upper()}", f"{kind}.{fmt}", GRID_FILTERS[fmt], options=DIALOG
            )
            if not chosen:
                return None
            path = Path(chosen)
        try:
            if fmt == "npy":
                self._write_matrices(write_npy, path, grid.shown_matrices())
                return path
            written = {"png": grid.export_png, "svg": grid.export_svg}[fmt](path)
        except (OSError, ValueError, RuntimeError) as exc:
            self._report(None, exc)
            return None
        self._report(written)
        return written

    def export_grid_csv_folder(self, folder: Path | None = None) -> Path | None:
        """Every map of the current grid (each layer x head, plus averages) as one CSV file in a folder."""
        grid = self._grid()
        if grid.current_maps() is None:
            return None
        folder = folder or self._ask_folder("Export maps as CSV into folder")
        if folder is None:
            return None
        try:
            self._write_matrices(write_csv_folder, folder, grid.shown_matrices())
        except RuntimeError as exc:  # nothing is shown
            self._report(None, exc)
            return None
        return folder

    def export_pe_plots(self, fmt: str, folder: Path | None = None) -> list[Path]:
        """Each PE-tab plot as its own PNG or SVG file in a folder."""
        folder = folder or self._ask_folder(f"Export PE plots as {fmt.upper()} into folder")
        if folder is None:
            return []
        writer = export_item_png if fmt == "png" else export_item_svg
        written = []
        try:
            for name, item in self._pe_plots().items():
                written.append(Path(writer(item, folder / f"pe_{name}.{fmt}")))
        except (OSError, ValueError) as exc:
            self._report(None, exc)
            return written
        self._report(folder)
        return written
