"""`views` verb: the GUI's numbers equal the CLI's for every view mode; bad input exits 2 with one line."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from core_model.checkpoint import load_checkpoint
from core_model.shipped import resource_path
from visualizer.cli import main
from visualizer.state.model_hub import ModelHub
from visualizer.state.playground import PlaygroundSession
from visualizer.state.playground_tools import playground_tools
from visualizer.widgets.playground.view import PlaygroundView

CKPT = resource_path("copy_rope.pt")
KINDS = ("encoder_self", "decoder_self", "cross")


def cli(capsys, *args: str) -> dict:
    assert main(["views", str(CKPT), *args]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("mode", ["weights", "scores", "norms", "rollout"])
def test_gui_numbers_equal_the_cli(qtbot, capsys, mode):
    printed = cli(capsys, "--source", "3141", "--mode", mode, "--pads", "2")
    ckpt = load_checkpoint(CKPT)
    hub = ModelHub(ckpt.build("cpu"), ckpt.task, device=torch.device("cpu"), origin="shipped")
    session = PlaygroundSession(hub)
    view = PlaygroundView(session, playground_tools(session))
    qtbot.addWidget(view)
    session.set_source("3141")
    session.set_mode(mode)
    for i, kind in enumerate(KINDS):
        view.grid_tabs.setCurrentIndex(i)
        grid = view.grids[kind]
        maps = grid.current_maps()
        expected = np.array(printed["maps"][kind], dtype=float)  # (L, H, Tq, Tk), None -> nan
        assert expected.shape == maps.values.shape
        for layer in range(maps.n_layers):
            for head in range(maps.n_heads):
                shown = grid.displayed_matrix(layer, head)
                drawn = ~np.isnan(shown)
                np.testing.assert_allclose(shown[drawn], expected[layer, head][drawn], rtol=0, atol=1e-6)
        assert list(maps.key_labels) == printed["source_tokens" if kind != "decoder_self" else "target_tokens"]
    if mode == "rollout":
        for kind in KINDS:
            np.testing.assert_allclose(view.grids[kind].displayed_matrix(1, -1), printed["rollout"][kind][1], atol=1e-6)
    assert list(session.last_snapshot.output_tokens) == printed["output_tokens"]


@pytest.mark.parametrize(
    "args, message",
    [
        (["--source", "01x3"], "unknown symbol 'x' at position 3"),
        (["--source", "0123", "--pads", "-1"], "argument --pads: must be an integer from 0 to"),
        (["--source", "0123", "--mode", "gradients"], "invalid choice"),
        (["--source", "0" * 500], "--source plus --pads must be"),
    ],
)
def test_bad_input_exits_2_with_one_line(capsys, args, message):
    assert main(["views", str(CKPT), *args]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_missing_file_exits_1(capsys, tmp_path):
    assert main(["views", str(tmp_path / "nope.pt"), "--source", "0"]) == 1
    assert "nope.pt" in capsys.readouterr().err


def test_masked_scores_are_null_and_the_notes_count_them(capsys):
    """Every null is a masked cell (weight exactly 0), and "notes" says so per kind with the right count."""
    scores = cli(capsys, "--source", "3141", "--mode", "scores", "--pads", "2")
    weights = cli(capsys, "--source", "3141", "--mode", "weights", "--pads", "2")
    assert "notes" not in weights
    assert not any(np.isnan(np.array(weights["maps"][k], dtype=float)).any() for k in KINDS)
    notes = {note.split(":")[0]: note for note in scores["notes"]}
    assert set(notes) == {f"maps.{k}" for k in KINDS}  # padding and causal masks hide cells in all three
    for kind in KINDS:
        values = np.array(scores["maps"][kind], dtype=float)
        null = np.isnan(values)
        assert (np.array(weights["maps"][kind])[null] == 0.0).all()  # a null is a key the mask hid
        assert notes[f"maps.{kind}"] == (
            f"maps.{kind}: {null.sum()} of {values.size} cells are null: a mask hides "
            "that key from that query, so its pre-softmax score is -inf (not a JSON "
            "number)"
        )
