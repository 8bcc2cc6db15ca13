"""Loss, accuracy and learning-rate curves of a run, drawn from an immutable MetricsView."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from functools import partial

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QFont, QFontMetricsF, QResizeEvent
from PySide6.QtWidgets import QVBoxLayout, QWidget

from visualizer.state.training_record import MetricsView


def plain_axes(plot: pg.PlotWidget) -> None:
    """Axes that never add an SI prefix to their numbers (a step count or a score needs none). With the prefix on,
    pyqtgraph sets each axis label's HTML again at every new range and lays the plot out: a second paint per redraw."""
    for name in ("left", "bottom", "right", "top"):
        plot.getAxis(name).enableAutoSIPrefix(False)


# Each legend's entries in order: curve key -> name. The evaluation curves ("eval_") and the previous run enter when
# they have points: an entry for a curve not drawn yet (before a run's first evaluation) reads as one that failed.
LEGENDS = {
    "loss": {"loss": "training loss", "eval_loss": "evaluation loss"},
    "token_accuracy": {
        "token_accuracy": "tokens (train)",
        "eval_token_accuracy": "tokens (eval)",
        "eval_exact_match": "exact (eval)",
    },
}
PREVIOUS_NAME = "previous run"
TITLE_POINTS = 11  # pyqtgraph's plot titles
TITLE_MARGIN = 30  # pixels of the plot's width its title cannot use
TWO_LEGEND_COLUMNS_PX = 360  # narrower, the legends' two columns of 8 pt names run past the data area
PLOT_MIN_PX = 200  # a title, the step axis and at least 120 px of data: three fit a 1280x800 window's page


class Curves(QWidget):
    """Loss, accuracy and learning-rate plots; curves are created once and updated with setData."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.loss_plot = pg.PlotWidget(title="Loss")
        self.metric_plot = pg.PlotWidget(title="Accuracy")
        self.lr_plot = pg.PlotWidget(title="Learning rate")
        for plot in (self.loss_plot, self.metric_plot, self.lr_plot):
            plot.setMinimumHeight(PLOT_MIN_PX)
        self.lr_plot.getAxis("left").setTickDensity(0.5)  # a short plot: fewer, readable numbers
        self.metric_plot.setYRange(0.0, 1.0)
        self.metric_plot.setToolTip(  # the legend's short names, spelled out
            "tokens: the share of output symbols that are right, on training batches and on the held-out evaluation"
            " set\nexact: the share of evaluation outputs right in every symbol, decoded greedily"
        )
        # Two columns in small type, so every entry stays inside the plot when the page is short, on a translucent
        # backing: the names stay readable where a curve runs under them, and the curve still shows through. Each
        # sits in the corner its curves leave free once a run has learnt: loss ends low (top right), accuracy high
        # (bottom right).
        for plot, offset in ((self.loss_plot, (-10, 2)), (self.metric_plot, (-10, -2))):
            plot.addLegend(offset=offset, labelTextSize="8pt", colCount=2, brush=pg.mkBrush(0, 0, 0, 90))
        for plot in (self.loss_plot, self.metric_plot, self.lr_plot):
            plot.setLabel("bottom", "step")  # no grid: its lines were most of each frame's drawing time
            plain_axes(plot)
        dots = dict(symbol="o", symbolSize=6)
        self.curves = {
            "loss": self.loss_plot.plot(pen=pg.mkPen("#4c9be8", width=1)),
            "eval_loss": self.loss_plot.plot(pen=pg.mkPen("#f0a030", width=2), symbolBrush="#f0a030", **dots),
            "token_accuracy": self.metric_plot.plot(pen=pg.mkPen("#4c9be8", width=1)),
            "eval_token_accuracy": self.metric_plot.plot(
                pen=pg.mkPen("#f0a030", width=2), symbolBrush="#f0a030", **dots
            ),
            "eval_exact_match": self.metric_plot.plot(pen=pg.mkPen("#5cb85c", width=2), symbolBrush="#5cb85c", **dots),
            "lr": self.lr_plot.plot(pen=pg.mkPen("#c678dd", width=1)),
        }
        self._legend_entries: dict[str, tuple[str, ...]] = {}  # plot key -> the names its legend shows
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
        for plot in (self.loss_plot, self.metric_plot, self.lr_plot):
            layout.addWidget(plot, 1)
        self._relegend()
        self._source = ""  # stored training the loss plot's title names
        self._title = "Loss"  # the loss plot's title now (as built)

    def set_source(self, source: str) -> None:
        """Name the training the curves show that was not done here, in the loss plot's title ("" for none:
        origins.stored_training), shortened with "…" to the plot's width: a wider title would widen the plot
        past its place (a long file name beside the Lessons dock)."""
        self._source = source
        self._fit_title()

    def _fit_title(self) -> None:
        title = "Loss"
        if self._source:
            font = QFont()
            font.setPointSizeF(TITLE_POINTS)
            metrics = QFontMetricsF(font)
            room = max(0.0, self.loss_plot.width() - TITLE_MARGIN - metrics.horizontalAdvance("Loss ()"))
            title = f"Loss ({metrics.elidedText(self._source, Qt.TextElideMode.ElideRight, room)})"
        if title != self._title:  # asked at every resize: a new title lays the plot out again
            self._title = title
            self.loss_plot.setTitle(title)

    def resizeEvent(self, event: QResizeEvent) -> None:  # Qt's name; the plots fill the width, laid out already
        super().resizeEvent(event)
        if self._source:
            self._fit_title()
        columns = 2 if self.width() >= TWO_LEGEND_COLUMNS_PX else 1  # a narrow plot: one column stays inside it
        for plot in (self.loss_plot, self.metric_plot):
            legend = plot.getPlotItem().legend
            if legend.columnCount != columns:
                legend.setColumnCount(columns)

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

    def _set_data(self, data: Mapping[str, tuple[np.ndarray, object]]) -> None:
        """One plot's curves: key -> (steps, values)."""
        for key, (xs, ys) in data.items():
            self.curves[key].setData(xs, np.asarray(ys, float))
        self._relegend([key for key in data if key in LEGENDS])  # the learning-rate plot has no legend

    def span_run(self, first: int, last: int) -> None:
        """A run of steps `first` to `last` begins: the step axis spans it whole from its first step (the previous
        run, greyed, is seen over the same steps), until another model's curves arrive (`follow_curves`)."""
        for plot in (self.loss_plot, self.metric_plot, self.lr_plot):
            plot.setXRange(first, last, padding=0.02)

    def follow_curves(self) -> None:
        """The step axis spans whatever curves are drawn (a loaded model's history)."""
        for plot in (self.loss_plot, self.metric_plot, self.lr_plot):
            plot.enableAutoRange(axis="x")

    def set_previous(self, series: MetricsView | None) -> None:
        """Grey curves of the previous run (None clears them)."""
        for key, curve in self.previous.items():
            if series is None:
                curve.setData([], [])
            else:
                curve.setData(np.asarray(series.steps, float), np.asarray(getattr(series, key), float))
        self._relegend()

    def _relegend(self, plot_keys: Iterable[str] = tuple(LEGENDS)) -> None:
        """Each legend (of the plots named by their training curve) lists, in LEGENDS order and then the previous
        run, the curves that have points (the training curve always). Rebuilt only when that list changes: a rebuilt
        legend lays its plot out again, and entries taken out one by one would leave holes in its two columns."""
        plots = {"loss": self.loss_plot, "token_accuracy": self.metric_plot}
        for plot_key in plot_keys:
            plot = plots[plot_key]
            entries = [(self.curves[k], name) for k, name in LEGENDS[plot_key].items() if _shown(k, self.curves[k])]
            if _has_points(self.previous[plot_key]):
                entries.append((self.previous[plot_key], PREVIOUS_NAME))
            names = tuple(name for _, name in entries)
            if self._legend_entries.get(plot_key) == names:
                continue
            legend = plot.getPlotItem().legend
            legend.clear()
            for curve, name in entries:
                legend.addItem(curve, name)
            self._legend_entries[plot_key] = names

    def set_cursor(self, step: int | None) -> None:
        """A vertical line at the step the probe timeline shows (None hides it)."""
        for cursor in self.cursors.values():
            cursor.setVisible(step is not None)
            if step is not None:
                cursor.setValue(step)


def _has_points(curve: pg.PlotDataItem) -> bool:
    xs = curve.getData()[0]
    return xs is not None and len(xs) > 0


def _shown(key: str, curve: pg.PlotDataItem) -> bool:
    """The training curves always have their entry; an evaluation curve once it has a point."""
    return not key.startswith("eval_") or _has_points(curve)
