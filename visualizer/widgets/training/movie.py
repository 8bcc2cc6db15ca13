"""The attention movie as files: one PNG per probe snapshot, plus an animated GIF when Pillow is installed.

Plain functions on immutable snapshots, so the tab can run them off the GUI thread. Each file is encoded in memory
and written atomically (save_png, core_model.atomic_files): a failed or short write leaves no partial file and the
previous one as it was.
"""

from __future__ import annotations

import importlib.util
import io
from pathlib import Path

import numpy as np
import pyqtgraph as pg
from PySide6.QtGui import QColor, QFont, QImage, QPainter

from visualizer.state.snapshots import ProbeSnapshot
from visualizer.widgets.common.image_export import save_encoded, save_png
from visualizer.widgets.training.probe_view import COLORMAP, PROBE_KINDS, head_mean

CELL_PX, FRAME_MS = 16, 200  # movie: pixels per attention cell, GIF frame duration


def render_frame(snap: ProbeSnapshot, cell: int = CELL_PX) -> QImage:
    """One movie frame: the probe maps side by side under a 'step N' caption."""
    lut = pg.colormap.get(COLORMAP)
    tiles = [
        np.repeat(np.repeat(lut.map(np.clip(head_mean(snap, k), 0, 1), mode="byte"), cell, 0), cell, 1)
        for k, _ in PROBE_KINDS
    ]  # each (Tq*cell, Tk*cell, 4)
    pad, header = 12, 46
    width = sum(t.shape[1] for t in tiles) + pad * (len(tiles) + 1)
    height = max(t.shape[0] for t in tiles) + header + pad
    canvas = np.full((height, width, 4), 255, np.uint8)
    lefts: list[int] = []
    for tile in tiles:
        x = pad + sum(t.shape[1] + pad for t in tiles[: len(lefts)])
        canvas[header : header + tile.shape[0], x : x + tile.shape[1]] = tile
        lefts.append(x)
    image = QImage(canvas.data, width, height, 4 * width, QImage.Format.Format_RGBA8888).copy()
    painter = QPainter(image)
    painter.setPen(QColor("black"))
    painter.setFont(QFont("DejaVu Sans", 11))
    painter.drawText(pad, 18, f"step {snap.step}")
    painter.setFont(QFont("DejaVu Sans", 8))
    for x, (_, title) in zip(lefts, PROBE_KINDS):
        painter.drawText(x, header - 6, title.replace("-attention", ""))
    painter.end()
    return image


def write_movie(snapshots: tuple[ProbeSnapshot, ...] | list[ProbeSnapshot], folder: Path) -> dict:
    """PNG frames into `folder`, plus movie.gif when Pillow is importable; returns what was written."""
    folder.mkdir(parents=True, exist_ok=True)
    frames = []
    for i, snap in enumerate(snapshots):
        frames.append(save_png(render_frame(snap), folder / f"frame_{i:04d}_step_{snap.step}.png"))
    gif = None
    if frames and importlib.util.find_spec("PIL") is not None:
        gif = folder / "movie.gif"
        _save_gif(frames, gif)
    return {"folder": str(folder), "frames": len(frames), "gif": str(gif) if gif else None}


def _save_gif(frames: list[Path], gif: Path) -> None:
    """The frames as one looping GIF, encoded in memory and written whole or not at all."""
    from PIL import Image

    images = [Image.open(p).convert("RGB") for p in frames]
    encoded = io.BytesIO()
    images[0].save(encoded, format="GIF", save_all=True, append_images=images[1:], duration=FRAME_MS, loop=0)
    save_encoded(encoded.getvalue(), gif, "write GIF to")
