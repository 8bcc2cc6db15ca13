"""The Circuits tab, driven by clicks and keys: its head list, a head's QK and OV tables and the composition links
show what `attention-playground circuits --json` prints; a composition row selects the head it feeds; a new model
clears the tab; a double-click shows the head in the Playground; at 1280x800 no header or number is cut."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from PySide6.QtCore import QEvent, QPoint, QPointF, Qt
from PySide6.QtGui import QFontMetrics, QMouseEvent
from PySide6.QtWidgets import QApplication
from qt_helpers import shown_app

from core_model.checkpoint import load_checkpoint
from core_model.shipped import resource_path
from visualizer.cli import main
from visualizer.state.circuits import STEPS, CircuitsState, read_copy
from visualizer.state.model_hub import ModelHub
from visualizer.widgets.circuits.run_map import NO_RUN
from visualizer.widgets.circuits.table_fit import drawn_font
from visualizer.widgets.circuits.token_table import GREYED_BACKGROUND
from visualizer.widgets.circuits.view import CircuitsView
from visualizer.widgets.common.role_labels import ROLE_LABELS
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


def assert_tables_match(view, head: dict, tokens: list[str], centred: bool = True) -> None:
    """The QK and OV tables show the CLI's numbers: its centred tables while the Centre boxes are ticked."""
    keys = ("qk_centred", "ov_centred") if centred else ("qk", "ov")
    for table, key in zip((view.qk, view.ov), keys, strict=True):
        assert [table.horizontalHeaderItem(j).text() for j in range(table.columnCount())] == tokens
        assert [table.verticalHeaderItem(i).text() for i in range(table.rowCount())] == tokens
        for i, row in enumerate(head[key]):
            for j, value in enumerate(row):
                item = table.item(i, j)
                assert item.text() == decimals(value, 1 if abs(value) < 9.95 else 0), (key, i, j)
                assert f"{value:+.4f}" in item.toolTip() and repr(tokens[i]) in item.toolTip(), (key, i, j)


def opening_head(data: dict) -> dict:
    """The head a fresh result shows: of the last cross layer, the clearest copier of the centred OV table: most
    symbol rows won by their own symbol, then the largest |centred copying score|."""
    last = max(h["layer"] for h in data["heads"] if h["kind"] == "cross")
    cross = [h for h in data["heads"] if h["kind"] == "cross" and h["layer"] == last]

    def clarity(h: dict) -> tuple[int, float]:
        ov = np.array(h["ov_centred"])[3:, 3:]
        return int((ov.argmax(axis=1) == np.arange(len(ov))).sum()), abs(h["centred_copying_score"])

    return max(cross, key=clarity)


def test_the_head_list_and_a_clicked_heads_tables_show_what_the_cli_prints(qtbot, view, capsys):
    data = cli(capsys, REVERSE)
    heads = view.heads
    assert heads.rowCount() == len(data["heads"]) == 24
    for row, head in enumerate(data["heads"]):
        assert f"{heads.item(row, 0).text()} {heads.item(row, 1).text()}" == label(head)
        copying = heads.item(row, 2)
        score = head["centred_copying_score"]  # the Centre OV box is ticked by default
        assert copying.text() == decimals(score, 2, "+"), row
        assert f"{score:+.4f}" in copying.toolTip()
        colour = copying.background().color()
        if score > 0.2:  # copies: green
            assert colour.green() > colour.red(), row
        elif score < -0.2:  # suppresses: red
            assert colour.red() > colour.green(), row
        assert copying.font().italic() == (head["kind"] == "encoder_self"), row  # a lens reading
        shares = data["positions"][row]
        assert (shares["kind"], shares["layer"], shares["head"]) == (head["kind"], head["layer"], head["head"])
        assert heads.item(row, 3).text() == f"{100 * shares['position_share']:.0f} %", row
    opening = opening_head(data)
    assert_tables_match(view, opening, data["tokens"])
    assert f"QK of {label(opening)}" in view.qk_caption.text()
    row = next(i for i, h in enumerate(data["heads"]) if h["kind"] == "cross" and h["layer"] == 1 and h["head"] == 2)
    click_row(qtbot, heads, row)
    assert_tables_match(view, data["heads"][row], data["tokens"])
    assert "OV of cross L2 H3" in view.ov_caption.text() and "copies" in view.ov_caption.text()
    for caption in (view.qk_caption, view.ov_caption):  # hundreds, where the Playground's scores span about ±8
        assert "darkest; one unit: " in caption.text()
    view.centre_qk.click()  # the raw tables, and Elhage et al.'s copying score of the raw OV table
    view.centre_ov.click()
    assert_tables_match(view, data["heads"][row], data["tokens"], centred=False)
    assert "minus" not in view.qk_caption.text() and "less" not in view.ov_caption.text()
    assert [heads.item(r, 2).text() for r in range(24)] == [decimals(h["copying_score"], 2, "+") for h in data["heads"]]


def test_composition_rows_are_the_clis_strongest_links_and_a_row_selects_the_head_it_feeds(qtbot, view, capsys):
    data = cli(capsys, REVERSE)
    base, p95, own = data["baseline"], data["baseline_p95"], data["unlinked"]
    bar = {kind: max(p95[kind], own["p95"][kind]) for kind in "QKV"}  # both yardsticks' 95th percentiles
    ratio = {id(link): link["score"] / base[link["type"]] for link in data["composition"]}
    above = [link for link in data["composition"] if link["score"] > bar[link["type"]]]
    strongest = sorted(above, key=lambda link: ratio[id(link)], reverse=True)[:20]
    table = view.composition
    assert table.rowCount() == 20 < len(above)
    for row, link in enumerate(strongest):
        shown = [table.item(row, c).text() for c in range(table.columnCount())]
        expected = [label(link["from"]), label(link["to"]), link["type"], f"{link['score']:.3f}"]
        assert shown == expected + [f"{ratio[id(link)]:.1f}×"], row
    note = view.composition_note.text()
    assert f"{len(above)} of all {len(data['composition'])} links stand out (the 20 strongest listed)" in note
    for kind in "QKV":
        assert f"{kind} {base[kind]:.3f} (95 %: {p95[kind]:.3f})" in note
        assert f"{kind} {own['mean'][kind]:.3f} (95 %: {own['p95'][kind]:.3f})" in note
    assert "100 pairs" in note and "seed 0" in note and f"({own['pairs']} pairs)" in note
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
    assert shown == [decimals(h["centred_copying_score"], 2, "+") for h in data["heads"]]
    assert_tables_match(view, opening_head(data), data["tokens"])


def test_ctrl_return_computes_again_with_progress_in_steps(qtbot, view):
    steps = []
    view.state.progress_changed.connect(lambda done, total: steps.append((done, total)))
    with qtbot.waitSignal(view.state.frame_changed, timeout=30_000):
        qtbot.keyClick(view.heads, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)
    assert (0, len(STEPS)) in steps and (len(STEPS), len(STEPS)) in steps
    assert view.run_button.isEnabled() and not view.cancel_button.isEnabled() and not view.progress.isVisible()
    assert view.status.text().startswith(
        "The reverse model (reverse_rope.pt): 24 heads over 13 tokens and 18 positions"
    )


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
        read_copy(state, model, 100, 0, 18)
    assert sent == [(0, 4), (1, 4)]


@pytest.fixture
def app(qtbot):
    app = shown_app(qtbot, REVERSE)
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
    view = page.content()
    qtbot.waitUntil(lambda: view.frame is not None, timeout=30_000)
    QApplication.processEvents()
    return view


def test_roles_sit_beside_heads_and_a_double_click_shows_the_head_in_the_playground(qtbot, app):
    view = open_tab(qtbot, app)
    roles = {(r.kind, r.layer, r.head): r for r in app.heads.roles}
    for row, ref in enumerate(view.heads.refs):
        role = roles[(ref.kind, ref.layer, ref.head)]
        fit = f"{ROLE_LABELS[role.role]} fit {role.score:.2f}"
        item = view.heads.item(row, 4)
        if role.role == "other":  # focused on no named pattern: its number is no fit
            assert item.text() == "other (no named pattern)" and "Focused" in item.toolTip(), row
        elif role.score >= 0.4:
            assert item.text() == fit, row
        else:  # a weak fit is not called a role; its best guess is in the tooltip
            assert item.text() == "unclear" and fit in item.toolTip(), row
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
    """Every header and cell text fits its column with a margin, and every column lies across the viewport: no
    number is cut at the side (rows below the fold scroll into view, as in any list)."""
    header, viewport = table.horizontalHeader(), table.viewport().rect()
    for col in range(table.columnCount()):
        width = table.columnWidth(col)
        assert header.fontMetrics().horizontalAdvance(table.horizontalHeaderItem(col).text()) + 8 <= width, col
        for row in row_range:
            item = table.item(row, col)
            assert font_of(item).horizontalAdvance(item.text()) + 8 <= width, (row, col, item.text())
            rect = table.visualItemRect(item)
            assert viewport.left() <= rect.left() and rect.right() <= viewport.right(), (row, col)
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


def test_tokens_that_never_stand_there_are_grey_outside_the_scale_and_each_rows_winner_is_bold(qtbot, view, capsys):
    data = cli(capsys, REVERSE)
    head = opening_head(data)
    assert head["kind"] == "cross"  # queries: the decoder's input (<bos>, symbols); keys: the anchored source
    tokens = data["tokens"]
    queries = {"<bos>", *tokens[3:]}
    keys = {"<bos>", "<eos>", *tokens[3:]}
    qk = np.array(head["qk_centred"])
    table = view.qk
    table.scrollToTop()
    QApplication.processEvents()
    image = table.viewport().grab().toImage()
    for i in range(table.rowCount()):
        counted = np.array([qk[i, j] if tokens[j] in keys else -np.inf for j in range(len(tokens))])
        winner = int(np.argmax(counted)) if tokens[i] in queries else None
        for j in range(table.columnCount()):
            item = table.item(i, j)
            grey = tokens[i] not in queries or tokens[j] not in keys  # <pad> everywhere; <eos> as a decoder input
            corner = table.visualItemRect(item).topLeft() + QPoint(2, 2)  # beside the text: the cell's own colour
            drawn = image.pixelColor(corner.x() * image.devicePixelRatio(), corner.y() * image.devicePixelRatio())
            assert (drawn == GREYED_BACKGROUND) == grey, (i, j, drawn.name())
            assert drawn_font(table, item).bold() == (j == winner), (i, j)
    symbols = np.abs(qk[3:, 3:]).max()  # the symbols set the darkest colour, not <pad> or <eos>
    assert f"±{symbols:.1f} darkest" in view.qk_caption.text()
    ov = view.ov  # an output is never <bos> or <pad>
    assert [ov.item(5, j).background().color() == GREYED_BACKGROUND for j in range(3)] == [True, True, False]


def test_the_position_tab_shows_the_clis_table_and_greys_keys_the_causal_mask_hides(qtbot, view, capsys):
    data = cli(capsys, REVERSE)
    heads = view.heads
    row = next(i for i, h in enumerate(data["heads"]) if (h["kind"], h["layer"], h["head"]) == ("decoder_self", 1, 0))
    click_row(qtbot, heads, row)
    tabs = view.qk_tabs
    qtbot.mouseClick(tabs.tabBar(), Qt.MouseButton.LeftButton, pos=tabs.tabBar().tabRect(1).center())
    assert tabs.currentIndex() == 1 and view.positions.isVisible()
    circuit = data["positions"][row]
    share = circuit["position_share"]
    assert tabs.tabText(1) == f"QK by position ({100 * share:.0f} %)"
    assert tabs.tabText(0) == f"QK by token ({100 * (1 - share):.0f} %)"
    scores = circuit["scores_centred"]  # the Centre QK rows box is ticked by default
    table = view.positions
    assert table.rowCount() == table.columnCount() == data["n_positions"] == 18
    for i, values in enumerate(scores):
        for j, value in enumerate(values):
            item = table.item(i, j)
            assert f"{value:+.4f}" in item.toolTip() and f"position {i} gives a key at position {j}" in item.toolTip()
            assert (item.background().color() == GREYED_BACKGROUND) == (j > i), (i, j)
            assert not drawn_font(table, item).bold()  # its winner is not the offset a real pass uses: no mark
            if not table.compact:
                assert item.text() == decimals(value, 1 if abs(value) < 9.95 else 0)
    assert "QK by position of dec self L2 H1" in view.position_caption.text()
    assert "Grey: causal mask" in view.position_caption.text() and "less the row's mean" in view.position_caption.text()
    assert "0 = &lt;bos&gt;;" in view.position_caption.text()  # decoder input: <bos> first (drawn as "<bos>")
    view.centre_qk.click()
    assert table.item(3, 1).toolTip().count(f"{circuit['scores'][3][1]:+.4f}") == 1


def test_numbers_that_do_not_fit_turn_to_colour_and_the_caption_says_hover(qtbot, view):
    table, ov = view.positions, view.ov
    view.qk_tabs.setCurrentIndex(1)
    view.resize(900, 740)
    qtbot.waitUntil(lambda: table.compact and ov.compact)
    texts = {table.item(i, j).text() for i in range(table.rowCount()) for j in range(table.columnCount())}
    assert texts == {""}  # colour only, and no winner marked in the position table
    assert "Hover for numbers." in view.position_caption.text() and "Hover for numbers" in view.ov_caption.text()
    dots = [j for i in range(ov.rowCount()) for j in range(ov.columnCount()) if ov.item(i, j).text() == "●"]
    assert dots == [w for w in ov.winners if w is not None]  # the OV table's row winners keep a mark
    view.resize(1900, 1000)
    qtbot.waitUntil(lambda: not table.compact and not ov.compact)
    assert "Hover for numbers" not in view.position_caption.text() + view.ov_caption.text()
    assert all(table.item(0, j).text() not in ("", "●") for j in range(table.columnCount()))


def test_sorting_by_copying_score_keeps_each_row_on_its_head(qtbot, view, capsys):
    data = cli(capsys, REVERSE)
    heads = view.heads
    header = heads.horizontalHeader()
    qtbot.mouseClick(header.viewport(), Qt.MouseButton.LeftButton, pos=QPoint(header.sectionViewportPosition(2) + 5, 5))
    shown = [float(heads.item(r, 2).text()) for r in range(heads.rowCount())]
    sizes = [abs(v) for v in shown]
    assert sizes == sorted(sizes) or sizes == sorted(sizes, reverse=True)
    by_label = {label(h): h for h in data["heads"]}
    for r in (0, 7, 23):
        click_row(qtbot, heads, r)
        name = f"{heads.item(r, 0).text()} {heads.item(r, 1).text()}"
        assert float(heads.item(r, 2).text()) == round(by_label[name]["centred_copying_score"], 2)
        assert_tables_match(view, by_label[name], data["tokens"])


def test_only_the_selected_heads_links_are_listed_when_asked(qtbot, view, capsys):
    data = cli(capsys, REVERSE)
    base, p95 = data["baseline"], data["baseline_p95"]
    view.only_selected.click()
    row = next(i for i, h in enumerate(data["heads"]) if label(h) == "cross L2 H4")
    click_row(qtbot, view.heads, row)
    bar = {kind: max(p95[kind], data["unlinked"]["p95"][kind]) for kind in "QKV"}
    everything = [link for link in data["composition"] if "cross L2 H4" in (label(link["from"]), label(link["to"]))]
    mine = [link for link in everything if link["score"] > bar[link["type"]]]
    mine.sort(key=lambda link: link["score"] / base[link["type"]], reverse=True)
    table = view.composition
    assert 0 < table.rowCount() == len(mine) < 20
    for r, link in enumerate(mine):
        assert [table.item(r, c).text() for c in range(3)] == [label(link["from"]), label(link["to"]), link["type"]]
    assert (
        f"{len(mine)} of cross L2 H4's {len(everything)} links stand out (all listed)" in view.composition_note.text()
    )
    view.only_selected.click()
    assert table.rowCount() == 20 and "cross L2 H4's" not in view.composition_note.text()


def amber_pixels(widget) -> int:
    """Pixels of the warning's amber text (dark orange: red well over green, green well over blue)."""
    image = widget.grab().toImage()
    count = 0
    for y in range(image.height()):
        for x in range(image.width()):
            c = image.pixelColor(x, y)
            count += c.red() > 100 and c.red() - c.green() > 40 and c.green() - c.blue() > 25
    return count


def test_a_position_table_of_a_head_that_does_not_read_embeddings_warns_first_in_amber(qtbot, view, capsys):
    """A row's strongest cell reads as "this head attends there": for a cross head, or a head above layer 1, the
    direct path has left out what it really reads, so the caption says that first, in amber."""
    data = cli(capsys, REVERSE)
    view.qk_tabs.setCurrentIndex(1)
    caption = view.position_caption
    for kind, layer, reasons in (
        ("cross", 1, ("encoder's output", "earlier layers")),
        ("cross", 0, ("encoder's output",)),
        ("decoder_self", 1, ("earlier layers",)),
        ("encoder_self", 0, ()),
    ):
        row = next(i for i, h in enumerate(data["heads"]) if (h["kind"], h["layer"], h["head"]) == (kind, layer, 0))
        click_row(qtbot, view.heads, row)
        text = caption.text()
        warned = text.startswith('<p style="color: #7a4b00;"><b>Not where this head looks in a run:</b>')
        assert warned == bool(reasons), (kind, layer)
        assert all(reason in text for reason in reasons)
        assert ("encoder's output" in text) == ("encoder's output" in reasons)
        assert (amber_pixels(caption) > 50) == bool(reasons), (kind, layer)


def test_a_new_model_clears_the_runs_map_with_the_tables_until_its_circuits_are_read(qtbot, app):
    view = open_tab(qtbot, app)
    view.qk_tabs.setCurrentIndex(1)  # QK by position: the run's map beside the direct-path table
    qtbot.waitUntil(lambda: view.run_map.table.rowCount() > 0)
    view.run_button.setEnabled(False)  # a reading started meanwhile would fill the tables again
    model, task = build(COPY)
    app.hub.set_model(model, task, origin="copy_rope.pt", path=COPY)
    assert view.frame is None and view.positions.rowCount() == 0
    assert view.run_map.table.rowCount() == 0, "the old run's map stays beside no table"
    assert view.run_map.caption.text() == NO_RUN
