"""The Trainer tab at 1280x800 beside the Lessons dock: every plot, legend and line of text stays inside its place."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QScrollArea
from qt_helpers import shown_app
from test_lessons_play2 import CTRL, key

from core_model.shipped import resource_path
from visualizer.widgets.trainer.forming import FormingCurves


def inside(item_rect, plot) -> bool:
    """The item's rectangle, in the plot's scene, lies within what the plot's view shows."""
    view = plot.viewport().rect()
    return item_rect.left() >= view.left() - 1 and item_rect.right() <= view.right() + 1


def test_the_trainer_beside_the_lessons_dock_clips_nothing(qtbot):
    app = shown_app(qtbot, resource_path("copy_rope.pt"))
    qtbot.waitUntil(lambda: app.lessons is not None and app.hub is not None, timeout=60_000)
    key(qtbot, app, Qt.Key.Key_F9)  # the dock, as a student following a lesson has it
    qtbot.waitUntil(app.lessons.dock.isVisible)
    key(qtbot, app, Qt.Key.Key_3, CTRL)
    tab = app.trainer_tab
    qtbot.waitUntil(tab.isVisible)
    qtbot.wait(200)
    column = tab.findChild(QScrollArea)
    assert not column.horizontalScrollBar().isVisible(), "the form's column scrolls sideways"
    forming = tab.findChild(FormingCurves)
    plots = (tab.curves.loss_plot, tab.curves.metric_plot, forming.plot)
    for plot in plots:
        item = plot.getPlotItem()
        assert inside(item.sceneBoundingRect(), plot), f"{item.titleLabel.text} is wider than its view"
        if item.legend is not None:
            assert inside(item.legend.sceneBoundingRect(), plot), f"the legend of {item.titleLabel.text} is cut"
    assert forming.formed_label.width() > 250  # a line of its own, not a word per line beside the combo
    assert tab.rect().contains(tab.mapFrom(forming, forming.rect().bottomRight()))
    app.window.close()
