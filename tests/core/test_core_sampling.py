"""Sampling: the filtered distribution against one computed by hand here, seeds, top-k = 1 as greedy."""

from __future__ import annotations

import dataclasses
import math

import pytest
import torch

from core_model import BOS, EOS, MaskSpec, ModelConfig, build_model
from core_model.decoding import greedy_decode
from core_model.sampling import MAX_SAMPLES, SamplingConfig, filtered_distribution, sample_decode

EXACT = 1e-12


def tiny(seed: int = 0, **options):
    config = ModelConfig(vocab_size=9, d_model=16, n_heads=2, d_ff=32, max_len=12, **options)
    return build_model(config, seed=seed).double().eval()


def by_hand(log_probs: list[float], temperature: float, top_k: int | None, top_p: float | None) -> list[float]:
    """Temperature, top-k, top-p written out with Python lists: sort, cut, renormalise."""
    weights = [math.exp(lp / temperature) for lp in log_probs]
    total = math.fsum(weights)
    probs = [w / total for w in weights]
    order = sorted(range(len(probs)), key=lambda i: -probs[i])
    keep = order[: top_k or len(order)]
    mass = math.fsum(probs[i] for i in keep)
    probs = [probs[i] / mass if i in keep else 0.0 for i in range(len(probs))]
    if top_p is not None:
        chosen, acc = [], 0.0
        for i in keep:
            if chosen and acc >= top_p:
                break
            chosen.append(i)
            acc += probs[i]
        mass = math.fsum(probs[i] for i in chosen)
        probs = [probs[i] / mass if i in chosen else 0.0 for i in range(len(probs))]
    return probs


@pytest.mark.parametrize("temperature", [0.5, 1.0, 2.0])
@pytest.mark.parametrize("top_k", [None, 1, 3])
@pytest.mark.parametrize("top_p", [None, 0.3, 0.75, 1.0])
def test_filtered_distribution_equals_a_hand_computation(temperature, top_k, top_p):
    gen = torch.Generator().manual_seed(11)
    log_probs = torch.log_softmax(torch.randn(4, 7, generator=gen, dtype=torch.float64) * 2, dim=-1)
    got = filtered_distribution(log_probs, SamplingConfig(temperature, top_k, top_p))
    for row, probs in zip(log_probs.tolist(), got.tolist()):
        assert probs == pytest.approx(by_hand(row, temperature, top_k, top_p), abs=EXACT)


def recomputed(model, src, tokens) -> float:
    tgt = torch.tensor([[BOS, *tokens[:-1]]])
    with torch.no_grad():
        lp = model(src, tgt, MaskSpec(decoder_padding=False)).log_probs[0]
    return math.fsum(float(lp[i, t]) for i, t in enumerate(tokens))


def test_a_seed_gives_the_same_samples_and_scores_equal_a_recomputation():
    model = tiny(1)
    src = torch.tensor([[3, 5, 7, 4]])
    config = SamplingConfig(temperature=1.5, top_p=0.95)
    runs = [sample_decode(model, src, 6, config, torch.Generator().manual_seed(s)) for s in (7, 7, 8)]
    assert runs[0] == runs[1]
    assert runs[0] != runs[2]
    assert len({h.tokens for h in runs[0]}) > 1  # six draws of an untrained model differ
    for hyp in runs[0]:
        assert abs(hyp.log_prob - recomputed(model, src, hyp.tokens)) <= EXACT
        assert hyp.finished == (EOS in hyp.tokens) and EOS not in hyp.tokens[:-1]


@pytest.mark.parametrize("positional", ["sinusoidal", "rope"])
def test_top_k_one_is_greedy(positional):
    model = tiny(2, positional=positional)
    src = torch.tensor([[4, 4, 6, 3]])
    row = greedy_decode(model, src, 100)[0].tolist()
    greedy = tuple(row[: row.index(EOS) + 1] if EOS in row else row)
    for hyp in sample_decode(model, src, 3, SamplingConfig(3.0, top_k=1), torch.Generator().manual_seed(0)):
        assert hyp.tokens == greedy


def test_first_tokens_follow_the_filtered_distribution():
    model = tiny(3)
    src = torch.tensor([[3, 6]])
    config = SamplingConfig(temperature=0.8, top_k=4)
    with torch.no_grad():
        first = model(src, torch.tensor([[BOS]]), MaskSpec(decoder_padding=False)).log_probs[0, 0]
    never = (0, 1)  # <pad> and <bos>: no decoder draws them
    want = by_hand([-math.inf if i in never else lp for i, lp in enumerate(first.tolist())], 0.8, 4, None)
    generator, n = torch.Generator().manual_seed(5), 16 * MAX_SAMPLES  # the most one call draws, 16 times
    hyps = [h for _ in range(16) for h in sample_decode(model, src, MAX_SAMPLES, config, generator, max_new_tokens=1)]
    counts = [0] * len(want)
    for hyp in hyps:
        counts[hyp.tokens[0]] += 1
    for c, p in zip(counts, want):
        assert abs(c / n - p) <= 4 * math.sqrt(p * (1 - p) / n) + 1e-9  # zero where filtered out


def test_more_samples_than_one_batch_holds_are_refused_before_any_pass():
    with pytest.raises(ValueError, match=r"n_samples must be an integer in \[1, 256\], got 257"):
        sample_decode(tiny(3), torch.tensor([[3, 6]]), MAX_SAMPLES + 1, SamplingConfig(), torch.Generator())


def test_bad_configs_name_the_field():
    for kwargs, field in [
        ({"temperature": 0}, "temperature"),
        ({"top_k": 0}, "top_k"),
        ({"top_p": 1.5}, "top_p"),
        ({"top_p": 0.0}, "top_p"),
        ({"temperature": math.inf}, "temperature"),
    ]:
        with pytest.raises(ValueError, match=field):
            SamplingConfig(**kwargs)
    with pytest.raises(ValueError, match="n_samples"):
        sample_decode(tiny(), torch.tensor([[3]]), 0, SamplingConfig(), torch.Generator())
    assert dataclasses.is_dataclass(SamplingConfig())
