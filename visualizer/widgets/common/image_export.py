"""File exports for the heatmap widgets: images through pyqtgraph's exporters, matrices as NPY / CSV (no dialogs)."""
from __future__ import annotations

import csv
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pyqtgraph.exporters as pg_exporters

log = logging.getLogger(__name__)


def _check_parent(path: str | Path) -> Path:
    """Fail early, with a message a user understands, when the target folder does not exist."""
    target = Path(path)
    if not target.parent.is_dir():
        raise OSError(f"Cannot write {target}: folder {target.parent} does not exist")
    return target


def _check_written(target: Path, what: str) -> None:
    """pyqtgraph's exporters report some failures only by writing nothing; turn that into an error."""
    if not target.is_file() or target.stat().st_size == 0:
        raise OSError(f"Could not write {what} to {target}")


def export_item_png(item: object, path: str | Path, width: int | None = None) -> Path:
    """Render a graphics item (or a whole scene) to a PNG file, optionally at a given pixel width.

    Args:
        item: a QGraphicsItem (e.g. a GraphicsLayout or PlotItem) or a QGraphicsScene.
        path: the file to write.
        width: output width in pixels; None keeps the on-screen size.
    Returns:
        The path written.
    """
    target = _check_parent(path)
    try:
        exporter = pg_exporters.ImageExporter(item)
        if width is not None:
            exporter.parameters()["width"] = int(width)  # height follows the aspect ratio
        exporter.export(str(target))
    except Exception as exc:  # pyqtgraph raises assorted errors for unpaintable items
        raise OSError(f"Could not export PNG to {target}: {exc}") from exc
    _check_written(target, "PNG")
    log.info("exported PNG %s", target)
    return target


def export_item_svg(item: object, path: str | Path) -> Path:
    """Write a graphics item (or scene) as SVG; images inside are embedded as PNG by pyqtgraph."""
    target = _check_parent(path)
    try:
        pg_exporters.SVGExporter(item).export(str(target))
    except Exception as exc:  # SVGExporter fails on some Qt versions (QT-NOTES.md)
        raise OSError(f"Could not export SVG to {target}: {exc}") from exc
    _check_written(target, "SVG")
    log.info("exported SVG %s", target)
    return target


def save_matrices_npy(path: str | Path, data: np.ndarray | Mapping[str, np.ndarray]) -> Path:
    """Save one array with np.save, or several named arrays with np.savez, at exactly the given path."""
    target = _check_parent(path)
    try:
        with open(target, "wb") as handle:  # a handle keeps numpy from appending .npy / .npz
            if isinstance(data, Mapping):
                np.savez(handle, **{str(k): np.asarray(v) for k, v in data.items()})
            else:
                np.save(handle, np.asarray(data))
    except OSError as exc:
        raise OSError(f"Could not save matrices to {target}: {exc.strerror or exc}") from exc
    return target


def _cell(value: float) -> str:
    """Shortest text that reads back to the same float32 (numpy prints float32 round-trip exact); NaN -> empty."""
    if np.isnan(value):
        return ""
    return str(np.float32(value))


def save_matrix_csv(
    path: str | Path, matrix: np.ndarray, row_labels: Sequence[str], col_labels: Sequence[str]
) -> Path:
    """Write one (Tq, Tk) map as CSV: a header of key labels, one row per query; NaN (blank) cells are empty.

    Shape:
        matrix: (len(row_labels), len(col_labels)).
    """
    target = _check_parent(path)
    values = np.asarray(matrix, dtype=np.float32)
    if values.shape != (len(row_labels), len(col_labels)):
        raise ValueError(f"matrix shape {values.shape} does not match labels ({len(row_labels)}, {len(col_labels)})")
    try:
        with open(target, "w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            writer.writerow(["query\\key", *col_labels])
            for label, row in zip(row_labels, values):
                writer.writerow([label, *(_cell(v) for v in row)])
    except OSError as exc:
        raise OSError(f"Could not save CSV to {target}: {exc.strerror or exc}") from exc
    return target
