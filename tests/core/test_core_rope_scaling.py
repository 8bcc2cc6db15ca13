"""RoPE length extension (issue 18): position interpolation and NTK-aware scaling against the formulas."""

from __future__ import annotations

import math

import pytest
import torch

from core_model.config import ModelConfig
from core_model.model import build_model
from core_model.positional import rope_angles
from core_model.rope_scaling import RopeScaling, ntk_base, rope_scaled, scaled_rope_angles


def _angles_by_hand(n: int, d: int, base: float, position_scale: float) -> torch.Tensor:
    """theta_i = base^(-2i/d); angle = m * position_scale * theta_i, one float at a time."""
    rows = [[m * position_scale * base ** (-(2 * i) / d) for i in range(d // 2)] for m in range(n)]
    return torch.tensor(rows, dtype=torch.float64)


@pytest.mark.parametrize(("train", "evaluated"), [(10, 20), (12, 24), (8, 30)])
@pytest.mark.parametrize("d", [4, 8, 16])
def test_position_interpolation_multiplies_positions_by_train_over_eval(train, evaluated, d):
    got = scaled_rope_angles(40, d, 10000.0, RopeScaling("pi", train, evaluated))
    assert (got - _angles_by_hand(40, d, 10000.0, train / evaluated)).abs().max() < 1e-12


@pytest.mark.parametrize(("train", "evaluated"), [(10, 20), (12, 24), (8, 30)])
@pytest.mark.parametrize("d", [4, 8, 16])
def test_ntk_enlarges_the_base_by_s_to_the_d_over_d_minus_2(train, evaluated, d):
    s = evaluated / train
    base = 10000.0 * s ** (d / (d - 2))
    assert math.isclose(ntk_base(10000.0, d, s), base, rel_tol=1e-14)
    got = scaled_rope_angles(40, d, 10000.0, RopeScaling("ntk", train, evaluated))
    assert (got - _angles_by_hand(40, d, base, 1.0)).abs().max() < 1e-12
    slowest = 10000.0 ** (-(d - 2) / d)
    assert abs(got[1, -1].item() - slowest / s) < 1e-15  # the slowest pair is interpolated by exactly s
    assert got[1, 0].item() == 1.0  # the fastest pair is untouched


@pytest.mark.parametrize("kind", ["none", "pi", "ntk"])
def test_no_change_within_the_trained_range_or_without_a_recipe(kind):
    trained = rope_angles(30, 8, 500.0)
    assert torch.equal(scaled_rope_angles(30, 8, 500.0, RopeScaling(kind, 12, 12)), trained)
    assert torch.equal(scaled_rope_angles(30, 8, 500.0, RopeScaling(kind, 12, 5)), trained)
    assert torch.equal(scaled_rope_angles(30, 8, 500.0, RopeScaling("none", 12, 24)), trained)


def test_bad_scaling_names_the_field():
    with pytest.raises(ValueError, match="rope scaling"):
        RopeScaling("yarn", 10, 20)
    with pytest.raises(ValueError, match="train_len"):
        RopeScaling("pi", 0, 20)


def _batch():
    g = torch.Generator().manual_seed(0)
    return torch.randint(3, 13, (3, 9), generator=g), torch.randint(3, 13, (3, 8), generator=g)


def test_context_manager_swaps_the_tables_and_restores_them_even_on_error():
    config = ModelConfig(d_model=16, n_heads=2, d_ff=32, max_len=40)
    model = build_model(config, seed=0).double().eval()
    src, tgt = _batch()
    before = model(src, tgt).log_probs
    cos, sin = model.rope.cos.clone(), model.rope.sin.clone()
    scaling = RopeScaling("pi", 4, 8)
    with rope_scaled(model, scaling):
        expected = _angles_by_hand(40, 8, config.pe_base, 0.5)
        assert (model.rope.cos - torch.cos(expected)).abs().max() < 1e-12
        assert (model.rope.sin - torch.sin(expected)).abs().max() < 1e-12
        assert (model(src, tgt).log_probs - before).abs().max() > 1e-6  # the positions really changed
    assert torch.equal(model.rope.cos, cos) and torch.equal(model.rope.sin, sin)
    with pytest.raises(RuntimeError, match="boom"), rope_scaled(model, RopeScaling("ntk", 4, 8)):
        raise RuntimeError("boom")
    assert torch.equal(model.rope.cos, cos) and torch.equal(model.rope.sin, sin)
    assert torch.equal(model(src, tgt).log_probs, before)


def test_rope_scaling_refuses_a_sinusoidal_model():
    model = build_model(ModelConfig(d_model=16, n_heads=2, d_ff=32, positional="sinusoidal"))
    with pytest.raises(ValueError, match="needs a RoPE model"), rope_scaled(model, RopeScaling("pi", 4, 8)):
        pass
