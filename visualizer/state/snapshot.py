"""Immutable numpy snapshots that cross from the model session to the widgets (widgets never see torch)."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

KIND_TITLES = {"encoder_self": "Encoder self-attention", "decoder_self": "Decoder self-attention", "cross": "Cross-attention"}


@dataclass(frozen=True)
class KindMaps:
    """All layers and heads of one attention kind for one input.

    values: (L, H, Tq, Tk) float32, post-softmax weights or pre-softmax scores.
    valid: (Tq, Tk) bool, True where the mask let the query see the key; invalid cells are drawn blank.
    """

    kind: str
    values: np.ndarray
    valid: np.ndarray
    query_labels: tuple[str, ...]
    key_labels: tuple[str, ...]
    highlight_row: int | None = None  # the newest decoder query, when stepping

    @property
    def n_layers(self) -> int:
        return int(self.values.shape[0])

    @property
    def n_heads(self) -> int:
        return int(self.values.shape[1])


@dataclass(frozen=True)
class MapsSnapshot:
    """Everything the heatmaps show for one forward pass."""

    maps: dict[str, KindMaps]
    mode: str = "weights"  # "weights" (post-softmax) or "scores" (pre-softmax)
    forward_ms: float = 0.0
    output_tokens: tuple[str, ...] = ()
    extra: dict[str, object] = field(default_factory=dict)
