"""The Trainer's short learning-rate plot: its axis numbers must stay readable (no label drawn over another)."""

from __future__ import annotations

import numpy as np
from PySide6.QtGui import QImage, QPainter

from visualizer.widgets.training.curves import Curves


def _label_rects(axis):
    image = QImage(10, 10, QImage.Format.Format_ARGB32)
    painter = QPainter(image)
    try:
        _axis_spec, _tick_specs, text_specs = axis.generateDrawSpecs(painter)
    finally:
        painter.end()
    return [(rect, text) for rect, _flags, text in text_specs]


def test_learning_rate_axis_labels_do_not_overlap(qtbot):
    curves = Curves()
    qtbot.addWidget(curves)
    curves.resize(450, 420)  # the column the Trainer gives the curves in a 1400 x 900 window
    with qtbot.waitExposed(curves):
        curves.show()
    steps = np.arange(4060, dtype=float)
    curves.curves["lr"].setData(steps, 0.003 * np.cos(np.linspace(0, np.pi / 2, steps.size)))
    qtbot.wait(50)
    axis = curves.lr_plot.getAxis("left")
    labels = _label_rects(axis)
    assert len(labels) >= 2, labels  # the scale still has numbers
    for (a, ta), (b, tb) in zip(labels, labels[1:]):
        assert not a.intersects(b), f"{ta!r} drawn over {tb!r} at plot height {axis.height():.0f}px"
