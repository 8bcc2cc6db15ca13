"""The Circuits tab read as a learner reads it, on the copy model at 1280x800: every figure beside a table is one
the table (or the CLI) confirms."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from PySide6.QtCore import Qt
from qt_helpers import retype, shown_app

from core_model.checkpoint import load_checkpoint
from core_model.circuits import HeadRef
from core_model.shipped import resource_path
from visualizer.cli import main
from visualizer.state.circuits import CircuitsState
from visualizer.state.model_hub import ModelHub
from visualizer.widgets.circuits.view import CircuitsView
from visualizer.workers.tasks import TaskSlot

COPY = resource_path("copy_rope.pt")


def cli(capsys) -> dict:
    assert main(["circuits", str(COPY), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.fixture
def view(qtbot):
    ckpt = load_checkpoint(COPY)
    hub = ModelHub(ckpt.build(), ckpt.task, device=torch.device("cpu"), origin="copy_rope.pt", path=COPY)
    state = CircuitsState(hub, TaskSlot)
    view = CircuitsView(state)
    qtbot.addWidget(view)
    view.resize(1280, 740)
    view.show()
    qtbot.waitUntil(lambda: view.frame is not None, timeout=30_000)
    yield view
    state.shutdown()


def row_of(view, kind: str, layer: int, head: int) -> int:
    """The head's row in the list as it stands (sorting moves rows)."""
    heads = view.heads
    return next(r for r in range(heads.rowCount()) if heads.ref_at(r) == HeadRef(kind, layer, head))  # type: ignore[arg-type]


def click_head(qtbot, view, kind: str, layer: int, head: int) -> int:
    """Click the head's row in the list, as a person does; returns its index in the CLI's list of heads."""
    heads = view.heads
    pos = heads.visualItemRect(heads.item(row_of(view, kind, layer, head), 0)).center()
    qtbot.mouseClick(heads.viewport(), Qt.MouseButton.LeftButton, pos=pos)
    return heads.refs.index(HeadRef(kind, layer, head))  # type: ignore[arg-type]


def bold_on_diagonal(table) -> int:
    """The symbol rows (ids 3..) whose bold cell is the row's own symbol, read off the table's items."""
    return sum(table.item(i, i).font().bold() for i in range(3, table.rowCount()))


def test_beside_the_copying_score_the_ov_caption_counts_the_rows_the_table_shows_won_on_its_diagonal(
    qtbot, view, capsys
):
    """Cross L2 H3 copies (+0.99) yet its rows for '1' and '4' go to other symbols: the caption says on how many
    rows its own symbol wins, the number a learner counts in bold on the table and the CLI prints."""
    data = cli(capsys)
    index = click_head(qtbot, view, "cross", 1, 2)
    head = data["heads"][index]
    assert (head["centred_diagonal_wins"], head["symbol_rows"]) == (8, 10)
    caption = view.ov_caption.text()
    assert "Its own symbol wins 8 of 10 symbol rows" in caption and "copying score (+0.99)" in caption
    assert bold_on_diagonal(view.ov) == 8
    assert "its own symbol wins 8 of 10 OV rows" in view.heads.item(row_of(view, "cross", 1, 2), 2).toolTip()
    view.centre_ov.click()  # the raw table: its own count, still what the bold cells show
    wins = head["diagonal_wins"]
    assert f"Its own symbol wins {wins} of 10 symbol rows" in view.ov_caption.text()
    assert bold_on_diagonal(view.ov) == wins


def test_each_qk_caption_says_what_one_unit_is_and_what_puts_it_on_the_playgrounds_scale(qtbot, view, capsys):
    """A cell of -684 means nothing alone: every QK caption names the divisor a run's norms apply (the CLI's
    spreads), and the OV caption says its unit is one logit."""
    data = cli(capsys)
    head = data["heads"][click_head(qtbot, view, "cross", 1, 2)]
    q, k = head["query_spread"], head["key_spread"]
    assert 10 < q * k < 1000  # hundreds of units make a few of the Playground's
    line = f"divide a lone embedding by about {q:.1f} (query) and {k:.1f} (key), so a cell ÷ {q * k:.0f} is on"
    for caption in (view.qk_caption, view.position_caption):
        assert "one unit: a score of embeddings × √d_model that no norm has divided" in caption.text()
        assert line in caption.text() and "Playground's pre-softmax scale" in caption.text()
    assert f"one unit: one logit, the attended embedding left undivided (a run's norm divides it by about {k:.1f})" in (
        view.ov_caption.text()
    )


@pytest.fixture
def app(qtbot):
    app = shown_app(qtbot, COPY)
    qtbot.waitUntil(lambda: app.session is not None and app.session.last_frame is not None, timeout=60_000)
    yield app
    app.hub.dirty = False
    app.window.close()


def test_the_run_map_sits_beside_the_position_table_and_the_caption_counts_the_keys_they_share(qtbot, app, capsys):
    """Cross L2 H3 looks at key i+1 in a run while its direct path scores that diagonal low: the tab shows the
    Playground's map beside the table (what `views` prints) and says on how many queries the two pick one key."""
    page, win = app.analysis.circuits_page, app.window
    with qtbot.waitActive(win):
        win.activateWindow()
    qtbot.keyClick(win, Qt.Key.Key_7, Qt.KeyboardModifier.ControlModifier)  # View > 7 Circuits
    view = page.content()
    qtbot.waitUntil(lambda: view.frame is not None, timeout=30_000)
    index = click_head(qtbot, view, "cross", 1, 2)
    tab_bar = view.qk_tabs.tabBar()
    qtbot.mouseClick(tab_bar, Qt.MouseButton.LeftButton, pos=tab_bar.tabRect(1).center())
    source = app.session.source_text
    assert main(["circuits", str(COPY), "--source", source, "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    direct = np.array(printed["positions"][index]["scores"])
    agreement = printed["run"]["agreement"][index]
    assert main(["views", str(COPY), "--source", source, "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    run = np.array(shown["maps"]["cross"][1][2], dtype=float)  # (Tq, Tk): what the Playground draws
    table = view.run_map.table
    assert table.isVisible() and (table.rowCount(), table.columnCount()) == run.shape
    assert [table.horizontalHeaderItem(j).text() for j in range(run.shape[1])] == [
        f"{j}:{token}" for j, token in enumerate(shown["source_tokens"])
    ]
    for i, row in enumerate(run):
        for j, value in enumerate(row):
            assert f"{value:+.4f}" in table.item(i, j).toolTip(), (i, j)
    keys = [j for j, token in enumerate(shown["source_tokens"][: direct.shape[1]]) if token != "<pad>"]
    rows = range(min(len(direct), len(run)))
    matched = sum(max(keys, key=lambda j: run[i, j]) == max(keys, key=lambda j: direct[i, j]) for i in rows)
    assert run[0].argmax() == 1  # in the run, <bos> reads the source's first symbol: key i+1
    assert (agreement["matched"], agreement["queries"]) == (matched, len(rows))  # the CLI prints what is drawn
    caption = view.position_caption.text()
    assert f"The direct path picks the run's key on {matched} of {len(rows)} query positions" in caption
    assert "earlier layers, the norms and biases" in caption and "Not where this head looks" not in caption
    label = view.position_caption  # its tab just came into view: the layout settles on the next event pass
    qtbot.waitUntil(lambda: label.height() >= label.heightForWidth(label.width()), timeout=5_000)
    edit = app.playground.input_panel.source  # a new source in the Playground: the map and the count follow it
    retype(qtbot, edit, "31415")
    qtbot.waitUntil(lambda: table.columnCount() == len(shown["source_tokens"]) - 5, timeout=30_000)
    assert main(["circuits", str(COPY), "--source", "31415", "--json"]) == 0
    again = json.loads(capsys.readouterr().out)["run"]["agreement"][index]
    line = f"picks the run's key on {again['matched']} of {again['queries']} query positions"
    qtbot.waitUntil(lambda: line in view.position_caption.text(), timeout=30_000)
