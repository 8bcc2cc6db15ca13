"""Scaled dot-product and multi-head attention against PyTorch's reference implementations, in float64."""

from __future__ import annotations

import copy
import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from core_model import (
    PAD,
    MultiHeadAttention,
    attention,
    attention_scores,
    causal_mask,
    combine,
    fast_attention,
    padding_mask,
    window_mask,
)

REF = 1e-10  # against PyTorch's implementations (expected ~1e-15)
EXACT = 1e-12
B, H, TQ, TK, D = 2, 3, 5, 7, 8
KEYS = torch.tensor([[4, 5, 6, 7, 8, 9, 10], [4, 5, 6, 7, 8, 9, PAD]])  # second sequence: one pad key at the end


def qkv(seed: int = 0, tq: int = TQ, tk: int = TK, requires_grad: bool = False) -> list[torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    shapes = [(B, H, tq, D), (B, H, tk, D), (B, H, tk, D)]
    return [torch.randn(s, generator=gen, dtype=torch.float64).requires_grad_(requires_grad) for s in shapes]


MASKS = {
    "none": None,
    "padding": padding_mask(KEYS),
    "causal": causal_mask(TQ, TK, q_offset=2),
    "window": window_mask(TQ, TK, 3, q_offset=2),
    "combined": combine(padding_mask(KEYS), causal_mask(TQ, TK, q_offset=2), window_mask(TQ, TK, 3, q_offset=2)),
}


@pytest.mark.parametrize("name", list(MASKS))
def test_attention_equals_sdpa(name):
    mask = MASKS[name]
    if mask is not None:
        assert mask.expand(B, H, TQ, TK).any(-1).all()  # no fully masked row: SDPA would give NaN there
    q, k, v = qkv()
    result = attention(q, k, v, mask)
    out, weights = result.output, result.weights
    expected = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    assert (out - expected).abs().max() <= REF
    assert weights.shape == (B, H, TQ, TK)
    assert (fast_attention(q, k, v, mask) - out).abs().max() <= REF


@pytest.mark.parametrize("name", list(MASKS))
def test_weights_are_softmax_of_scaled_scores(name):
    mask = MASKS[name]
    q, k, v = qkv(1)
    scores = attention_scores(q, k, mask)
    raw = torch.einsum("bhqd,bhkd->bhqk", q, k) / math.sqrt(D)
    visible = torch.ones(B, H, TQ, TK, dtype=torch.bool) if mask is None else mask.expand(B, H, TQ, TK)
    assert (scores[visible] - raw[visible]).abs().max() <= EXACT
    assert torch.isneginf(scores[~visible]).all()
    weights = attention(q, k, v, mask).weights
    expected = torch.softmax(raw.masked_fill(~visible, float("-inf")), dim=-1)
    assert (weights - expected).abs().max() <= EXACT


def test_fully_masked_row_gives_zeros_and_finite_gradients():
    mask = torch.ones(B, 1, TQ, TK, dtype=torch.bool)
    mask[1, 0, 2] = False  # query 2 of the second sequence sees nothing
    for path in ("plain", "fast"):
        q, k, v = qkv(2, requires_grad=True)
        out = attention(q, k, v, mask).output if path == "plain" else fast_attention(q, k, v, mask)
        assert torch.isfinite(out).all(), path
        assert torch.equal(out[1, :, 2], torch.zeros(H, D)), path
        (out * torch.randn_like(out)).sum().backward()
        for t in (q, k, v):
            assert torch.isfinite(t.grad).all(), path
        assert torch.equal(q.grad[1, :, 2], torch.zeros(H, D, dtype=torch.float64)), path
    weights = attention(*qkv(2), mask).weights
    assert torch.equal(weights[1, :, 2], torch.zeros(H, TK, dtype=torch.float64))


@settings(max_examples=30, deadline=None)
@given(
    tq=st.integers(1, 6),
    tk=st.integers(1, 6),
    seed=st.integers(0, 2**16),
    keep=st.floats(0.0, 1.0),
)
def test_rows_sum_to_one_over_visible_keys(tq, tk, seed, keep):
    gen = torch.Generator().manual_seed(seed)
    mask = torch.rand(B, 1, tq, tk, generator=gen) < keep  # any pattern, fully masked rows included
    q, k, v = qkv(seed, tq, tk)
    result = attention(q, k, v, mask)
    out, weights = result.output, result.weights
    visible = mask.expand_as(weights)
    assert torch.isfinite(weights).all() and torch.isfinite(out).all()
    assert (weights[~visible] == 0).all()
    row_sums = weights.sum(-1)
    has_key = visible.any(-1)
    if has_key.any():
        assert (row_sums[has_key] - 1).abs().max() <= EXACT
    assert (row_sums[~has_key] == 0).all()
    assert (fast_attention(q, k, v, mask) - out).abs().max() <= REF


# --- MultiHeadAttention -----------------------------------------------------------------------------------------

DM, NH = 16, 4


def twin_modules(seed: int = 0) -> tuple[MultiHeadAttention, nn.MultiheadAttention]:
    """Our module and torch's, holding the same weights (torch's out_proj bias zeroed: ours has none)."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        ours = MultiHeadAttention(DM, NH).double().eval()
        for proj in (ours.q_proj, ours.k_proj, ours.v_proj):
            nn.init.normal_(proj.bias)  # non-zero biases, so a mix-up of q/k/v biases would show
        theirs = nn.MultiheadAttention(DM, NH, batch_first=True, dtype=torch.float64).eval()
    with torch.no_grad():
        theirs.in_proj_weight.copy_(torch.cat([ours.q_proj.weight, ours.k_proj.weight, ours.v_proj.weight]))
        theirs.in_proj_bias.copy_(torch.cat([ours.q_proj.bias, ours.k_proj.bias, ours.v_proj.bias]))
        theirs.out_proj.weight.copy_(ours.out_proj.weight)
        theirs.out_proj.bias.zero_()
    return ours, theirs


def inputs(tq: int = 5, tk: int = 7) -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(3)
    return (
        torch.randn(B, tq, DM, generator=gen, dtype=torch.float64),
        torch.randn(B, tk, DM, generator=gen, dtype=torch.float64),
    )


@pytest.mark.parametrize("masked", [False, True])
def test_mha_equals_torch_multihead_attention(masked):
    ours, theirs = twin_modules()
    x_q, x_kv = inputs()
    mask = padding_mask(KEYS) if masked else None
    key_padding_mask = (KEYS == PAD) if masked else None  # torch: True = ignore
    mine = ours(x_q, x_kv, mask, need_weights=True)
    out, per_head = theirs(x_q, x_kv, x_kv, key_padding_mask=key_padding_mask, average_attn_weights=False)
    assert (mine.output - out).abs().max() <= REF
    assert (mine.weights - per_head).abs().max() <= REF
    _, averaged = theirs(x_q, x_kv, x_kv, key_padding_mask=key_padding_mask)
    assert (mine.weights.mean(1) - averaged).abs().max() <= REF
    fast = ours(x_q, x_kv, mask)
    assert fast.weights is None and (fast.output - out).abs().max() <= REF


def test_mha_self_attention_with_causal_mask_equals_torch():
    ours, theirs = twin_modules(1)
    x, _ = inputs(6, 6)
    mine = ours(x, x, causal_mask(6), need_weights=True)
    out, per_head = theirs(x, x, x, attn_mask=~causal_mask(6), average_attn_weights=False)  # torch: True = blocked
    assert (mine.output - out).abs().max() <= REF
    assert (mine.weights - per_head).abs().max() <= REF


def test_need_weights_does_not_change_output():
    ours, _ = twin_modules(2)
    x_q, x_kv = inputs()
    mask = combine(padding_mask(KEYS), window_mask(5, 7, 2))
    plain = ours(x_q, x_kv, mask, need_weights=True, need_scores=True)
    fast = ours(x_q, x_kv, mask)
    assert (plain.output - fast.output).abs().max() <= EXACT
    assert not plain.weights.requires_grad and not plain.scores.requires_grad
    assert torch.isneginf(plain.scores[~mask.expand_as(plain.scores)]).all()
    assert (torch.softmax(plain.scores, -1) - plain.weights).abs().max() <= EXACT
    k, v = fast.kv
    assert k.shape == v.shape == (B, NH, 7, DM // NH)


def test_head_gate_scales_one_head():
    ours, _ = twin_modules(3)
    x_q, x_kv = inputs()
    gate = torch.tensor([1.0, 0.0, 1.0, 1.0])
    gated = ours(x_q, x_kv, head_gate=gate).output
    assert (gated - ours(x_q, x_kv).output).abs().max() > 1e-3
    pruned = copy.deepcopy(ours)
    with torch.no_grad():
        pruned.out_proj.weight[:, DM // NH : 2 * DM // NH] = 0  # head 1's columns of the output projection
    assert (gated - pruned(x_q, x_kv).output).abs().max() <= EXACT
    assert torch.equal(ours(x_q, x_kv, head_gate=torch.ones(NH)).output, ours(x_q, x_kv).output)
    assert torch.equal(ours(x_q, x_kv, head_gate=torch.zeros(NH)).output, torch.zeros(B, 5, DM, dtype=torch.float64))


def test_past_kv_equals_full_causal_self_attention():
    ours, _ = twin_modules(4)
    x, _ = inputs(6, 6)
    full = ours(x, x, causal_mask(6), need_weights=True)
    past = None
    for t in range(6):
        step = ours(
            x[:, t : t + 1],
            x[:, t : t + 1],
            causal_mask(1, t + 1, q_offset=t),
            q_pos=t,
            past_kv=past,
            need_weights=True,
        )
        past = step.kv
        assert (step.output[:, 0] - full.output[:, t]).abs().max() <= EXACT
        assert (step.weights[:, :, 0] - full.weights[:, :, t, : t + 1]).abs().max() <= EXACT
    assert past[0].shape == (B, NH, 6, DM // NH)


@pytest.mark.parametrize("name", list(MASKS))
def test_attention_returns_scores_and_weights_before_dropout(name):
    mask = MASKS[name]
    q, k, v = qkv(5)
    raw = torch.einsum("bhqd,bhkd->bhqk", q, k) / math.sqrt(D)
    visible = torch.ones(B, H, TQ, TK, dtype=torch.bool) if mask is None else mask.expand(B, H, TQ, TK)
    expected_scores = raw.masked_fill(~visible, float("-inf"))
    expected_weights = torch.softmax(expected_scores, dim=-1)
    result = attention(q, k, v, mask)
    assert torch.equal(torch.isneginf(result.scores), ~visible)
    assert (result.scores[visible] - raw[visible]).abs().max() <= EXACT
    torch.manual_seed(11)
    keep = F.dropout(torch.ones(B, H, TQ, TK, dtype=torch.float64), 0.5)  # 0 or 1/(1-p): the mask drawn below
    torch.manual_seed(11)
    dropped = attention(q, k, v, mask, dropout_p=0.5)
    assert (dropped.weights - expected_weights).abs().max() <= EXACT  # weights shown are before dropout
    expected_out = torch.einsum("bhqk,bhkd->bhqd", expected_weights * keep, v)
    assert (dropped.output - expected_out).abs().max() <= EXACT
    assert (keep == 0).any() and (dropped.output - result.output).abs().max() > 1e-3  # dropout did act


def test_attention_without_dropout_draws_no_random_numbers():
    torch.manual_seed(3)
    attention(*qkv(6), dropout_p=0.0)
    after = torch.rand(4)
    torch.manual_seed(3)
    assert torch.equal(after, torch.rand(4))
