"""File > Export: the visible attention grid and the PE plots as images, and the exact matrices as NPY/CSV.

The exporter is given what it needs, not the window: a provider of the grid the user is looking at, a provider of
the PE plots, a sink for the status line and a parent widget for its dialogs.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QObject
from PySide6.QtWidgets import QFileDialog, QMessageBox, QWidget

from visualizer.widgets.common.image_export import export_item_png, export_item_svg
from visualizer.widgets.heatmap.grid import AttentionGrid

log = logging.getLogger(__name__)
DIALOG = QFileDialog.Option.DontUseNativeDialog
GRID_FILTERS = {"png": "PNG image (*.png)", "svg": "SVG image (*.svg)", "npy": "NumPy arrays (*.npy *.npz)"}


class Exporter(QObject):
    """Writes files the user asked for and reports each in the status line (or a warning when it failed)."""

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

    def _report(self, written: Path | None, error: Exception | None = None) -> None:
        if error is not None:
            QMessageBox.warning(self._parent, "Export failed", f"Could not export: {error}")
        elif written is not None:
            self._status(f"Exported {written}")

    def _ask_folder(self, caption: str) -> Path | None:
        chosen = QFileDialog.getExistingDirectory(self._parent, caption, "", options=DIALOG)
        return Path(chosen) if chosen else None

    def export_grid(self, fmt: str, path: Path | None = None) -> Path | None:
        """The current grid as 'png', 'svg' or 'npy' (asks for a path when none is given)."""
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
            written = {"png": grid.export_png, "svg": grid.export_svg, "npy": grid.export_matrices_npy}[fmt](path)
        except (OSError, ValueError, RuntimeError) as exc:
            self._report(None, exc)
            return None
        self._report(written)
        return written

    def export_grid_csv_folder(self, folder: Path | None = None) -> list[Path]:
        """Every map of the current grid (each layer x head, plus averages) as one CSV file in a folder."""
        grid = self._grid()
        maps = grid.current_maps()
        if maps is None:
            return []
        folder = folder or self._ask_folder("Export maps as CSV into folder")
        if folder is None:
            return []
        written = []
        try:
            for layer in range(maps.n_layers):
                for head in [*range(maps.n_heads), -1]:
                    name = f"{maps.kind}_L{layer + 1}_{'avg' if head < 0 else f'H{head + 1}'}.csv"
                    written.append(grid.export_map_csv(folder / name, layer, head))
        except (OSError, ValueError) as exc:
            self._report(None, exc)
            return written
        self._report(folder)
        return written

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
