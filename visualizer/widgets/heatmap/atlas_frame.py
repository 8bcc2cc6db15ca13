"""What a grid shows for one maps shape: the numbers (with the head average), their colour levels, the RGBA atlas.

No widgets: the grid hands it maps and choices and pushes `paint`'s pixels to its one ImageItem. The big buffers
are allocated once per shape and refilled every frame.

The default view (weights on the shared [0, 1] scale, no head ablated) colours the maps straight from the model's
values: six passes over them instead of twelve, and the NaN-blanked copy (`shown`) is made only when something asks
for the numbers (hover, exports, the large view), not on every keystroke.
"""

from __future__ import annotations

import numpy as np

from visualizer.state.snapshots import KindMaps
from visualizer.widgets.heatmap.atlas import AVG, UNIT_MODES, AtlasLayout, cell_text, colour_levels, fill_shown
from visualizer.widgets.heatmap.colours import BLANK_INDEX, DIM_OFFSET, N_COLOURS, colour_scale


class AtlasFrame:
    """The shown values, levels and pixels of one atlas layout (the grid keeps the one shown and the previous
    shape's)."""

    def __init__(self, layout: AtlasLayout) -> None:
        self.layout = layout
        cells = (layout.n_layers, layout.n_heads + 1, layout.tq, layout.tk)
        self._shown = np.empty(cells, np.float32)  # (L, H+1, Tq, Tk), NaN where blank: see `shown`
        self._maps: KindMaps | None = None  # what `fill` was handed last, and the heads on then (None: all)
        self._on: np.ndarray | None = None
        self._shown_current = False  # whether _shown holds those maps yet
        self.lo: np.ndarray | float = 0.0  # colour levels: scalars, or per map (L, H+1, 1, 1)
        self.hi: np.ndarray | float = 1.0
        self._scaled = np.empty(cells, np.float32)  # scratch: LUT index per cell
        self._atlas_idx = np.full((layout.height, layout.width), BLANK_INDEX, np.uint16)  # gutters stay blank
        self._heads_idx, self._avg_idx = layout.map_views(self._atlas_idx)  # (L, Tq, H, Tk) and (L, Tq, Tk)
        self.rgba = np.zeros((layout.height, layout.width, 4), np.uint8)  # the atlas shown, RGBA

    def relay(self, layout: AtlasLayout) -> None:
        """The same maps with other strips above each layer: the image, and so every buffer, stays as it is."""
        if (layout.height, layout.width, layout.tq) != (self.layout.height, self.layout.width, self.layout.tq):
            raise ValueError("relay: another image shape needs another frame")
        self.layout = layout

    def fits(self, maps: KindMaps) -> bool:
        """Whether maps of this shape (L, H, Tq, Tk) reuse this frame."""
        lay = self.layout
        return (lay.n_layers, lay.n_heads, lay.tq, lay.tk) == maps.values.shape

    def fill(self, maps: KindMaps, ablated: np.ndarray | None = None) -> None:
        """Take new maps: the values shown are the maps' (NaN where masked) plus the average of the heads on."""
        self._maps, self._on = maps, None if ablated is None else ~ablated
        self._shown_current = False

    @property
    def shown(self) -> np.ndarray:
        """(L, H+1, Tq, Tk) float32: every map as shown, NaN where blank, the head average last. Read-only use."""
        if not self._shown_current:
            maps = self._maps
            if maps is None:
                self._shown.fill(np.nan)
            else:
                fill_shown(np.asarray(maps.values, np.float32), np.asarray(maps.valid, bool), self._shown, self._on)
            self._shown_current = True
        return self._shown

    def ablated_heads(self, mask: np.ndarray) -> np.ndarray | None:
        """The (L, H) ablation mask when it fits this layout and marks any head, else None (nothing to dim)."""
        lay = self.layout
        if mask.shape != (lay.n_layers, lay.n_heads) or not mask.any():
            return None
        return mask

    def paint(self, lut32: np.ndarray, scale_mode: str, mode: str, ablated: np.ndarray | None) -> np.ndarray:
        """Colour `shown` through the packed LUT into `rgba` (returned); ablated (L, H) heads get dimmed colours."""
        if (
            mode in UNIT_MODES
            and scale_mode == "shared"
            and ablated is None
            and self._on is None
            and self._index_unit_scale()
        ):
            return self._look_up(lut32)
        self.lo, self.hi = colour_levels(self.shown, scale_mode, mode)
        scaled = colour_scale(self.shown, self.lo, self.hi, out=self._scaled)  # (L, H+1, Tq, Tk)
        self._heads_idx[...] = scaled[:, :-1].transpose(0, 2, 1, 3)  # float -> uint16 floors
        self._avg_idx[...] = scaled[:, -1]
        if ablated is not None:
            by_map = self._heads_idx.transpose(0, 2, 1, 3)  # (L, H, Tq, Tk) view
            by_map[ablated] += DIM_OFFSET
        return self._look_up(lut32)

    def _look_up(self, lut32: np.ndarray) -> np.ndarray:
        """`rgba` from the LUT indices. Every index is below the LUT's 2 * 257 rows by construction, so "wrap" never
        wraps: like "clip" it writes `out` unbuffered ("raise" copies), without clip's bound per element."""
        np.take(lut32, self._atlas_idx, out=self.rgba.view(np.uint32)[..., 0], mode="wrap")
        return self.rgba

    def _index_unit_scale(self) -> bool:
        """LUT indices straight from the maps on the fixed [0, 1] scale, exactly as `colour_scale` gives them from
        `shown`. False (nothing written) when some visible cell is not finite: the general path blanks it."""
        maps = self._maps
        if maps is None:
            return False
        values, valid = np.asarray(maps.values, np.float32), np.asarray(maps.valid, bool)
        avg = self._scaled[:, -1]  # (L, Tq, Tk) scratch
        np.mean(values, axis=1, out=avg)  # a NaN or infinity in any head reaches the mean of its cell
        masked = ~valid
        any_masked = bool(masked.any())  # encoder and cross attention without padding mask nothing
        if any_masked:
            finite = np.isfinite(avg, where=valid, out=np.ones(avg.shape, bool)).all()
        else:
            # one sum instead: any NaN or infinity reaches it; finite values that overflow it (never softmax
            # weights) only send the frame down the general path, which draws the same pixels
            with np.errstate(invalid="ignore", over="ignore"):
                finite = np.isfinite(avg.sum())
        if not finite:
            return False
        self.lo, self.hi = 0.0, 1.0
        heads = np.multiply(values, np.float32(N_COLOURS), out=self._scaled[:, :-1])
        avg *= np.float32(N_COLOURS)
        np.clip(self._scaled, 0, N_COLOURS - 1, out=self._scaled)  # heads and average: every cell written above
        with np.errstate(invalid="ignore"):  # a NaN in a masked cell casts to junk, overwritten with blank below
            self._heads_idx[...] = heads.transpose(0, 2, 1, 3)  # float -> uint16 floors
            self._avg_idx[...] = avg
        if any_masked:  # else two passes saved
            np.copyto(self._heads_idx.transpose(0, 2, 1, 3), np.uint16(BLANK_INDEX), where=masked)
            np.copyto(self._avg_idx, np.uint16(BLANK_INDEX), where=masked)
        return True

    def matrix(self, layer: int, head: int) -> np.ndarray:
        """A copy of one map as shown, NaN where blank. Shape (Tq, Tk); head -1 = average."""
        return self.shown[layer, self.layout.column(head)].copy()

    def levels(self, layer: int, head: int) -> tuple[float, float]:
        """The (low, high) values at the colormap's ends for that map."""
        col = self.layout.column(head)
        lo = np.broadcast_to(self.lo, self._shown.shape[:2] + (1, 1))[layer, col, 0, 0]
        hi = np.broadcast_to(self.hi, self._shown.shape[:2] + (1, 1))[layer, col, 0, 0]
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
