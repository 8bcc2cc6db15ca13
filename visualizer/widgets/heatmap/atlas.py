"""The atlas: every layer x head map (plus a head-average column) packed into ONE image; geometry and numbers.

One ImageItem per map repaints ~40 times/s for 48 maps (QT-NOTES.md); a single RGBA atlas with transparent
gutters, coloured through a lookup table (atlas_frame.py), stays far above 60. No widgets here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property, lru_cache

import numpy as np
from numpy.lib.stride_tricks import as_strided
from PySide6.QtCore import QRectF

from visualizer.widgets.heatmap.colours import finite_range, symmetric_range

AVG = -1  # the head index of the head-average column
UNIT_MODES = ("weights",)  # values in [0, 1] that use the range: a fixed shared scale
DIVERGING_MODES = ("scores", "difference")  # signed values: a diverging scale centred on 0
HOVER_HINT = "hover a cell to name its tokens"  # where labels too small to draw are read on screen
LISTED_HINT = "the tokens are listed above"  # the same, in an exported image's caption (it has no mouse)


@dataclass(frozen=True, eq=False)  # identity equality: the arrays make value equality ambiguous
class AtlasLayout:
    """Where each (layer, column) map sits in the atlas; column n_heads is the head average.

    Map pixel (i, j) of map (l, c) is drawn at atlas x in [col_off[c] + j, +1) and atlas y in [row_off[l] + i, +1).
    The view scales atlas coordinates by `view_scale` into a fixed frame: n_heads + 1 units wide (a head's map and
    its gutter span one), n_layers units high. Above each layer's maps lies a blank `strip` (atlas rows, fractional)
    for what must cover no cell (the role badges); 0 without it. The strips are no part of the image: its rows are
    packed (layer l's first row is image row l * row_step) and drawn in bands, one per layer (`image_bands`).
    """

    n_layers: int
    n_heads: int
    tq: int
    tk: int
    row_off: np.ndarray  # (L,) float: where each layer's maps start, strips included
    col_off: np.ndarray  # (H + 1,)
    height: int  # the image's rows: every layer's maps and the gutters between them, no strips
    width: int
    row_step: int  # image rows from one layer to the next (Tq + gutter)
    col_step: int  # atlas columns from one head to the next (Tk + gutter)
    col_owner: np.ndarray  # (width,) column of each atlas column, -1 in gutters
    strip: float = 0.0  # blank atlas rows above each layer's maps
    view_height: float = 0.0  # atlas rows from the first strip's top to the last map's bottom

    @classmethod
    def build(
        cls, n_layers: int, n_heads: int, tq: int, tk: int, gutter: int = 1, avg_gap: int = 2, strip: float = 0.0
    ) -> AtlasLayout:
        """Precompute offsets and index arrays once per shape, so a frame is a few vectorised numpy ops."""
        row_step = tq + gutter
        row_off = strip + np.arange(n_layers) * (strip + row_step)
        col_off = np.arange(n_heads + 1) * (tk + gutter)
        col_off[n_heads] += avg_gap - gutter  # a wider gap sets the average apart
        height, width = n_layers * row_step - gutter, cls.width_of(n_heads, tk, gutter, avg_gap)
        col_owner = np.full(width, -1)
        for col, off in enumerate(col_off):
            col_owner[off : off + tk] = col
        view_height = float(row_off[-1] + tq)
        args = (n_layers, n_heads, tq, tk, row_off, col_off, height, width, row_step, tk + gutter, col_owner)
        return cls(*args, strip, view_height)

    @staticmethod
    def width_of(n_heads: int, tk: int, gutter: int = 1, avg_gap: int = 2) -> int:
        """The atlas's width in pixels: every head's map and gutter, the average's wider gap, the average."""
        return n_heads * (tk + gutter) + avg_gap - gutter + tk

    def strip_rect(self, layer: int, head: int) -> QRectF:
        """The blank band above a map, as wide as the map (atlas coordinates; empty without strips)."""
        rect = self.map_rect(layer, head)
        return QRectF(rect.left(), rect.top() - self.strip, rect.width(), float(self.strip))

    def image_bands(self) -> tuple[tuple[int, float, int], ...]:
        """(first image row, atlas y it is drawn at, rows) per layer: the packed image laid out with its strips."""
        return tuple((layer * self.row_step, float(self.row_off[layer]), self.tq) for layer in range(self.n_layers))

    def map_views(self, atlas: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Writable strided views of a (height, width) atlas: heads (L, Tq, H, Tk) and average (L, Tq, Tk).

        Precomputed once per shape, so filling the atlas is two strided copies and never touches the gutters.
        """
        s_row, s_col = atlas.strides
        heads = as_strided(
            atlas,
            shape=(self.n_layers, self.tq, self.n_heads, self.tk),
            strides=(s_row * self.row_step, s_row, s_col * self.col_step, s_col),
        )
        avg = as_strided(
            atlas[:, int(self.col_off[-1]) :],
            shape=(self.n_layers, self.tq, self.tk),
            strides=(s_row * self.row_step, s_row, s_col),
        )
        return heads, avg

    @property
    def view_scale(self) -> tuple[float, float]:
        """(x, y) view units per atlas pixel that fit the atlas to n_heads + 1 by n_layers units. A head's map and
        its gutter then span one unit (head h starts at x = h for any length) and a layer about one (it moves by
        well under a pixel from one length to the next), so a new input length leaves the frame where it was."""
        return (self.n_heads + 1) / self.width, self.n_layers / self.view_height

    @cached_property
    def map_rects(self) -> tuple[QRectF, ...]:
        """Every map's rectangle (atlas coordinates), layer by layer, heads then the average: made once per shape."""
        cols = [*range(self.n_heads), AVG]
        return tuple(self.map_rect(layer, head) for layer in range(self.n_layers) for head in cols)

    def column(self, head: int) -> int:
        """Atlas column of a head (-1 = average)."""
        return self.n_heads if head == AVG else head

    def map_rect(self, layer: int, head: int) -> QRectF:
        """The map's rectangle in atlas coordinates (pixels of the atlas image)."""
        col = self.column(head)
        return QRectF(float(self.col_off[col]), float(self.row_off[layer]), float(self.tk), float(self.tq))

    def cell_at(self, x: float, y: float) -> tuple[int, int, int, int] | None:
        """(layer, head, i, j) under a point in atlas coordinates (head -1 = average), None in gutters, strips or
        outside."""
        col_px = int(np.floor(x))
        if not (0 <= col_px < self.width and self.strip <= y < self.view_height):
            return None
        layer = min(int((y - self.strip) // (self.strip + self.row_step)), self.n_layers - 1)
        i, col = int(np.floor(y - self.row_off[layer])), int(self.col_owner[col_px])
        if not 0 <= i < self.tq or col < 0:
            return None
        head = AVG if col == self.n_heads else col
        return layer, head, i, col_px - int(self.col_off[col])

    def row_outline(self, row: int) -> tuple[np.ndarray, np.ndarray]:
        """One NaN-separated polyline (xs, ys): a rectangle around query row `row` of every map."""
        x0 = np.repeat(self.col_off[None, :], self.n_layers, axis=0).ravel().astype(float)  # (L * (H+1),)
        y0 = np.repeat(self.row_off[:, None], self.n_heads + 1, axis=1).ravel().astype(float) + row
        x1, y1, gap = x0 + self.tk, y0 + 1, np.full_like(x0, np.nan)
        xs = np.stack([x0, x1, x1, x0, x0, gap], axis=1).ravel()
        ys = np.stack([y0, y0, y1, y1, y0, gap], axis=1).ravel()
        return xs, ys

    def cell_cross(self, layer: int, head: int, i: int, j: int) -> tuple[np.ndarray, np.ndarray]:
        """One NaN-separated polyline (xs, ys): query row i and key column j of one map, outlined."""
        rect = self.map_rect(layer, head)
        x0, y0, x1, y1 = rect.left(), rect.top(), rect.right(), rect.bottom()
        xs = [x0, x1, x1, x0, x0, np.nan, x0 + j, x0 + j + 1, x0 + j + 1, x0 + j, x0 + j]
        ys = [y0 + i, y0 + i, y0 + i + 1, y0 + i + 1, y0 + i, np.nan, y0, y0, y1, y1, y0]
        return np.array(xs, float), np.array(ys, float)


def strip_rows(pixels: float, n_layers: int, tq: int, layer_px: float, square_px: float | None = None) -> float:
    """Atlas rows of blank strip above each layer's maps that come to `pixels` screen pixels (0: none, or no room).

    `layer_px`: screen pixels per view unit in y (a layer's slot: strip, maps and gutter; AtlasLayout.view_scale).
    The strip is part of the atlas height the view scales down, so it is solved for (one-row gutters):
    b * layer_px * L / (L * (tq + b) + L - 1) = pixels. The first row of maps then starts `pixels` below the top of
    the frame at every input length, so typing moves no map. With square cells, a cell may be held to `square_px`
    screen pixels (the width's limit, per atlas column), and the strip must hold at that size too. No strip when it
    would take half a layer's slot: the maps keep their room.
    """
    if pixels <= 0 or layer_px <= 2 * pixels:
        return 0.0
    rows = pixels * (n_layers * tq + n_layers - 1) / (n_layers * (layer_px - pixels))
    if square_px is not None and square_px > 0:
        rows = max(rows, pixels / square_px)
    return rows


def fill_shown(values: np.ndarray, valid: np.ndarray, shown: np.ndarray, on: np.ndarray | None = None) -> None:
    """Write values (NaN where blank) and the average of the heads that are on into `shown` in place.

    Shape: values (L, H, Tq, Tk), valid (Tq, Tk), on (L, H) bool or None (all on) -> shown (L, H + 1, Tq, Tk).
    An ablated head does not reach the output, so it is left out of the average (a layer with no head on gets a
    blank average). The mask is shared by all heads, so a plain mean is exact unless some head is off or has a
    non-finite value in a valid cell (-inf scores are drawn as masked; then the slower masked mean runs).
    """
    heads = shown[:, :-1]
    np.copyto(heads, values)
    np.copyto(heads, np.float32(np.nan), where=~valid)
    finite = np.isfinite(heads)
    all_on = on is None or bool(np.all(on))
    if all_on and np.count_nonzero(finite) == np.count_nonzero(valid) * values.shape[0] * values.shape[1]:
        np.mean(heads, axis=1, out=shown[:, -1])
        return
    heads[~finite] = np.nan
    if not all_on:
        finite &= np.asarray(on, bool)[:, :, None, None]
    total = np.where(finite, heads, 0.0).sum(axis=1, dtype=np.float32)
    count = finite.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        shown[:, -1] = np.where(count > 0, total / np.maximum(count, 1), np.nan)


def ablated_label_spots(lay: AtlasLayout, ablated: np.ndarray | None) -> list[tuple[QRectF, str]]:
    """Where the "ablated" labels go: on every ablated (L, H) map, and "no heads on" on a layer's average when
    every head of that layer is off."""
    if ablated is None:
        return []
    spots = [(lay.map_rect(int(layer), int(head)), "ablated") for layer, head in zip(*np.nonzero(ablated))]
    return spots + [(lay.map_rect(int(layer), AVG), "no heads on") for layer in np.nonzero(ablated.all(axis=1))[0]]


def cross_lines(lay: AtlasLayout, ablated: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """One NaN-separated polyline (xs, ys): both diagonals of every ablated (L, H) map."""
    if ablated is None or not ablated.any():
        return np.zeros(0), np.zeros(0)
    layers, heads = np.nonzero(ablated)
    x0, y0 = lay.col_off[heads].astype(float), lay.row_off[layers].astype(float)
    x1, y1, gap = x0 + lay.tk, y0 + lay.tq, np.full(len(x0), np.nan)
    xs = np.stack([x0, x1, gap, x1, x0, gap], axis=1).ravel()
    ys = np.stack([y0, y1, gap, y0, y1, gap], axis=1).ravel()
    return xs, ys


def per_map_range(shown: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-map (min, max) over non-NaN cells, (0, 1) for all-blank maps. (L, C, Tq, Tk) -> two (L, C, 1, 1)."""
    lo = np.fmin.reduce(shown, axis=(2, 3), keepdims=True)  # fmin/fmax skip NaN
    hi = np.fmax.reduce(shown, axis=(2, 3), keepdims=True)
    empty = np.isnan(lo)
    return np.where(empty, 0.0, lo).astype(np.float32), np.where(empty, 1.0, hi).astype(np.float32)


def colour_levels(shown: np.ndarray, scale_mode: str, mode: str) -> tuple[np.ndarray | float, np.ndarray | float]:
    """The values at the colormap's ends: per-map ranges (L, C, 1, 1), else [0, 1] for weights, else
    the global finite range (a shared scale keeps maps comparable; softmax weights are always in [0, 1]).
    Scores and differences get a range centred on 0 for their diverging scale; norms and rollout (shares, most
    of them small) run from 0 to the largest value."""
    lo: np.ndarray | float
    hi: np.ndarray | float
    if scale_mode == "per_map":
        lo, hi = per_map_range(shown)
    elif mode in UNIT_MODES:
        return 0.0, 1.0
    else:
        lo, hi = finite_range(shown)
    if mode in ("norms", "rollout"):
        return np.zeros_like(lo) if np.ndim(lo) else 0.0, hi
    return symmetric_range(lo, hi) if mode in DIVERGING_MODES else (lo, hi)


@lru_cache(maxsize=4096)  # a vocabulary's dozen tokens, asked for each label of every frame
def abbreviate(label: str) -> str:
    """A special token in one character: "<bos>" -> "B", "<eos>" -> "E", "<pad>" -> "P"; others unchanged.

    Capitals, because task symbols are digits and lower-case letters. Not "·": the legends separate their notes
    with it, so "· = <pad>" could not be told from a separator.
    """
    if len(label) > 2 and label[0] in "<⟨" and label[-1] in ">⟩":
        return label[1:2].upper()
    return label


def readable_labels(labels: tuple[str, ...], fits: Callable[[tuple[str, ...]], bool]) -> tuple[str, ...] | None:
    """Every token as written, else every token abbreviated, else None (no labels: the hover line names them).

    Never a subset: every other token of "31415926535" read "3 4 5 2 5 5", a different sequence.
    """
    if fits(labels):
        return labels
    short = tuple(map(abbreviate, labels))  # only when the labels as written do not fit
    return short if fits(short) else None


def abbreviation_legend(labels: tuple[str, ...]) -> str:
    """ "B = <bos>, P = <pad>" for the abbreviated tokens among labels."""
    pairs = dict.fromkeys((abbreviate(label), label) for label in labels if abbreviate(label) != label)
    return ", ".join(f"{short} = {label}" for short, label in pairs)


def token_tick_levels(
    offsets: np.ndarray, labels: tuple[str, ...], scale: float = 1.0
) -> list[list[tuple[float, str]]]:
    """Token labels of every map as ONE axis tick level (pyqtgraph always draws level 0; it culls the others), at
    the cells' centres: atlas offsets times `scale` (view units per atlas pixel)."""
    return [[((float(off) + i + 0.5) * scale, str(label)) for off in offsets for i, label in enumerate(labels)]]


def cell_text(prefix: str, i: int, j: int, query: str, key: str, value: float, masked: bool) -> str:
    """The hover text of one cell: "L1 H2 query 3 'a' -> key 0 '<bos>': 0.873" ("masked" for blank cells)."""
    shown = "masked" if masked else f"{value:.3f}"
    return f"{prefix} query {i} '{query}' -> key {j} '{key}': {shown}"
