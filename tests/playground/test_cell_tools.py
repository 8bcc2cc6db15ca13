"""The large view's view models: the painter's strokes and undo, the inspector's latest-wins delivery; the mask
panel's Reset masks button and its painted cells in the previews."""

from __future__ import annotations

import numpy as np
import torch
from PySide6.QtCore import Qt

from core_model import MaskSpec, ModelConfig, build_model
from visualizer.state.playground_cell_tools import CellInputs, CellInspector
from visualizer.state.playground_mask_painter import MaskPainter
from visualizer.widgets.playground.mask_panel import MaskPanel
from visualizer.widgets.playground.mask_preview import MASK_LUT
from visualizer.workers.tasks import TaskSlot


class Holder:
    def __init__(self) -> None:
        self.spec = MaskSpec(decoder_causal=False)
        self.sets = 0

    def set(self, spec: MaskSpec) -> None:
        self.spec, self.sets = spec, self.sets + 1


def test_a_stroke_is_one_undo_step_and_keeps_other_settings(qtbot):
    holder = Holder()
    painter = MaskPainter(lambda: holder.spec, holder.set)
    painter.paint("cross", {(0, 1)})
    painter.paint("cross", {(0, 2)})
    painter.paint("cross", {(0, 2)})  # nothing new: no pass
    painter.end_stroke()
    assert holder.spec.cross_painted == {(0, 1), (0, 2)} and holder.sets == 2
    painter.paint("encoder_self", {(3, 3)})
    painter.end_stroke()
    painter.paint("cross", {(0, 1)}, erase=True)
    painter.end_stroke()
    assert holder.spec.cross_painted == {(0, 2)} and holder.spec.encoder_painted == {(3, 3)}
    painter.undo()
    assert holder.spec.cross_painted == {(0, 1), (0, 2)}
    painter.undo()
    assert holder.spec.encoder_painted == frozenset() and holder.spec.cross_painted == {(0, 1), (0, 2)}
    painter.undo()
    assert holder.spec == MaskSpec(decoder_causal=False) and not painter.can_undo
    painter.undo()  # nothing left: no change
    assert holder.spec == MaskSpec(decoder_causal=False)


def test_forget_drops_the_history(qtbot):
    holder = Holder()
    painter = MaskPainter(lambda: holder.spec, holder.set)
    with qtbot.waitSignal(painter.history_changed) as blocker:
        painter.paint("decoder_self", {(1, 0)})
    assert blocker.args == [True]
    painter.end_stroke()
    painter.forget()
    assert not painter.can_undo


def test_inspector_runs_one_job_at_a_time_and_drops_stale_results(qtbot):
    model = build_model(ModelConfig(d_model=16, n_heads=2, d_ff=32), seed=1).eval()
    inputs = CellInputs(model, torch.tensor([[4, 5, 6]]), torch.tensor([[1, 4, 5, 6]]), MaskSpec(), None)
    slots: list[TaskSlot] = []

    def make_slot(what, parent=None, **options) -> TaskSlot:  # the task layer's own slot, kept to look at
        slots.append(TaskSlot(what, parent, **options))
        return slots[-1]

    inspector = CellInspector(lambda: inputs, make_slot)
    shown = []
    inspector.cell_changed.connect(shown.append)
    inspector.inspect("cross", 0, 1, 2, 1)  # its result can only arrive through the event loop: still running below
    inspector.inspect("cross", 0, 1, 3, 0)  # waits for the first, whose result is now stale
    inspector.refresh()  # replaces the waiting request: the newest cell runs once
    qtbot.waitUntil(lambda: not slots[0].running, timeout=10_000)
    assert [(c.query, c.key) for c in shown] == [(3, 0)] and slots[0].started == 2
    errors = []
    inspector.failed.connect(errors.append)
    with qtbot.waitSignal(inspector.failed, timeout=10_000):
        inspector.inspect("cross", 0, 1, 9, 0)
    assert errors and "query" in errors[0] and "failed" not in errors[0]  # the error's line, for the view's sentence


def test_reset_masks_restores_defaults_and_clears_painting(qtbot):
    panel = MaskPanel(MaskSpec(encoder_padding=False, encoder_window=4, cross_painted={(1, 1)}))
    qtbot.addWidget(panel)
    with qtbot.waitExposed(panel):
        panel.show()
    assert panel.painted_label.text() == "Painted: 1 cross"
    with qtbot.waitSignal(panel.spec_changed) as blocker:
        qtbot.mouseClick(panel.reset_button, Qt.MouseButton.LeftButton)
    assert blocker.args == [MaskSpec()] and panel.spec() == MaskSpec()
    assert panel.flag_boxes["encoder_padding"].isChecked() and not panel.window_boxes["encoder_window"].isChecked()
    assert panel.painted_label.text() == "Painted: none"


def test_previews_draw_painted_cells_red(qtbot):
    panel = MaskPanel(MaskSpec(cross_painted={(1, 2)}))
    qtbot.addWidget(panel)
    panel.resize(500, 400)
    with qtbot.waitExposed(panel):
        panel.show()
    mask = np.ones((3, 4), bool)
    mask[1, 2] = False
    panel.set_previews({"cross": mask})
    preview = panel.preview_widget
    rect = preview.image_rect("cross")
    cell_w, cell_h = rect.width() / 4, rect.height() / 3
    image = preview.grab().toImage()
    red = image.pixelColor(int(rect.left() + 2.5 * cell_w), int(rect.top() + 1.5 * cell_h))
    light = image.pixelColor(int(rect.left() + 0.5 * cell_w), int(rect.top() + 1.5 * cell_h))
    assert (red.red(), red.green(), red.blue()) == tuple(MASK_LUT[2])
    assert (light.red(), light.green(), light.blue()) == tuple(MASK_LUT[1])
    assert "painted" in preview._cell_tip(int(rect.left() + 2.5 * cell_w), int(rect.top() + 1.5 * cell_h))


def test_preferences_store_masks_without_the_painting():
    import json

    from visualizer.controllers.preferences import mask_spec_from_dict, mask_spec_to_dict

    spec = MaskSpec(encoder_window=3, cross_painted={(1, 1)})
    stored = json.loads(json.dumps(mask_spec_to_dict(spec)))  # would raise on a frozenset
    assert mask_spec_from_dict(stored) == MaskSpec(encoder_window=3)
