"""Attention masks, one convention everywhere: a bool tensor where True means *may attend*.

Masks broadcast against scores of shape (B, H, Tq, Tk). Builders return (Tq, Tk) or (B, 1, 1, Tk) tensors;
`combine` ANDs them. A query row whose keys are all False yields all-zero weights (never NaN).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from .config import check_int
from .vocab import PAD


def padding_mask(tokens: Tensor, pad_id: int = PAD) -> Tensor:
    """Keys that are real tokens. (B, Tk) -> (B, 1, 1, Tk)."""
    return (tokens != pad_id)[:, None, None, :]


def causal_mask(tq: int, tk: int | None = None, *, q_offset: int = 0, device: torch.device | None = None) -> Tensor:
    """Query i (absolute position i + q_offset) may see keys j <= its position. -> (Tq, Tk)."""
    tk = tq + q_offset if tk is None else tk
    qpos = torch.arange(tq, device=device)[:, None] + q_offset
    return torch.arange(tk, device=device)[None, :] <= qpos


def window_mask(tq: int, tk: int, width: int, *, q_offset: int = 0, device: torch.device | None = None) -> Tensor:
    """Sliding window: key j is visible from query i when |i - j| < width. -> (Tq, Tk).

    With the causal mask this leaves exactly `width` keys (i - width, i] (the Mistral convention); alone it is
    symmetric, 2 * width - 1 keys.
    """
    check_int("width", width, 1)
    qpos = torch.arange(tq, device=device)[:, None] + q_offset
    return (qpos - torch.arange(tk, device=device)[None, :]).abs() < width


def combine(*masks: Tensor | None) -> Tensor | None:
    """AND of the given masks (None means no restriction)."""
    out = None
    for m in masks:
        if m is not None:
            out = m if out is None else out & m
    return out


@dataclass(frozen=True)
class MaskSpec:
    """Which masks each attention kind uses; the GUI toggles these fields."""

    encoder_padding: bool = True  # encoder self: ignore source pads
    encoder_window: int | None = None  # encoder self: sliding window width, None = full
    decoder_causal: bool = True  # decoder self: no peeking at later targets
    decoder_padding: bool = True  # decoder self: ignore target pads
    decoder_window: int | None = None  # decoder self: sliding window width
    cross_padding: bool = True  # cross: ignore source pads

    def __post_init__(self) -> None:
        for name in ("encoder_window", "decoder_window"):
            value = getattr(self, name)
            if value is not None:
                check_int(name, value, 1)

    def encoder_self(self, src: Tensor, pad_id: int = PAD) -> Tensor | None:
        """Mask for encoder self-attention. src: (B, S)."""
        s = src.shape[1]
        return combine(
            padding_mask(src, pad_id) if self.encoder_padding else None,
            window_mask(s, s, self.encoder_window, device=src.device) if self.encoder_window else None,
        )

    def decoder_self(self, tgt: Tensor, pad_id: int = PAD, *, q_offset: int = 0) -> Tensor | None:
        """Mask for decoder self-attention over all keys so far. tgt: (B, Tk) keys; queries are the last Tq."""
        tk = tgt.shape[1]
        tq = tk - q_offset
        return combine(
            padding_mask(tgt, pad_id) if self.decoder_padding else None,
            causal_mask(tq, tk, q_offset=q_offset, device=tgt.device) if self.decoder_causal else None,
            window_mask(tq, tk, self.decoder_window, q_offset=q_offset, device=tgt.device)
            if self.decoder_window
            else None,
        )

    def cross(self, src: Tensor, pad_id: int = PAD) -> Tensor | None:
        """Mask for cross-attention (target queries over source keys)."""
        return padding_mask(src, pad_id) if self.cross_padding else None
