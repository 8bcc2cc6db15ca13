"""The pyqtgraph side of the grid: one plot holding the atlas image, titles, token ticks, colour bar and overlays.

Render only: it is handed a layout, pixels and rectangles, and keeps every item alive between frames so that an
update is setImage/setData/setTicks on existing items (a new axis text costs a relayout, so ticks are cached).
"""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from visualizer.state.snapshots import KindMaps
from visualizer.widgets.heatmap.atlas import AVG, AtlasLayout, cross_lines, token_tick_levels
from visualizer.widgets.heatmap.atlas_frame import AtlasFrame
from visualizer.widgets.heatmap.colours import SCORES_COLORMAP, RgbaImageItem, make_lut
from visualizer.widgets.heatmap.mask_backdrop import VIEW_BACKGROUND, MaskBackdrop


class AtlasPlot:
    """The GraphicsLayoutWidget of one grid: plot (atlas, row outline, "ablated" labels) plus a colour bar."""

    def __init__(self, colormap: str, max_token_ticks: int) -> None:
        self._max_token_ticks = max_token_ticks
        # one packed RGBA word per colour (a take per frame); scores get a diverging scale centred on 0
        self._luts = {mode: (name, make_lut(name).view(np.uint32).ravel())
                      for mode, name in (("weights", colormap), ("scores", SCORES_COLORMAP))}
        self._colorbar_map = colormap
        self._ticks_key: tuple = ()
        self._highlight_key: tuple = ()
        self._ablated_labels: list[pg.TextItem] = []
        self.graphics = pg.GraphicsLayoutWidget()
        self.graphics.setAntialiasing(False)
        self.graphics.setBackground(VIEW_BACKGROUND)
        self.plot_item: pg.PlotItem = self.graphics.addPlot(row=0, col=0)
        self.image_item = RgbaImageItem(axisOrder="row-major")
        self.mask_backdrop = MaskBackdrop()
        self.highlight_curve = pg.PlotDataItem(connect="finite", pen=pg.mkPen("#ff3030", width=2))
        self.cross_curve = pg.PlotDataItem(connect="finite", pen=pg.mkPen(255, 255, 255, 200, width=2))
        self.colorbar = pg.ColorBarItem(values=(0.0, 1.0), colorMap=pg.colormap.get(colormap), interactive=False)
        self.graphics.addItem(self.colorbar, row=0, col=1)
        self._setup_plot()

    def _setup_plot(self) -> None:
        """A static matrix view: layer 1 on top, no panning/zooming, our own menu, labels as axis ticks."""
        plot = self.plot_item
        plot.addItem(self.mask_backdrop)
        plot.addItem(self.image_item)
        plot.addItem(self.highlight_curve)
        plot.addItem(self.cross_curve)
        plot.invertY(True)
        plot.setAspectLocked(True)
        plot.setMouseEnabled(x=False, y=False)
        plot.setMenuEnabled(False)
        plot.hideButtons()
        plot.showAxis("top")
        plot.showAxis("right")
        for name in ("left", "top", "right", "bottom"):
            plot.getAxis(name).setStyle(tickLength=0)
            plot.getAxis(name).enableAutoSIPrefix(False)  # ticks are labels, not numbers; it re-set HTML per range
        # fixed axis sizes: auto-sizing to new tick text re-laid out the plot and painted it twice per keystroke
        plot.getAxis("left").setWidth(32)
        plot.getAxis("right").setWidth(48)  # room for "<bos>" / "<pad>"
        plot.getAxis("top").setHeight(24)
        plot.getAxis("bottom").setHeight(24)
        for name in ("right", "bottom"):  # token labels: draw a level whenever its text fits
            plot.getAxis(name).setStyle(textFillLimits=[(0, 0.9)])
        self.mask_backdrop.setZValue(-1)
        self.image_item.setZValue(0)
        self.highlight_curve.setZValue(10)
        self.cross_curve.setZValue(15)

    def fit(self, lay: AtlasLayout) -> None:
        """Frame a new atlas shape (its ticks are redrawn on the next set_ticks)."""
        self._ticks_key = ()
        self.mask_backdrop.set_rects([lay.map_rect(layer, head) for layer in range(lay.n_layers)
                                      for head in [*range(lay.n_heads), AVG]])
        vb = self.plot_item.getViewBox()
        vb.setRange(xRange=(0, lay.width), yRange=(0, lay.height), padding=0.01)
        vb.updateMatrix()  # now, not lazily inside the next paint (which then scheduled a second paint)

    def set_ticks(self, lay: AtlasLayout, maps: KindMaps) -> None:
        """Layer/head titles always; token labels only when maps are small enough to read them."""
        key = (maps.values.shape, maps.query_labels, maps.key_labels)
        if key == self._ticks_key:
            return
        plot = self.plot_item
        if self._ticks_key[:1] != key[:1]:  # titles depend on the shape only: a new axis text costs a repaint
            plot.getAxis("left").setTicks([[(off + lay.tq / 2, f"L{l + 1}") for l, off in enumerate(lay.row_off)]])
            heads = [f"H{h + 1}" for h in range(lay.n_heads)] + ["avg"]
            plot.getAxis("top").setTicks([[(off + lay.tk / 2, name) for off, name in zip(lay.col_off, heads)]])
        self._ticks_key = key
        show_q = 0 < lay.tq <= self._max_token_ticks
        show_k = 0 < lay.tk <= self._max_token_ticks
        plot.getAxis("right").setTicks(token_tick_levels(lay.row_off, maps.query_labels) if show_q else [])
        plot.getAxis("bottom").setTicks(token_tick_levels(lay.col_off, maps.key_labels) if show_k else [])

    def set_colorbar_levels(self, levels: tuple[float, float]) -> None:
        if tuple(self.colorbar.levels()) != levels:
            self.colorbar.setLevels(levels)

    def draw(self, frame: AtlasFrame, mode: str, scale_mode: str, ablated: np.ndarray | None) -> None:
        """Colour the frame through the mode's lookup table into the one ImageItem; colour bar and marks follow."""
        name, lut32 = self._luts[mode]
        self.image_item.setImage(frame.paint(lut32, scale_mode, mode, ablated), autoLevels=False)
        if name != self._colorbar_map:
            self._colorbar_map = name
            self.colorbar.setColorMap(pg.colormap.get(name))
        unit = (-1.0, 1.0) if mode == "scores" else (0.0, 1.0)
        self.set_colorbar_levels(unit if scale_mode == "per_map" else (float(frame.lo), float(frame.hi)))
        self.set_ablated_labels(frame.layout, ablated)

    def set_colorbar_label(self, text: str) -> None:
        self.colorbar.getAxis("left").setLabel(text)

    def set_ablated_labels(self, lay: AtlasLayout, ablated: np.ndarray | None) -> None:
        """Ablated (L, H) heads crossed out and labelled "ablated"; a layer with every head off gets "no heads on"
        on its average. A small pool of TextItems is reused, the rest hidden."""
        spots = [] if ablated is None else list(zip(*np.nonzero(ablated)))
        rects = [(lay.map_rect(int(layer), int(head)), "ablated") for layer, head in spots]
        if ablated is not None:
            rects += [(lay.map_rect(int(layer), AVG), "no heads on") for layer in np.nonzero(ablated.all(axis=1))[0]]
        self.cross_curve.setData(*cross_lines(lay, ablated))
        while len(self._ablated_labels) < len(rects):
            label = pg.TextItem("ablated", color="w", anchor=(0.5, 0.5), fill=pg.mkBrush(0, 0, 0, 160))
            label.setZValue(20)
            self.plot_item.addItem(label)
            self._ablated_labels.append(label)
        for k, label in enumerate(self._ablated_labels):
            if k < len(rects):
                label.setPos(rects[k][0].center())
                label.setText(rects[k][1])
            label.setVisible(k < len(rects))

    def set_highlight(self, lay: AtlasLayout | None, row: int | None, shown: bool) -> None:
        """Outline query row `row` of every map (nothing when row is None, out of range, or no maps are shown)."""
        key = (lay, row, shown)
        if key == self._highlight_key:
            return
        self._highlight_key = key
        if lay is None or row is None or not (0 <= row < lay.tq) or not shown:
            self.highlight_curve.setData([], [])
            return
        self.highlight_curve.setData(*lay.row_outline(row))
