"""Line curves of the PE tab, thinned to the pixels they are drawn in (2000 positions in ~500 px)."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor

from core_model.pe_analysis import PELabData

# y values, colour, pen style, whether the loaded model uses this encoding, legend text
SimilarityCurve = tuple[np.ndarray, str, Qt.PenStyle, bool, str]

SAMPLES_PER_PIXEL = 1.0  # 'peak' keeps a min and a max per block: ~2 points per pixel of plot width


def line_curve(plot: pg.PlotItem) -> pg.PlotDataItem:
    """A new curve on `plot`: peak downsampling (each pixel's min-max, never aliased samples) and clip-to-view.

    Zoomed in, the blocks shrink to single samples and the true curve shows. pyqtgraph's default keeps
    ~5 samples per pixel, which leaves 2000 positions unthinned in a 500 px plot: hence the factor.
    """
    plot.setDownsampling(auto=True, mode="peak")  # the plot hands these to the curves it holds and is given
    plot.setClipToView(True)
    curve = plot.plot()
    curve.opts["autoDownsampleFactor"] = SAMPLES_PER_PIXEL  # no public setter in pyqtgraph 0.14
    return curve


def show_curves(plot: pg.PlotItem, pool: list[pg.PlotDataItem], count: int) -> None:
    """Reuse a pool of curves: add more when needed, take surplus ones off the plot."""
    while len(pool) < count:
        pool.append(line_curve(plot))
    for i, curve in enumerate(pool):
        on_plot = curve.scene() is not None
        if i < count and not on_plot:
            plot.addItem(curve)
        elif i >= count and on_plot:
            plot.removeItem(curve)


def curve_colour(i: int, n: int) -> QColor:
    """Colour of curve i of n: hues spread round the wheel at one lightness, so every curve reads on the plots'
    black background (full-value hues put pure blue there at a contrast of about 2:1)."""
    return QColor.fromHslF((i / max(n, 1)) % 1.0, 0.9, 0.65)


def similarity_curves(data: PELabData, sin_colour: str, rope_colour: str) -> dict[str, SimilarityCurve]:
    """The four similarity-vs-offset curves, normalised; `used` marks the loaded model's encoding."""
    m0, m1 = data.params.references
    kind = data.pe_kind
    return {
        "sin": (
            data.similarity_sin / data.sin_norm,
            sin_colour,
            Qt.PenStyle.SolidLine,
            kind == "sinusoidal",
            f"sinusoidal PE(m)·PE(m+k), m = {m0}",
        ),
        "sin_second": (
            data.similarity_sin_second / data.sin_norm,
            sin_colour,
            Qt.PenStyle.DashLine,
            kind == "sinusoidal",
            f"sinusoidal, m = {m1}",
        ),
        "rope": (
            data.similarity_rope / data.rope_norm,
            rope_colour,
            Qt.PenStyle.SolidLine,
            kind == "rope",
            f"RoPE q·k, q at m = {m0}, k at m+k",
        ),
        "rope_second": (
            data.similarity_rope_second / data.rope_norm,
            rope_colour,
            Qt.PenStyle.DashLine,
            kind == "rope",
            f"RoPE, m = {m1}",
        ),
    }
