"""The stepper's next-token chart: a candidate with no probability shows "0.00" and nothing that reads as a minus."""

from __future__ import annotations

from PySide6.QtCore import QPointF
from PySide6.QtGui import QColor
from qt_helpers import show_widget

from visualizer.widgets.playground.candidate_chart import CandidateChart


def test_a_zero_probability_row_has_nothing_between_the_axis_and_its_value(qtbot):
    chart = show_widget(qtbot, CandidateChart(), (480, 220))
    chart.set_candidates(((3, "0", 1.0), (2, "<eos>", 0.0), (4, "1", 0.0)))
    qtbot.wait(50)
    item = chart.getPlotItem()
    image = chart.grab().toImage()
    background = QColor(chart.backgroundBrush().color())
    for row in (1, 2):  # the rows without a bar
        at = chart.mapFromScene(item.getViewBox().mapViewToScene(QPointF(0.0, row)))
        strip = [image.pixelColor(at.x() + dx, at.y() + dy) for dx in range(2, 6) for dy in (-1, 0, 1)]
        assert all(colour == background for colour in strip), f"a mark beside row {row}'s value reads as a minus"
