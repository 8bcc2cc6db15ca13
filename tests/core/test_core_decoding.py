"""Incremental decoding (KV cache) against full recomputation; greedy_decode against DecodeSession."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from core_model import BOS, EOS, PAD, MaskSpec, ModelConfig, build_model
from core_model.decoding import DecodeSession, greedy_decode
from core_model.tasks import TaskSpec
from core_model.training import TrainConfig, Trainer

EXACT = 1e-12
SRC = torch.tensor([[3, 7, 4, 9, 5, PAD]])  # one source with a trailing pad


def tiny(seed: int = 0, **options):
    config = ModelConfig(d_model=16, n_heads=2, d_ff=32, max_len=32, **options)
    return build_model(config, seed=seed).double().eval()


@pytest.fixture(scope="module")
def trained():
    """A small RoPE model that has learnt to copy well enough to stop at <eos> (about a second of training)."""
    config = ModelConfig(
        d_model=32,
        n_heads=2,
        d_ff=64,
        n_encoder_layers=1,
        n_decoder_layers=1,
        positional="rope",
        norm_position="post",
        max_len=32,
    )
    model = build_model(config, seed=0)
    task = TaskSpec("copy", n_symbols=6, min_len=2, max_len=6)
    recipe = TrainConfig(batch_size=32, steps=60, lr=1e-2, schedule="warmup_cosine", warmup_steps=10, grad_clip=1.0)
    for _ in Trainer(model, task, recipe).train_steps():
        pass
    return model.double().eval()


def walk(session: DecodeSession, n: int) -> None:
    """Step n times, forcing every third token so inputs differ from the model's own choices."""
    for i in range(n):
        if session.finished:
            break
        if i % 3 == 1:
            session.force(3 + (5 * i) % 10)
        else:
            session.step()


def full_pass(model, src, session: DecodeSession):
    tgt = torch.tensor([session.tokens[:-1]])  # the decoder inputs of every step so far
    return model(src, tgt, session.masks, return_attention=True)


@pytest.mark.parametrize("masks", [MaskSpec(), MaskSpec(decoder_window=2, encoder_window=3)], ids=["full", "window"])
@pytest.mark.parametrize("norm_position", ["pre", "post"])
@pytest.mark.parametrize("positional", ["sinusoidal", "rope"])
def test_cached_steps_equal_full_recomputation(positional, norm_position, masks):
    model = tiny(positional=positional, norm_position=norm_position)
    session = DecodeSession(model, SRC, masks)
    walk(session, 9)
    assert len(session.steps) >= 5
    full = full_pass(model, SRC, session)
    for i, record in enumerate(session.steps):
        assert record.position == i
        assert (record.log_probs - full.log_probs[0, i]).abs().max() <= EXACT
        for layer in range(2):
            self_row = full.attention.decoder_self[layer][0, :, i]
            assert (record.self_attention[layer] - self_row[:, : i + 1]).abs().max() <= EXACT
            assert (self_row[:, i + 1 :] == 0).all()
            assert (record.cross_attention[layer] - full.attention.cross[layer][0, :, i]).abs().max() <= EXACT
    for cached, recomputed in zip(session.encoder_attention, full.attention.encoder_self):
        assert (cached - recomputed).abs().max() <= EXACT
    matrix = session.decoder_self_matrix(1)
    assert matrix.shape == (2, len(session.steps), len(session.steps))
    assert (matrix - full.attention.decoder_self[1][0].float()).abs().max() <= 1e-6
    assert session.cross_matrix(0).shape == (2, len(session.steps), SRC.shape[1])


@pytest.mark.parametrize("which", ["untrained", "trained"])
def test_greedy_decode_equals_session_steps(which, trained):
    model = tiny(seed=3) if which == "untrained" else trained
    src = torch.tensor([[5, 3, 8, 6, 4]])
    session = DecodeSession(model, src, max_new_tokens=12)
    records = session.run()
    assert session.finished and [r.token for r in records] == session.output
    assert greedy_decode(model, src, 12)[0].tolist() == session.output
    if which == "trained":
        assert session.output == [5, 3, 8, 6, 4, EOS]


def test_batched_greedy_decode_equals_one_by_one(trained):
    sources = [[3, 4, 5, 6], [8, 7, 6, 5, 4, 3], [4, 8], [6, 6, 3]]
    batch = torch.tensor([s + [PAD] * (6 - len(s)) for s in sources])
    batched = greedy_decode(trained, batch, 10)
    assert (batched == EOS).any(dim=1).all()  # the model does stop, so the PAD-after-EOS rule is exercised
    for row, source in zip(batched.tolist(), sources):
        alone = greedy_decode(trained, torch.tensor([source]), 10)[0].tolist()
        end = row.index(EOS) + 1
        assert row[:end] == alone
        assert all(t == PAD for t in row[end:])


def test_back_then_step_reproduces_the_record():
    model = tiny(seed=4, positional="rope")
    session = DecodeSession(model, SRC)
    walk(session, 5)
    tokens, last_two = list(session.tokens), session.steps[-2:]
    session.back()
    session.back()
    assert session.tokens == tokens[:-2]
    for original in last_two:
        redo = session.step(original.token if original.forced else None)
        assert (redo.position, redo.token, redo.forced) == (original.position, original.token, original.forced)
        assert (redo.log_probs - original.log_probs).abs().max() <= EXACT
        for a, b in zip(redo.self_attention + redo.cross_attention, original.self_attention + original.cross_attention):
            assert (a - b).abs().max() <= EXACT
    assert session.tokens == tokens


def test_back_to_the_start_and_past_it():
    session = DecodeSession(tiny(seed=5), SRC)
    first = session.step()
    session.back()
    session.back()  # no-op at the start
    assert session.tokens == [BOS] and session.steps == []
    assert (session.step().log_probs - first.log_probs).abs().max() <= EXACT


def test_force_changes_later_steps_like_a_recompute():
    model = tiny(seed=6)
    with torch.no_grad():
        model.generator.bias[EOS] = -1e3  # an untrained model must not stop before the steps we compare
    session = DecodeSession(model, SRC)
    session.step()
    chosen = session.peek().token
    forced_token = 3 if chosen != 3 else 4
    record = session.force(forced_token)
    assert record.forced and record.token == forced_token and session.tokens[-1] == forced_token
    later = [session.step(), session.step()]
    tgt = torch.tensor([session.tokens[:-1]])
    full_log_probs = model(SRC, tgt, session.masks).log_probs[0]
    for rec in later:
        assert (rec.log_probs - full_log_probs[rec.position]).abs().max() <= EXACT
    unforced = model(SRC, torch.tensor([session.tokens[:2] + [chosen]]), session.masks).log_probs[0, 2]
    assert (unforced - later[0].log_probs).abs().max() > 1e-6  # forcing did change what came next


def test_peek_does_not_append():
    session = DecodeSession(tiny(seed=7), SRC)
    session.step()
    peeked = session.peek()
    assert session.peek() is peeked and len(session.steps) == 1
    assert session.step() is peeked and session.tokens[-1] == peeked.token


def test_force_rejects_ids_outside_the_vocabulary():
    session = DecodeSession(tiny(seed=8), SRC)
    with pytest.raises(ValueError, match="outside vocabulary of size 13"):
        session.force(13)
    assert session.tokens == [BOS]


def test_session_stops_at_eos_and_length_limit():
    session = DecodeSession(tiny(seed=9), SRC, max_new_tokens=3)
    session.run()
    assert len(session.steps) <= 3 and session.finished
    with pytest.raises(RuntimeError, match="finished"):
        session.step()
    ended = DecodeSession(tiny(seed=9), SRC)
    ended.force(EOS)
    assert ended.finished and ended.output == [EOS]
    assert DecodeSession(tiny(seed=9), SRC, max_new_tokens=1000).max_new_tokens == 31  # max_len - 1


def test_session_needs_one_source():
    with pytest.raises(ValueError, match=r"src must be \(1, S\)"):
        DecodeSession(tiny(), torch.tensor([[3, 4], [5, 6]]))


def test_session_ignores_target_padding_mask():
    session = DecodeSession(tiny(), SRC, MaskSpec(decoder_padding=True))
    assert session.masks == dataclasses.replace(MaskSpec(), decoder_padding=False)


def test_top_k():
    session = DecodeSession(tiny(seed=10), SRC)
    record = session.step()
    top = record.top_k(3)
    assert len(top) == 3 and top[0][0] == record.token
    probs = [p for _, p in top]
    assert probs == sorted(probs, reverse=True) and sum(probs) <= 1 + 1e-9
    every = record.top_k(100)
    assert len(every) == 11 and {i for i, _ in every} == set(range(2, 13))  # 13 ids but <pad>, <bos>


@pytest.mark.parametrize("positional", ["sinusoidal", "rope"])
def test_max_output_len_keeps_bos_and_output_within_max_len(positional):
    from core_model.decoding import max_output_len

    model = build_model(ModelConfig(d_model=16, n_heads=2, d_ff=32, max_len=6, positional=positional), seed=0).eval()
    assert max_output_len(model) == 6 - len([BOS])
    src = torch.tensor([[3, 4, 5]])
    out = greedy_decode(model, src, max_new_tokens=100, masks=MaskSpec())
    assert out.shape[1] <= max_output_len(model)
    session = DecodeSession(model, src, max_new_tokens=100)
    session.run()
    assert session.max_new_tokens == max_output_len(model) and len(session.tokens) <= model.config.max_len
