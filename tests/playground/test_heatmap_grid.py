"""AttentionGrid / MapDialog / export: what the user sees (atlas pixels, tooltips, menus, files written)."""

from __future__ import annotations

import csv
import xml.etree.ElementTree as ET

import numpy as np
import pytest
from PySide6.QtCore import QEvent, QPoint, QPointF, Qt
from PySide6.QtGui import QImage, QMouseEvent
from PySide6.QtWidgets import QApplication, QFileDialog
from qt_helpers import axis_texts, shown_menu
from widget_readers import axis_title

from visualizer.state.snapshots import KindMaps
from visualizer.widgets.common import image_export as export
from visualizer.widgets.heatmap.atlas import fill_shown, per_map_range
from visualizer.widgets.heatmap.colours import DIM_OFFSET, SCORES_COLORMAP, make_lut
from visualizer.widgets.heatmap.grid import AttentionGrid
from visualizer.widgets.heatmap.large_view import MapDialog

LUT = make_lut()


def make_maps(n_layers=2, n_heads=3, tq=4, tk=5, kind="decoder_self", seed=0, causal=True, highlight=None):
    """Row-normalised random weights; with causal=True query i sees keys 0..i (and the rest is blank)."""
    rng = np.random.default_rng(seed)
    valid = np.tril(np.ones((tq, tk), bool)) if causal else np.ones((tq, tk), bool)
    raw = np.where(valid, rng.random((n_layers, n_heads, tq, tk)) + 0.01, 0.0)
    values = (raw / raw.sum(-1, keepdims=True)).astype(np.float32)
    q_labels = tuple(f"q{i}" for i in range(tq))
    k_labels = tuple(f"k{j}" for j in range(tk))
    return KindMaps(kind, values, valid, q_labels, k_labels, highlight_row=highlight)


def expected_colour(value: float, lo: float = 0.0, hi: float = 1.0) -> np.ndarray:
    """The LUT colour a value should get, computed independently of the widget (float64)."""
    index = int(np.clip(np.floor((value - lo) / (hi - lo) * 256), 0, 255))
    return LUT[index]


def pixel(grid: AttentionGrid, layer: int, head: int, i: int, j: int) -> np.ndarray:
    """RGBA of map cell (i, j) in the atlas actually handed to the ImageItem."""
    rect = grid.map_rect(layer, head)
    return grid.image_item.image[int(rect.y()) + i, int(rect.x()) + j]


def viewport_pos(grid: AttentionGrid, layer: int, head: int, i: int, j: int) -> QPoint:
    """Viewport pixel of the centre of a map cell, mapped through the ViewBox like a real mouse."""
    rect = grid.map_rect(layer, head)
    scene = grid.atlas_plot.to_scene(QPointF(rect.x() + j + 0.5, rect.y() + i + 0.5))
    return grid.graphics.mapFromScene(scene)


@pytest.fixture
def grid(qtbot):
    widget = AttentionGrid("decoder_self")
    qtbot.addWidget(widget)
    widget.resize(1000, 700)
    with qtbot.waitExposed(widget):  # QT-NOTES: called bare it waits for nothing
        widget.show()
    return widget


def test_atlas_pixels_follow_the_colormap(grid):
    maps = make_maps(causal=False)
    grid.set_maps(maps, mode="weights")
    for layer, head, i, j in [(0, 0, 0, 0), (1, 2, 3, 4), (0, 1, 2, 1), (1, 0, 1, 3)]:
        np.testing.assert_array_equal(pixel(grid, layer, head, i, j), expected_colour(maps.values[layer, head, i, j]))
    assert grid.image_item.image.dtype == np.uint8 and grid.image_item.image.shape[2] == 4
    assert grid.title_label.text().startswith("Decoder self-attention (rows: queries, columns: keys) — weights")


def test_masked_cells_and_gutters_are_transparent(grid):
    maps = make_maps()
    grid.set_maps(maps)
    image = grid.image_item.image
    covered = np.zeros(image.shape[:2], bool)
    for layer in range(2):
        for head in (0, 1, 2, -1):
            rect = grid.map_rect(layer, head)
            y, x = int(rect.y()), int(rect.x())
            alpha = image[y : y + 4, x : x + 5, 3]
            np.testing.assert_array_equal(alpha == 255, maps.valid)
            np.testing.assert_array_equal(alpha[~maps.valid], 0)
            assert np.isnan(grid.displayed_matrix(layer, head)[~maps.valid]).all()
            covered[y : y + 4, x : x + 5] = True
    assert (image[~covered, 3] == 0).all(), "gutters between maps must stay blank"


def test_average_column_is_the_mean_over_heads(grid):
    maps = make_maps(n_heads=4)
    grid.set_maps(maps)
    expected = np.where(maps.valid, maps.values.mean(axis=1), np.nan)
    for layer in range(2):
        np.testing.assert_allclose(grid.displayed_matrix(layer, -1), expected[layer], rtol=1e-6)
    np.testing.assert_array_equal(pixel(grid, 1, -1, 3, 2), expected_colour(expected[1, 3, 2]))


def test_scores_with_minus_inf_use_the_shared_finite_range(grid):
    maps = make_maps(causal=True)
    scores = np.where(maps.valid, maps.values * 20 - 5, -np.inf).astype(np.float32)
    grid.set_maps(KindMaps("cross", scores, maps.valid, maps.query_labels, maps.key_labels), mode="scores")
    m = float(np.abs(scores[np.isfinite(scores)]).max())  # a diverging scale centred on 0
    assert grid.map_levels(0, 1) == pytest.approx((-m, m))
    index = int(np.clip(np.floor((scores[1, 1, 2, 1] + m) / (2 * m) * 256), 0, 255))
    np.testing.assert_array_equal(pixel(grid, 1, 1, 2, 1), make_lut(SCORES_COLORMAP)[index])
    assert pixel(grid, 0, 0, 0, 3)[3] == 0  # transparent over the masked hatch
    assert grid.title_label.text().startswith(
        "Cross-attention (rows: decoder queries, columns: encoder keys) — pre-softmax scores"
    )


def test_scale_modes_change_the_normalisation(grid):
    maps = make_maps(causal=False)
    values = maps.values.copy()
    values[0, 1] *= 0.1  # a faint head: dark on the shared [0, 1] scale, full range on its own scale
    grid.set_maps(KindMaps("encoder_self", values, maps.valid, maps.query_labels, maps.key_labels))
    i, j = np.unravel_index(np.argmax(values[0, 1]), values[0, 1].shape)
    shared = pixel(grid, 0, 1, i, j).copy()
    np.testing.assert_array_equal(shared, expected_colour(values[0, 1, i, j]))
    grid.set_scale_mode("per_map")
    np.testing.assert_array_equal(pixel(grid, 0, 1, i, j), LUT[255])
    assert grid.map_levels(0, 1) == pytest.approx((values[0, 1].min(), values[0, 1].max()))
    grid.set_scale_mode("shared")
    np.testing.assert_array_equal(pixel(grid, 0, 1, i, j), shared)
    with pytest.raises(ValueError, match="scale_mode"):
        grid.set_scale_mode("global")


def test_shape_changes_reuse_items(grid):
    grid.set_maps(make_maps(2, 2, 4, 4))
    n_items = len(grid.plot_item.items), len(grid.atlas_space.childItems())  # overlays live in the atlas group
    for shape in [(3, 4, 6, 5), (1, 1, 2, 7), (2, 2, 4, 4)]:
        maps = make_maps(*shape, causal=False)
        grid.set_maps(maps)
        layout = grid.atlas_layout()
        assert grid.image_item.image.shape[:2] == (layout.height, layout.width)
        assert grid.displayed_matrix(shape[0] - 1, shape[1] - 1).shape == shape[2:]
        np.testing.assert_array_equal(
            pixel(grid, shape[0] - 1, shape[1] - 1, 1, 1), expected_colour(maps.values[-1, -1, 1, 1])
        )
        assert (len(grid.plot_item.items), len(grid.atlas_space.childItems())) == n_items
        QApplication.processEvents()
        assert axis_texts(grid, "top") == [f"H{h + 1}" for h in range(shape[1])] + ["avg"]
        assert axis_texts(grid, "left") == [f"L{layer + 1}" for layer in range(shape[0])]


def test_empty_input_shows_a_placeholder(grid):
    empty = KindMaps("encoder_self", np.zeros((2, 2, 0, 0), np.float32), np.zeros((0, 0), bool), (), ())
    grid.set_maps(empty)
    assert grid.stack.currentWidget() is grid.placeholder
    assert grid.cell_at(QPointF(10, 10)) is None
    grid.set_maps(make_maps())
    assert grid.stack.currentWidget() is grid.graphics
    grid.set_maps(None)
    assert grid.stack.currentWidget() is grid.placeholder
    with pytest.raises(RuntimeError):
        grid.displayed_matrix(0, 0)
    maps = make_maps(seed=3)  # the same shape as before the blank: buffers must come back
    grid.set_maps(maps)
    np.testing.assert_array_equal(pixel(grid, 1, 1, 2, 0), expected_colour(maps.values[1, 1, 2, 0]))


def test_tooltip_text_exact_format(grid, qtbot):
    maps = make_maps()
    values = maps.values.copy()
    values[1, 2, 3, 1] = 0.873
    grid.set_maps(KindMaps("cross", values, maps.valid, ("a", "b", "c", "d"), ("v", "w", "x", "y", "z")))
    assert grid.tooltip_text_at(1, 2, 3, 1) == "L2 H3 query 3 'd' -> key 1 'w': 0.873"
    assert grid.tooltip_text_at(0, 0, 0, 4) == "L1 H1 query 0 'a' -> key 4 'z': masked"
    avg = float(values[0, :, 2, 0].mean())
    assert grid.tooltip_text_at(0, -1, 2, 0) == f"L1 avg query 2 'c' -> key 0 'v': {avg:.3f}"
    assert grid.tooltip_text_at(0, -1, 1, 3) == "L1 avg query 1 'b' -> key 3 'y': masked"
    qtbot.mouseMove(grid.graphics.viewport(), viewport_pos(grid, 1, 2, 3, 1))
    qtbot.waitUntil(lambda: grid.image_item.toolTip() == "L2 H3 query 3 'd' -> key 1 'w': 0.873")


def test_left_click_emits_map_clicked(grid, qtbot):
    grid.set_maps(make_maps(kind="cross"))
    viewport = grid.graphics.viewport()
    with qtbot.waitSignal(grid.map_clicked) as blocker:
        qtbot.mouseClick(viewport, Qt.MouseButton.LeftButton, pos=viewport_pos(grid, 1, 2, 0, 0))
    assert blocker.args == ["cross", 1, 2]
    with qtbot.waitSignal(grid.map_clicked) as blocker:
        qtbot.mouseClick(viewport, Qt.MouseButton.LeftButton, pos=viewport_pos(grid, 0, -1, 3, 4))
    assert blocker.args == ["cross", 0, -1]
    rect = grid.map_rect(0, 0)  # the gutter right of map (0, 0) is not a map
    gutter = grid.atlas_plot.to_scene(QPointF(rect.right() + 0.5, rect.y() + 1))
    with qtbot.assertNotEmitted(grid.map_clicked):
        qtbot.mouseClick(viewport, Qt.MouseButton.LeftButton, pos=grid.graphics.mapFromScene(gutter))


def test_double_click_opens_the_large_view(grid, qtbot):
    maps = make_maps()
    grid.set_maps(maps)
    viewport, pos = grid.graphics.viewport(), viewport_pos(grid, 1, 0, 2, 2)
    qtbot.mouseClick(viewport, Qt.MouseButton.LeftButton, pos=pos)
    left, none = Qt.MouseButton.LeftButton, Qt.MouseButton.NoButton
    # Qt's real order after the first click is DblClick, Release (QTest.mouseDClick sends a Press first, which
    # pyqtgraph's scene turns into a plain second click)
    for kind, held in ((QEvent.Type.MouseButtonDblClick, left), (QEvent.Type.MouseButtonRelease, none)):
        event = QMouseEvent(
            kind, QPointF(pos), viewport.mapToGlobal(QPointF(pos)), left, held, Qt.KeyboardModifier.NoModifier
        )
        QApplication.sendEvent(viewport, event)
    qtbot.waitUntil(lambda: grid.findChild(MapDialog) is not None and grid.findChild(MapDialog).isVisible())
    dialog = grid.findChild(MapDialog)
    assert "L2 H1" in dialog.title_label.text()
    np.testing.assert_array_equal(dialog.displayed_matrix(), grid.displayed_matrix(1, 0))


def right_click_menu(grid, qtbot, layer, head):
    qtbot.mouseClick(grid.graphics.viewport(), Qt.MouseButton.RightButton, pos=viewport_pos(grid, layer, head, 0, 0))
    qtbot.waitUntil(lambda: shown_menu(grid) is not None)
    menu = shown_menu(grid)
    return menu, {action.text(): action for action in menu.actions() if action.text()}


def test_context_menu_ablates_and_restores(grid, qtbot):
    grid.set_maps(make_maps(kind="encoder_self", causal=False))
    menu, actions = right_click_menu(grid, qtbot, 1, 2)
    assert {
        "Ablate L2 H3 (encoder self)",
        "Restore all heads",
        "Open large view",
        "Export grid as PNG...",
        "Export grid as SVG...",
        "Export matrices as NPY...",
        "Export this map as CSV...",
    } <= set(actions)
    with qtbot.waitSignal(grid.head_toggled) as blocker:
        actions["Ablate L2 H3 (encoder self)"].trigger()
    assert blocker.args == ["encoder_self", 1, 2, False]
    menu.close()

    mask = np.zeros((2, 3), bool)
    mask[1, 2] = True
    normal = pixel(grid, 1, 2, 0, 0).copy()
    grid.set_ablated(mask)
    assert not np.array_equal(pixel(grid, 1, 2, 0, 0), normal), "an ablated head must look different"
    index = int(np.argmin(np.abs(LUT[:256] - normal).sum(axis=1)))
    np.testing.assert_array_equal(pixel(grid, 1, 2, 0, 0), LUT[index + DIM_OFFSET])
    _, actions = right_click_menu(grid, qtbot, 1, 2)
    with qtbot.waitSignal(grid.head_toggled) as blocker:
        actions["Restore L2 H3 (encoder self)"].trigger()
    assert blocker.args == ["encoder_self", 1, 2, True]
    with qtbot.waitSignal(grid.restore_all_requested):
        actions["Restore all heads"].trigger()
    _, actions = right_click_menu(grid, qtbot, 0, -1)
    assert not any(text.startswith(("Ablate ", "Restore L")) for text in actions)


def _export_from_menu(grid, monkeypatch, layer: int, head: int, text: str, path) -> None:
    """Right-click a map, choose one of its export entries, answer the save dialog with `path`."""
    monkeypatch.setattr(QFileDialog, "getSaveFileName", lambda *a, **k: (str(path), ""))
    menu = grid.build_context_menu(layer, head)
    next(action for action in menu.actions() if action.text() == text).trigger()


def test_exports_write_loadable_files(grid, tmp_path, monkeypatch):
    maps = make_maps()
    grid.set_maps(maps)
    png = grid.export_png(tmp_path / "grid.png", width=800)
    image = QImage(str(png))
    assert not image.isNull() and image.width() == 800
    svg = grid.export_svg(tmp_path / "grid.svg")
    assert ET.parse(svg).getroot().tag.endswith("svg")
    _export_from_menu(grid, monkeypatch, 0, 0, "Export matrices as NPY...", tmp_path / "maps.npy")
    np.testing.assert_array_equal(np.load(tmp_path / "maps.npy"), np.where(maps.valid, maps.values, np.nan))
    _export_from_menu(grid, monkeypatch, 1, 2, "Export this map as CSV...", tmp_path / "map.csv")
    with open(tmp_path / "map.csv", newline="", encoding="utf-8") as handle:
        rows = list(csv.reader(handle))
    assert rows[0][1:] == list(maps.key_labels) and [r[0] for r in rows[1:]] == list(maps.query_labels)
    loaded = np.array([[float(c) if c else np.nan for c in r[1:]] for r in rows[1:]], np.float32)
    np.testing.assert_array_equal(loaded, np.where(maps.valid, maps.values[1, 2], np.nan))
    with pytest.raises(OSError, match="does not exist"):
        grid.export_png(tmp_path / "missing" / "grid.png")


def test_save_matrices_npy_dict_and_csv_labels_with_commas(tmp_path):
    arrays = {"a": np.arange(6, dtype=np.float32).reshape(2, 3), "b": np.array([np.float32(0.1)])}
    with np.load(export.save_matrices_npy(tmp_path / "all.npz", arrays)) as loaded:
        np.testing.assert_array_equal(loaded["a"], arrays["a"])
        assert loaded["b"][0] == np.float32(0.1)
    matrix = np.array([[np.float32(1 / 3), -np.inf, np.nan, -0.0, 1e-45, 3e38]], np.float32)
    export.save_matrix_csv(tmp_path / "m.csv", matrix, [","], ["'", '"', "a", "b", "c", "d"])
    with open(tmp_path / "m.csv", newline="", encoding="utf-8") as handle:
        rows = list(csv.reader(handle))
    assert rows[0][1:] == ["'", '"', "a", "b", "c", "d"] and rows[1][0] == ","
    # the shortest text that reads back to the same float32; a blank cell is empty
    assert rows[1][1:] == ["0.33333334", "-inf", "", "-0.0", "1e-45", "3e+38"]


def test_highlight_row_outlines_that_row_in_every_map(grid):
    grid.set_maps(make_maps(highlight=2))
    xs, ys = grid.highlight_curve.getData()
    n_maps = 2 * 4
    assert np.isnan(xs).sum() == n_maps
    rect = grid.map_rect(1, 1)
    box = np.array(
        [
            [rect.x(), rect.y() + 2],
            [rect.right(), rect.y() + 2],
            [rect.right(), rect.y() + 3],
            [rect.x(), rect.y() + 3],
            [rect.x(), rect.y() + 2],
        ]
    )
    segments = np.stack([xs, ys], axis=1).reshape(n_maps, 6, 2)[:, :5]
    assert any(np.allclose(seg, box) for seg in segments)
    grid.set_maps(make_maps(highlight=None))  # the next input's maps highlight no row
    xs, _ = grid.highlight_curve.getData()
    assert xs is None or len(xs) == 0


def _dialog_texts(dialog, side: str) -> list[str]:
    """The labels an axis of the large view draws now (pyqtgraph's layout, after a paint)."""
    dialog.grab()
    return axis_texts(dialog, side)


def test_map_dialog_shows_token_ticks_and_updates_in_place(qtbot, tmp_path):
    dialog = MapDialog()
    qtbot.addWidget(dialog)
    dialog.resize(900, 700)
    with qtbot.waitExposed(dialog):
        dialog.show()
    valid = np.tril(np.ones((3, 4), bool))
    values = np.where(valid, 0.25, 0.0).astype(np.float32)
    dialog.set_matrix(values, valid, ["a", "b", "c"], ["w", "x", "y", "z"], "Cross L1 H1", tooltip_prefix="L1 H1")
    qtbot.waitUntil(lambda: _dialog_texts(dialog, "left") == ["a", "b", "c"])
    assert _dialog_texts(dialog, "bottom") == ["w", "x", "y", "z"]
    assert dialog.plot_item.getViewBox().yInverted()
    image = dialog.image_item.image
    np.testing.assert_array_equal(image[..., 3] == 255, valid)
    assert dialog.tooltip_text_at(2, 1) == "L1 H1 query 2 'c' -> key 1 'x': 0.250"
    item = dialog.image_item
    dialog.set_matrix(np.ones((2, 2), np.float32), np.ones((2, 2), bool), ["p", "q"], ["r", "s"], "again")
    assert dialog.image_item is item and item.image.shape[:2] == (2, 2)
    qtbot.waitUntil(lambda: _dialog_texts(dialog, "left") == ["p", "q"])
    assert QImage(str(dialog.export_png(tmp_path / "map.png"))).width() > 0


def test_title_before_data_and_mode_validation(qtbot):
    grid = AttentionGrid("cross")
    qtbot.addWidget(grid)
    assert grid.title_label.text().startswith(
        "Cross-attention (rows: decoder queries, columns: encoder keys) — weights"
    )
    assert grid.stack.currentWidget() is grid.placeholder
    with pytest.raises(ValueError, match="mode"):
        grid.set_mode("logits")
    grid.set_mode("scores")
    assert grid.title_label.text().startswith(
        "Cross-attention (rows: decoder queries, columns: encoder keys) — pre-softmax scores"
    )


def test_fill_shown_masks_and_averages_without_qt():
    values = np.arange(2 * 3 * 2 * 2, dtype=np.float32).reshape(2, 3, 2, 2)
    valid = np.array([[True, False], [True, True]])
    shown = np.empty((2, 4, 2, 2), np.float32)
    fill_shown(values, valid, shown)
    np.testing.assert_array_equal(shown[:, :3], np.where(valid, values, np.nan))
    np.testing.assert_allclose(shown[:, 3], np.where(valid, values.mean(axis=1), np.nan))
    values[1, 0, 1, 1] = -np.inf  # a non-finite valid cell in one head: blank there, the others still average
    fill_shown(values, valid, shown)
    assert np.isnan(shown[1, 0, 1, 1])
    assert shown[1, 3, 1, 1] == pytest.approx(values[1, 1:, 1, 1].mean())
    lo, hi = per_map_range(shown)
    assert lo.shape == (2, 4, 1, 1) and lo[0, 0, 0, 0] == 0 and hi[0, 0, 0, 0] == 3
    assert per_map_range(np.full((1, 1, 2, 2), np.nan, np.float32))[1][0, 0, 0, 0] == 1.0


def test_constant_map_and_mismatched_ablation_mask_do_not_break(grid):
    maps = make_maps(causal=False)
    values = np.full_like(maps.values, 0.5)
    grid.set_scale_mode("per_map")
    grid.set_ablated(np.ones((7, 7), bool))  # another model's shape: ignored, not an error
    grid.set_maps(KindMaps("encoder_self", values, maps.valid, maps.query_labels, maps.key_labels))
    np.testing.assert_array_equal(pixel(grid, 0, 0, 1, 1), LUT[128])  # a flat map sits mid-scale


def test_hidden_grid_draws_the_latest_maps_when_shown(grid):
    grid.set_maps(make_maps(seed=0))
    drawn = grid.image_item.image.copy()
    grid.hide()  # as on a tab the user is not looking at
    newer = make_maps(seed=1)
    grid.set_maps(newer)
    grid.set_maps(make_maps(seed=2))  # superseded before anyone looked: never drawn
    newest = make_maps(seed=3)
    grid.set_maps(newest)
    np.testing.assert_array_equal(grid.image_item.image, drawn)  # nothing coloured while hidden
    grid.show()
    assert not np.array_equal(grid.image_item.image, drawn)  # showing it draws
    np.testing.assert_array_equal(pixel(grid, 1, 2, 3, 1), expected_colour(newest.values[1, 2, 3, 1]))
    assert grid.current_maps() is newest


def test_map_dialog_abbreviates_key_tokens_that_would_run_together(qtbot):
    """Side by side, "<eos>" and "<pad>" read as one word "<eos><pad>": narrow columns get B/E/P and a key."""
    dialog = MapDialog()
    qtbot.addWidget(dialog)
    keys = ["<bos>"] + list("3141592653") + ["<eos>", "<pad>", "<pad>"]
    values = np.full((3, len(keys)), 0.1, np.float32)
    dialog.resize(700, 500)
    with qtbot.waitExposed(dialog):
        dialog.show()
    dialog.set_matrix(values, np.ones_like(values, bool), ["a", "b", "c"], keys, "Cross L1 H1")
    bottom = dialog.plot_item.getAxis("bottom")
    short = ["B"] + list("3141592653") + ["E", "P", "P"]
    qtbot.waitUntil(lambda: _dialog_texts(dialog, "bottom") == short)
    qtbot.waitUntil(lambda: "B = <bos>" in axis_title(bottom) and "E = <eos>" in axis_title(bottom))
    dialog.resize(1900, 500)  # wide columns: every token as written, and the axis title is just "key"
    qtbot.waitUntil(lambda: _dialog_texts(dialog, "bottom") == keys)
    qtbot.waitUntil(lambda: axis_title(bottom) == "key")  # the title follows once the paint that chose it is over
