"""The rows of <pad> queries have colours while their columns are grey: the legend above the maps says why, and only
when the maps have <pad> queries (a learner reads a coloured row as "this token attends to the others")."""

from __future__ import annotations

from PySide6.QtCore import Qt
from qt_helpers import start_app, wait_frame

PAD_NOTE = "<pad> rows still attend (padding masks only <pad> keys: no token attends to a <pad>)"


def _set_extra_pads(qtbot, app, count: int) -> None:
    box = app.playground.input_panel.pads
    box.setFocus()
    box.selectAll()
    qtbot.keyClicks(box, str(count))
    qtbot.keyClick(box, Qt.Key.Key_Enter)
    qtbot.waitUntil(lambda: box.value() == count)
    wait_frame(qtbot, app.session)


def test_the_legend_explains_pad_rows_while_there_are_pad_queries(qtbot):
    app = start_app(qtbot)
    view = app.playground
    grid = view.grids["encoder_self"]
    legend = grid.header.legend_label
    _set_extra_pads(qtbot, app, 2)
    assert grid.current_maps().query_labels[-2:] == ("<pad>", "<pad>")
    qtbot.waitUntil(lambda: PAD_NOTE in legend.text())
    assert legend.isVisible() and legend.text().startswith("■ grey = masked")

    _set_extra_pads(qtbot, app, 0)
    assert "<pad>" not in grid.current_maps().query_labels
    qtbot.waitUntil(lambda: PAD_NOTE not in legend.text())

    combo = view.view_modes.combo  # rollout masks no cell: its own legend says how a <pad> query reads
    _set_extra_pads(qtbot, app, 1)
    combo.setCurrentIndex(combo.findData("rollout"))
    qtbot.waitUntil(lambda: legend.text().startswith("no cell is masked in rollout"))
    assert PAD_NOTE not in legend.text()
    app.hub.dirty = False


def test_the_note_goes_where_a_padding_mask_is_off(qtbot):
    """Encoder padding off: its <pad> keys take attention, so the sentence would be false there; cross-attention
    keeps its own padding mask and its note."""
    app = start_app(qtbot)
    view = app.playground
    encoder, cross = view.grids["encoder_self"], view.grids["cross"]
    _set_extra_pads(qtbot, app, 2)
    qtbot.waitUntil(lambda: PAD_NOTE in encoder.header.legend_label.text())
    box = view.mask_panel.flag_boxes["encoder_padding"]
    qtbot.mouseClick(box, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: not app.session.masks.encoder_padding)
    wait_frame(qtbot, app.session)
    maps = encoder.current_maps()
    pad_keys = [j for j, label in enumerate(maps.key_labels) if label == "<pad>"]
    assert pad_keys and maps.valid[:, pad_keys].any()  # a <pad> key is attended now
    qtbot.waitUntil(lambda: PAD_NOTE not in encoder.header.legend_label.text())
    view.grid_tabs.setCurrentWidget(cross)
    qtbot.waitUntil(lambda: PAD_NOTE in cross.header.legend_label.text())
    app.hub.dirty = False
