"""The large view's cell panel and mask painting, driven by real mouse clicks and drags."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from PySide6.QtCore import QEvent, QPointF, Qt
from PySide6.QtGui import QMouseEvent
from PySide6.QtWidgets import QApplication
from qt_helpers import cell_pos, show_playground
from widget_readers import bar_heights, step_texts

from core_model import MaskSpec, ModelConfig, build_model
from core_model.cell_decomposition import decompose_cell
from core_model.tasks import TaskSpec
from visualizer.state.model_hub import ModelHub
from visualizer.state.playground import PlaygroundSession
from visualizer.state.playground_tools import playground_tools
from visualizer.widgets.playground.view import PlaygroundView


@pytest.fixture(params=["rope", "sinusoidal"])
def view(qtbot, request) -> PlaygroundView:
    model = build_model(ModelConfig(d_model=16, n_heads=2, d_ff=32, positional=request.param), seed=3).eval()
    session = PlaygroundSession(ModelHub(model, TaskSpec(), device=torch.device("cpu"), origin="test model"))
    widget = show_playground(qtbot, session, (1200, 800))
    yield widget
    for grid in widget.grids.values():  # a large view left open would take later tests' mouse
        if grid.large_view.is_visible():
            grid.large_view._dialog.close()


def open_dialog(qtbot, view, kind: str, layer: int, head: int):
    view.grid_tabs.setCurrentWidget(view.grids[kind])
    dialog = view.grids[kind].open_large_view(layer, head)
    with qtbot.waitExposed(dialog):
        dialog.show()
    return dialog


def click_cell(qtbot, dialog, i: int, j: int) -> None:
    qtbot.mouseClick(dialog.graphics.viewport(), Qt.MouseButton.LeftButton, pos=cell_pos(dialog, i, j))


def drag(qtbot, dialog, cells) -> None:
    port = dialog.graphics.viewport()
    qtbot.mousePress(port, Qt.MouseButton.LeftButton, pos=cell_pos(dialog, *cells[0]))
    for cell in cells[1:]:
        qtbot.mouseMove(port, cell_pos(dialog, *cell))
    qtbot.mouseRelease(port, Qt.MouseButton.LeftButton, pos=cell_pos(dialog, *cells[-1]))


def core_cell(view, kind, layer, head, i, j):
    inputs = view.session.cell_inputs()
    return decompose_cell(
        inputs.model, inputs.src, inputs.tgt, kind, layer, head, i, j, masks=inputs.masks, head_gates=inputs.gates
    ).to_numpy()


@pytest.mark.parametrize("kind", ["encoder_self", "decoder_self", "cross"])
def test_clicking_a_cell_shows_the_core_numbers_and_the_maps_value(qtbot, view, kind):
    dialog = open_dialog(qtbot, view, kind, 1, 1)
    click_cell(qtbot, dialog, 3, 2)
    panel = dialog.cell_panel
    assert panel.cell is not None and (panel.cell.query, panel.cell.key) == (3, 2)
    core = core_cell(view, kind, 1, 1, 3, 2)
    charts = panel.charts
    np.testing.assert_array_equal(bar_heights(charts["q"], -1), core.q)  # the last series: after RoPE (or the only)
    np.testing.assert_array_equal(bar_heights(charts["k"], -1), core.k)
    if core.rope:
        np.testing.assert_array_equal(bar_heights(charts["q"], 0), core.q_raw)
    np.testing.assert_array_equal(bar_heights(charts["product"]), core.product)
    np.testing.assert_array_equal(bar_heights(charts["softmax"]), core.row_weights)
    np.testing.assert_array_equal(charts["mask"].values("score"), core.row_scores)  # -inf where masked
    np.testing.assert_array_equal(bar_heights(charts["mask"]), np.where(core.row_visible, core.row_scores, 0.0))
    np.testing.assert_array_equal(charts["values"].image.image, core.weighted_values)
    np.testing.assert_array_equal(bar_heights(charts["output"]), core.gated_output)
    texts = step_texts(panel)
    assert f"{core.dot:.4f}" in texts["sum"] and f"{core.scaled:.4f}" in texts["scale"]
    assert f"{core.weight:.6f}" in texts["softmax"] and f"{core.weight:.6f}" in texts["final"]
    assert f"{core.numerator:.6f} / {core.denominator:.6f}" in texts["softmax"]
    assert f"the map shows {dialog.displayed_matrix()[3, 2]:.3f}" in texts["final"]
    assert abs(core.weight - float(dialog.displayed_matrix()[3, 2])) < 1e-6


def test_hovering_a_dimension_highlights_it_in_every_chart(qtbot, view):
    dialog = open_dialog(qtbot, view, "cross", 0, 0)
    click_cell(qtbot, dialog, 1, 1)
    chart = dialog.cell_panel.charts["q"]  # the top chart: in sight without scrolling
    qtbot.waitUntil(lambda: chart.viewport().visibleRegion().boundingRect().height() > 50)  # laid out
    scene = chart.getPlotItem().getViewBox().mapViewToScene(QPointF(5.0, 0.0))
    local = QPointF(chart.mapFromScene(scene))
    # a plain move event on the chart (QTest.mouseMove into a second top-level window is lost offscreen)
    QApplication.sendEvent(
        chart.viewport(),
        QMouseEvent(
            QEvent.Type.MouseMove,
            local,
            chart.viewport().mapToGlobal(local),
            Qt.MouseButton.NoButton,
            Qt.MouseButton.NoButton,
            Qt.KeyboardModifier.NoModifier,
        ),
    )
    qtbot.waitUntil(lambda: dialog.cell_panel.highlighted == 5)
    for name, other in dialog.cell_panel.charts.items():  # the two charts over keys stay as they are
        assert other.band.isVisible() == (name not in ("mask", "softmax")), name
    assert dialog.cell_panel.charts["q"].band.getRegion() == (4.5, 5.5)
    core = core_cell(view, "cross", 0, 0, 1, 1)
    assert f"Dimension 5: q = {core.q[5]:.4f}" in step_texts(dialog.cell_panel)["dimension"]


def test_average_column_says_to_pick_one_head(qtbot, view):
    dialog = open_dialog(qtbot, view, "encoder_self", 0, -1)
    click_cell(qtbot, dialog, 0, 0)
    assert "one head" in step_texts(dialog.cell_panel)["header"]


def test_a_closed_window_forgets_paint_mode_so_a_click_after_reopening_takes_the_cell_apart(qtbot, view):
    dialog = open_dialog(qtbot, view, "cross", 0, 1)
    qtbot.mouseClick(dialog.paint_button, Qt.MouseButton.LeftButton)
    assert dialog.paint_button.isChecked()
    dialog.close()
    again = open_dialog(qtbot, view, "cross", 1, 1)  # another map, later: the same window reused
    assert not again.paint_button.isChecked()
    click_cell(qtbot, again, 3, 2)
    qtbot.waitUntil(lambda: again.cell_panel.cell is not None, timeout=10_000)
    assert (again.cell_panel.cell.query, again.cell_panel.cell.key) == (3, 2)
    assert view.session.masks.cross_painted == frozenset()  # nothing painted by the click


def test_a_painted_drag_hides_cells_everywhere_and_undo_and_reset_bring_them_back(qtbot, view):
    dialog = open_dialog(qtbot, view, "cross", 0, 1)
    before = dialog.graphics.grab().toImage()
    with qtbot.waitActive(dialog):
        dialog.activateWindow()
    qtbot.keyClick(dialog, Qt.Key.Key_P)  # the Paint mask shortcut
    qtbot.waitUntil(dialog.paint_button.isChecked)
    drag(qtbot, dialog, [(1, 0), (1, 1), (2, 1)])
    cells = {(1, 0), (1, 1), (2, 1)}
    assert view.session.masks.cross_painted == cells
    shown = dialog.displayed_matrix()
    assert all(np.isnan(shown[i, j]) for i, j in cells) and not np.isnan(shown[0, 0])
    assert dialog.graphics.grab().toImage() != before
    preview = view.mask_panel.preview_widget.matrix("cross")
    assert not any(preview[i, j] for i, j in cells) and preview[0, 0]
    assert "3 cross" in view.mask_panel.painted_label.text()
    with torch.no_grad():  # the maps are the model's under the painted mask, every layer and head
        out = view.session.hub.model(
            view.session.cell_inputs().src,
            view.session.cell_inputs().tgt,
            MaskSpec(cross_painted=cells),
            return_attention=True,
        )
    np.testing.assert_allclose(view.session.last_snapshot.maps["cross"].values[1], out.attention.cross[1][0].numpy())
    assert dialog.undo_button.isEnabled()
    with qtbot.waitActive(dialog):
        dialog.activateWindow()
    qtbot.keyClick(dialog, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)  # the button's shortcut
    qtbot.waitUntil(lambda: view.session.masks.cross_painted == frozenset())  # a shortcut animates the click
    assert not np.isnan(dialog.displayed_matrix()[1, 0])
    drag(qtbot, dialog, [(0, 0)])
    assert view.session.masks.cross_painted == {(0, 0)}
    drag(qtbot, dialog, [(0, 0)])  # a stroke starting on a painted cell shows it again
    assert view.session.masks.cross_painted == frozenset()
    drag(qtbot, dialog, [(2, 2), (3, 2)])
    qtbot.mouseClick(view.mask_panel.reset_button, Qt.MouseButton.LeftButton)
    assert view.session.masks == MaskSpec() and view.mask_panel.spec() == MaskSpec()
    assert not dialog.undo_button.isEnabled()


def test_painting_pad_columns_equals_the_padding_mask_given_through_the_api(qtbot, view):
    qtbot.mouseClick(view.mask_panel.flag_boxes["cross_padding"], Qt.MouseButton.LeftButton)
    assert not view.session.masks.cross_padding
    dialog = open_dialog(qtbot, view, "cross", 1, 0)
    rows = dialog.displayed_matrix().shape[0]
    qtbot.mouseClick(dialog.paint_button, Qt.MouseButton.LeftButton)
    for pad in (4, 5):  # "0123" plus two pads
        drag(qtbot, dialog, [(i, pad) for i in range(rows)])
    painted = view.session.last_frame
    view.session.set_masks(MaskSpec())
    api = view.session.last_frame
    for kind in ("encoder_self", "decoder_self", "cross"):
        np.testing.assert_array_equal(painted.maps.maps[kind].values, api.maps.maps[kind].values)
    assert painted.maps.output_tokens == api.maps.output_tokens


def test_an_emptied_row_is_zeros_and_shown(qtbot, view):
    dialog = open_dialog(qtbot, view, "encoder_self", 0, 0)
    cols = dialog.displayed_matrix().shape[1]
    qtbot.mouseClick(dialog.paint_button, Qt.MouseButton.LeftButton)
    drag(qtbot, dialog, [(2, j) for j in range(cols)])
    values = view.session.last_snapshot.maps["encoder_self"].values
    assert float(np.abs(values[:, :, 2]).sum()) == 0.0
    assert view.mask_panel.preview_widget.empty_rows("encoder_self") == 1
    qtbot.mouseClick(dialog.paint_button, Qt.MouseButton.LeftButton)  # back to inspecting
    click_cell(qtbot, dialog, 2, 1)
    assert "every key of this row is masked" in step_texts(dialog.cell_panel)["softmax"]


def test_the_panel_follows_a_new_pass(qtbot, view):
    dialog = open_dialog(qtbot, view, "decoder_self", 0, 0)
    click_cell(qtbot, dialog, 3, 1)
    first = dialog.cell_panel.cell.weight
    view.session.set_source("3210")
    core = core_cell(view, "decoder_self", 0, 0, 3, 1)
    assert dialog.cell_panel.cell.weight == core.weight != first


def test_with_the_apps_runner_the_cell_is_computed_off_the_gui_thread(qtbot):
    import threading

    from visualizer.workers.tasks import TaskSlot

    threads = []

    def make_slot(what, parent=None, **options):  # the task layer's slot, noting the thread each task runs on
        return TaskSlot(what, parent, threads=lambda: threads.append(threading.get_ident()), **options)

    model = build_model(ModelConfig(d_model=16, n_heads=2, d_ff=32), seed=3).eval()
    session = PlaygroundSession(ModelHub(model, TaskSpec(), device=torch.device("cpu"), origin="test model"))
    view = show_playground(qtbot, session, (1200, 800), tools=playground_tools(session, make_slot))
    inspector = view.tools.inspectors["cross"]
    dialog = open_dialog(qtbot, view, "cross", 0, 1)
    with qtbot.waitSignal(inspector.cell_changed, timeout=10_000):
        click_cell(qtbot, dialog, 2, 3)
    assert threads and threads[0] != threading.get_ident()
    core = core_cell(view, "cross", 0, 1, 2, 3)
    assert dialog.cell_panel.cell.weight == core.weight
    np.testing.assert_array_equal(bar_heights(dialog.cell_panel.charts["product"]), core.product)
    dialog.close()  # a large view left open would take later tests' mouse


def test_in_scores_mode_the_final_figure_is_the_maps_score(qtbot, view):
    combo = view.view_modes.combo  # the user's choice of view, as test_view_modes makes it
    combo.setCurrentIndex(combo.findData("scores"))
    assert view.session.mode == "scores"
    dialog = open_dialog(qtbot, view, "decoder_self", 1, 0)
    click_cell(qtbot, dialog, 3, 1)
    core = core_cell(view, "decoder_self", 1, 0, 3, 1)
    shown = float(dialog.displayed_matrix()[3, 1])
    assert abs(core.scaled - shown) < 1e-5
    final = step_texts(dialog.cell_panel)["final"]
    assert f"score s = {core.scaled:.4f}" in final and f"the map shows {shown:.3f}" in final


def test_painting_while_stepping_replays_the_cached_decoder_under_the_painted_mask(qtbot):
    """The shipped copy model, stepped to the end with the source keys it copies from hidden: the KV-cached
    stepper must apply the painted rows at their absolute positions, as the full pass does."""
    from core_model.checkpoint import load_checkpoint
    from core_model.shipped import DEFAULT_CHECKPOINT, resource_path

    ckpt = load_checkpoint(resource_path(DEFAULT_CHECKPOINT))
    session = PlaygroundSession(
        ModelHub(ckpt.build("cpu").eval(), ckpt.task, device=torch.device("cpu"), origin="shipped")
    )
    view = PlaygroundView(session, playground_tools(session))
    qtbot.addWidget(view)
    session.set_source("3141592")
    session.run_to_end()
    plain = session.last_frame.decoder.output_ids
    view.tools.painter.paint("cross", {(i, j) for i in range(2, 6) for j in range(7) if abs(i - j) <= 1})
    view.tools.painter.paint("decoder_self", {(4, 3), (4, 4)})
    view.tools.painter.end_stroke()
    frame = session.last_frame
    assert frame.decoder.stepping and frame.decoder.output_ids != plain  # the painting changed the output
    values = frame.maps.maps["cross"].values
    assert float(np.abs(values[:, :, 3, 2:5]).sum()) == 0.0
    n = len(frame.decoder.output_ids)  # the full (uncached) pass predicts what the cached stepper chose
    assert frame.maps.output_tokens[:n] == tuple(session.vocabulary.tokens(frame.decoder.output_ids))


def test_in_another_view_the_panel_says_the_map_shows_another_quantity(qtbot, view):
    combo = view.view_modes.combo
    combo.setCurrentIndex(combo.findData("norms"))
    dialog = open_dialog(qtbot, view, "cross", 0, 0)
    click_cell(qtbot, dialog, 1, 1)
    final = step_texts(dialog.cell_panel)["final"]
    core = core_cell(view, "cross", 0, 0, 1, 1)
    assert f"weight = {core.weight:.6f}" in final and "switch the view to weights or scores" in final
