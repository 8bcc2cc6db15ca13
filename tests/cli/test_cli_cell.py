"""`attention-playground cell`: one JSON object; its numbers equal the GUI's cell panel for the same input."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from PySide6.QtCore import QPointF, Qt
from widget_readers import step_texts

from core_model import ModelConfig, build_model
from core_model.checkpoint import load_checkpoint, save_checkpoint
from visualizer.cli import main
from visualizer.state.model_hub import ModelHub
from visualizer.state.playground import PlaygroundSession
from visualizer.state.playground_tools import playground_tools
from visualizer.widgets.playground.view import PlaygroundView


@pytest.fixture
def ckpt(tmp_path):
    model = build_model(ModelConfig(d_model=16, n_heads=2, d_ff=32, max_len=32), seed=7)
    return save_checkpoint(tmp_path / "m.pt", model)


def run_cli(capsys, *args: str) -> dict:
    assert main(["cell", *args]) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 1
    return json.loads(out)


def test_cli_numbers_equal_the_gui_panel(qtbot, capsys, ckpt):
    data = run_cli(
        capsys,
        str(ckpt),
        "3141",
        "--kind",
        "cross",
        "--layer",
        "1",
        "--head",
        "1",
        "--query",
        "2",
        "--key",
        "1",
        "--paint",
        "cross:2,0",
        "--json",
    )
    assert data["query_token"] == "1" and data["key_token"] == "1" and data["visible"] is True
    assert data["row_weights"][0] == 0.0  # painted
    loaded = load_checkpoint(ckpt)
    session = PlaygroundSession(
        ModelHub(loaded.build("cpu").eval(), loaded.task, device=torch.device("cpu"), origin="test")
    )
    view = PlaygroundView(session, playground_tools(session))
    qtbot.addWidget(view)
    with qtbot.waitExposed(view):
        view.show()
    session.set_source("3141")
    session.set_masks(session.masks.with_painted("cross", {(2, 0)}))
    view.grid_tabs.setCurrentWidget(view.grids["cross"])
    dialog = view.grids["cross"].open_large_view(1, 1)
    with qtbot.waitExposed(dialog):
        dialog.show()
    scene = dialog.plot_item.getViewBox().mapViewToScene(QPointF(1.5, 2.5))
    qtbot.mouseClick(dialog.graphics.viewport(), Qt.MouseButton.LeftButton, pos=dialog.graphics.mapFromScene(scene))
    cell = dialog.cell_panel.cell
    assert (cell.query, cell.key) == (2, 1)
    for name in ("q_raw", "k_raw", "q", "k", "product", "row_weights", "head_output", "angle_q"):
        np.testing.assert_array_equal(np.asarray(data[name], float), getattr(cell, name), err_msg=name)
    np.testing.assert_array_equal(np.asarray(data["weighted_values"]), dialog.cell_panel.charts["values"].image.image)
    assert data["weight"] == cell.weight and f"{data['weight']:.6f}" in step_texts(dialog.cell_panel)["final"]
    assert data["source_tokens"] == ["3", "1", "4", "1", "<pad>", "<pad>"]
    dialog.close()


@pytest.mark.parametrize(
    "args",
    [
        ["--kind", "cross", "--query", "99", "--key", "0"],
        ["--kind", "cross", "--query", "0", "--key", "0", "--layer", "5"],
        ["--kind", "cross", "--query", "0", "--key", "0", "--paint", "cross:1"],
        ["--kind", "self", "--query", "0", "--key", "0"],
        ["--kind", "cross", "--query", "0", "--key", "0", "--pads", "-1"],
    ],
)
def test_bad_arguments_exit_2_with_a_message(capsys, ckpt, args):
    assert main(["cell", str(ckpt), "3141", *args]) == 2
    assert "error:" in capsys.readouterr().err


def test_bad_source_names_the_symbol(capsys, ckpt):
    assert main(["cell", str(ckpt), "31x1", "--kind", "cross", "--query", "0", "--key", "0"]) == 2
    assert "'x' at position 3" in capsys.readouterr().err


def test_a_painted_cell_outside_its_map_is_refused_naming_the_maps_size(capsys):
    """The docs say painted indices must lie inside the map; one outside was painted nowhere, silently."""
    from core_model.shipped import resource_path

    args = ["cell", str(resource_path("copy_rope.pt")), "3141", "--kind", "cross", "--query", "1", "--key", "1"]
    assert main([*args, "--paint", "cross:4000,4000"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(
        "attention-playground: error: --paint cross:4000,4000: the cross map has 7 queries and 8 keys"
    )
    assert len(err.splitlines()) == 1
    assert main([*args, "--paint", "cross:6,7", "--json"]) == 0  # the last cell of the map is inside it
