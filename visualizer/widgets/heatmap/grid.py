"""Every layer x head map of one attention kind (plus a head average), drawn as ONE atlas image for speed.

One ImageItem per map repaints ~40 times/s for 48 maps (QT-NOTES.md); a single RGBA atlas with transparent
gutters, coloured here through a lookup table and pushed with setImage(autoLevels=False), stays far above 60.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyqtgraph as pg
from numpy.lib.stride_tricks import as_strided
from PySide6.QtCore import QPoint, QPointF, QRectF, Qt, Signal
from PySide6.QtGui import QAction, QCursor, QShowEvent
from PySide6.QtWidgets import QLabel, QMenu, QStackedWidget, QToolTip, QVBoxLayout, QWidget

from visualizer.state.snapshots import KIND_TITLES, KindMaps
from visualizer.widgets.common import image_export as export
from visualizer.widgets.heatmap.large_view import (
    BLANK_INDEX, DEFAULT_COLORMAP, DIM_OFFSET, MapDialog, RgbaImageItem, ask_path_and_export, cell_text, colour_scale,
    finite_range, make_lut,
)

log = logging.getLogger(__name__)

SCALE_MODES = ("shared", "per_map")
MODE_TEXT = {"weights": "weights", "scores": "pre-softmax scores"}
AVG = -1  # the head index of the head-average column


@dataclass(frozen=True, eq=False)  # identity equality: the arrays make value equality ambiguous
class AtlasLayout:
    """Where each (layer, column) map sits in the atlas; column n_heads is the head average.

    Map pixel (i, j) of map (l, c) is atlas pixel (row_off[l] + i, col_off[c] + j), i.e. view x in
    [col_off[c] + j, +1) and view y in [row_off[l] + i, +1).
    """

    n_layers: int
    n_heads: int
    tq: int
    tk: int
    row_off: np.ndarray  # (L,)
    col_off: np.ndarray  # (H + 1,)
    height: int
    width: int
    row_step: int  # atlas rows from one layer to the next (Tq + gutter)
    col_step: int  # atlas columns from one head to the next (Tk + gutter)
    row_owner: np.ndarray  # (height,) layer of each atlas row, -1 in gutters
    col_owner: np.ndarray  # (width,) column of each atlas column, -1 in gutters

    @classmethod
    def build(cls, n_layers: int, n_heads: int, tq: int, tk: int, gutter: int = 1, avg_gap: int = 2) -> AtlasLayout:
        """Precompute offsets and index arrays once per shape, so a frame is a few vectorised numpy ops."""
        row_off = np.arange(n_layers) * (tq + gutter)
        col_off = np.arange(n_heads + 1) * (tk + gutter)
        col_off[n_heads] += avg_gap - gutter  # a wider gap sets the average apart
        height, width = int(row_off[-1] + tq), int(col_off[-1] + tk)
        row_owner = np.full(height, -1)
        col_owner = np.full(width, -1)
        for layer, off in enumerate(row_off):
            row_owner[off:off + tq] = layer
        for col, off in enumerate(col_off):
            col_owner[off:off + tk] = col
        return cls(n_layers, n_heads, tq, tk, row_off, col_off, height, width, tq + gutter, tk + gutter,
                   row_owner, col_owner)

    def map_views(self, atlas: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Writable strided views of a (height, width) atlas: heads (L, Tq, H, Tk) and average (L, Tq, Tk).

        Precomputed once per shape, so filling the atlas is two strided copies and never touches the gutters.
        """
        s_row, s_col = atlas.strides
        heads = as_strided(atlas, shape=(self.n_layers, self.tq, self.n_heads, self.tk),
                           strides=(s_row * self.row_step, s_row, s_col * self.col_step, s_col))
        avg = as_strided(atlas[:, int(self.col_off[-1]):], shape=(self.n_layers, self.tq, self.tk),
                         strides=(s_row * self.row_step, s_row, s_col))
        return heads, avg

    def column(self, head: int) -> int:
        """Atlas column of a head (-1 = average)."""
        return self.n_heads if head == AVG else head

    def map_rect(self, layer: int, head: int) -> QRectF:
        """The map's rectangle in view coordinates."""
        col = self.column(head)
        return QRectF(float(self.col_off[col]), float(self.row_off[layer]), float(self.tk), float(self.tq))

    def cell_at(self, x: float, y: float) -> tuple[int, int, int, int] | None:
        """(layer, head, i, j) under a view point (head -1 = average), None in gutters or outside."""
        col_px, row_px = int(np.floor(x)), int(np.floor(y))
        if not (0 <= row_px < self.height and 0 <= col_px < self.width):
            return None
        layer, col = int(self.row_owner[row_px]), int(self.col_owner[col_px])
        if layer < 0 or col < 0:
            return None
        head = AVG if col == self.n_heads else col
        return layer, head, row_px - int(self.row_off[layer]), col_px - int(self.col_off[col])


def fill_shown(values: np.ndarray, valid: np.ndarray, shown: np.ndarray) -> None:
    """Write values (NaN where blank) and the head average into `shown` in place.

    Shape: values (L, H, Tq, Tk), valid (Tq, Tk) -> shown (L, H + 1, Tq, Tk). The average is the mean over heads
    of the shown cells; the mask is shared by all heads, so a plain mean is exact unless some head has a
    non-finite value in a valid cell (then the slower masked mean runs).
    """
    heads = shown[:, :-1]
    np.copyto(heads, values)
    np.copyto(heads, np.float32(np.nan), where=~valid)
    finite = np.isfinite(heads)
    if np.count_nonzero(finite) == np.count_nonzero(valid) * values.shape[0] * values.shape[1]:
        np.mean(heads, axis=1, out=shown[:, -1])
        return
    heads[~finite] = np.nan
    total = np.where(finite, heads, 0.0).sum(axis=1, dtype=np.float32)
    count = finite.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        shown[:, -1] = np.where(count > 0, total / np.maximum(count, 1), np.nan)


def per_map_range(shown: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-map (min, max) over non-NaN cells, (0, 1) for all-blank maps. (L, C, Tq, Tk) -> two (L, C, 1, 1)."""
    lo = np.fmin.reduce(shown, axis=(2, 3), keepdims=True)  # fmin/fmax skip NaN
    hi = np.fmax.reduce(shown, axis=(2, 3), keepdims=True)
    empty = np.isnan(lo)
    return np.where(empty, 0.0, lo).astype(np.float32), np.where(empty, 1.0, hi).astype(np.float32)


def token_tick_levels(offsets: np.ndarray, labels: tuple[str, ...]) -> list[list[tuple[float, str]]]:
    """Token labels of every map as axis tick levels: even positions in level 1, odd ones in level 2.

    pyqtgraph drops a whole level when its text would crowd the axis; with the tokens split in two, a crowded
    axis still labels every other token instead of none (level 0 stays empty for the layer/head titles).
    """
    levels: list[list[tuple[float, str]]] = [[], [], []]
    for off in offsets:
        for i, label in enumerate(labels):
            levels[1 + i % 2].append((float(off) + i + 0.5, str(label)))
    return levels


class AttentionGrid(QWidget):
    """Layer x head attention maps of one kind, with a head-average column, tooltips, clicks and a context menu."""

    map_clicked = Signal(str, int, int)  # kind, layer, head (head -1 = average); 0-based
    head_toggled = Signal(str, int, int, bool)  # kind, layer, head, enabled (False = ablate)
    restore_all_requested = Signal()

    def __init__(self, kind: str = "", parent: QWidget | None = None, *, colormap: str = DEFAULT_COLORMAP,
                 max_token_ticks: int = 16) -> None:
        """kind: the attention kind shown (titles before data arrives); maps set later may carry another."""
        super().__init__(parent)
        self._kind = kind
        self._lut = make_lut(colormap)
        self._lut32 = self._lut.view(np.uint32).ravel()  # one packed RGBA word per colour: a take per frame
        self._max_token_ticks = max_token_ticks
        self._maps: KindMaps | None = None
        self._stale = False  # maps set while hidden, not drawn yet
        self._mode = "weights"
        self._scale_mode = "shared"
        self._layout: AtlasLayout | None = None
        self._shown = np.zeros((0, 0, 0, 0), np.float32)  # (L, H+1, Tq, Tk), NaN where blank
        self._lo: np.ndarray | float = 0.0
        self._hi: np.ndarray | float = 1.0
        self._ablated = np.zeros((0, 0), bool)
        self._highlight_row: int | None = None
        self._ticks_key: tuple = ()
        self._scaled = np.zeros((0, 0, 0, 0), np.float32)  # scratch: LUT index per cell, (L, H+1, Tq, Tk)
        self._atlas_idx = np.zeros((0, 0), np.uint16)  # LUT index per atlas pixel; gutters stay BLANK_INDEX
        self._heads_idx = self._avg_idx = self._atlas_idx  # strided views: (L, Tq, H, Tk) and (L, Tq, Tk)
        self._rgba = np.zeros((0, 0, 4), np.uint8)  # the atlas shown, (height, width, 4) RGBA
        self._highlight_key: tuple = ()
        self._ablated_labels: list[pg.TextItem] = []
        self._menu: QMenu | None = None
        self._dialog: MapDialog | None = None
        self._dialog_target: tuple[int, int] | None = None
        self._build_widgets(colormap)
        self._update_title()

    # ----- construction -------------------------------------------------------------------------------------
    def _build_widgets(self, colormap: str) -> None:
        """Title, one GraphicsLayoutWidget (plot + colour bar), and a placeholder for empty input."""
        self.title_label = QLabel()
        self.placeholder = QLabel("No tokens to show yet: type an input.")
        self.placeholder.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.graphics = pg.GraphicsLayoutWidget()
        self.graphics.setAntialiasing(False)
        self.plot_item: pg.PlotItem = self.graphics.addPlot(row=0, col=0)
        self.image_item = RgbaImageItem(axisOrder="row-major")
        self.highlight_curve = pg.PlotDataItem(connect="finite", pen=pg.mkPen("#ff3030", width=2))
        self.colorbar = pg.ColorBarItem(values=(0.0, 1.0), colorMap=pg.colormap.get(colormap), interactive=False)
        self.graphics.addItem(self.colorbar, row=0, col=1)
        self._setup_plot()
        self.stack = QStackedWidget()
        self.stack.addWidget(self.graphics)
        self.stack.addWidget(self.placeholder)
        self.stack.setCurrentWidget(self.placeholder)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.title_label)
        layout.addWidget(self.stack, 1)
        scene = self.graphics.scene()
        scene.sigMouseMoved.connect(self._on_mouse_moved)
        scene.sigMouseClicked.connect(self._on_mouse_clicked)

    def _setup_plot(self) -> None:
        """A static matrix view: layer 1 on top, no panning/zooming, our own menu, labels as axis ticks."""
        plot = self.plot_item
        plot.addItem(self.image_item)
        plot.addItem(self.highlight_curve)
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
        self.image_item.setZValue(0)
        self.highlight_curve.setZValue(10)

    # ----- public setters -----------------------------------------------------------------------------------
    def set_maps(self, maps: KindMaps | None, mode: str | None = None) -> None:
        """Show new maps in place; mode is "weights" (post-softmax) or "scores" (pre-softmax), None keeps it.

        A grid on a hidden tab only keeps the maps and draws them when shown (or asked about them): colouring
        three grids per keystroke cost ~2 ms of a 16 ms frame for two grids nobody sees.
        """
        if mode is not None:
            self._check_mode(mode)
            self._mode = mode
        self._maps, self._stale = maps, True
        if maps is not None:
            self._kind = maps.kind
        if self.isVisible() or (self._dialog is not None and self._dialog.isVisible()):
            self._draw_maps()
        else:
            self._update_title()

    def _draw_maps(self) -> None:
        """Bring atlas, ticks, highlight and the large view up to date with the maps last set."""
        self._stale = False
        maps = self._maps
        self._update_title()
        if maps is None or maps.values.size == 0:
            self.stack.setCurrentWidget(self.placeholder)
            self._layout, self._shown = None, np.zeros((0, 0, 0, 0), np.float32)  # no layout <=> nothing shown
            return
        self._highlight_row = maps.highlight_row
        self._ensure_layout(maps)
        fill_shown(np.asarray(maps.values, np.float32), np.asarray(maps.valid, bool), self._shown)
        self._update_ticks(maps)
        self._render()
        self._update_highlight()
        self._refresh_dialog()
        self.stack.setCurrentWidget(self.graphics)

    def _catch_up(self) -> None:
        """Draw maps that arrived while hidden (before a query or a paint)."""
        if self._stale:
            self._draw_maps()

    def showEvent(self, event: QShowEvent) -> None:  # Qt's name
        self._catch_up()
        super().showEvent(event)

    def set_mode(self, mode: str) -> None:
        """Switch between "weights" (fixed [0, 1] shared scale) and "scores"."""
        self._catch_up()
        self._check_mode(mode)
        self._mode = mode
        self._update_title()
        if self._layout is not None and self._shown.size:
            self._render()

    def set_scale_mode(self, scale_mode: str) -> None:
        """"shared": one scale for every map; "per_map": each map spans its own min..max."""
        self._catch_up()
        if scale_mode not in SCALE_MODES:
            raise ValueError(f"scale_mode must be one of {SCALE_MODES}, got {scale_mode!r}")
        self._scale_mode = scale_mode
        self.colorbar.getAxis("left").setLabel("each map: own min..max" if scale_mode == "per_map" else "")
        if self._shown.size:
            self._render()

    def set_ablated(self, mask: np.ndarray) -> None:
        """Mark ablated heads (mask (L, H) bool, True = ablated): dimmed colours and an "ablated" label."""
        self._catch_up()
        self._ablated = np.asarray(mask, bool).copy()
        if self._shown.size:
            self._render()

    def set_highlight_row(self, row: int | None) -> None:
        """Outline query row `row` in every map (None removes the outline)."""
        self._catch_up()
        self._highlight_row = row
        self._update_highlight()

    # ----- public queries -----------------------------------------------------------------------------------
    def current_maps(self) -> KindMaps | None:
        return self._maps

    def kind(self) -> str:
        return self._kind

    def atlas_layout(self) -> AtlasLayout | None:
        """Geometry of the current atlas (None before the first non-empty maps)."""
        self._catch_up()
        return self._layout

    def scale_mode(self) -> str:
        return self._scale_mode

    def map_rect(self, layer: int, head: int) -> QRectF:
        """A map's rectangle in view (atlas pixel) coordinates; head -1 = average."""
        return self._require_layout().map_rect(layer, head)

    def displayed_matrix(self, layer: int, head: int) -> np.ndarray:
        """The numbers shown for one map, NaN where blank. Shape (Tq, Tk); head -1 = average."""
        column = self._require_layout().column(head)  # first: it draws maps that arrived while hidden
        return self._shown[layer, column].copy()

    def map_levels(self, layer: int, head: int) -> tuple[float, float]:
        """The (low, high) values that map to the ends of the colormap for that map."""
        col = self._require_layout().column(head)
        lo = np.broadcast_to(self._lo, self._shown.shape[:2] + (1, 1))[layer, col, 0, 0]
        hi = np.broadcast_to(self._hi, self._shown.shape[:2] + (1, 1))[layer, col, 0, 0]
        return float(lo), float(hi)

    def cell_at(self, scene_pos: QPointF) -> tuple[int, int, int, int] | None:
        """(layer, head, i, j) under a scene position, head -1 = average; None off the maps."""
        self._catch_up()
        if self._layout is None or not self._shown.size:
            return None
        point = self.plot_item.getViewBox().mapSceneToView(scene_pos)
        return self._layout.cell_at(point.x(), point.y())

    def tooltip_text_at(self, layer: int, head: int, i: int, j: int) -> str:
        """Hover text, e.g. "L1 H2 query 3 'a' -> key 0 '<bos>': 0.873"; L/H are 1-based, i/j 0-based positions."""
        self._catch_up()
        maps = self._maps
        assert maps is not None
        if head == AVG:
            prefix, value = f"L{layer + 1} avg", float(self._shown[layer, -1, i, j])
            masked = bool(np.isnan(value))
        else:
            prefix, value = f"L{layer + 1} H{head + 1}", float(maps.values[layer, head, i, j])
            masked = not bool(maps.valid[i, j])
        return cell_text(prefix, i, j, maps.query_labels[i], maps.key_labels[j], value, masked)

    def is_ablated(self, layer: int, head: int) -> bool:
        mask = self._ablated
        return head >= 0 and layer < mask.shape[0] and head < mask.shape[1] and bool(mask[layer, head])

    # ----- rendering ----------------------------------------------------------------------------------------
    def _ensure_layout(self, maps: KindMaps) -> None:
        """Rebuild geometry and buffers only when the grid shape changes."""
        shape = maps.values.shape
        lay = self._layout
        if lay is not None and (lay.n_layers, lay.n_heads, lay.tq, lay.tk) == shape:
            return
        lay = AtlasLayout.build(*shape)
        self._layout = lay
        cells = (lay.n_layers, lay.n_heads + 1, lay.tq, lay.tk)
        self._shown = np.empty(cells, np.float32)
        self._scaled = np.empty(cells, np.float32)
        self._atlas_idx = np.full((lay.height, lay.width), BLANK_INDEX, np.uint16)
        self._heads_idx, self._avg_idx = lay.map_views(self._atlas_idx)
        self._rgba = np.zeros((lay.height, lay.width, 4), np.uint8)
        self._ticks_key = ()
        vb = self.plot_item.getViewBox()
        vb.setRange(xRange=(0, lay.width), yRange=(0, lay.height), padding=0.01)
        vb.updateMatrix()  # now, not lazily inside the next paint (which then scheduled a second paint)
        log.debug("atlas layout %s -> %dx%d", shape, lay.height, lay.width)

    def _compute_levels(self) -> None:
        """Shared: weights use [0, 1], scores the global finite range; per-map: each map's own range."""
        if self._scale_mode == "per_map":
            self._lo, self._hi = per_map_range(self._shown)
        elif self._mode == "weights":
            self._lo, self._hi = 0.0, 1.0
        else:
            self._lo, self._hi = finite_range(self._shown)

    def _render(self) -> None:
        """Colour every map through the LUT into the reused atlas buffers and push it to the one ImageItem."""
        lay = self._layout
        assert lay is not None
        self._compute_levels()
        scaled = colour_scale(self._shown, self._lo, self._hi, out=self._scaled)  # (L, H+1, Tq, Tk)
        self._heads_idx[...] = scaled[:, :-1].transpose(0, 2, 1, 3)  # float -> uint16 floors
        self._avg_idx[...] = scaled[:, -1]
        ablated = self._ablated_mask()
        if ablated is not None:
            by_map = self._heads_idx.transpose(0, 2, 1, 3)  # (L, H, Tq, Tk) view
            by_map[ablated] += DIM_OFFSET
        np.take(self._lut32, self._atlas_idx, out=self._rgba.view(np.uint32)[..., 0], mode="clip")  # unbuffered
        self.image_item.setImage(self._rgba, autoLevels=False)
        self._update_colorbar()
        self._update_ablated_labels(ablated)

    def _ablated_mask(self) -> np.ndarray | None:
        lay = self._layout
        if lay is None or self._ablated.shape != (lay.n_layers, lay.n_heads) or not self._ablated.any():
            return None
        return self._ablated

    def _update_colorbar(self) -> None:
        levels = (0.0, 1.0) if self._scale_mode == "per_map" else (float(self._lo), float(self._hi))
        if tuple(self.colorbar.levels()) != levels:
            self.colorbar.setLevels(levels)

    def _update_ablated_labels(self, ablated: np.ndarray | None) -> None:
        """Reuse a small pool of TextItems, one per ablated map; the rest are hidden."""
        spots = [] if ablated is None else list(zip(*np.nonzero(ablated)))
        while len(self._ablated_labels) < len(spots):
            label = pg.TextItem("ablated", color="w", anchor=(0.5, 0.5), fill=pg.mkBrush(0, 0, 0, 160))
            label.setZValue(20)
            self.plot_item.addItem(label)
            self._ablated_labels.append(label)
        for k, label in enumerate(self._ablated_labels):
            if k < len(spots):
                rect = self.map_rect(int(spots[k][0]), int(spots[k][1]))
                label.setPos(rect.center())
            label.setVisible(k < len(spots))

    def _update_highlight(self) -> None:
        """One NaN-separated polyline: a rectangle around query row `row` of every map."""
        lay, row = self._layout, self._highlight_row
        key = (lay, row, bool(self._shown.size))
        if key == self._highlight_key:
            return
        self._highlight_key = key
        if lay is None or row is None or not (0 <= row < lay.tq) or not self._shown.size:
            self.highlight_curve.setData([], [])
            return
        x0 = np.repeat(lay.col_off[None, :], lay.n_layers, axis=0).ravel().astype(float)  # (L * (H+1),)
        y0 = np.repeat(lay.row_off[:, None], lay.n_heads + 1, axis=1).ravel().astype(float) + row
        x1, y1, gap = x0 + lay.tk, y0 + 1, np.full_like(x0, np.nan)
        xs = np.stack([x0, x1, x1, x0, x0, gap], axis=1).ravel()
        ys = np.stack([y0, y0, y1, y1, y0, gap], axis=1).ravel()
        self.highlight_curve.setData(xs, ys)

    def _update_ticks(self, maps: KindMaps) -> None:
        """Layer/head titles always; token labels only when maps are small enough to read them."""
        key = (maps.values.shape, maps.query_labels, maps.key_labels)
        if key == self._ticks_key:
            return
        lay = self._layout
        assert lay is not None
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

    def _update_title(self) -> None:
        kind = KIND_TITLES.get(self._kind, self._kind or "Attention")
        self.title_label.setText(f"{kind} — {MODE_TEXT[self._mode]}")

    # ----- mouse --------------------------------------------------------------------------------------------
    def _on_mouse_moved(self, scene_pos: QPointF) -> None:
        cell = self.cell_at(scene_pos)
        text = self.tooltip_text_at(*cell) if cell is not None else ""
        self.image_item.setToolTip(text)
        if text and QToolTip.isVisible():
            QToolTip.showText(QCursor.pos(), text, self.graphics)

    def _on_mouse_clicked(self, event) -> None:
        """Left click: map_clicked; double click: large view; right click: the context menu."""
        cell = self.cell_at(event.scenePos())
        if cell is None or self._maps is None:
            return
        layer, head = cell[0], cell[1]
        if event.button() == Qt.MouseButton.LeftButton:
            if event.double():
                self.open_large_view(layer, head)
            else:
                self.map_clicked.emit(self._kind, layer, head)
            event.accept()
        elif event.button() == Qt.MouseButton.RightButton:
            self.show_context_menu(layer, head, event.screenPos().toPoint())
            event.accept()

    def show_context_menu(self, layer: int, head: int, screen_pos: QPoint) -> QMenu:
        """Pop up (non-blocking) the map's menu; the previous menu is deleted so menus never pile up."""
        if self._menu is not None:
            self._menu.deleteLater()
        self._menu = self.build_context_menu(layer, head)
        self._menu.popup(screen_pos)
        return self._menu

    def context_menu(self) -> QMenu | None:
        """The last menu shown (tests trigger its actions)."""
        return self._menu

    def build_context_menu(self, layer: int, head: int) -> QMenu:
        """Ablate/restore, large view and export actions for one map (head -1 = average: no ablation)."""
        menu = QMenu(self)
        kind = self._kind
        if head >= 0:
            ablated = self.is_ablated(layer, head)
            text = "Restore head" if ablated else "Ablate head"
            self._add_action(menu, text, lambda: self.head_toggled.emit(kind, layer, head, ablated))
        self._add_action(menu, "Restore all heads", self.restore_all_requested.emit)
        menu.addSeparator()
        self._add_action(menu, "Open large view", lambda: self.open_large_view(layer, head))
        menu.addSeparator()
        self._add_action(menu, "Export grid as PNG...", lambda: ask_path_and_export(
            self, "Export grid as PNG", "PNG image (*.png)", self.export_png))
        self._add_action(menu, "Export grid as SVG...", lambda: ask_path_and_export(
            self, "Export grid as SVG", "SVG image (*.svg)", self.export_svg))
        self._add_action(menu, "Export matrices as NPY...", lambda: ask_path_and_export(
            self, "Export matrices as NPY", "NumPy array (*.npy)", self.export_matrices_npy))
        self._add_action(menu, "Export this map as CSV...", lambda: ask_path_and_export(
            self, "Export map as CSV", "CSV file (*.csv)", lambda path: self.export_map_csv(path, layer, head)))
        return menu

    @staticmethod
    def _add_action(menu: QMenu, text: str, slot) -> QAction:
        action = menu.addAction(text)
        action.triggered.connect(lambda _checked=False: slot())
        return action

    # ----- large view and exports ---------------------------------------------------------------------------
    def open_large_view(self, layer: int, head: int) -> MapDialog:
        """Show one map large (a single reused dialog, kept live as new maps arrive)."""
        self._catch_up()
        if self._dialog is None:
            self._dialog = MapDialog(self)
        self._dialog_target = (layer, head)
        self._refresh_dialog(force=True)
        self._dialog.show()
        self._dialog.raise_()
        return self._dialog

    def _refresh_dialog(self, force: bool = False) -> None:
        dialog, target, maps = self._dialog, self._dialog_target, self._maps
        if dialog is None or target is None or maps is None or not (force or dialog.isVisible()):
            return
        layer, head = target
        if layer >= maps.n_layers or head >= maps.n_heads or not self._shown.size:
            return
        values = self._shown[layer, -1] if head == AVG else maps.values[layer, head]
        name = f"L{layer + 1} avg" if head == AVG else f"L{layer + 1} H{head + 1}"
        title = f"{KIND_TITLES.get(maps.kind, maps.kind)} — {name} ({MODE_TEXT[self._mode]})"
        valid = ~np.isnan(self._shown[layer, -1]) if head == AVG else maps.valid
        dialog.set_matrix(values, valid, maps.query_labels, maps.key_labels, title, tooltip_prefix=name)

    def export_png(self, path: str | Path, width: int | None = None) -> Path:
        """The whole grid with titles and colour bar as PNG."""
        self._catch_up()
        return export.export_item_png(self.graphics.ci, path, width)

    def export_svg(self, path: str | Path) -> Path:
        self._catch_up()
        return export.export_item_svg(self.graphics.ci, path)

    def export_matrices_npy(self, path: str | Path) -> Path:
        """All heads as one (L, H, Tq, Tk) float32 array, NaN where blank (the average is left out: it is a mean)."""
        self._catch_up()
        return export.save_matrices_npy(path, self._shown[:, :-1])

    def export_map_csv(self, path: str | Path, layer: int, head: int) -> Path:
        maps = self._maps
        assert maps is not None
        return export.save_matrix_csv(path, self.displayed_matrix(layer, head), maps.query_labels, maps.key_labels)

    # ----- helpers ------------------------------------------------------------------------------------------
    def _require_layout(self) -> AtlasLayout:
        self._catch_up()
        if self._layout is None or not self._shown.size:
            raise RuntimeError("no maps are shown")
        return self._layout

    @staticmethod
    def _check_mode(mode: str) -> None:
        if mode not in MODE_TEXT:
            raise ValueError(f"mode must be one of {tuple(MODE_TEXT)}, got {mode!r}")
