"""The length lab's core: curves equal evaluate_lengths, RoPE scaling per length, probes equal the step-by-step
decoder, and "train both now" trains a RoPE and a sinusoidal model on the same batches."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from core_model import ModelConfig, build_model
from core_model.decoding import DecodeSession
from core_model.lab_training import train_pair
from core_model.length_curves import length_curve, rope_length_scaling
from core_model.length_eval import evaluate_lengths
from core_model.length_probe import probe_source, run_probe
from core_model.rope_scaling import RopeScaling, scaled_rope_angles
from core_model.stopping import Stop
from core_model.tasks import TaskSpec

TASK = TaskSpec("copy", n_symbols=5, min_len=1, max_len=4)
SMALL = ModelConfig(vocab_size=8, d_model=16, n_heads=2, d_ff=32, max_len=24)


@pytest.fixture(scope="module")
def trained():
    """A RoPE copy model trained a little: neither always right nor always wrong."""
    from core_model.training import TrainConfig, Trainer

    torch.set_num_threads(1)
    model = build_model(SMALL, seed=0)
    for _ in Trainer(model, TASK, TrainConfig(steps=120, batch_size=32, lr=5e-3, device="cpu")).train_steps():
        pass
    return model.eval()


@pytest.mark.parametrize("scaling", ["none", "pi", "ntk"])
def test_curve_equals_one_evaluate_lengths_call(trained, scaling):
    lengths = list(range(1, 9))
    seen = []
    curve = length_curve(trained, TASK, lengths, n=40, seed=7, scaling=scaling, progress=seen.append)
    hook = rope_length_scaling(trained, scaling, TASK.max_len)
    sweep = evaluate_lengths(trained, TASK, lengths, n=40, seed=7, position_scaling=hook)
    assert curve == tuple(sweep.per_length.values()) == tuple(seen)
    assert 0 < sum(p.exact_match for p in curve) < len(lengths)  # informative numbers, not all 0 or all 1


def test_scaling_changes_only_lengths_past_training_and_restores_the_tables(trained):
    cos = trained.rope.cos.clone()
    plain = length_curve(trained, TASK, range(1, 9), n=40, seed=3)
    pi = length_curve(trained, TASK, range(1, 9), n=40, seed=3, scaling="pi")
    assert plain[:4] == pi[:4]  # within the trained lengths the recipe changes nothing
    assert plain[4:] != pi[4:]
    assert torch.equal(trained.rope.cos, cos)


def test_hook_stretches_each_length_by_its_own_ratio(trained):
    hook = rope_length_scaling(trained, "ntk", 4)
    with hook(trained, 10):
        want = scaled_rope_angles(SMALL.max_len, SMALL.head_dim, SMALL.pe_base, RopeScaling("ntk", 4, 10))
        assert (trained.rope.cos - torch.cos(want)).abs().max() < 1e-12


def test_scaling_refuses_sinusoidal_models_and_unknown_recipes():
    sinusoidal = build_model(dataclasses.replace(SMALL, positional="sinusoidal"))
    with pytest.raises(ValueError, match="needs a RoPE model"):
        length_curve(sinusoidal, TASK, [5], n=2, seed=0, scaling="pi")
    with pytest.raises(ValueError, match="rope scaling must be one of"):
        rope_length_scaling(sinusoidal, "yarn", 4)


def test_curve_stops_at_the_report_that_raises_stop(trained):
    calls, batches = [], []

    def progress(point) -> None:
        calls.append(point.length)
        if len(calls) == 3:
            raise Stop

    with pytest.raises(Stop):
        length_curve(
            trained, TASK, range(1, 9), n=10, seed=0, progress=progress, batches=lambda _d, t: batches.append(t)
        )
    assert calls == [1, 2, 3] and batches == [10, 10, 10]  # no length was evaluated after the one that asked to stop


@pytest.mark.parametrize("anchored", [False, True])
@pytest.mark.parametrize("kind", ["random", "repeated"])
def test_probe_equals_the_step_by_step_decoder(trained, kind, anchored):
    model = trained.double() if not anchored else build_model(SMALL, seed=1).double().eval()
    task = dataclasses.replace(TASK, anchored=anchored)
    source = probe_source(task, 6, seed=2, kind=kind)
    assert source == probe_source(task, 6, seed=2, kind=kind) and len(source) == 6
    assert (set(source) == {3}) == (kind == "repeated")
    probe = run_probe(model, task, source)
    session = DecodeSession(model, torch.tensor([task.source_ids(source)]), max_new_tokens=7)
    session.run()
    assert list(probe.output) == session.output
    assert probe.encoder_input == tuple(task.source_ids(source))
    assert probe.correct == (session.output == [*source, 2])
    for layer in range(SMALL.n_decoder_layers):
        assert abs(probe.cross[layer] - session.cross_matrix(layer).double().numpy()).max() < 1e-6
    trained.float()


def test_train_pair_trains_rope_and_sinusoidal_on_the_same_recipe():
    reports = []
    base = dataclasses.replace(SMALL, max_len=16)
    pair = train_pair(TASK, steps=20, seed=4, progress=reports.append, batch_size=8, base=base)
    assert [c.config.positional for c in pair] == ["rope", "sinusoidal"]
    assert all(c.task == TASK for c in pair)
    assert [r.done for r in reports] == [10, 20, 30, 40] and reports[-1].total == 40
    fresh = build_model(dataclasses.replace(base, vocab_size=TASK.vocab_size), seed=4).state_dict()
    assert any(not torch.equal(fresh[k], pair[0].state_dict[k]) for k in fresh)  # it did train
    pair[1].build()  # loads strictly
    steps = []

    def stop_at_first(report) -> None:
        steps.append(report.done)
        raise Stop

    with pytest.raises(Stop):
        train_pair(TASK, steps=20, seed=4, progress=stop_at_first, batch_size=8, base=base)
    assert steps == [10]  # stopped at its first report: no second model was trained
