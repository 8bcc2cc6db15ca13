"""The Trainer's loss and accuracy legends name only what is drawn, in one order, without holes."""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtCore import Qt

from visualizer.state.training_record import MetricsView
from visualizer.widgets.training.curves import Curves
from visualizer.widgets.training.tab import TrainerTab
from visualizer.workers.tasks import TaskSlot

TRAIN_ONLY = (["training loss"], ["tokens (train)"])
WITH_EVAL = (["training loss", "evaluation loss"], ["tokens (train)", "tokens (eval)", "exact (eval)"])


def legend_texts(curves: Curves) -> tuple[list[str], list[str]]:
    """The entries as drawn, row by row (two columns, or one in a narrow plot), for the loss and the accuracy plot."""
    out = []
    for plot in (curves.loss_plot, curves.metric_plot):
        legend = plot.getPlotItem().legend
        placed = sorted(
            (legend.layout.itemAt(i, j).text, (i, j))
            for i in range(legend.layout.rowCount())
            for j in range(1, legend.layout.columnCount(), 2)
            if legend.layout.itemAt(i, j) is not None
        )
        cells = sorted(cell for _, cell in placed)
        n = legend.columnCount
        assert cells == [(k // n, 2 * (k % n) + 1) for k in range(len(cells))], cells  # filled row by row, no holes
        out.append([text for text, _ in sorted(placed, key=lambda item: item[1])])
    return out[0], out[1]


def series(steps: int, evaluated: bool) -> MetricsView:
    xs = tuple(range(1, steps + 1))
    ones = tuple(1.0 for _ in xs)
    ev = (steps,) if evaluated else ()
    return MetricsView(xs, ones, ones, ones, ev, ones[: len(ev)], ones[: len(ev)], ones[: len(ev)])


def test_an_evaluation_curve_enters_its_legend_with_its_first_point_and_leaves_with_its_last(qtbot):
    curves = Curves()
    qtbot.addWidget(curves)
    curves.show()
    assert legend_texts(curves) == TRAIN_ONLY
    curves.set_series(series(5, evaluated=True))  # e.g. a model loaded with its evaluation history
    assert legend_texts(curves) == WITH_EVAL
    curves.set_previous(series(5, evaluated=True))  # a run from scratch: the old curves turn grey
    curves.set_series(series(2, evaluated=False))  # and the new run has not evaluated yet
    assert legend_texts(curves) == (["training loss", "previous run"], ["tokens (train)", "previous run"])
    curves.set_series(series(9, evaluated=True))
    assert legend_texts(curves) == tuple([*names, "previous run"] for names in WITH_EVAL)
    curves.set_previous(None)  # Clear previous run: no hole where it was
    assert legend_texts(curves) == WITH_EVAL


def test_a_real_run_names_its_evaluation_curves_once_it_has_evaluated(qtbot, hub, state):
    tab = TrainerTab(hub, state, make_slot=TaskSlot)
    qtbot.addWidget(tab)
    tab.show()
    assert legend_texts(tab.curves) == TRAIN_ONLY
    tab.form.steps_spin.setFocus()
    tab.form.steps_spin.selectAll()
    qtbot.keyClicks(tab.form.steps_spin, "30")
    qtbot.mouseClick(tab.train_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: state.state == "finished" and state.training_thread is None, timeout=60_000)
    assert len(tab.curves.curves["eval_loss"].getData()[0]) > 0  # the run's last step evaluates
    assert legend_texts(tab.curves) == WITH_EVAL


def learnt(steps: int) -> MetricsView:
    """A run that learns: loss falls from 4 towards 0, accuracy rises from 0 to 1, evaluated every tenth step."""
    xs = tuple(range(1, steps + 1))
    loss = tuple(4.0 * (1 - x / steps) for x in xs)
    acc = tuple(min(1.0, 1.3 * x / steps) for x in xs)
    ev = xs[9::10]
    return MetricsView(
        xs,
        loss,
        acc,
        acc,
        ev,
        tuple(loss[x - 1] for x in ev),
        tuple(acc[x - 1] for x in ev),
        tuple(acc[x - 1] for x in ev),
    )


def test_no_legend_covers_where_a_learnt_runs_curves_end(qtbot):
    curves = Curves()
    qtbot.addWidget(curves)
    curves.resize(420, 700)
    curves.show()
    qtbot.waitExposed(curves)
    curves.set_series(learnt(60))
    for name, plot in (("loss", curves.loss_plot), ("token_accuracy", curves.metric_plot)):
        plot.grab()  # laid out
        item = plot.getPlotItem()
        legend = item.legend.sceneBoundingRect()
        xs, ys = curves.curves[name].getData()
        ends = [item.vb.mapViewToScene(pg.Point(x, y)) for x, y in zip(xs[-15:], ys[-15:])]
        assert not any(legend.contains(point) for point in ends), f"the {name} legend covers the curve's end"
