"""The Head roles plot's legend sits above the plot: with eight heads inside the plot it hid where the heads that had
not formed yet stand now, the ends of their curves."""

from __future__ import annotations

import numpy as np
import torch
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QApplication

from core_model.checkpoint import load_checkpoint
from core_model.shipped import resource_path
from visualizer.state.model_hub import ModelHub
from visualizer.state.snapshots import ProbeSnapshot
from visualizer.state.training import TrainingState
from visualizer.widgets.trainer.forming import FormingCurves
from visualizer.widgets.trainer.tab import TrainerTab
from visualizer.workers.training_worker import TrainingRun, probe_maps


def close(seen: QColor, colour: QColor) -> bool:
    return (
        max(abs(seen.red() - colour.red()), abs(seen.green() - colour.green()), abs(seen.blue() - colour.blue())) < 40
    )


def test_the_head_roles_legend_is_above_the_curves_and_hides_no_curve_end(qtbot):
    ckpt = load_checkpoint(resource_path("copy_rope.pt"))
    model = ckpt.build("cpu").eval()
    hub = ModelHub(model, ckpt.task, device=torch.device("cpu"), origin="copy_rope.pt")
    state = TrainingState(hub, TrainingRun)
    tab = TrainerTab(hub, state)
    qtbot.addWidget(tab)
    tab.resize(1270, 700)  # the Trainer at 1280x800: the forming column is about 420 px wide
    with qtbot.waitExposed(tab):
        tab.show()
    forming = tab.findChild(FormingCurves)
    maps = probe_maps(model, ckpt.task, "0123456", torch.device("cpu"))
    cross = maps["cross"]
    scale = (0.1 + 0.1 * np.arange(8, dtype=np.float32)).reshape(2, 4, 1, 1)  # eight heads, eight levels apart
    weak = dict(maps, cross=type(cross)("cross", cross.values * scale, *_rest(cross)))
    forming.set_snapshots(tuple(ProbeSnapshot(step, "0123456", weak) for step in (0, 10, 20, 30)))
    QApplication.processEvents()
    try:
        view_box = forming.plot.getPlotItem().vb.sceneBoundingRect()
        labels = [label for _, label in forming.legend.items]
        assert len(labels) == 8  # every cross head of the 2 x 4 model is named
        for label in labels:  # whole, and above the plot
            rect = label.sceneBoundingRect()
            assert forming.plot.rect().contains(forming.plot.mapFromScene(rect).boundingRect())
            assert rect.bottom() <= view_box.top()
        image = forming.plot.grab().toImage()
        for sample, _ in forming.legend.items:  # each curve's last stretch is seen in its own colour
            curve = sample.item
            xs, ys = curve.getData()
            colour = curve.opts["pen"].color()
            seen = [image.pixelColor(forming.plot.mapFromScene(_scene(forming, 27.0 + k, ys[-1]))) for k in (0, 1, 2)]
            assert any(close(s, colour) for s in seen), (xs[-1], ys[-1], seen, colour.name())
    finally:
        assert state.shutdown(20_000)


def _rest(kind_maps):
    return kind_maps.valid, kind_maps.query_labels, kind_maps.key_labels


def _scene(forming: FormingCurves, x: float, y: float):
    from PySide6.QtCore import QPointF

    return forming.plot.getPlotItem().vb.mapViewToScene(QPointF(x, y))
