"""The Circuits tab, driven by clicks and keys: its head list, a head's QK and OV tables and the composition links
show what `attention-playground circuits --json` prints; a composition row selects the head it feeds; a new model
clears the tab; a double-click shows the head in the Playground; at 1280x800 no header or number is cut."""

from __future__ import annotations

import json

import pytest
import torch
from PySide6.QtCore import QEvent, QPointF, Qt
from PySide6.QtGui import QFontMetrics, QMouseEvent
from PySide6.QtWidgets import QApplication

from core_model.checkpoint import load_checkpoint
from core_model.head_roles import ROLE_LABELS
from core_model.shipped import resource_path
from visualizer.cli import main
from visualizer.composition import Application
from visualizer.state.circuits import STEPS, CircuitsState, read_circuits
from visualizer.state.model_hub import ModelHub
from visualizer.widgets.circuits.table_fit import drawn_font
from visualizer.widgets.circuits.view import CircuitsView
from visualizer.widgets.heatmap.large_view import MapDialog
from visualizer.workers.task_state import Cancelled, TaskState
from visualizer.workers.tasks import TaskSlot

REVERSE, COPY = resource_path("reverse_rope.pt"), resource_path("copy_rope.pt")
KINDS = {"encoder_self": "enc self", "decoder_self": "dec self", "cross": "cross"}


def cli(capsys, path) -> dict:
    assert main(["circuits", str(path), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def label(head: dict) -> str:
    """A head as a person reads it in the tab: kind, then 1-based layer and head."""
    return f"{KINDS[head['kind']]} L{head['layer'] + 1} H{head['head'] + 1}"


def decimals(value: float, places: int, sign: str = "") -> str:
    """As the tab writes a number: rounded, and never a negative zero."""
    return f"{round(value, places) + 0.0:{sign}.{places}f}"


def build(path):
    ckpt = load_checkpoint(path)
    return ckpt.build(), ckpt.task


@pytest.fixture
def view(qtbot):
    model, task = build(REVERSE)
    hub = ModelHub(model, task, device=torch.device("cpu"), origin="reverse_rope.pt", path=REVERSE)
    state = CircuitsState(hub, TaskSlot)
    view = CircuitsView(state)
    qtbot.addWidget(view)
    view.resize(1280, 740)
    view.show()  # shown for the first time: it computes by itself
    qtbot.waitUntil(lambda: view.frame is not None, timeout=30_000)
    yield view
    state.shutdown()


def click_row(qtbot, table, row: int, double: bool = False) -> None:
    viewport, pos = table.viewport(), table.visualItemRect(table.item(row, 0)).center()
    qtbot.mouseClick(viewport, Qt.MouseButton.LeftButton, pos=pos)
    if not double:
        return
    left, none = Qt.MouseButton.LeftButton, Qt.MouseButton.NoButton
    # Qt's real order after the first click is Press, DblClick, Release (QTest.mouseDClick's differs)
    for kind, held in (
        (QEvent.Type.MouseButtonPress, left),
        (QEvent.Type.MouseButtonDblClick, left),
        (QEvent.Type.MouseButtonRelease, none),
    ):
        event = QMouseEvent(
            kind, QPointF(pos), viewport.mapToGlobal(QPointF(pos)), left, held, Qt.KeyboardModifier.NoModifier
        )
        QApplication.sendEvent(viewport, event)


def assert_tables_match(view, head: dict, tokens: list[str]) -> None:
    for table, key in ((view.qk, "qk"), (view.ov, "ov")):
        assert [table.horizontalHeaderItem(j).text() for j in range(table.columnCount())] == tokens
        assert [table.verticalHeaderItem(i).text() for i in range(table.rowCount())] == tokens
        for i, row in enumerate(head[key]):
            for j, value in enumerate(row):
                item = table.item(i, j)
                assert item.text() == decimals(value, 1 if abs(value) < 9.95 else 0), (key, i, j)
                assert f"{value:+.4f}" in item.toolTip() and repr(tokens[i]) in item.toolTip(), (key, i, j)


def test_the_head_list_and_a_clicked_heads_tables_show_what_the_cli_prints(qtbot, view, capsys):
    data = cli(capsys, REVERSE)
    heads = view.heads
    assert heads.rowCount() == len(data["heads"]) == 24
    for row, head in enumerate(data["heads"]):
        assert f"{heads.item(row, 0).text()} {heads.item(row, 1).text()}" == label(head)
        copying = heads.item(row, 2)
        assert copying.text() == decimals(head["copying_score"], 2, "+"), row
        assert f"{head['copying_score']:+.4f}" in copying.toolTip()
        colour = copying.background().color()
        if head["copying_score"] > 0.2:  # copies: green
            assert colour.green() > colour.red(), row
        elif head["copying_score"] < -0.2:  # suppresses: red
            assert colour.red() > colour.green(), row
    assert_tables_match(view, data["heads"][0], data["tokens"])  # the first head is shown at first
    assert "QK of enc self L1 H1" in view.qk_caption.text()
    row = next(i for i, h in enumerate(data["heads"]) if h["kind"] == "cross" and h["layer"] == 1 and h["head"] == 2)
    click_row(qtbot, heads, row)
    assert_tables_match(view, data["heads"][row], data["tokens"])
    assert "OV of cross L2 H3" in view.ov_caption.text() and "copies" in view.ov_caption.text()


def test_composition_rows_are_the_clis_strongest_links_and_a_row_selects_the_head_it_feeds(qtbot, view, capsys):
    data = cli(capsys, REVERSE)
    base = data["baseline"]
    ratio = {id(link): link["score"] / base[link["type"]] for link in data["composition"]}
    above = [link for link in data["composition"] if ratio[id(link)] > 1]
    strongest = sorted(above, key=lambda link: ratio[id(link)], reverse=True)[:15]
    table = view.composition
    assert table.rowCount() == 15
    for row, link in enumerate(strongest):
        shown = [table.item(row, c).text() for c in range(table.columnCount())]
        expected = [label(link["from"]), label(link["to"]), link["type"], f"{link['score']:.3f}"]
        assert shown == expected + [f"{ratio[id(link)]:.1f}×"], row
    note = view.composition_note.text()
    assert f"{len(data['composition'])} links ({len(above)} above" in note
    assert all(f"{kind} {base[kind]:.3f}" in note for kind in "QKV") and "100 pairs" in note and "seed 0" in note
    click_row(qtbot, table, 3)
    target = strongest[3]["to"]
    assert view.heads.selected() is not None and label(view.heads.selected().to_dict()) == label(target)
    tokens = data["tokens"]
    assert_tables_match(view, next(h for h in data["heads"] if label(h) == label(target)), tokens)


def test_a_new_model_clears_the_tab_and_a_shown_tab_reads_the_new_one(qtbot, view, capsys):
    hub = view.state.hub
    view.hide()
    model, task = build(COPY)
    hub.set_model(model, task, origin="copy_rope.pt", path=COPY)
    assert view.heads.rowCount() == 0 and view.qk.rowCount() == 0 and view.composition.rowCount() == 0
    assert view.status.text() == "The model changed: press Compute (Ctrl+Return) to read this model's circuits."
    view.show()  # back on screen: the new model is read
    qtbot.waitUntil(lambda: view.frame is not None, timeout=30_000)
    data = cli(capsys, COPY)
    shown = [view.heads.item(row, 2).text() for row in range(view.heads.rowCount())]
    assert shown == [decimals(h["copying_score"], 2, "+") for h in data["heads"]]
    assert_tables_match(view, data["heads"][0], data["tokens"])


def test_ctrl_return_computes_again_with_progress_in_steps(qtbot, view):
    steps = []
    view.state.progress_changed.connect(lambda done, total: steps.append((done, total)))
    with qtbot.waitSignal(view.state.frame_changed, timeout=30_000):
        qtbot.keyClick(view.heads, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)
    assert (0, len(STEPS)) in steps and (len(STEPS), len(STEPS)) in steps
    assert view.run_button.isEnabled() and not view.cancel_button.isEnabled() and not view.progress.isVisible()
    assert view.status.text().startswith("24 heads over 13 tokens")


def test_the_task_stops_between_its_steps_when_cancelled():
    model, _task = build(REVERSE)
    sent = []

    def send(snapshot) -> bool:
        sent.append(snapshot)
        if snapshot == (1, len(STEPS)):
            state.cancel()  # asked while the composition scores are about to start
        return True

    state = TaskState(send)
    with pytest.raises(Cancelled):
        read_circuits(state, model, 100, 0)
    assert sent == [(0, 3), (1, 3)]


@pytest.fixture
def app(qtbot):
    app = Application(checkpoint=REVERSE, device="cpu")
    qtbot.addWidget(app.window)
    app.window.resize(1280, 800)
    app.window.show()
    app.start_loading()
    qtbot.waitUntil(lambda: app.heads is not None and app.heads.roles is not None, timeout=60_000)
    yield app
    app.hub.dirty = False
    app.window.close()


def open_tab(qtbot, app):
    page, win = app.analysis.circuits_page, app.window
    assert not page.built
    with qtbot.waitActive(win):
        win.activateWindow()
    qtbot.keyClick(win, Qt.Key.Key_7, Qt.KeyboardModifier.ControlModifier)  # View > 7 Circuits
    assert win.tabs.currentWidget() is page and win.tabs.tabText(win.tabs.indexOf(page)) == "Circuits"
    view = page.view()
    qtbot.waitUntil(lambda: view.frame is not None, timeout=30_000)
    QApplication.processEvents()
    return view


def test_roles_sit_beside_heads_and_a_double_click_shows_the_head_in_the_playground(qtbot, app):
    view = open_tab(qtbot, app)
    roles = {(r.kind, r.layer, r.head): r for r in app.heads.roles}
    for row, ref in enumerate(view.heads.refs):
        role = roles[(ref.kind, ref.layer, ref.head)]
        assert view.heads.item(row, 3).text() == f"{ROLE_LABELS[role.role]} fit {role.score:.2f}", row
    row = next(i for i, ref in enumerate(view.heads.refs) if (ref.kind, ref.layer, ref.head) == ("cross", 1, 2))
    click_row(qtbot, view.heads, row, double=True)
    win = app.window
    assert win.tabs.currentWidget() is app.playground
    grid = app.playground.grids["cross"]
    qtbot.waitUntil(lambda: grid.findChild(MapDialog) is not None and grid.findChild(MapDialog).isVisible())
    assert "L2 H3" in grid.findChild(MapDialog).title_label.text()
    assert "cross layer 2 head 3" in win.statusBar().currentMessage()
    grid.findChild(MapDialog).close()
    QApplication.processEvents()


def fits(table, row_range, font_of) -> None:
    """Every header and cell text fits its column with a margin, and every row shown lies in the viewport."""
    header = table.horizontalHeader()
    for col in range(table.columnCount()):
        width = table.columnWidth(col)
        assert header.fontMetrics().horizontalAdvance(table.horizontalHeaderItem(col).text()) + 8 <= width, col
        for row in row_range:
            item = table.item(row, col)
            assert font_of(item).horizontalAdvance(item.text()) + 8 <= width, (row, col, item.text())
            assert table.viewport().rect().contains(table.visualItemRect(item)), (row, col)
            assert table.rowHeight(row) >= font_of(item).height(), row


def test_at_1280x800_no_header_or_number_is_cut(qtbot, app):
    view = open_tab(qtbot, app)
    assert app.window.width() == 1280 and app.window.height() == 800
    for table in (view.heads, view.composition):
        fits(table, range(table.rowCount()), lambda item, table=table: QFontMetrics(drawn_font(table, item)))
    for row in range(view.heads.rowCount()):  # every head's numbers: some reach three digits
        click_row(qtbot, view.heads, row)
        for table in (view.qk, view.ov):
            fits(table, range(table.rowCount()), lambda item, table=table: QFontMetrics(drawn_font(table, item)))
    for table in (view.qk, view.ov):
        rows = [table.verticalHeaderItem(i).text() for i in range(table.rowCount())]
        assert max(table.verticalHeader().fontMetrics().horizontalAdvance(t) for t in rows) + 4 <= (
            table.verticalHeader().width()
        )
    for label in (view.qk_caption, view.ov_caption, view.composition_note, view.status):
        assert label.isVisible() and label.height() >= label.heightForWidth(label.width()), label.objectName()
