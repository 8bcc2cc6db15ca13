"""Which atlas frame a grid draws its maps in, and the layout each frame gets, blank strips included.

A frame is built for one shape of maps; typing and deleting a symbol switches between two shapes, so the frame of
the shape shown before is kept as a spare and reused. Labels that must cover no cell (the role badges) stand in a
blank strip above each row of maps (AtlasLayout.strip): asked for in screen pixels, kept in atlas rows, so the rows
it takes depend on the view's size and on square cells. They are worked out when the shape or the view's size
changes, never per frame (atlas.strip_rows does the arithmetic).
"""

from __future__ import annotations

import logging

import numpy as np

from visualizer.state.snapshots import KindMaps
from visualizer.widgets.heatmap.atlas import AtlasLayout, strip_rows
from visualizer.widgets.heatmap.atlas_frame import AtlasFrame
from visualizer.widgets.heatmap.atlas_plot import FIT_PADDING, AtlasPlot

log = logging.getLogger(__name__)


class GridFrames:
    """The frame shown (None: nothing shown), the spare of the shape before, and the strips asked for."""

    def __init__(self, plot: AtlasPlot) -> None:
        self._plot = plot
        self.shown: AtlasFrame | None = None
        self._spare: AtlasFrame | None = None
        self.strip_px = 0  # screen pixels kept blank above each row of maps (AttentionGrid.reserve_strips)
        self.pending = False  # the frame got other strips while hidden: fit the plot to them when drawn

    def strip_rows(self, shape: tuple[int, ...]) -> float:
        """Atlas rows of blank strip above each row of maps of `shape` (L, H, Tq, Tk) that come to strip_px screen
        pixels once the plot frames them in its view at its size now (0 when none is asked for or there is no room)."""
        if not self.strip_px:
            return 0.0
        n_layers, n_heads, tq, tk = shape
        vb = self._plot.plot_item.getViewBox()
        layer_px = vb.height() / (n_layers * (1 + 2 * FIT_PADDING))
        width = AtlasLayout.width_of(n_heads, tk)
        square_px = vb.width() / (width * (1 + 2 * FIT_PADDING)) if self._plot.square else None
        return strip_rows(self.strip_px, n_layers, tq, layer_px, square_px)

    def relaid(self, frame: AtlasFrame) -> bool:
        """Give `frame` the strips its shape needs at the view's size now; whether its layout changed."""
        lay = frame.layout
        shape = (lay.n_layers, lay.n_heads, lay.tq, lay.tk)
        strip = self.strip_rows(shape)
        if strip == lay.strip:
            return False
        frame.relay(AtlasLayout.build(*shape, strip=strip))
        return True

    def refit(self, maps: KindMaps, ablated: np.ndarray, hidden: bool) -> bool:
        """The strips asked for or the view's size changed: give the frame shown the strips it needs now; whether it
        was laid out anew (the plot fitted, token ticks and "ablated" labels placed; the image is not coloured again).

        `hidden`: newer maps are drawn when the grid is shown, and the plot is fitted to this layout then."""
        frame = self.shown
        if frame is None or not self.relaid(frame):
            return False
        if hidden:
            self.pending = True
            return False
        lay = frame.layout
        self._plot.fit(lay)
        self._plot.set_ticks(lay, maps)
        self._plot.set_ablated_labels(lay, frame.ablated_heads(ablated))
        return True

    def frame_for(self, maps: KindMaps) -> AtlasFrame:
        """The frame for the maps' shape, the plot fitted to it when it changed or was laid out anew while hidden.

        Geometry and buffers are rebuilt only when the shape is neither the one shown nor the spare."""
        relayout, self.pending = self.pending, False
        if self.shown is None or not self.shown.fits(maps):
            if self._spare is not None and self._spare.fits(maps):
                frame = self._spare
                self.relaid(frame)  # laid out at another view size, or before badges came or went
            else:
                n_layers, n_heads, tq, tk = maps.values.shape
                frame = AtlasFrame(
                    AtlasLayout.build(n_layers, n_heads, tq, tk, strip=self.strip_rows(maps.values.shape))
                )
                log.debug("atlas layout %s -> %dx%d", maps.values.shape, frame.layout.height, frame.layout.width)
            before = self.shown if self.shown is not None else self._spare
            self._spare, self.shown = None if before is frame else before, frame
            self._plot.fit(frame.layout)
        elif relayout:
            self._plot.fit(self.shown.layout)
        return self.shown

    def hide(self) -> None:
        """Nothing shown: the frame shown becomes the spare."""
        self._spare, self.shown = self.shown if self.shown is not None else self._spare, None
