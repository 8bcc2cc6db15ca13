"""Output x source maps side by side with shared token labels: the three attributions, then the attention views.

Render only. Attributions are signed, all in nats of log p: one diverging scale centred on 0 for the three, set by
the largest magnitude among them, so a method that is near 0 everywhere (a saturated gradient) looks near 0 instead
of being blown up to the others' contrast; each title gives its own largest magnitude. Green raises the output's
log p and red lowers it, the colours the patching tables use for "carries the answer" and "works against it".
Attention views are shares: 0 to each map's maximum. Hovering a cell names its output and source tokens and the value.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QRectF

from visualizer.widgets.common.empty_hint import EmptyHint
from visualizer.widgets.heatmap.token_axis import TokenAxis

METHOD_TITLES = {
    "gradient_x_delta": "gradient × delta",
    "integrated_gradients": "integrated gradients",
    "occlusion": "occlusion",
}
COLUMNS = 4
ROW_MIN_PX = 200  # one row of maps: its titles, the source axis and at least 120 px of cells
SIGNED_COLOURS = pg.ColorMap([0.0, 0.5, 1.0], [(192, 57, 43), (255, 255, 255), (39, 174, 96)])  # red, white, green


def view_title(name: str) -> str:
    """An attention view's name as a student reads it: "cross L1" could be read as an L1 norm, "cross, layer 1" not."""
    base, _, layer = name.rpartition(" L")
    return f"{base}, layer {layer}" if base and layer.isdigit() else name


class _HoverImage(pg.ImageItem):
    """An image that hands pyqtgraph's hover events to a callback (the cell's text becomes its tooltip)."""

    def __init__(self, on_hover) -> None:
        super().__init__(axisOrder="col-major")
        self._on_hover = on_hover

    def hoverEvent(self, event) -> None:  # pyqtgraph's name
        self._on_hover(event, self)


class SourceMaps(EmptyHint, pg.GraphicsLayoutWidget):
    """One plot per map: rows output positions (top down), columns source positions."""

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.setBackground("w")
        self.setMinimumHeight(ROW_MIN_PX)
        self.plots: dict[str, pg.PlotItem] = {}
        self.images: dict[str, pg.ImageItem] = {}
        self._values: dict[str, np.ndarray] = {}
        self._tokens: tuple[Sequence[str], Sequence[str]] = ((), ())

    def is_empty(self) -> bool:
        """No map is shown (before the first Analyse, or after a new model): the hint is drawn."""
        return not self.plots

    def set_maps(
        self, maps: dict[str, np.ndarray], signed: set[str], output_tokens: Sequence[str], source_tokens: Sequence[str]
    ) -> None:
        """maps: title -> (T, S); the `signed` ones get the diverging scale."""
        if list(maps) != list(self.plots):
            self._rebuild(list(maps))
        self._values, self._tokens = dict(maps), (tuple(output_tokens), tuple(source_tokens))
        shared = max((float(np.abs(maps[name]).max(initial=0.0)) for name in signed if name in maps), default=0.0)
        for name, values in maps.items():
            plot, image = self.plots[name], self.images[name]
            if name in signed:
                top = float(np.abs(values).max(initial=0.0))
                image.setColorMap(SIGNED_COLOURS)
                image.setImage(values.T, levels=(-(shared or 1.0), shared or 1.0))
                plot.setTitle(f"{name}: largest |value| {top:.3g}", size="9pt")
            else:
                top = float(values.max(initial=0.0)) or 1.0
                image.setColorMap(pg.colormap.get("viridis"))
                image.setImage(values.T, levels=(0.0, top))
                plot.setTitle(f"{view_title(name)}: 0–{top:.3g}", size="9pt")
            image.setRect(QRectF(0, 0, values.shape[1], values.shape[0]))
            plot.getAxis("left").set_tokens(output_tokens)
            plot.getAxis("bottom").set_tokens(source_tokens)
            plot.setRange(xRange=(0, values.shape[1]), yRange=(0, values.shape[0]), padding=0)

    def value_text(self, name: str, i: int, j: int) -> str:
        """What hovering cell (output i, source j) of a map says."""
        outputs, sources = self._tokens
        return f"{name}: output {i} {outputs[i]!r} ← source {j} {sources[j]!r}: {self._values[name][i, j]:+.4f}"

    def _rebuild(self, names: list[str]) -> None:
        self.clear()
        self.setMinimumHeight(ROW_MIN_PX * max(1, -(-len(names) // COLUMNS)))  # the page scrolls below it
        self.plots, self.images = {}, {}
        for k, name in enumerate(names):
            axes = {"left": TokenAxis("left", "output", hidden_note="hover"), "bottom": TokenAxis("bottom", "source")}
            plot = self.addPlot(row=k // COLUMNS, col=k % COLUMNS, axisItems=axes)
            plot.invertY(True)
            plot.setMouseEnabled(x=False, y=False)
            plot.setMenuEnabled(False)
            plot.hideButtons()
            image = _HoverImage(lambda event, item, name=name: self._hover(event, name, item))
            plot.addItem(image)
            self.plots[name], self.images[name] = plot, image

    def _hover(self, event, name: str, image: pg.ImageItem) -> None:
        if event.isExit():
            image.setToolTip("")
            return
        pos = event.pos()
        values = self._values.get(name)
        if values is None:
            return
        i, j = int(pos.y()), int(pos.x())
        if 0 <= i < values.shape[0] and 0 <= j < values.shape[1]:
            image.setToolTip(self.value_text(name, i, j))
