"""The Causal tab's lens and attribution page, driven by typing: what it shows is what `lens` and `attribute` print,
the saturation note appears for a confident model (and that method's agreement row says n/a), the agreement cells
fit a 1280x800 window, and a bad source is explained under the field."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from PySide6.QtCore import QPointF, Qt
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QApplication

from core_model.checkpoint import load_checkpoint
from core_model.shipped import resource_path
from visualizer.cli import main
from visualizer.composition import Application
from visualizer.state.causal_attribution import AttributionState
from visualizer.state.model_hub import ModelHub
from visualizer.widgets.causal.agreement_table import AgreementTable
from visualizer.widgets.causal.source_maps import METHOD_TITLES, SourceMaps
from visualizer.widgets.causal.source_view import SourceView
from visualizer.workers.tasks import TaskSlot

COPY = resource_path("copy_rope.pt")


@pytest.fixture
def view(qtbot):
    ckpt = load_checkpoint(COPY)
    hub = ModelHub(ckpt.build(), ckpt.task, device=torch.device("cpu"), origin="copy_rope.pt", path=COPY)
    state = AttributionState(hub, TaskSlot)
    state.ig_steps = 8
    view = SourceView(state, "0123")
    qtbot.addWidget(view)
    view.resize(1300, 900)
    view.show()
    yield view
    state.shutdown()


def analyse(qtbot, view, text: str) -> None:
    view.source.selectAll()
    qtbot.keyClicks(view.source, text)
    qtbot.keyClick(view.source, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: view.status.text().startswith("Integrated gradients"), timeout=60_000)


def cli(capsys, verb: str, *args: str) -> dict:
    assert main([verb, str(COPY), "--source", "31415926", *args]) == 0
    return json.loads(capsys.readouterr().out)


def test_the_lens_table_is_the_lens_verb(qtbot, view, capsys):
    analyse(qtbot, view, "31415926")
    data = cli(capsys, "lens")
    table = view.lens
    headers = [table.horizontalHeaderItem(t).text() for t in range(table.columnCount())]
    assert headers == [f"out {t}\n{tok}" for t, tok in enumerate(data["output_tokens"])]
    for layer, row in enumerate(data["layers"]):
        for t, (top, log_p) in enumerate(zip(row["top_tokens"], row["top_log_probs"])):
            written = data["output_tokens"][t]
            assert table.item(layer, t).text() == f"{top} {'✓' if top == written else '✗'}\n{np.exp(log_p):.2f}"
            assert f"p = {np.exp(log_p):.3f}" in table.item(layer, t).toolTip()
    assert all(" ✓" in table.item(table.rowCount() - 1, t).text() for t in range(table.columnCount()))


def test_a_layer_that_writes_one_token_nearly_everywhere_says_so_beside_its_row(qtbot, view, capsys):
    """The shipped copy model's first decoder layer writes 8 at most positions: its ticks where the answer is 8
    would read as the layer having found it. The row header counts it as `lens` does; the output row never."""
    analyse(qtbot, view, "31415926")
    data = cli(capsys, "lens")
    table = view.lens
    first, last = data["layers"][0], data["layers"][-1]
    positions = len(first["top_tokens"])
    assert first["most_common_top"] == {"token": "8", "count": first["top_tokens"].count("8")}
    assert 2 * first["most_common_top"]["count"] > positions
    header = table.verticalHeaderItem(0)
    assert header.text().startswith(
        f"after dec L1\nmostly 8 (at {first['most_common_top']['count']} of {positions} positions)"
    )
    assert "answer happens to be that token" in header.toolTip()
    assert table.verticalHeaderItem(table.rowCount() - 1).text() == f"after dec L{len(data['layers'])}"
    assert last["most_common_top"]["count"] == max(map(last["top_tokens"].count, last["top_tokens"]))
    eights = [t for t, tok in enumerate(first["top_tokens"]) if tok == "8"]
    assert all("a match here can be chance" in table.item(0, t).toolTip() for t in eights)
    assert not any("chance" in table.item(0, t).toolTip() for t in range(positions) if t not in eights)


def test_the_maps_and_agreement_are_the_attribute_verb(qtbot, view, capsys):
    analyse(qtbot, view, "31415926")
    data = cli(capsys, "attribute", "--ig-steps", "8")
    for method, title in METHOD_TITLES.items():
        values = np.array(data["methods"][method])
        assert view.maps.value_text(title, 3, 4).endswith(f"{values[3, 4]:+.4f}")
        assert view.maps.plots[title].titleLabel.text.startswith(f"{title}: largest |value| ")
    assert list(view.maps.plots)[3:] == ["cross L1", "cross L2", "norm-weighted L1", "norm-weighted L2", "rollout"]
    table = view.agreement
    headers = [table.horizontalHeaderItem(c).text() for c in range(table.columnCount())]
    assert headers == [
        "cross, layer 1",
        "cross, layer 2",
        "norm-weighted, layer 1",
        "norm-weighted, layer 2",
        "rollout",
    ]
    for row, method in enumerate(METHOD_TITLES):
        for col, name in enumerate(data["agreement"][method]):
            rhos = [r for r in data["agreement"][method][name] if r is not None]
            tops = [t for t in data["top1_agreement"][method][name] if t is not None]
            expected = f"top-1 {sum(tops)} of {len(tops)} · ρ {np.mean(rhos):+.2f}"
            cell = table.item(row, col)
            if method == "gradient_x_delta":  # saturated on the copy model: the numbers only in the tooltip
                assert cell.text() == "n/a: saturated" and expected in cell.toolTip(), cell.toolTip()
            else:
                assert cell.text() == expected, (method, name)
            assert f"vs {headers[col]}" in cell.toolTip()


def test_a_saturated_model_gets_the_note_and_its_gradient_row_is_greyed(qtbot, view):
    assert not view.saturation.isVisible()
    analyse(qtbot, view, "31415926")
    assert view.saturation.isVisible() and "saturated" in view.saturation.text()
    greys = [view.agreement.item(row, 0).foreground().color().name() for row in range(3)]
    assert greys[0] == "#9e9e9e" and greys[1] != "#9e9e9e" and greys[2] != "#9e9e9e"
    texts = [[view.agreement.item(row, col).text() for col in range(5)] for row in range(3)]
    assert texts[0] == ["n/a: saturated"] * 5
    assert all(text.startswith("top-1 ") and " · ρ +" in text for text in texts[1] + texts[2]), texts
    assert "Saturated: near 0 everywhere" in view.agreement.item(0, 2).toolTip()
    levels = {name: view.maps.images[name].levels for name in METHOD_TITLES.values()}
    assert len({tuple(np.round(v, 9)) for v in levels.values()}) == 1  # one scale for the three attributions


def pixel_at(maps, title: str, i: int, j: int) -> QColor:
    """The colour drawn at the centre of cell (output i, source j) of a map, as the screen shows it."""
    box = maps.plots[title].getViewBox()
    point = maps.mapFromScene(box.mapViewToScene(QPointF(j + 0.5, i + 0.5)))
    return maps.grab().toImage().pixelColor(point)


def test_green_raises_the_output_and_red_lowers_it_as_in_the_patching_tables(qtbot, view):
    analyse(qtbot, view, "31415926")
    QApplication.processEvents()
    frame = view.state.frame
    maps = {title: getattr(frame.attribution, method) for method, title in METHOD_TITLES.items()}
    top = max(maps, key=lambda t: maps[t].max())  # the strongest cell, in the map that holds it
    high = np.unravel_index(maps[top].argmax(), maps[top].shape)
    up = pixel_at(view.maps, top, *high)
    assert up.green() > up.red() + 60, up.name()
    drawn = SourceMaps()  # a negative attribution as strong as the positive one: red
    qtbot.addWidget(drawn)
    drawn.resize(900, 300)
    drawn.show()
    drawn.set_maps({"occlusion": np.array([[2.0, -2.0, 0.0]])}, {"occlusion"}, ["a"], ["x", "y", "z"])
    QApplication.processEvents()
    colours = [pixel_at(drawn, "occlusion", 0, j) for j in range(3)]
    assert colours[0].green() > colours[0].red() + 100, colours[0].name()
    assert colours[1].red() > colours[1].green() + 100, colours[1].name()
    assert min(colours[2].red(), colours[2].green(), colours[2].blue()) > 240, colours[2].name()


def test_a_cell_counts_top_matches_among_positions_with_a_single_top(qtbot):
    """A tie (None) has no top symbol: it is left out of k/n, as a position without ρ is left out of the mean."""
    table = AgreementTable()
    qtbot.addWidget(table)
    methods = ("gradient_x_delta", "integrated_gradients", "occlusion")
    rhos = {m: {"cross L1": [0.2, None, 0.6], "rollout": [None, None, None]} for m in methods}
    tops = {m: {"cross L1": [True, None, False], "rollout": [None, None, None]} for m in methods}
    table.set_agreement(rhos, tops)
    assert [table.item(2, col).text() for col in range(2)] == ["top-1 1 of 2 · ρ +0.40", "top-1 — · ρ —"]
    assert table.horizontalHeaderItem(0).text() == "cross, layer 1"
    assert "✓ +0.20, – —, ✗ +0.60" in table.item(2, 0).toolTip()


def test_a_bad_source_is_explained_under_the_field(qtbot, view):
    view.source.selectAll()
    qtbot.keyClicks(view.source, "31x")
    qtbot.mouseClick(view.run_button, Qt.MouseButton.LeftButton)
    assert view.error.isVisible() and "Unknown symbol 'x' at position 3" in view.error.text()
    analyse(qtbot, view, "3141")
    assert not view.error.isVisible()


def test_a_new_model_clears_the_page(qtbot, view):
    analyse(qtbot, view, "3141")
    ckpt = load_checkpoint(resource_path("reverse_rope.pt"))
    view.state.hub.set_model(ckpt.build(), ckpt.task, origin="reverse_rope.pt")
    assert view.lens.rowCount() == 0 and view.agreement.rowCount() == 0 and not view.maps.plots
    assert "model changed" in view.status.text()


def test_a_model_changed_while_the_analysis_ran_is_said_and_nothing_is_drawn(qtbot, view):
    view.source.selectAll()
    qtbot.keyClicks(view.source, "3141")
    qtbot.keyClick(view.source, Qt.Key.Key_Return)  # the analysis starts on a pool thread
    ckpt = load_checkpoint(resource_path("reverse_rope.pt"))
    view.state.hub.set_model(ckpt.build(), ckpt.task, origin="reverse_rope.pt")  # before its result can arrive
    qtbot.waitUntil(lambda: not view.state.running, timeout=60_000)
    assert view.status.text() == "The model changed while this ran: press Analyse again for this model."
    assert view.state.frame is None and view.lens.rowCount() == 0 and not view.maps.plots


@pytest.fixture
def small_app(qtbot):
    """The whole window at 1280x800, with its background analyses done."""
    app = Application(checkpoint=COPY, device="cpu")
    qtbot.addWidget(app.window)
    app.window.resize(1280, 800)
    app.window.show()
    app.start_loading()
    qtbot.waitUntil(lambda: app.heads is not None and app.heads.roles is not None, timeout=60_000)
    yield app
    app.hub.dirty = False
    app.window.close()


def test_at_1280x800_every_agreement_cell_and_header_fits_its_column(qtbot, small_app):
    """A cell cut to "top-1 16 of 1…" would hide the count; the longest source gives the longest counts."""
    app = small_app
    page = app.analysis.causal_page
    app.window.tabs.setCurrentWidget(page)
    page.content().setCurrentIndex(1)
    view = page.content().source
    view.source.selectAll()
    qtbot.keyClicks(view.source, "3141592653589793")
    qtbot.mouseClick(view.run_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: view.status.text().startswith("Integrated"), timeout=60_000)
    QApplication.processEvents()
    table, header = view.agreement, view.agreement.horizontalHeader()
    assert " of 17 · ρ " in table.item(1, 0).text()  # 16 symbols and <eos>: two-digit counts
    for col in range(table.columnCount()):
        width = table.columnWidth(col)
        assert header.fontMetrics().horizontalAdvance(table.horizontalHeaderItem(col).text()) + 8 <= width, col
        for row in range(table.rowCount()):
            assert table.fontMetrics().horizontalAdvance(table.item(row, col).text()) + 8 <= width, (row, col)
            assert table.viewport().rect().contains(table.visualItemRect(table.item(row, col))), (row, col)


def test_too_few_ig_steps_are_flagged_with_the_clis_gap_and_more_steps_clear_the_flag(qtbot, view, capsys):
    assert view.steps.value() == 8
    analyse(qtbot, view, "31415926")
    data = cli(capsys, "attribute", "--ig-steps", "8")
    share = np.abs(data["completeness_gap"]).max() / np.abs(np.array(data["f"]) - np.array(data["f_baseline"])).max()
    assert share > 0.1
    assert (
        view.rough.isVisible() and f"leave {share:.0%} of f(x)" in view.rough.text() and "8 steps" in view.rough.text()
    )
    view.steps.selectAll()
    qtbot.keyClicks(view.steps, "128")
    qtbot.mouseClick(view.run_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(
        lambda: view.state.frame is not None and view.state.frame.attribution.ig_steps == 128, timeout=60_000
    )
    qtbot.waitUntil(lambda: view.status.text().startswith("Integrated gradients with 128"), timeout=10_000)
    assert not view.rough.isVisible()
