"""Colouring shared by the grid and the large view: a lookup table, value -> LUT index, and a fast RGBA item.

We colour through our own LUT (not pyqtgraph's levels) so one atlas holds many maps with their own ranges, a
transparent "blank" colour for masked cells and gutters, and a dimmed copy of the colormap for ablated heads.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QRectF
from PySide6.QtGui import QImage, QPainter

N_COLOURS = 256
BLANK_INDEX = N_COLOURS  # LUT row that is fully transparent: masked cells and gutters
DIM_OFFSET = N_COLOURS + 1  # added to a colour index to pick the dimmed (ablated-head) copy of the colormap
DEFAULT_COLORMAP = "viridis"
SCORES_COLORMAP = "CET-CBD1"  # colour-blind-safe diverging (blue - near white - yellow), centred on 0 for scores


def make_lut(name: str = DEFAULT_COLORMAP) -> np.ndarray:
    """Colour table (2 * 257, 4) uint8: the colormap, a transparent row, a dimmed colormap, a transparent row."""
    base = pg.colormap.get(name).getLookupTable(0.0, 1.0, N_COLOURS, alpha=True).astype(np.uint8)
    base[:, 3] = 255
    dim = base.copy()
    dim[:, :3] = (base[:, :3].astype(np.float32) * 0.3 + 90).astype(np.uint8)  # washed-out grey
    blank = np.zeros((1, 4), np.uint8)
    return np.ascontiguousarray(np.concatenate([base, blank, dim, blank]))


def colour_scale(
    values: np.ndarray, lo: np.ndarray | float, hi: np.ndarray | float, out: np.ndarray | None = None
) -> np.ndarray:
    """LUT indices as float32 (floor on cast) for values scaled to [lo, hi]; NaN -> BLANK_INDEX.

    lo/hi broadcast against values (scalars, or per-map (L, C, 1, 1)); `out` (float32, values' shape) avoids
    allocating on every frame.
    """
    lo = np.asarray(lo, np.float32)
    span = np.asarray(hi, np.float32) - lo
    flat = span <= 0  # a constant map: show it mid-scale rather than dividing by zero
    lo = np.where(flat, lo - 0.5, lo).astype(np.float32)
    scale = (N_COLOURS / np.where(flat, 1.0, span)).astype(np.float32)
    scaled = np.subtract(values, lo, out=out, dtype=np.float32)
    scaled *= scale
    np.clip(scaled, 0, N_COLOURS - 1, out=scaled)  # NaN stays NaN
    np.copyto(scaled, BLANK_INDEX, where=np.isnan(scaled))
    return scaled


def colour_indices(values: np.ndarray, lo: np.ndarray | float, hi: np.ndarray | float) -> np.ndarray:
    """LUT indices (uint16) for values scaled to [lo, hi]; NaN becomes BLANK_INDEX."""
    return colour_scale(values, lo, hi).astype(np.uint16)


def symmetric_range(lo: np.ndarray | float, hi: np.ndarray | float) -> tuple[np.ndarray | float, np.ndarray | float]:
    """Levels centred on 0 (-m, m) with m = max(|lo|, |hi|): a diverging scale puts 0 at its neutral middle."""
    m = np.maximum(np.abs(lo), np.abs(hi))
    if np.ndim(m) == 0:
        return -float(m), float(m)
    return -m, m


def finite_range(values: np.ndarray) -> tuple[float, float]:
    """(min, max) over finite entries; (0, 1) when nothing is finite."""
    if values.size:
        lo, hi = float(np.fmin.reduce(values, axis=None)), float(np.fmax.reduce(values, axis=None))  # skip NaN
        if np.isfinite(lo) and np.isfinite(hi):
            return lo, hi
    finite = values[np.isfinite(values)]  # rare: infinities present, or nothing but NaN
    if finite.size == 0:
        return 0.0, 1.0
    return float(finite.min()), float(finite.max())


class RgbaImageItem(pg.ImageItem):
    """ImageItem for RGBA uint8 images coloured by us: converted once per update to Qt's fastest format.

    pyqtgraph hands Qt an RGBA8888 QImage, which the raster engine converts on every paint; premultiplied
    ARGB32 needs no conversion and draws about twice as fast (bench.py's grid rows).
    Any other image (float, levels, LUT) takes pyqtgraph's normal path.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._bands: tuple[tuple[int, float, int], ...] = ()  # (image row, y, rows): empty = the image as one block
        self._bands_height = 0.0

    def set_bands(self, bands: tuple[tuple[int, float, int], ...], height: float) -> None:
        """Draw image rows [row, row + rows) at y (item coordinates) per band, the item `height` tall: the atlas's
        layers apart, with the strips between them (AtlasLayout.image_bands). No bands: the image as it is."""
        if bands != self._bands or height != self._bands_height:
            self.prepareGeometryChange()
            self._bands, self._bands_height = bands, height
            self.update()

    def boundingRect(self) -> QRectF:  # Qt's name
        if not self._bands or self.image is None:
            return super().boundingRect()
        return QRectF(0.0, 0.0, float(self.image.shape[1]), self._bands_height)

    def paint(self, painter: QPainter, *args: Any) -> None:  # Qt's name
        """The image, or its bands: one drawImage each, from the one QImage converted per update."""
        if not self._bands or self.image is None:
            super().paint(painter, *args)
            return
        if self._renderRequired:
            self.render()
            if self._unrenderable:
                return
        width = float(self.image.shape[1])
        for row, y, rows in self._bands:
            painter.drawImage(QRectF(0.0, y, width, rows), self.qimage, QRectF(0.0, row, width, rows))

    def render(self) -> None:
        image = self.image
        if (
            image is None
            or image.ndim != 3
            or image.shape[2] != 4
            or image.dtype != np.uint8
            or self.levels is not None
            or self.lut is not None
            or self.axisOrder != "row-major"
            or self.autoDownsample
            or image.size == 0
        ):
            super().render()
            return
        rgba = np.ascontiguousarray(image)
        height, width = rgba.shape[:2]
        wrapped = QImage(rgba.data, width, height, width * 4, QImage.Format.Format_RGBA8888)
        self.qimage = wrapped.convertToFormat(QImage.Format.Format_ARGB32_Premultiplied)  # a copy: owns its pixels
        self._renderRequired = False  # pyqtgraph 0.14 ImageItem.render() bookkeeping
        self._unrenderable = False
