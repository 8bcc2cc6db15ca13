"""The rows of <pad> queries have colours while their columns are grey: the legend above the maps says why, and only
when the maps have <pad> queries (a learner reads a coloured row as "this token attends to the others")."""

from __future__ import annotations

from PySide6.QtCore import Qt

from tests.qt_helpers import start_app, wait_frame

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
