"""The Length lab's legend names a model once its curve has points, as the plot fills in during an evaluation, and
sits above the plot, where it covers no point."""

from __future__ import annotations

from PySide6.QtCore import QPoint, Qt
from PySide6.QtGui import QColor
from PySide6.QtTest import QTest
from widget_readers import near_colour

from core_model.length_eval import LengthResult
from visualizer.state.length_lab_snapshots import LabCurves
from visualizer.widgets.length_lab.plot import COLOURS, LEGEND_ROW_PX, LengthPlot


def curves(points_a: int, points_b: int) -> LabCurves:
    lengths = tuple(range(1, 9))
    points = tuple(
        tuple(LengthResult(length, 1.0, 1.0, 10) for length in lengths[:count]) for count in (points_a, points_b)
    )
    return LabCurves(("RoPE", "Sinusoidal"), ("rope", "sinusoidal"), ((1, 4), (1, 4)), lengths, points, "none", 10, 0)


def shown_plot(qtbot, width: int, height: int) -> LengthPlot:
    """A Length lab plot on screen at width x height."""
    plot = LengthPlot()
    qtbot.addWidget(plot)
    plot.resize(width, height)
    with qtbot.waitExposed(plot):
        plot.show()
    return plot


def shown(plot: LengthPlot) -> list[str]:
    """The legend's entries that are on screen, top to bottom."""
    return [label.text for _, label in plot.legend.items if label.isVisible()]


def test_a_model_enters_the_legend_with_its_first_point(qtbot):
    plot = shown_plot(qtbot, 800, 400)
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


def two_models(names: tuple[str, str], exact: tuple[float, float]) -> LabCurves:
    """Both models evaluated at lengths 1-8, each with the same exact match (and a higher token accuracy) at every
    length."""
    lengths = tuple(range(1, 9))
    points = tuple(tuple(LengthResult(n, e, min(1.0, e + 0.45), 10) for n in lengths) for e in exact)
    return LabCurves(names, ("rope", "sinusoidal"), ((1, 4), (1, 4)), lengths, points, "none", 10, 0)


def laid_out(plot: LengthPlot) -> tuple:
    return (plot.getPlotItem().vb.sceneBoundingRect(), plot.legend.sceneBoundingRect())


def legend_above_plot(plot: LengthPlot) -> bool:
    """The legend laid out (its samples start where the plot does), every entry whole on screen and above the plot,
    the plot's right edge on screen."""
    view_box = plot.getPlotItem().vb.sceneBoundingRect()
    labels = [label.sceneBoundingRect() for _, label in plot.legend.items]
    first_column = min((sample.sceneBoundingRect().left() for sample, _ in plot.legend.items), default=-1.0)
    return (
        abs(first_column - view_box.left()) <= 2
        and all(
            plot.rect().contains(plot.mapFromScene(r).boundingRect()) and r.bottom() <= view_box.top() for r in labels
        )
        and (plot.mapFromScene(view_box).boundingRect().right() <= plot.rect().right())
    )


def test_the_legend_sits_above_the_plot_and_covers_no_point(qtbot):
    """A model that fails at short lengths draws its points at the foot of the plot's left end, where a legend in a
    corner of the plot would cover them: the legend has a row of its own above the plot, one model per row, both
    rows kept from the start so the plot never jumps when entries arrive."""
    plot = shown_plot(qtbot, 900, 420)
    plot.set_curves(curves(0, 0))
    qtbot.waitUntil(lambda: plot.legend.height() == 2 * LEGEND_ROW_PX and laid_out(plot)[0].left() > 0)
    before = laid_out(plot)
    plot.set_curves(two_models(("RoPE", "Sinusoidal"), (0.05, 0.9)))  # model A: wrong at every length
    qtbot.waitUntil(lambda: len(plot.legend.items) == 4 and legend_above_plot(plot))
    assert laid_out(plot)[0] == before[0]  # entries arriving did not move the plot
    assert plot.legend.columnCount == 2  # one model per row
    image = plot.grab().toImage()
    dot = plot.mapFromScene(plot.scene_point(1, 0.05))
    assert near_colour(image.pixelColor(dot), QColor(COLOURS[0]), 30)  # model A's first point is seen, in its colour


def test_long_model_names_take_a_row_each_and_never_widen_the_plot_past_the_view(qtbot):
    plot = shown_plot(qtbot, 500, 420)
    names = ("Shipped RoPE, trained to 16 symbols", "Shipped sinusoidal, trained to 16")
    plot.set_curves(two_models(names, (0.5, 0.9)))
    qtbot.waitUntil(lambda: legend_above_plot(plot))
    assert plot.legend.columnCount == 1 and plot.legend.layout.rowCount() == 4
    plot.resize(1200, 420)  # room again: one model per row
    qtbot.waitUntil(lambda: plot.legend.columnCount == 2 and legend_above_plot(plot))


def test_the_legend_stays_put_when_dragged(qtbot):
    plot = shown_plot(qtbot, 900, 420)
    plot.set_curves(two_models(("RoPE", "Sinusoidal"), (0.5, 0.9)))
    qtbot.waitUntil(lambda: legend_above_plot(plot))
    before = laid_out(plot)
    label = plot.legend.items[0][1]
    start = plot.mapFromScene(label.sceneBoundingRect().center())
    viewport = plot.viewport()
    QTest.mousePress(viewport, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, start)
    for dy in range(10, 200, 10):
        QTest.mouseMove(viewport, start + QPoint(5, dy))
    QTest.mouseRelease(viewport, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, start + QPoint(5, 200))
    plot.resize(901, 420)  # a relayout: a dragged legend would keep its new anchor over the curves
    qtbot.waitUntil(lambda: plot.width() == 901)
    assert laid_out(plot)[1].topLeft() == before[1].topLeft() and legend_above_plot(plot)


def test_right_click_export_starts_from_the_whole_view_with_its_legend(qtbot):
    """pyqtgraph's Export... preselects the plot under the mouse, which leaves out a legend above it."""
    from PySide6.QtWidgets import QApplication, QMenu

    plot = shown_plot(qtbot, 800, 400)
    plot.set_curves(curves(8, 8))
    centre = plot.mapFromScene(plot.getPlotItem().getViewBox().sceneBoundingRect().center())
    QTest.mouseClick(plot.viewport(), Qt.MouseButton.RightButton, pos=centre)
    menu = next(m for m in QApplication.topLevelWidgets() if isinstance(m, QMenu) and m.isVisible())
    export = next(a for a in menu.actions() if a.text() == "Export...")
    menu.close()
    export.trigger()
    dialog = plot.scene().exportDialog
    qtbot.waitUntil(dialog.isVisible)
    assert dialog.ui.itemTree.currentItem().text(0) == "Entire Scene"
    dialog.close()


def test_two_models_that_score_alike_both_show(qtbot):
    """Over the trained lengths both shipped models score 1.0: the second model's line lay exactly on the first's,
    which then looked as if it had no data there."""
    plot = shown_plot(qtbot, 800, 400)
    plot.set_curves(curves(8, 8))  # every point of both models at 1.0
    image = plot.grab().toImage()
    for length in (3, 4, 5):
        at = plot.mapFromScene(plot.scene_point(length, 1.0))
        seen = [image.pixelColor(at.x() + dx, at.y() + dy) for dx in range(-6, 7) for dy in range(-6, 7)]
        for colour in COLOURS:
            assert any(near_colour(pixel, QColor(colour), 30) for pixel in seen), (length, colour)


def test_an_empty_plot_reads_source_lengths_from_one_not_a_range_around_zero(qtbot):
    plot = shown_plot(qtbot, 700, 420)  # before the evaluation's plan arrives
    low, high = plot.getPlotItem().viewRange()[0]
    assert 0 < low < 1 and high > 10, (low, high)
    assert plot.getPlotItem().getAxis("bottom").autoSIPrefixScale == 1.0  # no "(x0.001)" on a length axis
