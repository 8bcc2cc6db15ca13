"""A run that starts after a long one: the progress bar says it is starting (not "not training") until its first
step arrives, and the curves' step axis spans the new run, not the thousands of steps of the greyed previous one."""

from __future__ import annotations

from PySide6.QtCore import Qt
from qt_helpers import show_trainer_tab

from visualizer.state.training_record import MetricsView

WAIT_MS = 60_000


def long_history(steps: int) -> MetricsView:
    xs = tuple(range(1, steps + 1))
    return MetricsView(xs, tuple(4.0 for _ in xs), tuple(0.5 for _ in xs), tuple(1e-3 for _ in xs))


def test_a_short_run_after_a_long_one_says_it_starts_and_fills_the_step_axis(qtbot, hub, state):
    tab = show_trainer_tab(qtbot, hub, state, (1200, 800))
    tab.curves.set_series(long_history(4000))  # a model with 4000 steps behind it, drawn
    tab.curves.follow_curves()
    qtbot.waitUntil(lambda: tab.curves.loss_plot.viewRange()[0][1] > 3000)
    tab.form.steps_spin.setValue(30)
    qtbot.mouseClick(tab.scratch_button, Qt.MouseButton.LeftButton)
    assert state.state == "running"
    assert tab.figures.progress_bar.text().startswith("starting"), tab.figures.progress_bar.text()
    qtbot.waitUntil(lambda: state.state == "finished" and state.training_thread is None, timeout=WAIT_MS)
    assert tab.figures.progress_bar.text() == "step 30 / 30"
    for plot in (tab.curves.loss_plot, tab.curves.metric_plot, tab.curves.lr_plot):
        low, high = plot.viewRange()[0]
        assert -2 <= low <= 1 and 30 <= high <= 32, (low, high)  # the 30 steps fill the axis
