"""Sinusoidal PE against the paper's formula (§3.5) and RoPE's relative-position property (RoFormer)."""

from __future__ import annotations

import math

import pytest
import torch

from core_model import apply_rope, rope_angles, rope_frequencies, sinusoidal_table
from core_model.positional import RotaryEmbedding, SinusoidalEncoding

EXACT = 1e-12  # float64 math must agree to rounding error


def paper_pe(n_positions: int, d_model: int, base: float) -> torch.Tensor:
    """PE(pos, 2i) = sin(pos / base^(2i/d)), PE(pos, 2i+1) = cos(pos / base^(2i/d)), element by element."""
    table = torch.empty(n_positions, d_model, dtype=torch.float64)
    for pos in range(n_positions):
        for col in range(d_model):
            angle = pos / base ** ((col - col % 2) / d_model)
            table[pos, col] = math.sin(angle) if col % 2 == 0 else math.cos(angle)
    return table


def test_worked_example():
    row = sinusoidal_table(4, 4, base=100)[1]
    expected = torch.tensor([0.84147098, 0.54030231, 0.09983342, 0.99500417], dtype=torch.float64)
    torch.testing.assert_close(row, expected, atol=1e-8, rtol=0)


@pytest.mark.parametrize(("n", "d", "base"), [(50, 64, 10000.0), (9, 5, 10000.0), (7, 7, 100.0), (3, 1, 10.0)])
def test_table_equals_formula(n, d, base):
    table = sinusoidal_table(n, d, base)
    assert table.dtype == torch.float64 and table.shape == (n, d)
    assert (table - paper_pe(n, d, base)).abs().max() <= EXACT


def test_odd_d_model_keeps_last_sine():
    table = sinusoidal_table(6, 5, base=10000.0)
    positions = torch.arange(6, dtype=torch.float64)
    assert (table[:, 4] - torch.sin(positions / 10000.0 ** (4 / 5))).abs().max() <= EXACT
    assert (table[:, 3] - torch.cos(positions / 10000.0 ** (2 / 5))).abs().max() <= EXACT


def test_position_zero_and_dtype():
    table = sinusoidal_table(3, 8, dtype=torch.float32)
    assert table.dtype == torch.float32
    assert table[0].tolist() == [0.0, 1.0] * 4


def test_encoding_adds_table_at_offset_and_checks_length():
    enc = SinusoidalEncoding(d_model=6, max_len=10, base=10000.0)
    x = torch.randn(2, 3, 6, dtype=torch.float64)
    assert torch.equal(enc(x, offset=4), x + sinusoidal_table(10, 6)[4:7])
    with pytest.raises(ValueError, match="exceeds max_len 10"):
        enc(x, offset=8)


# --- RoPE -------------------------------------------------------------------------------------------------------


def test_rope_frequencies_and_angles():
    theta = rope_frequencies(8, base=10000.0)
    assert theta.dtype == torch.float64
    expected = torch.tensor([10000.0 ** (-2 * i / 8) for i in range(4)], dtype=torch.float64)
    assert (theta - expected).abs().max() <= EXACT
    angles = rope_angles(5, 8, base=10000.0)
    assert angles.shape == (5, 4)
    assert (angles - torch.arange(5, dtype=torch.float64)[:, None] * expected).abs().max() <= EXACT


def test_apply_rope_rotates_each_pair():
    x = torch.tensor([[[[1.0, 2.0, -3.0, 0.5]]]], dtype=torch.float64)  # (1, 1, 1, 4)
    a, b = 0.7, -1.3
    cos = torch.tensor([[math.cos(a), math.cos(b)]], dtype=torch.float64)
    sin = torch.tensor([[math.sin(a), math.sin(b)]], dtype=torch.float64)
    out = apply_rope(x, cos, sin)[0, 0, 0]
    expected = [
        1.0 * math.cos(a) - 2.0 * math.sin(a),
        1.0 * math.sin(a) + 2.0 * math.cos(a),
        -3.0 * math.cos(b) - 0.5 * math.sin(b),
        -3.0 * math.sin(b) + 0.5 * math.cos(b),
    ]
    assert (out - torch.tensor(expected, dtype=torch.float64)).abs().max() <= EXACT


def rotated_score(rope: RotaryEmbedding, q: torch.Tensor, k: torch.Tensor, m: int, n: int) -> float:
    """<R_m q, R_n k> for single vectors q, k of shape (D,)."""
    qm = rope.rotate(q.view(1, 1, 1, -1), offset=m)
    kn = rope.rotate(k.view(1, 1, 1, -1), offset=n)
    return float((qm * kn).sum())


@pytest.mark.parametrize(("m", "n", "shift"), [(0, 0, 5), (3, 7, 1), (7, 3, 40), (10, 2, 300), (0, 31, 200)])
def test_rope_score_depends_only_on_offset(m, n, shift):
    gen = torch.Generator().manual_seed(m * 1000 + n)
    q, k = torch.randn(2, 16, generator=gen, dtype=torch.float64)
    rope = RotaryEmbedding(head_dim=16, max_len=512, base=10000.0)
    base_score = rotated_score(rope, q, k, m, n)
    assert abs(rotated_score(rope, q, k, m + shift, n + shift) - base_score) <= EXACT
    # and it really depends on the offset: moving only one of them changes it
    assert abs(rotated_score(rope, q, k, m + 1, n) - base_score) > 1e-6


def test_rotate_matches_apply_rope_and_offsets():
    rope = RotaryEmbedding(head_dim=8, max_len=20, base=500.0)
    x = torch.randn(2, 3, 9, 8, dtype=torch.float64)
    angles = rope_angles(20, 8, base=500.0)
    full = apply_rope(x, torch.cos(angles[:9]), torch.sin(angles[:9]))
    assert torch.equal(rope.rotate(x), full)
    assert (rope.rotate(x[:, :, 4:], offset=4) - full[:, :, 4:]).abs().max() <= EXACT
    with pytest.raises(ValueError, match="exceeds max_len 20"):
        rope.rotate(x, offset=12)


def test_rope_preserves_norms_and_dtype():
    rope = RotaryEmbedding(head_dim=32, max_len=256, base=10000.0)
    x = torch.randn(2, 4, 100, 32, dtype=torch.float64)
    out = rope.rotate(x, offset=150)
    assert (out.norm(dim=-1) - x.norm(dim=-1)).abs().max() <= EXACT
    assert rope.rotate(x.float()).dtype == torch.float32


def test_rope_position_zero_is_identity():
    rope = RotaryEmbedding(head_dim=4, max_len=4, base=10000.0)
    x = torch.randn(1, 1, 1, 4, dtype=torch.float64)
    assert torch.equal(rope.rotate(x, offset=0), x)
