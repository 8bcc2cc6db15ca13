"""The Length lab's legend names a model once its curve has points, as the plot fills in during an evaluation, and
sits above the plot, where it covers no point."""

from __future__ import annotations

from PySide6.QtGui import QColor
from PySide6.QtWidgets import QApplication

from core_model.length_eval import LengthResult
from visualizer.state.lab_snapshots import LabCurves
from visualizer.widgets.lengthlab.plot import COLOURS, LengthPlot


def curves(points_a: int, points_b: int) -> LabCurves:
    lengths = tuple(range(1, 9))
    points = tuple(
        tuple(LengthResult(length, 1.0, 1.0, 10) for length in lengths[:count]) for count in (points_a, points_b)
    )
    return LabCurves(("RoPE", "Sinusoidal"), ("rope", "sinusoidal"), ((1, 4), (1, 4)), lengths, points, "none", 10, 0)


def shown(plot: LengthPlot) -> list[str]:
    """The legend's entries that are on screen, top to bottom."""
    return [label.text for _, label in plot.legend.items if label.isVisible()]


def test_a_model_enters_the_legend_with_its_first_point(qtbot):
    plot = LengthPlot()
    qtbot.addWidget(plot)
    plot.resize(800, 400)
    with qtbot.waitExposed(plot):
        plot.show()
    plot.set_curves(curves(0, 0))  # Evaluate pressed: nothing computed yet
    assert shown(plot) == []
    plot.set_curves(curves(3, 0))  # model A's lengths come first
    assert shown(plot) == ["RoPE: exact match", "RoPE: token accuracy"]
    plot.set_curves(curves(8, 1))
    assert shown(plot) == [
        "RoPE: exact match",
        "RoPE: token accuracy",
        "Sinusoidal: exact match",
        "Sinusoidal: token accuracy",
    ]
    assert plot.regions[0].isVisible() and plot.regions[0].getRegion() == (0.5, 4.5)


def test_the_legend_sits_above_the_plot_and_covers_no_point(qtbot):
    """A model that fails at short lengths draws its points at the foot of the plot's left end, where a legend inside
    the plot sat: the legend has a row of its own above the plot, kept from the start so the plot never jumps."""
    plot = LengthPlot()
    qtbot.addWidget(plot)
    plot.resize(900, 420)
    with qtbot.waitExposed(plot):
        plot.show()
    plot.set_curves(curves(0, 0))
    QApplication.processEvents()
    view_box = plot.getPlotItem().vb.sceneBoundingRect()
    lengths = tuple(range(1, 9))
    low = tuple(LengthResult(length, 0.05, 0.5, 10) for length in lengths)  # model A: wrong at every length
    high = tuple(LengthResult(length, 0.9, 0.95, 10) for length in lengths)
    plot.set_curves(
        LabCurves(("RoPE", "Sinusoidal"), ("rope", "sinusoidal"), ((1, 4), (1, 4)), lengths, (low, high), "none", 10, 0)
    )
    QApplication.processEvents()
    assert plot.getPlotItem().vb.sceneBoundingRect() == view_box  # entries arriving did not move the plot
    assert plot.legend.sceneBoundingRect().bottom() <= view_box.top()
    for _, label in plot.legend.items:  # each entry whole on screen and above the plot
        assert plot.rect().contains(plot.mapFromScene(label.sceneBoundingRect()).boundingRect())
        assert label.sceneBoundingRect().bottom() <= view_box.top()
    first_column = min(sample.sceneBoundingRect().left() for sample, _ in plot.legend.items)
    assert abs(first_column - view_box.left()) <= 2  # the samples start where the plot does
    image = plot.grab().toImage()
    dot = plot.mapFromScene(plot.scene_point(1, 0.05))
    seen, colour = image.pixelColor(dot), QColor(COLOURS[0])  # model A's first point is seen, in model A's colour
    assert (
        max(abs(seen.red() - colour.red()), abs(seen.green() - colour.green()), abs(seen.blue() - colour.blue())) < 30
    )
