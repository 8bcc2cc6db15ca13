"""The Trainer tab at 1280x800 beside the Lessons dock: every plot, legend and line of text stays inside its place."""

from __future__ import annotations

import pytest
import torch
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QScrollArea
from qt_helpers import CTRL, key, shown_app

from core_model.shipped import resource_path
from visualizer.state.snapshots import ProbeSnapshot
from visualizer.widgets.training.forming import FormingCurves
from visualizer.workers.training_worker import probe_maps

CPU = torch.device("cpu")


def inside(item_rect, plot) -> bool:
    """The item's rectangle, in the plot's scene, lies within what the plot's view shows."""
    view = plot.viewport().rect()
    return item_rect.left() >= view.left() - 1 and item_rect.right() <= view.right() + 1


def test_the_trainer_beside_the_lessons_dock_clips_nothing(qtbot):
    app = shown_app(qtbot, resource_path("copy_rope.pt"))
    qtbot.waitUntil(lambda: app.lessons is not None and app.lessons.loaded, timeout=60_000)
    key(qtbot, app, Qt.Key.Key_F9)  # the dock, as a student following a lesson has it
    qtbot.waitUntil(app.lessons.dock.isVisible)
    key(qtbot, app, Qt.Key.Key_3, CTRL)
    tab = app.trainer_tab
    qtbot.waitUntil(tab.isVisible)
    qtbot.wait(200)
    column = tab.findChild(QScrollArea)
    assert not column.horizontalScrollBar().isVisible(), "the form's column scrolls sideways"
    forming = tab.findChild(FormingCurves)
    source = app.hub.task.default_source()
    tab.probe.set_snapshots((ProbeSnapshot(1, source, probe_maps(app.hub.model, app.hub.task, source, CPU)),))
    qtbot.wait(200)  # the probe's map replaces its placeholder and is laid out
    plots = ((p, p.getPlotItem()) for p in (tab.curves.loss_plot, tab.curves.metric_plot, forming.plot))
    for plot, item in (*plots, (tab.probe.graphics, tab.probe.plot)):
        assert inside(item.sceneBoundingRect(), plot), f"{item.titleLabel.text} is wider than its view"
        if item.legend is not None:
            assert inside(item.legend.sceneBoundingRect(), plot), f"the legend of {item.titleLabel.text} is cut"
    assert forming.formed_label.width() > 250  # a line of its own, not a word per line beside the combo
    assert tab.rect().contains(tab.mapFrom(forming, forming.rect().bottomRight()))
    app.window.close()


@pytest.mark.first_launch
def test_a_run_keeps_its_buttons_and_progress_in_sight_at_1280x800(qtbot):
    """The form scrolls, the controls below it do not: a run's Pause, Stop, progress bar and figures are whole on
    screen while it trains, with no scrolling, on a first launch (the lesson card above the tabs) and with the
    banner a run puts up."""
    app = shown_app(qtbot, resource_path("copy_rope.pt"))
    qtbot.waitUntil(lambda: app.lessons is not None and app.lessons.loaded, timeout=60_000)  # then the card shows
    key(qtbot, app, Qt.Key.Key_3, CTRL)
    tab = app.trainer_tab
    qtbot.waitUntil(tab.isVisible)
    tab.scratch_button.click()
    try:
        qtbot.waitUntil(lambda: tab.state.busy and tab.pause_button.isEnabled(), timeout=30_000)
        qtbot.waitUntil(lambda: tab.progress_bar.value() > 0, timeout=30_000)
        assert app.lessons.card.isVisible()
        for widget in (tab.pause_button, tab.stop_button, tab.progress_bar, tab.speed_label, tab.eta_label):
            seen = widget.visibleRegion().boundingRect()
            assert seen == widget.rect(), f"{widget.text() if hasattr(widget, 'text') else widget} is cut: {seen}"
            assert tab.rect().contains(widget.mapTo(tab, widget.rect().bottomRight()))
    finally:
        tab.stop_button.click()
        qtbot.waitUntil(lambda: not tab.state.busy, timeout=30_000)
    app.hub.dirty = False
    app.window.close()
