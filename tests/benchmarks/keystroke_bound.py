"""How close this window can come to the keystroke floor: the same keystrokes with parts of the frame taken away.

Run: python tests/benchmarks/keystroke_bound.py [--length 32] [--keys 40] [--rounds 2] [--json PATH]

bench.py's keystroke bar asks the worst grid tab's keystroke-to-paint p95 to stay within 1.5 x its floor: one
capture_maps pass on the same input, then the same pixels set into a bare pyqtgraph ImageItem and painted. This script
measures three frames in one real window, by bench.py's rules (keystroke_bench.measure_with_floor):

- app: the window as shipped;
- bare grid: each grid's maps drawn instead by a bare QWidget (`BareGrid`): the weights coloured into one QImage
  through the app's colour table, layer and head labels, and each head's role word where its badge goes. No
  pyqtgraph scene, axes, colour bar, hover or badge layer; the rest of the window as shipped;
- bare grid, no side panels: also the decoder panel, prediction line, expected output and mask previews left as they
  were, so a key redraws the bare grid and nothing else of the Playground.

The variants alternate over rounds (forwards, then backwards) so that a drift of the machine's speed weighs on all
alike. Each changes the running window for its own measurement and is undone after; none is part of the app. Their
ratios bound what a redesign of the grid, or of the grid and the side panels, could win.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
HERE = Path(__file__).resolve().parent
for _path in (HERE.parents[1], HERE):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

import numpy as np  # noqa: E402
import torch  # noqa: E402
from PySide6.QtCore import QRectF, Qt  # noqa: E402
from PySide6.QtGui import QColor, QImage, QPainter, QPaintEvent, QShowEvent  # noqa: E402
from PySide6.QtWidgets import QApplication, QWidget  # noqa: E402

if TYPE_CHECKING:
    from visualizer.composition import Application
    from visualizer.state.snapshots import KindMaps, PlaygroundFrame

log = logging.getLogger("keystroke_bound")
MARGIN = 28  # room for the layer and head labels, px
GUTTER = 1  # cells between two maps


class BareGrid(QWidget):
    """The least a grid can draw: the maps as one image, layer and head labels, a role word per head that has one.

    It works as the app's grid does where that costs time: a hidden grid keeps its maps and colours them when shown,
    and the buffers of a shape are reused, the colours looked up straight into the 32-bit pixels Qt draws.
    """

    def __init__(self, roles: Callable[[], dict[tuple[int, int], str]]) -> None:
        super().__init__()
        from visualizer.widgets.heatmap.colours import make_lut

        rgba = make_lut().astype(np.uint32)  # premultiplied ARGB32: every colour is opaque, the blank rows all zero
        self._lut32 = (rgba[:, 3] << 24) | (rgba[:, 0] << 16) | (rgba[:, 1] << 8) | rgba[:, 2]
        self._roles = roles
        self._maps: KindMaps | None = None
        self._stale = False
        self._shape: tuple[int, ...] = ()
        self._scaled = np.zeros(0, np.float32)
        self._indices = np.zeros((0, 0), np.int64)
        self._pixels = np.zeros((0, 0), np.uint32)
        self._image: QImage | None = None

    def set_maps(self, maps: KindMaps) -> None:
        """Keep the maps; colour them now only when on screen."""
        self._maps, self._stale = maps, True
        if self.isVisible():
            self._colour()

    def showEvent(self, event: QShowEvent) -> None:  # Qt's name
        if self._stale:
            self._colour()
        super().showEvent(event)

    def _colour(self) -> None:
        """The weights ([0, 1], masked cells blank) into the atlas image, then a paint."""
        from visualizer.widgets.heatmap.colours import BLANK_INDEX, colour_scale

        maps, self._stale = self._maps, False
        assert maps is not None
        values = maps.values
        n_layers, n_heads, tq, tk = values.shape
        if values.shape != self._shape:
            self._shape = values.shape
            self._scaled = np.empty(values.shape, np.float32)
            self._indices = np.full((n_layers * (tq + GUTTER), n_heads * (tk + GUTTER)), BLANK_INDEX, np.int64)
            self._pixels = np.zeros(self._indices.shape, np.uint32)
            height, width = self._pixels.shape
            self._image = QImage(self._pixels.data, width, height, width * 4, QImage.Format.Format_ARGB32_Premultiplied)
        scaled = colour_scale(values, 0.0, 1.0, out=self._scaled)
        np.copyto(scaled, BLANK_INDEX, where=~maps.valid[None, None])
        cells = self._indices.reshape(n_layers, tq + GUTTER, n_heads, tk + GUTTER)
        cells[:, :tq, :, :tk] = scaled.transpose(0, 2, 1, 3)
        np.take(self._lut32, self._indices, out=self._pixels)
        self.update()

    def paintEvent(self, event: QPaintEvent) -> None:  # Qt's name
        """White, then the atlas scaled into the room the labels leave, then the labels."""
        painter = QPainter(self)
        painter.fillRect(self.rect(), QColor("white"))
        if self._image is not None:
            self._draw(painter, self._image)
        painter.end()

    def _draw(self, painter: QPainter, image: QImage) -> None:
        """A label per layer and head; the role words top right of their maps, where the app's badges go."""
        n_layers, n_heads, tq, tk = self._shape
        room = QRectF(MARGIN, MARGIN, self.width() - 2 * MARGIN, self.height() - 2 * MARGIN)
        scale = min(room.width() / image.width(), room.height() / image.height())
        painter.drawImage(QRectF(room.x(), room.y(), image.width() * scale, image.height() * scale), image)
        row, column = (tq + GUTTER) * scale, (tk + GUTTER) * scale
        centre = Qt.AlignmentFlag.AlignCenter
        for layer in range(n_layers):
            painter.drawText(QRectF(0, room.y() + layer * row, MARGIN, row), centre, f"L{layer + 1}")
        for head in range(n_heads):
            painter.drawText(QRectF(room.x() + head * column, 0, column, MARGIN), centre, f"H{head + 1}")
        for (layer, head), word in self._roles().items():
            if layer < n_layers and head < n_heads:
                corner = QRectF(room.x() + head * column, room.y() + layer * row, column - scale, 14)
                painter.drawText(corner, Qt.AlignmentFlag.AlignRight, word)


@contextmanager
def bare_grids(window: Application) -> Iterator[dict[QWidget, BareGrid]]:
    """Every Playground grid shows a BareGrid in place of its plot (its header stays); its badges stop placing
    themselves. On the way out the plots come back and draw the last input."""
    from visualizer.widgets.heads.badges import badge_text

    view, session = window.playground, window.session
    bares: dict[QWidget, BareGrid] = {}
    try:
        for kind, grid in view.grids.items():
            overlay = window.badges[kind]

            def roles(overlay=overlay) -> dict[tuple[int, int], str]:
                return {key: badge_text(role) for key, role in overlay._roles.items()}  # noqa: SLF001

            bare = bares[grid] = BareGrid(roles)
            session.frame_changed.disconnect(overlay.on_frame)
            grid._catch_up()  # noqa: SLF001 - maps that came while hidden would otherwise be drawn when shown
            grid.stack.addWidget(bare)
            grid.stack.setCurrentWidget(bare)

            def set_maps(maps: KindMaps | None, mode: str | None = None, grid=grid, bare=bare) -> None:
                grid._maps, grid._stale = maps, False  # noqa: SLF001 - the grid keeps its maps (title), draws none
                grid._update_title()  # noqa: SLF001
                if maps is not None and maps.values.size:
                    bare.set_maps(maps)

            grid.set_maps = set_maps
            if grid.current_maps() is not None:
                bare.set_maps(grid.current_maps())
        QApplication.processEvents()
        yield bares
    finally:
        for kind, grid in view.grids.items():
            if grid not in bares:
                continue
            del grid.set_maps
            grid.stack.setCurrentWidget(grid.graphics)
            grid.stack.removeWidget(bares[grid])
            bares[grid].deleteLater()
            session.frame_changed.connect(window.badges[kind].on_frame)
        session.recompute()  # the real grids catch up with the last input
        session.wait_idle(60)
        QApplication.processEvents()


@contextmanager
def grids_only(window: Application) -> Iterator[None]:
    """A frame updates the grids and nothing else of the Playground (decoder panel, prediction, previews stay)."""
    view, session = window.playground, window.session

    def show_grids(frame: PlaygroundFrame) -> None:
        for kind, grid in view.grids.items():
            grid.set_maps(frame.maps.maps[kind], mode=frame.maps.mode)

    session.frame_changed.disconnect(view.show_frame)
    session.frame_changed.connect(show_grids)
    try:
        yield
    finally:
        session.frame_changed.disconnect(show_grids)
        session.frame_changed.connect(view.show_frame)


def measure_variant(window: Application, name: str, length: int, n_keys: int) -> float:
    """The worst grid tab's keystroke p95 / that tab's floor p95 with the frame cut down to `name`."""
    import keystroke_bench

    if name == "app":
        result, floor = keystroke_bench.measure_with_floor(window, length, n_keys)
    else:
        with bare_grids(window) as bares:
            if name == "bare grid":
                result, floor = keystroke_bench.measure_with_floor(window, length, n_keys, painted=bares.get)
            else:
                with grids_only(window):
                    result, floor = keystroke_bench.measure_with_floor(window, length, n_keys, painted=bares.get)
    worst = max(result.p95_ms, key=lambda kind: result.p95_ms[kind] / floor[kind])
    ratio = result.p95_ms[worst] / floor[worst]
    log.info(
        "%s: %.2f x (%s: keystroke p95 %.2f ms, floor %.2f ms)", name, ratio, worst, result.p95_ms[worst], floor[worst]
    )
    return ratio


VARIANTS = ("app", "bare grid", "bare grid, no side panels")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--length", type=int, default=32, help="source length typed at, 2-252 (default 32)")
    parser.add_argument("--keys", type=int, default=40, help="keys per tab and variant, 4-400 (default 40)")
    parser.add_argument("--rounds", type=int, default=2, help="rounds over the variants, 1-20 (default 2)")
    parser.add_argument("--json", type=Path, help="also write the ratios here")
    args = parser.parse_args(argv)
    for name, value, lo, hi in (("--length", args.length, 2, 252), ("--keys", args.keys, 4, 400)):
        if not lo <= value <= hi:
            parser.error(f"{name} must be {lo}-{hi}")
    if not 1 <= args.rounds <= 20:
        parser.error("--rounds must be 1-20")
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    torch.set_num_threads(1)  # as bench.py: the floor's passes run on this thread
    import ui_bench

    ratios: dict[str, list[float]] = {name: [] for name in VARIANTS}
    with ui_bench.scratch_window("keystroke-bound-") as window:
        for round_ in range(args.rounds):
            for name in VARIANTS if round_ % 2 == 0 else reversed(VARIANTS):
                ratios[name].append(measure_variant(window, name, args.length, args.keys))
    lines = [f"keystroke p95 / floor p95, worst grid tab, length {args.length}, {args.rounds} rounds:"]
    for name, values in ratios.items():
        runs = ", ".join(f"{v:.2f}" for v in values)
        lines.append(f"  {name:28s} median {statistics.median(values):.2f} x ({runs})")
    sys.stdout.write("\n".join(lines) + "\n")
    if args.json:
        args.json.write_text(json.dumps({"length": args.length, "ratios": ratios}) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
