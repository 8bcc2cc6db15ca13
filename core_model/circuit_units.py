"""What one unit of a direct-path table is worth in a run: the spread a pre-norm model's norm divides a stream by.

core_model.circuits and core_model.position_circuits feed each head the embeddings × √d_model with the norm's gain
folded in and its division left out, so their scores run to hundreds. In a run a pre-norm sublayer reads its stream
divided by the stream's spread (LayerNorm: the population standard deviation over the features after centring;
RMSNorm: the root mean square; each with its eps, as torch adds it), so the queries and keys it projects have
spread about 1 before the gain. `norm_spread` is that divisor for a lone symbol embedding, averaged over the
symbols: a QK cell divided by the query side's and the key side's spreads is on the Playground's pre-softmax scale
for a stream that held the embedding alone. Post-norm models have no norm between the embedding and a first-layer
sublayer, and above it the stream is no embedding: NaN there, and the caption says no more than what a unit is.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn


def norm_spread(stream: Tensor, norm: nn.Module) -> float:
    """The mean over the rows of `stream` (A, d) of what `norm` (nn.LayerNorm or nn.RMSNorm) divides a row by."""
    eps = getattr(norm, "eps", None)
    eps = torch.finfo(stream.dtype).eps if eps is None else float(eps)
    if isinstance(norm, nn.LayerNorm):
        power = stream.var(dim=-1, unbiased=False)  # (A,): LayerNorm centres first
    elif isinstance(norm, nn.RMSNorm):
        power = (stream**2).mean(dim=-1)  # (A,)
    else:
        return math.nan
    return float(torch.sqrt(power + eps).mean())
