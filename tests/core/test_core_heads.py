"""Head roles and head importance against computations written here with plain loops (copy, reverse, sort)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from core_model import ModelConfig, build_model
from core_model.head_importance import head_importance, single_head_gates
from core_model.head_roles import CROSS_ROLES, SELF_ROLES, head_roles, probe_sequences, roles_from_maps
from core_model.model import HeadGates
from core_model.tasks import TaskSpec
from core_model.training import TrainConfig, Trainer
from core_model.vocab import BOS, EOS, PAD

N, SEED = 24, 7


@pytest.fixture(scope="session")
def tiny_models():
    """A briefly trained tiny model per task (lengths 2-5, 5 symbols, some repeats): partly right, so deltas move."""
    out = {}
    for task_name in ("copy", "reverse", "sort"):
        task = TaskSpec(task_name, n_symbols=5, min_len=2, max_len=5)
        config = ModelConfig(
            vocab_size=8, d_model=32, n_heads=2, d_ff=64, n_encoder_layers=2, n_decoder_layers=1, max_len=16
        )
        model = build_model(config, seed=1)
        trainer = Trainer(model, task, TrainConfig(batch_size=32, steps=120, lr=5e-3, seed=3))
        for _ in trainer.train_steps():
            pass
        out[task_name] = (model.eval(), task)
    return out


def _raw_maps(model, batch):
    with torch.no_grad():
        att = model(batch.src, batch.tgt_in, return_attention=True).attention
    return {k: [t.double().numpy() for t in att.kind(k)] for k in ("encoder_self", "decoder_self", "cross")}


def _loop_alignment(w, src, tgt_out):
    """w (B, H=1 picked, T, S) for one head -> mean over symbol-producing positions of weight on matching sources."""
    total, count = 0.0, 0
    for b in range(len(src)):
        for t in range(len(tgt_out[b])):
            y = int(tgt_out[b][t])
            if y in (PAD, EOS, BOS):
                continue
            total += sum(float(w[b][t][s]) for s in range(len(src[b])) if int(src[b][s]) == y and y != PAD)
            count += 1
    return total / count


def _loop_self_scores(w, tokens, causal):
    """One head's self roles from w (B, T, T) with loops: keys allowed = real (and k <= q when causal)."""
    sums = dict.fromkeys(SELF_ROLES, 0.0)
    count = 0
    for b in range(len(tokens)):
        real = [int(x) != PAD for x in tokens[b]]
        for q in range(1, len(real)):
            if not real[q]:
                continue
            keys = [k for k in range(len(real)) if real[k] and (k <= q or not causal)]
            row = w[b][q]
            sums["self"] += float(row[q])
            sums["previous"] += float(row[q - 1])
            sums["first"] += float(row[0])
            sums["eos_pad"] += sum(float(row[k]) for k in range(len(real)) if int(tokens[b][k]) in (EOS, PAD))
            ent = -sum(float(row[k]) * math.log(float(row[k])) for k in keys if float(row[k]) > 0)
            sums["broad"] += ent / math.log(len(keys))
            count += 1
    return {k: v / count for k, v in sums.items()}


@pytest.mark.parametrize("task_name", ["copy", "reverse", "sort"])
def test_roles_equal_loops_over_raw_maps(tiny_models, task_name):
    model, task = tiny_models[task_name]
    roles = {(r.kind, r.layer, r.head): r for r in head_roles(model, task, n=N, seed=SEED)}
    batch = probe_sequences(task, N, SEED)
    maps = _raw_maps(model, batch)
    src, tgt_in, tgt_out = (batch.src.tolist(), batch.tgt_in.tolist(), batch.tgt_out.tolist())
    checked = 0
    for layer, w in enumerate(maps["cross"]):
        for h in range(w.shape[1]):
            r = roles[("cross", layer, h)]
            assert r.alignment == pytest.approx(_loop_alignment(w[:, h], src, tgt_out), abs=1e-12)
            assert [n for n, _ in r.scores] == list(CROSS_ROLES)
            assert dict(r.scores)["broad" if r.role == "other" else r.role] == r.score
            best = max(dict(r.scores), key=dict(r.scores).get)
            weak = dict(r.scores)[best] <= 0 or (best == "broad" and dict(r.scores)[best] < 0.5)
            assert r.role == ("other" if weak else best)
            checked += 1
    for kind, tokens, causal in (("encoder_self", src, False), ("decoder_self", tgt_in, True)):
        for layer, w in enumerate(maps[kind]):
            for h in range(w.shape[1]):
                r = roles[(kind, layer, h)]
                expected = _loop_self_scores(w[:, h], tokens, causal)
                for name, value in r.scores:
                    assert value == pytest.approx(expected[name], abs=1e-12), (kind, layer, h, name)
                assert r.alignment is None
                best = max(expected, key=expected.get)
                weak = expected[best] <= 0 or (best == "broad" and expected[best] < 0.5)
                assert r.role == ("other" if weak else best)
                checked += 1
    assert checked == len(roles) == 2 * 2 + 1 * 2 + 1 * 2


def test_alignment_counts_every_tied_source_position():
    """A hand-made map: target 'a' appears at sources 0 and 2, so weight on both counts; <eos> row is ignored."""
    a, b_ = 3, 4
    src = np.array([[a, b_, a]])
    tgt_out = np.array([[a, b_, a, EOS]])
    w = np.zeros((1, 1, 1, 4, 3))
    w[0, 0, 0, 0] = [0.5, 0.2, 0.3]  # a: 0.8 on the two a's
    w[0, 0, 0, 1] = [0.1, 0.6, 0.3]  # b: 0.6
    w[0, 0, 0, 2] = [0.0, 1.0, 0.0]  # a: 0.0
    w[0, 0, 0, 3] = [1.0, 0.0, 0.0]  # <eos>: not counted
    (role,) = roles_from_maps({"cross": w}, src, np.array([[BOS, a, b_, a]]), tgt_out)
    assert role.alignment == pytest.approx((0.8 + 0.6 + 0.0) / 3, abs=1e-15)


def _loop_score(model, batch, gates):
    """Loss by gathering log-probs in a loop, exact match by greedy decoding that recomputes the whole prefix."""
    with torch.no_grad():
        lp = model(batch.src, batch.tgt_in, head_gates=gates).log_probs.double()
        nll, count, exact = 0.0, 0, 0
        for b in range(batch.src.shape[0]):
            labels = [int(x) for x in batch.tgt_out[b] if int(x) != PAD]
            for t, y in enumerate(labels):
                nll -= float(lp[b, t, y])
                count += 1
            prefix = [BOS]
            while len(prefix) <= len(labels) + 1 and (len(prefix) == 1 or prefix[-1] != EOS):
                out = model(batch.src[b : b + 1], torch.tensor([prefix]), head_gates=gates).log_probs
                prefix.append(int(out[0, -1].argmax()))
            exact += int(prefix[1 : len(labels) + 1] == labels)
    return nll / count, exact / batch.src.shape[0]


@pytest.mark.parametrize("task_name", ["copy", "reverse", "sort"])
def test_importance_equals_separately_gated_model_calls(tiny_models, task_name):
    model, task = tiny_models[task_name]
    calls = []
    report = head_importance(model, task, n=N, seed=SEED, progress=lambda d, t: calls.append((d, t)))
    batch = probe_sequences(task, N, SEED)
    base_loss, base_exact = _loop_score(model, batch, None)
    assert report.baseline.loss == pytest.approx(base_loss, rel=1e-5)
    assert report.baseline.exact_match == base_exact
    cfg = model.config
    expected_heads = [
        (k, layer, h)
        for k, n_layers in (
            ("encoder_self", cfg.n_encoder_layers),
            ("decoder_self", cfg.n_decoder_layers),
            ("cross", cfg.n_decoder_layers),
        )
        for layer in range(n_layers)
        for h in range(cfg.n_heads)
    ]
    assert [(r.kind, r.layer, r.head) for r in report.heads] == expected_heads
    moved = 0
    for r in report.heads:
        n_layers = cfg.n_encoder_layers if r.kind == "encoder_self" else cfg.n_decoder_layers
        gate = np.ones((n_layers, cfg.n_heads))
        gate[r.layer, r.head] = 0.0
        loss, exact = _loop_score(model, batch, HeadGates.from_numpy({r.kind: gate}))
        assert r.delta_loss == pytest.approx(loss - base_loss, abs=1e-5)
        assert r.delta_exact_match == pytest.approx(exact - base_exact, abs=1e-12)
        moved += abs(r.delta_loss) > 1e-4
    assert moved > 0
    assert calls[-1] == (len(expected_heads) + 1, len(expected_heads) + 1)


def test_importance_stops_at_the_report_that_raises_stop(tiny_models):
    from core_model.stopping import Stop

    model, task = tiny_models["copy"]
    asked = []

    def progress(done: int, total: int) -> None:
        asked.append(done)
        if done == 3:
            raise Stop

    with pytest.raises(Stop):
        head_importance(model, task, n=4, seed=0, progress=progress)
    assert asked == [1, 2, 3]  # no head was ablated after the report that asked to stop


def test_single_head_gates_switch_off_one_head_only(tiny_models):
    model, _ = tiny_models["copy"]
    gates = single_head_gates(model, "cross", 0, 1)
    assert gates.encoder_self is None and gates.decoder_self is None
    assert gates.cross.tolist() == [[1.0, 0.0]]


def test_a_focused_head_on_no_named_pattern_is_other_not_broad():
    """Rows that each put all weight on one key two places away (no self, prev, first or <eos> pattern): the
    entropy is 0 and every named pattern scores 0 too, so "broad" won the tie-break while describing a sharp map.
    Uniform rows stay broad."""
    from core_model.head_roles import roles_from_maps
    from core_model.vocab import BOS, EOS

    t = 8
    sharp = np.zeros((1, 1, 1, t, t))
    for q in range(t):
        sharp[0, 0, 0, q, q - 2 if q >= 3 else q + 2] = 1.0
    uniform = np.full((1, 1, 1, t, t), 1.0 / t)
    src = np.array([[BOS, 3, 4, 5, 6, 7, 8, EOS]])
    for maps, role in ((sharp, "other"), (uniform, "broad")):
        (found,) = roles_from_maps({"encoder_self": maps}, src, src, src)
        assert found.role == role and found.score == dict(found.scores)["broad"]


def test_an_other_head_is_shown_without_a_fit_anywhere_the_app_names_roles(qtbot):
    """Its number is its broad score, low because its rows are sharp: shown as a fit it read as a poor one (the
    Circuits list called such a head "unclear")."""
    from core_model.head_roles import HeadRole
    from visualizer.widgets.causal.effect_tables import role_line
    from visualizer.widgets.circuits.head_list import role_text
    from visualizer.widgets.heads.badges import badge_text

    scores = (("self", 0.1), ("previous", 0.05), ("first", 0.08), ("eos_pad", 0.0), ("broad", 0.31))
    other = HeadRole("encoder_self", 0, 2, "other", 0.31, scores)
    assert badge_text(other) == "other"
    assert role_line(other) == "other (no named pattern)"
    assert role_text(other)[0] == "other (no named pattern)" and "Focused" in role_text(other)[1]
    sharp = HeadRole("cross", 1, 0, "alignment", 0.93, (("alignment", 0.93), ("first", 0.01), ("broad", 0.1)))
    assert badge_text(sharp) == "reads 0.93" and role_line(sharp) == "reads fit 0.93"
