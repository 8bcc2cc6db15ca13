"""The pyqtgraph side of the grid: one plot holding the atlas image, titles, token ticks, colour bar and overlays.

Render only: it is handed a layout, pixels and rectangles, and keeps every item alive between frames so that an
update is setImage/setData/setTicks on existing items (a new axis text costs a relayout, so ticks are cached).

Two coordinate systems. Atlas coordinates are the image's pixels (AtlasLayout: map_rect, cell_at, outlines); the
image and everything drawn over the maps live in `atlas_space`, an item group that scales them into the view. The
view gives each map and its gutter one unit (x: head, y: layer), so a new input length only rescales that group:
the view range, the axes' layer and head titles and the role badges stay put. Re-framing the plot for every length
would lay the axes out again and repaint the whole view on each keystroke.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF, QRectF
from PySide6.QtGui import QFontMetricsF, QPolygonF, QTransform

from visualizer.widgets.heatmap.atlas import (
    DIVERGING_MODES,
    HOVER_HINT,
    AtlasLayout,
    abbreviation_legend,
    ablated_label_spots,
    cross_lines,
    readable_labels,
    token_tick_levels,
)
from visualizer.widgets.heatmap.atlas_frame import AtlasFrame
from visualizer.widgets.heatmap.colours import SCORES_COLORMAP, RgbaImageItem, make_lut
from visualizer.widgets.heatmap.label_axis import LabelAxis
from visualizer.widgets.heatmap.mask_backdrop import VIEW_BACKGROUND, MaskBackdrop

FIT_PADDING = 0.01  # of the view range, on each side


class AtlasPlot:
    """The GraphicsLayoutWidget of one grid: plot (atlas, row outline, "ablated" labels) plus a colour bar."""

    def __init__(self, colormap: str, legend_changed: Callable[[str], None] = lambda _text: None) -> None:
        """legend_changed: told the abbreviations the labels use (the grid shows them in its legend)."""
        self._tick_source: tuple[AtlasLayout, tuple[str, ...], tuple[str, ...]] | None = None
        self.legend_changed = legend_changed
        # one packed RGBA word per colour (a take per frame); scores get a diverging scale centred on 0
        luts = {name: make_lut(name).view(np.uint32).ravel() for name in (colormap, SCORES_COLORMAP)}
        modes = ("weights", "scores", "norms", "rollout", "difference")
        self._luts = {mode: (name, luts[name]) for mode in modes for name in [_colormap_for(mode, colormap)]}
        self._colorbar_map = colormap
        self._ticks_key: tuple = ()
        self._titles: tuple = ()  # (layer texts, head texts, their positions in view units) on the axes now
        self._token_ticks: dict[str, list] = {}  # side -> the token ticks on that axis now
        self._framed: tuple | None = None  # (layers, heads, square) the view range was set for
        self.square = False  # View > Square cells (set_square_cells)
        self._advance: dict[str, dict[str, float]] = {}  # per font
        self._highlight_key: tuple = ()
        self._outlined = self._crossed = False  # whether the highlight / ablation curves hold any line now
        self._hovered = False  # whether the hover curve outlines a cell now
        self._ablated_labels: list[pg.TextItem] = []
        self.graphics = pg.GraphicsLayoutWidget()
        self.graphics.setAntialiasing(False)
        self.graphics.setBackground(VIEW_BACKGROUND)
        axes = {side: LabelAxis(side) for side in ("left", "top", "right", "bottom")}
        self.plot_item: pg.PlotItem = self.graphics.addPlot(row=0, col=0, enableMenu=False, axisItems=axes)
        self.atlas_space = pg.ItemGroup()  # atlas coordinates; its transform scales them into the view's slots
        self.image_item = RgbaImageItem(axisOrder="row-major")
        self.mask_backdrop = MaskBackdrop()
        self.highlight_curve = pg.PlotDataItem(connect="finite", pen=pg.mkPen("#ff3030", width=2))
        self.hover_curve = pg.PlotDataItem(connect="finite", pen=pg.mkPen("#ffffff", width=2))
        self.cross_curve = pg.PlotDataItem(connect="finite", pen=pg.mkPen(255, 255, 255, 200, width=2))
        self.colorbar = pg.ColorBarItem(values=(0.0, 1.0), colorMap=pg.colormap.get(colormap), interactive=False)
        self.graphics.addItem(self.colorbar, row=0, col=1)
        self._setup_plot()
        self.plot_item.getViewBox().sigResized.connect(lambda *_: self._on_resized())

    def _setup_plot(self) -> None:
        """A static matrix view: layer 1 on top, no panning/zooming, our own menu, labels as axis ticks."""
        plot = self.plot_item
        plot.addItem(self.atlas_space, ignoreBounds=True)
        for item in (self.mask_backdrop, self.image_item, self.highlight_curve, self.cross_curve, self.hover_curve):
            self.atlas_space.addItem(item)
        plot.invertY(True)
        plot.setAspectLocked(False)  # fill the view; View > Square cells locks it (set_square_cells)
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
        self.mask_backdrop.setZValue(-1)
        self.image_item.setZValue(0)
        self.highlight_curve.setZValue(10)
        self.cross_curve.setZValue(15)
        self.hover_curve.setZValue(12)

    def fit(self, lay: AtlasLayout, force: bool = False) -> None:
        """Scale a new atlas shape into the view's slots; the view range changes only with the layers and heads
        (or square cells). Its token ticks are redrawn on the next set_ticks."""
        self._ticks_key = ()
        self.mask_backdrop.set_rects(lay.map_rects, QRectF(0, 0, lay.width, lay.view_height))
        self.image_item.set_bands(lay.image_bands() if lay.strip else (), lay.view_height)
        sx, sy = lay.view_scale
        self.atlas_space.setTransform(QTransform.fromScale(sx, sy))
        vb = self.plot_item.getViewBox()
        if self.square:  # square cells: screen pixels per view unit in x over y that make a cell square
            vb.setAspectLocked(True, ratio=sy / sx)
        framed = (lay.n_layers, lay.n_heads, self.square)
        if framed != self._framed or force:
            self._framed = framed
            vb.setRange(xRange=(0, lay.n_heads + 1), yRange=(0, lay.n_layers), padding=FIT_PADDING)
            vb.updateMatrix()  # now, not lazily inside the next paint (which then scheduled a second paint)

    def set_ticks(self, lay: AtlasLayout, maps: TickLabels) -> None:
        """Layer/head titles always; token labels whole, abbreviated or none, at the cell size shown now."""
        self._tick_source = (lay, maps.query_labels, maps.key_labels)
        plot = self.plot_item
        if self._ticks_key[:1] != (maps.values.shape,):
            self._set_titles(lay)
        (px, py), (sx, sy) = self._pixels_per_unit(), lay.view_scale
        cell_w, cell_h = px * sx, py * sy  # one cell on screen
        font = plot.getAxis("bottom").style["tickFont"] or self.graphics.font()
        metrics = QFontMetricsF(font)
        advance = self._advance.setdefault(font.key(), {})  # text -> width: a dozen tokens, hundreds of labels

        def width(labels: tuple[str, ...]) -> float:  # over the distinct tokens: a dozen, not 128 labels
            distinct = set(labels)
            for t in distinct.difference(advance):
                advance[t] = metrics.horizontalAdvance(t)
            return max(map(advance.__getitem__, distinct), default=0.0)

        rows = None if metrics.height() * 0.8 > cell_h else readable_labels(maps.query_labels, lambda t: width(t) <= 44)
        # no glyph is narrower than a pixel: below 3 px a column fits no label, whatever the tokens
        cols = None if cell_w < 3 else readable_labels(maps.key_labels, lambda t: width(t) + 2 <= cell_w)
        key = (maps.values.shape, rows, cols)
        if key == self._ticks_key:
            return
        self._ticks_key = key
        # new ticks relay an axis out and repaint the view: labels too small to draw stay hidden at any length
        for side, labels, offsets, scale in (("right", rows, lay.row_off, sy), ("bottom", cols, lay.col_off, sx)):
            ticks = token_tick_levels(offsets, labels, scale) if labels else []
            if ticks != self._token_ticks.get(side):
                self._token_ticks[side] = ticks
                plot.getAxis(side).setTicks(ticks)
        drawn = ((maps.query_labels, rows), (maps.key_labels, cols))
        shortened = tuple(t for full, shown in drawn if shown is not None and shown != full for t in full)
        hidden = [axis for axis, shown in (("query", rows), ("key", cols)) if shown is None]
        notes = [abbreviation_legend(shortened)] if shortened else []
        if hidden:  # say where the tokens went, so a missing axis never reads as "no tokens"
            notes.append(f"{' and '.join(hidden)} labels too small to draw here: {HOVER_HINT}")
        self.legend_changed(" · ".join(notes))

    def _set_titles(self, lay: AtlasLayout) -> None:
        """Layer and head titles centred on their maps; kept as they are while they would move by under half a
        pixel (a new length moves a map's centre by a small fraction of its gutter): new ticks relay the axis out."""
        sx, sy = lay.view_scale
        layers = tuple(f"L{layer + 1}" for layer in range(lay.n_layers))
        heads = (*(f"H{h + 1}" for h in range(lay.n_heads)), "avg")
        at = tuple((lay.row_off + lay.tq / 2) * sy), tuple((lay.col_off + lay.tk / 2) * sx)
        px, py = self._pixels_per_unit()
        if self._titles[:2] == (layers, heads) and all(
            abs(a - b) * scale < 0.5 for old, new, scale in zip(self._titles[2], at, (py, px)) for a, b in zip(old, new)
        ):
            return
        self._titles = (layers, heads, at)
        self.plot_item.getAxis("left").setTicks([list(zip(at[0], layers))])
        self.plot_item.getAxis("top").setTicks([list(zip(at[1], heads))])

    def to_scene(self, atlas: QPointF | QRectF) -> QPointF | QPolygonF:
        """A point or rectangle in atlas coordinates, in the scene (the view's matrix brought up to date first)."""
        return self.plot_item.getViewBox().mapViewToScene(self.atlas_space.mapToParent(atlas))

    def from_scene(self, scene_pos: QPointF) -> QPointF:
        """A scene point in atlas coordinates (the view's matrix brought up to date first)."""
        return self.atlas_space.mapFromParent(self.plot_item.getViewBox().mapSceneToView(scene_pos))

    def _pixels_per_unit(self) -> tuple[float, float]:
        """Screen pixels per view unit in x and y (the view spans the slots plus 1% padding each side)."""
        vb = self.plot_item.getViewBox()
        (x0, x1), (y0, y1) = vb.viewRange()
        return vb.width() / max(x1 - x0, 1e-9), vb.height() / max(y1 - y0, 1e-9)

    def _on_resized(self) -> None:
        if self._tick_source is not None:
            lay, query, key = self._tick_source
            self._set_titles(lay)  # kept within half a pixel of their maps at the old size: check at the new one
            self.set_ticks(lay, _Labels(lay, query, key))

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
        unit = (-1.0, 1.0) if mode in DIVERGING_MODES else (0.0, 1.0)
        self.set_colorbar_levels(unit if scale_mode == "per_map" else (float(frame.lo), float(frame.hi)))
        self.set_ablated_labels(frame.layout, ablated)

    def set_colorbar_label(self, text: str) -> None:
        axis = self.colorbar.getAxis("left")
        if axis.labelText != text:  # asked with every frame: setLabel lays the plot out again
            axis.setLabel(text)

    def set_ablated_labels(self, lay: AtlasLayout, ablated: np.ndarray | None) -> None:
        """Ablated (L, H) heads crossed out and labelled "ablated"; a layer with every head off gets "no heads on"
        on its average. A small pool of TextItems is reused, the rest hidden."""
        rects = ablated_label_spots(lay, ablated)
        if ablated is not None or self._crossed:  # an empty curve stays empty without a setData per frame
            self.cross_curve.setData(*cross_lines(lay, ablated))
            self._crossed = ablated is not None
        while len(self._ablated_labels) < len(rects):
            label = pg.TextItem("ablated", color="w", anchor=(0.5, 0.5), fill=pg.mkBrush(0, 0, 0, 160))
            label.setZValue(20)
            self.atlas_space.addItem(label)
            self._ablated_labels.append(label)
        for k, label in enumerate(self._ablated_labels):
            if k < len(rects):
                label.setPos(rects[k][0].center())
                label.setText(rects[k][1])
            label.setVisible(k < len(rects))

    def set_square_cells(self, square: bool, lay: AtlasLayout | None) -> None:
        """Square cells (aspect locked) or cells stretched to fill the view."""
        self.square = square
        if not square:
            self.plot_item.setAspectLocked(False)
        if lay is not None:
            self.fit(lay, force=True)

    def set_hover(self, lay: AtlasLayout | None, cell: tuple[int, int, int, int] | None) -> None:
        """Outline the hovered cell's query row and key column in its map (nothing off the maps)."""
        if lay is None or cell is None:
            if self._hovered:  # asked on every frame: an empty curve stays empty without a setData
                self.hover_curve.setData([], [])
                self._hovered = False
            return
        self._hovered = True
        self.hover_curve.setData(*lay.cell_cross(*cell))

    @contextmanager
    def hover_hidden(self) -> Iterator[None]:
        """The hovered cell's outline left out (of an exported image): it shows where the mouse was, not the maps."""
        shown = self.hover_curve.isVisible()
        self.hover_curve.setVisible(False)
        try:
            yield
        finally:
            self.hover_curve.setVisible(shown)

    def set_highlight(self, lay: AtlasLayout | None, row: int | None, shown: bool) -> bool:
        """Outline query row `row` of every map (nothing when row is None, out of range, or no maps are shown);
        whether a row is outlined now."""
        key = (lay, row, shown)
        if key == self._highlight_key:
            return self._outlined
        self._highlight_key = key
        if lay is None or row is None or not (0 <= row < lay.tq) or not shown:
            if self._outlined:
                self.highlight_curve.setData([], [])
                self._outlined = False
            return False
        self.highlight_curve.setData(*lay.row_outline(row))
        self._outlined = True
        return True


class TickLabels(Protocol):
    """What set_ticks reads of the maps: a KindMaps, or _Labels on a resize."""

    @property
    def values(self) -> np.ndarray: ...
    @property
    def query_labels(self) -> tuple[str, ...]: ...
    @property
    def key_labels(self) -> tuple[str, ...]: ...


@dataclass(frozen=True)
class _Labels:
    """The part of KindMaps that set_ticks reads (a resize re-picks the labels without the maps)."""

    layout: AtlasLayout
    query_labels: tuple[str, ...]
    key_labels: tuple[str, ...]

    @property
    def values(self) -> np.ndarray:
        return np.empty((self.layout.n_layers, self.layout.n_heads, self.layout.tq, self.layout.tk), np.bool_)


def _colormap_for(mode: str, colormap: str) -> str:
    """Signed values (scores, differences) get the diverging scale centred on 0; the rest the grid's colormap."""
    return SCORES_COLORMAP if mode in DIVERGING_MODES else colormap
