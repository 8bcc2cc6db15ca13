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
    """Reuse a pool of curves: add more when needed, hide surplus ones (a hidden curve adds nothing to the view's
    range). A curve taken off the plot cannot simply be added back: pyqtgraph's clip-to-view then asks the widget
    for a view range before the curve has its view box."""
    while len(pool) < count:
        pool.append(line_curve(plot))
    for i, curve in enumerate(pool):
        if i >= count and curve.isVisible():
            curve.setData([], [])  # nothing left behind for an exporter that walks every item
        curve.setVisible(i < count)


def curve_colour(i: int, n: int) -> QColor:
    """Colour of curve i of n: hues spread round the wheel at one lightness, so every curve reads on the plots'
    black background (full-value hues put pure blue there at a contrast of about 2:1)."""
    return QColor.fromHslF((i / max(n, 1)) % 1.0, 0.9, 0.65)


def similarity_curves(data: PELabData, sin_colour: str, rope_colour: str) -> dict[str, SimilarityCurve]:
    """The four similarity-vs-offset curves, normalised to cosines; `used` marks the loaded model's encoding.

    Both encodings depend on the offset Δ alone, so each second reference's curve lies on the first one's: drawn
    dashed in a lighter shade over it, and its legend says so when the numbers agree (else it would hide under it and
    a new "Second m" would seem to change nothing)."""
    m0, m1 = data.params.references
    kind = data.pe_kind

    def second(name: str, y: np.ndarray, first: np.ndarray) -> str:
        on_first = y.shape == first.shape and bool(np.allclose(y, first, rtol=0.0, atol=1e-9))
        return f"{name}, m = {m1}" + (f": on the m = {m0} curve, only Δ matters" if on_first else "")

    sin, sin2 = data.similarity_sin / data.sin_norm, data.similarity_sin_second / data.sin_norm
    rope, rope2 = data.similarity_rope / data.rope_norm, data.similarity_rope_second / data.rope_norm
    dashed = Qt.PenStyle.DashLine
    return {
        "sin": (
            sin,
            sin_colour,
            Qt.PenStyle.SolidLine,
            kind == "sinusoidal",
            f"sinusoidal cos(PE(m), PE(m+Δ)), m = {m0}",
        ),
        "sin_second": (sin2, lighter(sin_colour), dashed, kind == "sinusoidal", second("sinusoidal", sin2, sin)),
        "rope": (rope, rope_colour, Qt.PenStyle.SolidLine, kind == "rope", f"RoPE cos(q at m, k at m+Δ), m = {m0}"),
        "rope_second": (rope2, lighter(rope_colour), dashed, kind == "rope", second("RoPE", rope2, rope)),
    }


def lighter(colour: str) -> str:
    """A lighter shade of `colour`: a dashed curve drawn over a curve of the colour itself stays visible."""
    return QColor(colour).lighter(170).name()
