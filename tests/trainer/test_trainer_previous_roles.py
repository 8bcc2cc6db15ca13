"""The role plot beside the Trainer's curves greys the previous run, as the loss and accuracy curves do.

Driven through the real tab: Train from scratch twice, then Clear previous run. Reads the role plot's items: the
grey curves' data against the first run's snapshots, their pen, the legend, the formed-at sentence.
"""

from __future__ import annotations

import pyqtgraph as pg
import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QPen
from qt_helpers import show_trainer_tab
from widget_readers import legend_curves

from visualizer.state.training_forming import FormingRecorder
from visualizer.widgets.training.forming import FormingCurves

WAIT_MS = 60_000


def run_from_scratch(qtbot, tab, state, steps: int) -> None:
    tab.form.steps_spin.setValue(steps)
    qtbot.mouseClick(tab.scratch_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: state.state in ("finished", "failed") and state.training_thread is None, timeout=WAIT_MS)
    assert state.state == "finished"


def legend_names(forming: FormingCurves) -> list[str]:
    return [label.text for _, label in forming.plot.getPlotItem().legend.items]


def grey_curves(forming: FormingCurves) -> list[tuple[list[float], list[float]]]:
    """Every curve the role plot draws with a grey dashed pen (the look of a previous run), as (steps, scores)."""
    found = []
    for item in forming.plot.getPlotItem().items:
        pen = item.opts.get("pen") if isinstance(item, pg.PlotDataItem) else None
        colour = pen.color() if isinstance(pen, QPen) else None
        if (
            colour is not None
            and colour.red() == colour.green() == colour.blue()
            and pen.style() == Qt.PenStyle.DashLine
            and item.isVisible()
        ):
            xs, ys = item.getData()
            found.append(([] if xs is None else xs.tolist(), [] if ys is None else ys.tolist()))
    return sorted(pair for pair in found if pair[0])


def test_role_plot_greys_the_previous_run_until_it_is_cleared(qtbot, hub, state, tmp_path):
    tab = show_trainer_tab(qtbot, hub, state, (1400, 900))
    forming = tab.findChild(FormingCurves)
    run_from_scratch(qtbot, tab, state, 20)
    first = state.snapshots
    assert len(first) >= 3 and "previous run" not in legend_names(forming) and grey_curves(forming) == []
    hub.mark_saved(tmp_path / "first.pt")  # saved: a new start has nothing unsaved to ask about
    run_from_scratch(qtbot, tab, state, 8)
    expected = FormingRecorder().series(first)
    steps = [float(s.step) for s in first]
    want = sorted((steps, expected.scores[("cross", 0, head)]["alignment"].tolist()) for head in range(2))
    grey = grey_curves(forming)  # every cross head of the first run, on the first run's steps
    assert len(grey) == 2 and [xs for xs, _ in grey] == [steps, steps]
    for (_, ys), (_, want_ys) in zip(grey, want):
        assert ys == pytest.approx(want_ys, abs=1e-12)
    assert "previous run" in legend_names(forming)
    assert "previous run (grey)" in forming.formed_label.text()
    live = legend_curves(forming.plot)["L1 H1 reads"][0]
    assert live.tolist() == [float(s.step) for s in state.snapshots]  # this run's own curve is still there
    forming.kind.setCurrentIndex(forming.kind.findData("encoder_self"))  # each head under its final role there
    keys = [("encoder_self", 0, head) for head in range(2)]
    want = sorted(expected.scores[key][expected.final_roles[key]].tolist() for key in keys)
    grey = grey_curves(forming)
    assert len(grey) == 2
    for got, want_ys in zip(sorted(ys for _, ys in grey), want):
        assert got == pytest.approx(want_ys, abs=1e-12)
    qtbot.mouseClick(tab.clear_previous_button, Qt.MouseButton.LeftButton)
    assert grey_curves(forming) == [] and "previous run" not in legend_names(forming)
    assert "previous run" not in forming.formed_label.text()
