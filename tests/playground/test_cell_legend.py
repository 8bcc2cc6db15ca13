"""The cell panel's RoPE legend sits under its chart, never over the bars (it hid dimensions 12-15 when inside).

Driven like a user: a RoPE model in the playground, the large view opened, a cell clicked. Asserts on geometry the
user sees: the legend's rectangle against the plotted area and every bar, and that it is drawn inside the chart.
"""

from __future__ import annotations

import pyqtgraph as pg
import pytest
import torch
from PySide6.QtCore import QPointF, QRectF, Qt
from qt_helpers import show_playground

from core_model import ModelConfig, build_model
from core_model.tasks import TaskSpec
from visualizer.state.model_hub import ModelHub
from visualizer.state.playground import PlaygroundSession


@pytest.fixture
def dialog(qtbot):
    model = build_model(ModelConfig(d_model=32, n_heads=2, d_ff=32, positional="rope"), seed=3).eval()
    session = PlaygroundSession(ModelHub(model, TaskSpec(), device=torch.device("cpu"), origin="test model"))
    view = show_playground(qtbot, session, (1200, 800))
    grid = view.grids["cross"]
    view.grid_tabs.setCurrentWidget(grid)
    dlg = grid.open_large_view(0, 1)
    with qtbot.waitExposed(dlg):
        dlg.show()
    scene = dlg.plot_item.getViewBox().mapViewToScene(QPointF(2.5, 3.5))
    qtbot.mouseClick(dlg.graphics.viewport(), Qt.MouseButton.LeftButton, pos=dlg.graphics.mapFromScene(scene))
    yield dlg
    dlg.close()


@pytest.mark.parametrize("name", ["q", "k"])
def test_rope_legend_covers_no_bar(qtbot, dialog, name):
    chart = dialog.cell_panel.charts[name]
    qtbot.waitUntil(lambda: chart.isVisible() and dialog.cell_panel.cell is not None)
    chart.grab()  # laid out and painted at its real size
    legend = chart.legend
    assert legend.isVisible() and [label.text for _, label in legend.items] == ["before RoPE", "after RoPE"]
    box = legend.sceneBoundingRect()
    plotted = chart.getPlotItem().getViewBox().sceneBoundingRect()
    assert not box.intersects(plotted)
    view_box, checked = chart.getPlotItem().getViewBox(), 0
    for bar in (item for item in chart.getPlotItem().items if isinstance(item, pg.BarGraphItem)):
        for x, h in zip(bar.opts["x"], bar.opts["height"]):
            drawn = view_box.mapViewToScene(QRectF(x, min(0.0, h), 0.4, abs(h))).boundingRect()
            assert not box.intersects(drawn), f"the legend covers the bar at {x:.1f}"
            checked += 1
    assert checked == 2 * 16  # before and after RoPE, for each of the head's 16 dimensions
    assert QRectF(chart.viewport().rect()).contains(box)  # drawn whole, inside the chart
    product = dialog.cell_panel.charts["product"]  # one series: nothing to name, no legend, no room taken
    assert not product.legend.isVisible()
    assert plotted.height() == pytest.approx(product.getPlotItem().getViewBox().sceneBoundingRect().height(), abs=2)
