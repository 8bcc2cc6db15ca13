"""The beam search panel driven like a user: Run through the controls, the tree against the CLI, clicks to the grids."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import numpy as np
import pytest
import torch
from PySide6.QtCore import Qt
from qt_helpers import retype
from widget_readers import chip_states

from core_model import BOS
from core_model.checkpoint import load_checkpoint
from core_model.tasks import max_source_len
from visualizer.cli import main
from visualizer.state.model_hub import ModelHub
from visualizer.state.playground import PlaygroundSession
from visualizer.state.playground_beam import BeamSettings, BeamState
from visualizer.state.playground_tools import playground_tools
from visualizer.widgets.playground.beam_panel import BeamPanel
from visualizer.widgets.playground.beam_tree import edge_text, score_text
from visualizer.widgets.playground.view import PlaygroundView
from visualizer.workers.tasks import TaskSlot

CKPT = Path(__file__).resolve().parents[2] / "resources" / "copy_rope.pt"
SOURCE = "3141"


def open_beam_app(qtbot, path: Path, source: str):
    """A shown playground with the beam panel under its decoder stepper, on `path`'s model, `source` typed."""
    ckpt = load_checkpoint(path)
    hub = ModelHub(ckpt.build("cpu").eval(), ckpt.task, device=torch.device("cpu"), origin="test")
    session = PlaygroundSession(hub)
    beam = BeamState(session, TaskSlot)
    panel = BeamPanel(beam)
    view = PlaygroundView(session, playground_tools(session), beam_panel=panel)  # as the composition root builds it
    qtbot.addWidget(view)
    view.resize(1400, 900)
    with qtbot.waitExposed(view):
        view.show()
    retype(qtbot, view.input_panel.source, source)
    return view, session, beam, panel


@pytest.fixture
def app(qtbot):
    view, session, beam, panel = open_beam_app(qtbot, CKPT, SOURCE)
    assert session.source_text == SOURCE
    return view, session, beam, panel


def type_into(qtbot, box, text: str) -> None:
    box.lineEdit().selectAll()
    qtbot.keyClicks(box.lineEdit(), text)
    qtbot.keyClick(box.lineEdit(), Qt.Key.Key_Tab)


def chips_show(qtbot, view, words) -> None:
    """Wait until the stepper's output chips read `words` (the session may answer from a worker thread)."""
    qtbot.waitUntil(lambda: [label for label, _ in chip_states(view.decoder_panel)] == list(words), timeout=10_000)


def run_search(qtbot, beam, panel):
    with qtbot.waitSignal(beam.outcome_changed, timeout=30_000) as blocker:
        qtbot.mouseClick(panel.run_button, Qt.MouseButton.LeftButton)
    return blocker.args[0]


def cli(session, capsys, *args: str) -> dict:
    limit = max_source_len(session.hub.config.max_len)
    assert (
        main(
            [
                "decode",
                str(CKPT),
                SOURCE,
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


def test_the_tree_shows_k_hypotheses_with_the_clis_log_probs(qtbot, app, capsys):
    view, session, beam, panel = app
    type_into(qtbot, panel.width_spin, "4")
    outcome = run_search(qtbot, beam, panel)
    printed = cli(session, capsys, "--beam", "4", "--tree")
    expected = printed["beams"]
    assert len(outcome.hypotheses) == 4
    drawn = [t.text for t in panel.tree.drawn_texts("score")]
    assert sorted(drawn) == sorted(score_text(b["log_prob"]) for b in expected)
    rows = [b.text() for b in panel.hyp_rows]
    for row, want in zip(rows, expected):
        assert " ".join(want["tokens"]) in row and f"log p {score_text(want['log_prob'])}" in row
    assert "= greedy, expected" in rows[0]
    assert "same as greedy" in panel.compare.text() and "matches the expected output" in panel.compare.text()
    edges = {t.node: t.text for t in panel.tree.drawn_texts("edge")}
    assert edges and all(text == edge_text(printed["tree"][node]["log_prob"]) for node, text in edges.items())
    assert len(printed["tree"]) == len(outcome.nodes)
    assert all(outcome.nodes[t.node].kept for t in panel.tree.drawn_texts("token"))
    kept_only = len(panel.tree.drawn_texts("token"))
    qtbot.mouseClick(panel.candidates, Qt.MouseButton.LeftButton)
    assert len(panel.tree.drawn_texts("token")) > kept_only
    assert any(not outcome.nodes[t.node].kept for t in panel.tree.drawn_texts("token"))  # grey pruned nodes drawn
    assert sorted(t.text for t in panel.tree.drawn_texts("score")) == sorted(drawn)
    image = panel.tree.grab().toImage()
    assert image.pixelColor(image.width() // 3, 18) != image.pixelColor(2, 2)  # something painted


def test_sampling_through_the_controls_equals_the_cli(qtbot, app, capsys):
    view, session, beam, panel = app
    panel.mode.setCurrentIndex(panel.mode.findData("sample"))
    type_into(qtbot, panel.temperature, "3")
    type_into(qtbot, panel.samples, "5")
    type_into(qtbot, panel.seed, "7")
    outcome = run_search(qtbot, beam, panel)
    expected = cli(session, capsys, "--temperature", "3", "--samples", "5", "--seed", "7")["beams"]
    rows = [b.text() for b in panel.hyp_rows]
    assert len(rows) == 5 == len(outcome.hypotheses)
    for row, want in zip(rows, expected):
        assert row.startswith(
            f"{rows.index(row) + 1}. {' '.join(want['tokens'])}   log p {score_text(want['log_prob'])}"
        )
    assert not panel.width_spin.isEnabled() and panel.seed.isEnabled()
    distinct = len({tuple(b["tokens"]) for b in expected})
    assert panel.status.text() == f"5 samples (seed 7), {distinct} different sequences"


def test_clicking_a_node_shows_that_hypothesis_in_the_grids(qtbot, app):
    view, session, beam, panel = app
    type_into(qtbot, panel.width_spin, "3")
    outcome = run_search(qtbot, beam, panel)
    hyp = outcome.hypotheses[2]  # not the greedy one
    assert hyp.tokens != outcome.greedy.tokens
    center = panel.tree.node_rect(hyp.node).center().toPoint()
    with qtbot.waitSignal(beam.shown_changed):
        qtbot.mouseClick(panel.tree, Qt.MouseButton.LeftButton, pos=center)
    words = list(outcome.words(hyp.tokens))
    chips_show(qtbot, view, words)
    frame = session.last_frame
    assert list(frame.decoder.output_labels) == words
    tgt = torch.tensor([[BOS, *hyp.tokens]])
    src = torch.tensor([session.hub.task.source_ids(session.vocabulary.encode(SOURCE)) + [0] * session.extra_pads])
    with torch.no_grad():
        att = session.hub.model(src, tgt, session.masks, return_attention=True).attention
    for kind in ("decoder_self", "cross"):
        shown = view.grids[kind].displayed_matrix(0, 0)
        want = getattr(att, kind)[0][0, 0].numpy()
        assert shown.shape == want.shape
        np.testing.assert_allclose(np.nan_to_num(shown), want, atol=1e-5)  # masked cells are drawn blank (NaN)
    qtbot.mouseClick(panel.open_large, Qt.MouseButton.LeftButton)
    large = panel.large_tree
    assert panel.large_window.isVisible() and large.drawn_texts("score")
    assert panel.large_legend.isVisible() and "log p" in panel.large_legend.text()  # its numbers are explained
    assert [t.text for t in large.drawn_texts("score")] == [t.text for t in panel.tree.drawn_texts("score")]
    first = outcome.hypotheses[1].node
    with qtbot.waitSignal(beam.shown_changed):
        qtbot.mouseClick(large, Qt.MouseButton.LeftButton, pos=large.node_rect(first).center().toPoint())
    chips_show(qtbot, view, outcome.words(outcome.hypotheses[1].tokens))
    panel.large_window.close()
    greedy_button = panel.hyp_rows[0]
    qtbot.mouseClick(greedy_button, Qt.MouseButton.LeftButton)
    chips_show(qtbot, view, outcome.words(outcome.hypotheses[0].tokens))


def test_a_changed_input_makes_the_result_stale(qtbot, app):
    view, session, beam, panel = app
    outcome = run_search(qtbot, beam, panel)
    qtbot.keyClicks(view.input_panel.source, "2")
    qtbot.waitUntil(lambda: "press Run again" in panel.status.text(), timeout=10_000)
    qtbot.mouseClick(panel.hyp_rows[0], Qt.MouseButton.LeftButton)
    assert session.last_frame.decoder.output_labels != outcome.words(outcome.hypotheses[0].tokens)


def test_a_target_prefix_is_named_instead_of_mixed_into_the_hypothesis(qtbot, app):
    view, session, beam, panel = app
    outcome = run_search(qtbot, beam, panel)
    qtbot.keyClicks(view.input_panel.prefix, "9")
    qtbot.mouseClick(panel.hyp_rows[1], Qt.MouseButton.LeftButton)
    assert "Clear the target prefix" in panel.status.text()
    chips_show(qtbot, view, ["9"])
    qtbot.keyClick(view.input_panel.prefix, Qt.Key.Key_Backspace)
    assert session.target_prefix == ""
    qtbot.mouseClick(panel.hyp_rows[1], Qt.MouseButton.LeftButton)
    chips_show(qtbot, view, outcome.words(outcome.hypotheses[1].tokens))


def test_cancel_stops_a_running_job(qtbot):
    started = threading.Event()

    def forever(state):
        for i in range(10**9):
            started.set()
            state.step(i)

    job = TaskSlot("The search")
    job.submit(forever)
    assert started.wait(10)
    with qtbot.waitSignal(job.cancelled, timeout=10_000):
        job.cancel()
    assert job.shutdown(10_000)


def test_a_source_typed_during_the_search_makes_it_stale_and_the_panel_says_what_changed(qtbot, app):
    view, session, beam, panel = app
    outcomes = []
    beam.outcome_changed.connect(outcomes.append)
    qtbot.mouseClick(panel.run_button, Qt.MouseButton.LeftButton)  # the search runs on a pool thread
    qtbot.keyClicks(view.input_panel.source, "5")  # typed before its result can arrive
    qtbot.waitUntil(lambda: not beam.running, timeout=30_000)
    assert panel.status.text() == "The source changed during the search: press Run again"
    assert outcomes == [] and beam.outcome is None


def test_the_state_owns_the_settings_and_the_panel_shows_them(qtbot, app):
    """Old code: the spin boxes held the settings and the state heard of them only when Run was pressed, so a change
    made in code never showed in the panel and the state disagreed with what the panel showed."""
    _view, _session, beam, panel = app
    type_into(qtbot, panel.width_spin, "5")
    assert beam.settings.width == 5  # typed, not yet run: the state has it
    wanted = BeamSettings(mode="sample", width=2, temperature=2.5, top_k=4, top_p=0.9, seed=11, samples=7)
    beam.set_settings(wanted)
    assert panel.mode.currentText() == "Sampling"
    shown = [box.text() for box in (panel.width_spin, panel.samples, panel.temperature, panel.top_k, panel.top_p)]
    assert shown == ["2", "7", "2.50", "4", "0.90"] and panel.seed.text() == "11"
    assert panel.samples.isEnabled() and not panel.width_spin.isEnabled()  # the mode's controls follow too
    assert beam.settings == wanted  # reflecting it did not write anything back


def test_decimals_typed_into_the_sampling_boxes_reach_the_state_whole(qtbot, app):
    """Each keystroke updates the state, which the panel shows again: the box being typed in must keep its text
    ("2." on the way to "2.5" must not become "2.00")."""
    _view, _session, beam, panel = app
    panel.mode.setCurrentIndex(panel.mode.findData("sample"))
    type_into(qtbot, panel.temperature, "2.5")
    type_into(qtbot, panel.top_p, "0.95")
    assert (beam.settings.temperature, beam.settings.top_p) == (2.5, 0.95)
    assert (panel.temperature.text(), panel.top_p.text()) == ("2.5", "0.95")  # as typed, not "2.00"


def test_settings_the_panel_cannot_show_are_what_it_shows(qtbot, app):
    """The panel draws at most 16 hypotheses and two decimals: a wider or finer setting becomes what is shown."""
    _view, _session, beam, panel = app
    beam.set_settings(BeamSettings(width=40, temperature=1.234))
    assert panel.width_spin.text() == "16" and panel.temperature.text() == "1.23"
    assert (beam.settings.width, beam.settings.temperature) == (16, 1.23)
