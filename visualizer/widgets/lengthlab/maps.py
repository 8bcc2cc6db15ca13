"""Both models' cross-attention for one source, side by side: rows are the tokens each model wrote, columns the
source symbols; the head average of one decoder layer (weights 0 to 1, one shared colour scale)."""
from __future__ import annotations

import html

import numpy as np
import pyqtgraph as pg
from PySide6.QtWidgets import QWidget

from visualizer.state.lab_snapshots import ProbePair

from .plot import COLOURS

MAX_TICKS = {"bottom": 40, "left": 16}  # more labels than this overlap (the maps are wider than tall): every k-th


class ProbeMaps(pg.GraphicsLayoutWidget):
    """Two heatmaps updated in place (setImage); titles say what each model answered and whether it is right."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setBackground("w")
        self.plots, self.images = [], []
        cmap = pg.colormap.get("viridis")
        for slot in range(2):
            plot = self.addPlot(row=0, col=slot)
            plot.invertY(True)
            plot.setMouseEnabled(x=False, y=False)
            plot.hideButtons()
            plot.setLabel("bottom", "source symbol")
            plot.setLabel("left", "output token")
            image = pg.ImageItem(axisOrder="row-major")
            image.setLookupTable(cmap.getLookupTable(0.0, 1.0, 256))
            image.setLevels((0.0, 1.0))
            plot.addItem(image)
            for name in ("bottom", "left"):  # token ticks only: never numeric ones like "-400 (x0.001)"
                plot.getAxis(name).setTicks([[], []])
                plot.getAxis(name).enableAutoSIPrefix(False)
            self.plots.append(plot)
            self.images.append(image)
        self.colorbar = pg.ColorBarItem(values=(0.0, 1.0), colorMap=cmap, interactive=False, label="weight")
        self.addItem(self.colorbar, row=0, col=2)
        self.titles = ["", ""]
        for slot in range(2):
            self._title(slot, "no source yet: click a length on the plot above")

    def set_pair(self, pair: ProbePair, layer: int | None) -> None:
        """Show `layer` (None: the last) head-averaged for each model of the pair."""
        for slot in range(2):
            probe = pair.probes[slot] if slot < len(pair.probes) else None
            plot, image = self.plots[slot], self.images[slot]
            if probe is None:
                image.clear()
                self._title(slot, f"{pair.labels[slot] if slot < len(pair.labels) else ''}: length {pair.length} "
                                  f"does not fit this model")
                continue
            vocab = pair.tasks[slot].vocabulary
            n_layers = probe.cross.shape[0]
            index = n_layers - 1 if layer is None else min(layer, n_layers - 1)
            matrix = probe.cross[index].mean(axis=0) if probe.cross.shape[2] else np.zeros((1, len(probe.encoder_input)))
            image.setImage(np.ascontiguousarray(matrix, np.float32), autoLevels=False, levels=(0.0, 1.0))
            image.setRect(0, 0, matrix.shape[1], matrix.shape[0])
            out_tokens = [_token(vocab, t) for t in probe.output] or ["(nothing)"]
            _ticks(plot.getAxis("bottom"), vocab.tokens(probe.encoder_input))
            _ticks(plot.getAxis("left"), out_tokens)
            plot.setXRange(0, matrix.shape[1], padding=0.0)
            plot.setYRange(0, matrix.shape[0], padding=0.0)
            got = "".join(t for t in out_tokens if t not in ("<eos>", "(nothing)"))
            verdict = "right" if probe.correct else f"wrong: wrote {got[:40] or 'nothing'}"
            mark = "✓" if probe.correct else "✗"
            self._title(slot, f"{pair.labels[slot]}, layer {index + 1} of {n_layers}: {mark} {verdict}")

    def _title(self, slot: int, text: str) -> None:
        self.titles[slot] = text
        colour = COLOURS[slot]
        self.plots[slot].setTitle(f"<span style='color:{colour}'>{html.escape(text)}</span>", size="10pt")


def _ticks(axis: pg.AxisItem, labels: list[str]) -> None:
    """One label per cell centre; every k-th when there are too many to read."""
    step = max(1, -(-len(labels) // MAX_TICKS[axis.orientation]))
    axis.setTicks([[(i + 0.5, text) for i, text in enumerate(labels) if i % step == 0], []])


def _token(vocab, token_id: int) -> str:
    """A token's text; an id past the task's vocabulary (a model may know more symbols) shows as "?"."""
    return vocab.token(token_id) if token_id < len(vocab) else "?"
