"""The rows of <pad> queries have colours while their columns are grey: the legend above the maps says so, and only
where the cells show it (a learner reads a coloured <pad> row as "this token takes part")."""

from __future__ import annotations

from PySide6.QtCore import Qt
from qt_helpers import start_app, wait_frame

PAD_NOTE = "<pad> rows still attend, while no token attends to a <pad> key (its column is grey)"


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
    assert legend.text().startswith("■ grey = masked")
    line = grid.header.legend_line  # collapsed: one line, the whole legend in its tooltip
    assert line.isVisible() and line.label.text().startswith("■ grey = masked") and PAD_NOTE in line.toolTip()

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


def test_the_sentence_is_read_from_the_cells_of_any_kind():
    """Query and key labels differ in cross-attention; a window, painted cells or a padding mask switched off change
    which cells are grey: each half of the sentence is checked on the cells themselves."""
    import numpy as np

    from visualizer.state.snapshots import KindMaps
    from visualizer.widgets.heatmap.grid_header import pad_rows_attend

    queries, keys = ("<bos>", "1", "<pad>"), ("1", "<eos>", "<pad>", "<pad>")
    valid = np.ones((3, 4), bool)
    valid[:, 2:] = False  # every <pad> key masked
    values = np.zeros((1, 1, 3, 4), np.float32)
    assert pad_rows_attend(KindMaps("cross", values, valid, queries, keys))
    opened = valid.copy()
    opened[0, 3] = True  # one query attends to a <pad> key: the sentence would be false
    assert not pad_rows_attend(KindMaps("cross", values, opened, queries, keys))
    closed = valid.copy()
    closed[2] = False  # the one <pad> row masked whole: it does not attend
    assert not pad_rows_attend(KindMaps("cross", values, closed, queries, keys))
    no_pad_keys = ("1", "<eos>", "2", "3")
    assert not pad_rows_attend(KindMaps("cross", values, valid, queries, no_pad_keys))
