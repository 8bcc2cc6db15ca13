"""Loss, accuracy and learning-rate curves of a run, drawn from an immutable MetricsView."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QVBoxLayout, QWidget

from visualizer.state.training_record import MetricsView


def plain_axes(plot: pg.PlotWidget) -> None:
    """Axes that never add an SI prefix to their numbers (a step count or a score needs none). With the prefix on,
    pyqtgraph sets each axis label's HTML again at every new range and lays the plot out: a second paint per redraw."""
    for name in ("left", "bottom", "right", "top"):
        plot.getAxis(name).enableAutoSIPrefix(False)


EVAL_NAMES = {
    "eval_loss": "evaluation loss",
    "eval_token_accuracy": "tokens (eval)",
    "eval_exact_match": "exact (eval)",
}


class Curves(QWidget):
    """Loss, accuracy and learning-rate plots; curves are created once and updated with setData."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.loss_plot = pg.PlotWidget(title="Loss")
        self.metric_plot = pg.PlotWidget(title="Accuracy")
        self.lr_plot = pg.PlotWidget(title="Learning rate")
        self.lr_plot.setMaximumHeight(160)
        self.lr_plot.setMinimumHeight(130)  # below ~60 px of axis its numbers were drawn over each other
        self.lr_plot.getAxis("left").setTickDensity(0.5)  # a short plot: fewer, readable numbers
        self.metric_plot.setYRange(0.0, 1.0)
        self.metric_plot.setToolTip(  # the legend's short names, spelled out
            "tokens: the share of output symbols that are right, on training batches and on the held-out evaluation"
            " set\nexact: the share of evaluation outputs right in every symbol, decoded greedily"
        )
        # Two columns in small type, so every entry stays inside a plot ~70 px high at 1280x800, on a translucent
        # backing: the names stay readable where a curve runs under them, and the curve still shows through.
        for plot in (self.loss_plot, self.metric_plot):
            plot.addLegend(offset=(-10, 2), labelTextSize="8pt", colCount=2, brush=pg.mkBrush(0, 0, 0, 150))
        for plot in (self.loss_plot, self.metric_plot, self.lr_plot):
            plot.setLabel("bottom", "step")  # no grid: its lines cost ~9 ms per plot and frame (54 of 62 ms)
            plain_axes(plot)
        dots = dict(symbol="o", symbolSize=6)
        self.curves = {
            "loss": self.loss_plot.plot(pen=pg.mkPen("#4c9be8", width=1), name="training loss"),
            "eval_loss": self.loss_plot.plot(pen=pg.mkPen("#f0a030", width=2), symbolBrush="#f0a030", **dots),
            "token_accuracy": self.metric_plot.plot(pen=pg.mkPen("#4c9be8", width=1), name="tokens (train)"),
            "eval_token_accuracy": self.metric_plot.plot(
                pen=pg.mkPen("#f0a030", width=2), symbolBrush="#f0a030", **dots
            ),
            "eval_exact_match": self.metric_plot.plot(pen=pg.mkPen("#5cb85c", width=2), symbolBrush="#5cb85c", **dots),
            "lr": self.lr_plot.plot(pen=pg.mkPen("#c678dd", width=1)),
        }
        self._named: set[str] = set()  # evaluation curves in their legend (they join with their first point)
        grey = pg.mkPen((200, 200, 200), width=1, style=Qt.PenStyle.DashLine)  # visible on black, unlike the live run
        self.previous = {  # the run before the last from-scratch start; outside the view's range, not stretching it
            "loss": pg.PlotDataItem(pen=grey),
            "token_accuracy": pg.PlotDataItem(pen=grey),
        }
        self.cursors: dict[str, pg.InfiniteLine] = {}
        for key, plot in (("loss", self.loss_plot), ("token_accuracy", self.metric_plot)):
            plot.addItem(self.previous[key], ignoreBounds=True)
            self.previous[key].setZValue(-1)
            cursor = pg.InfiniteLine(
                angle=90, movable=False, pen=pg.mkPen("#d62728", width=1, style=Qt.PenStyle.DashLine)
            )
            cursor.hide()
            plot.addItem(cursor, ignoreBounds=True)
            self.cursors[key] = cursor
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        for plot, stretch in ((self.loss_plot, 2), (self.metric_plot, 2), (self.lr_plot, 1)):
            layout.addWidget(plot, stretch)

    def set_series(self, series: MetricsView) -> None:
        """Push the whole series into the existing curves."""
        for part in self.series_parts(series):
            part()

    def series_parts(self, series: MetricsView) -> list[Callable[[], None]]:
        """The same push as one callable per plot (the Trainer tab runs them one per turn of the event loop)."""
        x, ex = np.asarray(series.steps, float), np.asarray(series.eval_steps, float)
        per_plot = (
            {"loss": (x, series.loss), "eval_loss": (ex, series.eval_loss)},
            {
                "token_accuracy": (x, series.token_accuracy),
                "eval_token_accuracy": (ex, series.eval_token_accuracy),
                "eval_exact_match": (ex, series.eval_exact_match),
            },
            {"lr": (x, series.lr)},
        )
        return [partial(self._set_data, data) for data in per_plot]

    def _set_data(self, data: dict[str, tuple[np.ndarray, object]]) -> None:
        """One plot's curves: key -> (steps, values). An evaluation curve joins its legend with its first point: an
        entry for a curve not yet drawn (a run evaluates every few hundred steps) reads as a curve that failed."""
        for key, (xs, ys) in data.items():
            curve = self.curves[key]
            curve.setData(xs, np.asarray(ys, float))
            if key in EVAL_NAMES and (len(xs) > 0) != (key in self._named):
                legend = (self.loss_plot if key == "eval_loss" else self.metric_plot).getPlotItem().legend
                if len(xs):
                    legend.addItem(curve, EVAL_NAMES[key])
                    self._named.add(key)
                else:
                    legend.removeItem(curve)
                    self._named.discard(key)

    def set_previous(self, series: MetricsView | None) -> None:
        """Grey curves of the previous run (None clears them)."""
        for (key, curve), plot in zip(self.previous.items(), (self.loss_plot, self.metric_plot)):
            legend = plot.getPlotItem().legend
            legend.removeItem(curve)
            if series is None:
                curve.setData([], [])
            else:
                curve.setData(np.asarray(series.steps, float), np.asarray(getattr(series, key), float))
                legend.addItem(curve, "previous run")

    def set_cursor(self, step: int | None) -> None:
        """A vertical line at the step the probe timeline shows (None hides it)."""
        for cursor in self.cursors.values():
            cursor.setVisible(step is not None)
            if step is not None:
                cursor.setValue(step)
