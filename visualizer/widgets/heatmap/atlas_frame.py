"""What a grid shows for one maps shape: the numbers (with the head average), their colour levels, the RGBA atlas.

No widgets: the grid hands it maps and choices and pushes `paint`'s pixels to its one ImageItem. The buffers are
allocated once per shape and refilled every frame, so a keystroke allocates nothing.
"""
from __future__ import annotations

import numpy as np

from visualizer.state.snapshots import KindMaps
from visualizer.widgets.heatmap.atlas import AVG, AtlasLayout, cell_text, colour_levels, fill_shown
from visualizer.widgets.heatmap.colours import BLANK_INDEX, DIM_OFFSET, colour_scale


class AtlasFrame:
    """The shown values, levels and pixels of one atlas layout (the grid keeps one while maps are shown)."""

    def __init__(self, layout: AtlasLayout) -> None:
        self.layout = layout
        cells = (layout.n_layers, layout.n_heads + 1, layout.tq, layout.tk)
        self.shown = np.empty(cells, np.float32)  # (L, H+1, Tq, Tk), NaN where blank
        self.lo: np.ndarray | float = 0.0  # colour levels: scalars, or per map (L, H+1, 1, 1)
        self.hi: np.ndarray | float = 1.0
        self._scaled = np.empty(cells, np.float32)  # scratch: LUT index per cell
        self._atlas_idx = np.full((layout.height, layout.width), BLANK_INDEX, np.uint16)  # gutters stay blank
        self._heads_idx, self._avg_idx = layout.map_views(self._atlas_idx)  # (L, Tq, H, Tk) and (L, Tq, Tk)
        self.rgba = np.zeros((layout.height, layout.width, 4), np.uint8)  # the atlas shown, RGBA

    def fits(self, maps: KindMaps) -> bool:
        """Whether maps of this shape (L, H, Tq, Tk) reuse this frame."""
        lay = self.layout
        return (lay.n_layers, lay.n_heads, lay.tq, lay.tk) == maps.values.shape

    def fill(self, maps: KindMaps, ablated: np.ndarray | None = None) -> None:
        """Copy the maps in (NaN where masked) and recompute the average of the heads that are on."""
        on = None if ablated is None else ~ablated
        fill_shown(np.asarray(maps.values, np.float32), np.asarray(maps.valid, bool), self.shown, on)

    def ablated_heads(self, mask: np.ndarray) -> np.ndarray | None:
        """The (L, H) ablation mask when it fits this layout and marks any head, else None (nothing to dim)."""
        lay = self.layout
        if mask.shape != (lay.n_layers, lay.n_heads) or not mask.any():
            return None
        return mask

    def paint(self, lut32: np.ndarray, scale_mode: str, mode: str, ablated: np.ndarray | None) -> np.ndarray:
        """Colour `shown` through the packed LUT into `rgba` (returned); ablated (L, H) heads get dimmed colours."""
        self.lo, self.hi = colour_levels(self.shown, scale_mode, mode)
        scaled = colour_scale(self.shown, self.lo, self.hi, out=self._scaled)  # (L, H+1, Tq, Tk)
        self._heads_idx[...] = scaled[:, :-1].transpose(0, 2, 1, 3)  # float -> uint16 floors
        self._avg_idx[...] = scaled[:, -1]
        if ablated is not None:
            by_map = self._heads_idx.transpose(0, 2, 1, 3)  # (L, H, Tq, Tk) view
            by_map[ablated] += DIM_OFFSET
        np.take(lut32, self._atlas_idx, out=self.rgba.view(np.uint32)[..., 0], mode="clip")  # unbuffered
        return self.rgba

    def matrix(self, layer: int, head: int) -> np.ndarray:
        """A copy of one map as shown, NaN where blank. Shape (Tq, Tk); head -1 = average."""
        return self.shown[layer, self.layout.column(head)].copy()

    def levels(self, layer: int, head: int) -> tuple[float, float]:
        """The (low, high) values at the colormap's ends for that map."""
        col = self.layout.column(head)
        lo = np.broadcast_to(self.lo, self.shown.shape[:2] + (1, 1))[layer, col, 0, 0]
        hi = np.broadcast_to(self.hi, self.shown.shape[:2] + (1, 1))[layer, col, 0, 0]
        return float(lo), float(hi)

    def cell_text(self, maps: KindMaps, layer: int, head: int, i: int, j: int) -> str:
        """Hover text of one cell; heads report the raw value (masked or not), the average what is shown."""
        if head == AVG:
            prefix, value = f"L{layer + 1} avg", float(self.shown[layer, -1, i, j])
            masked = bool(np.isnan(value))
        else:
            prefix, value = f"L{layer + 1} H{head + 1}", float(maps.values[layer, head, i, j])
            masked = not bool(maps.valid[i, j])
        return cell_text(prefix, i, j, maps.query_labels[i], maps.key_labels[j], value, masked)
