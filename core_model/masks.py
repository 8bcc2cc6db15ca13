"""Attention masks, one convention everywhere: a bool tensor where True means *may attend*.

Masks broadcast against scores of shape (B, H, Tq, Tk). Builders return (Tq, Tk) or (B, 1, 1, Tk) tensors;
`combine` ANDs them. A query row whose keys are all False yields all-zero weights (never NaN).

Painted cells: a MaskSpec may also hide single (query, key) cells per attention kind, e.g. painted by hand in the
GUI. They are absolute positions and apply to every layer and head of that kind (the model gives each kind one
mask shared by its layers); cells outside the current sequence lengths are ignored, so a shorter input keeps the
painting for when it grows again.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

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


Cells = frozenset[tuple[int, int]]  # (query, key) pairs, 0-based absolute positions
PAINTED_FIELDS = {"encoder_self": "encoder_painted", "decoder_self": "decoder_painted", "cross": "cross_painted"}


def painted_mask(
    cells: Cells, tq: int, tk: int, *, q_offset: int = 0, device: torch.device | None = None
) -> Tensor | None:
    """True everywhere except the painted cells; queries are positions q_offset..q_offset+tq-1. -> (Tq, Tk) or None."""
    rows = [(i - q_offset, j) for i, j in cells if q_offset <= i < q_offset + tq and j < tk]
    if not rows:
        return None
    mask = torch.ones(tq, tk, dtype=torch.bool, device=device)
    index = torch.tensor(rows, dtype=torch.long, device=device)  # (N, 2)
    mask[index[:, 0], index[:, 1]] = False
    return mask


def _check_cells(name: str, cells: object) -> Cells:
    """A frozenset of (query, key) pairs of non-negative ints, or ValueError naming the field."""
    if isinstance(cells, (str, bytes)) or not isinstance(cells, Iterable):
        raise ValueError(f"{name} must be a set of (query, key) pairs, got {type(cells).__name__}")
    out = set()
    for cell in cells:
        ok = (
            isinstance(cell, tuple)
            and len(cell) == 2
            and all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in cell)
        )
        if not ok:
            raise ValueError(f"{name} must hold (query, key) pairs of integers >= 0, got {cell!r}")
        out.add((int(cell[0]), int(cell[1])))
    return frozenset(out)


@dataclass(frozen=True)
class MaskSpec:
    """Which masks each attention kind uses; the GUI toggles these fields."""

    encoder_padding: bool = True  # encoder self: ignore source pads
    encoder_window: int | None = None  # encoder self: sliding window width, None = full
    decoder_causal: bool = True  # decoder self: no peeking at later targets
    decoder_padding: bool = True  # decoder self: ignore target pads
    decoder_window: int | None = None  # decoder self: sliding window width
    cross_padding: bool = True  # cross: ignore source pads
    encoder_painted: Cells = frozenset()  # encoder self: (query, key) cells hidden by hand, every layer and head
    decoder_painted: Cells = frozenset()  # decoder self: the same
    cross_painted: Cells = frozenset()  # cross: (target query, source key) cells hidden by hand

    def __post_init__(self) -> None:
        for name in ("encoder_window", "decoder_window"):
            value = getattr(self, name)
            if value is not None:
                check_int(name, value, 1)
        for name in PAINTED_FIELDS.values():
            object.__setattr__(self, name, _check_cells(name, getattr(self, name)))  # frozen: normalise once here

    def painted(self, kind: str) -> Cells:
        """The cells painted for one attention kind ("encoder_self", "decoder_self" or "cross")."""
        if kind not in PAINTED_FIELDS:
            raise ValueError(f"kind must be one of {list(PAINTED_FIELDS)}, got {kind!r}")
        return getattr(self, PAINTED_FIELDS[kind])

    def with_painted(self, kind: str, cells: Iterable[tuple[int, int]]) -> MaskSpec:
        """A copy whose painted cells of `kind` are `cells` (the other settings kept)."""
        self.painted(kind)  # validates the kind
        new = frozenset(cells)
        return replace(
            self,
            encoder_painted=new if kind == "encoder_self" else self.encoder_painted,
            decoder_painted=new if kind == "decoder_self" else self.decoder_painted,
            cross_painted=new if kind == "cross" else self.cross_painted,
        )

    def without_painting(self) -> MaskSpec:
        """A copy with no painted cells."""
        return replace(self, encoder_painted=frozenset(), decoder_painted=frozenset(), cross_painted=frozenset())

    def encoder_self(self, src: Tensor, pad_id: int = PAD) -> Tensor | None:
        """Mask for encoder self-attention. src: (B, S)."""
        s = src.shape[1]
        return combine(
            padding_mask(src, pad_id) if self.encoder_padding else None,
            window_mask(s, s, self.encoder_window, device=src.device) if self.encoder_window else None,
            painted_mask(self.encoder_painted, s, s, device=src.device),
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
            painted_mask(self.decoder_painted, tq, tk, q_offset=q_offset, device=tgt.device),
        )

    def cross(self, src: Tensor, pad_id: int = PAD, *, tq: int | None = None, q_offset: int = 0) -> Tensor | None:
        """Mask for cross-attention: tq target queries at positions q_offset... over the source keys src (B, S).

        tq is needed only when cells are painted (the padding mask broadcasts over queries).
        """
        painted = None
        if self.cross_painted:
            if tq is None:
                raise ValueError("cross-attention has painted cells: pass tq, the number of target queries")
            painted = painted_mask(self.cross_painted, tq, src.shape[1], q_offset=q_offset, device=src.device)
        return combine(padding_mask(src, pad_id) if self.cross_padding else None, painted)
