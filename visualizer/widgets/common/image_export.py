"""File exports for the heatmap widgets: images through pyqtgraph's exporters, matrices as NPY / CSV (no dialogs).

Every file is written through core_model.atomic_files: to a temporary next to the target, renamed over it only once
complete, so a failure (a full disk) leaves the previous file as it was and no partial file behind. PNG and NPY are
encoded in memory and their bytes written by write_bytes_atomically: QImage.save and numpy's tofile, writing to a file
themselves, can lose their last buffered write on a full disk and still report success.
"""

from __future__ import annotations

import csv
import io
import logging
import re
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyqtgraph.exporters as pg_exporters
from PySide6.QtCore import QBuffer, QByteArray, QIODevice
from PySide6.QtGui import QColor, QFont, QFontMetrics, QImage, QPainter, QTextLayout, QTextOption

from core_model.atomic_files import RefusedTarget, atomic_path, write_bytes_atomically

log = logging.getLogger(__name__)


def _check_parent(path: str | Path) -> Path:
    """Fail early, with a message a user understands, when the target folder does not exist."""
    target = Path(path)
    if not target.parent.is_dir():
        raise OSError(f"Cannot write {target}: folder {target.parent} does not exist")
    return target


def _cause(exc: Exception) -> str:
    """What went wrong, in the OS's words for an OSError ("No space left on device"), else the exception's text."""
    return (exc.strerror if isinstance(exc, OSError) else None) or str(exc)


def _check_written(written: Path, what: str, target: Path) -> None:
    """pyqtgraph's exporters report some failures only by writing nothing; turn that into an error."""
    if not written.is_file() or written.stat().st_size == 0:
        raise OSError(f"Could not write {what} to {target}")


def export_item_png(item: object, path: str | Path, width: int | None = None, caption: Sequence[str] = ()) -> Path:
    """Render a graphics item (or a whole scene) to a PNG file, optionally at a given pixel width and captioned.

    Args:
        item: a QGraphicsItem (e.g. a GraphicsLayout or PlotItem) or a QGraphicsScene.
        path: the file to write.
        width: output width in pixels; None keeps the on-screen size.
        caption: lines drawn in a white band above the plot; none by default.
    Returns:
        The path written.
    """
    target = _check_parent(path)
    try:
        exporter = pg_exporters.ImageExporter(item)
        if width is not None:
            exporter.parameters()["width"] = int(width)  # height follows the aspect ratio
        image = exporter.export(toBytes=True)  # the rendered QImage, not yet a file
    except Exception as exc:  # pyqtgraph raises assorted errors for unpaintable items
        raise OSError(f"Could not export PNG to {target}: {exc}") from exc
    save_png(_with_png_caption(image, caption), target)
    log.info("exported PNG %s", target)
    return target


def png_bytes(image: QImage) -> bytes:
    """The image encoded as PNG in memory, where a failure cannot be a short file."""
    data = QByteArray()
    buffer = QBuffer(data)
    buffer.open(QIODevice.OpenModeFlag.WriteOnly)
    if not image.save(buffer, "PNG"):  # type: ignore[call-overload]  # stubs say bytes; PySide6 takes only str
        raise OSError("could not encode the image as PNG")
    buffer.close()
    return bytes(data.data())


def save_png(image: QImage, path: str | Path) -> Path:
    """Write `image` as the PNG at `path`; the previous file stays unless every byte of the new one reached the disk."""
    return save_encoded(png_bytes(image), path, "write PNG to")


def save_encoded(data: bytes, path: str | Path, action: str) -> Path:
    """Publish bytes encoded in memory as the file at `path`, whole or not at all.

    Raises RefusedTarget for a target that must not be replaced; otherwise OSError "Could not <action> <path>:
    <cause>" (the OS's words: "No space left on device").
    """
    target = Path(path)
    try:
        write_bytes_atomically(target, data)
    except RefusedTarget:
        raise
    except OSError as exc:
        raise OSError(f"Could not {action} {target}: {_cause(exc)}") from exc
    return target


def export_item_svg(item: object, path: str | Path, caption: Sequence[str] = ()) -> Path:
    """Write a graphics item (or scene) as SVG, optionally captioned; images inside are embedded as PNG by pyqtgraph."""
    target = _check_parent(path)
    with atomic_path(target, keep_suffix=True) as tmp:
        try:
            pg_exporters.SVGExporter(item).export(str(tmp))
        except Exception as exc:  # SVGExporter fails on some Qt versions (QT-NOTES.md)
            raise OSError(f"Could not export SVG to {target}: {_cause(exc)}") from exc
        _check_written(tmp, "SVG", target)
        _add_svg_caption(tmp, caption, target)
    log.info("exported SVG %s", target)
    return target


SVG_NS, XLINK_NS = "http://www.w3.org/2000/svg", "http://www.w3.org/1999/xlink"
ET.register_namespace("", SVG_NS)
ET.register_namespace("xlink", XLINK_NS)
CAPTION_COLOUR = "black"  # on a white band, whatever the plot's background
CAPTION_MARGIN = 6  # px left and right of the caption's rows


def caption_font_px(image_width: float) -> int:
    """Caption text size: readable, and growing with wide exports."""
    return max(12, int(image_width) // 90)


def caption_font(px: int) -> QFont:
    """The caption's font: the PNG draws its rows in it and the SVG measures them with it."""
    font = QFont()
    font.setPixelSize(px)
    return font


def wrap_caption_line(text: str, font: QFont, width: float) -> list[str]:
    """`text` cut into rows no wider than `width` px in `font`, at spaces where it can, anywhere else; the rows
    joined give `text` back (each keeps the space it ends on), so every word lies inside the image."""
    layout = QTextLayout(text, font)
    option = QTextOption()
    option.setWrapMode(QTextOption.WrapMode.WrapAtWordBoundaryOrAnywhere)
    layout.setTextOption(option)
    rows = []
    layout.beginLayout()
    while (line := layout.createLine()).isValid():
        line.setLineWidth(max(width, 1.0))
        rows.append(text[line.textStart() : line.textStart() + line.textLength()])
    layout.endLayout()
    return rows or [text]


def _with_png_caption(plot: QImage, caption: Sequence[str]) -> QImage:
    """The plot under a white band holding the caption lines (plain text: `<bos>` stays visible), each wrapped to
    the image's width."""
    if not caption:
        return plot
    font = caption_font(caption_font_px(plot.width()))
    metrics = QFontMetrics(font)
    line = metrics.height()
    rows = [row for text in caption for row in wrap_caption_line(text, font, plot.width() - 2 * CAPTION_MARGIN)]
    band = line * len(rows) + 8
    image = QImage(plot.width(), plot.height() + band, QImage.Format.Format_ARGB32)
    image.fill(QColor("white"))
    painter = QPainter(image)
    painter.setFont(font)
    painter.setPen(QColor(CAPTION_COLOUR))
    for k, text in enumerate(rows):  # drawText takes plain text, never markup
        painter.drawText(CAPTION_MARGIN, 4 + line * k + metrics.ascent(), text)
    painter.drawImage(0, band, plot)
    painter.end()
    return image


def _svg_size(root: ET.Element) -> tuple[float, float]:
    """(width, height) of an SVG from its viewBox, else its width / height attributes."""
    box = root.get("viewBox")
    if box:
        numbers = [float(v) for v in re.split(r"[\s,]+", box.strip())]
        if len(numbers) == 4:
            return numbers[2], numbers[3]
    try:
        return float(re.sub(r"[a-z%]+$", "", root.get("width", ""))), float(
            re.sub(r"[a-z%]+$", "", root.get("height", ""))
        )
    except ValueError as exc:
        raise OSError(f"SVG without a usable size: {exc}") from exc


def _add_svg_caption(written: Path, caption: Sequence[str], target: Path) -> None:
    """Put the caption lines as visible <text> in a white band at the top of the SVG, the drawing shifted below it.

    <title> becomes the first line and <desc> all of them. ElementTree escapes the text for XML, so a token
    `<bos>` is written `&lt;bos&gt;` and read back as text.
    """
    if not caption:
        return
    try:
        tree = ET.parse(written)
    except ET.ParseError as exc:
        raise OSError(f"Could not read back SVG {target}: {exc}") from exc
    root = tree.getroot()
    width, height = _svg_size(root)
    size = caption_font_px(width)
    line = round(size * 1.35)
    font = caption_font(size)  # the rows are measured in Qt's sans-serif, as the PNG draws them
    rows = [wrap_caption_line(text, font, width - 2 * CAPTION_MARGIN) for text in caption]
    band = line * sum(len(r) for r in rows) + 8
    head_tags = {f"{{{SVG_NS}}}{tag}" for tag in ("title", "desc", "style", "defs", "metadata")}
    drawing = ET.Element(f"{{{SVG_NS}}}g", {"transform": f"translate(0,{band})", "id": "plot"})
    for child in list(root):
        if child.tag == f"{{{SVG_NS}}}rect" and child.get("height") == "100%":  # the background: now under the band
            child.set("width", f"{width:g}")
            child.set("height", f"{height:g}")
        if child.tag not in head_tags:
            root.remove(child)
            drawing.append(child)
    for tag, text in (("title", caption[0]), ("desc", "\n".join(caption))):
        element = root.find(f"{{{SVG_NS}}}{tag}")
        if element is None:
            element = ET.Element(f"{{{SVG_NS}}}{tag}")
            root.insert(0, element)
        element.text = text
    group = ET.SubElement(
        root,
        f"{{{SVG_NS}}}g",
        {"id": "caption", "font-family": "sans-serif", "font-size": str(size), "fill": CAPTION_COLOUR},
    )
    ET.SubElement(
        group,
        f"{{{SVG_NS}}}rect",
        {"x": "0", "y": "0", "width": f"{width:g}", "height": str(band), "fill": "white", "stroke": "none"},
    )
    # one <text> per row, as SVG Tiny viewers (Qt's among them) draw no positioned <tspan>; <desc> keeps each line
    for k, text in enumerate(row for pieces in rows for row in pieces):
        ET.SubElement(
            group,
            f"{{{SVG_NS}}}text",
            {"x": str(CAPTION_MARGIN), "y": str(4 + line * k + size), "xml:space": "preserve"},
        ).text = text
    root.append(drawing)
    root.set("viewBox", f"0 0 {width:g} {height + band:g}")
    if root.get("height"):
        root.set("height", f"{height + band:g}")
    try:
        tree.write(written, encoding="utf-8", xml_declaration=True)
    except OSError as exc:
        raise OSError(f"Could not write SVG to {target}: {_cause(exc)}") from exc


def save_matrices_npy(path: str | Path, data: np.ndarray | Mapping[str, np.ndarray]) -> Path:
    """Save one array with np.save, or several named arrays with np.savez, at exactly the given path."""
    target = _check_parent(path)
    encoded = io.BytesIO()  # in memory: ndarray.tofile into a file says nothing when its last buffered write fails
    if isinstance(data, Mapping):
        arrays: dict[str, Any] = {str(k): np.asarray(v) for k, v in data.items()}  # keywords: the names in the file
        np.savez(encoded, **arrays)
    else:
        np.save(encoded, np.asarray(data))
    return save_encoded(encoded.getvalue(), target, "save matrices to")


def save_matrix_csv(path: str | Path, matrix: np.ndarray, row_labels: Sequence[str], col_labels: Sequence[str]) -> Path:
    """Write one (Tq, Tk) map as CSV: a header of key labels, one row per query; NaN (blank) cells are empty.

    Shape:
        matrix: (len(row_labels), len(col_labels)).
    """
    target = _check_parent(path)
    values = np.asarray(matrix, dtype=np.float32)
    if values.shape != (len(row_labels), len(col_labels)):
        raise ValueError(f"matrix shape {values.shape} does not match labels ({len(row_labels)}, {len(col_labels)})")
    try:
        with atomic_path(target) as tmp, open(tmp, "w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            writer.writerow(["query\\key", *col_labels])
            texts = values.astype(str)  # numpy's shortest text that reads back to the same float32
            texts[np.isnan(values)] = ""  # a blank cell
            for label, row in zip(row_labels, texts.tolist()):
                writer.writerow([label, *row])
    except RefusedTarget:
        raise
    except OSError as exc:
        raise OSError(f"Could not save CSV to {target}: {_cause(exc)}") from exc
    return target
