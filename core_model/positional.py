"""Positional information: sinusoidal tables (paper §3.5) and rotary embeddings (RoFormer, Su et al. 2021)."""

from __future__ import annotations

import torch
from torch import Tensor, nn

from .config import PE_BASE


def sinusoidal_table(
    n_positions: int, d_model: int, base: float = PE_BASE, dtype: torch.dtype = torch.float64
) -> Tensor:
    """PE[pos, 2i] = sin(pos / base^(2i/d)), PE[pos, 2i+1] = cos(same). -> (n_positions, d_model).

    An odd d_model keeps the last sine column and drops its cosine partner.
    """
    pos = torch.arange(n_positions, dtype=torch.float64)[:, None]
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)
    angle = pos / base ** (two_i / d_model)  # (P, ceil(d/2))
    table = torch.zeros(n_positions, d_model, dtype=torch.float64)
    table[:, 0::2] = torch.sin(angle)
    table[:, 1::2] = torch.cos(angle[:, : d_model // 2])
    return table.to(dtype)


def rope_frequencies(head_dim: int, base: float = PE_BASE) -> Tensor:
    """theta_i = base^(-2i/d) for each dimension pair i. -> (head_dim // 2,) float64."""
    return base ** (-torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)


def rope_angles(n_positions: int, head_dim: int, base: float = PE_BASE) -> Tensor:
    """Rotation angle m * theta_i of pair i at position m. -> (n_positions, head_dim // 2) float64."""
    return torch.arange(n_positions, dtype=torch.float64)[:, None] * rope_frequencies(head_dim, base)[None, :]


def apply_rope(x: Tensor, cos: Tensor, sin: Tensor) -> Tensor:
    """Rotate each adjacent pair (x[2i], x[2i+1]) by its angle. x: (B, H, T, D); cos, sin: (T, D/2)."""
    x_even, x_odd = x[..., 0::2], x[..., 1::2]  # (B, H, T, D/2) each
    out = torch.stack((x_even * cos - x_odd * sin, x_even * sin + x_odd * cos), dim=-1)  # (B, H, T, D/2, 2)
    return out.flatten(-2)


class SinusoidalEncoding(nn.Module):
    """Adds the fixed sinusoid table to already-scaled embeddings; positions may start at an offset."""

    table: Tensor

    def __init__(self, d_model: int, max_len: int, base: float) -> None:
        super().__init__()
        self.max_len = max_len
        self.register_buffer(
            "table", sinusoidal_table(max_len, d_model, base), persistent=False
        )  # float64, cast on use

    def forward(self, x: Tensor, offset: int = 0) -> Tensor:
        """x: (B, T, D) -> (B, T, D)."""
        t = x.shape[1]
        if offset + t > self.max_len:
            raise ValueError(f"sequence of {offset + t} positions exceeds max_len {self.max_len}")
        return x + self.table[offset : offset + t].to(x.dtype)


class RotaryEmbedding(nn.Module):
    """Precomputed cos/sin for RoPE; attention asks for the rows of its positions."""

    cos: Tensor
    sin: Tensor

    def __init__(self, head_dim: int, max_len: int, base: float) -> None:
        super().__init__()
        self.max_len = max_len
        angles = rope_angles(max_len, head_dim, base)
        self.register_buffer("cos", torch.cos(angles), persistent=False)  # float64, cast on use
        self.register_buffer("sin", torch.sin(angles), persistent=False)

    def rotate(self, x: Tensor, offset: int = 0) -> Tensor:
        """x: (B, H, T, D) at positions offset..offset+T-1 -> rotated, same shape and dtype."""
        t = x.shape[2]
        if offset + t > self.max_len:
            raise ValueError(f"sequence of {offset + t} positions exceeds max_len {self.max_len}")
        cos = self.cos[offset : offset + t].to(x.dtype)
        sin = self.sin[offset : offset + t].to(x.dtype)
        return apply_rope(x, cos, sin)
