"""Painted cells in MaskSpec: the same as the equivalent built-in masks, applied per kind, with the KV cache too."""

from __future__ import annotations

import pytest
import torch

from core_model import PAD, MaskSpec, ModelConfig, build_model
from core_model.decoding import DecodeSession
from core_model.masks import painted_mask
from core_model.model import ATTENTION_KINDS

SRC = torch.tensor([[4, 7, 5, 9, 3, PAD, PAD]])
TGT = torch.tensor([[1, 4, 7, 5, 9, 3, 2]])


@pytest.fixture(params=["rope", "sinusoidal"])
def model(request):
    config = ModelConfig(d_model=16, n_heads=2, d_ff=32, max_len=32, positional=request.param)
    return build_model(config, seed=5).eval()


def run(model, masks):
    with torch.no_grad():
        return model(SRC, TGT, masks, return_attention=True)


def assert_same(a, b):
    assert torch.equal(a.log_probs, b.log_probs)
    for kind in ATTENTION_KINDS:
        for x, y in zip(a.attention.kind(kind), b.attention.kind(kind)):
            assert torch.equal(x, y), kind


def test_painting_the_future_equals_the_causal_mask(model):
    t = TGT.shape[1]
    future = {(i, j) for i in range(t) for j in range(t) if j > i}
    assert_same(run(model, MaskSpec(decoder_causal=False, decoder_painted=future)), run(model, MaskSpec()))


def test_painting_a_band_edge_equals_the_sliding_window(model):
    s = SRC.shape[1]
    far = {(i, j) for i in range(s) for j in range(s) if abs(i - j) >= 2}
    assert_same(run(model, MaskSpec(encoder_painted=far)), run(model, MaskSpec(encoder_window=2)))


def test_painting_pad_columns_equals_cross_padding(model):
    pads = {(i, j) for i in range(TGT.shape[1]) for j in (5, 6)}
    assert_same(run(model, MaskSpec(cross_padding=False, cross_painted=pads)), run(model, MaskSpec()))


def test_an_emptied_row_gets_zero_weights_and_the_others_still_sum_to_one(model):
    row = {(3, j) for j in range(SRC.shape[1])}
    maps = run(model, MaskSpec(cross_painted=row)).attention.cross
    for layer in maps:
        assert float(layer[0, :, 3].abs().sum()) == 0.0
        sums = layer[0].sum(-1)  # (H, Tq)
        assert torch.allclose(sums[:, [0, 1, 2, 4, 5, 6]], torch.ones(2, 6), atol=1e-6)


def test_painted_cells_hide_exactly_those_keys(model):
    maps = run(model, MaskSpec(encoder_painted={(0, 1), (2, 0)})).attention.encoder_self
    plain = run(model, MaskSpec()).attention.encoder_self
    assert float(maps[0][0, :, 0, 1].abs().sum()) == 0.0 and float(maps[0][0, :, 2, 0].abs().sum()) == 0.0
    assert float(plain[0][0, :, 0, 1].abs().sum()) > 0


def test_kv_cached_decoder_follows_painted_rows(model):
    """Cells are absolute positions: step t of a cached decode must see the mask rows of a full pass."""
    masks = MaskSpec(decoder_painted={(3, 1), (4, 0), (4, 2)}, cross_painted={(2, 0), (5, 4)}, decoder_padding=False)
    session = DecodeSession(model, SRC, masks)
    for token in TGT[0, 1:].tolist():
        session.step(token)
    with torch.no_grad():
        full = model(SRC, TGT, masks, return_attention=True).attention
    for layer in range(2):
        assert torch.allclose(session.decoder_self_matrix(layer), full.decoder_self[layer][0, :, :-1, :-1], atol=1e-6)
        assert torch.allclose(session.cross_matrix(layer), full.cross[layer][0, :, :-1], atol=1e-6)
    assert float(session.cross_matrix(0)[:, 2, 0].abs().sum()) == 0.0


def test_painted_mask_builder_and_offsets():
    assert painted_mask(frozenset(), 3, 3) is None
    assert painted_mask(frozenset({(9, 9)}), 3, 3) is None  # outside: ignored
    mask = painted_mask(frozenset({(4, 1), (3, 0)}), 1, 5, q_offset=4)
    assert mask.tolist() == [[True, False, True, True, True]]


def test_spec_validates_and_normalises():
    spec = MaskSpec(encoder_painted=[(1, 2), (1, 2)])
    assert spec.encoder_painted == frozenset({(1, 2)}) and hash(spec) == hash(MaskSpec(encoder_painted={(1, 2)}))
    for bad in ({(1, -1)}, {(1,)}, {(True, 0)}, "ab", 5, {(1.0, 2)}):
        with pytest.raises(ValueError, match="encoder_painted"):
            MaskSpec(encoder_painted=bad)
    with pytest.raises(ValueError, match="kind"):
        spec.painted("decoder")
    assert spec.with_painted("cross", {(0, 0)}).cross_painted == {(0, 0)}
    assert spec.with_painted("cross", {(0, 0)}).without_painting() == MaskSpec()


def test_cross_needs_the_query_count_only_when_painted():
    assert MaskSpec().cross(SRC).shape == (1, 1, 1, 7)
    with pytest.raises(ValueError, match="tq"):
        MaskSpec(cross_painted={(0, 0)}).cross(SRC)
    assert MaskSpec(cross_painted={(0, 0)}).cross(SRC, tq=2).shape == (1, 1, 2, 7)
