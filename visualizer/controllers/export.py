"""File > Export: the visible attention grid and PE plots as images, and the exact matrices as NPY/CSV."""
from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtWidgets import QFileDialog, QMessageBox

if TYPE_CHECKING:
    from visualizer.main_window import MainWindow

log = logging.getLogger(__name__)
DIALOG = QFileDialog.Option.DontUseNativeDialog


def current_grid(window: MainWindow):
    """The attention grid the user is looking at in the Playground tab."""
    tabs = window.playground.grid_tabs
    return tabs.currentWidget()


def _ask_save(window: MainWindow, title: str, suggested: str, filters: str) -> Path | None:
    path, _ = QFileDialog.getSaveFileName(window, title, suggested, filters, options=DIALOG)
    return Path(path) if path else None


def _report(window: MainWindow, written: Path | None, error: Exception | None = None) -> None:
    if error is not None:
        QMessageBox.warning(window, "Export failed", f"Could not export: {error}")
    elif written is not None:
        window.statusBar().showMessage(f"Exported {written}", 8000)


def export_grid(window: MainWindow, fmt: str, path: Path | None = None) -> Path | None:
    """Export the current grid as 'png', 'svg' or 'npy' (asks for a path when none is given)."""
    grid = current_grid(window)
    kind = grid.current_maps().kind if grid.current_maps() is not None else "attention"
    if path is None:
        filters = {"png": "PNG image (*.png)", "svg": "SVG image (*.svg)", "npy": "NumPy arrays (*.npy *.npz)"}[fmt]
        path = _ask_save(window, f"Export {kind} as {fmt.upper()}", f"{kind}.{fmt}", filters)
        if path is None:
            return None
    try:
        written = {"png": grid.export_png, "svg": grid.export_svg, "npy": grid.export_matrices_npy}[fmt](path)
    except (OSError, ValueError, RuntimeError) as exc:
        _report(window, None, exc)
        return None
    _report(window, written)
    return written


def export_grid_csv_folder(window: MainWindow, folder: Path | None = None) -> list[Path]:
    """Every map of the current grid (each layer x head, plus averages) as one CSV file in a folder."""
    grid = current_grid(window)
    maps = grid.current_maps()
    if maps is None:
        return []
    if folder is None:
        chosen = QFileDialog.getExistingDirectory(window, "Export maps as CSV into folder", "", options=DIALOG)
        if not chosen:
            return []
        folder = Path(chosen)
    written = []
    try:
        for layer in range(maps.n_layers):
            for head in [*range(maps.n_heads), -1]:
                name = f"{maps.kind}_L{layer + 1}_{'avg' if head < 0 else f'H{head + 1}'}.csv"
                written.append(grid.export_map_csv(folder / name, layer, head))
    except (OSError, ValueError) as exc:
        _report(window, None, exc)
        return written
    _report(window, folder)
    return written


def export_pe_plots(window: MainWindow, fmt: str, folder: Path | None = None) -> list[Path]:
    """Each PE-tab plot as its own PNG or SVG file in a folder."""
    from visualizer.widgets.common.image_export import export_item_png, export_item_svg

    if folder is None:
        chosen = QFileDialog.getExistingDirectory(window, f"Export PE plots as {fmt.upper()} into folder", "",
                                                  options=DIALOG)
        if not chosen:
            return []
        folder = Path(chosen)
    writer = export_item_png if fmt == "png" else export_item_svg
    written = []
    try:
        for name, item in window.pe_tab.plot_items().items():
            written.append(Path(writer(item, folder / f"pe_{name}.{fmt}")))
    except (OSError, ValueError) as exc:
        _report(window, None, exc)
        return written
    _report(window, folder)
    return written


def add_export_actions(window: MainWindow, menu) -> None:
    sub = menu.addMenu("&Export")
    window._add_action(sub, "Current attention grid as &PNG…", lambda: export_grid(window, "png"), "Ctrl+E")
    window._add_action(sub, "Current attention grid as &SVG…", lambda: export_grid(window, "svg"))
    window._add_action(sub, "Current grid's matrices as &NPY…", lambda: export_grid(window, "npy"))
    window._add_action(sub, "Current grid's matrices as &CSV (folder)…", lambda: export_grid_csv_folder(window))
    sub.addSeparator()
    window._add_action(sub, "Positional-encoding plots as PNG (folder)…", lambda: export_pe_plots(window, "png"))
    window._add_action(sub, "Positional-encoding plots as SVG (folder)…", lambda: export_pe_plots(window, "svg"))
