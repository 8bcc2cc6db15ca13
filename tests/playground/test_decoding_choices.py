"""Every decoder chooses among the task symbols and <eos> only, and scores exactly what a teacher-forced pass gives.

The reference here is one full forward pass (no cache) of <bos> + the tokens in float64, summed in plain Python:
the model's log-probabilities over its whole vocabulary, as the decoders report them.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

from core_model import BOS, EOS, PAD, MaskSpec, ModelConfig, build_model
from core_model.beam_search import beam_search
from core_model.checkpoint import load_checkpoint
from core_model.decoding import DecodeSession, greedy_decode
from core_model.sampling import SamplingConfig, sample_decode

CKPT = Path(__file__).resolve().parents[2] / "resources" / "copy_rope.pt"
EXACT = 1e-12
NEVER = {PAD, BOS}


def teacher_forced(model, src, tokens) -> list[float]:
    """log p(token_i | <bos>, token_<i) for each token, from one uncached float64 pass."""
    tgt = torch.tensor([[BOS, *tokens[:-1]]])
    with torch.no_grad():
        lp = model(src, tgt, MaskSpec()).log_probs[0].double()
    return [float(lp[i, t]) for i, t in enumerate(tokens)]


def shipped():
    ckpt = load_checkpoint(CKPT)
    vocab = ckpt.task.vocabulary
    return ckpt.build("cpu").double().eval(), torch.tensor([ckpt.task.source_ids(vocab.encode("3141"))])


def leaning_to(ids, vocab: int = 8, seed: int = 0):
    """An untrained float64 model whose generator bias favours `ids`: on its own it would emit them."""
    model = build_model(ModelConfig(vocab_size=vocab, d_model=16, n_heads=2, d_ff=32, max_len=12), seed=seed)
    with torch.no_grad():
        model.generator.bias[list(ids)] += 4.0
    return model.double().eval()


def greedy_row(model, src, n_tokens=None) -> tuple[int, ...]:
    out = greedy_decode(model, src, 100) if n_tokens is None else greedy_decode(model, src, 100, n_tokens=n_tokens)
    row = out[0].tolist()
    return tuple(row[: row.index(EOS) + 1] if EOS in row else row)


def test_hot_samples_never_hold_pad_or_bos_and_score_their_teacher_forced_pass():
    model, src = shipped()
    generator, config = torch.Generator().manual_seed(6), SamplingConfig(temperature=5.0)
    hyps = [h for _ in range(2) for h in sample_decode(model, src, 200, config, generator, max_new_tokens=5)]
    assert len({h.tokens for h in hyps}) > 50  # hot enough to reach far from the copy
    assert [h.tokens for h in hyps if NEVER & set(h.tokens)] == []
    for hyp in hyps:
        want = teacher_forced(model, src, hyp.tokens)
        assert hyp.token_log_probs == pytest.approx(want, abs=EXACT, rel=0)
        assert abs(hyp.log_prob - math.fsum(want)) <= EXACT


def test_top_k_and_top_p_draw_among_symbols_and_eos_only():
    model = leaning_to(NEVER)
    src = torch.tensor([[3, 4, 5]])
    for config in (SamplingConfig(2.0, top_k=3), SamplingConfig(1.0, top_p=0.9), SamplingConfig(0.5)):
        for hyp in sample_decode(model, src, 50, config, torch.Generator().manual_seed(1)):
            assert hyp.tokens and not NEVER & set(hyp.tokens)
            assert abs(hyp.log_prob - math.fsum(teacher_forced(model, src, hyp.tokens))) <= EXACT


def test_greedy_the_stepper_and_beam_width_one_skip_pad_and_bos():
    model = leaning_to(NEVER)
    src = torch.tensor([[3, 4, 5, 6]])
    with torch.no_grad():  # the model itself prefers a special at the first step
        first = model(src, torch.tensor([[BOS]])).log_probs[0, 0]
    assert int(first.argmax()) in NEVER
    want = int(max(range(2, 8), key=lambda i: float(first[i])))  # written out: the best of <eos> and the symbols
    greedy = greedy_row(model, src)
    assert greedy[0] == want and not NEVER & set(greedy)
    session = DecodeSession(model, src)
    session.run()
    assert tuple(session.output) == greedy
    assert not NEVER & {i for i, _ in DecodeSession(model, src).peek().top_k(100)}
    assert beam_search(model, src, 1).best.tokens == greedy


@pytest.mark.parametrize("width", [2, 4, 7])
def test_every_beam_hypothesis_and_node_avoids_pad_and_bos_and_scores_its_teacher_forced_pass(width):
    model = leaning_to(NEVER, seed=3)
    src = torch.tensor([[5, 3, 7, 4]])
    result = beam_search(model, src, width)
    assert result.nodes and not NEVER & {n.token for n in result.nodes}
    for step in {n.step for n in result.nodes}:  # at most the 6 choices of each expanded hypothesis
        parents = {n.parent for n in result.nodes if n.step == step}
        assert len([n for n in result.nodes if n.step == step]) <= len(parents) * 6
    for hyp in result.hypotheses:
        want = teacher_forced(model, src, hyp.tokens)
        assert hyp.token_log_probs == pytest.approx(want, abs=EXACT, rel=0)
        assert abs(hyp.log_prob - math.fsum(want)) <= EXACT


def test_a_model_with_spare_ids_never_emits_them_given_the_tasks_vocabulary_size():
    """A model may have more ids than its task (the CLI trains vocab_size 13 for 5 symbols): they are never chosen."""
    n_tokens = 8  # <pad> <bos> <eos> and 5 symbols
    spare = set(range(n_tokens, 13))
    model = leaning_to(spare, vocab=13, seed=1)
    src = torch.tensor([[3, 4, 5]])
    assert max(greedy_row(model, src)) >= n_tokens  # left alone, it would emit one
    greedy = greedy_row(model, src, n_tokens)
    assert max(greedy) < n_tokens
    session = DecodeSession(model, src, n_tokens=n_tokens)
    assert max(i for i, _ in session.peek().top_k(100, n_tokens)) < n_tokens
    session.run()
    assert tuple(session.output) == greedy
    beams = beam_search(model, src, 5, n_tokens=n_tokens)
    assert beam_search(model, src, 1, n_tokens=n_tokens).best.tokens == greedy
    assert max(n.token for n in beams.nodes) < n_tokens
    samples = sample_decode(model, src, 40, SamplingConfig(3.0), torch.Generator().manual_seed(2), n_tokens=n_tokens)
    for hyp in (*beams.hypotheses, *samples):
        assert not (spare | NEVER) & set(hyp.tokens)
        assert abs(hyp.log_prob - math.fsum(teacher_forced(model, src, hyp.tokens))) <= EXACT
