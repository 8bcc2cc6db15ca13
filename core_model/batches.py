"""The teacher-forcing batch every task produces, and its assembly from one source and target per row.

A source and its target may have any lengths: each side is padded on the right on its own. The encoder reads the
source (anchored: <bos> symbols <eos>), the decoder reads <bos> + target and is trained to emit target + <eos>,
the same layout `inputs.encoder_input` and `inputs.decoder_input` give one example.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from .inputs import decoder_input, encoder_input
from .vocab import BOS, EOS, PAD


@dataclass(frozen=True)
class Batch:
    """Teacher-forcing batch: decoder input is <bos> + target, labels are target + <eos>; PAD fills the rest."""

    src: Tensor  # (B, S)
    tgt_in: Tensor  # (B, T)
    tgt_out: Tensor  # (B, T)

    @property
    def n_tokens(self) -> int:
        return int((self.tgt_out != PAD).sum())

    def to(self, device: torch.device | str) -> Batch:
        return Batch(self.src.to(device), self.tgt_in.to(device), self.tgt_out.to(device))


def batch_from_rows(sources: Sequence[Sequence[int]], targets: Sequence[Sequence[int]], *, anchored: bool) -> Batch:
    """One row per (source ids, target ids) pair, each side padded to its own longest row.

    Shape: src (B, S) with S the longest source (+ 2 when anchored); tgt_in and tgt_out (B, T + 1) with T the
    longest target.
    """
    if len(sources) != len(targets) or not sources:
        raise ValueError(
            f"a batch needs as many targets as sources (at least one), got {len(sources)} and {len(targets)}"
        )
    width = max(map(len, sources)) + (2 if anchored else 0)
    src = [encoder_input(ids, width - len(ids) - (2 if anchored else 0), anchored=anchored) for ids in sources]
    depth = max(map(len, targets)) + 1
    tgt_in = [decoder_input(ids, depth - 1 - len(ids)) for ids in targets]
    tgt_out = [[*ids, EOS] + [PAD] * (depth - 1 - len(ids)) for ids in targets]
    return Batch(torch.tensor(src), torch.tensor(tgt_in), torch.tensor(tgt_out))


def anchor(src: Tensor, lengths: Tensor) -> Tensor:
    """<bos> + the symbols + <eos>, padded on the right: (B, S) -> (B, S + 2); `lengths` (B,) counts the symbols."""
    b = src.shape[0]
    out = torch.cat((torch.full((b, 1), BOS), src, torch.full((b, 1), PAD)), dim=1)
    out[torch.arange(b), lengths + 1] = EOS
    return out
