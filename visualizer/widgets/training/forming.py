"""Attention forming: each head's role score at every probe snapshot, next to the loss; the timeline's cursor too."""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QSplitter, QVBoxLayout, QWidget

from visualizer.state.training import TrainingState
from visualizer.state.training_forming import FORMED_AT, FormingSeries
from visualizer.state.training_record import MetricsView
from visualizer.widgets.common.legend_above import LegendAbovePlot
from visualizer.widgets.common.role_labels import ROLE_LABELS
from visualizer.widgets.training.curves import plain_axes
from visualizer.widgets.training.probe_view import ProbeView

CHOICES = {
    "cross": "Cross-attention: reads",
    "decoder_self": "Decoder self: final role's score",
    "encoder_self": "Encoder self: final role's score",
}
COLOURS = ("#4c9be8", "#f0a030", "#5cb85c", "#d9534f", "#c678dd", "#56b6c2", "#e5c07b", "#abb2bf")
LAYER_STYLES = (Qt.PenStyle.SolidLine, Qt.PenStyle.DashLine, Qt.PenStyle.DotLine, Qt.PenStyle.DashDotLine)
AXIS_PX = 48  # the score axis: its title and "0.2" ... "1.0"
LEGEND_ROW_PX = 21  # one legend row at 8 pt
PREVIOUS_PEN = pg.mkPen((200, 200, 200), width=1, style=Qt.PenStyle.DashLine)  # as the loss curves' previous run


def beside(curves: QWidget, forming: FormingCurves, probe: QWidget) -> QSplitter:
    """The run's curves down the left at the page's full height (three plots stacked need it to keep their data
    readable on a 1280x800 screen); on the right the heads' forming curves over the probe's attention."""
    right = QSplitter(Qt.Orientation.Vertical)
    right.setChildrenCollapsible(False)
    right.addWidget(forming)
    right.addWidget(probe)
    right.setSizes([540, 460])  # scaled to the real height on the first layout: the legend above roles needs more
    split = QSplitter(Qt.Orientation.Horizontal)
    split.setChildrenCollapsible(False)
    split.addWidget(curves)
    split.addWidget(right)
    split.setStretchFactor(0, 1)
    split.setStretchFactor(1, 1)
    split.setSizes([500, 500])
    return split


class FormingCurves(QWidget):
    """One curve per head of the chosen kind. The Trainer tab hands it the run's snapshots on its coalesced redraw
    (early in a run a snapshot can come every step, far more often than anyone can read a curve); it follows the
    previous run and the probe timeline itself."""

    def __init__(self, state: TrainingState, probe: ProbeView, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.state = state
        self.series: FormingSeries | None = None
        self.previous: FormingSeries | None = None  # the run before the last from-scratch start, greyed
        self.kind = QComboBox()
        for key, text in CHOICES.items():
            self.kind.addItem(text, key)
        self.kind.setToolTip(
            "Which heads to follow: cross heads by their reads score (weight on the source positions the "
            "answer comes from), self-attention heads by the score of the role they end up with"
        )
        self.kind.currentIndexChanged.connect(lambda _i: self._draw())
        self.formed_label = QLabel("")
        self.formed_label.setTextFormat(Qt.TextFormat.PlainText)
        self.formed_label.setWordWrap(True)  # a long sentence must not widen the column and squeeze the loss
        # the title above the legend; a longer title sets a minimum width that clips the plot
        self.plot = LegendAbovePlot(AXIS_PX, LEGEND_ROW_PX, title="Head roles", legend_options={"labelTextSize": "8pt"})
        self.legend = self.plot.legend
        self.plot.setYRange(0.0, 1.0)
        self.plot.setLabel("bottom", "step")
        self.plot.setLabel("left", "role score on the probe source")
        plain_axes(self.plot)
        self.curves: dict[tuple[str, int, int], pg.PlotDataItem] = {}
        self._legend_entries: list[tuple[str, pg.PlotDataItem]] = []  # what the legend shows
        self.previous_curves: dict[tuple[str, int, int], pg.PlotDataItem] = {}
        self.step_cursor = pg.InfiniteLine(angle=90, movable=False, pen=pg.mkPen("#d62728", style=Qt.PenStyle.DashLine))
        self.step_cursor.hide()
        self.plot.addItem(self.step_cursor, ignoreBounds=True)
        self.threshold = pg.InfiniteLine(  # what a cross head's alignment must reach to count as formed
            pos=FORMED_AT,
            angle=0,
            movable=False,
            pen=pg.mkPen((150, 150, 150), style=Qt.PenStyle.DotLine),
            label=f"{FORMED_AT}: formed",  # short: rising curves cross a long label; the sentence above says the rest
            labelOpts={"position": 0.02, "color": (170, 170, 170), "anchors": [(0, 1), (0, 1)]},  # above, at the left
        )
        self.plot.addItem(self.threshold, ignoreBounds=True)
        top = QHBoxLayout()
        top.addWidget(self.kind)
        top.addStretch(1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(top)
        layout.addWidget(self.formed_label)  # its own line: beside the combo it wraps to a word per line when narrow
        layout.addWidget(self.plot, 1)
        state.previous_changed.connect(self.set_previous)
        probe.step_shown.connect(self.set_cursor)
        self.set_previous(state.previous)
        self.set_snapshots(state.snapshots)

    def set_snapshots(self, snapshots: tuple) -> None:
        """Score the snapshots not scored yet and draw the curves of the chosen kind."""
        self.series = self.state.forming.series(snapshots)
        self._draw()

    def set_previous(self, previous: MetricsView | None) -> None:
        """The previous run's role curves, greyed beside this run's (None or no snapshots clears them)."""
        snaps = previous.snapshots if previous is not None else ()
        self.previous = self.state.previous_forming.series(snaps) if snaps else None
        self._draw()

    def set_cursor(self, step: int | None) -> None:
        self.step_cursor.setVisible(step is not None)
        if step is not None:
            self.step_cursor.setValue(step)

    def _draw(self) -> None:
        kind = self.kind.currentData()
        self.threshold.setVisible(kind == "cross")  # the mark is an alignment; self-attention roles have none
        series = self.series
        keys = sorted(k for k in (series.scores if series else {}) if k[0] == kind)
        for key, item in list(self.curves.items()):
            if key not in keys:
                self.plot.removeItem(item)
                del self.curves[key]
        named = self._draw_series(series, keys, kind) if series is not None else {}
        named.update(self._draw_previous(kind))
        self._set_legend(named)
        steps = self.plot.getAxis("bottom")
        if steps.style["showValues"] != bool(named):  # no curve: no made-up steps 0.2 ... 0.8 under an empty plot
            steps.setStyle(showValues=bool(named))
        self.formed_label.setText(self._formed_text(series, kind == "cross") + self._previous_formed_text())

    def _draw_series(
        self, series: FormingSeries, keys: list[tuple[str, int, int]], kind: str
    ) -> dict[str, pg.PlotDataItem]:
        """A curve per head of `keys`, each scored by its final role; their legend entries."""
        named: dict[str, pg.PlotDataItem] = {}
        for i, key in enumerate(keys):
            role = "alignment" if kind == "cross" else series.final_roles.get(key, "broad")
            item = self.curves.get(key)
            if item is None:
                style = LAYER_STYLES[key[1] % len(LAYER_STYLES)]  # a colour per head, a dash per layer
                pen = pg.mkPen(COLOURS[i % len(COLOURS)], width=2, style=style)
                item = self.curves[key] = self.plot.plot(pen=pen)  # no dots: a snapshot every step early in a run
            item.setData(series.steps, series.scores[key][scored(role)])
            named[f"L{key[1] + 1} H{key[2] + 1} {ROLE_LABELS[role]}"] = item
        return named

    def _set_legend(self, named: dict[str, pg.PlotDataItem]) -> None:
        """The legend's entries, rebuilt only when they change: a rebuilt legend lays the plot out again, and
        snapshots arrive many times a minute while a model trains."""
        entries = list(named.items())
        old = self._legend_entries
        same = len(entries) == len(old) and all(a[0] == b[0] and a[1] is b[1] for a, b in zip(entries, old))
        if not same:
            self.legend.clear()
            for name, item in named.items():
                self.legend.addItem(item, name)
            self._legend_entries = entries
            self.plot.refit_legend()

    def _draw_previous(self, kind: str) -> dict[str, pg.PlotDataItem]:
        """One grey dashed curve per head of the previous run, each scored by its own final role there; its
        legend entry."""
        prev = self.previous
        keys = sorted(k for k in (prev.scores if prev else {}) if k[0] == kind)
        for key in [k for k in self.previous_curves if k not in keys]:
            self.plot.removeItem(self.previous_curves.pop(key))
        if prev is None:  # no previous run: no keys, nothing to draw
            return {}
        for key in keys:
            item = self.previous_curves.get(key)
            if item is None:
                item = self.previous_curves[key] = pg.PlotDataItem(pen=PREVIOUS_PEN)
                item.setZValue(-1)
                self.plot.addItem(item, ignoreBounds=True)  # outside this run's steps: not stretching the view
            role = "alignment" if kind == "cross" else prev.final_roles.get(key, "broad")
            item.setData(prev.steps, prev.scores[key][scored(role)])
        return {"previous run": self.previous_curves[keys[0]]} if keys else {}

    def _previous_formed_text(self) -> str:
        if self.previous is None or not len(self.previous.steps):
            return ""
        formed = self.previous.formed_step()
        return (
            f" · previous run (grey): formed at step {formed}"
            if formed is not None
            else f" · previous run (grey): no cross head reached {FORMED_AT}"
        )

    def _formed_text(self, series: FormingSeries | None, line_shown: bool) -> str:
        """When a cross head formed; the dotted line is named only where it is drawn (the cross heads' plot)."""
        line = " (dotted line)" if line_shown else ""
        formed = series.formed_step() if series is not None else None
        if series is None or not len(series.steps):
            return "no probe snapshots yet"
        if formed is None:
            return f"no cross head's reads score has reached {FORMED_AT}{line} yet"
        if formed == series.steps[0] and len(series.steps) > 1:  # aligned before this run's snapshots began
            return (
                f"a cross head was already above {FORMED_AT}{line} at this run's first snapshot "
                f"(step {formed}): it formed earlier"
            )
        layer, head = series.formed_head() or (0, 0)
        reached = f"{FORMED_AT}, the dotted line" if line_shown else f"{FORMED_AT}"
        return f"cross head L{layer + 1} H{head + 1} formed at step {formed} (its reads score reached {reached})"


def scored(role: str) -> str:
    """The score series a role's curve draws: an `other` head's score is its `broad` score (core_model.head_roles)."""
    return "broad" if role == "other" else role
