"""The Head roles plot's legend sits above the plot, in as many columns as its width holds: inside the plot, eight
entries would hide where the heads that have not formed stand now, the ends of their curves."""

from __future__ import annotations

import numpy as np
import torch
from PySide6.QtCore import QPointF
from PySide6.QtGui import QImage
from widget_readers import near_colour

from core_model.checkpoint import load_checkpoint
from core_model.shipped import resource_path
from visualizer.state.inline_slot import InlineSlot
from visualizer.state.model_hub import ModelHub
from visualizer.state.snapshots import KindMaps, ProbeSnapshot
from visualizer.state.training import TrainingState
from visualizer.widgets.training.forming import FormingCurves
from visualizer.widgets.training.tab import TrainerTab
from visualizer.workers.training_worker import TrainingRun, probe_maps


def eight_levels(cross: KindMaps) -> KindMaps:
    """The cross maps with head h of layer l scaled by 0.1 (4 l + h + 1): eight alignment curves apart."""
    scale = (0.1 + 0.1 * np.arange(8, dtype=np.float32)).reshape(2, 4, 1, 1)
    return KindMaps("cross", cross.values * scale, cross.valid, cross.query_labels, cross.key_labels)


def legend_sits_above(forming: FormingCurves) -> bool:
    """Every entry is whole on screen and above the plot, and the plot's right edge is on screen."""
    view_box = forming.plot.getPlotItem().vb.sceneBoundingRect()
    plot_rect = forming.plot.rect()
    labels = [label.sceneBoundingRect() for _, label in forming.legend.items]
    return (
        all(
            plot_rect.contains(forming.plot.mapFromScene(r).boundingRect()) and r.bottom() <= view_box.top()
            for r in labels
        )
        and forming.plot.mapFromScene(view_box).boundingRect().right() <= plot_rect.right()
    )


def curve_end_seen(forming: FormingCurves, image: QImage, x0: float, x1: float, y: float, colour) -> bool:
    """Some pixel of the curve's stretch from step x0 to x1 (at score y) shows its colour: dashes leave gaps."""
    vb = forming.plot.getPlotItem().vb
    left, right = (forming.plot.mapFromScene(vb.mapViewToScene(QPointF(x, y))) for x in (x0, x1))
    return any(
        near_colour(image.pixelColor(px, left.y() + dy), colour, 40)
        for px in range(left.x(), right.x() + 1)
        for dy in (-1, 0, 1)
    )


def test_the_head_roles_legend_is_above_the_curves_and_hides_no_curve_end(qtbot):
    ckpt = load_checkpoint(resource_path("copy_rope.pt"))
    model = ckpt.build("cpu").eval()
    hub = ModelHub(model, ckpt.task, device=torch.device("cpu"), origin="copy_rope.pt")
    state = TrainingState(hub, TrainingRun)
    tab = TrainerTab(hub, state, make_slot=InlineSlot)
    qtbot.addWidget(tab)
    tab.resize(1270, 700)  # the Trainer at 1280x800: the forming column is about 420 px wide
    with qtbot.waitExposed(tab):
        tab.show()
    forming = tab.findChild(FormingCurves)
    maps = probe_maps(model, ckpt.task, "0123456", torch.device("cpu"))
    levels = dict(maps, cross=eight_levels(maps["cross"]))
    forming.set_snapshots(tuple(ProbeSnapshot(step, "0123456", levels) for step in (0, 10, 20, 30)))
    try:
        assert len(forming.legend.items) == 8  # every cross head of the 2 x 4 model is named
        qtbot.waitUntil(lambda: legend_sits_above(forming))
        image = forming.plot.grab().toImage()
        for sample, _ in forming.legend.items:  # each curve's last stretch is seen in its own colour
            xs, ys = sample.item.getData()
            assert curve_end_seen(forming, image, 25.0, 30.0, ys[-1], sample.item.opts["pen"].color())
        wide_rows = forming.legend.layout.rowCount()
        tab.resize(1000, 700)  # narrower: more rows, still above the plot and whole
        qtbot.waitUntil(lambda: forming.legend.layout.rowCount() > wide_rows)
        qtbot.waitUntil(lambda: legend_sits_above(forming))
    finally:
        assert state.shutdown(20_000)
