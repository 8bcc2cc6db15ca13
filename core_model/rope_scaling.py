"""Stretching a RoPE model past its training length at evaluation time, without retraining.

Two recipes change the rotary tables only (no weights):
- position interpolation (Chen et al. 2023, "Extending Context Window of Large Language Models via Positional
  Interpolation"): position m becomes m * L / L', so L' positions are squeezed into the trained range [0, L);
- NTK-aware scaling (bloc97, 2023): the base grows to base * s^(d / (d - 2)), s = L' / L, which leaves the
  fastest pair's frequency alone and slows the slowest pair by exactly s.
Deviations: both papers fine-tune afterwards (PI) or target huge models; here they are applied as is, to a toy
model, and only when L' > L (shorter inputs keep the trained tables).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Literal, TypeGuard, get_args

import torch

from .config import check_choice, check_int
from .model import Seq2SeqTransformer
from .positional import rope_frequencies

RopeScalingKind = Literal["none", "pi", "ntk"]
ROPE_SCALING_KINDS: tuple[str, ...] = get_args(RopeScalingKind)


def is_rope_scaling_kind(kind: str) -> TypeGuard[RopeScalingKind]:
    """True for a recipe name RopeScaling accepts, so a checked string types as one."""
    return kind in ROPE_SCALING_KINDS


@dataclass(frozen=True)
class RopeScaling:
    """Which recipe, and the length ratio it stretches for: s = eval_len / train_len (source lengths)."""

    kind: RopeScalingKind = "none"
    train_len: int = 1  # the longest source the model was trained on
    eval_len: int = 1  # the longest source it is asked to handle now

    def __post_init__(self) -> None:
        check_choice("rope scaling", self.kind, ROPE_SCALING_KINDS)
        check_int("train_len", self.train_len, 1)
        check_int("eval_len", self.eval_len, 1)

    @property
    def factor(self) -> float:
        """s = eval_len / train_len, never below 1 (inputs within the trained range are left alone)."""
        return max(1.0, self.eval_len / self.train_len)


def ntk_base(base: float, head_dim: int, factor: float) -> float:
    """NTK-aware base: base * s^(d / (d - 2)); a head of 2 dimensions has one frequency (1) whatever the base."""
    if head_dim <= 2 or factor <= 1.0:
        return base
    return base * factor ** (head_dim / (head_dim - 2))


def scaled_rope_angles(n_positions: int, head_dim: int, base: float, scaling: RopeScaling) -> torch.Tensor:
    """Rotation angles under `scaling`. -> (n_positions, head_dim // 2) float64.

    none: m * theta_i; pi: (m / s) * theta_i; ntk: m * theta_i computed with ntk_base.
    """
    positions = torch.arange(n_positions, dtype=torch.float64)[:, None]
    if scaling.kind == "pi":
        positions = positions / scaling.factor
    if scaling.kind == "ntk":
        base = ntk_base(base, head_dim, scaling.factor)
    return positions * rope_frequencies(head_dim, base)[None, :]


@contextmanager
def rope_scaled(model: Seq2SeqTransformer, scaling: RopeScaling) -> Iterator[Seq2SeqTransformer]:
    """Run `model` with rescaled rotary tables inside the block; the trained tables come back on exit, even on an
    exception. Raises ValueError for a model without RoPE (its positions are not rotations)."""
    rope = model.rope
    if rope is None:
        raise ValueError(f"rope scaling needs a RoPE model; this model uses {model.config.positional} positions")
    saved = rope.cos, rope.sin
    config = model.config
    angles = scaled_rope_angles(rope.max_len, config.head_dim, config.pe_base, scaling).to(saved[0].device)
    try:
        rope.cos, rope.sin = torch.cos(angles).to(saved[0].dtype), torch.sin(angles).to(saved[1].dtype)
        yield model
    finally:
        rope.cos, rope.sin = saved
