"""A token axis settles: once shown, a map whose labels only just fit (or only just do not) stops repainting.

An axis that gave back its labels' room when it drew none grew the map, which made the labels fit, which took the
room again, and so on: the Trainer's probe view repainted about a hundred times a second while idle, and the GUI
thread spent most of its time there while a model trained. Each size below is held still and the paints counted.
"""

from __future__ import annotations

import pytest
import torch
from PySide6.QtCore import QEvent, QObject

from core_model import ModelConfig, build_model
from core_model.tasks import TaskSpec
from visualizer.state.snapshots import ProbeSnapshot
from visualizer.widgets.training.probe_view import ProbeView
from visualizer.workers.training_worker import probe_maps

SETTLE_MS = 150  # a resize, its paint, and a relayout that paint may ask for
WATCH_MS = 250  # a settled view paints at most once more in this time (a late expose)
WIDTHS = (496, 720)  # the Trainer's probe column at 1280 and 1920 pixels wide
HEIGHTS = range(240, 276, 2)  # a band where the key labels only just fit: the height decides, not the width


class PaintCounter(QObject):
    """Counts the paint events a widget receives."""

    def __init__(self, widget) -> None:
        super().__init__(widget)
        self.count = 0
        widget.installEventFilter(self)

    def eventFilter(self, obj, event) -> bool:  # Qt's name
        if event.type() == QEvent.Type.Paint:
            self.count += 1
        return False


@pytest.fixture(scope="module")
def snapshot() -> ProbeSnapshot:
    """A probe snapshot of the Trainer's kind: <bos> + 10 digits against <bos> + 10 digits + <eos>."""
    model = build_model(ModelConfig(d_model=32, n_heads=2, d_ff=64, positional="sinusoidal"), seed=0)
    task = TaskSpec("copy", 10, 1, 10)
    return ProbeSnapshot(1, "0123456789", probe_maps(model, task, "0123456789", torch.device("cpu")))


def test_probe_view_stops_repainting_at_every_size(qtbot, snapshot):
    view = ProbeView()
    qtbot.addWidget(view)
    view.resize(WIDTHS[0], HEIGHTS[0])
    with qtbot.waitExposed(view):
        view.show()
    view.set_snapshots((snapshot,))
    counter = PaintCounter(view.graphics.viewport())
    restless = []
    for width in WIDTHS:
        for height in HEIGHTS:
            view.resize(width, height)
            qtbot.wait(SETTLE_MS)
            counter.count = 0
            qtbot.wait(WATCH_MS)
            if counter.count > 1:
                restless.append((width, height, counter.count))
    assert not restless, f"(width, height, paints in {WATCH_MS} ms) of sizes that never settle: {restless}"
