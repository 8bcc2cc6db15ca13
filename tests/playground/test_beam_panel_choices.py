"""The stepper and the beam/sampling panel choose among the task symbols and <eos> only, and show the CLI's numbers."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
import torch
from PySide6.QtCore import Qt
from test_beam_panel import open_beam_app as open_app
from widget_readers import chip_states, force_buttons

from core_model import ModelConfig, build_model
from core_model.checkpoint import save_checkpoint
from core_model.tasks import TaskSpec, max_source_len
from visualizer.cli import main
from visualizer.widgets.playground.beam_tree import score_text

SHIPPED = Path(__file__).resolve().parents[2] / "resources" / "copy_rope.pt"
NEVER_SHOWN = {"<pad>", "<bos>"}


def leaning(tmp_path: Path) -> Path:
    """An untrained model with 13 ids for a 5-symbol task (as `train --symbols 5` makes) that favours the ids no
    decoder may choose: <pad>, <bos> and the 5 spare ones."""
    model = build_model(ModelConfig(vocab_size=13, d_model=16, n_heads=2, d_ff=32, max_len=12), seed=0)
    with torch.no_grad():
        model.generator.bias[[0, 1, *range(8, 13)]] += 4.0
    task = TaskSpec("copy", n_symbols=5, min_len=1, max_len=5)
    return save_checkpoint(tmp_path / "leaning.pt", model, extra={"task": dataclasses.asdict(task)})


def type_into(qtbot, box, text: str) -> None:
    box.lineEdit().selectAll()
    qtbot.keyClicks(box.lineEdit(), text)
    qtbot.keyClick(box.lineEdit(), Qt.Key.Key_Tab)


def run_search(qtbot, beam, panel):
    with qtbot.waitSignal(beam.outcome_changed, timeout=60_000) as blocker:
        qtbot.mouseClick(panel.run_button, Qt.MouseButton.LeftButton)
    return blocker.args[0]


def cli(path: Path, source: str, session, capsys, *args: str) -> dict:
    limit = max_source_len(session.hub.config.max_len)
    assert (
        main(
            [
                "decode",
                str(path),
                source,
                "--pads",
                str(session.extra_pads),
                "--max-new",
                str(limit),
                "--device",
                "cpu",
                "--json",
                *args,
            ]
        )
        == 0
    )
    return json.loads(capsys.readouterr().out)


def test_hot_samples_show_no_pad_or_bos_and_their_tree_adds_up_to_the_clis_scores(qtbot, capsys):
    _, session, beam, panel = open_app(qtbot, SHIPPED, "3141")
    panel.mode.setCurrentIndex(panel.mode.findData("sample"))
    type_into(qtbot, panel.temperature, "5")
    type_into(qtbot, panel.samples, "32")
    type_into(qtbot, panel.seed, "6")
    outcome = run_search(qtbot, beam, panel)
    rows = [b.text() for b in panel.hyp_rows]
    assert len(rows) == 32 and [r for r in rows if any(w in r for w in NEVER_SHOWN)] == []
    assert NEVER_SHOWN.isdisjoint(t.text for t in panel.tree.drawn_texts("token"))
    printed = cli(SHIPPED, "3141", session, capsys, "--temperature", "5", "--samples", "32", "--seed", "6")["beams"]
    for i, (row, want) in enumerate(zip(rows, printed)):
        assert row.startswith(f"{i + 1}. {' '.join(want['tokens'])}   log p {score_text(want['log_prob'])}")
    for hyp, want in zip(outcome.hypotheses, printed):
        assert hyp.log_prob == want["log_prob"]
        assert outcome.nodes[hyp.node].score == hyp.log_prob  # the tree's running sum ends on the printed score


def test_stepping_and_searching_a_model_that_prefers_other_ids_shows_only_the_tasks_tokens(qtbot, tmp_path, capsys):
    path = leaning(tmp_path)
    allowed = {*"01234", "<eos>"}
    view, session, beam, panel = open_app(qtbot, path, "012")
    labels = [b.text().split(" ")[1] for b in force_buttons(view.decoder_panel)]  # "force 3 (0.01)"
    assert labels and set(labels) <= allowed
    qtbot.mouseClick(view.decoder_panel.buttons["run"], Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: len(chip_states(view.decoder_panel)) > 0 and session.idle, timeout=10_000)
    qtbot.waitUntil(lambda: not view.decoder_panel.buttons["run"].isEnabled(), timeout=10_000)
    chips = [label for label, _ in chip_states(view.decoder_panel)]
    assert chips and set(chips) <= allowed
    type_into(qtbot, panel.width_spin, "4")
    outcome = run_search(qtbot, beam, panel)
    assert {outcome.labels[n.token] for n in outcome.nodes} <= allowed
    printed = cli(path, "012", session, capsys, "--beam", "4")["beams"]
    assert [list(outcome.words(h.tokens)) for h in outcome.hypotheses] == [b["tokens"] for b in printed]
    assert [h.log_prob for h in outcome.hypotheses] == pytest.approx([b["log_prob"] for b in printed], abs=0)
    assert list(outcome.words(outcome.greedy.tokens)) == chips  # Run to end is greedy decoding, as the search's
