"""Attention forming: role scores per probe snapshot, against loops over a direct model call; the curves in the tab."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from PySide6.QtCore import Qt
from widget_readers import legend_curves

from core_model import ModelConfig, build_model
from core_model.tasks import TaskSpec, expected_output
from core_model.vocab import BOS
from visualizer.state.inline_slot import InlineSlot
from visualizer.state.snapshots import ProbeSnapshot
from visualizer.state.training_forming import FormingRecorder, snapshot_roles
from visualizer.widgets.training.forming import FormingCurves
from visualizer.widgets.training.tab import TrainerTab
from visualizer.workers.training_worker import probe_maps


def _loop_alignment(model, task, text, layer, head):
    """Weight each symbol-producing decoder position puts on the sources holding its symbol, averaged, in loops."""
    ids = task.vocabulary.encode(text)
    target = expected_output(task, ids)
    with torch.no_grad():
        w = model(torch.tensor([ids]), torch.tensor([[BOS, *target]]), return_attention=True).attention.cross[layer]
    total = 0.0
    for t, y in enumerate(target):
        total += sum(float(w[0, head, t, s]) for s, x in enumerate(ids) if x == y)
    return total / len(target)


@pytest.mark.parametrize("task_name, text", [("copy", "0120344"), ("reverse", "43210"), ("sort", "3140412")])
def test_snapshot_roles_equal_loops_over_the_model(task_name, text):
    task = TaskSpec(task_name, n_symbols=5, min_len=2, max_len=7)
    model = build_model(
        ModelConfig(vocab_size=8, d_model=16, n_heads=2, d_ff=32, n_encoder_layers=1, n_decoder_layers=2, max_len=16),
        seed=4,
    ).eval()
    snap = ProbeSnapshot(7, text, probe_maps(model, task, text, torch.device("cpu")))
    roles = {(r.kind, r.layer, r.head): r for r in snapshot_roles(snap)}
    assert len(roles) == 2 + 4 + 4
    for layer in range(2):
        for head in range(2):
            expected = _loop_alignment(model, task, text, layer, head)
            assert roles[("cross", layer, head)].alignment == pytest.approx(expected, abs=1e-6)  # float32 maps
    with torch.no_grad():
        enc = model.encode(torch.tensor([task.vocabulary.encode(text)]), need_weights=True).weights[0][0]
    diag = float(np.mean([float(enc[0, q, q]) for q in range(1, len(text))]))
    assert dict(roles[("encoder_self", 0, 0)].scores)["self"] == pytest.approx(diag, abs=1e-6)


def test_recorder_scores_each_snapshot_once_and_finds_the_forming_step():
    task = TaskSpec("copy", n_symbols=5, min_len=2, max_len=5)
    model = build_model(
        ModelConfig(vocab_size=8, d_model=16, n_heads=2, d_ff=32, n_encoder_layers=1, n_decoder_layers=1, max_len=16),
        seed=0,
    ).eval()
    base = probe_maps(model, task, "01234", torch.device("cpu"))
    sharp = dict(base)
    eye = np.zeros_like(base["cross"].values)
    eye[0, 0, :5, :5] = np.eye(5)  # head 1 aligned exactly; the <eos> row does not count
    eye[0, 0, 5, 0] = 1.0
    eye[0, 1] = base["cross"].values[0, 1]
    sharp["cross"] = type(base["cross"])(
        "cross", eye, base["cross"].valid, base["cross"].query_labels, base["cross"].key_labels
    )
    snaps = (ProbeSnapshot(0, "01234", base), ProbeSnapshot(30, "01234", sharp))
    series = FormingRecorder().series(snaps)
    assert series.steps.tolist() == [0.0, 30.0]
    assert series.scores[("cross", 0, 0)]["alignment"][1] == pytest.approx(1.0)
    assert series.formed_step() == 30


def test_forming_curves_follow_training_and_the_timeline(qtbot, hub, state):
    tab = TrainerTab(hub, state, make_slot=InlineSlot)
    qtbot.addWidget(tab)
    tab.show()
    tab.form.batch_spin.setValue(16)
    forming = tab.findChild(FormingCurves)
    assert forming is not None and forming.isVisible()
    assert forming.formed_label.text() == "no probe snapshots yet"
    tab.form.steps_spin.setValue(40)
    qtbot.mouseClick(tab.train_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: state.state == "finished" and state.training_thread is None, timeout=60000)
    snaps = state.snapshots
    assert len(snaps) >= 3
    curves = legend_curves(forming.plot)
    assert sorted(curves) == ["L1 H1 reads", "L1 H2 reads"]
    for head in range(2):
        xs, ys = curves[f"L1 H{head + 1} reads"]
        assert xs.tolist() == [float(s.step) for s in snaps]
        expected = [next(r.alignment for r in snapshot_roles(s) if r.kind == "cross" and r.head == head) for s in snaps]
        assert ys == pytest.approx(expected, abs=1e-12)
    assert "reads score" in forming.formed_label.text()
    tab.probe.slider.setValue(1)  # scrubbing the timeline moves the cursor here and on the loss curves
    assert forming.step_cursor.isVisible() and forming.step_cursor.value() == snaps[1].step
    assert tab.curves.cursors["loss"].value() == snaps[1].step
    forming.kind.setCurrentIndex(1)  # decoder self-attention: each head under the role it ended with
    names = sorted(legend_curves(forming.plot))
    assert len(names) == 2 and all(n.startswith("L1 H") for n in names)


def test_a_head_aligned_before_the_first_snapshot_is_not_said_to_form_there(qtbot, hub, state):
    """Continue training on the shipped model: its cross head is aligned at the run's first snapshot already; the
    label must not claim it formed at that step (a student reads 'formed at step 4000' as learned just now)."""
    tab = TrainerTab(hub, state, make_slot=InlineSlot)
    qtbot.addWidget(tab)
    forming = tab.findChild(FormingCurves)
    task = TaskSpec("copy", n_symbols=5, min_len=2, max_len=5)
    model = build_model(
        ModelConfig(vocab_size=8, d_model=16, n_heads=2, d_ff=32, n_encoder_layers=1, n_decoder_layers=1, max_len=16),
        seed=0,
    ).eval()
    base = probe_maps(model, task, "01234", torch.device("cpu"))
    eye = np.zeros_like(base["cross"].values)
    eye[0, 0, :5, :5] = np.eye(5)
    eye[0, 0, 5, 0] = 1.0
    eye[0, 1] = base["cross"].values[0, 1]
    sharp = dict(
        base,
        cross=type(base["cross"])(
            "cross", eye, base["cross"].valid, base["cross"].query_labels, base["cross"].key_labels
        ),
    )
    forming.set_snapshots((ProbeSnapshot(4000, "01234", sharp), ProbeSnapshot(4060, "01234", sharp)))
    text = forming.formed_label.text()
    assert "formed at step 4000" not in text and "already" in text and "4000" in text
    forming.set_snapshots((ProbeSnapshot(0, "01234", base), ProbeSnapshot(30, "01234", sharp)))
    assert forming.formed_label.text().startswith("cross head L1 H1 formed at step 30")  # head 1 holds the eye
    eye[0, 1], eye[0, 0] = eye[0, 0].copy(), base["cross"].values[0, 0]  # now head 2 aligns
    forming.set_snapshots((ProbeSnapshot(0, "01234", base), ProbeSnapshot(30, "01234", sharp)))
    assert forming.formed_label.text().startswith("cross head L1 H2 formed at step 30")
