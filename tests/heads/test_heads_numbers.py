"""The Heads tab never shows a signed zero, and never "+0.000" for a change that is not zero: a student reads
"-0.000" as a sign error and "+0.000" as "no effect at all". Tiny changes are written in full."""

from __future__ import annotations

import pytest
from PySide6.QtWidgets import QApplication
from widget_readers import table_cell_text

from core_model.head_importance import HeadAnalysis, HeadSummary, Score
from core_model.head_roles import HeadRole
from visualizer.widgets.heads.importance_map import ImportanceMaps, amount_text, delta_text
from visualizer.widgets.heads.roles_table import RolesTable

# Δ loss of each decoder-self head (layer 1, heads 1-4): none, a tiny rise, a tiny fall, a clear rise
DELTAS = (0.0, 4.6e-7, -3.4e-8, 0.495)


def analysis() -> HeadAnalysis:
    heads = tuple(
        HeadSummary("decoder_self", 0, head, "self", 0.9, None, delta, -delta / 10) for head, delta in enumerate(DELTAS)
    )
    return HeadAnalysis(Score(3.4e-8, 1.0), heads)


def test_changes_too_small_for_three_places_are_written_in_full_and_zero_has_no_sign(qtbot):
    maps = ImportanceMaps()
    qtbot.addWidget(maps)
    maps.show()
    maps.metric_combo.setCurrentIndex(maps.metric_combo.findData("delta_loss"))
    maps.set_analysis(analysis())
    QApplication.processEvents()
    table = maps.tables["decoder_self"]
    assert [table_cell_text(table, 0, head) for head in range(4)] == ["0.000", "+4.6e-07", "-3.4e-08", "+0.495"]
    assert "exact match 1.000, loss 3.4e-08." in maps.baseline_label.text()  # not "loss 0.0000"
    maps.metric_combo.setCurrentIndex(maps.metric_combo.findData("delta_exact_match"))
    assert [table_cell_text(table, 0, head) for head in range(4)] == ["0.000", "-4.6e-08", "+3.4e-09", "-0.050"]


def test_the_roles_table_writes_the_changes_the_same_way(qtbot):
    table = RolesTable()
    qtbot.addWidget(table)
    table.show()
    table.set_roles(tuple(HeadRole("decoder_self", 0, h, "self", 0.9, (("self", 0.9),)) for h in range(4)))
    table.set_analysis(analysis())
    assert [table_cell_text(table, row, 6) for row in range(4)] == ["0.0000", "+4.6e-07", "-3.4e-08", "+0.4950"]
    assert [table_cell_text(table, row, 7) for row in range(4)] == ["0.000", "-4.6e-08", "+3.4e-09", "-0.050"]


def test_the_importance_maps_answer_qt_s_paint_device_questions(qtbot):
    """Qt asks every widget for its metrics (dots per inch, pixel ratio) through the virtual QPaintDevice.metric; an
    attribute of that name on the Python widget would be taken for an override and crash the process when the widget is
    painted or grabbed on its own."""
    maps = ImportanceMaps()
    qtbot.addWidget(maps)
    assert maps.logicalDpiX() > 0 and maps.devicePixelRatioF() > 0
    maps.show()
    assert not maps.grab().isNull()


@pytest.mark.parametrize(
    "value, decimals, shown",
    [
        (0.0, 3, "0.000"),
        (-0.0, 3, "0.000"),
        (0.0005, 3, "+0.001"),  # rounds up to a visible change
        (-0.00049999, 3, "-5.0e-04"),  # would read "-0.000"
        (1e-9, 4, "+1.0e-09"),
        (-0.495, 3, "-0.495"),
    ],
)
def test_a_change_is_never_shown_as_a_signed_zero(value, decimals, shown):
    assert delta_text(value, decimals) == shown


def test_a_tiny_loss_is_written_in_full():
    assert (amount_text(3.4e-8, 4), amount_text(0.0, 4), amount_text(0.12345, 4)) == ("3.4e-08", "0.0000", "0.1235")
