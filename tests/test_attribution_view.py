"""The Causal tab's lens and attribution page, driven by typing: what it shows is what `lens` and `attribute` print,
the saturation note appears for a confident model, and a bad source is explained under the field."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from PySide6.QtCore import Qt

from core_model.checkpoint import load_checkpoint
from core_model.shipped import resource_path
from visualizer.cli import main
from visualizer.state.attribution import AttributionState
from visualizer.state.model_hub import ModelHub
from visualizer.widgets.causal.source_maps import METHOD_TITLES
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
    assert headers == [f"out {t}: {tok}" for t, tok in enumerate(data["output_tokens"])]
    for layer, row in enumerate(data["layers"]):
        for t, (top, log_p) in enumerate(zip(row["top_tokens"], row["top_log_probs"])):
            written = data["output_tokens"][t]
            assert table.item(layer, t).text() == f"{top}{' ✓' if top == written else ''}\n{np.exp(log_p):.2f}"
            assert f"p = {np.exp(log_p):.3f}" in table.item(layer, t).toolTip()
    assert all(" ✓" in table.item(table.rowCount() - 1, t).text() for t in range(table.columnCount()))


def test_the_maps_and_agreement_are_the_attribute_verb(qtbot, view, capsys):
    analyse(qtbot, view, "31415926")
    data = cli(capsys, "attribute", "--ig-steps", "8")
    for method, title in METHOD_TITLES.items():
        values = np.array(data["methods"][method])
        assert view.maps.value_text(title, 3, 4).endswith(f"{values[3, 4]:+.4f}")
        assert view.maps.plots[title].titleLabel.text.startswith(f"{title}: ±")
    assert list(view.maps.plots)[3:] == ["cross L1", "cross L2", "norm-weighted L1", "norm-weighted L2", "rollout"]
    table = view.agreement
    views = [table.horizontalHeaderItem(c).text() for c in range(table.columnCount())]
    for row, method in enumerate(METHOD_TITLES):
        for col, name in enumerate(views):
            rhos = [r for r in data["agreement"][method][name] if r is not None]
            assert table.item(row, col).text() == f"{np.mean(rhos):+.2f}", (method, name)


def test_a_saturated_model_gets_the_note_and_its_gradient_row_is_greyed(qtbot, view):
    assert not view.saturation.isVisible()
    analyse(qtbot, view, "31415926")
    assert view.saturation.isVisible() and "saturated" in view.saturation.text()
    greys = [view.agreement.item(row, 0).foreground().color().name() for row in range(3)]
    assert greys[0] == "#9e9e9e" and greys[1] != "#9e9e9e" and greys[2] != "#9e9e9e"
    levels = {name: view.maps.images[name].levels for name in METHOD_TITLES.values()}
    assert len({tuple(np.round(v, 9)) for v in levels.values()}) == 1  # one scale for the three attributions


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
