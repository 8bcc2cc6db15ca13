"""Both models' cross-attention for one source, side by side: rows are the tokens each model wrote, columns the
source symbols; the head average of one decoder layer (weights 0 to 1, one shared colour scale). Every token is
labelled or none is (TokenAxis); hovering a cell names its two tokens and its weight."""

from __future__ import annotations

import html

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF
from PySide6.QtGui import QCursor
from PySide6.QtWidgets import QToolTip, QWidget

from visualizer.state.length_lab_snapshots import ProbePair
from visualizer.widgets.heatmap.token_axis import token_axes

from .plot import COLOURS


class ProbeMaps(pg.GraphicsLayoutWidget):
    """Two heatmaps updated in place (setImage); titles say what each model answered and whether it is right."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setBackground("w")
        self.plots, self.images = [], []
        cmap = pg.colormap.get("viridis")
        self.cells: list[tuple[list[str], list[str], np.ndarray] | None] = [None, None]  # rows, columns, weights
        for slot in range(2):
            plot = self.addPlot(row=0, col=slot, axisItems=token_axes(bottom="source symbol", left="output token"))
            plot.invertY(True)
            plot.setMouseEnabled(x=False, y=False)
            plot.hideButtons()
            image = pg.ImageItem(axisOrder="row-major")
            image.setLookupTable(cmap.getLookupTable(0.0, 1.0, 256))
            image.setLevels((0.0, 1.0))
            plot.addItem(image)
            self.plots.append(plot)
            self.images.append(image)
        self.colorbar = pg.ColorBarItem(values=(0.0, 1.0), colorMap=cmap, interactive=False, label="weight")
        self.addItem(self.colorbar, row=0, col=2)
        self.titles = ["", ""]
        for slot in range(2):
            self._title(slot, "no source yet: click a length on the plot above")
        self.scene().sigMouseMoved.connect(self._on_mouse_moved)

    def set_pair(self, pair: ProbePair, layer: int | None) -> None:
        """Show `layer` (None: the last) head-averaged for each model of the pair."""
        for slot in range(2):
            probe = pair.probes[slot] if slot < len(pair.probes) else None
            plot, image = self.plots[slot], self.images[slot]
            self.cells[slot] = None
            if probe is None:
                image.clear()
                for name in ("bottom", "left"):
                    plot.getAxis(name).set_tokens(())
                self._title(
                    slot,
                    f"{pair.labels[slot] if slot < len(pair.labels) else ''}: length {pair.length} "
                    f"does not fit this model",
                )
                continue
            vocab = pair.tasks[slot].vocabulary
            n_layers = probe.cross.shape[0]
            index = n_layers - 1 if layer is None else min(layer, n_layers - 1)
            matrix = (
                probe.cross[index].mean(axis=0) if probe.cross.shape[2] else np.zeros((1, len(probe.encoder_input)))
            )
            image.setImage(np.ascontiguousarray(matrix, np.float32), autoLevels=False, levels=(0.0, 1.0))
            image.setRect(0, 0, matrix.shape[1], matrix.shape[0])
            out_tokens = [_token(vocab, t) for t in probe.output] or ["(nothing)"]
            sources = vocab.tokens(probe.encoder_input)
            plot.getAxis("bottom").set_tokens(sources)
            plot.getAxis("left").set_tokens(out_tokens)
            self.cells[slot] = (out_tokens, list(sources), matrix)
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

    def hover_text(self, slot: int, scene_pos: QPointF) -> str:
        """The cell of map `slot` under a scene point: "output 2 '7' ← source 5 '3': weight 0.412" ("" off it)."""
        cells = self.cells[slot]
        if cells is None or not self.plots[slot].vb.sceneBoundingRect().contains(scene_pos):
            return ""
        rows, columns, matrix = cells
        point = self.plots[slot].vb.mapSceneToView(scene_pos)
        i, j = int(np.floor(point.y())), int(np.floor(point.x()))
        if not (0 <= i < len(rows) and 0 <= j < len(columns) and i < matrix.shape[0]):
            return ""
        return f"output {i} '{rows[i]}' ← source {j} '{columns[j]}': weight {float(matrix[i, j]):.3f}"

    def _on_mouse_moved(self, scene_pos: QPointF) -> None:
        for slot, image in enumerate(self.images):
            text = self.hover_text(slot, scene_pos)
            image.setToolTip(text)
            if text and QToolTip.isVisible():
                QToolTip.showText(QCursor.pos(), text, self)


def _token(vocab, token_id: int) -> str:
    """A token's text; an id past the task's vocabulary (a model may know more symbols) shows as "?"."""
    return vocab.token(token_id) if token_id < len(vocab) else "?"
