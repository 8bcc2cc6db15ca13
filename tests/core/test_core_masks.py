"""Mask conventions (True = may attend) for every builder and for MaskSpec per attention kind."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from core_model import PAD, MaskSpec, causal_mask, combine, padding_mask, window_mask


def brute_window(tq: int, tk: int, width: int, q_offset: int = 0) -> torch.Tensor:
    return torch.tensor([[abs(i + q_offset - j) < width for j in range(tk)] for i in range(tq)])


def test_padding_mask_marks_real_keys():
    tokens = torch.tensor([[5, 6, PAD, PAD], [7, 8, 9, 3]])
    mask = padding_mask(tokens)
    assert mask.shape == (2, 1, 1, 4) and mask.dtype == torch.bool
    assert mask[:, 0, 0].tolist() == [[True, True, False, False], [True, True, True, True]]
    assert padding_mask(tokens, pad_id=9)[1, 0, 0].tolist() == [True, True, False, True]


def test_causal_mask_is_lower_triangular():
    assert torch.equal(causal_mask(4), torch.tril(torch.ones(4, 4, dtype=torch.bool)))


def test_causal_mask_with_offset():
    mask = causal_mask(2, q_offset=3)  # queries at positions 3 and 4 over keys 0..4
    assert mask.tolist() == [[True, True, True, True, False], [True, True, True, True, True]]
    assert torch.equal(causal_mask(2, 5, q_offset=3), mask)
    assert torch.equal(causal_mask(5)[3:5], mask)


@pytest.mark.parametrize(("tq", "tk", "width", "q_offset"), [(6, 6, 1, 0), (6, 6, 2, 0), (5, 9, 3, 4), (3, 3, 10, 0)])
def test_window_mask_is_distance_below_width(tq, tk, width, q_offset):
    assert torch.equal(window_mask(tq, tk, width, q_offset=q_offset), brute_window(tq, tk, width, q_offset))


def test_window_alone_is_symmetric_band():
    mask = window_mask(9, 9, 3)
    assert torch.equal(mask, mask.T)
    assert mask[4].sum() == 2 * 3 - 1


def test_window_with_causal_keeps_exactly_width_keys():
    width = 3
    mask = combine(causal_mask(8), window_mask(8, 8, width))
    assert mask.sum(-1).tolist() == [1, 2, 3, 3, 3, 3, 3, 3]
    assert mask[5].nonzero().flatten().tolist() == [3, 4, 5]  # (i - width, i]


def test_window_width_must_be_positive():
    with pytest.raises(ValueError, match="width must be an integer >= 1"):
        window_mask(3, 3, 0)


def test_combine():
    a = causal_mask(3)
    b = window_mask(3, 3, 2)
    assert combine() is None and combine(None, None) is None
    assert combine(None, a) is a
    assert torch.equal(combine(a, None, b), a & b)
    pad = padding_mask(torch.tensor([[4, 5, PAD]]))
    both = combine(pad, a)
    assert both.shape == (1, 1, 3, 3)
    assert both[0, 0].tolist() == [[True, False, False], [True, True, False], [True, True, False]]


@settings(max_examples=40, deadline=None)
@given(
    tq=st.integers(1, 12),
    extra_keys=st.integers(0, 6),
    width=st.integers(1, 8),
    q_offset=st.integers(0, 6),
)
def test_causal_window_row_counts_property(tq, extra_keys, width, q_offset):
    tk = tq + q_offset + extra_keys
    mask = combine(causal_mask(tq, tk, q_offset=q_offset), window_mask(tq, tk, width, q_offset=q_offset))
    positions = torch.arange(tq) + q_offset
    assert mask.sum(-1).tolist() == torch.clamp(positions + 1, max=width).tolist()
    assert not mask[:, tq + q_offset :].any()  # never a key after the last query


# --- MaskSpec ---------------------------------------------------------------------------------------------------

SRC = torch.tensor([[4, 5, 6, PAD], [7, 8, 9, 10]])
TGT = torch.tensor([[1, 4, 5, PAD, PAD], [1, 7, 8, 9, 10]])


def test_default_spec():
    spec = MaskSpec()
    enc = spec.encoder_self(SRC)
    assert torch.equal(enc, padding_mask(SRC))
    dec = spec.decoder_self(TGT)
    assert dec.shape == (2, 1, 5, 5)
    assert torch.equal(dec, padding_mask(TGT) & causal_mask(5))
    assert torch.equal(spec.cross(SRC), padding_mask(SRC))


def test_spec_switched_off_gives_no_mask():
    spec = MaskSpec(encoder_padding=False, decoder_causal=False, decoder_padding=False, cross_padding=False)
    assert spec.encoder_self(SRC) is None
    assert spec.decoder_self(TGT) is None
    assert spec.cross(SRC) is None


def test_spec_windows():
    spec = MaskSpec(encoder_window=2, decoder_window=2, encoder_padding=False, decoder_padding=False)
    assert torch.equal(spec.encoder_self(SRC), window_mask(4, 4, 2))
    assert torch.equal(spec.decoder_self(TGT), causal_mask(5) & window_mask(5, 5, 2))
    with_pad = MaskSpec(encoder_window=2).encoder_self(SRC)
    assert torch.equal(with_pad, padding_mask(SRC) & window_mask(4, 4, 2))


def test_decoder_self_incremental_rows_match_full():
    spec = MaskSpec(decoder_window=3)
    full = spec.decoder_self(TGT)
    for q_offset in range(5):
        rows = spec.decoder_self(TGT, q_offset=q_offset)
        assert torch.equal(rows, full[:, :, q_offset:])


@pytest.mark.parametrize("field", ["encoder_window", "decoder_window"])
def test_spec_rejects_bad_window(field):
    with pytest.raises(ValueError, match=field):
        MaskSpec(**{field: 0})
