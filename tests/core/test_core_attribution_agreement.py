"""Rank and top-1 agreement between attribution and attention, against formulas written out here."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from core_model import BOS, EOS, ModelConfig, build_model
from core_model.attention_views import rollout
from core_model.attribution import Attribution, attribute
from core_model.attribution_agreement import (
    METHODS,
    agreement,
    attention_views,
    same_top,
    spearman,
    top1_agreement,
)

SRC, OUTPUT, SYMBOLS = [BOS, 3, 5, 4, 7, EOS], [3, 5, 4, 7, EOS], [3, 4, 5, 6, 7]


def loop_ranks(values):
    """Rank of each value: 1 + how many are smaller + half of the others equal to it."""
    return np.array([1 + sum(w < v for w in values) + (sum(w == v for w in values) - 1) / 2 for v in values])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 5), st.integers(0, 5)), min_size=2, max_size=12))
def test_spearman_is_the_correlation_of_average_ranks(pairs):
    a, b = np.array([p[0] for p in pairs], float), np.array([p[1] for p in pairs], float)
    ra, rb = loop_ranks(list(a)), loop_ranks(list(b))
    if ra.std() == 0 or rb.std() == 0:
        assert spearman(a, b) is None
    else:
        assert spearman(a, b) == pytest.approx(np.corrcoef(ra, rb)[0, 1], abs=1e-12)


def test_without_ties_it_is_the_textbook_formula():
    rng = np.random.default_rng(0)
    a, b = rng.permutation(9).astype(float), rng.permutation(9).astype(float)
    d = a - b
    assert spearman(a, b) == pytest.approx(1 - 6 * (d * d).sum() / (9 * (81 - 1)), abs=1e-12)
    assert spearman(a, a) == pytest.approx(1.0) and spearman(a, -a) == pytest.approx(-1.0)
    assert spearman(np.array([1.0]), np.array([2.0])) is None


def tiny():
    config = ModelConfig(vocab_size=8, d_model=16, n_heads=2, d_ff=32, max_len=32, n_decoder_layers=2)
    return build_model(config, seed=5).to(torch.float64).eval()


def test_the_views_are_the_models_cross_attention_and_rollout():
    model = tiny()
    views = attention_views(model, SRC, OUTPUT)
    assert list(views) == ["cross L1", "cross L2", "norm-weighted L1", "norm-weighted L2", "rollout"]
    with torch.no_grad():
        out = model(torch.tensor([SRC]), torch.tensor([[BOS, *OUTPUT[:-1]]]), return_attention=True)
    for layer in range(2):
        np.testing.assert_allclose(views[f"cross L{layer + 1}"], out.attention.cross[layer][0].mean(0), atol=1e-12)
    np.testing.assert_allclose(views["rollout"], rollout(out.attention).cross[-1][0], atol=1e-12)
    assert all(v.shape == (len(OUTPUT), len(SRC)) for v in views.values())


def test_agreement_ranks_magnitudes_over_the_symbol_positions():
    model = tiny()
    result = attribute(model, SRC, OUTPUT, SYMBOLS, ig_steps=4)
    views = attention_views(model, SRC, OUTPUT)
    table = agreement(result, views, [1, 2, 3, 4])
    assert list(table) == list(METHODS) and list(table["occlusion"]) == list(views)
    for method in METHODS:
        for name, view in views.items():
            for i, rho in enumerate(table[method][name]):
                scores, attention = np.abs(getattr(result, method)[i, 1:5]), view[i, 1:5]
                ra, rb = loop_ranks(list(scores)), loop_ranks(list(attention))
                assert rho == pytest.approx(np.corrcoef(ra, rb)[0, 1], abs=1e-12), (method, name, i)


def loop_top(a, b):
    """Whether the one largest value of a and of b sit at the same index; None for a short row or a shared maximum."""
    if len(a) < 2:
        return None
    tops = []
    for values in (a, b):
        best = max(values)
        hits = [j for j, v in enumerate(values) if v == best]
        tops.append(hits[0] if len(hits) == 1 else None)
    return None if None in tops else tops[0] == tops[1]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 3)), min_size=0, max_size=8))
def test_same_top_is_the_loop_over_maxima(pairs):
    a, b = np.array([p[0] for p in pairs], float), np.array([p[1] for p in pairs], float)
    assert same_top(a, b) == loop_top(list(a), list(b))


def attribution_of(rows: list[list[float]]) -> Attribution:
    """One matrix for all three methods, so each method's answer is the same and known."""
    m = np.array(rows, np.float64)
    zeros = np.zeros(len(rows))
    return Attribution((3,) * len(rows), m, m.copy(), m.copy(), 4, zeros, zeros)


def test_top1_by_magnitude_with_ties_and_short_rows_as_none():
    attribution = attribution_of(
        [
            [0.0, 0.1, -0.9, 0.2, 0.0],  # |-0.9| is the top: symbol 2, attended most: True
            [0.0, 0.8, 0.1, 0.2, 0.0],  # top symbol 1, attention's top symbol 3: False
            [0.0, -0.5, 0.5, 0.1, 0.0],  # |-0.5| ties 0.5: None
            [0.0, 0.1, 0.2, 0.7, 0.0],  # attention all equal: None
            [0.0, 0.0, 0.0, 0.0, 0.0],  # attribution all equal (saturated to 0): None
        ]
    )
    attention = np.array(
        [
            [0.9, 0.0, 0.6, 0.1, 0.9],  # <bos> and <eos> outside the symbols never count
            [0.0, 0.1, 0.2, 0.7, 0.0],
            [0.0, 0.1, 0.8, 0.1, 0.0],
            [0.1, 0.3, 0.3, 0.3, 0.0],
            [0.0, 0.1, 0.8, 0.1, 0.0],
        ]
    )
    table = top1_agreement(attribution, {"view": attention}, [1, 2, 3])
    assert list(table) == list(METHODS)
    for method in METHODS:
        assert table[method]["view"] == [True, False, None, None, None]
    assert top1_agreement(attribution, {"view": attention}, [2])["occlusion"]["view"] == [None] * 5


def test_top1_agreement_on_a_model_is_the_loop_over_the_symbol_positions():
    model = tiny()
    result = attribute(model, SRC, OUTPUT, SYMBOLS, ig_steps=4)
    views = attention_views(model, SRC, OUTPUT)
    table = top1_agreement(result, views, [1, 2, 3, 4])
    assert list(table) == list(METHODS) and list(table["occlusion"]) == list(views)
    for method in METHODS:
        for name, view in views.items():
            expected = [
                loop_top(list(np.abs(getattr(result, method)[i, 1:5])), list(view[i, 1:5])) for i in range(len(OUTPUT))
            ]
            assert table[method][name] == expected, (method, name)
            assert any(v is not None for v in table[method][name]), (method, name)
