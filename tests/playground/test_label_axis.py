"""The grid's fast label axis places every label exactly where pyqtgraph's own AxisItem does, on all four sides."""

from __future__ import annotations

import pyqtgraph as pg
import pytest
from PySide6.QtGui import QImage, QPainter

from visualizer.widgets.heatmap.label_axis import LabelAxis

SIDES = ("left", "top", "right", "bottom")


def _plot(qtbot, axis_type, inverted: bool) -> tuple[pg.GraphicsLayoutWidget, pg.PlotItem]:
    view = pg.GraphicsLayoutWidget()
    qtbot.addWidget(view)
    plot = view.addPlot(axisItems={side: axis_type(side) for side in SIDES})
    plot.showAxis("top")
    plot.showAxis("right")
    for side in SIDES:
        plot.getAxis(side).setStyle(tickLength=0)
    plot.getAxis("left").setWidth(32)
    plot.getAxis("right").setWidth(48)
    plot.invertY(inverted)
    labels = ["<bos>", "1", "22", "<eos>", "7", "<pad>"] * 3
    ticks = [[(i + 0.5, text) for i, text in enumerate(labels)]]
    for side in SIDES:
        plot.getAxis(side).setTicks(ticks)
    plot.getViewBox().setRange(xRange=(0, 14), yRange=(2, 18), padding=0.01)  # some labels fall outside
    view.resize(700, 420)
    view.show()
    qtbot.waitExposed(view)
    view.grab()  # lay out and paint once
    return view, plot  # the caller keeps the widget alive


@pytest.mark.parametrize("inverted", [True, False])
def test_labels_sit_where_pyqtgraph_puts_them(qtbot, inverted):
    views_and_plots = _plot(qtbot, LabelAxis, inverted), _plot(qtbot, pg.AxisItem, inverted)  # widgets kept alive
    (_view_a, ours), (_view_b, stock) = views_and_plots
    image = QImage(10, 10, QImage.Format.Format_ARGB32)
    for side in SIDES:
        painter = QPainter(image)
        _axis, _ticks, specs = stock.getAxis(side).generateDrawSpecs(painter)
        painter.end()
        expected = [
            (round(r.x(), 6), round(r.y(), 6), round(r.width(), 6), round(r.height(), 6), text)
            for r, _flags, text in specs
        ]
        drawn = [
            (round(r.x(), 6), round(r.y(), 6), round(r.width(), 6), round(r.height(), 6), text)
            for r, text in ours.getAxis(side)._texts
        ]  # noqa: SLF001 - the boxes it draws
        assert drawn == expected, side
        assert 0 < len(drawn) < 18  # some labels drawn, the ones outside the range left out


def test_hidden_values_fall_back_to_pyqtgraph_and_draw_no_label(qtbot):
    view, plot = _plot(qtbot, LabelAxis, True)
    axis = plot.getAxis("bottom")
    axis.setStyle(showValues=False)
    axis._texts = []  # noqa: SLF001 - forget the last layout: only a new one could fill it
    view.grab()
    assert axis._texts == []  # noqa: SLF001 - the general path ran, which draws no value when told not to


def test_an_axis_without_labels_draws_the_same_pixels_as_pyqtgraph(qtbot):
    """Labels too small to draw leave an empty tick list: the fast path then draws the axis line alone, exactly as
    pyqtgraph does (that case used to take pyqtgraph's slow path on every keystroke)."""
    (view_a, ours), (view_b, stock) = _plot(qtbot, LabelAxis, True), _plot(qtbot, pg.AxisItem, True)
    for plot in (ours, stock):
        plot.getAxis("top").setHeight(24)  # fixed, as the grid has them: pyqtgraph would shrink an empty axis later
        plot.getAxis("bottom").setHeight(24)
        for side in SIDES:
            plot.getAxis(side).setTicks([])
    ours.getAxis("bottom")._line = None  # noqa: SLF001 - forget the last layout: only a new one could draw the line
    a, b = view_a.grab().toImage(), view_b.grab().toImage()
    assert a.size() == b.size()
    assert a == b
    assert ours.getAxis("bottom")._line is not None and ours.getAxis("bottom")._texts == []  # noqa: SLF001 - fast path
