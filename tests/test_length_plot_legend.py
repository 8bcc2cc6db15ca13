"""The Length lab's legend names a model once its curve has points, as the plot fills in during an evaluation."""

from __future__ import annotations

from core_model.length_eval import LengthResult
from visualizer.state.lab_snapshots import LabCurves
from visualizer.widgets.lengthlab.plot import LengthPlot


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
