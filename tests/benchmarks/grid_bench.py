"""Repaint rate of the attention grid (new data every frame) vs a single-ImageItem baseline.

Run: QT_QPA_PLATFORM=offscreen python tests/benchmarks/grid_bench.py
"""

from __future__ import annotations

import logging
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run as a script from anywhere

import numpy as np
import pyqtgraph as pg
from PySide6.QtWidgets import QApplication

from visualizer.state.snapshots import KindMaps
from visualizer.widgets.heatmap.grid import AttentionGrid

log = logging.getLogger(__name__)


def _app() -> QApplication:
    """The running QApplication, or a new one (a benchmark may run outside pytest)."""
    return QApplication.instance() or QApplication([])


def _random_maps(rng: np.random.Generator, n_layers: int, n_heads: int, t: int) -> KindMaps:
    """Row-normalised random weights with a causal mask, like a decoder self-attention."""
    raw = rng.random((n_layers, n_heads, t, t), dtype=np.float32)
    valid = np.tril(np.ones((t, t), bool))
    raw = np.where(valid, raw, 0)
    values = (raw / raw.sum(-1, keepdims=True)).astype(np.float32)
    labels = tuple(f"t{k}" for k in range(t))
    return KindMaps("decoder_self", values, valid, labels, labels, highlight_row=t - 1)


def _timed_frames(frame: Callable[[int], None], seconds: float) -> tuple[float, np.ndarray]:
    """Run frames for `seconds`; return (frames per second, per-frame ms)."""
    durations = []
    start = time.perf_counter()
    k = 0
    while time.perf_counter() - start < seconds:
        t0 = time.perf_counter()
        frame(k)
        durations.append(time.perf_counter() - t0)
        k += 1
    return k / (time.perf_counter() - start), np.asarray(durations) * 1e3


def measure_grid(n_layers: int = 6, n_heads: int = 8, t: int = 32, seconds: float = 2.0) -> tuple[float, float]:
    """(fps, p95 ms) for set_maps(new data) + synchronous repaint of an AttentionGrid."""
    app = _app()
    rng = np.random.default_rng(0)
    grid = AttentionGrid()
    grid.resize(1200, 800)
    grid.show()
    frames = [_random_maps(rng, n_layers, n_heads, t) for _ in range(16)]  # generation is not what we time
    grid.set_maps(frames[0])
    app.processEvents()
    viewport = grid.graphics.viewport()

    def frame(k: int) -> None:
        grid.set_maps(frames[k % len(frames)])
        viewport.update()  # force a repaint of the whole view; coalesces with the scene's own update
        app.processEvents()  # paints now (offscreen): exactly one paint per frame, checked below

    fps, ms = _timed_frames(frame, seconds)
    grid.close()
    grid.deleteLater()
    app.processEvents()
    return fps, float(np.percentile(ms, 95))


def measure_grid_fps(n_layers: int = 6, n_heads: int = 8, t: int = 32, seconds: float = 2.0) -> float:
    """Frames per second of the grid with new random data every frame."""
    return measure_grid(n_layers, n_heads, t, seconds)[0]


def measure_single_imageitem_fps(size: int = 256, seconds: float = 2.0) -> float:
    """Baseline: one size x size float ImageItem with fixed levels, new data every frame."""
    app = _app()
    rng = np.random.default_rng(0)
    view = pg.GraphicsLayoutWidget()
    view.resize(800, 800)
    image = pg.ImageItem(axisOrder="row-major")
    view.addPlot().addItem(image)
    view.show()
    frames = [rng.random((size, size), dtype=np.float32) for _ in range(16)]
    image.setImage(frames[0], levels=(0, 1))
    app.processEvents()

    def frame(k: int) -> None:
        image.setImage(frames[k % len(frames)], autoLevels=False)
        view.viewport().repaint()
        app.processEvents()

    fps, _ = _timed_frames(frame, seconds)
    view.close()
    view.deleteLater()
    app.processEvents()
    return fps


def measure_per_map_imageitems_fps(n_layers: int = 6, n_heads: int = 8, t: int = 32, seconds: float = 2.0) -> float:
    """The design the atlas replaces: one PlotItem + ImageItem per map (+ avg column), same data each frame."""
    app = _app()
    rng = np.random.default_rng(0)
    view = pg.GraphicsLayoutWidget()
    view.resize(1200, 800)
    images = []
    for layer in range(n_layers):
        for head in range(n_heads + 1):
            plot = view.addPlot(row=layer, col=head)
            plot.hideAxis("left")
            plot.hideAxis("bottom")
            image = pg.ImageItem(axisOrder="row-major")
            plot.addItem(image)
            images.append(image)
    view.show()
    frames = [rng.random((len(images), t, t), dtype=np.float32) for _ in range(4)]
    for image, data in zip(images, frames[0]):
        image.setImage(data, levels=(0, 1))
    app.processEvents()

    def frame(k: int) -> None:
        for image, data in zip(images, frames[k % len(frames)]):
            image.setImage(data, autoLevels=False)
        view.viewport().update()
        app.processEvents()

    fps, _ = _timed_frames(frame, seconds)
    view.close()
    view.deleteLater()
    app.processEvents()
    return fps


def main() -> None:
    """Print a small table of repaint rates."""
    _app()
    baseline = measure_single_imageitem_fps()
    rows = [
        ("single 256x256 ImageItem", baseline, float("nan")),
        ("54 ImageItems (6x9 maps) at 32x32", measure_per_map_imageitems_fps(), float("nan")),
    ]
    for n_layers, n_heads, t in ((2, 4, 16), (6, 8, 32), (6, 8, 64), (6, 8, 128), (6, 8, 256)):
        fps, p95 = measure_grid(n_layers, n_heads, t)
        rows.append((f"grid {n_layers}x{n_heads} (+avg) at {t}x{t}", fps, p95))
    out = sys.stdout
    out.write(f"{'case':<36}{'fps':>9}{'p95 ms':>9}{'/base':>8}\n")
    for name, fps, p95 in rows:
        out.write(f"{name:<36}{fps:>9.1f}{p95:>9.2f}{fps / baseline:>8.2f}\n")


if __name__ == "__main__":
    main()
