"""Head analysis states which sequences it scores, and the statement is true: the training distribution (runs of
repeated symbols included), not eval's uniform sources."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from PySide6.QtCore import Qt

from core_model import PAD
from core_model.checkpoint import load_checkpoint
from core_model.tasks import TaskSpec, make_batch
from visualizer.cli import main
from visualizer.state.heads import HeadsState
from visualizer.state.model_hub import ModelHub
from visualizer.widgets.heads.view import HeadsView
from visualizer.workers.tasks import TaskSlot

ROPE = Path(__file__).resolve().parents[2] / "resources" / "copy_rope.pt"
N, SEED = 40, 3
FIELDS = ("task", "min_len", "max_len", "runs", "anchored")


def teacher_forced_loss(model, task: TaskSpec) -> float:
    """Mean token NLL over non-pad labels of N sequences drawn with `task` and SEED, written out here."""
    batch = make_batch(task, N, torch.Generator().manual_seed(SEED))
    with torch.no_grad():
        lp = model(batch.src, batch.tgt_in).log_probs.double()
    keep = batch.tgt_out != PAD
    return float(-lp.gather(-1, batch.tgt_out[..., None])[..., 0][keep].mean())


def test_the_heads_json_names_the_distribution_its_numbers_come_from(capsys):
    assert main(["heads", str(ROPE), "--n", str(N), "--seed", str(SEED), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    ckpt = load_checkpoint(ROPE)
    stated = out["sequences"]
    assert {k: stated[k] for k in ("n", "seed", *FIELDS)} == {
        "n": N,
        "seed": SEED,
        "task": "copy",
        "min_len": 1,
        "max_len": 16,
        "runs": 0.25,
        "anchored": True,
    }
    assert "25% of them runs of repeated symbols" in stated["description"]
    assert "uniform" in stated["description"]  # and that eval's sweep differs
    model = ckpt.build("cpu").eval()
    drawn = TaskSpec(**{k: stated[k] for k in FIELDS}, n_symbols=ckpt.task.n_symbols)
    assert out["baseline"]["loss"] == pytest.approx(teacher_forced_loss(model, drawn), rel=1e-5)
    uniform = TaskSpec(**{**{k: stated[k] for k in FIELDS}, "runs": 0.0}, n_symbols=ckpt.task.n_symbols)
    assert out["baseline"]["loss"] != pytest.approx(teacher_forced_loss(model, uniform), rel=1e-2)  # eval's draw


def show(qtbot, hub: ModelHub) -> tuple[HeadsState, HeadsView]:
    state = HeadsState(hub, TaskSlot)
    view = HeadsView(state)
    qtbot.addWidget(view)
    with qtbot.waitExposed(view):
        view.show()
    with qtbot.waitSignal(state.roles_changed, timeout=30_000):  # as the app does once the model is in
        state.refresh_roles()
    return state, view


def test_the_heads_tab_says_which_sequences_it_scores(qtbot):
    ckpt = load_checkpoint(ROPE)
    state, view = show(qtbot, ModelHub(ckpt.build("cpu").eval(), ckpt.task, device=torch.device("cpu"), origin="test"))
    text = view.sequences.text()
    assert view.sequences.isVisible()
    assert "200 copy sequences (seed 1234), lengths 1 to 16" in text and "25% of them runs of repeated symbols" in text
    assert "eval's length sweep draws uniform sources" in text
    view.n_box.selectAll()
    qtbot.keyClicks(view.n_box, str(N))
    with qtbot.waitSignal(state.roles_changed, timeout=30_000):  # the roles are scored again on the new sequences
        qtbot.keyClick(view.n_box, Qt.Key.Key_Return)
    assert f"{N} copy sequences (seed 1234)" in view.sequences.text()


def test_a_task_without_runs_is_named_as_such(qtbot, hub):
    _, view = show(qtbot, hub)
    assert "200 copy sequences (seed 1234), lengths 3 to 5" in view.sequences.text()
    assert "no runs of repeated symbols" in view.sequences.text()
